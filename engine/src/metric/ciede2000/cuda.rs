//! CIEDE2000 on the GPU: one `ciede2000_sums` launch per pair and one 8-byte copy back,
//! queued with the pair and read when the pair is completed. No state across pairs, so the
//! backend may run pairs side by side (`independent`).

use cudarc::driver::{CudaEvent, DriverError, LaunchConfig};

use crate::cuda::{AddSlots, Gpu, Readback};
use crate::error::EngineError;
use crate::frame::PlanePtrs;
use crate::metric::CudaMetric;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::ciede2000;

pub(super) struct Ciede2000 {
    /// Where the launch adds the pair's sum.
    sums: AddSlots<u64>,
    /// Where it comes back to the host.
    host: Readback<u64>,
    /// Blocks: one per luma row, at most 4096 (rows stride); every SM gets several.
    grid_x: u32,
}

impl Ciede2000 {
    pub(super) fn new(gpu: &Gpu, plan: &Plan) -> Result<Ciede2000, DriverError> {
        Ok(Ciede2000 {
            sums: AddSlots::new(&gpu.stream, 1)?,
            host: Readback::new(&gpu.ctx, 1)?,
            grid_x: plan.reference.height.min(4096),
        })
    }

    fn fail(&mut self, e: DriverError) -> EngineError {
        self.host.clear();
        self.sums.zero();
        EngineError::Cuda(format!("running ciede2000_sums: {e}"))
    }
}

/// No pairs held back.
impl crate::metric::temporal::Sequenced for Ciede2000 {}

impl CudaMetric for Ciede2000 {
    fn queue(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
        _uploaded: Option<&CudaEvent>,
    ) -> Result<(), EngineError> {
        let cfg = LaunchConfig {
            grid_dim: (self.grid_x, 1, 1),
            block_dim: (ciede2000::BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let (add_to, clear) = self.sums.targets();
        // SAFETY: the plane pointers were validated against the layouts (or uploaded into
        // buffers sized for them); both result slots hold one value.
        let queued = unsafe {
            gpu.kernels
                .ciede2000_sums(&gpu.stream, cfg, super::planes(plan, r, d), add_to, clear)
        };
        queued
            .and_then(|()| self.sums.copy_to(&mut self.host))
            .map_err(|e| self.fail(e))
    }

    fn drop_queued(&mut self) {
        self.host.clear();
        self.sums.zero();
    }

    fn independent(&self) -> bool {
        true
    }

    fn read(&mut self, plan: &Plan, scores: &mut Scores) -> Result<(), EngineError> {
        if self.host.queued() == 0 {
            return Err(EngineError::Unsupported(
                "ciede2000: no pair queued to read".into(),
            ));
        }
        match self.host.take(1) {
            Ok(sum) => {
                super::push(plan, sum[0], scores);
                Ok(())
            }
            Err(e) => Err(self.fail(e)),
        }
    }
}
