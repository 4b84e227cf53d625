//! PSNR on the GPU: one `psnr_sse` launch per pair (all channels in one grid) and one
//! 24-byte copy back, queued with the pair (`CudaMetric::queue`) and read when the pair is
//! completed.

use cudarc::driver::{CudaEvent, DriverError, LaunchConfig};

use crate::cuda::{AddSlots, Gpu, Readback};
use crate::error::EngineError;
use crate::frame::PlanePtrs;
use crate::metric::CudaMetric;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::channel::MAX_CHANNELS;
use gpumetrics_kernels::psnr;

pub(super) struct Psnr {
    /// Where the launches add the pair's sums.
    sums: AddSlots<u64>,
    /// Where they come back to the host.
    host: Readback<u64>,
    /// Blocks along y: one per row of the tallest channel, at most 2048 (rows stride).
    grid_x: u32,
}

impl Psnr {
    pub(super) fn new(gpu: &Gpu, plan: &Plan) -> Result<Psnr, DriverError> {
        let rows = plan
            .channels
            .iter()
            .map(|(c, _)| plan.reference.channel_size(c).1)
            .max()
            .unwrap_or(1);
        Ok(Psnr {
            sums: AddSlots::new(&gpu.stream, MAX_CHANNELS)?,
            host: Readback::new(&gpu.ctx, MAX_CHANNELS)?,
            grid_x: rows.min(2048),
        })
    }
}

/// No pairs held back.
impl crate::metric::temporal::Sequenced for Psnr {}

impl Psnr {
    /// Queues the pair's launch and the copy of its sums.
    fn launch(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
    ) -> Result<(), EngineError> {
        let planes = plan.psnr_planes(r, d);
        let cfg = LaunchConfig {
            grid_dim: (self.grid_x, 1, planes.count),
            block_dim: (psnr::BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let (add_to, clear) = self.sums.targets();
        // SAFETY: the plane pointers were validated against the layouts (or uploaded into
        // buffers sized for them); both result slots hold MAX_CHANNELS values.
        let queued = unsafe {
            gpu.kernels
                .psnr_sse(&gpu.stream, cfg, planes, add_to, clear)
        };
        queued
            .and_then(|()| self.sums.copy_to(&mut self.host))
            .map_err(|e| {
                self.host.clear();
                self.sums.zero();
                EngineError::Cuda(format!("running psnr_sse: {e}"))
            })
    }
}

impl CudaMetric for Psnr {
    fn queue(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
        _uploaded: Option<&CudaEvent>,
    ) -> Result<(), EngineError> {
        self.launch(gpu, plan, r, d)
    }

    fn drop_queued(&mut self) {
        self.host.clear();
        self.sums.zero();
    }

    fn read(&mut self, plan: &Plan, scores: &mut Scores) -> Result<(), EngineError> {
        if self.host.queued() == 0 {
            return Err(EngineError::Unsupported(
                "psnr: no pair queued to read".into(),
            ));
        }
        let sse = match self.host.take(MAX_CHANNELS) {
            Ok(sse) => sse,
            Err(e) => {
                self.host.clear();
                self.sums.zero();
                return Err(EngineError::Cuda(format!("running psnr_sse: {e}")));
            }
        };
        super::push_fields(plan, &sse[..plan.channels.len()], scores);
        Ok(())
    }
}
