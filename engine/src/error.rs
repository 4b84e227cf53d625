//! Engine errors. Each message names the problem and how to fix it, because the element
//! forwards it to the user verbatim.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum EngineError {
    #[error(
        "reference is {ref_w}x{ref_h} but distorted is {dist_w}x{dist_h}; scale one input to the \
         other's size first (e.g. insert `videoscale ! video/x-raw,width={ref_w},height={ref_h}` \
         before dist_sink)"
    )]
    SizeMismatch {
        ref_w: u32,
        ref_h: u32,
        dist_w: u32,
        dist_h: u32,
    },
    #[error(
        "cannot compare {reference} (reference) with {distorted} (distorted): {why}; convert one \
         input first (e.g. insert `videoconvert ! video/x-raw,format={reference}` before dist_sink)"
    )]
    IncompatibleFormats {
        reference: &'static str,
        distorted: &'static str,
        why: &'static str,
    },
    #[error("CUDA backend unavailable: {0}; use backend=cpu (or backend=auto to fall back)")]
    CudaUnavailable(String),
    #[error("CUDA error: {0}; check the driver and device-id, or use backend=cpu")]
    Cuda(String),
    /// Full-reference metrics requested without a reference input: names them, and the
    /// metrics that can run on one input.
    #[error(
        "{metrics} {verb} a reference input (link ref_sink, or give the command a reference \
         file); without one only the no-reference metrics can run: {available}",
        verb = if metrics.contains(", ") { "need" } else { "needs" }
    )]
    NeedsReference { metrics: String, available: String },
    #[error("invalid frame: {0}")]
    InvalidFrame(String),
    #[error("{0}")]
    Unsupported(String),
    /// A metric option's value is refused: names the option (the element property or
    /// command flag of that name) and what it accepts.
    #[error("{option}: {why}")]
    InvalidOption { option: &'static str, why: String },
}
