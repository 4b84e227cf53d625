//! CPU backend: the kernel crate's host build, parallel with rayon inside each metric.

use super::{Backend, BackendKind};
use crate::error::EngineError;
use crate::frame::{Frame, PlanePtrs};
use crate::metric::{CpuMetric, REGISTRY};
use crate::metrics::MetricSet;
use crate::plan::Plan;
use crate::scores::Scores;

pub(crate) struct CpuBackend {
    metrics: Vec<Box<dyn CpuMetric>>,
}

impl CpuBackend {
    pub(crate) fn new(plan: &Plan, set: MetricSet) -> CpuBackend {
        CpuBackend {
            metrics: REGISTRY.iter().filter_map(|e| (e.cpu)(plan, set)).collect(),
        }
    }
}

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
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu
    }

    fn measure(
        &mut self,
        plan: &Plan,
        reference: &Frame,
        distorted: &Frame,
        scores: &mut Scores,
        late: &mut Scores,
    ) -> Result<(), EngineError> {
        let r = host_planes(reference, plan, true)?;
        let d = host_planes(distorted, plan, false)?;
        for m in &mut self.metrics {
            let out = if m.lag() > 0 {
                &mut *late
            } else {
                &mut *scores
            };
            m.measure(plan, &r, &d, out);
        }
        Ok(())
    }

    fn lag(&self) -> usize {
        self.metrics.iter().map(|m| m.lag()).max().unwrap_or(0)
    }

    fn finish(&mut self, plan: &Plan, late: &mut Scores) {
        for m in &mut self.metrics {
            m.finish(plan, late);
        }
    }

    fn reset(&mut self) {
        for m in &mut self.metrics {
            m.reset();
        }
    }
}
