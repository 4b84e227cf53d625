//! SI/TI's kernel (`siti_sums`) against the host build of the same
//! per-pixel functions, and the CUDA engine against the CPU engine over a few frames (TI
//! measures against the previous frame of the same input).
//!
//! Tolerance: the per-pixel values (range conversion, Sobel magnitude, motion, their
//! squares) are bit-identical on both sides; only the order of the f64 additions differs
//! (per thread, warp and block on the GPU; rows in bands of 32 on the CPU). The sums
//! therefore agree to 1e-9 relative (the worst case of n·ε for n = 2^21 values is
//! 2.3e-10), and SI and TI, rounded to f32, to 1e-6 relative (about 8 f32 ulps). The kernel crate's
//! host test `gpu_order_agrees_with_the_cpu_order`, which emulates the GPU's order, found
//! them equal on every frame it tried.

use std::sync::Arc;

use cudarc::driver::{CudaStream, DriverError, LaunchConfig};
use gpumetrics_engine::cuda::{DevPtr, DevPtrMut, Kernels};
use gpumetrics_kernels::channel::Channel;
use gpumetrics_kernels::siti::{self, Luma};

use crate::common::{self, Rng};
use crate::{Check, Outcome, rel_err};

/// The checks of this module and the kernels each covers.
pub(crate) const CHECKS: &[(&[&str], Check)] = &[(&["siti_sums"], kernels)];

crate::gpu_tests! {
    siti_kernels_match_the_host => "siti_sums",
}

/// The engine check, outside `CHECKS` (which maps each kernel to one check).
#[test]
#[ignore = "needs a CUDA GPU"]
fn siti_cuda_engine_matches_the_cpu_engine() {
    crate::run("siti (engine)", engine);
}

/// Relative tolerance of SI and TI (f32 results).
const TOLERANCE: f64 = 1e-6;
/// Relative tolerance of the sums of values, the means' numerators (f64).
const SUM_TOLERANCE: f64 = 1e-9;

/// One luma plane layout of the kernel check.
struct Case {
    w: u32,
    h: u32,
    /// Bytes between samples, bytes per sample, right shift, depth.
    step: u32,
    bytes: u32,
    shift: u32,
    depth: u32,
    full: bool,
    /// A smooth ramp with a little noise (small deviations from a large mean) instead of
    /// uniform noise.
    smooth: bool,
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
        smooth: false,
    }
}

/// The cases: 3×3 (one gradient value), odd sizes, 8 and 10 bit (LSB- and MSB-aligned,
/// interleaved luma of step 2), limited and full range, edge tiles, more tiles than
/// `MAX_BLOCKS` (2600×800: 21×50 tiles, blocks stride), and 1920×1080.
const CASES: &[Case] = &[
    case(3, 3, 1, 1, 0, 8),
    Case {
        full: true,
        ..case(3, 3, 2, 2, 0, 10)
    },
    case(4, 5, 1, 1, 0, 8),
    Case {
        smooth: true,
        ..case(97, 61, 1, 1, 0, 8)
    },
    Case {
        full: true,
        ..case(333, 211, 2, 2, 0, 10)
    },
    case(160, 97, 2, 2, 6, 10),
    Case {
        full: true,
        ..case(64, 37, 2, 1, 0, 8)
    },
    Case {
        smooth: true,
        ..case(257, 1030, 2, 2, 0, 10)
    },
    Case {
        smooth: true,
        ..case(2600, 800, 2, 2, 0, 10)
    },
    Case {
        full: true,
        smooth: true,
        ..case(1920, 1080, 1, 1, 0, 8)
    },
];

/// Frames per case: the first has no previous frame (TI 0).
const FRAMES: usize = 3;

/// A frame of `c`: `pitch · h` bytes, samples below 2^depth.
fn frame(c: &Case, pitch: u32, k: u32, r: &mut Rng) -> Vec<u8> {
    let max = (1u32 << c.depth) - 1;
    let mut d = r.bytes((pitch * c.h) as usize);
    for y in 0..c.h {
        for x in 0..c.w {
            let v = if c.smooth {
                (x * 3 + y * 2 + k * 5 + r.next_u32() % 4) % (max + 1)
            } else {
                r.next_u32() % (max + 1)
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

/// SI, TI and the four sums (values and squares of each map) of one frame by the host functions, in the CPU
/// backend's way (maps, then f64 sums in row order); `prev` becomes this frame's luma.
fn host(l: &Luma, prev: &mut [u16], first: bool) -> ([f32; 2], [f64; 4]) {
    let (w, h) = (l.width as usize, l.height as usize);
    let mut grad = vec![0f32; (w - 2) * (h - 2)];
    let mut motion = vec![0f32; w * h];
    for y in 0..h - 2 {
        unsafe { siti::sobel_row(l, y as u32, grad[y * (w - 2)..].as_mut_ptr()) };
    }
    for y in 0..h {
        let (p, m) = (prev[y * w..].as_mut_ptr(), motion[y * w..].as_mut_ptr());
        unsafe { siti::motion_row(l, y as u32, first, p, m) };
    }
    let sums = [&grad, &motion].map(|v| unsafe { siti::sums(v.as_ptr(), v.len()) });
    let dev = |v: &[f32], s: (f64, f64)| siti::stddev(s.0, s.1, v.len() as u64);
    (
        [dev(&grad, sums[0]), dev(&motion, sums[1])],
        [sums[0].0, sums[0].1, sums[1].0, sums[1].1],
    )
}

/// The kernel on `FRAMES` frames of every case, as the engine launches them; SI, TI and
/// the sums against [`host`], the previous-frame buffer exactly.
fn kernels(k: &Kernels, s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    let mut max_err = 0f64;
    let mut elements = 0;
    let mut notes = Vec::new();
    for c in CASES {
        let pitch = (c.w - 1) * c.step + c.bytes + 5;
        let blocks = siti::blocks(c.w, c.h);
        let n = (c.w * c.h) as usize;
        let mut prev = s.alloc_zeros::<u16>(n)?;
        let mut partials = s.alloc_zeros::<f64>(4 * blocks as usize)?;
        let mut host_prev = vec![0u16; n];
        let (mut worst, mut worst_sum, mut prev_bad) = (0f64, 0f64, 0usize);
        for f in 0..FRAMES {
            let data = frame(c, pitch, f as u32, r);
            let dev = s.clone_htod(&data)?;
            let mut l = Luma {
                chan: Channel {
                    ptr: data.as_ptr() as u64,
                    pitch,
                    step: c.step,
                    sample_bytes: c.bytes,
                    shift: c.shift,
                    max: (1 << c.depth) - 1,
                    _pad: 0,
                },
                width: c.w,
                height: c.h,
                full_range: c.full as u32,
                factor: 1 << (c.depth - 8),
            };
            let (want, want_sums) = host(&l, &mut host_prev, f == 0);
            {
                let (src, _g1) = DevPtr::of(&dev, s);
                l.chan.ptr = src.as_raw();
                let (pp, _g2) = DevPtrMut::of(&mut prev, s);
                let (out, _g3) = DevPtrMut::of(&mut partials, s);
                let cfg = LaunchConfig {
                    grid_dim: (blocks, 1, 1),
                    block_dim: (siti::BLOCK, 1, 1),
                    shared_mem_bytes: 0,
                };
                let first = (f == 0) as u32;
                unsafe { k.siti_sums(s, cfg, l, pp, first, out)? };
            }
            let p = s.clone_dtoh(&partials)?;
            let got_prev = s.clone_dtoh(&prev)?;
            let add = |i: usize| p.chunks_exact(4).map(|c| c[i]).sum::<f64>();
            let (ng, nm) = siti::counts(c.w, c.h);
            let got = [
                siti::stddev(add(0), add(1), ng),
                siti::stddev(add(2), add(3), nm),
            ];
            for i in 0..2 {
                worst = worst.max(rel_err(got[i] as f64, want[i] as f64));
            }
            for (i, want) in want_sums.iter().enumerate() {
                worst_sum = worst_sum.max(rel_err(add(i), *want));
            }
            if f == 0 && got[1] != 0.0 {
                worst = f64::INFINITY;
            }
            prev_bad += got_prev
                .iter()
                .zip(&host_prev)
                .filter(|(a, b)| a != b)
                .count();
            elements += 2;
            if f == FRAMES - 1 {
                notes.push(format!(
                    "{}x{} {}-bit {}: si {} ti {} (host {} {})",
                    c.w,
                    c.h,
                    c.depth,
                    if c.full { "full" } else { "limited" },
                    got[0],
                    got[1],
                    want[0],
                    want[1]
                ));
            }
        }
        if worst_sum > SUM_TOLERANCE || prev_bad > 0 {
            notes.push(format!(
                "{}x{}: sums off by {worst_sum:e} (tolerance {SUM_TOLERANCE:e}), {prev_bad} \
                 previous-frame samples differ",
                c.w, c.h
            ));
            worst = f64::INFINITY;
        }
        max_err = max_err.max(worst);
    }
    Ok(Outcome {
        elements,
        max_err,
        tolerance: TOLERANCE,
        note: notes.join(", "),
    })
}

/// The CUDA engine (device frames with the test's odd pitches) against the CPU engine: four
/// frames of each format, `si`, `ti`, `ref-si`, `ref-ti` of each; a reset restarts TI on both.
fn engine(_k: &Kernels, _s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    use gpumetrics_engine::{BackendChoice, Colorimetry, Engine, EngineConfig, PixelFormat, Range};
    let metric = gpumetrics_engine::MetricSet::named("siti").expect("siti is registered");
    let fields = ["si", "ti", "ref-si", "ref-ti"];
    let mut max_err = 0f64;
    let mut elements = 0;
    let mut notes = Vec::new();
    for (format, w, h, range) in [
        (PixelFormat::I420, 173, 97, Range::Limited),
        (PixelFormat::I420, 3, 3, Range::Limited),
        (PixelFormat::I420_10Le, 65, 33, Range::Full),
        (PixelFormat::P010_10Le, 96, 64, Range::Limited),
        (PixelFormat::Gray8, 31, 17, Range::Full),
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
            // 10-bit LSB-aligned samples: the high byte below 4.
            let mut fill = |i: usize| {
                let b = r.next_u32() as u8;
                if wide && i % 2 == 1 { b & 3 } else { b }
            };
            let a = common::OwnedFrame::new(format, w, h, &mut fill);
            let b = common::OwnedFrame::new(format, w, h, &mut fill);
            let got = common::compare_on_device(&mut gpu, &a, &b);
            let want = cpu.compare(&a.host(), &b.host()).expect("cpu scores");
            for field in fields {
                let (g, c) = (got.get(field), want.get(field));
                let e = match (g, c) {
                    (Some(g), Some(c)) => rel_err(g, c),
                    _ => f64::INFINITY,
                };
                max_err = max_err.max(if e.is_nan() { f64::INFINITY } else { e });
                elements += 1;
                if f == 4 || e > TOLERANCE {
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
        tolerance: TOLERANCE,
        note: notes.join(", "),
    })
}
