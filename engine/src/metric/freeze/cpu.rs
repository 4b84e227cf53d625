//! Freeze on the CPU: the kernel crate's row function, parallel over row bands of each
//! channel with rayon; the reference frame and the spare buffer swap when a frame is not
//! frozen.

use rayon::prelude::*;

use super::DIFF;
use crate::frame::PlanePtrs;
use crate::metric::no_reference::{CpuSingle, Input};
use crate::metric::temporal::Restart;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::freeze;

/// Rows per rayon task.
const BAND_ROWS: usize = 32;

/// One input's state: the reference frame and the spare buffer (the measured frame's
/// samples, allocated once per plan, `FreezeFrame::count` values each).
pub(super) struct Freeze {
    reference: Vec<u16>,
    spare: Vec<u16>,
    /// No reference frame yet: the next frame becomes it and has no value.
    first: bool,
    noise: f64,
    depth: u32,
}

impl Freeze {
    pub(super) fn new(plan: &Plan, side: Input, noise: f64) -> Freeze {
        let layout = side.layout(plan);
        let n = super::frame(plan, side, &PlanePtrs::default()).count() as usize;
        Freeze {
            reference: vec![0; n],
            spare: vec![0; n],
            first: true,
            noise,
            depth: layout.format.depth(),
        }
    }
}

impl CpuSingle for Freeze {
    fn measure(&mut self, plan: &Plan, side: Input, frame: &PlanePtrs, out: &mut Scores) {
        let f = super::frame(plan, side, frame);
        let first = self.first;
        let mut sad = 0u64;
        for c in 0..f.planes as usize {
            let (_, w, offset) = f.plane(c);
            let (w, h) = (w as usize, f.height[c] as usize);
            if w == 0 || h == 0 {
                continue;
            }
            let span = offset as usize..offset as usize + w * h;
            let reference = &self.reference[span.clone()];
            sad += self.spare[span]
                .par_chunks_mut(w * BAND_ROWS)
                .zip(reference.par_chunks(w * BAND_ROWS))
                .enumerate()
                .map(|(b, (spare, reference))| {
                    let rows = spare.chunks_mut(w).zip(reference.chunks(w)).enumerate();
                    rows.map(|(i, (s, r))| {
                        let y = (b * BAND_ROWS + i) as u32;
                        // SAFETY: the backend validated the frame against the plan's
                        // layout (every row readable); both rows hold w values.
                        unsafe { freeze::sad_row(&f, c, y, r.as_ptr(), s.as_mut_ptr(), first) }
                    })
                    .sum::<u64>()
                })
                .sum::<u64>();
        }
        let frozen = if first {
            false
        } else {
            let diff = freeze::mafd(sad, f.count(), self.depth);
            out.push(side.field(DIFF), diff);
            super::is_frozen(diff, self.noise)
        };
        if !frozen {
            std::mem::swap(&mut self.reference, &mut self.spare);
        }
        self.first = false;
    }
}

impl Restart for Freeze {
    fn restart(&mut self) {
        self.first = true;
    }
}
