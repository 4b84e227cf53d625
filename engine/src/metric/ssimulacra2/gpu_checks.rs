//! The SSIMULACRA2 kernels (`ssimu2_*`), as one pipeline through the engine.

use std::sync::Arc;

use cudarc::driver::{CudaStream, DriverError};
use gpumetrics_engine::cuda::Kernels;

use crate::common::Rng;
use crate::engine::{engine_pipeline, merge, out_of_range_pipeline, together_equals_alone};
use crate::{Check, Outcome};

/// The checks of this module and the kernels each covers.
pub(crate) const CHECKS: &[(&[&str], Check)] = &[
    (
        &[
            "ssimu2_linearize",
            "ssimu2_downsample",
            "ssimu2_hblur",
            "ssimu2_vblur",
            "ssimu2_finish",
        ],
        ssimulacra2_pipeline,
    ),
    (&["ssimu2_xyb_of_linear"], shared_linear_light),
];

crate::gpu_tests! {
    ssimulacra2_kernels_match_the_cpu_backend => "ssimu2_linearize",
    linear_light_shared_with_butteraugli_changes_no_score => "ssimu2_xyb_of_linear",
}

/// SSIMULACRA2 and Butteraugli in one engine read the linear light the backend converts
/// once per pair (`ssimu2_xyb_of_linear`, and Butteraugli's full level from the shared
/// planes): each field equal bit for bit to the same metric's alone, over several pairs
/// with two in flight (the stage's slots in turn), and against the CPU backend.
fn shared_linear_light(
    _k: &Kernels,
    _s: &Arc<CudaStream>,
    r: &mut Rng,
) -> Result<Outcome, DriverError> {
    use gpumetrics_engine::MetricSet;
    let both = MetricSet::SSIMULACRA2 | MetricSet::BUTTERAUGLI;
    let fields = [
        (MetricSet::SSIMULACRA2, "ssimulacra2"),
        (MetricSet::BUTTERAUGLI, "butteraugli"),
        (MetricSet::BUTTERAUGLI, "butteraugli-3norm"),
    ];
    Ok(merge(
        together_equals_alone(r, both, &fields),
        engine_pipeline(r, both, "ssimulacra2", 0.01, false),
        "against the CPU backend",
    ))
}

/// The SSIMULACRA2 kernels run as one pipeline (each needs the previous one's output):
/// the CUDA backend's score against the CPU backend's (the host build of the same per-pixel
/// code) on random RGB and I420 frames of odd size (five scales), and on I420 and P010
/// frames whose R'G'B' leaves [0, 1], tagged PQ and HLG (clipped before the EOTF on both).
/// Checked once per kernel name; every run exercises all five kernels.
fn ssimulacra2_pipeline(
    _k: &Kernels,
    _s: &Arc<CudaStream>,
    r: &mut Rng,
) -> Result<Outcome, DriverError> {
    let metric = gpumetrics_engine::MetricSet::SSIMULACRA2;
    Ok(merge(
        engine_pipeline(r, metric, "ssimulacra2", 0.01, false),
        out_of_range_pipeline(metric, "ssimulacra2", 0.01, false),
        "out-of-range R'G'B'",
    ))
}
