//! Black on the CPU: the kernel crate's row count, parallel over row bands with rayon.

use rayon::prelude::*;

use super::BLACK;
use crate::frame::PlanePtrs;
use crate::metric::no_reference::{CpuSingle, Input};
use crate::metric::temporal::Restart;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::black;

/// Rows per rayon task.
const BAND_ROWS: u32 = 64;

/// One input's state: its threshold (no state across frames).
pub(super) struct Black {
    threshold: u32,
}

impl Black {
    pub(super) fn new(threshold: u32) -> Black {
        Black { threshold }
    }
}

impl CpuSingle for Black {
    fn measure(&mut self, plan: &Plan, side: Input, frame: &PlanePtrs, out: &mut Scores) {
        let l = super::luma(plan, side, frame, self.threshold);
        let count: u64 = (0..l.height.div_ceil(BAND_ROWS))
            .into_par_iter()
            .map(|b| {
                let rows = b * BAND_ROWS..((b + 1) * BAND_ROWS).min(l.height);
                // SAFETY: the backend validated the frame against the plan's layout (every
                // row of the luma plane is readable).
                rows.map(|y| unsafe { black::count_row(&l, y) } as u64)
                    .sum::<u64>()
            })
            .sum();
        out.push(side.field(BLACK), black::ratio(count, l.width, l.height));
    }
}

impl Restart for Black {
    fn restart(&mut self) {}
}
