//! PSNR on the CPU: the kernel crate's per-row sums, parallel over row bands with rayon.

use rayon::prelude::*;

use crate::frame::PlanePtrs;
use crate::metric::CpuMetric;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::channel::MAX_CHANNELS;
use gpumetrics_kernels::psnr::sse_rows;

/// Rows per rayon task: big enough to amortise scheduling, small enough to balance 4:2:0
/// chroma planes against luma.
const BAND_ROWS: u32 = 32;

pub(super) struct Psnr {
    /// The entry's metrics to report.
    pub set: crate::metric_set::MetricSet,
}

/// No pairs held back.
impl crate::metric::temporal::Sequenced for Psnr {}

impl CpuMetric for Psnr {
    fn measure(&mut self, plan: &Plan, r: &PlanePtrs, d: &PlanePtrs, scores: &mut Scores) {
        let sums: Vec<[u64; MAX_CHANNELS]> = super::passes(plan, self.set)
            .into_iter()
            .map(|extent| sums(&super::planes(plan, extent, r, d)))
            .collect();
        let n = plan.channels.len();
        let sums: Vec<&[u64]> = sums.iter().map(|s| &s[..n]).collect();
        super::push_all(plan, self.set, &sums, scores);
    }
}

/// The sums of squared errors of each channel of `planes`.
fn sums(planes: &gpumetrics_kernels::psnr::PsnrPlanes) -> [u64; MAX_CHANNELS] {
    {
        let pairs = &planes.pairs[..planes.count as usize];
        let bands: Vec<(usize, u32)> = pairs
            .iter()
            .enumerate()
            .flat_map(|(c, p)| {
                (0..p.height)
                    .step_by(BAND_ROWS as usize)
                    .map(move |y| (c, y))
            })
            .collect();
        let sums: Vec<(usize, u64)> = bands
            .par_iter()
            .map(|&(c, y0)| {
                let p = &pairs[c];
                // SAFETY: the backend validated every plane against the plan's layouts, so
                // the rows and row bytes the channel descriptions address are readable.
                (c, unsafe {
                    sse_rows(p, y0, (y0 + BAND_ROWS).min(p.height))
                })
            })
            .collect();
        let mut sse = [0u64; MAX_CHANNELS];
        for (c, s) in sums {
            sse[c] += s;
        }
        sse
    }
}
