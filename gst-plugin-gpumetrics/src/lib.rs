// SPDX-License-Identifier: MPL-2.0
#![allow(clippy::non_send_fields_in_send_ty, unused_doc_comments)]

//! GStreamer plugin `gpumetrics`: the `gpumetrics` element compares a distorted video stream
//! (`dist_sink`) against a reference stream (`ref_sink`) frame by frame and reports quality
//! metrics, full-reference ones per pair and no-reference checks on each input (these also
//! on `dist_sink` alone), as bus messages, buffer meta and a stats file. The metrics are
//! the engine's registry: the element's `metrics` property lists them, docs/METRICS.md
//! defines each.
//!
//! Besides the element, this crate offers typed Rust access to what the element produces:
//! [`message::FrameScores`] (per-pair `gpumetrics` messages and the custom meta),
//! [`message::Summary`] (the `gpumetrics-summary` message), [`meta`] (reading the
//! `GstGpuMetricsMeta` custom meta from buffers) and [`records`] (the records as JSON Lines,
//! JSON and CSV: the stats file's and the `gpumetrics` command's).

use gst::glib;

pub mod alerts;
pub mod caps;
mod gpumetrics;
pub mod gstcuda;
pub mod message;
pub mod meta;
pub mod pairing;
pub mod quote;
pub mod records;
pub mod roi;

pub use gpumetrics::{
    Align, Backend, Channels, GpuMetrics, Map, MapRecord, MapStyle, Metrics, Output, Pairing,
    StatsFormat,
};

fn plugin_init(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    meta::register();
    gpumetrics::register(plugin)
}

gst::plugin_define!(
    gpumetrics,
    env!("CARGO_PKG_DESCRIPTION"),
    plugin_init,
    concat!(env!("CARGO_PKG_VERSION"), "-", env!("COMMIT_ID")),
    "MPL",
    env!("CARGO_PKG_NAME"),
    env!("CARGO_PKG_NAME"),
    // The origin is meant to be the provider's URL; the project has none yet, so this is
    // GStreamer's own default for it (the `package-origin` build option), not an invented
    // address.
    "Unknown package origin",
    env!("BUILD_REL_DATE")
);
