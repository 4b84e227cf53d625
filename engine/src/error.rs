//! Engine errors. Each says what is wrong, in terms of frames, formats, metrics and
//! options; what to do about it (a pipeline to change, a property or a flag to set) is the
//! caller's to say, in its own terms: the element's `advice` (GStreamer) and the command's
//! (its flags) match on the variant.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum EngineError {
    #[error(
        "reference is {ref_w}x{ref_h} but distorted is {dist_w}x{dist_h}: the metrics compare \
         frames of one size"
    )]
    SizeMismatch {
        ref_w: u32,
        ref_h: u32,
        dist_w: u32,
        dist_h: u32,
    },
    #[error("cannot compare {reference} (reference) with {distorted} (distorted): {why}")]
    IncompatibleFormats {
        reference: &'static str,
        distorted: &'static str,
        why: &'static str,
    },
    #[error("CUDA backend unavailable: {0}")]
    CudaUnavailable(String),
    #[error("CUDA error: {0}")]
    Cuda(String),
    /// Full-reference metrics requested without a reference input: names them, and the
    /// metrics that can run on one input.
    #[error(
        "{metrics} {verb} a reference input; without one only the no-reference metrics can \
         run: {available}",
        verb = if metrics.contains(", ") { "need" } else { "needs" }
    )]
    NeedsReference { metrics: String, available: String },
    /// A frame in CUDA memory given to the CPU backend, which cannot read it.
    #[error("the {input} frame is in CUDA memory, which the CPU backend cannot read")]
    DeviceFrameOnCpu { input: &'static str },
    /// An input's transfer function cannot be linearised for the linear-light metrics.
    #[error(
        "the {input} input's transfer function is not supported by the linear-light metrics \
         (supported: sRGB, BT.709/BT.601/SMPTE 240M/BT.2020 through BT.1886, gamma 1.8, 2.0, \
         2.2, 2.8, Adobe RGB, linear, PQ, HLG, log100, log316)"
    )]
    UnsupportedTransfer { input: String },
    #[error("invalid frame: {0}")]
    InvalidFrame(String),
    #[error("{0}")]
    Unsupported(String),
    /// A metric option's value is refused: names the option (the element property or
    /// command flag of that name) and what it accepts.
    #[error("{option}: {why}")]
    InvalidOption { option: &'static str, why: String },
}

impl EngineError {
    /// A stable name of the error's variant (`size-mismatch`, `cuda-unavailable`, ...), for
    /// front ends that say in their own terms what to do about it (the element's error
    /// details carry it; the `gpumetrics` command maps it to its flags).
    pub fn kind(&self) -> &'static str {
        match self {
            EngineError::SizeMismatch { .. } => "size-mismatch",
            EngineError::IncompatibleFormats { .. } => "incompatible-formats",
            EngineError::CudaUnavailable(_) => "cuda-unavailable",
            EngineError::Cuda(_) => "cuda",
            EngineError::NeedsReference { .. } => "needs-reference",
            EngineError::DeviceFrameOnCpu { .. } => "device-frame-on-cpu",
            EngineError::UnsupportedTransfer { .. } => "unsupported-transfer",
            EngineError::InvalidFrame(_) => "invalid-frame",
            EngineError::Unsupported(_) => "unsupported",
            EngineError::InvalidOption { .. } => "invalid-option",
        }
    }
}
