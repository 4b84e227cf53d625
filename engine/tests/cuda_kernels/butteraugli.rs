//! The Butteraugli kernels (`ba_*`), as one pipeline through the engine.

use std::sync::Arc;

use cudarc::driver::{CudaStream, DriverError};
use gpumetrics_engine::cuda::Kernels;

use crate::common::Rng;
use crate::engine::engine_pipeline;
use crate::{Check, Outcome};

/// The checks of this module and the kernels each covers.
pub(crate) const CHECKS: &[(&[&str], Check)] = &[(
    &[
        "ba_linearize",
        "ba_downsample",
        "ba_blur5_row",
        "ba_opsin",
        "ba_gauss_row",
        "ba_lf_col",
        "ba_mf_col",
        "ba_uhf_col",
        "ba_mask_col",
        "ba_malta_inputs",
        "ba_ac_error",
        "ba_diffmap",
        "ba_reduce",
    ],
    butteraugli_pipeline,
)];

crate::gpu_tests! {
    butteraugli_kernels_match_the_cpu_backend => "ba_linearize",
}

/// The Butteraugli kernels as the engine runs them, against the CPU backend (both fields,
/// relative error).
fn butteraugli_pipeline(
    _k: &Kernels,
    _s: &Arc<CudaStream>,
    r: &mut Rng,
) -> Result<Outcome, DriverError> {
    let mut out = engine_pipeline(
        r,
        gpumetrics_engine::MetricSet::BUTTERAUGLI,
        "butteraugli",
        1e-4,
        true,
    );
    let norm = engine_pipeline(
        r,
        gpumetrics_engine::MetricSet::BUTTERAUGLI,
        "butteraugli-3norm",
        1e-4,
        true,
    );
    out.max_err = out.max_err.max(norm.max_err);
    out.note = format!("{}; 3-norm: {}", out.note, norm.note);
    Ok(out)
}
