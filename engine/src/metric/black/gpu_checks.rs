//! Black's kernel (`black_count`) against the host build of the same row count, and the
//! CUDA engine against the CPU engine over a few frames of several formats.
//!
//! Tolerance: none. Both sides count integers (samples at or below the threshold) with the
//! same comparison; only the order of the additions differs, which integers do not see.

use std::sync::Arc;

use cudarc::driver::{CudaStream, DriverError, LaunchConfig};
use gpumetrics_engine::cuda::{DevPtr, DevPtrMut, Kernels};
use gpumetrics_kernels::black::{self, BlackLuma};
use gpumetrics_kernels::channel::Channel;

use crate::common::{self, Rng};
use crate::{Check, Outcome, rel_err};

/// The checks of this module and the kernels each covers.
pub(crate) const CHECKS: &[(&[&str], Check)] = &[(&["black_count"], kernels)];

crate::gpu_tests! {
    black_count_matches_the_host => "black_count",
}

/// The engine check, outside `CHECKS` (which maps each kernel to one check).
#[test]
#[ignore = "needs a CUDA GPU"]
fn black_cuda_engine_matches_the_cpu_engine() {
    crate::run("black (engine)", engine);
}

/// One luma plane layout: size, bytes between samples, bytes per sample, right shift,
/// depth, full range.
struct Case {
    w: u32,
    h: u32,
    step: u32,
    bytes: u32,
    shift: u32,
    depth: u32,
    full: bool,
}

const fn case(w: u32, h: u32, step: u32, bytes: u32, shift: u32, depth: u32, full: bool) -> Case {
    Case {
        w,
        h,
        step,
        bytes,
        shift,
        depth,
        full,
    }
}

/// 1×1 and 2×2, odd sizes, 8/10/16 bit (LSB- and MSB-aligned, interleaved luma of step 2),
/// more rows than `MAX_BLOCKS` (blocks stride) and 1920×1080.
const CASES: &[Case] = &[
    case(1, 1, 1, 1, 0, 8, false),
    case(2, 2, 2, 2, 0, 10, true),
    case(97, 61, 1, 1, 0, 8, false),
    case(333, 211, 2, 2, 0, 10, false),
    case(160, 97, 2, 2, 6, 10, false),
    case(64, 37, 2, 1, 0, 8, true),
    case(65, 33, 2, 2, 0, 16, false),
    case(257, 1030, 1, 1, 0, 8, false),
    case(1920, 1080, 1, 1, 0, 8, false),
];

/// A frame of `c`: `pitch · h` bytes; samples spread around the threshold (a quarter of
/// them anywhere in the range).
fn frame(c: &Case, pitch: u32, threshold: u32, r: &mut Rng) -> Vec<u8> {
    let max = ((1u64 << c.depth) - 1) as u32;
    let mut d = r.bytes((pitch * c.h) as usize);
    for y in 0..c.h {
        for x in 0..c.w {
            let v = if r.next_u32().is_multiple_of(4) {
                r.next_u32() % (max + 1)
            } else {
                (threshold + r.next_u32() % 9).saturating_sub(4).min(max)
            } << c.shift;
            let at = (y * pitch + x * c.step) as usize;
            d[at] = v as u8;
            if c.bytes == 2 {
                d[at + 1] = (v >> 8) as u8;
            }
        }
    }
    d
}

/// The kernel on every case, its block counts added, against the host's row counts.
fn kernels(k: &Kernels, s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    let mut max_err = 0f64;
    let mut notes = Vec::new();
    for c in CASES {
        let pitch = (c.w - 1) * c.step + c.bytes + 5;
        let threshold = black::threshold(0.1, c.depth, c.full);
        let blocks = black::blocks(c.h);
        let data = frame(c, pitch, threshold, r);
        let dev = s.clone_htod(&data)?;
        let mut partials = s.alloc_zeros::<u32>(blocks as usize)?;
        let mut l = BlackLuma {
            chan: Channel {
                ptr: data.as_ptr() as u64,
                pitch,
                step: c.step,
                sample_bytes: c.bytes,
                shift: c.shift,
                max: ((1u64 << c.depth) - 1) as u32,
                _pad: 0,
            },
            width: c.w,
            height: c.h,
            threshold,
            _pad: 0,
        };
        let want: u64 = (0..c.h)
            .map(|y| unsafe { black::count_row(&l, y) } as u64)
            .sum();
        {
            let (src, _g1) = DevPtr::of(&dev, s);
            l.chan.ptr = src.as_raw();
            let (out, _g2) = DevPtrMut::of(&mut partials, s);
            let cfg = LaunchConfig {
                grid_dim: (blocks, 1, 1),
                block_dim: (black::BLOCK, 1, 1),
                shared_mem_bytes: 0,
            };
            unsafe { k.black_count(s, cfg, l, out)? };
        }
        let got: u64 = s.clone_dtoh(&partials)?.iter().map(|&n| n as u64).sum();
        max_err = max_err.max(rel_err(got as f64, want as f64));
        notes.push(format!(
            "{}x{} {}-bit: {got} of {} black (host {want})",
            c.w,
            c.h,
            c.depth,
            c.w * c.h
        ));
    }
    Ok(Outcome {
        elements: CASES.len(),
        max_err,
        tolerance: 0.0,
        note: notes.join(", "),
    })
}

/// The CUDA engine (device frames with the test's odd pitches) against the CPU engine:
/// `black`, `ref-black` on frames of each format, flat black and near-threshold frames
/// among them.
fn engine(_k: &Kernels, _s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    use gpumetrics_engine::{BackendChoice, Colorimetry, Engine, EngineConfig, PixelFormat, Range};
    let metric = gpumetrics_engine::MetricSet::named("black").expect("black is registered");
    let mut max_err = 0f64;
    let mut elements = 0;
    let mut notes = Vec::new();
    for (format, w, h, range) in [
        (PixelFormat::I420, 173, 97, Range::Limited),
        (PixelFormat::I420, 1, 1, Range::Full),
        (PixelFormat::Y444, 2, 2, Range::Full),
        (PixelFormat::I420_10Le, 65, 33, Range::Limited),
        (PixelFormat::P010_10Le, 96, 64, Range::Limited),
        (PixelFormat::Nv12, 31, 17, Range::Full),
        (PixelFormat::Gray16Le, 40, 9, Range::Full),
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
        for f in 0..4 {
            // Frame 0 all zero bytes (black), then low bytes near the 8-bit thresholds.
            let mut fill = |i: usize| {
                if f == 0 {
                    return 0;
                }
                let b = if r.next_u32().is_multiple_of(2) {
                    20 + (r.next_u32() % 24) as u8
                } else {
                    r.next_u32() as u8
                };
                if wide && i % 2 == 1 { b & 3 } else { b }
            };
            let a = common::OwnedFrame::new(format, w, h, &mut fill);
            let b = common::OwnedFrame::new(format, w, h, &mut fill);
            let got = common::compare_on_device(&mut gpu, &a, &b);
            let want = cpu.compare(&a.host(), &b.host()).expect("cpu scores");
            for field in ["black", "ref-black"] {
                let (g, c) = (got.get(field), want.get(field));
                let e = match (g, c) {
                    (Some(g), Some(c)) => rel_err(g, c),
                    _ => f64::INFINITY,
                };
                max_err = max_err.max(if e.is_nan() { f64::INFINITY } else { e });
                elements += 1;
                if f == 3 || e > 0.0 {
                    notes.push(format!(
                        "{} {w}x{h} frame {f} {field}: cuda {g:?} cpu {c:?}",
                        format.name()
                    ));
                }
            }
            if f == 0 && want.get("black") != Some(1.0) {
                max_err = f64::INFINITY;
                notes.push(format!(
                    "{}: an all-zero frame is not all black",
                    format.name()
                ));
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
