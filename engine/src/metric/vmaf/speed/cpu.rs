//! SpEED chroma on the CPU: the kernel crate's functions over buffers allocated once per
//! plan, rows (and covariance entries, and blocks) in parallel with rayon. Every parallel
//! step writes disjoint outputs and reduces nothing, so results do not depend on the thread
//! count; the one reduction across blocks (the score) is a sequential f32 sum in block
//! order, as libvmaf's.

use rayon::prelude::*;

use super::{SpeedOptions, dims, filters};
use crate::format::{ChannelSpec, ColorFamily};
use crate::frame::PlanePtrs;
use crate::plan::Plan;
use gpumetrics_kernels::channel::Channel;
use gpumetrics_kernels::speed::{self as k, Dims, ELEMS, Resample, linalg, stats};

/// Per-block scratch: the block's values, the solution and the rotated right-hand side.
const BLOCK_SCRATCH: usize = 3 * ELEMS;

/// What one side (reference or distorted) of one plane leaves for the score.
#[derive(Clone, Debug, Default)]
struct Estimate {
    /// Per block: (entropy, variance).
    blocks: Vec<(f32, f32)>,
    /// Whether the patch covariance could be inverted (libvmaf scores 0 when only one
    /// side's could).
    ok: bool,
}

/// One pair's SpEED chroma scores, each capped at `speed_max_val`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ChromaScores {
    pub u: f64,
    pub v: f64,
    /// The mean of U and V (or the regular one's, when the other plane alone was singular).
    pub uv: f64,
}

/// SpEED chroma of one stream: options, sizes and every buffer, allocated by [`Self::new`].
pub(crate) struct SpeedChroma {
    opts: SpeedOptions,
    dims: Dims,
    resample: Resample,
    /// U and V: (reference, distorted) channel specs.
    channels: [(ChannelSpec, ChannelSpec); 2],
    /// Peaks of the reference and distorted formats (the distorted is rescaled to the
    /// reference's depth before conversion, as VMAF's luma is).
    peaks: (u32, u32),
    antialias: Vec<f32>,
    local: Vec<f32>,
    /// The plane as float (`width`×`height`), and resampled (`scaled_*`; empty if not).
    plane: Vec<f32>,
    scaled: Vec<f32>,
    /// The anti-alias filter's vertical pass at every 16th row (`op_height`×`scaled_width`).
    rows: Vec<f32>,
    /// The reduced plane, then less its local mean; the local filter's vertical pass.
    op: Vec<f32>,
    vertical: Vec<f32>,
    /// Patch means, the (x, y ≤ x) index pairs of the covariance and their values.
    means: Vec<f32>,
    pairs: Vec<(usize, usize)>,
    pair_values: Vec<f32>,
    covariance: Vec<f32>,
    eigen: Vec<f32>,
    /// The QR factors of the covariance.
    p: Vec<f32>,
    r: Vec<f32>,
    work: Vec<f32>,
    block_scratch: Vec<f32>,
    /// Reference and distorted results of the plane being scored.
    sides: [Estimate; 2],
}

impl SpeedChroma {
    /// The state for `plan`'s frames: refuses what libvmaf refuses (see `super::check`) and
    /// inputs without chroma planes.
    pub(crate) fn new(plan: &Plan, opts: SpeedOptions) -> Result<Self, String> {
        let (rf, df) = (plan.reference.format, plan.distorted.format);
        if rf.family() != ColorFamily::Yuv || df.family() != ColorFamily::Yuv {
            return Err(format!(
                "speed_chroma: needs YUV inputs with chroma planes, not {} and {}",
                rf.name(),
                df.name()
            ));
        }
        let find = |name: &str| {
            plan.channels
                .iter()
                .find(|(r, _)| r.name == name)
                .copied()
                .ok_or_else(|| format!("speed_chroma: {} has no {name} channel", rf.name()))
        };
        let channels = [find("u")?, find("v")?];
        let (w, h) = (plan.reference.width, plan.reference.height);
        let dims = dims(w, h, rf.subsampling(), &opts)?;
        let resample = opts
            .prescale_method
            .kernel()
            .ok_or("speed_chroma: unsupported speed_prescale_method")?;
        // The channels must hold the measured region (libvmaf's rounded-down chroma size).
        for (rc, _) in &channels {
            let (cw, ch) = plan.reference.channel_size(rc);
            if (cw as usize) < dims.width || (ch as usize) < dims.height {
                return Err("speed_chroma: chroma planes smaller than expected".into());
            }
        }
        let (antialias, local) = filters(opts.kernelscale);
        let op = dims.op_width * dims.op_height;
        let pairs: Vec<(usize, usize)> = (0..ELEMS)
            .flat_map(|x| (0..=x).map(move |y| (x, y)))
            .collect();
        let scaled = if dims.resampled {
            dims.scaled_width * dims.scaled_height
        } else {
            0
        };
        let estimate = || Estimate {
            blocks: vec![(0.0, 0.0); dims.blocks()],
            ok: false,
        };
        Ok(SpeedChroma {
            opts,
            dims,
            resample,
            channels,
            peaks: (rf.peak(), df.peak()),
            antialias,
            local,
            plane: vec![0.0; dims.width * dims.height],
            scaled: vec![0.0; scaled],
            rows: vec![0.0; dims.op_height * dims.scaled_width],
            op: vec![0.0; op],
            vertical: vec![0.0; op],
            means: vec![0.0; ELEMS],
            pair_values: vec![0.0; pairs.len()],
            pairs,
            covariance: vec![0.0; ELEMS * ELEMS],
            eigen: vec![0.0; ELEMS],
            p: vec![0.0; ELEMS * ELEMS],
            r: vec![0.0; ELEMS * ELEMS],
            work: vec![0.0; linalg::eigen_work(ELEMS).max(linalg::qr_work(ELEMS))],
            block_scratch: vec![0.0; dims.blocks() * BLOCK_SCRATCH],
            sides: [estimate(), estimate()],
        })
    }

    /// `speed_chroma_uv` of one pair (libvmaf's `Speed_chroma_feature_speed_chroma_uv_score`).
    ///
    /// `reference` and `distorted` must be the plan's frames as the backend validated them
    /// (every plane readable at the plan's layout), as for every CPU metric.
    pub(crate) fn score(&mut self, reference: &PlanePtrs, distorted: &PlanePtrs) -> f64 {
        self.scores(reference, distorted).uv
    }

    /// All three of libvmaf's outputs for one pair (`speed_chroma_u`, `_v`, `_uv`), for a
    /// feature report; [`Self::score`] is `uv`.
    pub(crate) fn scores(&mut self, reference: &PlanePtrs, distorted: &PlanePtrs) -> ChromaScores {
        let mut planes = [(0.0f32, false); 2];
        for (i, out) in planes.iter_mut().enumerate() {
            let (rc, dc) = self.channels[i];
            let r = reference.channel(&rc, self.peaks.0);
            let d = distorted.channel(&dc, self.peaks.1);
            self.sides[0].ok = self.estimate(&r, 0);
            self.sides[1].ok = self.estimate(&d, 1);
            *out = self.plane_score();
        }
        let max = self.opts.max_val;
        let cap = |v: f32| if (v as f64) < max { v as f64 } else { max };
        ChromaScores {
            u: cap(planes[0].0),
            v: cap(planes[1].0),
            uv: stats::chroma_uv(planes[0], planes[1], max),
        }
    }

    /// The plane's score from both sides' estimates, and whether neither side failed.
    fn plane_score(&self) -> (f32, bool) {
        let base = stats::base_entropy(ELEMS, self.opts.nn_floor as f32, self.opts.sigma_nn as f32);
        let [re, de] = &self.sides;
        let mut sum = 0.0f32;
        for (&r, &d) in re.blocks.iter().zip(&de.blocks) {
            sum += stats::block_term(r, d, base, self.opts.weight_var_mode);
        }
        let score = stats::plane_score(sum, self.dims.blocks(), re.ok, de.ok);
        (score, re.ok && de.ok)
    }

    /// Runs one side of one plane through the steps into `self.sides[side]`; returns
    /// whether its covariance could be inverted.
    fn estimate(&mut self, c: &Channel, side: usize) -> bool {
        let d = self.dims;
        let max = self.peaks.0;
        // 1. Samples as float around 0 (the measured region only).
        self.plane
            .par_chunks_mut(d.width)
            .enumerate()
            .for_each(|(y, row)| {
                for (x, v) in row.iter_mut().enumerate() {
                    // SAFETY: the backend validated the frame against the plan's layout,
                    // whose chroma planes hold at least width x height samples (`new`).
                    *v = unsafe { k::load(c, x as u32, y as u32, max) };
                }
            });
        // 2. Resampling.
        if d.resampled {
            let (plane, method) = (&self.plane, self.resample);
            self.scaled
                .par_chunks_mut(d.scaled_width)
                .enumerate()
                .for_each(|(y, row)| {
                    for (x, v) in row.iter_mut().enumerate() {
                        *v = k::resample(
                            method,
                            plane,
                            d.width,
                            (d.width, d.height),
                            (d.scaled_width, d.scaled_height),
                            x,
                            y,
                        );
                    }
                });
        }
        let src = if d.resampled {
            &self.scaled
        } else {
            &self.plane
        };
        // 3. Anti-alias filter, only where the 16x sampling reads it.
        let aa = &self.antialias;
        let step = 1usize << k::SCALES;
        self.rows
            .par_chunks_mut(d.scaled_width)
            .zip(self.op.par_chunks_mut(d.op_width))
            .enumerate()
            .for_each(|(oy, (row, out))| {
                for (x, v) in row.iter_mut().enumerate() {
                    *v = k::filter_vertical(aa, src, d.scaled_width, d.scaled_height, x, oy * step);
                }
                for (ox, v) in out.iter_mut().enumerate() {
                    *v = k::filter_horizontal(aa, row, d.scaled_width, ox * step);
                }
            });
        // 4. Less the local mean.
        let (local, op) = (&self.local, &self.op);
        self.vertical
            .par_chunks_mut(d.op_width)
            .enumerate()
            .for_each(|(y, row)| {
                for (x, v) in row.iter_mut().enumerate() {
                    *v = k::filter_vertical(local, op, d.op_width, d.op_height, x, y);
                }
            });
        let vertical = &self.vertical;
        self.op
            .par_chunks_mut(d.op_width)
            .zip(vertical.par_chunks(d.op_width))
            .for_each(|(row, vrow)| {
                for (x, v) in row.iter_mut().enumerate() {
                    *v -= k::filter_horizontal(local, vrow, d.op_width, x);
                }
            });
        // 5. Patch means and covariance.
        let (op, stride) = (&self.op, d.op_width);
        let span = d.patch_span();
        self.means.par_iter_mut().enumerate().for_each(|(i, m)| {
            *m = stats::patch_mean(op, stride, span, i / d.block, i % d.block);
        });
        let means = &self.means;
        self.pair_values
            .par_iter_mut()
            .zip(&self.pairs)
            .for_each(|(v, &(x, y))| *v = stats::patch_covariance(op, stride, &d, means, x, y));
        for (&(x, y), &v) in self.pairs.iter().zip(&self.pair_values) {
            self.covariance[x * ELEMS + y] = v;
            self.covariance[y * ELEMS + x] = v;
        }
        // 6. Eigenvalues and the factorisation (one small problem, on this thread).
        linalg::eigenvalues(&self.covariance, ELEMS, &mut self.eigen, &mut self.work);
        let regular = linalg::is_regular(&self.eigen);
        let ok = regular
            && linalg::qr(
                &self.covariance,
                ELEMS,
                &mut self.p,
                &mut self.r,
                &mut self.work,
            );
        // 7. Per block: variance and entropy.
        let (p, r, eigen) = (&self.p, &self.r, &self.eigen);
        let sigma_nn = self.opts.sigma_nn as f32;
        self.sides[side]
            .blocks
            .par_iter_mut()
            .zip(self.block_scratch.par_chunks_mut(BLOCK_SCRATCH))
            .enumerate()
            .for_each(|(b, (out, scratch))| {
                let (y, rest) = scratch.split_at_mut(ELEMS);
                let (x, work) = rest.split_at_mut(ELEMS);
                stats::block_values(op, stride, &d, b, y);
                if ok {
                    linalg::solve_column(p, r, ELEMS, y, x, work);
                } else {
                    x.fill(0.0);
                }
                let s = stats::block_variance(x, y, ELEMS);
                *out = (stats::block_entropy(eigen, s, sigma_nn), s);
            });
        ok
    }
}
