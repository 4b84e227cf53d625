//! A stream beside a pair's stream, for work that can overlap the rest of the pair's (the
//! half level of Butteraugli, VMAF's ADM and motion): cudarc's `fork`, with the two events
//! that order it created once. cudarc's `CudaStream::join` records a new event at each call,
//! which on the hot path would be two event creations and destructions per pair.

use std::sync::Arc;

use cudarc::driver::{CudaEvent, CudaStream, DriverError};

pub(crate) struct Branch {
    /// The branch's stream.
    pub(crate) stream: Arc<CudaStream>,
    /// Recorded on the main stream where the branch's next work starts.
    start: CudaEvent,
    /// Recorded on the branch where the main stream's next work may read its results.
    end: CudaEvent,
}

impl Branch {
    /// A new stream forked from `main` (it waits for `main`'s work so far).
    pub(crate) fn new(main: &Arc<CudaStream>) -> Result<Branch, DriverError> {
        let ctx = main.context();
        Ok(Branch {
            stream: main.fork()?,
            start: ctx.new_event(None)?,
            end: ctx.new_event(None)?,
        })
    }

    /// The branch's work queued from now on waits for `main`'s work queued so far
    /// (`self.stream.join(main)`).
    pub(crate) fn start_after(&self, main: &CudaStream) -> Result<(), DriverError> {
        self.start.record(main)?;
        self.stream.wait(&self.start)
    }

    /// `main`'s work queued from now on waits for the branch's work queued so far
    /// (`main.join(&self.stream)`).
    pub(crate) fn join_into(&self, main: &CudaStream) -> Result<(), DriverError> {
        self.end.record(&self.stream)?;
        main.wait(&self.end)
    }
}
