// SPDX-License-Identifier: MPL-2.0
//! The `gpumetrics` element.

/**
 * SECTION:element-gpumetrics
 *
 * Compares a distorted video (`dist_sink`) with its reference (`ref_sink`) frame by frame and
 * reports the quality metrics chosen in its `metrics` property (gst-inspect-1.0 lists them;
 * docs/METRICS.md defines each): full-reference ones per pair, and no-reference checks on
 * each input (`ref-` fields for the reference; intervals such as black and freeze as
 * `gpumetrics-event` messages), as
 * `gpumetrics` element messages and as `GstGpuMetricsMeta` custom meta on the outgoing
 * buffer, optionally to a stats file (jsonl/csv/json), and the pooled `gpumetrics-summary`
 * message at EOS. The distorted stream
 * leaves through `src` unchanged. Frames are paired by running time (within half a frame
 * duration, or `pairing-tolerance`) or by sequence; frames without a partner are counted as
 * unmatched, never compared with another frame. With `ref_sink` not linked, `dist_sink` is
 * measured alone with the no-reference metrics.
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
use std::sync::LazyLock;

use gpumetrics_engine::MetricSet;
use gst::glib;
use gst::prelude::*;

use crate::message::{AlertChange, AlignRecord, EventRecord, FrameScores, Summary, Window};

mod advice;
mod align;
mod cuda;
mod decode;
mod imp;
mod input;
mod map_render;
mod options;
mod outputs;

pub use outputs::Channels;
mod queue;
mod scorer;
mod settings;
mod stall;

/// The element's debug category.
pub(crate) static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new(
        "gpumetrics",
        gst::DebugColorFlags::empty(),
        Some("GPU video quality metrics"),
    )
});

/// Metrics computed per pair (`metrics` property, GType `GstGpuMetricsMetrics`). The flags
/// type is registered at run time from the engine's registry
/// ([`gpumetrics_engine::metric::all`]): one value per metric, with its bit, its description
/// as the value name and its name as the nick, so a new metric needs no edit here; then one
/// value per named set of metrics ([`gpumetrics_engine::metric::SETS`]: `aom-ctc`), with its
/// metrics' bits (after the metrics, so that a value is written with the metrics' nicks).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Metrics(MetricSet);

impl Metrics {
    /// The metrics as the engine's set.
    pub fn set(self) -> MetricSet {
        self.0
    }

    /// The bits of the flags value (the engine's bits).
    pub fn bits(self) -> u32 {
        self.0.bits()
    }
}

impl Default for Metrics {
    /// PSNR, as the engine's default configuration.
    fn default() -> Self {
        Metrics(gpumetrics_engine::EngineConfig::default().metrics)
    }
}

impl From<MetricSet> for Metrics {
    fn from(set: MetricSet) -> Self {
        Metrics(set)
    }
}

impl glib::prelude::StaticType for Metrics {
    fn static_type() -> glib::Type {
        static TYPE: std::sync::OnceLock<glib::Type> = std::sync::OnceLock::new();
        *TYPE.get_or_init(|| {
            use glib::gobject_ffi::GFlagsValue;
            use glib::translate::from_glib;
            // GLib keeps these for the life of the process.
            let text = |s: &str| {
                std::ffi::CString::new(s)
                    .expect("no NUL in registry text")
                    .into_raw()
                    .cast_const()
            };
            let values: Vec<GFlagsValue> = gpumetrics_engine::metric::all()
                .map(|i| GFlagsValue {
                    value: i.flag.bits(),
                    value_name: text(i.description),
                    value_nick: text(i.name),
                })
                .chain(gpumetrics_engine::metric::SETS.iter().map(|s| GFlagsValue {
                    value: s.set().bits(),
                    value_name: text(s.description),
                    value_nick: text(s.name),
                }))
                .chain([GFlagsValue {
                    value: 0,
                    value_name: std::ptr::null(),
                    value_nick: std::ptr::null(),
                }])
                .collect();
            let values: &'static [GFlagsValue] = Vec::leak(values);
            // SAFETY: a NUL-terminated name and a zero-terminated value table that lives as
            // long as the process; registered once (OnceLock).
            let type_: glib::Type = unsafe {
                from_glib(glib::gobject_ffi::g_flags_register_static(
                    c"GstGpuMetricsMetrics".as_ptr(),
                    values.as_ptr(),
                ))
            };
            assert!(type_.is_valid(), "GstGpuMetricsMetrics is registered twice");
            type_
        })
    }
}

impl glib::translate::IntoGlib for Metrics {
    type GlibType = u32;
    fn into_glib(self) -> u32 {
        self.bits()
    }
}

impl glib::translate::FromGlib<u32> for Metrics {
    unsafe fn from_glib(bits: u32) -> Self {
        Metrics(MetricSet::from_bits(bits))
    }
}

impl glib::value::ValueType for Metrics {
    type Type = Self;
}

// SAFETY: the checker admits only values of this flags type.
unsafe impl<'a> glib::value::FromValue<'a> for Metrics {
    type Checker = glib::value::GenericValueTypeChecker<Self>;

    unsafe fn from_value(value: &'a glib::Value) -> Self {
        use glib::translate::ToGlibPtr;
        // SAFETY: `value` holds flags (checked by the checker).
        let bits = unsafe { glib::gobject_ffi::g_value_get_flags(value.to_glib_none().0) };
        Metrics(MetricSet::from_bits(bits))
    }
}

impl glib::value::ToValue for Metrics {
    fn to_value(&self) -> glib::Value {
        use glib::translate::ToGlibPtrMut;
        let mut value = glib::Value::for_value_type::<Self>();
        // SAFETY: `value` is of this flags type.
        unsafe { glib::gobject_ffi::g_value_set_flags(value.to_glib_none_mut().0, self.bits()) };
        value
    }

    fn value_type(&self) -> glib::Type {
        <Self as glib::prelude::StaticType>::static_type()
    }
}

impl From<Metrics> for glib::Value {
    fn from(m: Metrics) -> Self {
        glib::value::ToValue::to_value(&m)
    }
}

impl glib::HasParamSpec for Metrics {
    type ParamSpec = glib::ParamSpecFlags;
    type SetValue = Self;
    type BuilderFn = fn(&str) -> glib::ParamSpecFlagsBuilder<'_, Self>;

    fn param_spec_builder() -> Self::BuilderFn {
        |name| glib::ParamSpecFlags::builder(name)
    }
}

/// Where the metrics run (`backend` property, GType `GstGpuMetricsBackend`): the engine's
/// `BackendChoice` as a GObject enum (mapped in `settings.rs`; a test keeps the names equal).
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

/// Whether the inputs are lined up by content (`align` property, GType
/// `GstGpuMetricsAlign`).
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstGpuMetricsAlign")]
pub enum Align {
    #[default]
    #[enum_value(name = "None: frames are paired as `pairing` says", nick = "none")]
    None = 0,
    #[enum_value(
        name = "Auto: the offset between the inputs is found by content and followed",
        nick = "auto"
    )]
    Auto = 1,
}

/// Which distortion map src carries in place of the distorted frames (`map` property,
/// GType `GstGpuMetricsMap`; docs/METRICS.md, "Distortion maps").
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstGpuMetricsMap")]
pub enum Map {
    #[default]
    #[enum_value(name = "None: src carries the distorted frames", nick = "none")]
    None = 0,
    #[enum_value(name = "Squared error: luma (x - y)^2", nick = "squared-error")]
    SquaredError = 1,
    #[enum_value(
        name = "SSIM: the luma SSIM map (scikit-image's full=True map)",
        nick = "ssim"
    )]
    Ssim = 2,
    #[enum_value(
        name = "Butteraugli: libjxl's diffmap (with metrics including butteraugli)",
        nick = "butteraugli"
    )]
    Butteraugli = 3,
    #[enum_value(
        name = "ColorVideoVDP: its raw heat map, 1 - JOD/10 per pixel (with metrics including cvvdp)",
        nick = "cvvdp"
    )]
    Cvvdp = 4,
    #[enum_value(
        name = "SSIMULACRA2: each pixel's share of the weighted sum the score is mapped from (with metrics including ssimulacra2)",
        nick = "ssimulacra2"
    )]
    Ssimulacra2 = 5,
}

impl Map {
    /// The engine's map, or none.
    pub fn kind(self) -> Option<gpumetrics_engine::map::MapKind> {
        use gpumetrics_engine::map::MapKind;
        match self {
            Map::None => None,
            Map::SquaredError => Some(MapKind::SquaredError),
            Map::Ssim => Some(MapKind::Ssim),
            Map::Butteraugli => Some(MapKind::Butteraugli),
            Map::Cvvdp => Some(MapKind::Cvvdp),
            Map::Ssimulacra2 => Some(MapKind::Ssimulacra2),
        }
    }
}

/// How src carries the map (`map-style` property, GType `GstGpuMetricsMapStyle`).
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, Default, glib::Enum)]
#[repr(u32)]
#[enum_type(name = "GstGpuMetricsMapStyle")]
pub enum MapStyle {
    #[default]
    #[enum_value(
        name = "Gray16: GRAY16_LE, the map's values on a linear scale",
        nick = "gray16"
    )]
    Gray16 = 0,
    #[enum_value(
        name = "Heat: RGBA, a false-colour scale, transparent where nothing differs",
        nick = "heat"
    )]
    Heat = 1,
}

glib::wrapper! {
    /// The `gpumetrics` element (GType `GstGpuMetrics`).
    pub struct GpuMetrics(ObjectSubclass<imp::GpuMetrics>)
        @extends gst_base::Aggregator, gst::Element, gst::Object;
}

/// One record of the element, as its subscribers receive it ([`GpuMetrics::subscribe`]): the
/// values the element posts as its element messages and writes to its `stats-file`, typed.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// A measured pair (the `gpumetrics` message; delivered also with `post-messages` off).
    Frame(FrameScores),
    /// A complete tumbling window (`gpumetrics-window`), before the records after it.
    Window(Window),
    /// A black or freeze interval started or ended (`gpumetrics-event`).
    Event(EventRecord),
    /// An alert rule raised or cleared (`gpumetrics-alert`).
    Alert(AlertChange),
    /// `align=auto`: the alignment changed, or reports its progress (`gpumetrics-align`).
    Align(AlignRecord),
    /// The run's summary (`gpumetrics-summary`): at EOS, or when the element stops before
    /// one; again at the next EOS after a flushing seek.
    Summary(Summary),
    /// With `map` set: a measured pair's distortion map, its exact values, right after
    /// the pair's [`Output::Frame`] (not posted on the bus: src carries it as video).
    Map(MapRecord),
}

/// A pair's distortion map as subscribers receive it ([`Output::Map`]).
#[derive(Debug, Clone, PartialEq)]
pub struct MapRecord {
    /// The pair's frame number (as its record's `frame`).
    pub frame: u64,
    pub kind: gpumetrics_engine::map::MapKind,
    /// Its values on the host (copied there from the GPU for this record only when a
    /// subscriber takes the element's records).
    pub map: std::sync::Arc<gpumetrics_engine::map::DistortionMap>,
}

impl GpuMetrics {
    /// A receiver of the element's records, in the order the element makes them: each
    /// [`Output`] is sent just before the element posts its message (or, for a pair with
    /// `post-messages` off, where it would post it), so a record is in the channel before
    /// any message the element posts after it, its EOS included.
    ///
    /// Subscribe before the element starts (READY to PAUSED): the subscribers are read
    /// then, and a subscription receives every record of each run after that. The channel
    /// is unbounded: the streaming thread never waits for the receiver, and nothing is
    /// lost however far behind it falls (records are small; a receiver that is never
    /// read keeps them all). Dropping the receiver ends the subscription; the channel stays
    /// open while the element lives (the end of a run is its [`Output::Summary`], or EOS on
    /// the bus).
    pub fn subscribe(&self) -> std::sync::mpsc::Receiver<Output> {
        let (tx, rx) = std::sync::mpsc::channel();
        self.subscribe_with(move |output| tx.send(output.clone()).is_ok());
        rx
    }

    /// [`GpuMetrics::subscribe`] with a function instead of a channel: `f` is called with
    /// each record, in order, on the thread that makes it (a streaming thread, or the one
    /// that stops the element); it must return quickly (the stream waits for it) and must
    /// not subscribe to this element or hold a strong reference to it (the element keeps
    /// `f`). `f` returning `false` ends the subscription.
    pub fn subscribe_with(&self, f: impl FnMut(&Output) -> bool + Send + 'static) {
        outputs::subscribe(self.upcast_ref(), Box::new(f));
    }
}

pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    Metrics::static_type().mark_as_plugin_api(gst::PluginAPIFlags::empty());
    Backend::static_type().mark_as_plugin_api(gst::PluginAPIFlags::empty());
    StatsFormat::static_type().mark_as_plugin_api(gst::PluginAPIFlags::empty());
    Pairing::static_type().mark_as_plugin_api(gst::PluginAPIFlags::empty());
    Align::static_type().mark_as_plugin_api(gst::PluginAPIFlags::empty());
    Map::static_type().mark_as_plugin_api(gst::PluginAPIFlags::empty());
    MapStyle::static_type().mark_as_plugin_api(gst::PluginAPIFlags::empty());
    // The GEnum types of the metrics' choice options (e.g. GstGpuMetricsChromaUpsampling).
    for (_, type_) in options::choice_types() {
        type_.mark_as_plugin_api(gst::PluginAPIFlags::empty());
    }
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

    /// The property's enum is the engine's `BackendChoice` as a GType: the same values by
    /// the same names (the command takes the engine's names for `--backend`).
    #[test]
    fn backend_nicks_are_the_engines_choices() {
        gst::init().unwrap();
        let class = glib::EnumClass::with_type(Backend::static_type()).unwrap();
        let nicks: Vec<_> = class
            .values()
            .iter()
            .map(|v| v.nick().to_string())
            .collect();
        let names: Vec<_> = gpumetrics_engine::BackendChoice::ALL
            .map(|c| c.name().to_string())
            .to_vec();
        assert_eq!(nicks, names);
    }

    /// The registered flags type lists the registry's metrics, in order, as gst-inspect and
    /// the `gpumetrics` command show them; values round-trip through `glib::Value`.
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
            .chain(
                gpumetrics_engine::metric::SETS
                    .iter()
                    .map(|s| (s.set().bits(), s.name, s.description)),
            )
            .collect();
        assert_eq!(flags, registry);
        let all = Metrics::from(MetricSet::ALL);
        assert_eq!(all.to_value().get::<Metrics>().unwrap(), all);
        assert_eq!(Metrics::default().set(), MetricSet::PSNR);
        // `metrics=aom-ctc` (gst-launch, the command) is the set's metrics; written back,
        // a value names its metrics, not the set.
        let aom = gpumetrics_engine::metric::named_set("aom-ctc")
            .unwrap()
            .set();
        let parse = |text: &str| {
            glib::Value::deserialize(text, Metrics::static_type())
                .unwrap()
                .get::<Metrics>()
                .unwrap()
                .set()
        };
        assert_eq!(parse("aom-ctc"), aom);
        assert_eq!(parse("psnr+aom-ctc"), aom | MetricSet::PSNR);
        let text = Metrics::from(aom).to_value().serialize().unwrap();
        assert!(!text.contains("common test conditions"), "{text}");
        assert_eq!(parse(&text), aom);
    }
}
