//! Distortion maps (issue 48): per pixel, where in the picture a metric finds its
//! differences. An engine built with [`crate::EngineBuilder::map`] adds the map of each
//! pair to its scores ([`crate::Scores::map`]): the squared-error and SSIM maps from the
//! pair's planes, on the host ([`metric`]) or by the GPU kernels of
//! `gpumetrics_kernels::map` ([`cuda`]; the same per-sample code); the maps a metric makes
//! (Butteraugli, ColorVideoVDP, SSIMULACRA2) by that metric, on either backend. Each map is
//! defined in docs/METRICS.md ("Distortion maps") and checked against its reference
//! (engine/tests/map_reference.rs, values made by tests/maps/generate.py):
//!
//! - [`squared_error`]: luma `(x − y)²` in the reference's sample units;
//! - [`ssim::map`]: the luma SSIM map whose mean over the pixels at least 5 from every edge
//!   is the `ssim` field, as scikit-image's `structural_similarity(..., full=True)` gives
//!   it (its Gaussian filters reflect at the edges, so the border has values too).
//!
//! [`Stats`] are what buffer meta and alerts carry: the maximum and where it is, and the
//! share of pixels past a threshold. Each pair's map comes as a [`PairMap`]: on the CUDA
//! backend it stays in device memory ([`device`]) with its statistics made there, and
//! reaches the host only when a reader asks for its values; [`render`] draws it as a frame.

pub(crate) mod cuda;
pub(crate) mod device;
mod frames;
pub mod kind;
pub(crate) mod metric;
mod pair;
pub mod render;
pub mod ssim;
pub(crate) mod stats;
mod values;

pub use kind::{DistortionMap, MapKind, SSIMULACRA2_THRESHOLD, Stats, squared_error};
pub use pair::PairMap;
pub use render::MapStyle;

/// The maps' tests' random numbers: xorshift32 from `seed` (not 0).
#[cfg(test)]
pub(crate) fn xorshift(mut seed: u32) -> impl FnMut() -> u32 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed
    }
}
