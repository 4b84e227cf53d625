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
    /// One per pass ([`super::passes`]): where its launch adds the pair's sums, and where
    /// they come back to the host.
    passes: Vec<(super::Extent, AddSlots<u64>, Readback<u64>)>,
    /// Blocks along y: one per row of the tallest channel, at most 2048 (rows stride).
    grid_x: u32,
    /// The entry's metrics to report.
    set: crate::metric_set::MetricSet,
}

impl Psnr {
    pub(super) fn new(
        gpu: &Gpu,
        plan: &Plan,
        set: crate::metric_set::MetricSet,
    ) -> Result<Psnr, DriverError> {
        let rows = plan
            .channels
            .iter()
            .map(|(c, _)| plan.reference.channel_size(c).1)
            .max()
            .unwrap_or(1);
        let passes = super::passes(plan, set)
            .into_iter()
            .map(|extent| {
                Ok((
                    extent,
                    AddSlots::new(&gpu.stream, MAX_CHANNELS)?,
                    Readback::new(&gpu.ctx, MAX_CHANNELS)?,
                ))
            })
            .collect::<Result<_, DriverError>>()?;
        Ok(Psnr {
            passes,
            grid_x: rows.min(2048),
            set,
        })
    }
}

/// No pairs held back.
impl crate::metric::temporal::Sequenced for Psnr {}

impl Psnr {
    /// Queues the pair's launches and the copies of their sums.
    fn launch(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
    ) -> Result<(), EngineError> {
        for (extent, sums, host) in &mut self.passes {
            let planes = super::planes(plan, *extent, r, d);
            let cfg = LaunchConfig {
                grid_dim: (self.grid_x, 1, planes.count),
                block_dim: (psnr::BLOCK, 1, 1),
                shared_mem_bytes: 0,
            };
            let (add_to, clear) = sums.targets();
            // SAFETY: the plane pointers were validated against the layouts (or uploaded
            // into buffers sized for them), and a pass reads at most the whole planes; both
            // result slots hold MAX_CHANNELS values.
            let queued = unsafe {
                gpu.kernels
                    .psnr_sse(&gpu.stream, cfg, planes, add_to, clear)
            };
            queued
                .and_then(|()| sums.copy_to(host))
                .map_err(|e| EngineError::Cuda(format!("running psnr_sse: {e}")))?;
        }
        Ok(())
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
            .inspect_err(|_| self.drop_queued())
    }

    fn drop_queued(&mut self) {
        for (_, sums, host) in &mut self.passes {
            host.clear();
            sums.zero();
        }
    }

    fn read(&mut self, plan: &Plan, scores: &mut Scores) -> Result<(), EngineError> {
        if self.passes.iter().any(|(_, _, host)| host.queued() == 0) {
            return Err(EngineError::Unsupported(
                "psnr: no pair queued to read".into(),
            ));
        }
        let mut sse = Vec::with_capacity(self.passes.len());
        for i in 0..self.passes.len() {
            match self.passes[i].2.take(MAX_CHANNELS) {
                Ok(s) => sse.push(s.to_vec()),
                Err(e) => {
                    self.drop_queued();
                    return Err(EngineError::Cuda(format!("running psnr_sse: {e}")));
                }
            }
        }
        let n = plan.channels.len();
        let sse: Vec<&[u64]> = sse.iter().map(|s| &s[..n]).collect();
        super::push_all(plan, self.set, &sse, scores);
        Ok(())
    }
}
