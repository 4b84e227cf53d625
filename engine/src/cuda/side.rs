//! A side stream of a metric's stream: the part of a pair's work that reads what is queued
//! before a fork point and that nothing needs until a join point runs beside the rest
//! (Butteraugli's half level, VMAF's ADM and motion), so that small grids fill the device
//! together instead of one after another.

use std::sync::Arc;

use cudarc::driver::{CudaEvent, CudaStream, DriverError};

use super::Gpu;

/// A stream of its own and the events that fork it from, and join it back to, the metric's.
pub(crate) struct SideStream {
    stream: Arc<CudaStream>,
    split: CudaEvent,
    joined: CudaEvent,
}

impl SideStream {
    /// A side stream of `gpu`'s stream (starting after the work queued on it so far).
    pub(crate) fn new(gpu: &Gpu) -> Result<SideStream, DriverError> {
        Ok(SideStream {
            stream: gpu.stream.fork()?,
            split: gpu.ctx.new_event(None)?,
            joined: gpu.ctx.new_event(None)?,
        })
    }

    /// The side stream, for work queued after [`SideStream::fork`].
    pub(crate) fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Makes the side stream wait for the work queued so far on `main`.
    pub(crate) fn fork(&self, main: &CudaStream) -> Result<(), DriverError> {
        self.split.record(main)?;
        self.stream.wait(&self.split)
    }

    /// Makes `main` wait for the work queued so far on the side stream.
    pub(crate) fn join(&self, main: &CudaStream) -> Result<(), DriverError> {
        self.joined.record(&self.stream)?;
        main.wait(&self.joined)
    }
}
