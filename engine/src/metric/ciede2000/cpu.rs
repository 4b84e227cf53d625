//! CIEDE2000 on the CPU: the kernel crate's per-row sums, parallel over bands of luma rows
//! with rayon (fixed-point sums: the order of the additions does not matter).

use rayon::prelude::*;

use crate::frame::PlanePtrs;
use crate::metric::CpuMetric;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::ciede2000::rows;

/// Rows per rayon task (a 1080p frame is 68 tasks).
const BAND_ROWS: u32 = 16;

pub(super) struct Ciede2000;

/// No pairs held back.
impl crate::metric::temporal::Sequenced for Ciede2000 {}

impl CpuMetric for Ciede2000 {
    fn measure(&mut self, plan: &Plan, r: &PlanePtrs, d: &PlanePtrs, scores: &mut Scores) {
        let p = super::planes(plan, r, d);
        let sum: u64 = (0..p.y.height)
            .into_par_iter()
            .step_by(BAND_ROWS as usize)
            // SAFETY: the backend validated every plane against the plan's layouts, so the
            // rows and samples the channel descriptions address are readable.
            .map(|y0| unsafe { rows(&p, y0, (y0 + BAND_ROWS).min(p.y.height)) })
            .sum();
        super::push(plan, sum, scores);
    }
}
