//! Blockiness on the CPU: the column profile in bands of columns (each walks all rows, in
//! the kernels' order: bands of rows, each summed in order, added in order), the row
//! profile one row per task (the same order over columns), in parallel with rayon; then
//! the period search.

use rayon::prelude::*;

use super::{BLOCKINESS, Settings, value};
use crate::format::FrameLayout;
use crate::frame::PlanePtrs;
use crate::metric::no_reference::{CpuSingle, Input};
use crate::metric::temporal::Restart;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::blockiness::{self, span};

/// Columns per rayon task of the column profile.
const BAND_COLS: usize = 64;

/// One input's state: both profiles, added up over the sequence.
pub(super) struct Blockiness {
    settings: Settings,
    cols: Vec<f32>,
    rows: Vec<f32>,
    /// A new sequence: the profiles start from 0.
    first: bool,
}

impl Blockiness {
    pub(super) fn new(layout: &FrameLayout, settings: Settings) -> Blockiness {
        Blockiness {
            settings,
            cols: vec![0.0; layout.width as usize],
            rows: vec![0.0; layout.height as usize],
            first: true,
        }
    }
}

impl CpuSingle for Blockiness {
    fn measure(&mut self, plan: &Plan, side: Input, frame: &PlanePtrs, out: &mut Scores) {
        let p = self.settings.params(plan, side, frame, self.first);
        let l = p.luma;
        if self.first {
            self.cols.fill(0.0);
            self.rows.fill(0.0);
            self.first = false;
        }
        self.cols
            .par_chunks_mut(BAND_COLS)
            .enumerate()
            .for_each(|(band, cols)| {
                let from = (band * BAND_COLS) as u32;
                let to = from + cols.len() as u32;
                let mut sums = [0f32; BAND_COLS];
                // SAFETY: the backend validated the frame against the plan's layout;
                // `cols` and `sums` hold at least to − from values.
                unsafe {
                    blockiness::add_col_bands(&l, from, to, cols.as_mut_ptr(), sums.as_mut_ptr())
                };
            });
        let (a, b) = span(l.height);
        if b > a {
            self.rows[a as usize..b as usize]
                .par_iter_mut()
                .enumerate()
                // SAFETY: as above; 3 ≤ y < h − 4.
                .for_each(|(i, v)| *v = unsafe { blockiness::row_sum(&l, a + i as u32, *v) });
        }
        // SAFETY: the profiles hold w and h values.
        let v = unsafe { blockiness::ratio(&p, self.cols.as_ptr(), self.rows.as_ptr()) };
        if let Some(v) = value(v) {
            out.push(side.field(BLOCKINESS), v);
        }
    }
}

impl Restart for Blockiness {
    fn restart(&mut self) {
        self.first = true;
    }
}
