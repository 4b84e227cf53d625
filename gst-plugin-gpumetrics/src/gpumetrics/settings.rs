// SPDX-License-Identifier: MPL-2.0
//! The element's properties: its own (what to compute, where, how to pair, where the
//! scores go) and, from [`super::options`], one per metric option of the engine's registry,
//! kept together in one [`gpumetrics_engine::Options`].

use std::path::PathBuf;
use std::sync::LazyLock;

use gpumetrics_engine::{
    BackendChoice, EngineConfig, EngineError, MAX_IN_FLIGHT, OptionValue, Options,
};
use gst::glib;
use gst::prelude::*;

use super::{Backend, Metrics, Pairing, StatsFormat, options};
use crate::records;

const DEFAULT_DEVICE_ID: i32 = 0;
/// `device-id=-1`: the device with the most free capacity when the element starts.
pub(crate) const AUTO_DEVICE_ID: i32 = -1;
const DEFAULT_POST_MESSAGES: bool = true;
const DEFAULT_ATTACH_META: bool = true;
/// `in-flight`: the GPU measures one pair while the element prepares the next, for one
/// frame of latency.
const DEFAULT_IN_FLIGHT: u32 = 2;
/// `align-range` by default: 5 s either way.
pub const DEFAULT_ALIGN_RANGE: u64 = 5_000_000_000;
/// The smallest `align-range`: 100 ms.
pub const MIN_ALIGN_RANGE: u64 = 100_000_000;

/// `pairing-tolerance`: half the shorter frame duration.
const AUTO_TOLERANCE: i64 = -1;

/// The properties' values (a snapshot is taken where a run needs them).
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub metrics: Metrics,
    pub backend: Backend,
    /// `device-id`: a CUDA device index, or [`AUTO_DEVICE_ID`].
    pub device_id: i32,
    /// The device `device-id=-1` chose when the element started (NULL to READY).
    pub chosen_device: Option<u32>,
    pub stats_file: Option<PathBuf>,
    pub stats_format: StatsFormat,
    pub post_messages: bool,
    pub attach_meta: bool,
    pub pairing: Pairing,
    /// Fixed pairing tolerance in ns; `None` = half the shorter frame duration.
    pub pairing_tolerance: Option<u64>,
    /// `stall-budget`: how long (ns of running time past its live deadline) a frame waits
    /// for the partner of an input that stalled.
    pub stall_budget: u64,
    /// `align`: line the inputs up by content.
    pub align: super::Align,
    /// `align-range`: the largest offset (ns, either way) `align=auto` looks for.
    pub align_range: u64,
    /// The metrics' options (one property each), defaults unless set.
    pub options: Options,
    /// `window`: length of the tumbling windows in ns of running time; 0 = none.
    pub window: u64,
    /// `alerts`: the rules as written (parsed when the element starts).
    pub alerts: Option<String>,
    /// `subsample`: score every N-th matched pair.
    pub subsample: u32,
    /// `roi`: `x,y,width,height` as written (checked against the caps).
    pub roi: Option<String>,
    /// `prometheus-address`: `host:port` of the metrics endpoint.
    pub prometheus_address: Option<String>,
    /// `channel`: the channel the element measures (its series' `channel` label).
    pub channel: Option<String>,
    /// `in-flight`: pairs the engine may have in flight (1..=[`MAX_IN_FLIGHT`]).
    pub in_flight: u32,
    /// `map`: the distortion map src carries instead of the distorted frames.
    pub map: super::Map,
    /// `map-style`: how src carries it.
    pub map_style: super::MapStyle,
    /// `map-threshold`: the threshold of the map's `<name>-area`; `None`: the map's own.
    pub map_threshold: Option<f64>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            metrics: Metrics::default(),
            backend: Backend::default(),
            device_id: DEFAULT_DEVICE_ID,
            chosen_device: None,
            stats_file: None,
            stats_format: StatsFormat::default(),
            post_messages: DEFAULT_POST_MESSAGES,
            attach_meta: DEFAULT_ATTACH_META,
            pairing: Pairing::default(),
            pairing_tolerance: None,
            stall_budget: super::stall::DEFAULT_BUDGET,
            align: super::Align::None,
            align_range: DEFAULT_ALIGN_RANGE,
            map: super::Map::None,
            map_style: super::MapStyle::Gray16,
            map_threshold: None,
            options: Options::new(),
            window: 0,
            alerts: None,
            subsample: 1,
            roi: None,
            prometheus_address: None,
            channel: None,
            in_flight: DEFAULT_IN_FLIGHT,
        }
    }
}

/// Every property of the element: its own, then one per metric option (gst-inspect-1.0
/// lists them sorted by name).
pub(super) fn properties() -> &'static [glib::ParamSpec] {
    static PROPERTIES: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
        let mut specs = own_properties();
        specs.extend(options::param_specs());
        specs
    });
    PROPERTIES.as_ref()
}

fn own_properties() -> Vec<glib::ParamSpec> {
    vec![
        glib::ParamSpecFlags::builder::<Metrics>("metrics")
            .nick("Metrics")
            .blurb(
                "Metrics computed for every frame pair (flags). Takes effect when the element \
                 starts.",
            )
            .default_value(Metrics::default())
            .mutable_ready()
            .build(),
        glib::ParamSpecEnum::builder::<Backend>("backend")
            .nick("Backend")
            .blurb(
                "Where the metrics run: auto = CUDA when a device is usable, else the CPU (the \
                 reason is logged at INFO in category gpumetrics)",
            )
            .default_value(Backend::default())
            .mutable_ready()
            .build(),
        glib::ParamSpecInt::builder("device-id")
            .nick("CUDA device")
            .blurb(
                "Index of the CUDA device used by the cuda (and auto) backend; -1 = the device \
                 with the most free capacity when the element starts (the fewest gpumetrics \
                 engines of this process, then the most free memory; logged at INFO)",
            )
            .minimum(AUTO_DEVICE_ID)
            .default_value(DEFAULT_DEVICE_ID)
            .mutable_ready()
            .build(),
        glib::ParamSpecString::builder("stats-file")
            .nick("Stats file")
            .blurb(
                "Write one record per frame pair and the pooled summary as the last record to \
                 this file (created or truncated at start; NULL = none)",
            )
            .mutable_ready()
            .build(),
        glib::ParamSpecEnum::builder::<StatsFormat>("stats-format")
            .nick("Stats format")
            .blurb(
                "Layout of stats-file: jsonl, csv or json. An infinite score (PSNR of \
                 identical planes) is null in JSON and inf in CSV; times are integer nanoseconds",
            )
            .default_value(StatsFormat::default())
            .mutable_ready()
            .build(),
        glib::ParamSpecBoolean::builder("post-messages")
            .nick("Post messages")
            .blurb(
                "Post a 'gpumetrics' element message per frame pair (the 'gpumetrics-summary' \
                 message is always posted at EOS and on stop)",
            )
            .default_value(DEFAULT_POST_MESSAGES)
            .mutable_playing()
            .build(),
        glib::ParamSpecBoolean::builder("attach-meta")
            .nick("Attach meta")
            .blurb(
                "Attach the scores to each outgoing distorted buffer as custom meta \
                 'GstGpuMetricsMeta' (same fields as the 'gpumetrics' message)",
            )
            .default_value(DEFAULT_ATTACH_META)
            .mutable_playing()
            .build(),
        glib::ParamSpecEnum::builder::<Pairing>("pairing")
            .nick("Pairing")
            .blurb(
                "How frames are paired: timestamp = equal running time within half a frame \
                 duration (unpaired frames are counted as unmatched), sequence = n-th with n-th",
            )
            .default_value(Pairing::default())
            .mutable_ready()
            .build(),
        glib::ParamSpecInt64::builder("pairing-tolerance")
            .nick("Pairing tolerance")
            .blurb(
                "pairing=timestamp: largest running-time difference (ns) of two frames that are \
                 compared; -1 (default) = half the shorter frame duration (1 ms when no duration \
                 is known)",
            )
            .minimum(AUTO_TOLERANCE)
            .default_value(AUTO_TOLERANCE)
            .mutable_ready()
            .build(),
        glib::ParamSpecEnum::builder::<super::Align>("align")
            .nick("Align")
            .blurb(
                "auto: find the offset between ref_sink and dist_sink by content (luma \
                 thumbnails), whatever their timestamps, and pair each distorted frame with \
                 the reference frame at that offset; keep checking it and find it again when \
                 it changes (messages 'gpumetrics-align' with state searching, locked, lost). \
                 Frames before the lock are counted, never scored. Needs moving pictures. \
                 none: pair as 'pairing' says",
            )
            .default_value(super::Align::None)
            .mutable_ready()
            .build(),
        glib::ParamSpecUInt64::builder("align-range")
            .nick("Align range")
            .blurb(
                "align=auto: the largest offset looked for, either way (ns). The reference \
                 frames of this range are held while searching",
            )
            .minimum(MIN_ALIGN_RANGE)
            .default_value(DEFAULT_ALIGN_RANGE)
            .mutable_ready()
            .build(),
        glib::ParamSpecEnum::builder::<super::Map>("map")
            .nick("Distortion map")
            .blurb(
                "Which map of each pair src carries in place of the distorted frames, with \
                 their timestamps: squared-error (luma (x - y)^2), ssim (the luma SSIM \
                 map), or the map of a metric that metrics must include: butteraugli \
                 (libjxl's diffmap), cvvdp (ColorVideoVDP's heat map, 1 - JOD/10), \
                 ssimulacra2 (each pixel's share of the weighted sum its score comes from); \
                 as map-style says (docs/METRICS.md, \"Distortion maps\"). Frames \
                 without a scored pair (unmatched, skipped) have no map and are not pushed. \
                 none: src carries the distorted frames",
            )
            .default_value(super::Map::None)
            .mutable_ready()
            .build(),
        glib::ParamSpecEnum::builder::<super::MapStyle>("map-style")
            .nick("Map style")
            .blurb(
                "map: gray16 = GRAY16_LE, the map's values on its linear scale; heat = RGBA, \
                 a false-colour scale whose alpha grows with the difference (for \
                 compositor)",
            )
            .default_value(super::MapStyle::Gray16)
            .mutable_ready()
            .build(),
        glib::ParamSpecDouble::builder("map-threshold")
            .nick("Map threshold")
            .blurb(
                "map: the value past which a pixel counts into the record's <map>-area (the \
                 share of such pixels; SSIM: below it, the others above); -1 = the map's \
                 default: squared-error (peak/25)^2, ssim 0.9, butteraugli 1.0, cvvdp 0.1, \
                 ssimulacra2 2.647",
            )
            .minimum(-1.0)
            .default_value(-1.0)
            .mutable_ready()
            .build(),
        glib::ParamSpecUInt64::builder("stall-budget")
            .nick("Stall budget")
            .blurb(
                "Live: when an input delivers no frame by the live deadline it has stalled (a \
                 'gpumetrics-event' event=stall state=start, then state=end when it delivers \
                 again); the other input's frames are held for this long (ns of running time \
                 past their deadline, at most 1000 frames) and paired if the stalled input's \
                 frames arrive meanwhile, else counted unmatched. 0 = give them up at once",
            )
            .default_value(super::stall::DEFAULT_BUDGET)
            .mutable_ready()
            .build(),
        glib::ParamSpecUInt64::builder("window")
            .nick("Window")
            .blurb(
                "Length of tumbling windows of running time (ns), aligned to running time 0: at \
                 the end of each a 'gpumetrics-window' message with the window's pooled \
                 statistics (also in the stats file); 0 = no windows",
            )
            .default_value(0)
            .mutable_ready()
            .build(),
        glib::ParamSpecString::builder("alerts")
            .nick("Alert rules")
            .blurb(
                "Comma-separated rules FIELD<VALUE[:HOLD] or FIELD>VALUE[:HOLD] (HOLD in ms or \
                 s, default 0), e.g. vmaf<70:2s,psnr-y<30:500ms: raised when the condition has \
                 held for HOLD of running time, cleared when it has been false for HOLD; each \
                 change posts a 'gpumetrics-alert' message (and a warning when raised)",
            )
            .mutable_ready()
            .build(),
        glib::ParamSpecUInt::builder("subsample")
            .nick("Subsample")
            .blurb(
                "Score every N-th matched pair; the others pass through unscored (no meta, no \
                 record) and are counted as 'skipped'. Temporal features (VMAF's motion) still \
                 see every frame, so a scored pair has the value of a full run",
            )
            .minimum(1)
            .default_value(1)
            .mutable_ready()
            .build(),
        glib::ParamSpecUInt::builder("in-flight")
            .nick("Pairs in flight")
            .blurb(
                "Pairs measured concurrently on the GPU: the GPU works on one pair while the \
                 element prepares the next; each extra pair adds one frame of latency \
                 (reported in the latency query). 1 measures each pair before taking the next. \
                 The CPU backend measures one pair at a time whatever is set",
            )
            .minimum(1)
            .maximum(MAX_IN_FLIGHT as u32)
            .default_value(DEFAULT_IN_FLIGHT)
            .mutable_ready()
            .build(),
        glib::ParamSpecString::builder("roi")
            .nick("Region of interest")
            .blurb(
                "x,y,width,height in pixels of the reference: both inputs are measured on this \
                 rectangle only (read in place); NULL = the whole frame",
            )
            .mutable_ready()
            .build(),
        glib::ParamSpecString::builder("prometheus-address")
            .nick("Prometheus address")
            .blurb(
                "host:port to serve Prometheus' text format at http://host:port/metrics; \
                 elements of one process with the same address share the endpoint, their \
                 series labelled element=<name>; NULL = none",
            )
            .mutable_ready()
            .build(),
        glib::ParamSpecString::builder("channel")
            .nick("Channel")
            .blurb(
                "Name of the channel this element measures, for a service that runs many \
                 (gpumetrics monitor): its prometheus-address series carry \
                 channel=<name> beside element=<name>; NULL = no channel label",
            )
            .mutable_ready()
            .build(),
        glib::ParamSpecString::builder(PROMETHEUS_BOUND_ADDRESS)
            .nick("Prometheus bound address")
            .blurb(
                "host:port where the prometheus-address endpoint listens, from the element's \
                 start to its stop (with port 0, e.g. 127.0.0.1:0, the port the system chose); \
                 empty until then",
            )
            .default_value(Some(""))
            .read_only()
            .build(),
        glib::ParamSpecBoxed::builder::<gst::Structure>(MEMORY_STATS)
            .nick("Memory stats")
            .blurb(
                "How the frames of this run were read: device-frames = CUDA memory read in place \
                 (zero-copy), downloaded-frames = CUDA memory mapped for the CPU (device-to-host \
                 copies), system-frames = system memory",
            )
            .read_only()
            .build(),
    ]
}

/// The read-only properties that are no setting (the element answers them from its state).
pub(super) const MEMORY_STATS: &str = "memory-stats";
pub(super) const PROMETHEUS_BOUND_ADDRESS: &str = "prometheus-bound-address";

const CHECKED: &str = "GLib checks the value type of a property";

/// A string property's value; NULL and "" are none.
fn text(value: &glib::Value) -> Option<String> {
    value
        .get::<Option<String>>()
        .expect(CHECKED)
        .filter(|s| !s.trim().is_empty())
}

impl Settings {
    /// Sets property `name` (GLib has checked the value's type and range).
    pub(super) fn set(&mut self, name: &str, value: &glib::Value) {
        match name {
            "metrics" => self.metrics = value.get().expect(CHECKED),
            "backend" => self.backend = value.get().expect(CHECKED),
            "device-id" => self.device_id = value.get().expect(CHECKED),
            "stats-file" => {
                self.stats_file = value
                    .get::<Option<String>>()
                    .expect(CHECKED)
                    .filter(|s| !s.is_empty())
                    .map(PathBuf::from)
            }
            "stats-format" => self.stats_format = value.get().expect(CHECKED),
            "post-messages" => self.post_messages = value.get().expect(CHECKED),
            "attach-meta" => self.attach_meta = value.get().expect(CHECKED),
            "pairing" => self.pairing = value.get().expect(CHECKED),
            "pairing-tolerance" => {
                // GLib refuses values below -1 with a warning before we are called.
                let v: i64 = value.get().expect(CHECKED);
                self.pairing_tolerance = u64::try_from(v).ok();
            }
            "stall-budget" => self.stall_budget = value.get().expect(CHECKED),
            "align" => self.align = value.get().expect(CHECKED),
            "align-range" => self.align_range = value.get().expect(CHECKED),
            "map" => self.map = value.get().expect(CHECKED),
            "map-style" => self.map_style = value.get().expect(CHECKED),
            "map-threshold" => {
                let v: f64 = value.get().expect(CHECKED);
                self.map_threshold = (v >= 0.0).then_some(v);
            }
            "window" => self.window = value.get().expect(CHECKED),
            "alerts" => self.alerts = text(value),
            "subsample" => self.subsample = value.get().expect(CHECKED),
            "in-flight" => self.in_flight = value.get().expect(CHECKED),
            "roi" => self.roi = text(value),
            "prometheus-address" => self.prometheus_address = text(value),
            "channel" => self.channel = text(value),
            _ => {
                let spec = options::spec(name).expect("a property of the element");
                self.options
                    .set(spec.name, options::from_value(spec, value))
                    .expect("GLib checked the type and range the option declares");
            }
        }
    }

    /// The value of property `name` (not [`MEMORY_STATS`] nor [`PROMETHEUS_BOUND_ADDRESS`]).
    pub(super) fn get(&self, name: &str) -> glib::Value {
        match name {
            "metrics" => self.metrics.to_value(),
            "backend" => self.backend.to_value(),
            "device-id" => self.device_id.to_value(),
            "stats-file" => self
                .stats_file
                .as_ref()
                .map(|p| p.to_string_lossy().into_owned())
                .to_value(),
            "stats-format" => self.stats_format.to_value(),
            "post-messages" => self.post_messages.to_value(),
            "attach-meta" => self.attach_meta.to_value(),
            "pairing" => self.pairing.to_value(),
            "pairing-tolerance" => self
                .pairing_tolerance
                .map_or(AUTO_TOLERANCE, |t| i64::try_from(t).unwrap_or(i64::MAX))
                .to_value(),
            "stall-budget" => self.stall_budget.to_value(),
            "align" => self.align.to_value(),
            "align-range" => self.align_range.to_value(),
            "map" => self.map.to_value(),
            "map-style" => self.map_style.to_value(),
            "map-threshold" => self.map_threshold.unwrap_or(-1.0).to_value(),
            "window" => self.window.to_value(),
            "alerts" => self.alerts.to_value(),
            "subsample" => self.subsample.to_value(),
            "in-flight" => self.in_flight.to_value(),
            "roi" => self.roi.to_value(),
            "prometheus-address" => self.prometheus_address.to_value(),
            "channel" => self.channel.to_value(),
            _ => {
                let spec = options::spec(name).expect("a property of the element");
                let value = self.options.get(spec.name).expect("a registered option");
                options::to_value(spec, &value)
            }
        }
    }

    /// What the engine computes, where, and the metrics' options.
    /// Every field a record of this run can have ([`crate::records::columns_with_map`]): the
    /// stats file's CSV columns, what alert rules may watch.
    pub(crate) fn columns(&self) -> Vec<&'static gpumetrics_engine::Field> {
        crate::records::columns_with_map(self.metrics.set(), self.map.kind())
    }

    /// The CUDA device the run uses: `device-id`, or the one `device-id=-1` chose (device 0
    /// before it has chosen).
    pub(crate) fn device(&self) -> u32 {
        u32::try_from(self.device_id).unwrap_or_else(|_| self.chosen_device.unwrap_or(0))
    }

    /// Where the element measures, as Prometheus labels it (`device`): the CUDA device's
    /// index, or `cpu` for `backend=cpu` and for `auto` where no CUDA device is usable.
    pub(crate) fn device_label(&self) -> String {
        let cpu = match self.backend {
            Backend::Cpu => true,
            Backend::Cuda => false,
            Backend::Auto => gpumetrics_engine::devices::device_count() == 0,
        };
        if cpu {
            "cpu".into()
        } else {
            self.device().to_string()
        }
    }

    pub(super) fn engine_config(&self) -> EngineConfig {
        EngineConfig {
            // The flags type is made from the registry (mod.rs): its bits are the engine's.
            metrics: self.metrics.set(),
            backend: match self.backend {
                Backend::Auto => BackendChoice::Auto,
                Backend::Cuda => BackendChoice::Cuda,
                Backend::Cpu => BackendChoice::Cpu,
            },
            device_id: self.device(),
            options: self.options.clone(),
        }
    }

    /// `text`, the message of the engine error `e`: a metric's refusal of a text option
    /// may quote the value whole (a `vmaf-model` path), bounded here as every quoted value
    /// is ([`crate::quote`]).
    pub(crate) fn bounded(&self, e: &EngineError, text: String) -> String {
        let EngineError::InvalidOption { option, .. } = e else {
            return text;
        };
        match self.options.get(option) {
            Some(OptionValue::Text(v)) => crate::quote::bounded_within(&text, &v),
            _ => text,
        }
    }

    pub(super) fn pairing_mode(&self) -> crate::pairing::Mode {
        match self.pairing {
            Pairing::Timestamp => crate::pairing::Mode::Timestamp,
            Pairing::Sequence => crate::pairing::Mode::Sequence,
        }
    }

    pub(super) fn stats_format(&self) -> records::Format {
        match self.stats_format {
            StatsFormat::Jsonl => records::Format::Jsonl,
            StatsFormat::Csv => records::Format::Csv,
            StatsFormat::Json => records::Format::Json,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `device-id=-1` uses the device chosen when the element started (0 before); an index
    /// is used as given, whatever was chosen.
    #[test]
    fn device_id_minus_one_is_the_chosen_device() {
        gst::init().unwrap();
        let mut s = Settings::default();
        assert_eq!(s.engine_config().device_id, 0);
        s.set("device-id", &3i32.to_value());
        assert_eq!(s.engine_config().device_id, 3);
        s.chosen_device = Some(1);
        assert_eq!(s.engine_config().device_id, 3, "an index is not overridden");
        s.set("device-id", &AUTO_DEVICE_ID.to_value());
        assert_eq!(s.engine_config().device_id, 1);
        assert_eq!(s.get("device-id").get::<i32>(), Ok(-1));
        s.chosen_device = None;
        assert_eq!(s.engine_config().device_id, 0);
        let p = properties()
            .iter()
            .find(|p| p.name() == "device-id")
            .unwrap()
            .downcast_ref::<glib::ParamSpecInt>()
            .unwrap()
            .clone();
        assert_eq!((p.minimum(), p.default_value()), (-1, 0));
    }

    /// Prometheus's `device` label: `cpu` for the CPU backend, the device measured on for
    /// CUDA (the chosen one for `device-id=-1`).
    #[test]
    fn the_device_label_says_where_the_element_measures() {
        gst::init().unwrap();
        let mut s = Settings::default();
        s.set("backend", &Backend::Cpu.to_value());
        s.set("device-id", &2i32.to_value());
        assert_eq!(s.device_label(), "cpu");
        s.set("backend", &Backend::Cuda.to_value());
        assert_eq!(s.device_label(), "2");
        s.set("device-id", &AUTO_DEVICE_ID.to_value());
        s.chosen_device = Some(1);
        assert_eq!(s.device_label(), "1");
    }

    /// Every property but memory-stats reads back what was set, the metric options through
    /// the one `Options` the engine gets.
    #[test]
    fn properties_round_trip_and_options_reach_the_engine_config() {
        gst::init().unwrap();
        let mut s = Settings::default();
        for p in properties() {
            if [MEMORY_STATS, PROMETHEUS_BOUND_ADDRESS].contains(&p.name()) {
                continue;
            }
            let default = p.default_value().clone();
            s.set(p.name(), &default);
            assert_eq!(
                format!("{:?}", s.get(p.name())),
                format!("{default:?}"),
                "{}",
                p.name()
            );
        }
        let config = s.engine_config();
        for o in gpumetrics_engine::metric::options() {
            assert_eq!(
                config.options.get(o.name),
                Some(o.default_value()),
                "{}",
                o.name
            );
        }
        let names: Vec<_> = properties().iter().map(|p| p.name()).collect();
        for (i, n) in names.iter().enumerate() {
            assert!(!names[..i].contains(n), "{n} twice");
        }
        // A float option set through its property is the engine's value.
        let float = gpumetrics_engine::metric::options()
            .find(|o| matches!(o.kind, gpumetrics_engine::OptionKind::Float { .. }));
        if let Some(o) = float {
            let gpumetrics_engine::OptionKind::Float { max, .. } = o.kind else {
                unreachable!()
            };
            s.set(o.name, &max.to_value());
            assert_eq!(s.get(o.name).get::<f64>().unwrap(), max);
            assert_eq!(
                s.engine_config().options.get(o.name),
                Some(gpumetrics_engine::OptionValue::Float(max))
            );
        }
        s.set("pairing-tolerance", &5i64.to_value());
        assert_eq!(s.pairing_tolerance, Some(5));
        s.set("stats-file", &"".to_value());
        assert_eq!(s.stats_file, None);
    }
}
