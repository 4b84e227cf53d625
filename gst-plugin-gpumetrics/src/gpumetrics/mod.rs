// SPDX-License-Identifier: MPL-2.0
//! The `gpumetrics` element.

/**
 * SECTION:element-gpumetrics
 *
 * Compares a distorted video (`dist_sink`) with its reference (`ref_sink`) frame by frame and
 * reports quality metrics (PSNR, SSIM, MS-SSIM, SSIMULACRA2, Butteraugli) per pair as `gpumetrics` element messages
 * and as `GstGpuMetricsMeta` custom meta on the outgoing buffer, optionally to a stats file
 * (jsonl/csv/json), and the pooled `gpumetrics-summary` message at EOS. The distorted stream
 * leaves through `src` unchanged. Frames are paired by running time (within half a frame
 * duration, or `pairing-tolerance`) or by sequence; frames without a partner are counted as
 * unmatched, never compared with another frame.
 *
 * ## Example launch line
 * ```text
 * gst-launch-1.0 -m videotestsrc num-buffers=100 ! video/x-raw,format=I420 ! tee name=t \
 *   t. ! queue ! m.ref_sink \
 *   t. ! queue ! x264enc bitrate=300 ! avdec_h264 ! queue ! m.dist_sink \
 *   gpumetrics name=m stats-file=scores.jsonl ! fakesink
 * ```
 *
 * See gst-plugin-gpumetrics/README.md for the record layouts.
 */
use gst::glib;
use gst::prelude::*;

mod imp;

/// Metrics computed per pair (`metrics` property, GType `GstGpuMetricsMetrics`): one flag per
/// metric of the engine's registry (`gpumetrics_engine::metric::all`), with its bit, name
/// and description; the test below keeps them equal.
#[glib::flags(name = "GstGpuMetricsMetrics")]
pub enum Metrics {
    /// PSNR per plane and average, with the per-plane MSE (`psnr-*`, `mse-*`).
    #[flags_value(
        name = "PSNR and MSE per plane, and their plane-weighted average",
        nick = "psnr"
    )]
    PSNR = 0b0000_0001,
    /// SSIM per plane (luma, or R, G, B; chroma with `ssim-chroma`), `ssim`, `ssim-all`.
    #[flags_value(
        name = "SSIM (11x11 Gaussian window) of luma, or of R, G, B; chroma and ssim-all with ssim-chroma",
        nick = "ssim"
    )]
    SSIM = 0b0000_0010,
    /// MS-SSIM (5 scales) of luma, or the mean over R, G, B (`ms-ssim`).
    #[flags_value(
        name = "MS-SSIM (5 scales) of luma, or the mean over R, G, B; frames > 160x160",
        nick = "ms-ssim"
    )]
    MS_SSIM = 0b0000_0100,
    /// SSIMULACRA2 2.1 on linear RGB, converted with the caps' colorimetry (`ssimulacra2`).
    #[flags_value(
        name = "SSIMULACRA2 (version 2.1) on display-referred linear light from the caps' colorimetry; frames >= 8x8",
        nick = "ssimulacra2"
    )]
    SSIMULACRA2 = 0b0000_1000,
    /// Butteraugli (libjxl) on the same linear light: `butteraugli` (max norm) and
    /// `butteraugli-3norm`; intensity target from `butteraugli-intensity`.
    #[flags_value(
        name = "Butteraugli (libjxl) on display-referred linear light: max norm and 3-norm; frames >= 8x8",
        nick = "butteraugli"
    )]
    BUTTERAUGLI = 0b0001_0000,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::PSNR
    }
}

/// Where the metrics run (`backend` property, GType `GstGpuMetricsBackend`).
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstGpuMetricsBackend")]
pub enum Backend {
    #[default]
    #[enum_value(
        name = "Auto: CUDA when a device is usable, else the CPU (logged)",
        nick = "auto"
    )]
    Auto = 0,
    #[enum_value(name = "CUDA: fail when no CUDA device is usable", nick = "cuda")]
    Cuda = 1,
    #[enum_value(name = "CPU: parallel over rows", nick = "cpu")]
    Cpu = 2,
}

/// Layout of the stats file (`stats-format` property, GType `GstGpuMetricsStatsFormat`).
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstGpuMetricsStatsFormat")]
pub enum StatsFormat {
    #[default]
    #[enum_value(
        name = "JSON Lines: one object per pair, the summary object last",
        nick = "jsonl"
    )]
    Jsonl = 0,
    #[enum_value(name = "CSV: one row per pair, the summary rows last", nick = "csv")]
    Csv = 1,
    #[enum_value(
        name = "JSON: one document {\"frames\": [...], \"summary\": {...}}",
        nick = "json"
    )]
    Json = 2,
}

/// How reference and distorted frames are paired (`pairing` property, GType
/// `GstGpuMetricsPairing`).
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstGpuMetricsPairing")]
pub enum Pairing {
    #[default]
    #[enum_value(
        name = "Timestamp: frames with equal running time (within half a frame duration)",
        nick = "timestamp"
    )]
    Timestamp = 0,
    #[enum_value(
        name = "Sequence: the n-th reference frame with the n-th distorted frame",
        nick = "sequence"
    )]
    Sequence = 1,
}

/// How subsampled chroma reaches every pixel for the linear-light metrics
/// (`chroma-upsampling` property, GType `GstGpuMetricsChromaUpsampling`).
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstGpuMetricsChromaUpsampling")]
pub enum ChromaUpsampling {
    #[default]
    #[enum_value(
        name = "Catmull-Rom: 4-tap bicubic at the caps' chroma siting",
        nick = "catmull-rom"
    )]
    CatmullRom = 0,
    #[enum_value(
        name = "Nearest: the sample at x/2 (as the ssimulacra2 crate's video input reads it)",
        nick = "nearest"
    )]
    Nearest = 1,
}

glib::wrapper! {
    /// The `gpumetrics` element (GType `GstGpuMetrics`).
    pub struct GpuMetrics(ObjectSubclass<imp::GpuMetrics>)
        @extends gst_base::Aggregator, gst::Element, gst::Object;
}

pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    Metrics::static_type().mark_as_plugin_api(gst::PluginAPIFlags::empty());
    Backend::static_type().mark_as_plugin_api(gst::PluginAPIFlags::empty());
    StatsFormat::static_type().mark_as_plugin_api(gst::PluginAPIFlags::empty());
    Pairing::static_type().mark_as_plugin_api(gst::PluginAPIFlags::empty());
    ChromaUpsampling::static_type().mark_as_plugin_api(gst::PluginAPIFlags::empty());
    gst::Element::register(
        Some(plugin),
        "gpumetrics",
        gst::Rank::NONE,
        GpuMetrics::static_type(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_flags_are_the_engine_registry() {
        gst::init().unwrap();
        let class = glib::FlagsClass::with_type(Metrics::static_type()).unwrap();
        let flags: Vec<_> = class
            .values()
            .iter()
            .map(|v| (v.value(), v.nick(), v.name()))
            .collect();
        let registry: Vec<_> = gpumetrics_engine::metric::all()
            .map(|i| (i.flag.bits(), i.name, i.description))
            .collect();
        assert_eq!(flags, registry);
    }
}
