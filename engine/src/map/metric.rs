//! The map of each pair as a metric of the backends' lineups: [`MapCpu`] from the host
//! frames, through [`super::frames::of_pair`]; the CUDA backend runs it on host copies of
//! the pair ([`crate::metric::on_host::OnHost`]), so that both backends give the same map.

use std::sync::Arc;

use super::frames::of_pair;
use super::kind::MapKind;
use crate::frame::PlanePtrs;
use crate::metric::CpuMetric;
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
