//! SI/TI on the CPU: the kernel crate's row functions, parallel over row bands with rayon;
//! the band sums are added in band order (deterministic).

use rayon::prelude::*;

use super::{SI, TI};
use crate::format::FrameLayout;
use crate::frame::PlanePtrs;
use crate::metric::no_reference::{CpuSingle, Input};
use crate::metric::temporal::Restart;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::siti;

/// Rows per rayon task.
const BAND_ROWS: usize = 32;

/// One input's state: the gradient and motion maps (allocated once per plan) and the
/// previous frame's full-range luma.
pub(super) struct Siti {
    gradient: Vec<f32>,
    motion: Vec<f32>,
    previous: Vec<u16>,
    /// No previous frame yet: TI is 0.
    first: bool,
}

impl Siti {
    pub(super) fn new(layout: &FrameLayout) -> Siti {
        let (w, h) = (layout.width as usize, layout.height as usize);
        Siti {
            gradient: vec![0.0; (w - 2) * (h - 2)],
            motion: vec![0.0; w * h],
            previous: vec![0; w * h],
            first: true,
        }
    }
}

/// The population standard deviation of a map of `row`-value rows ([`siti::stddev`]): the
/// sum and the sum of squares of each band in parallel, the bands added in order.
fn deviation(map: &[f32], row: usize) -> f32 {
    let sums: Vec<(f64, f64)> = map
        .par_chunks(row * BAND_ROWS)
        // SAFETY: the chunk holds chunk.len() values.
        .map(|c| unsafe { siti::sums(c.as_ptr(), c.len()) })
        .collect();
    let (mut s, mut sq) = (0.0, 0.0);
    for (a, b) in sums {
        s += a;
        sq += b;
    }
    siti::stddev(s, sq, map.len() as u64)
}

impl CpuSingle for Siti {
    fn measure(&mut self, plan: &Plan, side: Input, frame: &PlanePtrs, out: &mut Scores) {
        let l = super::luma(plan, side, frame);
        let w = l.width as usize;
        let gw = w - 2;
        self.gradient
            .par_chunks_mut(gw * BAND_ROWS)
            .enumerate()
            .for_each(|(b, chunk)| {
                for (i, row) in chunk.chunks_mut(gw).enumerate() {
                    // SAFETY: the backend validated the frame against the plan's layout
                    // (every row readable); the row holds w − 2 values.
                    unsafe { siti::sobel_row(&l, (b * BAND_ROWS + i) as u32, row.as_mut_ptr()) };
                }
            });
        let first = self.first;
        self.motion
            .par_chunks_mut(w * BAND_ROWS)
            .zip(self.previous.par_chunks_mut(w * BAND_ROWS))
            .enumerate()
            .for_each(|(b, (motion, previous))| {
                for (i, (m, p)) in motion.chunks_mut(w).zip(previous.chunks_mut(w)).enumerate() {
                    let y = (b * BAND_ROWS + i) as u32;
                    // SAFETY: as above; both rows hold w values.
                    unsafe { siti::motion_row(&l, y, first, p.as_mut_ptr(), m.as_mut_ptr()) };
                }
            });
        self.first = false;
        out.push(side.field(SI), deviation(&self.gradient, gw) as f64);
        out.push(side.field(TI), deviation(&self.motion, w) as f64);
    }
}

impl Restart for Siti {
    fn restart(&mut self) {
        self.first = true;
    }
}
