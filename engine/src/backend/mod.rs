//! Backends run the kernels on a frame pair and return raw sums; the metric host modules
//! turn those into scores, so both backends share every formula.

pub(crate) mod cpu;
pub(crate) mod cpu_ssim;
pub(crate) mod cpu_ssimulacra2;
pub(crate) mod cuda;
pub(crate) mod cuda_ssim;
pub(crate) mod cuda_ssimulacra2;

use crate::error::EngineError;
use crate::frame::Frame;
use crate::metrics::MetricSet;
use crate::plan::Plan;
use gpumetrics_kernels::psnr::MAX_CHANNELS;

/// Raw per-pair results, before any metric formula is applied.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Measurement {
    /// Sum of squared errors per channel (plan order).
    pub sse: [u64; MAX_CHANNELS],
    /// SSIM/MS-SSIM map sums per channel and scale (`crate::ssim::slot_index`).
    pub ssim: [f64; gpumetrics_kernels::ssim::RESULT_LEN],
    /// SSIMULACRA2 map sums per scale.
    pub ssimulacra2: Option<crate::ssimulacra2::Sums>,
}

pub(crate) trait Backend: Send {
    fn name(&self) -> &'static str;

    fn measure(
        &mut self,
        plan: &Plan,
        metrics: MetricSet,
        reference: &Frame,
        distorted: &Frame,
    ) -> Result<Measurement, EngineError>;
}

/// Picks the backend for `config`; the note says why `auto` fell back to the CPU. With
/// `external`, the CUDA backend runs in that context instead of `device_id`'s primary one.
pub(crate) fn select(
    config: &crate::EngineConfig,
    plan: &Plan,
    external: Option<crate::cuda::ExternalContext>,
) -> Result<(Box<dyn Backend>, Option<String>), EngineError> {
    use crate::BackendChoice;
    let open_cuda = || match external {
        Some(ext) => cuda::CudaBackend::on_external(ext, plan),
        None => cuda::CudaBackend::new(config.device_id, plan),
    };
    match config.backend {
        BackendChoice::Cpu => Ok((Box::new(cpu::CpuBackend), None)),
        BackendChoice::Cuda => Ok((Box::new(open_cuda()?), None)),
        BackendChoice::Auto => match open_cuda() {
            Ok(b) => Ok((Box::new(b), None)),
            Err(e) => Ok((Box::new(cpu::CpuBackend), Some(e.to_string()))),
        },
    }
}
