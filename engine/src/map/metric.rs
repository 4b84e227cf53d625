//! The map of each pair as a metric of the backends' lineups: on the CPU from the host
//! frames ([`MapCpu`]), on the CUDA backend from host copies of the pair ([`MapCuda`]), both
//! through [`super::of_pair`], so that both backends give the same map.

use std::collections::VecDeque;
use std::sync::Arc;

use cudarc::driver::CudaEvent;

use super::frames::of_pair;
use super::kind::{DistortionMap, MapKind};
use crate::cuda::{Gpu, HostCopy, pair_to_host};
use crate::error::EngineError;
use crate::frame::PlanePtrs;
use crate::metric::{CpuMetric, CudaMetric};
use crate::plan::Plan;
use crate::scores::Scores;

pub(crate) struct MapCpu {
    kind: MapKind,
}

impl MapCpu {
    pub(crate) fn new(kind: MapKind) -> MapCpu {
        MapCpu { kind }
    }
}

/// No pairs held back, no state across pairs.
impl crate::metric::temporal::Sequenced for MapCpu {}

impl CpuMetric for MapCpu {
    fn measure(&mut self, plan: &Plan, r: &PlanePtrs, d: &PlanePtrs, scores: &mut Scores) {
        // SAFETY: the backend validated both frames against the plan's layouts.
        let map = unsafe { of_pair(self.kind, plan, r, d) };
        scores.set_map(self.kind, Arc::new(map));
    }
}

pub(crate) struct MapCuda {
    kind: MapKind,
    host: [HostCopy; 2],
    /// For a map its metric makes ([`MapKind::made_from_frames`] false): that metric's CPU
    /// state, run on the host copies for its map.
    on_host: Option<Box<dyn CpuMetric>>,
    ready: VecDeque<Arc<DistortionMap>>,
}

impl MapCuda {
    /// A map made from the frames.
    pub(crate) fn new(kind: MapKind) -> MapCuda {
        MapCuda {
            kind,
            host: Default::default(),
            on_host: None,
            ready: VecDeque::new(),
        }
    }

    /// A map its metric makes, by `metric`'s CPU state (built for a plan with this map).
    pub(crate) fn on_host(kind: MapKind, metric: Box<dyn CpuMetric>) -> MapCuda {
        MapCuda {
            on_host: Some(metric),
            ..MapCuda::new(kind)
        }
    }
}

impl crate::metric::temporal::Sequenced for MapCuda {
    fn reset(&mut self) {
        self.ready.clear();
    }
}

impl CudaMetric for MapCuda {
    fn queue(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
        _uploaded: Option<&CudaEvent>,
    ) -> Result<(), EngineError> {
        let (hr, hd) = pair_to_host(gpu, plan, r, d, &mut self.host).map_err(|e| {
            EngineError::Cuda(format!(
                "copying a pair to the host for its {} map: {e}",
                self.kind.name()
            ))
        })?;
        let map = match &mut self.on_host {
            Some(metric) => {
                let mut scores = Scores::new();
                metric.measure(plan, &hr, &hd, &mut scores);
                scores.shared_map().map(|(_, m)| m).ok_or_else(|| {
                    EngineError::Unsupported(format!("the {} metric made no map", self.kind.name()))
                })?
            }
            // SAFETY: the host copies hold the planes of frames validated for the layouts.
            None => Arc::new(unsafe { of_pair(self.kind, plan, &hr, &hd) }),
        };
        self.ready.push_back(map);
        Ok(())
    }

    fn drop_queued(&mut self) {
        self.ready.clear();
    }

    fn independent(&self) -> bool {
        true
    }

    fn read(&mut self, _plan: &Plan, scores: &mut Scores) -> Result<(), EngineError> {
        let map = self.ready.pop_front().ok_or_else(|| {
            EngineError::Unsupported(format!("{} map: no pair queued to read", self.kind.name()))
        })?;
        scores.set_map(self.kind, map);
        Ok(())
    }
}
