//! XPSNR's kernels against the host build of the same functions, and the CUDA engine
//! against the CPU engine over a few frames (the temporal activity reads the previous
//! reference frames).
//!
//! Tolerance 0: the block sums are integers, each weight the same f64 operations on both
//! sides (IEEE division and square root), and the reduction adds the same values in the
//! same order (`gpumetrics_kernels::xpsnr::finish` is the host's copy of `xpsnr_finish`),
//! so sums, weights, history, distortions and fields must be equal to the last bit.

use std::sync::Arc;

use cudarc::driver::{CudaStream, DriverError, LaunchConfig};
use gpumetrics_engine::cuda::{DevPtr, DevPtrMut, Kernels};
use gpumetrics_kernels::channel::{Channel, ChannelPair};
use gpumetrics_kernels::xpsnr::{self, Grid, History, XpsnrPlanes};

use crate::common::{self, Rng};
use crate::{Check, Outcome};

/// The checks of this module and the kernels each covers.
pub(crate) const CHECKS: &[(&[&str], Check)] =
    &[(&["xpsnr_blocks"], blocks), (&["xpsnr_finish"], finish)];

crate::gpu_tests! {
    xpsnr_blocks_match_the_host => "xpsnr_blocks",
    xpsnr_finish_matches_the_host => "xpsnr_finish",
}

/// The engine check, outside `CHECKS` (which maps each kernel to one check).
#[test]
#[ignore = "needs a CUDA GPU"]
fn xpsnr_cuda_engine_matches_the_cpu_engine() {
    crate::run("xpsnr (engine)", engine);
}

/// One frame layout of the block check: planes of `bytes`-byte samples of `depth` bits,
/// chroma subsampled by 2^`sub`, rows padded to odd pitches.
struct Case {
    w: u32,
    h: u32,
    bytes: u32,
    depth: u32,
    planes: u32,
    sub: (u32, u32),
    second_order: bool,
}

const CASES: [Case; 5] = [
    // 4×4 blocks; a last column and row one sample wide (no activity region); smoothed.
    Case {
        w: 173,
        h: 97,
        bytes: 1,
        depth: 8,
        planes: 3,
        sub: (1, 1),
        second_order: false,
    },
    // 12×12 blocks, 4:2:2, second order.
    Case {
        w: 333,
        h: 199,
        bytes: 2,
        depth: 10,
        planes: 3,
        sub: (1, 0),
        second_order: true,
    },
    // 32×32 blocks of 16-bit samples of the whole range: SSE2 lanes with wrapped
    // differences and 32-bit overflow, negative activity samples.
    Case {
        w: 801,
        h: 601,
        bytes: 2,
        depth: 16,
        planes: 3,
        sub: (0, 0),
        second_order: true,
    },
    // Above 2048×1152: 2×2 groups, odd sides (clamped), a last column without spatial
    // activity.
    Case {
        w: 2051,
        h: 1153,
        bytes: 2,
        depth: 10,
        planes: 3,
        sub: (1, 1),
        second_order: false,
    },
    // Too small to weight: one block, the planes' plain SSE.
    Case {
        w: 40,
        h: 40,
        bytes: 1,
        depth: 8,
        planes: 1,
        sub: (0, 0),
        second_order: false,
    },
];

/// Frames per case: the history holds none, one, then two previous frames.
const FRAMES: u32 = 3;

/// One plane: its samples (rows of `pitch` bytes) and size.
struct HostPlane {
    data: Vec<u8>,
    pitch: u32,
    w: u32,
    h: u32,
}

/// Random planes of `c` (a smooth ramp with noise, or, at 16 bits, any value).
fn planes(c: &Case, r: &mut Rng) -> Vec<HostPlane> {
    (0..c.planes)
        .map(|p| {
            let (w, h) = if p == 0 {
                (c.w, c.h)
            } else {
                (c.w.div_ceil(1 << c.sub.0), c.h.div_ceil(1 << c.sub.1))
            };
            let pitch = w * c.bytes + 3;
            let max = (1u32 << c.depth) - 1;
            let mut data = vec![0u8; (pitch * h) as usize];
            for y in 0..h {
                for x in 0..w {
                    let v = if c.depth == 16 {
                        r.next_u32() & max
                    } else {
                        ((x * 3 + y * 5) * max / (8 * (w + h)) + r.next_u32() % (max / 16 + 1))
                            .min(max)
                    };
                    let at = (y * pitch + x * c.bytes) as usize;
                    data[at] = v as u8;
                    if c.bytes == 2 {
                        data[at + 1] = (v >> 8) as u8;
                    }
                }
            }
            HostPlane { data, pitch, w, h }
        })
        .collect()
}

/// The kernel-side planes of a reference and a distorted frame at the given addresses.
fn pairs(c: &Case, shape: &[HostPlane], r: &[u64], d: &[u64]) -> XpsnrPlanes {
    let chan = |ptr: u64, p: &HostPlane| Channel {
        ptr,
        pitch: p.pitch,
        step: c.bytes,
        sample_bytes: c.bytes,
        shift: 0,
        max: (1 << c.depth) - 1,
        _pad: 0,
    };
    let mut out = XpsnrPlanes::default();
    for (i, p) in shape.iter().enumerate() {
        out.pairs[i] = ChannelPair {
            reference: chan(r[i], p),
            distorted: chan(d[i], p),
            width: p.w,
            height: p.h,
        };
    }
    out
}

fn grid(c: &Case) -> Grid {
    let chroma = (c.w.div_ceil(1 << c.sub.0), c.h.div_ceil(1 << c.sub.1));
    Grid::new(c.w, c.h, chroma, c.planes, c.depth, c.second_order)
}

/// `xpsnr_blocks` on [`FRAMES`] frames of every case: the blocks' SSEs, weights and the
/// history against the host's `block_part` and `weight`, bit for bit.
fn blocks(k: &Kernels, s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    let mut bad = 0usize;
    let mut elements = 0;
    let mut notes = Vec::new();
    for c in &CASES {
        let g = grid(c);
        let n = g.blocks() as usize;
        let plane = if g.weighted() {
            2 * (c.w * c.h) as usize
        } else {
            1
        };
        let mut history = vec![0u16; plane];
        let mut dev_history = s.alloc_zeros::<u16>(plane)?;
        let mut sse = s.alloc_zeros::<u64>(3 * n)?;
        let mut weights = s.alloc_zeros::<f64>(n)?;
        let mut case_bad = 0usize;
        for f in 0..FRAMES {
            let (rp, dp) = (planes(c, r), planes(c, r));
            let host_ptrs = |ps: &[HostPlane]| -> Vec<u64> {
                ps.iter().map(|p| p.data.as_ptr() as u64).collect()
            };
            let host_planes = pairs(c, &rp, &host_ptrs(&rp), &host_ptrs(&dp));
            let h = History {
                ptr: history.as_mut_ptr() as u64,
                write: f % 2,
                frames: f,
            };
            let (mut want_sse, mut want_w) = (vec![0u64; 3 * n], vec![0f64; n]);
            for b in 0..n as u32 {
                let (i, j) = (b % g.cols, b / g.cols);
                let sums = unsafe { xpsnr::block_part(&g, &host_planes, &h, i, j, 0, 1) };
                for p in 0..3 {
                    want_sse[p * n + b as usize] = sums.sse[p];
                }
                want_w[b as usize] = if g.weighted() {
                    xpsnr::weight(&g, &g.span(i, j), sums.spatial, sums.temporal)
                } else {
                    1.0
                };
            }
            let dev_r = rp
                .iter()
                .map(|p| s.clone_htod(&p.data))
                .collect::<Result<Vec<_>, _>>()?;
            let dev_d = dp
                .iter()
                .map(|p| s.clone_htod(&p.data))
                .collect::<Result<Vec<_>, _>>()?;
            {
                let mut guards = Vec::new();
                let (mut pr, mut pd) = (Vec::new(), Vec::new());
                for buf in &dev_r {
                    let (p, guard) = DevPtr::of(buf, s);
                    guards.push(guard);
                    pr.push(p.as_raw());
                }
                for buf in &dev_d {
                    let (p, guard) = DevPtr::of(buf, s);
                    guards.push(guard);
                    pd.push(p.as_raw());
                }
                let dev_planes = pairs(c, &rp, &pr, &pd);
                let (hp, _g1) = DevPtrMut::of(&mut dev_history, s);
                let (sp, _g2) = DevPtrMut::of(&mut sse, s);
                let (wp, _g3) = DevPtrMut::of(&mut weights, s);
                let dev_h = History {
                    ptr: hp.as_raw(),
                    write: f % 2,
                    frames: f,
                };
                let cfg = LaunchConfig {
                    grid_dim: (g.cols, g.rows, 1),
                    block_dim: (xpsnr::BLOCK, 1, 1),
                    shared_mem_bytes: 0,
                };
                unsafe { k.xpsnr_blocks(s, cfg, g, dev_planes, dev_h, sp, wp)? };
            }
            let (got_sse, got_w) = (s.clone_dtoh(&sse)?, s.clone_dtoh(&weights)?);
            let got_history = s.clone_dtoh(&dev_history)?;
            let planes = c.planes as usize;
            case_bad += got_sse[..planes * n]
                .iter()
                .zip(&want_sse[..planes * n])
                .filter(|(a, b)| a != b)
                .count();
            case_bad += got_w
                .iter()
                .zip(&want_w)
                .filter(|(a, b)| a.to_bits() != b.to_bits())
                .count();
            if g.weighted() {
                case_bad += got_history
                    .iter()
                    .zip(&history)
                    .filter(|(a, b)| a != b)
                    .count();
            }
            elements += planes * n + n;
            if f == FRAMES - 1 || case_bad > 0 {
                notes.push(format!(
                    "{}x{} {}-bit: {n} blocks, block 0 sse {} weight {} (host {} {}), {case_bad} differ",
                    c.w, c.h, c.depth, got_sse[0], got_w[0], want_sse[0], want_w[0]
                ));
            }
        }
        bad += case_bad;
    }
    Ok(Outcome {
        elements,
        max_err: bad as f64,
        tolerance: 0.0,
        note: notes.join(", "),
    })
}

/// `xpsnr_finish` on random sums and weights of several grids (smoothed in shared memory,
/// smoothed in global memory past `SMOOTH_SHARED` blocks, not smoothed, unweighted): the
/// distortions and the smoothed weights against the host's `finish`, bit for bit.
fn finish(k: &Kernels, s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    let mut many = Grid::new(320, 240, (160, 120), 3, 8, false);
    (many.cols, many.rows) = (70, 70);
    let grids = [
        Grid::new(333, 199, (167, 100), 3, 8, false),
        many,
        Grid::new(1920, 1080, (960, 540), 3, 10, false),
        Grid::new(640, 360, (640, 360), 1, 12, true),
        Grid::new(40, 40, (20, 20), 3, 8, false),
    ];
    let mut bad = 0usize;
    let mut notes = Vec::new();
    for g in grids {
        let n = g.blocks() as usize;
        let sse: Vec<u64> = (0..3 * n).map(|_| r.next_u64() % 5_000_000).collect();
        let mut want_w: Vec<f64> = (0..n)
            .map(|_| 1.0 / (1.0 + r.f32(0.0, 300.0) as f64))
            .collect();
        let mut weights = s.clone_htod(&want_w)?;
        let dev_sse = s.clone_htod(&sse)?;
        let mut out = s.alloc_zeros::<u64>(3)?;
        let want = xpsnr::finish(&g, &sse, &mut want_w);
        {
            let (sp, _g1) = DevPtr::of(&dev_sse, s);
            let (wp, _g2) = DevPtrMut::of(&mut weights, s);
            let (op, _g3) = DevPtrMut::of(&mut out, s);
            let cfg = LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: (xpsnr::FINISH, 1, 1),
                shared_mem_bytes: 0,
            };
            unsafe { k.xpsnr_finish(s, cfg, g, sp, wp, op)? };
        }
        let got = s.clone_dtoh(&out)?;
        let planes = g.planes as usize;
        let mut grid_bad = (0..planes).filter(|&c| got[c] != want[c]).count();
        if g.smooth != 0 && n > xpsnr::SMOOTH_SHARED {
            // Smoothed in place in global memory: the weights themselves.
            let got_w = s.clone_dtoh(&weights)?;
            grid_bad += got_w
                .iter()
                .zip(&want_w)
                .filter(|(a, b)| a.to_bits() != b.to_bits())
                .count();
        }
        notes.push(format!(
            "{}x{} blocks (smooth {}): {:?} vs host {:?}",
            g.cols,
            g.rows,
            g.smooth,
            &got[..planes],
            &want[..planes]
        ));
        bad += grid_bad;
    }
    Ok(Outcome {
        elements: grids.len(),
        max_err: bad as f64,
        tolerance: 0.0,
        note: notes.join(", "),
    })
}

/// The CUDA engine (device frames with the test's odd pitches) against the CPU engine: five
/// frames of each layout, every `xpsnr-*` field; a reset restarts the history on both.
fn engine(_k: &Kernels, _s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    use gpumetrics_engine::{
        BackendChoice, Engine, EngineConfig, FrameLayout, OptionValue, Options, PixelFormat,
    };
    let metric = gpumetrics_engine::MetricSet::named("xpsnr").expect("xpsnr is registered");
    let mut bad = 0usize;
    let mut elements = 0;
    let mut notes = Vec::new();
    for (format, w, h, fps) in [
        (PixelFormat::I420, 173, 97, 25.0),
        (PixelFormat::I420_10Le, 333, 199, 60.0),
        (PixelFormat::P010_10Le, 96, 64, 25.0),
        (PixelFormat::Nv12, 65, 33, 50.0),
        (PixelFormat::Y444_16Le, 64, 48, 25.0),
        (PixelFormat::Gray8, 31, 17, 25.0),
        (PixelFormat::I420, 1280, 720, 30.0),
        (PixelFormat::I420, 2560, 1440, 60.0),
    ] {
        let [mut gpu, mut cpu] = [BackendChoice::Cuda, BackendChoice::Cpu].map(|backend| {
            let options = Options::new()
                .with("xpsnr-frame-rate", OptionValue::Float(fps))
                .unwrap();
            let cfg = EngineConfig {
                metrics: metric,
                backend,
                options,
                ..Default::default()
            };
            let layout = FrameLayout {
                format,
                width: w,
                height: h,
            };
            Engine::new(&cfg, layout, layout).expect("an engine")
        });
        assert_eq!(gpu.backend_name(), "cuda");
        let wide = matches!(format, PixelFormat::I420_10Le);
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
            let same = got.len() == want.len()
                && got
                    .iter()
                    .zip(want.iter())
                    .all(|(g, c)| g.0 == c.0 && g.1.to_bits() == c.1.to_bits());
            elements += want.len();
            if !same {
                bad += 1;
            }
            if f == 4 || !same {
                notes.push(format!(
                    "{} {w}x{h} frame {f}: cuda {:?} cpu {:?}",
                    format.name(),
                    got.iter().collect::<Vec<_>>(),
                    want.iter().collect::<Vec<_>>()
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
