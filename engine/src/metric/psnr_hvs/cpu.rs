//! PSNR-HVS on the CPU: the kernel crate's per-block functions, in the kernels' three
//! passes: every block's error terms (rows of blocks in parallel with rayon), the exact sum
//! before each block (in block order), then each block's part of libvmaf's
//! single-precision sum (rows in parallel again).

use rayon::prelude::*;

use crate::frame::PlanePtrs;
use crate::metric::CpuMetric;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::channel::MAX_CHANNELS;
use gpumetrics_kernels::psnr_hvs::{COEFFS, HvsPlane, WEIGHTS, block_contribution, block_terms};

/// The CPU state: the planes' intermediate values, kept from pair to pair so that a pair
/// allocates nothing once the first one has sized them.
#[derive(Default)]
pub(super) struct PsnrHvs {
    /// A plane's error terms, block after block (64 each).
    terms: Vec<f32>,
    /// Per block: the exact sum of its terms, then of every term before it.
    before: Vec<f64>,
}

/// No pairs held back.
impl crate::metric::temporal::Sequenced for PsnrHvs {}

impl CpuMetric for PsnrHvs {
    fn measure(&mut self, plan: &Plan, r: &PlanePtrs, d: &PlanePtrs, scores: &mut Scores) {
        let planes = super::planes(plan, r, d);
        let mut sums = [0.0; MAX_CHANNELS];
        for (c, p) in planes.planes.iter().enumerate().take(planes.count as usize) {
            sums[c] = self.plane_sum(p);
        }
        super::push_fields(plan, &planes, &sums, scores);
    }
}

impl PsnrHvs {
    /// libvmaf's single-precision sum of the plane's error terms, emulated.
    fn plane_sum(&mut self, p: &HvsPlane) -> f64 {
        let (across, blocks) = (p.blocks_x as usize, p.blocks as usize);
        if blocks == 0 {
            return 0.0;
        }
        let w = &WEIGHTS[p.table as usize];
        self.terms.resize(blocks * COEFFS, 0.0);
        self.before.resize(blocks, 0.0);
        self.terms
            .par_chunks_mut(across * COEFFS)
            .zip(self.before.par_chunks_mut(across))
            .enumerate()
            .for_each(|(row, (terms, sums))| {
                for (i, sum) in sums.iter_mut().enumerate() {
                    let out = &mut terms[i * COEFFS..][..COEFFS];
                    let mut s = 0.0f64;
                    // SAFETY: the backend validated the frames against the plan's layouts,
                    // and the plane lies within them (its sides rounded down); the block is
                    // one of the plane's.
                    unsafe {
                        block_terms(p, (row * across + i) as u32, w, |k, t| {
                            out[k] = t;
                            s += t as f64;
                        })
                    };
                    *sum = s;
                }
            });
        let mut exact = 0.0f64;
        for b in &mut self.before {
            let own = *b;
            *b = exact;
            exact += own;
        }
        let rows: Vec<f64> = self
            .terms
            .par_chunks(across * COEFFS)
            .zip(self.before.par_chunks(across))
            .map(|(terms, before)| {
                before
                    .iter()
                    .enumerate()
                    .map(|(i, &b)| block_contribution(b, |k| terms[i * COEFFS + k]))
                    .sum::<f64>()
            })
            .collect();
        // In row order, so that a pair always gives the same sum.
        rows.iter().sum()
    }
}
