//! Blur's kernels (`blur_gauss`, `blur_suppress`, `blur_widths`) against the host build of
//! the same per-pixel functions, and the CUDA engine against the CPU engine.
//!
//! Tolerance: none. The blurred and suppressed planes are integers computed by the same
//! code; the widths are integers or f32 multiples of 0.7, whose f64 block sums are exact in
//! any order (`gpumetrics_kernels::blur`), so every block's (sum, count) and every frame's
//! `blur` must be equal bit for bit.

use std::sync::Arc;

use cudarc::driver::{CudaStream, DriverError, LaunchConfig};
use gpumetrics_engine::cuda::{DevPtr, DevPtrMut, Kernels};
use gpumetrics_kernels::blur::{self, Params, Plane};
use gpumetrics_kernels::channel::Channel;
use gpumetrics_kernels::luma8::Luma8;

use crate::common::{self, Rng};
use crate::{Check, Outcome, rel_err};

/// The checks of this module and the kernels each covers.
pub(crate) const CHECKS: &[(&[&str], Check)] =
    &[(&["blur_gauss", "blur_suppress", "blur_widths"], kernels)];

crate::gpu_tests! {
    blur_kernels_match_the_host => "blur_gauss",
}

/// The engine check, outside `CHECKS` (which maps each kernel to one check).
#[test]
#[ignore = "needs a CUDA GPU"]
fn blur_cuda_engine_matches_the_cpu_engine() {
    crate::run("blur (engine)", engine);
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
    /// Block size (−1: the whole frame) and the search radius.
    block: (i64, i64),
    radius: u32,
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
        block: (-1, -1),
        radius: 50,
    }
}

/// Tiny and odd sizes, 8 and 10 bit (LSB and MSB aligned, interleaved luma), 12 bit full
/// range, many small blocks, a short radius, and 1920×1080.
const CASES: &[Case] = &[
    case(1, 1, 1, 1, 0, 8),
    case(4, 4, 1, 1, 0, 8),
    case(5, 7, 2, 2, 0, 10),
    case(97, 61, 1, 1, 0, 8),
    Case {
        full: true,
        ..case(160, 97, 2, 2, 6, 10)
    },
    Case {
        block: (16, 12),
        ..case(173, 97, 2, 1, 0, 8)
    },
    Case {
        block: (1, 1),
        radius: 3,
        ..case(64, 37, 1, 1, 0, 8)
    },
    Case {
        full: true,
        block: (100, 100),
        ..case(333, 211, 2, 2, 0, 12)
    },
    case(1920, 1080, 1, 1, 0, 8),
];

/// A frame of `c`: soft steps and ramps with noise (edges of many widths), `pitch · h`
/// bytes, samples below 2^depth.
fn frame(c: &Case, pitch: u32, r: &mut Rng) -> Vec<u8> {
    let max = (1u32 << c.depth) - 1;
    let scale = 1u32 << (c.depth - 8);
    let mut d = r.bytes((pitch * c.h) as usize);
    for y in 0..c.h {
        for x in 0..c.w {
            let base = match (x / 13 + y / 11) % 4 {
                0 => 40,
                1 => 200,
                2 => (x * 9 + y * 3) % 256,
                _ => 120,
            };
            let v = ((base + r.next_u32() % 12) * scale).min(max) << c.shift;
            let at = (y * pitch + x * c.step) as usize;
            d[at] = v as u8;
            if c.bytes == 2 {
                d[at + 1] = (v >> 8) as u8;
            }
        }
    }
    d
}

fn params(c: &Case, ptr: u64, pitch: u32) -> Params {
    let luma = Luma8 {
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
    };
    let (block_w, block_h, cols, rows) = blur::layout(c.w, c.h, c.block.0, c.block.1);
    Params {
        luma,
        low: 15,
        high: 30,
        radius: c.radius,
        block_w,
        block_h,
        cols,
        rows,
        chunks: blur::chunks(block_w, block_h),
    }
}

/// The host's planes and per-block (sum, count), the CPU backend's way.
fn host(p: &Params) -> (Vec<u8>, Vec<u8>, Vec<(f64, u32)>) {
    let (w, h) = (p.luma.width, p.luma.height);
    let mut blurred = vec![0u8; (w * h) as usize];
    let mut suppressed = blurred.clone();
    for y in 0..h {
        unsafe { blur::gauss_row(&p.luma, y, blurred[(y * w) as usize..].as_mut_ptr()) };
    }
    let b = Plane {
        ptr: blurred.as_ptr(),
        w,
        h,
    };
    for y in 0..h {
        unsafe { blur::suppressed_row(&b, y, suppressed[(y * w) as usize..].as_mut_ptr()) };
    }
    let n = Plane {
        ptr: suppressed.as_ptr(),
        w,
        h,
    };
    let mut blocks = vec![(0.0f64, 0u32); (p.cols * p.rows) as usize];
    for (i, s) in blocks.iter_mut().enumerate() {
        let (bx, by) = (i as u32 % p.cols, i as u32 / p.cols);
        for y in by * p.block_h..(by + 1) * p.block_h {
            for x in bx * p.block_w..(bx + 1) * p.block_w {
                let v = unsafe { blur::pixel_width(p, &b, &n, x, y) };
                if blur::counts(v) {
                    s.0 += v as f64;
                    s.1 += 1;
                }
            }
        }
    }
    (blurred, suppressed, blocks)
}

/// The three kernels on two frames of every case, as the engine launches them: both planes
/// and every block's (sum, count) against [`host`], exactly.
fn kernels(k: &Kernels, s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    let mut bad = 0usize;
    let mut elements = 0;
    let mut notes = Vec::new();
    for c in CASES {
        let pitch = (c.w - 1) * c.step + c.bytes + 5;
        let n = (c.w * c.h) as usize;
        let p0 = params(c, 0, pitch);
        let grid = p0.cols * p0.rows * p0.chunks;
        let mut blurred = s.alloc_zeros::<u8>(n)?;
        let mut suppressed = s.alloc_zeros::<u8>(n)?;
        let mut partials = s.alloc_zeros::<f64>(2 * grid.max(1) as usize)?;
        for _ in 0..2 {
            let data = frame(c, pitch, r);
            let dev = s.clone_htod(&data)?;
            let hp = params(c, data.as_ptr() as u64, pitch);
            let (want_b, want_n, want_blocks) = host(&hp);
            {
                let (src, _g1) = DevPtr::of(&dev, s);
                let p = params(c, src.as_raw(), pitch);
                let (bp, _g2) = DevPtrMut::of(&mut blurred, s);
                let (np, _g3) = DevPtrMut::of(&mut suppressed, s);
                let (out, _g4) = DevPtrMut::of(&mut partials, s);
                let plane = LaunchConfig {
                    grid_dim: (c.w.div_ceil(blur::TILE_W), c.h.div_ceil(blur::TILE_H), 1),
                    block_dim: (blur::TILE_W, blur::THREADS_Y, 1),
                    shared_mem_bytes: 0,
                };
                unsafe {
                    k.blur_gauss(s, plane, p, bp)?;
                    k.blur_suppress(s, plane, p, bp.as_const(), np)?;
                    if grid > 0 {
                        let cfg = LaunchConfig {
                            grid_dim: (grid, 1, 1),
                            block_dim: (blur::BLOCK, 1, 1),
                            shared_mem_bytes: 0,
                        };
                        k.blur_widths(s, cfg, p, bp.as_const(), np.as_const(), out)?;
                    }
                }
            }
            let got_b = s.clone_dtoh(&blurred)?;
            let got_n = s.clone_dtoh(&suppressed)?;
            let parts = s.clone_dtoh(&partials)?;
            let mut got_blocks = vec![(0.0f64, 0u32); want_blocks.len()];
            if grid > 0 {
                for (b, pair) in parts.chunks_exact(2).enumerate() {
                    let g = &mut got_blocks[b / p0.chunks as usize];
                    g.0 += pair[0];
                    g.1 += pair[1] as u32;
                }
            }
            let planes_bad = got_b.iter().zip(&want_b).filter(|(a, b)| a != b).count()
                + got_n.iter().zip(&want_n).filter(|(a, b)| a != b).count();
            let blocks_bad = got_blocks
                .iter()
                .zip(&want_blocks)
                .filter(|(a, b)| a.0.to_bits() != b.0.to_bits() || a.1 != b.1)
                .count();
            elements += 2 * n + want_blocks.len();
            let edges: u32 = want_blocks.iter().map(|b| b.1).sum();
            if planes_bad + blocks_bad > 0 {
                notes.push(format!(
                    "{}x{}: {planes_bad} plane values and {blocks_bad} blocks differ",
                    c.w, c.h
                ));
            }
            bad += planes_bad + blocks_bad;
            notes.push(format!(
                "{}x{} {}-bit: {} blocks, {edges} edge pixels",
                c.w,
                c.h,
                c.depth,
                want_blocks.len()
            ));
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
/// three frames of each format, `blur` and `ref-blur` equal or both absent.
fn engine(_k: &Kernels, _s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    use gpumetrics_engine::{BackendChoice, Colorimetry, Engine, EngineConfig, PixelFormat, Range};
    let metric = gpumetrics_engine::MetricSet::named("blur").expect("blur is registered");
    let mut max_err = 0f64;
    let mut elements = 0;
    let mut notes = Vec::new();
    for (format, w, h, range, block) in [
        (PixelFormat::I420, 173, 97, Range::Limited, -1.0),
        (PixelFormat::I420, 3, 3, Range::Limited, -1.0),
        (PixelFormat::I420_10Le, 65, 33, Range::Full, -1.0),
        (PixelFormat::P010_10Le, 96, 64, Range::Limited, 16.0),
        (PixelFormat::Gray8, 31, 17, Range::Full, 8.0),
        (PixelFormat::I420, 1920, 1080, Range::Limited, -1.0),
    ] {
        let wide = matches!(format, PixelFormat::I420_10Le);
        let c = Colorimetry {
            range,
            ..Colorimetry::default_for(format.family())
        };
        let mut options = gpumetrics_engine::Options::new();
        for o in ["blur-block-width", "blur-block-height"] {
            options = options
                .with(o, gpumetrics_engine::OptionValue::Float(block))
                .unwrap();
        }
        let engines = [BackendChoice::Cuda, BackendChoice::Cpu].map(|backend| {
            let cfg = EngineConfig {
                metrics: metric,
                backend,
                options: options.clone(),
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
        for f in 0..3 {
            // Soft blocks of noise (edges); 10-bit LSB-aligned samples below 1024.
            let mut fill = |i: usize| {
                let b = ((i / 7 % 3) as u32 * 90 + r.next_u32() % 20) as u8;
                if wide && i % 2 == 1 { b & 3 } else { b }
            };
            let a = common::OwnedFrame::new(format, w, h, &mut fill);
            let b = common::OwnedFrame::new(format, w, h, &mut fill);
            let got = common::compare_on_device(&mut gpu, &a, &b);
            let want = cpu.compare(&a.host(), &b.host()).expect("cpu scores");
            for field in ["blur", "ref-blur"] {
                let (g, c) = (got.get(field), want.get(field));
                let e = match (g, c) {
                    (Some(g), Some(c)) => rel_err(g, c),
                    (None, None) => 0.0,
                    _ => f64::INFINITY,
                };
                max_err = max_err.max(e);
                elements += 1;
                if f == 2 || e > 0.0 {
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
