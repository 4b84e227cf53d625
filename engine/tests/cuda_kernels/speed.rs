//! SpEED chroma's kernels (`speed_load`, `speed_resample`, `speed_antialias`,
//! `speed_stats`, `speed_qr`, `speed_solve`) against the host build of the same per-element functions, run the way the
//! CPU backend runs them (`engine/src/metric/vmaf/speed/cpu.rs`).
//!
//! Tolerance: none. Every output element is computed by one thread with the host's function
//! and the host's order of sums (the covariance entries in f64, each by one thread), so the
//! loaded and resampled planes, the anti-alias rows, the reduced mean-subtracted plane and
//! the covariance entries, the QR factors and the blocks' variance estimates must be equal
//! bit for bit.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DriverError, LaunchConfig};
use gpumetrics_engine::cuda::{DevPtr, DevPtrMut, Kernels};
use gpumetrics_kernels::channel::Channel;
use gpumetrics_kernels::speed::{
    self as k, BLOCK, Dims, ELEMS, Frames, JOBS, QR_THREADS, Resample, SCALES, SOLVE_THREADS,
    STATS_THREADS, TILE_X, TILE_Y, linalg, stats,
};

use crate::common::Rng;
use crate::{Check, Outcome};

/// The checks of this module and the kernels each covers.
pub(crate) const CHECKS: &[(&[&str], Check)] = &[(
    &[
        "speed_load",
        "speed_resample",
        "speed_antialias",
        "speed_stats",
        "speed_qr",
        "speed_solve",
    ],
    kernels,
)];

crate::gpu_tests! {
    speed_kernels_match_the_host => "speed_load",
}

/// One layout and option set of the check.
struct Case {
    /// The measured chroma region.
    w: u32,
    h: u32,
    /// Bytes between samples, bytes per sample, right shift; the reference's and the
    /// distorted's depths.
    step: u32,
    bytes: u32,
    shift: u32,
    depth: u32,
    dis_depth: u32,
    prescale: f64,
    method: Resample,
    kernelscale: f32,
}

const fn case(w: u32, h: u32, prescale: f64, method: Resample) -> Case {
    Case {
        w,
        h,
        step: 1,
        bytes: 1,
        shift: 0,
        depth: 8,
        dis_depth: 8,
        prescale,
        method,
        kernelscale: 1.0,
    }
}

/// 1080p 4:2:0's chroma; odd sizes through each resampler (halving, 0.6, enlarging);
/// 10-bit samples in 16-bit containers, MSB-aligned and interleaved (P010's U), a distorted
/// of another depth; long and short filters; a plane of one block.
const CASES: &[Case] = &[
    case(960, 540, 1.0, Resample::Nearest),
    Case {
        bytes: 2,
        step: 2,
        depth: 10,
        dis_depth: 10,
        ..case(321, 240, 0.6, Resample::Bilinear)
    },
    Case {
        bytes: 2,
        step: 4,
        shift: 6,
        depth: 10,
        dis_depth: 8,
        ..case(400, 300, 0.5, Resample::Nearest)
    },
    Case {
        kernelscale: 2.0,
        ..case(173, 97, 1.5, Resample::Bicubic)
    },
    Case {
        kernelscale: 0.5,
        bytes: 2,
        step: 2,
        depth: 12,
        dis_depth: 12,
        ..case(97, 85, 1.0, Resample::Nearest)
    },
    case(1920, 1080, 0.5, Resample::Bilinear),
];

/// A channel's bytes: smooth waves plus noise, `pitch · h` bytes, samples below 2^depth.
fn channel_data(c: &Case, depth: u32, pitch: u32, r: &mut Rng) -> Vec<u8> {
    let max = (1u32 << depth) - 1;
    let mut d = r.bytes((pitch * c.h) as usize);
    let (fx, fy) = (r.f32(0.01, 0.2), r.f32(0.01, 0.2));
    for y in 0..c.h {
        for x in 0..c.w {
            let wave = ((x as f32 * fx).sin() * (y as f32 * fy).cos() + 1.0) / 2.0;
            let v = ((wave * 0.8 + r.f32(0.0, 0.2)) * max as f32) as u32;
            let v = v.min(max) << c.shift;
            let at = (y * pitch + x * c.step) as usize;
            d[at] = v as u8;
            if c.bytes == 2 {
                d[at + 1] = (v >> 8) as u8;
            }
        }
    }
    d
}

/// What the host computes for one job, in the CPU backend's steps.
struct Host {
    plane: Vec<f32>,
    scaled: Vec<f32>,
    rows: Vec<f32>,
    /// The covariance entries, then the reduced, mean-subtracted plane.
    out: Vec<f32>,
}

fn host(f: &Frames, c: &Channel, aa: &[f32], local: &[f32]) -> Host {
    let d = f.dims();
    let mut plane = vec![0.0f32; d.width * d.height];
    for y in 0..d.height {
        for x in 0..d.width {
            plane[y * d.width + x] = unsafe { k::load(c, x as u32, y as u32, f.max) };
        }
    }
    let mut scaled = Vec::new();
    if d.resampled {
        scaled = vec![0.0f32; d.scaled_width * d.scaled_height];
        for y in 0..d.scaled_height {
            for x in 0..d.scaled_width {
                scaled[y * d.scaled_width + x] = k::resample(
                    f.resample(),
                    &plane,
                    d.width,
                    (d.width, d.height),
                    (d.scaled_width, d.scaled_height),
                    x,
                    y,
                );
            }
        }
    }
    let src = if d.resampled { &scaled } else { &plane };
    let sw = d.scaled_width;
    let mut rows = vec![0.0f32; d.op_height * sw];
    let mut op = vec![0.0f32; d.op_width * d.op_height];
    for oy in 0..d.op_height {
        for x in 0..sw {
            rows[oy * sw + x] = k::filter_vertical(aa, src, sw, d.scaled_height, x, oy << SCALES);
        }
        for ox in 0..d.op_width {
            op[oy * d.op_width + ox] =
                k::filter_horizontal(aa, &rows[oy * sw..][..sw], sw, ox << SCALES);
        }
    }
    let ow = d.op_width;
    let mut vertical = vec![0.0f32; op.len()];
    for y in 0..d.op_height {
        for x in 0..ow {
            vertical[y * ow + x] = k::filter_vertical(local, &op, ow, d.op_height, x, y);
        }
    }
    for y in 0..d.op_height {
        for x in 0..ow {
            op[y * ow + x] -= k::filter_horizontal(local, &vertical[y * ow..][..ow], ow, x);
        }
    }
    let means: Vec<f32> = (0..ELEMS)
        .map(|i| stats::patch_mean(&op, ow, d.patch_span(), i / d.block, i % d.block))
        .collect();
    let mut out: Vec<f32> = (0..stats::PAIRS)
        .map(|e| {
            let (x, y) = stats::pair(e);
            stats::patch_covariance(&op, ow, &d, &means, x, y)
        })
        .collect();
    let mut a = vec![0.0f32; ELEMS * ELEMS];
    for i in 0..ELEMS {
        for j in 0..ELEMS {
            a[i * ELEMS + j] = out[stats::pair_index(i, j)];
        }
    }
    let (mut p, mut r) = (vec![0.0f32; ELEMS * ELEMS], vec![0.0f32; ELEMS * ELEMS]);
    let mut work = vec![0.0f32; linalg::qr_work(ELEMS)];
    linalg::qr(&a, ELEMS, &mut p, &mut r, &mut work);
    out.extend_from_slice(&p);
    out.extend_from_slice(&r);
    for b in 0..d.blocks() {
        let (mut y, mut x) = ([0.0f32; ELEMS], [0.0f32; ELEMS]);
        stats::block_values(&op, ow, &d, b, &mut y);
        linalg::solve_column(&p, &r, ELEMS, &y, &mut x, &mut work);
        out.push(stats::block_variance(&x, &y, ELEMS));
    }
    assert_eq!(out.len(), f.out_op());
    out.extend_from_slice(&op);
    Host {
        plane,
        scaled,
        rows,
        out,
    }
}

/// Normalised random taps (the kernels do not depend on their values).
fn taps(n: usize, r: &mut Rng) -> Vec<f32> {
    let t: Vec<f32> = (0..n).map(|_| r.f32(0.1, 1.0)).collect();
    let s: f32 = t.iter().sum();
    t.iter().map(|v| v / s).collect()
}

/// Bitwise differences of `got` (all jobs) and the host's per-job values.
fn differ(got: &[f32], want: &[&[f32]]) -> usize {
    differ_where(got, want, |_| String::new()).0
}

/// [`differ`], and where the first difference of each job lies (`name(i)` names index i).
fn differ_where(
    got: &[f32],
    want: &[&[f32]],
    name: impl Fn(usize) -> String,
) -> (usize, Vec<String>) {
    let len = want[0].len();
    let mut first = Vec::new();
    let mut n = 0;
    for (j, w) in want.iter().enumerate() {
        for (i, (a, b)) in got[j * len..][..len].iter().zip(w.iter()).enumerate() {
            // Equal bits, or both NaN (the GPU's NaN payload is not the host's).
            if a.to_bits() != b.to_bits() && !(a.is_nan() && b.is_nan()) {
                if n == 0 || first.len() < 4 {
                    first.push(format!("job {j} {} gpu {a:e} host {b:e}", name(i)));
                }
                n += 1;
            }
        }
    }
    (n, first)
}

/// The four kernels on every case, two pairs each, as the engine launches them.
fn kernels(kn: &Kernels, s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    let mut bad = 0usize;
    let mut elements = 0;
    let mut notes = Vec::new();
    for c in CASES {
        let d = Dims::new(c.w as usize, c.h as usize, c.prescale, BLOCK).expect("a valid size");
        let aa_len = k::filter_len(1, c.kernelscale);
        let local_len = k::filter_len(SCALES, c.kernelscale);
        let pitch = (c.w - 1) * c.step + c.bytes + 7;
        let mut f = Frames {
            max: (1 << c.depth) - 1,
            method: c.method as u32,
            width: c.w,
            height: c.h,
            scaled_width: d.scaled_width as u32,
            scaled_height: d.scaled_height as u32,
            resampled: d.resampled as u32,
            op_width: d.op_width as u32,
            op_height: d.op_height as u32,
            block: d.block as u32,
            blocks_x: d.blocks_x as u32,
            blocks_y: d.blocks_y as u32,
            aa_len: aa_len as u32,
            local_len: local_len as u32,
            ..Frames::default()
        };
        let buf = |len: usize| s.alloc_zeros::<f32>((JOBS * len).max(1));
        let mut plane = buf(f.plane_len())?;
        let mut scaled = buf(f.scaled_len())?;
        let mut rows = buf(f.rows_len())?;
        let mut vertical = buf(f.op_len())?;
        let mut out = buf(f.out_len())?;
        for _ in 0..2 {
            let (aa, local) = (taps(aa_len, r), taps(local_len, r));
            let all: Vec<f32> = aa.iter().chain(&local).copied().collect();
            let taps_dev = s.clone_htod(&all)?;
            let mut data = Vec::new();
            let mut chans = [Channel::default(); JOBS];
            for (j, ch) in chans.iter_mut().enumerate() {
                let depth = if j % 2 == 0 { c.depth } else { c.dis_depth };
                let bytes = channel_data(c, depth, pitch, r);
                *ch = Channel {
                    ptr: 0,
                    pitch,
                    step: c.step,
                    sample_bytes: c.bytes,
                    shift: c.shift,
                    max: (1 << depth) - 1,
                    _pad: 0,
                };
                data.push(bytes);
            }
            let want: Vec<Host> = (0..JOBS)
                .map(|j| {
                    let hc = Channel {
                        ptr: data[j].as_ptr() as u64,
                        ..chans[j]
                    };
                    host(&f, &hc, &aa, &local)
                })
                .collect();
            let dev: Vec<CudaSlice<u8>> = data
                .iter()
                .map(|b| s.clone_htod(b))
                .collect::<Result<_, _>>()?;
            {
                let guards: Vec<_> = dev.iter().map(|b| DevPtr::of(b, s)).collect();
                for (j, (p, _)) in guards.iter().enumerate() {
                    f.channels[j] = Channel {
                        ptr: p.as_raw(),
                        ..chans[j]
                    };
                }
                let (tp, _g0) = DevPtr::of(&taps_dev, s);
                let (pp, _g1) = DevPtrMut::of(&mut plane, s);
                let (sp, _g2) = DevPtrMut::of(&mut scaled, s);
                let (rp, _g3) = DevPtrMut::of(&mut rows, s);
                let (vp, _g4) = DevPtrMut::of(&mut vertical, s);
                let (op, _g5) = DevPtrMut::of(&mut out, s);
                f.taps = tp.as_raw();
                f.plane = pp.as_raw();
                f.scaled = sp.as_raw();
                f.rows = rp.as_raw();
                f.vertical = vp.as_raw();
                f.out = op.as_raw();
                let grid = |w: u32, h: u32| LaunchConfig {
                    grid_dim: (w.div_ceil(TILE_X), h.div_ceil(TILE_Y), JOBS as u32),
                    block_dim: (TILE_X, TILE_Y, 1),
                    shared_mem_bytes: 0,
                };
                let stats_cfg = LaunchConfig {
                    grid_dim: (JOBS as u32, 1, 1),
                    block_dim: (STATS_THREADS, 1, 1),
                    shared_mem_bytes: 0,
                };
                unsafe {
                    kn.speed_load(s, grid(f.width, f.height), f)?;
                    if f.resampled != 0 {
                        kn.speed_resample(s, grid(f.scaled_width, f.scaled_height), f)?;
                    }
                    kn.speed_antialias(s, grid(f.scaled_width, f.op_height), f)?;
                    kn.speed_stats(s, stats_cfg, f)?;
                    let qr = LaunchConfig {
                        grid_dim: (JOBS as u32, 1, 1),
                        block_dim: (QR_THREADS, 1, 1),
                        shared_mem_bytes: 0,
                    };
                    kn.speed_qr(s, qr, f)?;
                    let solve = LaunchConfig {
                        grid_dim: ((f.blocks() as u32).div_ceil(SOLVE_THREADS), JOBS as u32, 1),
                        block_dim: (SOLVE_THREADS, 1, 1),
                        shared_mem_bytes: 0,
                    };
                    kn.speed_solve(s, solve, f)?;
                }
            }
            let got_plane = s.clone_dtoh(&plane)?;
            let got_scaled = s.clone_dtoh(&scaled)?;
            let got_rows = s.clone_dtoh(&rows)?;
            let got_out = s.clone_dtoh(&out)?;
            let planes: Vec<&[f32]> = want.iter().map(|h| &h.plane[..]).collect();
            let scaleds: Vec<&[f32]> = want.iter().map(|h| &h.scaled[..]).collect();
            let rowss: Vec<&[f32]> = want.iter().map(|h| &h.rows[..]).collect();
            let outs: Vec<&[f32]> = want.iter().map(|h| &h.out[..]).collect();
            let counts = [
                differ(&got_plane, &planes),
                if d.resampled {
                    differ(&got_scaled, &scaleds)
                } else {
                    0
                },
                differ(&got_rows, &rowss),
                {
                    let (n, first) = differ_where(&got_out[..], &outs, |i| {
                        let region = if i < f.out_p() {
                            "covariance"
                        } else if i < f.out_r() {
                            "p"
                        } else if i < f.out_s() {
                            "r"
                        } else if i < f.out_op() {
                            "variance"
                        } else {
                            "op"
                        };
                        format!("out[{i}] ({region})")
                    });
                    if n > 0 {
                        notes.push(first.join("; "));
                    }
                    n
                },
            ];
            let n = JOBS * (f.plane_len() + f.scaled_len() + f.rows_len() + f.out_len());
            elements += n;
            let wrong: usize = counts.iter().sum();
            bad += wrong;
            if wrong > 0 {
                notes.push(format!(
                    "{}x{} x{} {:?}: differing plane/scaled/rows/out values {counts:?}",
                    c.w, c.h, c.prescale, c.method
                ));
            }
        }
        notes.push(format!(
            "{}x{} x{} {:?} ks {}: {} blocks",
            c.w,
            c.h,
            c.prescale,
            c.method,
            c.kernelscale,
            d.blocks()
        ));
    }
    Ok(Outcome {
        elements,
        max_err: bad as f64,
        tolerance: 0.0,
        note: notes.join(", "),
    })
}
