//! gpumetrics engine: frame pairs in, scores out. No GStreamer here: the element adapts
//! caps and buffers to [`FrameLayout`] and [`Frame`], and publishes [`Scores`].

pub mod align;
mod backend;
mod color;
pub mod cuda;
pub mod devices;
mod engine;
mod error;
mod event;
pub mod events;
mod format;
mod frame;
mod input;
pub mod map;
pub mod metric;
mod metric_set;
mod plan;
mod registry;
mod schedule;
mod scores;
mod summary;

pub use backend::BackendChoice;
pub use metric::{butteraugli, psnr, ssim, ssimulacra2, vmaf};

pub use color::{
    ChromaSiting, ChromaUpsampling, Colorimetry, Matrix, Primaries, Range, Transfer,
    host_linear_rgb,
};
pub use engine::{Engine, EngineBuilder, EngineConfig, MAX_IN_FLIGHT};
pub use error::EngineError;
pub use format::{ChannelSpec, ColorFamily, FrameLayout, PixelFormat};
pub use frame::{DeviceFrame, Frame, HostFrame, MAX_PLANES, Plane, PlaneOffsets};
pub use metric::{Direction, Field, OptionKind, OptionSpec, OptionValue, Options};
pub use metric_set::MetricSet;
pub use plan::{Plan, PlanOptions};
pub use schedule::{BackendKind, Frames, Tag};
pub use scores::{PoolTerms, Scores};
pub use summary::{FieldSummary, Pooled, Pooler};
