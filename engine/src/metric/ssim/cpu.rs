//! SSIM / MS-SSIM on the CPU: the kernel crate's per-pixel functions (moments, map values,
//! pooling) in the same tap order as the `ssim_scale` kernel, parallel over row bands.

use gpumetrics_kernels::channel::{Channel, ChannelPair};
use gpumetrics_kernels::psnr::PsnrPlanes;
use gpumetrics_kernels::ssim::float::{
    self as float, Decimation, FloatSsim, PLANES, SUMS as FLOAT_SUMS, down, map_values,
    store_decimated, store_row_sums,
};
use gpumetrics_kernels::ssim::{
    F32_SAMPLES, Moments, TAPS, WEIGHTS, constants, half, pooled, sample, ssim_cs, valid,
};
use rayon::prelude::*;

use super::{Job, SUMS, float_sums, slot_index};
use crate::frame::PlanePtrs;
use crate::metric::CpuMetric;
use crate::metric_set::MetricSet;
use crate::plan::Plan;
use crate::scores::Scores;

/// SSIM / MS-SSIM state of one plan on the CPU.
pub(super) struct Ssim {
    pub job: Job,
    pub set: MetricSet,
}

/// No pairs held back.
impl crate::metric::temporal::Sequenced for Ssim {}

impl CpuMetric for Ssim {
    fn measure(&mut self, plan: &Plan, r: &PlanePtrs, d: &PlanePtrs, scores: &mut Scores) {
        let planes = self.job.planes(plan, r, d);
        let mut sums = sums(&self.job, &planes);
        if self.job.float > 0 {
            float_scales(plan, &planes, self.job.float, &mut sums);
        }
        super::push_fields(plan, &self.job, self.set, &sums, scores);
    }
}

/// Map rows per rayon task.
const BAND_ROWS: u32 = 32;

/// Sums of the ssim and cs map values over the valid region of `p`.
fn map_sums(p: &ChannelPair) -> (f64, f64) {
    let (vw, vh) = (valid(p.width), valid(p.height));
    if vw == 0 || vh == 0 {
        return (0.0, 0.0);
    }
    let peak = p.reference.max;
    let (c1, c2) = constants(peak);
    let taps = TAPS as u32;
    (0..vh)
        .step_by(BAND_ROWS as usize)
        .collect::<Vec<_>>()
        .par_iter()
        .map(|&y0| {
            let y1 = (y0 + BAND_ROWS).min(vh);
            // Horizontal pass over the band's input rows y0 .. y1 + 10.
            let rows = (y1 - y0 + taps - 1) as usize;
            let mut hm = vec![Moments::default(); rows * vw as usize];
            let mut xs = vec![0f32; p.width as usize];
            let mut ys = vec![0f32; p.width as usize];
            for r in 0..rows {
                let y = y0 as u64 + r as u64;
                let a = (p.reference.ptr + y * p.reference.pitch as u64) as *const u8;
                let b = (p.distorted.ptr + y * p.distorted.pitch as u64) as *const u8;
                for x in 0..p.width {
                    // SAFETY: the channel pair describes readable memory of width×height.
                    unsafe {
                        xs[x as usize] = sample(a, x, &p.reference, peak);
                        ys[x as usize] = sample(b, x, &p.distorted, peak);
                    }
                }
                for x in 0..vw as usize {
                    let m = &mut hm[r * vw as usize + x];
                    for k in 0..TAPS {
                        m.add_sample(WEIGHTS[k], xs[x + k], ys[x + k]);
                    }
                }
            }
            let mut sums = (0.0, 0.0);
            for r in 0..(y1 - y0) as usize {
                for x in 0..vw as usize {
                    let mut m = Moments::default();
                    for k in 0..TAPS {
                        m.add_moments(WEIGHTS[k], &hm[(r + k) * vw as usize + x]);
                    }
                    let (s, cs) = ssim_cs(&m, c1, c2);
                    sums.0 += s;
                    sums.1 += cs;
                }
            }
            sums
        })
        .reduce(|| (0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1))
}

/// The 2×2-pooled next scale of one channel of `p`, as an f32 plane.
fn pool(c: &Channel, w: u32, h: u32, to_max: u32) -> Vec<f32> {
    let (nw, nh) = (half(w), half(h));
    let mut out = vec![0f32; nw as usize * nh as usize];
    out.par_chunks_mut(nw as usize)
        .enumerate()
        .for_each(|(j, row)| {
            for (i, v) in row.iter_mut().enumerate() {
                // SAFETY: the channel describes readable memory of w×h samples.
                *v = unsafe { pooled(c, w, h, i as u32, j as u32, to_max) };
            }
        });
    out
}

fn f32_channel(data: &[f32], width: u32, max: u32) -> Channel {
    Channel {
        ptr: data.as_ptr() as u64,
        pitch: width * 4,
        step: 4,
        sample_bytes: F32_SAMPLES,
        shift: 0,
        max,
        _pad: 0,
    }
}

/// Every sum the job asks for, laid out as the GPU's result slot.
fn sums(job: &Job, planes: &PsnrPlanes) -> [f64; SUMS] {
    let mut out = [0.0; SUMS];
    for (i, &levels) in job.levels.iter().enumerate() {
        if levels == 0 {
            continue;
        }
        let mut p = planes.pairs[i];
        let peak = p.reference.max;
        // Keeps the pooled planes that `p` points into alive.
        let mut owned: (Vec<f32>, Vec<f32>);
        for scale in 0..levels as usize {
            let (s, cs) = map_sums(&p);
            out[slot_index(i, scale, 0)] = s;
            out[slot_index(i, scale, 1)] = cs;
            if scale + 1 < levels as usize {
                let (w, h) = (p.width, p.height);
                let (r, d) = rayon::join(
                    || pool(&p.reference, w, h, peak),
                    || pool(&p.distorted, w, h, peak),
                );
                owned = (r, d);
                p = ChannelPair {
                    reference: f32_channel(&owned.0, half(w), peak),
                    distorted: f32_channel(&owned.1, half(w), peak),
                    width: half(w),
                    height: half(h),
                };
            }
        }
    }
    out
}

/// The sums of libvmaf's float SSIM of the luma of `planes` at each of `scales` scales
/// (`gpumetrics_kernels::ssim::float`), into `out` at [`float_sums`]: each scale's
/// horizontal pass into planes here, then its map values, rows in parallel; the next scale
/// decimated from it.
fn float_scales(plan: &Plan, planes: &PsnrPlanes, scales: u32, out: &mut [f64; SUMS]) {
    let first = Job::float_ssim(plan, planes, 0);
    let mut p = first;
    // Keeps the decimated planes that `p` points into alive.
    let mut owned: (Vec<f32>, Vec<f32>);
    for scale in 0..scales as usize {
        let sums = float_scale(&mut p);
        out[float_sums(scale)..float_sums(scale) + FLOAT_SUMS].copy_from_slice(&sums);
        if scale + 1 < scales as usize {
            let (w, h) = (p.pair.width, p.pair.height);
            let (dw, dh) = (down(w), down(h));
            let mut r = vec![0f32; dw as usize * dh as usize];
            let mut d = r.clone();
            let dec = Decimation {
                pair: p.pair,
                divisor: p.divisor,
                _pad: 0,
                down_reference: r.as_mut_ptr() as u64,
                down_distorted: d.as_mut_ptr() as u64,
            };
            // SAFETY: the source describes readable memory of w×h samples; each task writes
            // its own row of the next scale's planes.
            (0..dh).into_par_iter().for_each(|y| {
                for x in 0..dw {
                    unsafe { store_decimated(&dec, x, y) };
                }
            });
            owned = (r, d);
            p = FloatSsim {
                pair: ChannelPair {
                    reference: float::f32_channel(owned.0.as_ptr() as u64, dw),
                    distorted: float::f32_channel(owned.1.as_ptr() as u64, dw),
                    width: dw,
                    height: dh,
                },
                divisor: 1.0,
                _pad: 0,
                rows: 0,
            };
        }
    }
}

/// The sums (l, c, s, l·c·s) of one scale's map: its horizontal pass into planes here,
/// rows in parallel, then its map values, rows in parallel.
fn float_scale(p: &mut FloatSsim) -> [f64; FLOAT_SUMS] {
    let (w, h) = (p.pair.width, p.pair.height);
    let (vw, vh) = (valid(w), valid(h));
    let mut rows = vec![0f32; PLANES * p.plane_len()];
    p.rows = rows.as_mut_ptr() as u64;
    let p = &*p;
    // SAFETY: the pair describes readable memory of w×h samples (validated frames or the
    // decimated planes); `rows` holds the planes, each task writes its own row of them.
    (0..h).into_par_iter().for_each(|y| {
        for x in 0..vw {
            unsafe { store_row_sums(p, x, y) };
        }
    });
    // SAFETY: every row of the planes was written above.
    let per_row: Vec<[f64; FLOAT_SUMS]> = (0..vh)
        .into_par_iter()
        .map(|y| {
            let mut sums = [0.0; FLOAT_SUMS];
            for x in 0..vw {
                let v = unsafe { map_values(p, x, y) };
                for i in 0..FLOAT_SUMS {
                    sums[i] += v[i];
                }
            }
            sums
        })
        .collect();
    drop(rows);
    let mut total = [0.0; FLOAT_SUMS];
    for r in per_row {
        for i in 0..FLOAT_SUMS {
            total[i] += r[i];
        }
    }
    total
}
