//! Backends bring a frame pair to where the kernels run and let every requested metric
//! measure it; the metrics (`crate::metric`) own their formulas and per-plan state. What
//! the scheduler asks of a backend is `crate::schedule::Backend`.

pub(crate) mod cpu;
pub(crate) mod cuda;

use crate::error::EngineError;
use crate::plan::Plan;
use crate::schedule::Backend;

/// Which backend a caller asks for (the element's `backend` property, the command's
/// `--backend`); the one an engine runs on is a [`crate::schedule::BackendKind`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BackendChoice {
    /// CUDA when a device is usable, else the CPU.
    #[default]
    Auto,
    Cuda,
    Cpu,
}

impl BackendChoice {
    /// Every choice, in the order callers list them.
    pub const ALL: [BackendChoice; 3] =
        [BackendChoice::Auto, BackendChoice::Cuda, BackendChoice::Cpu];

    /// "auto", "cuda" or "cpu" (the element's nicks, the command's values).
    pub fn name(self) -> &'static str {
        match self {
            BackendChoice::Auto => "auto",
            BackendChoice::Cuda => "cuda",
            BackendChoice::Cpu => "cpu",
        }
    }
}

impl std::str::FromStr for BackendChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        BackendChoice::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| format!("'{s}' is not a backend (auto, cuda or cpu)"))
    }
}

/// Picks the backend for `config`; the note says why `auto` fell back to the CPU. With
/// `external`, the CUDA backend runs in that context instead of `device_id`'s primary one;
/// `in_flight` pairs may be in flight on it.
pub(crate) fn select(
    choice: BackendChoice,
    device_id: u32,
    metrics: crate::metric_set::MetricSet,
    plan: &Plan,
    configured: &[crate::metric::Configured],
    external: Option<crate::cuda::ExternalContext>,
    in_flight: usize,
) -> Result<(Box<dyn Backend>, Option<String>), EngineError> {
    let open_cuda = || match external {
        Some(ext) => cuda::CudaBackend::on_external(ext, plan, metrics, configured, in_flight),
        None => cuda::CudaBackend::new(device_id, plan, metrics, configured, in_flight),
    };
    let cpu = || Box::new(cpu::CpuBackend::new(plan, metrics, configured));
    match choice {
        BackendChoice::Cpu => Ok((cpu(), None)),
        BackendChoice::Cuda => Ok((Box::new(open_cuda()?), None)),
        BackendChoice::Auto => match open_cuda() {
            Ok(b) => Ok((Box::new(b), None)),
            Err(e) => Ok((cpu(), Some(e.to_string()))),
        },
    }
}
