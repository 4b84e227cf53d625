//! ColorVideoVDP on the CUDA backend, for now through the CPU path: each pair's planes are
//! copied to the host after the pair's uploads (in place of device frames: NVDEC's output)
//! and measured by [`CvvdpCpu`], so that a run on the GPU reports the same JOD as one on the
//! CPU. The GPU kernels of issue 47 are to replace this; until then cvvdp costs a host
//! copy and the CPU's time per pair.

use std::collections::VecDeque;

use cudarc::driver::CudaEvent;

use super::cpu::CvvdpCpu;
use crate::cuda::{Gpu, HostCopy, pair_to_host};
use crate::error::EngineError;
use crate::frame::PlanePtrs;
use crate::metric::{CpuMetric, CudaMetric};
use crate::plan::Plan;
use crate::scores::Scores;

pub(super) struct CvvdpHost {
    cpu: CvvdpCpu,
    /// Host copies of each side's planes (reference, distorted), reused pair after pair.
    host: [HostCopy; 2],
    /// Scores of the pairs queued and not read, oldest first.
    ready: VecDeque<Scores>,
}

impl CvvdpHost {
    pub(super) fn new(cpu: CvvdpCpu) -> CvvdpHost {
        CvvdpHost {
            cpu,
            host: Default::default(),
            ready: VecDeque::new(),
        }
    }
}

impl crate::metric::temporal::Sequenced for CvvdpHost {
    fn finish(&mut self, plan: &Plan, late: &mut [Scores]) {
        self.cpu.finish(plan, late);
    }

    fn reset(&mut self) {
        self.ready.clear();
        self.cpu.reset();
    }
}

impl CudaMetric for CvvdpHost {
    fn queue(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
        _uploaded: Option<&CudaEvent>,
    ) -> Result<(), EngineError> {
        let (hr, hd) = pair_to_host(gpu, plan, r, d, &mut self.host)
            .map_err(|e| EngineError::Cuda(format!("copying a pair to the host for cvvdp: {e}")))?;
        let mut scores = Scores::new();
        self.cpu.measure(plan, &hr, &hd, &mut scores);
        self.ready.push_back(scores);
        Ok(())
    }

    fn drop_queued(&mut self) {
        self.ready.clear();
    }

    fn read(&mut self, _plan: &Plan, scores: &mut Scores) -> Result<(), EngineError> {
        let s = self
            .ready
            .pop_front()
            .ok_or_else(|| EngineError::Unsupported("cvvdp: no pair queued to read".into()))?;
        scores.append(s);
        Ok(())
    }
}
