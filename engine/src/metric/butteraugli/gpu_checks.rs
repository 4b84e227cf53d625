//! The Butteraugli kernels (`ba_*`), as one pipeline through the engine.

use std::sync::Arc;

use cudarc::driver::{CudaStream, DriverError};
use gpumetrics_engine::cuda::Kernels;

use crate::common::Rng;
use crate::engine::{engine_pipeline, merge, out_of_range_pipeline};
use crate::{Check, Outcome};

/// The checks of this module and the kernels each covers.
pub(crate) const CHECKS: &[(&[&str], Check)] = &[(
    &[
        "linear_light",
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
    butteraugli_kernels_match_the_cpu_backend => "linear_light",
}

/// The Butteraugli kernels as the engine runs them, against the CPU backend (both fields,
/// relative error), on random frames and on I420 and P010 frames whose R'G'B' leaves [0, 1],
/// tagged PQ and HLG (clipped before the EOTF on both backends).
fn butteraugli_pipeline(
    _k: &Kernels,
    _s: &Arc<CudaStream>,
    r: &mut Rng,
) -> Result<Outcome, DriverError> {
    let metric = gpumetrics_engine::MetricSet::BUTTERAUGLI;
    let max = engine_pipeline(r, metric, "butteraugli", 1e-4, true);
    let norm = engine_pipeline(r, metric, "butteraugli-3norm", 1e-4, true);
    let mut out = merge(max, norm, "3-norm");
    for (label, field) in [
        ("out-of-range R'G'B'", "butteraugli"),
        ("out-of-range R'G'B', 3-norm", "butteraugli-3norm"),
    ] {
        out = merge(out, out_of_range_pipeline(metric, field, 1e-4, true), label);
    }
    Ok(out)
}
