//! Backends bring a frame pair to where the kernels run and let every requested metric
//! measure it; the metrics (`crate::metric`) own their formulas and per-plan state.

pub(crate) mod cpu;
pub(crate) mod cuda;

use crate::error::EngineError;
use crate::frame::Frame;
pub(crate) use crate::metric::temporal::Held;
use crate::plan::Plan;
use crate::scores::Scores;

/// Where an engine's kernels run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    Cuda,
    Cpu,
}

impl BackendKind {
    /// "cuda" or "cpu".
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Cuda => "cuda",
            BackendKind::Cpu => "cpu",
        }
    }
}

pub(crate) trait Backend: Send {
    fn kind(&self) -> BackendKind;

    /// Pairs the backend can have in flight: submitted, their fields not taken yet (1: it
    /// measures a pair before it takes the next).
    fn depth(&self) -> usize {
        1
    }

    /// Starts measuring one pair with every metric of the plan: validates the frames,
    /// brings host frames to where the kernels run and queues the metrics' work. At most
    /// [`Backend::depth`] pairs are in flight; the frames must stay valid until
    /// [`Backend::complete`] has taken this pair's fields.
    fn submit(
        &mut self,
        plan: &Plan,
        reference: &Frame,
        distorted: &Frame,
    ) -> Result<(), EngineError>;

    /// Finishes the oldest pair submitted, appending its fields in registry order: those
    /// of metrics without lag to `scores`, those of temporal metrics (of the pair
    /// [`Held::lag`] pairs back, `crate::metric::temporal`) to `late`.
    fn complete(
        &mut self,
        plan: &Plan,
        scores: &mut Scores,
        late: &mut Scores,
    ) -> Result<(), EngineError>;

    /// Pairs submitted and not completed (the scheduler's check that a failed submit
    /// dropped them, `crate::schedule`).
    fn in_flight(&self) -> usize;

    /// Drops the pairs in flight (a flush, or after an error), once the device no longer
    /// reads their frames.
    fn abandon(&mut self);

    /// The metrics' held pairs: their lag, the end of a sequence, a flush.
    fn lineup(&mut self) -> &mut dyn Held;

    /// As [`Held::lag`].
    fn lag(&self) -> usize;
}

/// Picks the backend for `config`; the note says why `auto` fell back to the CPU. With
/// `external`, the CUDA backend runs in that context instead of `device_id`'s primary one;
/// `in_flight` pairs may be in flight on it.
pub(crate) fn select(
    config: &crate::EngineConfig,
    plan: &Plan,
    configured: &[crate::metric::Configured],
    external: Option<crate::cuda::ExternalContext>,
    in_flight: usize,
) -> Result<(Box<dyn Backend>, Option<String>), EngineError> {
    use crate::BackendChoice;
    let metrics = config.metrics;
    let open_cuda = || match external {
        Some(ext) => cuda::CudaBackend::on_external(ext, plan, metrics, configured, in_flight),
        None => cuda::CudaBackend::new(config.device_id, plan, metrics, configured, in_flight),
    };
    let cpu = || Box::new(cpu::CpuBackend::new(plan, metrics, configured));
    match config.backend {
        BackendChoice::Cpu => Ok((cpu(), None)),
        BackendChoice::Cuda => Ok((Box::new(open_cuda()?), None)),
        BackendChoice::Auto => match open_cuda() {
            Ok(b) => Ok((Box::new(b), None)),
            Err(e) => Ok((cpu(), Some(e.to_string()))),
        },
    }
}
