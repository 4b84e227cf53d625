//! CPU backend: the kernel crate's per-pixel code, parallel over row bands with rayon.

use super::{Backend, Measurement};
use crate::error::EngineError;
use crate::frame::{Frame, PlanePtrs};
use crate::metrics::MetricSet;
use crate::plan::Plan;
use gpumetrics_kernels::psnr::sse_rows;
use rayon::prelude::*;

/// Rows per rayon task: big enough to amortise scheduling, small enough to balance 4:2:0
/// chroma planes against luma.
const BAND_ROWS: u32 = 32;

#[derive(Debug, Default)]
pub(crate) struct CpuBackend;

fn host_planes(frame: &Frame, plan: &Plan, reference: bool) -> Result<PlanePtrs, EngineError> {
    let (layout, what) = if reference {
        (&plan.reference, "reference")
    } else {
        (&plan.distorted, "distorted")
    };
    match frame {
        Frame::Host(f) => f.validate(layout, what),
        Frame::Device(_) => Err(EngineError::Unsupported(format!(
            "the {what} frame is in CUDA memory, which the CPU backend cannot read; use \
             backend=cuda or put cudadownload before the pad"
        ))),
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn measure(
        &mut self,
        plan: &Plan,
        metrics: MetricSet,
        reference: &Frame,
        distorted: &Frame,
    ) -> Result<Measurement, EngineError> {
        let r = host_planes(reference, plan, true)?;
        let d = host_planes(distorted, plan, false)?;
        let mut out = Measurement::default();
        if metrics.contains(MetricSet::PSNR) {
            let planes = plan.psnr_planes(&r, &d);
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
                    // SAFETY: validate() checked every plane holds the rows and row bytes
                    // that the channel descriptions address.
                    (c, unsafe {
                        sse_rows(p, y0, (y0 + BAND_ROWS).min(p.height))
                    })
                })
                .collect();
            for (c, s) in sums {
                out.sse[c] += s;
            }
        }
        if metrics.contains(MetricSet::SSIMULACRA2) {
            out.ssimulacra2 = Some(super::cpu_ssimulacra2::measure(plan, &r, &d));
        }
        if let Some(job) = crate::ssim::Job::new(plan, metrics) {
            out.ssim = super::cpu_ssim::measure(&job, &plan.psnr_planes(&r, &d));
        }
        Ok(out)
    }
}
