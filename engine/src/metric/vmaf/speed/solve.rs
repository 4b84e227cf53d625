//! The part of SpEED chroma both backends run on the host: from one side's reduced,
//! mean-subtracted plane and its covariance entries, the 25×25 problems (eigenvalues, QR)
//! and per block the variance and entropy; then each plane's score and `speed_chroma_uv`.
//! The per-block loop runs in parallel with rayon and writes disjoint outputs; the one
//! reduction across blocks (the score) is a sequential f32 sum in block order, as libvmaf's.

use rayon::prelude::*;

use super::SpeedOptions;
use gpumetrics_kernels::speed::{Dims, ELEMS, linalg, stats};

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

impl ChromaScores {
    /// The scores from each plane's ([`Solver::plane_score`]).
    pub(super) fn new(planes: [(f32, bool); 2], max: f64) -> Self {
        let cap = |v: f32| if (v as f64) < max { v as f64 } else { max };
        ChromaScores {
            u: cap(planes[0].0),
            v: cap(planes[1].0),
            uv: stats::chroma_uv(planes[0], planes[1], max),
        }
    }
}

/// The host steps' buffers, allocated once per stream ([`Solver::new`]).
pub(super) struct Solver {
    opts: SpeedOptions,
    dims: Dims,
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

impl Solver {
    pub(super) fn new(opts: SpeedOptions, dims: Dims) -> Self {
        let estimate = || Estimate {
            blocks: vec![(0.0, 0.0); dims.blocks()],
            ok: false,
        };
        Solver {
            opts,
            dims,
            covariance: vec![0.0; ELEMS * ELEMS],
            eigen: vec![0.0; ELEMS],
            p: vec![0.0; ELEMS * ELEMS],
            r: vec![0.0; ELEMS * ELEMS],
            work: vec![0.0; linalg::eigen_work(ELEMS).max(linalg::qr_work(ELEMS))],
            block_scratch: vec![0.0; dims.blocks() * BLOCK_SCRATCH],
            sides: [estimate(), estimate()],
        }
    }

    /// Steps 6 and 7 of one side (0: the reference) of the plane being scored, from its
    /// reduced, mean-subtracted plane `op` (`op_width`×`op_height`) and its covariance
    /// entries in [`stats::pair`] order; returns whether the covariance could be inverted.
    pub(super) fn estimate(&mut self, op: &[f32], pairs: &[f32], side: usize) -> bool {
        let regular = self.eigen(pairs);
        let ok = regular
            && linalg::qr(
                &self.covariance,
                ELEMS,
                &mut self.p,
                &mut self.r,
                &mut self.work,
            );
        self.blocks(op, ok, side, |this, _, y, x, work| {
            linalg::solve_column(&this.p, &this.r, ELEMS, y, x, work);
            stats::block_variance(x, y, ELEMS)
        })
    }

    /// [`Self::estimate`] with the factorisation and the blocks' solves done elsewhere (the
    /// GPU's `speed_qr` and `speed_solve`, the same functions): `r` is [`linalg::qr`]'s
    /// upper triangle and `variances[b]` block b's variance estimate from the factors.
    pub(super) fn estimate_solved(
        &mut self,
        op: &[f32],
        pairs: &[f32],
        r: &[f32],
        variances: &[f32],
        side: usize,
    ) -> bool {
        let ok = self.eigen(pairs) && linalg::qr_regular(r, ELEMS);
        self.blocks(op, ok, side, |_, b, _, _, _| variances[b])
    }

    /// The covariance from its entries and its eigenvalues; whether they are regular.
    fn eigen(&mut self, pairs: &[f32]) -> bool {
        for (e, &v) in pairs.iter().enumerate().take(stats::PAIRS) {
            let (x, y) = stats::pair(e);
            self.covariance[x * ELEMS + y] = v;
            self.covariance[y * ELEMS + x] = v;
        }
        // 6. Eigenvalues (one small problem, on this thread).
        linalg::eigenvalues(&self.covariance, ELEMS, &mut self.eigen, &mut self.work);
        linalg::is_regular(&self.eigen)
    }

    /// Step 7, per block: the variance (from `solved(self, b, values, x, work)` when the
    /// covariance could be inverted, else from zeros) and the entropy, into side `side`;
    /// returns `ok`.
    fn blocks(
        &mut self,
        op: &[f32],
        ok: bool,
        side: usize,
        solved: impl Fn(&Self, usize, &[f32], &mut [f32], &mut [f32]) -> f32 + Sync,
    ) -> bool {
        let d = self.dims;
        let sigma_nn = self.opts.sigma_nn as f32;
        let stride = d.op_width;
        let mut blocks = std::mem::take(&mut self.sides[side].blocks);
        let mut scratch = std::mem::take(&mut self.block_scratch);
        let this = &*self;
        blocks
            .par_iter_mut()
            .zip(scratch.par_chunks_mut(BLOCK_SCRATCH))
            .enumerate()
            .for_each(|(b, (out, scratch))| {
                let (y, rest) = scratch.split_at_mut(ELEMS);
                let (x, work) = rest.split_at_mut(ELEMS);
                stats::block_values(op, stride, &d, b, y);
                let s = if ok {
                    solved(this, b, y, x, work)
                } else {
                    x.fill(0.0);
                    stats::block_variance(x, y, ELEMS)
                };
                *out = (stats::block_entropy(&this.eigen, s, sigma_nn), s);
            });
        self.sides[side] = Estimate { blocks, ok };
        self.block_scratch = scratch;
        ok
    }

    /// The plane's score from both sides' estimates, and whether neither side failed.
    pub(super) fn plane_score(&self) -> (f32, bool) {
        let base = stats::base_entropy(ELEMS, self.opts.nn_floor as f32, self.opts.sigma_nn as f32);
        let [re, de] = &self.sides;
        let mut sum = 0.0f32;
        for (&r, &d) in re.blocks.iter().zip(&de.blocks) {
            sum += stats::block_term(r, d, base, self.opts.weight_var_mode);
        }
        let score = stats::plane_score(sum, self.dims.blocks(), re.ok, de.ok);
        (score, re.ok && de.ok)
    }
}
