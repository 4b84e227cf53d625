//! A CUDA metric on a stream of its own (a lane forked from the engine's stream).
//!
//! Every metric of an engine used to queue its kernels on the engine's one stream, so the
//! metrics of a pair ran one after another even where a metric leaves most of the GPU idle:
//! SSIMULACRA2's recursive blurs keep 10–15 % of the SMs' warps busy for over half of its
//! time, and VMAF's coarse scales and ADM rows are grids of a few dozen blocks (ncu,
//! docs/BENCHMARKS.md). On lanes of their own the metrics of a pair overlap on the device.
//!
//! Ordering stays what it was: a metric's work for successive pairs is on its one lane, in
//! order (its buffers, its readback slots, a temporal metric's history). When a pair's frames
//! are uploaded (host frames), the lane waits for the uploads' event as the pair is queued,
//! before anything of that pair (a metric that queues nothing then and its work in
//! `measure` comes later on the same lane, so after that wait too); frames already in
//! device memory need no wait, so a lane costs device frames no call per pair. The backend
//! completes a pair only after every metric's results for it are read, so no upload
//! overwrites frames a lane still reads. Scratch arenas shared between engines order their
//! borrowers by events, whatever their streams. (The no-reference metrics keep the lanes
//! they have per side, `super::single`, and are not wrapped.)

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
    inner: Box<dyn CudaMetric>,
}

impl Laned {
    /// A new lane, forked from `gpu`'s stream, for a metric that `make` builds on it (its
    /// buffers are allocated on the lane, and ready when this returns); `None` when `make`
    /// builds none.
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
        Ok(Some(Box::new(Laned { lane, inner })))
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
        _engine: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
        uploaded: Option<&CudaEvent>,
    ) -> Result<(), EngineError> {
        if let Some(event) = uploaded {
            self.lane
                .stream
                .wait(event)
                .map_err(|e| EngineError::Cuda(format!("ordering the metric's stream: {e}")))?;
        }
        self.inner.queue(&self.lane, plan, r, d, uploaded)
    }

    fn drop_queued(&mut self) {
        self.inner.drop_queued();
    }

    fn measure(
        &mut self,
        _engine: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
        scores: &mut Scores,
    ) -> Result<(), EngineError> {
        // The pair was queued first (the backend queues every pair it measures), so the lane
        // already waits for its uploads.
        self.inner.measure(&self.lane, plan, r, d, scores)
    }
}
