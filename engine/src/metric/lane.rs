//! A CUDA metric on a stream of its own (a lane forked from the engine's stream).
//!
//! Every metric of an engine used to queue its kernels on the engine's one stream, so the
//! metrics of a pair ran one after another even where a metric leaves most of the GPU idle:
//! SSIMULACRA2's recursive blurs keep 10–15 % of the SMs' warps busy for a quarter of its
//! time, and VMAF's coarse scales and ADM rows are grids of a few dozen blocks (ncu,
//! docs/BENCHMARKS.md). On lanes of their own the metrics of a pair overlap on the device.
//!
//! Ordering stays what it was: a metric's work for successive pairs is on its one lane, in
//! order (its buffers, its readback slots, a temporal metric's history); its lane starts each
//! pair after the work queued on the engine's stream, which waits for the pair's uploads
//! (host frames); the backend completes a pair only after every metric's results for it are
//! read, so no upload overwrites frames a lane still reads. Scratch arenas shared between
//! engines order their borrowers by events, whatever their streams.

use cudarc::driver::{CudaEvent, DriverError};

use super::CudaMetric;
use super::temporal::Sequenced;
use crate::cuda::Gpu;
use crate::error::EngineError;
use crate::frame::PlanePtrs;
use crate::plan::Plan;
use crate::scores::Scores;

/// A metric and the lane it runs on.
pub(crate) struct Laned {
    lane: Gpu,
    /// Recorded on the engine's stream before each pair's work, for the lane to wait for.
    ready: CudaEvent,
    inner: Box<dyn CudaMetric>,
}

impl Laned {
    /// A new lane, forked from `gpu`'s stream, for a metric that `make` builds on it (its
    /// buffers are allocated on the lane); `None` when `make` builds none.
    pub(crate) fn make(
        gpu: &Gpu,
        make: impl FnOnce(&Gpu) -> Result<Option<Box<dyn CudaMetric>>, DriverError>,
    ) -> Result<Option<Box<dyn CudaMetric>>, DriverError> {
        let lane = gpu.fork()?;
        let Some(inner) = make(&lane)? else {
            return Ok(None);
        };
        // Its buffers are ready before its first pair.
        lane.stream.synchronize()?;
        Ok(Some(Box::new(Laned {
            ready: gpu.ctx.new_event(None)?,
            lane,
            inner,
        })))
    }

    /// Makes the lane wait for the work queued so far on the engine's stream (the pair's
    /// uploads).
    fn follow(&self, gpu: &Gpu) -> Result<(), EngineError> {
        self.ready
            .record(&gpu.stream)
            .and_then(|()| self.lane.stream.wait(&self.ready))
            .map_err(|e| EngineError::Cuda(format!("ordering the metric's stream: {e}")))
    }
}

impl Sequenced for Laned {
    fn lag(&self) -> usize {
        self.inner.lag()
    }

    fn align(&mut self, lag: usize) {
        self.inner.align(lag);
    }

    fn finish(&mut self, plan: &Plan, late: &mut [Scores]) {
        self.inner.finish(plan, late);
    }

    fn reset(&mut self) {
        self.inner.reset();
    }
}

impl CudaMetric for Laned {
    fn queue(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
        uploaded: Option<&CudaEvent>,
    ) -> Result<(), EngineError> {
        self.follow(gpu)?;
        self.inner.queue(&self.lane, plan, r, d, uploaded)
    }

    fn drop_queued(&mut self) {
        self.inner.drop_queued();
    }

    fn measure(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
        scores: &mut Scores,
    ) -> Result<(), EngineError> {
        // A metric that queues nothing ahead queues its pair here: after the uploads.
        self.follow(gpu)?;
        self.inner.measure(&self.lane, plan, r, d, scores)
    }
}
