//! A metric's CPU state run behind the CUDA backend: each pair's planes are copied to the
//! host after its uploads (or from device frames, NVDEC's output) and measured there, so
//! that a run on the GPU reports what a run on the CPU does. For what has no GPU kernels
//! yet: ColorVideoVDP, the distortion maps. It costs a host copy and the CPU's time per
//! pair.

use std::collections::VecDeque;

use cudarc::driver::CudaEvent;

use crate::cuda::{Gpu, HostCopy, pair_to_host};
use crate::error::EngineError;
use crate::frame::PlanePtrs;
use crate::metric::{CpuMetric, CudaMetric};
use crate::plan::Plan;
use crate::scores::Scores;

pub(crate) struct OnHost {
    cpu: Box<dyn CpuMetric>,
    /// What it measures, for error messages (`cvvdp`, `ssim map`).
    what: &'static str,
    /// Keep only the pair's map of what `cpu` gives (a metric measured on the GPU too,
    /// whose map alone comes from here).
    map_only: bool,
    /// Whether the CPU state keeps nothing across pairs ([`CudaMetric::independent`]).
    independent: bool,
    /// Host copies of each side's planes (reference, distorted), reused pair after pair.
    host: [HostCopy; 2],
    /// What the pairs queued and not read gave, oldest first.
    ready: VecDeque<Scores>,
}

impl OnHost {
    pub(crate) fn new(cpu: Box<dyn CpuMetric>, what: &'static str, independent: bool) -> OnHost {
        OnHost {
            cpu,
            what,
            map_only: false,
            independent,
            host: Default::default(),
            ready: VecDeque::new(),
        }
    }

    /// The same, keeping only the map of each pair.
    pub(crate) fn map_only(mut self) -> OnHost {
        self.map_only = true;
        self
    }
}

impl crate::metric::temporal::Sequenced for OnHost {
    fn lag(&self) -> usize {
        self.cpu.lag()
    }

    fn align(&mut self, lag: usize) {
        self.cpu.align(lag);
    }

    fn finish(&mut self, plan: &Plan, late: &mut [Scores]) {
        self.cpu.finish(plan, late);
    }

    fn reset(&mut self) {
        self.ready.clear();
        self.cpu.reset();
    }

    fn window_start(&mut self) {
        self.cpu.window_start();
    }
}

impl CudaMetric for OnHost {
    fn queue(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
        _uploaded: Option<&CudaEvent>,
    ) -> Result<(), EngineError> {
        let (hr, hd) = pair_to_host(gpu, plan, r, d, &mut self.host).map_err(|e| {
            EngineError::Cuda(format!("copying a pair to the host for {}: {e}", self.what))
        })?;
        let mut scores = Scores::new();
        self.cpu.measure(plan, &hr, &hd, &mut scores);
        if self.map_only {
            let mut map = Scores::new();
            if let Some((kind, m)) = scores.shared_map() {
                map.set_map(kind, m);
            }
            scores = map;
        }
        self.ready.push_back(scores);
        Ok(())
    }

    fn drop_queued(&mut self) {
        self.ready.clear();
    }

    fn independent(&self) -> bool {
        self.independent
    }

    fn read(&mut self, _plan: &Plan, scores: &mut Scores) -> Result<(), EngineError> {
        let s = self.ready.pop_front().ok_or_else(|| {
            EngineError::Unsupported(format!("{}: no pair queued to read", self.what))
        })?;
        scores.append(s);
        Ok(())
    }
}
