//! SpEED chroma on the CPU: the kernel crate's functions over buffers allocated once per
//! plan, rows (and covariance entries, and blocks) in parallel with rayon. Every parallel
//! step writes disjoint outputs and reduces nothing, so results do not depend on the thread
//! count; the one reduction across blocks (the score) is a sequential f32 sum in block
//! order, as libvmaf's.

use rayon::prelude::*;

use super::solve::{ChromaScores, Solver};
use super::{Setup, SpeedOptions};
use crate::format::ChannelSpec;
use crate::frame::PlanePtrs;
use crate::plan::Plan;
use gpumetrics_kernels::channel::Channel;
use gpumetrics_kernels::speed::{self as k, Dims, ELEMS, Resample, stats};

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
    /// Patch means and the covariance entries ([`stats::pair`] order).
    means: Vec<f32>,
    pair_values: Vec<f32>,
    /// The host steps shared with the GPU backend (eigenvalues, QR, blocks, score).
    solver: Solver,
}

impl SpeedChroma {
    /// The state for `plan`'s frames: refuses what libvmaf refuses (see `super::check`) and
    /// inputs without chroma planes.
    pub(crate) fn new(plan: &Plan, opts: SpeedOptions) -> Result<Self, String> {
        let Setup {
            opts,
            dims,
            resample,
            channels,
            peaks,
            antialias,
            local,
        } = Setup::new(plan, opts)?;
        let op = dims.op_width * dims.op_height;
        let scaled = if dims.resampled {
            dims.scaled_width * dims.scaled_height
        } else {
            0
        };
        Ok(SpeedChroma {
            opts,
            dims,
            resample,
            channels,
            peaks,
            antialias,
            local,
            plane: vec![0.0; dims.width * dims.height],
            scaled: vec![0.0; scaled],
            rows: vec![0.0; dims.op_height * dims.scaled_width],
            op: vec![0.0; op],
            vertical: vec![0.0; op],
            means: vec![0.0; ELEMS],
            pair_values: vec![0.0; stats::PAIRS],
            solver: Solver::new(opts, dims),
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
            self.estimate(&r, 0);
            self.estimate(&d, 1);
            *out = self.solver.plane_score();
        }
        ChromaScores::new(planes, self.opts.max_val)
    }

    /// Runs one side of one plane through the steps into the solver's side `side`; returns
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
            .enumerate()
            .for_each(|(e, v)| {
                let (x, y) = stats::pair(e);
                *v = stats::patch_covariance(op, stride, &d, means, x, y)
            });
        // 6 and 7. The 25x25 problems and the blocks.
        self.solver.estimate(&self.op, &self.pair_values, side)
    }
}
