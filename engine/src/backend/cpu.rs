//! CPU backend: the kernel crate's host build, parallel with rayon inside each metric.

use crate::error::EngineError;
use crate::frame::{Frame, PlanePtrs};
use crate::metric::temporal::Held;
use crate::metric::temporal::Lineup;
use crate::metric::{Configured, CpuMetric};
use crate::metric_set::MetricSet;
use crate::plan::Plan;
use crate::schedule::{Backend, BackendKind};
use crate::scores::Scores;

pub(crate) struct CpuBackend {
    metrics: Lineup<dyn CpuMetric>,
    /// The fields of the pair submitted and not completed: (now, late).
    done: Option<(Scores, Scores)>,
}

impl CpuBackend {
    pub(crate) fn new(plan: &Plan, set: MetricSet, configured: &[Configured]) -> CpuBackend {
        let mut metrics: Vec<Box<dyn CpuMetric>> = configured
            .iter()
            .filter_map(|c| (c.entry.cpu)(&c.setup(plan, set)))
            .collect();
        if let Some(kind) = plan.map.filter(|k| k.made_from_frames()) {
            metrics.push(Box::new(crate::map::metric::MapCpu::new(kind)));
        }
        CpuBackend {
            metrics: Lineup::new(metrics),
            done: None,
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
        Frame::Device(_) => Err(EngineError::DeviceFrameOnCpu { input: what }),
    }
}

impl Backend for CpuBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu
    }

    fn submit(
        &mut self,
        plan: &Plan,
        reference: &Frame,
        distorted: &Frame,
    ) -> Result<(), EngineError> {
        // One pair at a time (depth 1): measured here, its fields taken by `complete`.
        let r = host_planes(reference, plan, true)?;
        let d = host_planes(distorted, plan, false)?;
        let (mut now, mut late) = (Scores::new(), Scores::new());
        self.metrics.measure(&mut now, &mut late, |m, out| {
            m.measure(plan, &r, &d, out);
            Ok(())
        })?;
        self.done = Some((now, late));
        Ok(())
    }

    fn complete(
        &mut self,
        _plan: &Plan,
        scores: &mut Scores,
        late: &mut Scores,
    ) -> Result<(), EngineError> {
        let (now, held) = self
            .done
            .take()
            .ok_or_else(|| EngineError::Unsupported("no pair was submitted to complete".into()))?;
        scores.append(now);
        late.append(held);
        Ok(())
    }

    fn in_flight(&self) -> usize {
        self.done.is_some() as usize
    }

    fn abandon(&mut self) {
        self.done = None;
    }

    fn lineup(&mut self) -> &mut dyn Held {
        &mut self.metrics
    }

    fn lag(&self) -> usize {
        self.metrics.lag()
    }
}
