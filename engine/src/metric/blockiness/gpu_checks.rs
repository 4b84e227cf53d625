//! Blockiness's kernels (`blockiness_profiles`, `blockiness_bands`, `blockiness_periods`)
//! against the host build
//! of the same per-pixel functions over a few frames (the profiles add up over the
//! sequence), and the CUDA engine against the CPU engine.
//!
//! Tolerance: none. Both sides add each profile value's f32 gradients in the same order
//! (bands of 128 rows for a column, of 128 columns for a row, each in order from 0, then
//! the band sums in order) and search the periods with
//! the same f32 arithmetic (32 lanes, then a fixed tree), so the profiles and the value
//! must be equal bit for bit (NaN for NaN).

use std::sync::Arc;

use cudarc::driver::{CudaStream, DriverError, LaunchConfig};
use gpumetrics_engine::cuda::{DevPtr, DevPtrMut, Kernels};
use gpumetrics_kernels::blockiness::{self, Params, span};
use gpumetrics_kernels::channel::Channel;
use gpumetrics_kernels::luma8::Luma8;

use crate::common::{self, Rng};
use crate::{Check, Outcome, rel_err};

/// The checks of this module and the kernels each covers.
pub(crate) const CHECKS: &[(&[&str], Check)] = &[(
    &[
        "blockiness_profiles",
        "blockiness_bands",
        "blockiness_periods",
    ],
    kernels,
)];

crate::gpu_tests! {
    blockiness_kernels_match_the_host => "blockiness_profiles",
}

/// The engine check, outside `CHECKS` (which maps each kernel to one check).
#[test]
#[ignore = "needs a CUDA GPU"]
fn blockiness_cuda_engine_matches_the_cpu_engine() {
    crate::run("blockiness (engine)", engine);
}

/// One luma layout of the kernel check.
struct Case {
    w: u32,
    h: u32,
    /// Bytes between samples, bytes per sample, right shift, depth.
    step: u32,
    bytes: u32,
    shift: u32,
    depth: u32,
    full: bool,
    periods: (u32, u32),
}

const fn case(w: u32, h: u32, step: u32, bytes: u32, shift: u32, depth: u32) -> Case {
    Case {
        w,
        h,
        step,
        bytes,
        shift,
        depth,
        full: false,
        periods: (3, 24),
    }
}

/// Tiny sizes (no period, profiles of one column or row), odd sizes, sizes that are not
/// multiples of the tiles, 8 and 10 bit (LSB and MSB aligned, interleaved luma), 12-bit
/// full range, other periods, and 1920×1080.
const CASES: &[Case] = &[
    case(1, 1, 1, 1, 0, 8),
    case(8, 8, 1, 1, 0, 8),
    case(9, 40, 2, 2, 0, 10),
    case(97, 61, 1, 1, 0, 8),
    Case {
        full: true,
        ..case(160, 97, 2, 2, 6, 10)
    },
    Case {
        periods: (2, 64),
        ..case(173, 131, 2, 1, 0, 8)
    },
    Case {
        full: true,
        periods: (8, 8),
        ..case(333, 211, 2, 2, 0, 12)
    },
    case(1920, 1080, 1, 1, 0, 8),
];

/// Frames per case: the profiles of the later frames add to the earlier ones'.
const FRAMES: usize = 3;

/// A frame of `c`: blocks of 8×8 (some frames 6×6) with noise inside, `pitch · h` bytes.
fn frame(c: &Case, pitch: u32, k: usize, r: &mut Rng) -> Vec<u8> {
    let max = (1u32 << c.depth) - 1;
    let scale = 1u32 << (c.depth - 8);
    let size = if k == 1 { 6 } else { 8 };
    let mut d = r.bytes((pitch * c.h) as usize);
    for y in 0..c.h {
        for x in 0..c.w {
            let level = ((x / size) * 7919 + (y / size) * 104_729 + k as u32)
                .wrapping_mul(2_654_435_761)
                >> 24;
            let v = ((level % 200 + r.next_u32() % 9) * scale).min(max) << c.shift;
            let at = (y * pitch + x * c.step) as usize;
            d[at] = v as u8;
            if c.bytes == 2 {
                d[at + 1] = (v >> 8) as u8;
            }
        }
    }
    d
}

fn params(c: &Case, ptr: u64, pitch: u32, first: bool) -> Params {
    Params {
        luma: Luma8 {
            chan: Channel {
                ptr,
                pitch,
                step: c.step,
                sample_bytes: c.bytes,
                shift: c.shift,
                max: (1 << c.depth) - 1,
                _pad: 0,
            },
            width: c.w,
            height: c.h,
            shift: c.depth - 8,
            range: c.full as u32,
        },
        period_min: c.periods.0,
        period_max: c.periods.1,
        first: first as u32,
        _pad: 0,
    }
}

/// One frame's profiles added on the host (the CPU backend's order) and the value.
fn host(p: &Params, cols: &mut [f32], rows: &mut [f32]) -> f32 {
    let l = p.luma;
    let mut sums = vec![0f32; l.width as usize];
    unsafe { blockiness::add_col_bands(&l, 0, l.width, cols.as_mut_ptr(), sums.as_mut_ptr()) };
    let (a, b) = span(l.height);
    for y in a..b {
        rows[y as usize] = unsafe { blockiness::row_sum(&l, y, rows[y as usize]) };
    }
    unsafe { blockiness::ratio(p, cols.as_ptr(), rows.as_ptr()) }
}

/// Both kernels on `FRAMES` frames of every case, as the engine launches them: both
/// profiles and the value against [`host`], exactly.
fn kernels(k: &Kernels, s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    let mut bad = 0usize;
    let mut elements = 0;
    let mut notes = Vec::new();
    for c in CASES {
        let pitch = (c.w - 1) * c.step + c.bytes + 5;
        let mut cols = s.alloc_zeros::<f32>(c.w as usize)?;
        let mut rows = s.alloc_zeros::<f32>(c.h as usize)?;
        let mut col_bands = s.alloc_zeros::<f32>((blockiness::bands(c.h) * c.w).max(1) as usize)?;
        let mut row_bands = s.alloc_zeros::<f32>((blockiness::bands(c.w) * c.h).max(1) as usize)?;
        let grid = blockiness::profile_grid(c.w, c.h);
        let pairs = 2 * blockiness::periods(&params(c, 0, pitch, true));
        let mut result = s.alloc_zeros::<f32>(4 * pairs.max(1) as usize)?;
        let (mut host_cols, mut host_rows) = (vec![0f32; c.w as usize], vec![0f32; c.h as usize]);
        for f in 0..FRAMES {
            let data = frame(c, pitch, f, r);
            let dev = s.clone_htod(&data)?;
            let want = host(
                &params(c, data.as_ptr() as u64, pitch, f == 0),
                &mut host_cols,
                &mut host_rows,
            );
            {
                let (src, _g1) = DevPtr::of(&dev, s);
                let p = params(c, src.as_raw(), pitch, f == 0);
                let (cp, _g2) = DevPtrMut::of(&mut cols, s);
                let (rp, _g3) = DevPtrMut::of(&mut rows, s);
                let (out, _g4) = DevPtrMut::of(&mut result, s);
                let (cb, _g5) = DevPtrMut::of(&mut col_bands, s);
                let (rb, _g6) = DevPtrMut::of(&mut row_bands, s);
                unsafe {
                    if grid > 0 {
                        let cfg = LaunchConfig {
                            grid_dim: (grid, 1, 1),
                            block_dim: (blockiness::BLOCK, 1, 1),
                            shared_mem_bytes: 0,
                        };
                        k.blockiness_profiles(s, cfg, p, cb, rb)?;
                    }
                    let cfg = LaunchConfig {
                        grid_dim: ((c.w + c.h).div_ceil(blockiness::BANDS_BLOCK), 1, 1),
                        block_dim: (blockiness::BANDS_BLOCK, 1, 1),
                        shared_mem_bytes: 0,
                    };
                    k.blockiness_bands(s, cfg, p, cp, rp, cb.as_const(), rb.as_const())?;
                    let cfg = LaunchConfig {
                        grid_dim: (pairs, 1, 1),
                        block_dim: (blockiness::PERIOD_LANES, 1, 1),
                        shared_mem_bytes: 0,
                    };
                    k.blockiness_periods(s, cfg, p, cp.as_const(), rp.as_const(), out)?;
                }
            }
            let got_cols = s.clone_dtoh(&cols)?;
            let got_rows = s.clone_dtoh(&rows)?;
            let sums = s.clone_dtoh(&result)?;
            let got = blockiness::combine(
                sums[..4 * pairs as usize]
                    .chunks_exact(4)
                    .map(blockiness::decode),
            );
            let differ = |a: &[f32], b: &[f32]| {
                a.iter()
                    .zip(b)
                    .filter(|(x, y)| x.to_bits() != y.to_bits())
                    .count()
            };
            let profile_bad = differ(&got_cols, &host_cols) + differ(&got_rows, &host_rows);
            let value_bad = !(got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()));
            elements += (c.w + c.h + 1) as usize;
            if profile_bad > 0 || value_bad {
                notes.push(format!(
                    "{}x{} frame {f}: {profile_bad} profile values differ, value {got} vs {want}",
                    c.w, c.h
                ));
            }
            bad += profile_bad + value_bad as usize;
            if f == FRAMES - 1 {
                notes.push(format!(
                    "{}x{} {}-bit: {got} (host {want})",
                    c.w, c.h, c.depth
                ));
            }
        }
    }
    Ok(Outcome {
        elements,
        max_err: bad as f64,
        tolerance: 0.0,
        note: notes.join(", "),
    })
}

/// The CUDA engine (device frames with the test's odd pitches) against the CPU engine:
/// five frames of each format with a reset after the third, `blockiness` and
/// `ref-blockiness` equal or both absent.
fn engine(_k: &Kernels, _s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    use gpumetrics_engine::{BackendChoice, Colorimetry, Engine, EngineConfig, PixelFormat, Range};
    let metric =
        gpumetrics_engine::MetricSet::named("blockiness").expect("blockiness is registered");
    let mut max_err = 0f64;
    let mut elements = 0;
    let mut notes = Vec::new();
    for (format, w, h, range) in [
        (PixelFormat::I420, 173, 97, Range::Limited),
        (PixelFormat::I420, 3, 3, Range::Limited),
        (PixelFormat::I420_10Le, 65, 33, Range::Full),
        (PixelFormat::P010_10Le, 96, 64, Range::Limited),
        (PixelFormat::Gray8, 31, 17, Range::Full),
        (PixelFormat::I420, 1920, 1080, Range::Limited),
    ] {
        let wide = matches!(format, PixelFormat::I420_10Le);
        let c = Colorimetry {
            range,
            ..Colorimetry::default_for(format.family())
        };
        let engines = [BackendChoice::Cuda, BackendChoice::Cpu].map(|backend| {
            let cfg = EngineConfig {
                metrics: metric,
                backend,
                ..Default::default()
            };
            let layout = gpumetrics_engine::FrameLayout {
                format,
                width: w,
                height: h,
            };
            Engine::builder(&cfg, layout, layout)
                .colorimetry(c, c)
                .build()
                .expect("an engine")
        });
        let [mut gpu, mut cpu] = engines;
        assert_eq!(gpu.backend_name(), "cuda");
        for f in 0..5 {
            if f == 3 {
                gpu.reset();
                cpu.reset();
            }
            let mut fill = |i: usize| {
                let b = ((i / 8 % 5) as u32 * 40 + r.next_u32() % 16) as u8;
                if wide && i % 2 == 1 { b & 3 } else { b }
            };
            let a = common::OwnedFrame::new(format, w, h, &mut fill);
            let b = common::OwnedFrame::new(format, w, h, &mut fill);
            let got = common::compare_on_device(&mut gpu, &a, &b);
            let want = cpu.compare(&a.host(), &b.host()).expect("cpu scores");
            for field in ["blockiness", "ref-blockiness"] {
                let (g, c) = (got.get(field), want.get(field));
                let e = match (g, c) {
                    (Some(g), Some(c)) => rel_err(g, c),
                    (None, None) => 0.0,
                    _ => f64::INFINITY,
                };
                max_err = max_err.max(e);
                elements += 1;
                if f == 4 || e > 0.0 {
                    notes.push(format!(
                        "{} {w}x{h} frame {f} {field}: cuda {g:?} cpu {c:?}",
                        format.name()
                    ));
                }
            }
        }
    }
    Ok(Outcome {
        elements,
        max_err,
        tolerance: 0.0,
        note: notes.join(", "),
    })
}
