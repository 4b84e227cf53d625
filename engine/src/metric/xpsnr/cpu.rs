//! XPSNR on the CPU: the kernel crate's block sums, parallel over the blocks with rayon
//! (each block reads and writes its own samples of the history only), then its reduction
//! ([`xpsnr::finish`]), which is the GPU's order: both backends give the same values.

use rayon::prelude::*;

use crate::frame::PlanePtrs;
use crate::metric::CpuMetric;
use crate::metric::temporal::Sequenced;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::xpsnr::{self, Grid, History, Sums};

pub(super) struct Xpsnr {
    /// Whose activity weights the errors.
    activity: super::Activity,
    grid: Grid,
    /// The activity source's previous frames: two luma frames (`History`'s layout), none for a frame
    /// too small to weight.
    history: Vec<u16>,
    /// The buffer of `history` the next frame is written to.
    write: u32,
    /// Previous frames of the sequence in `history` (0 to 2).
    frames: u32,
    /// Per block its sums, then each plane's SSE (plane after plane) and the weights.
    sums: Vec<Sums>,
    sse: Vec<u64>,
    weights: Vec<f64>,
}

impl Xpsnr {
    pub(super) fn new(plan: &Plan, second_order: bool, activity: super::Activity) -> Xpsnr {
        let grid = super::grid(plan, second_order, activity);
        let n = grid.blocks() as usize;
        let history = if grid.weighted() {
            2 * grid.width as usize * grid.height as usize
        } else {
            0
        };
        Xpsnr {
            activity,
            grid,
            history: vec![0; history],
            write: 0,
            frames: 0,
            sums: vec![Sums::default(); n],
            sse: vec![0; 3 * n],
            weights: vec![0.0; n],
        }
    }

    /// A new sequence: no previous frames.
    fn restart(&mut self) {
        self.write = 0;
        self.frames = 0;
    }
}

/// No pair held back; the previous frames end with the sequence.
impl Sequenced for Xpsnr {
    fn finish(&mut self, _plan: &Plan, _late: &mut [Scores]) {
        self.restart();
    }

    fn reset(&mut self) {
        self.restart();
    }
}

impl CpuMetric for Xpsnr {
    fn measure(&mut self, plan: &Plan, r: &PlanePtrs, d: &PlanePtrs, scores: &mut Scores) {
        let g = self.grid;
        let p = super::planes(plan, r, d, self.activity);
        let h = History {
            ptr: self.history.as_mut_ptr() as u64,
            write: self.write,
            frames: self.frames,
        };
        self.sums.par_iter_mut().enumerate().for_each(|(k, s)| {
            let (i, j) = (k as u32 % g.cols, k as u32 / g.cols);
            // SAFETY: the backend validated both frames against the plan's layouts, whose
            // sizes the grid and the planes were made from; the history holds two frames of
            // the luma's size (for a weighted grid), and each block reads and writes only
            // its own samples of it.
            *s = unsafe { xpsnr::block_part(&g, &p, &h, i, j, 0, 1) };
        });
        let n = self.sums.len();
        for (k, s) in self.sums.iter().enumerate() {
            for c in 0..3 {
                self.sse[c * n + k] = s.sse[c];
            }
            self.weights[k] = if g.weighted() {
                let (i, j) = (k as u32 % g.cols, k as u32 / g.cols);
                xpsnr::weight(&g, &g.span(i, j), s.spatial, s.temporal)
            } else {
                1.0
            };
        }
        let distortion = xpsnr::finish(&g, &self.sse, &mut self.weights);
        super::push_fields(
            plan,
            self.activity,
            &distortion[..plan.channels.len()],
            scores,
        );
        if g.weighted() {
            self.write ^= 1;
            self.frames = (self.frames + 1).min(2);
        }
    }
}
