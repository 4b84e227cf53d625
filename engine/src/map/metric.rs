//! The map of each pair made from the frames as a metric of the CPU backend's lineup:
//! [`MapCpu`] from the host frames, through [`super::frames::of_pair`]. The CUDA backend
//! runs the same per-sample code in its kernels ([`super::cuda::MapCuda`]).

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
        scores.set_map(super::PairMap::on_host(self.kind, map));
    }
}
