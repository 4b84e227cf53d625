// SPDX-License-Identifier: MPL-2.0
//! Typed access to what the `gpumetrics` element reports.
//!
//! * [`FrameScores`]: one compared pair. Posted as an element message named
//!   [`FRAME_MESSAGE_NAME`] (`gpumetrics`) and attached to the outgoing distorted buffer as
//!   the custom meta [`crate::meta::META_NAME`]; both carry the same fields:
//!
//!   | field          | type                 | meaning                                          |
//!   |----------------|----------------------|--------------------------------------------------|
//!   | `frame`        | `guint64`            | pair index, 0 for the first compared pair        |
//!   | `pts`          | `GstClockTime`       | PTS of the distorted buffer (may be NONE)        |
//!   | `running-time` | `GstClockTime`       | running time of the distorted buffer             |
//!   | `duration`     | `GstClockTime`       | duration of the distorted buffer (may be NONE)   |
//!   | `psnr-y`, ...  | `gdouble`            | one per metric field (docs/METRICS.md names)     |
//!
//!   A PSNR of identical planes is `+inf` (a `gdouble` infinity). No score is ever NaN.
//!
//! * [`Summary`]: the pooled statistics, posted as element message [`SUMMARY_MESSAGE_NAME`]
//!   (`gpumetrics-summary`) at EOS and on stop. Layout: `frames`, `unmatched-ref`,
//!   `unmatched-dist` (`guint64`), then for each metric field one nested `GstStructure`
//!   named after the field (e.g. `psnr-y`) holding the doubles `mean`, `min`, `max`,
//!   `stddev`, `harmonic-mean` (left out when undefined), `pooled` (PSNR fields only: the
//!   PSNR of the mean MSE, FFmpeg's summary line), `p1`, `p5`, `p50`, `p95`, `p99`.
//!   Also `skipped` (`guint64`, pairs `subsample` left unscored) and, with `alerts`, an array
//!   `alerts` of `alert` structures (`rule` string, `episodes` guint64, `seconds` double).
//!
//! * [`Window`]: the same statistics over one tumbling window of running time (`window`),
//!   posted as [`WINDOW_MESSAGE_NAME`] (`gpumetrics-window`) with `start` and `end`
//!   (running time, `guint64` ns) in front of the summary's fields.
//!
//! * [`AlertChange`]: an alert rule raised or cleared, posted as [`ALERT_MESSAGE_NAME`]
//!   (`gpumetrics-alert`): `rule` (as written), `field`, `state` (`raised` / `cleared`),
//!   `value` (double, the pair that changed it), `running-time` (`guint64` ns, that pair's),
//!   and when cleared `since` (running time it was raised at) and `worst` (double).

use gpumetrics_engine::{Field, Scores};
use gst::glib;

/// Name of the per-pair element message.
pub const FRAME_MESSAGE_NAME: &str = "gpumetrics";
/// Name of the summary element message.
pub const SUMMARY_MESSAGE_NAME: &str = "gpumetrics-summary";
/// Name of the per-window element message.
pub const WINDOW_MESSAGE_NAME: &str = "gpumetrics-window";
/// Name of the alert element message.
pub const ALERT_MESSAGE_NAME: &str = "gpumetrics-alert";
/// Element message of a black or freeze interval starting or ending.
pub const EVENT_MESSAGE_NAME: &str = "gpumetrics-event";
/// Element message name of an alignment change (`align=auto`): [`AlignRecord`].
pub const ALIGN_MESSAGE_NAME: &str = "gpumetrics-align";

/// Fields of a per-pair record that are not scores.
pub const FRAME_FIELD: &str = "frame";
pub const PTS_FIELD: &str = "pts";
pub const RUNNING_TIME_FIELD: &str = "running-time";
pub const DURATION_FIELD: &str = "duration";

/// Why a structure could not be read as a record of this crate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub String);

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseError {}

/// A metric field of a record: the registry's declaration of the field
/// ([`gpumetrics_engine::metric::field()`]) and the pair's value of it.
pub type Score = (&'static Field, f64);

/// The record of one compared (reference, distorted) pair: the pair's identity and its
/// scores, each field typed by the registry's declaration (name, unit, direction, ...).
/// The one per-pair record of this crate: messages, meta, alert rules, the stats file, the
/// command's records ([`crate::records`]) all read it.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameScores {
    /// Pair index (0, 1, 2, ...), counting compared pairs only.
    pub frame: u64,
    /// PTS of the distorted buffer.
    pub pts: Option<gst::ClockTime>,
    /// Running time of the distorted buffer.
    pub running_time: Option<gst::ClockTime>,
    /// Duration of the distorted buffer.
    pub duration: Option<gst::ClockTime>,
    /// Metric fields in the engine's stable order, e.g. `(psnr-y's Field, 38.2)`.
    pub scores: Vec<Score>,
}

/// The registry's field of a score the engine named `name`. The engine only makes declared
/// fields (a test of each metric checks it); one it did not declare is left out of the
/// record (a debug build stops on it).
fn declared(name: &str) -> Option<&'static Field> {
    let field = gpumetrics_engine::metric::field(name);
    debug_assert!(
        field.is_some(),
        "the engine made the undeclared field {name}"
    );
    field
}

impl FrameScores {
    /// The record of a pair the engine scored: its identity and `scores`, each field
    /// resolved in the registry.
    pub fn of_scores(
        frame: u64,
        pts: Option<gst::ClockTime>,
        running_time: Option<gst::ClockTime>,
        duration: Option<gst::ClockTime>,
        scores: &Scores,
    ) -> Self {
        FrameScores {
            frame,
            pts,
            running_time,
            duration,
            scores: scores
                .iter()
                .filter_map(|(name, v)| Some((declared(name)?, v)))
                .collect(),
        }
    }

    /// The score of the field named `field` (e.g. `"psnr-avg"`), if present.
    pub fn get(&self, field: &str) -> Option<f64> {
        self.scores
            .iter()
            .find(|(f, _)| f.name == field)
            .map(|(_, v)| *v)
    }

    /// The score of `field`, if present.
    pub fn value(&self, field: &Field) -> Option<f64> {
        self.get(field.name)
    }

    /// The record's fields, in its order.
    pub fn fields(&self) -> impl Iterator<Item = &'static Field> + '_ {
        self.scores.iter().map(|(f, _)| *f)
    }

    /// Writes the record into `s` (existing fields of the same names are replaced).
    pub fn write_into(&self, s: &mut gst::StructureRef) {
        s.set(FRAME_FIELD, self.frame);
        s.set(PTS_FIELD, self.pts);
        s.set(RUNNING_TIME_FIELD, self.running_time);
        s.set(DURATION_FIELD, self.duration);
        for (field, value) in &self.scores {
            s.set(field.name, *value);
        }
    }

    /// The record as a structure named `name`.
    pub fn to_structure(&self, name: &str) -> gst::Structure {
        let mut s = gst::Structure::new_empty(name);
        self.write_into(&mut s);
        s
    }

    /// Reads a record from a structure written by [`FrameScores::write_into`] (message or
    /// meta); every `gdouble` field named as a registry field is taken as a score, in
    /// structure order (other doubles, which this crate does not write, are left out).
    pub fn from_structure(s: &gst::StructureRef) -> Result<Self, ParseError> {
        let frame = s
            .get::<u64>(FRAME_FIELD)
            .map_err(|e| ParseError(format!("{}: field `frame`: {e}", s.name())))?;
        let time = |field: &str| {
            s.get_optional::<Option<gst::ClockTime>>(field)
                .map(Option::flatten)
                .map_err(|e| ParseError(format!("{}: field `{field}`: {e}", s.name())))
        };
        let pts = time(PTS_FIELD)?;
        let running_time = time(RUNNING_TIME_FIELD)?;
        let duration = time(DURATION_FIELD)?;
        let scores = s
            .iter()
            .filter_map(|(name, value)| {
                let v = value.get::<f64>().ok()?;
                Some((gpumetrics_engine::metric::field(name.as_str())?, v))
            })
            .collect();
        Ok(FrameScores {
            frame,
            pts,
            running_time,
            duration,
            scores,
        })
    }

    /// Reads a `gpumetrics` element message; `None` for any other message.
    pub fn from_message(msg: &gst::MessageRef) -> Option<Self> {
        match msg.view() {
            gst::MessageView::Element(e) => {
                let s = e.structure()?;
                if s.name() == FRAME_MESSAGE_NAME {
                    Self::from_structure(s).ok()
                } else {
                    None
                }
            }
            _ => None,
        }
    }
}

/// Pooled statistics of one metric field over all compared pairs (the engine's type).
pub use gpumetrics_engine::FieldSummary as FieldStats;

fn field_stats_from_structure(s: &gst::StructureRef) -> Result<FieldStats, ParseError> {
    let get = |f: &str| {
        s.get::<f64>(f)
            .map_err(|e| ParseError(format!("{}: field `{f}`: {e}", s.name())))
    };
    Ok(FieldStats {
        mean: get("mean")?,
        min: get("min")?,
        max: get("max")?,
        stddev: get("stddev")?,
        harmonic_mean: s.get_optional::<f64>("harmonic-mean").ok().flatten(),
        pooled: s.get_optional::<f64>("pooled").ok().flatten(),
        p1: get("p1")?,
        p5: get("p5")?,
        p50: get("p50")?,
        p95: get("p95")?,
        p99: get("p99")?,
    })
}

/// The pooled summary of a run (`gpumetrics-summary`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Summary {
    /// Number of compared pairs.
    pub frames: u64,
    /// Reference frames that found no distorted partner (dropped).
    pub unmatched_ref: u64,
    /// Distorted frames that found no reference partner (pushed on without meta).
    pub unmatched_dist: u64,
    /// Matched pairs left unscored by `subsample` (not in `frames`).
    pub skipped: u64,
    /// `align=auto`: distorted frames that passed while no offset was locked (or that a
    /// nearby offset fitted better), counted, never scored. Written only when not zero.
    pub unaligned: u64,
    /// Per metric field, in the engine's stable order.
    pub fields: Vec<(String, FieldStats)>,
    /// Per alert rule, in the order of the `alerts` property.
    pub alerts: Vec<AlertCount>,
    /// Per event kind and input that had intervals (black, freeze), in the order of their
    /// first interval.
    pub events: Vec<EventCount>,
    /// What the inputs' decoders reported (the summary only; all zero in a window).
    pub decode: DecodeCounts,
}

/// What the decoders upstream of each input reported over a run, `[ref, dist]`: a score of
/// a frame decoded with errors measures the decoder's concealment too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DecodeCounts {
    /// Warning messages posted by a decoder upstream of the input
    /// (`decode-warnings-ref`, `decode-warnings-dist`).
    pub warnings: [u64; 2],
    /// Frames that arrived flagged corrupted by their decoder (`GST_BUFFER_FLAG_CORRUPTED`;
    /// `corrupted-ref`, `corrupted-dist`).
    pub corrupted: [u64; 2],
}

impl DecodeCounts {
    /// The counts' names and values, in the order records give them.
    pub fn entries(&self) -> [(&'static str, u64); 4] {
        [
            ("decode-warnings-ref", self.warnings[0]),
            ("decode-warnings-dist", self.warnings[1]),
            ("corrupted-ref", self.corrupted[0]),
            ("corrupted-dist", self.corrupted[1]),
        ]
    }

    /// Nothing was reported (records then leave the counts out).
    pub fn is_empty(&self) -> bool {
        self.entries().iter().all(|(_, n)| *n == 0)
    }
}

/// The black or freeze intervals of one input, over a run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EventCount {
    /// `black` or `freeze`.
    pub event: String,
    /// `dist` or `ref`.
    pub input: String,
    /// Intervals that ended (at EOS too).
    pub intervals: u64,
    /// Their total length in seconds of running time.
    pub seconds: f64,
}

impl EventCount {
    fn to_structure(&self) -> gst::Structure {
        gst::Structure::builder("event")
            .field("event", &self.event)
            .field("input", &self.input)
            .field("intervals", self.intervals)
            .field("seconds", self.seconds)
            .build()
    }

    fn from_structure(s: &gst::StructureRef) -> Result<Self, ParseError> {
        let e = |f: &str, e: &dyn std::fmt::Display| ParseError(format!("event: field `{f}`: {e}"));
        Ok(EventCount {
            event: s.get::<String>("event").map_err(|x| e("event", &x))?,
            input: s.get::<String>("input").map_err(|x| e("input", &x))?,
            intervals: s.get::<u64>("intervals").map_err(|x| e("intervals", &x))?,
            seconds: s.get::<f64>("seconds").map_err(|x| e("seconds", &x))?,
        })
    }
}

/// A black or freeze interval starting or ending on one input (`gpumetrics-event`).
#[derive(Debug, Clone, PartialEq)]
pub struct EventRecord {
    /// `black` or `freeze`.
    pub event: String,
    /// `start` or `end`.
    pub state: String,
    /// The input it was seen on: `dist` or `ref`.
    pub input: String,
    /// Running time (ns) of the interval's first frame (`start`), or of the first frame
    /// after it (`end`; at EOS, where the last frame ends).
    pub running_time: u64,
    /// `end`: the interval's length (ns).
    pub duration: Option<u64>,
}

impl EventRecord {
    /// The record of an engine event.
    pub fn of(e: &gpumetrics_engine::events::Event) -> EventRecord {
        EventRecord {
            event: e.kind.into(),
            state: e.state.name().into(),
            input: e.input.name().into(),
            running_time: e.running_time,
            duration: e.duration,
        }
    }

    pub fn to_structure(&self) -> gst::Structure {
        let mut s = gst::Structure::builder(EVENT_MESSAGE_NAME)
            .field("event", &self.event)
            .field("state", &self.state)
            .field("input", &self.input)
            .field(RUNNING_TIME_FIELD, self.running_time)
            .build();
        if let Some(d) = self.duration {
            s.set(DURATION_FIELD, d);
        }
        s
    }

    pub fn from_structure(s: &gst::StructureRef) -> Result<Self, ParseError> {
        let err = |f: &str, e: &dyn std::fmt::Display| {
            ParseError(format!("{}: field `{f}`: {e}", s.name()))
        };
        Ok(EventRecord {
            event: s.get("event").map_err(|e| err("event", &e))?,
            state: s.get("state").map_err(|e| err("state", &e))?,
            input: s.get("input").map_err(|e| err("input", &e))?,
            running_time: s
                .get(RUNNING_TIME_FIELD)
                .map_err(|e| err(RUNNING_TIME_FIELD, &e))?,
            duration: s.get_optional(DURATION_FIELD).ok().flatten(),
        })
    }

    /// Reads a `gpumetrics-event` element message; `None` for any other message.
    pub fn from_message(msg: &gst::MessageRef) -> Option<Self> {
        element_structure(msg, EVENT_MESSAGE_NAME).and_then(|s| Self::from_structure(s).ok())
    }
}

/// Where `align=auto` is (`gpumetrics-align`): posted when the state changes, and every
/// second of running time while searching or locked (with the confidence then).
#[derive(Debug, Clone, PartialEq)]
pub struct AlignRecord {
    /// `searching`, `locked` or `lost`.
    pub state: String,
    /// Distorted minus reference running time (ns) of the pairs: the lock's, the lost one,
    /// or while searching the best candidate so far (none before the first try).
    pub offset: Option<i64>,
    /// `offset` in frames (rounded).
    pub offset_frames: Option<i64>,
    /// 0..1: how much better the offset fits the pictures than the others.
    pub confidence: f64,
    /// Running time (distorted input) of the frame that decided it.
    pub running_time: u64,
    /// Locks after the first one, so far.
    pub relocks: u64,
}

impl AlignRecord {
    /// The record of an engine change.
    pub fn of(c: &gpumetrics_engine::align::Change) -> AlignRecord {
        AlignRecord {
            state: c.state.name().into(),
            offset: c.offset,
            offset_frames: c.offset_frames,
            confidence: c.confidence,
            running_time: c.running_time,
            relocks: c.relocks,
        }
    }

    pub fn to_structure(&self) -> gst::Structure {
        let mut s = gst::Structure::builder(ALIGN_MESSAGE_NAME)
            .field("state", &self.state)
            .field("confidence", self.confidence)
            .field(RUNNING_TIME_FIELD, self.running_time)
            .field("relocks", self.relocks)
            .build();
        if let Some(o) = self.offset {
            s.set("offset", o);
        }
        if let Some(o) = self.offset_frames {
            s.set("offset-frames", o);
        }
        s
    }

    pub fn from_structure(s: &gst::StructureRef) -> Result<Self, ParseError> {
        let err = |f: &str, e: &dyn std::fmt::Display| {
            ParseError(format!("{}: field `{f}`: {e}", s.name()))
        };
        Ok(AlignRecord {
            state: s.get("state").map_err(|e| err("state", &e))?,
            offset: s.get_optional("offset").ok().flatten(),
            offset_frames: s.get_optional("offset-frames").ok().flatten(),
            confidence: s.get("confidence").map_err(|e| err("confidence", &e))?,
            running_time: s
                .get(RUNNING_TIME_FIELD)
                .map_err(|e| err(RUNNING_TIME_FIELD, &e))?,
            relocks: s.get("relocks").map_err(|e| err("relocks", &e))?,
        })
    }

    /// Reads a `gpumetrics-align` element message; `None` for any other message.
    pub fn from_message(msg: &gst::MessageRef) -> Option<Self> {
        element_structure(msg, ALIGN_MESSAGE_NAME).and_then(|s| Self::from_structure(s).ok())
    }
}

/// Time in alert of one rule, over a run or a window.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AlertCount {
    /// The rule as written in `alerts`.
    pub rule: String,
    /// Times it was raised.
    pub episodes: u64,
    /// Seconds of running time it was raised for.
    pub seconds: f64,
}

impl AlertCount {
    fn to_structure(&self) -> gst::Structure {
        gst::Structure::builder("alert")
            .field("rule", &self.rule)
            .field("episodes", self.episodes)
            .field("seconds", self.seconds)
            .build()
    }

    fn from_structure(s: &gst::StructureRef) -> Result<Self, ParseError> {
        let e = |f: &str, e: &dyn std::fmt::Display| ParseError(format!("alert: field `{f}`: {e}"));
        Ok(AlertCount {
            rule: s.get::<String>("rule").map_err(|x| e("rule", &x))?,
            episodes: s.get::<u64>("episodes").map_err(|x| e("episodes", &x))?,
            seconds: s.get::<f64>("seconds").map_err(|x| e("seconds", &x))?,
        })
    }
}

impl Summary {
    pub fn field(&self, name: &str) -> Option<&FieldStats> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, s)| s)
    }

    /// The values a named set reports under names of their own, from the statistics of
    /// its fields (`aom-apsnr-y`: the `pooled` of `aom-psnr-y`, libvmaf's APSNR), for the
    /// fields this summary has.
    /// Each as `(name, field, value)`: the field it comes from says where a CSV gives it.
    pub fn named_values(&self) -> Vec<(&'static str, &'static str, f64)> {
        gpumetrics_engine::metric::summary_values()
            .filter_map(|(name, field, stat)| {
                let v = self
                    .field(field)?
                    .entries()
                    .into_iter()
                    .find(|(k, _)| *k == stat)?
                    .1;
                Some((name, field, v))
            })
            .collect()
    }

    pub fn to_structure(&self) -> gst::Structure {
        let mut s = gst::Structure::new_empty(SUMMARY_MESSAGE_NAME);
        self.write_into(&mut s);
        s
    }

    /// The summary's fields, appended to `s` (a window's message has them too).
    fn write_into(&self, s: &mut gst::StructureRef) {
        s.set("frames", self.frames);
        s.set("unmatched-ref", self.unmatched_ref);
        s.set("unmatched-dist", self.unmatched_dist);
        s.set("skipped", self.skipped);
        if self.unaligned > 0 {
            s.set("unaligned", self.unaligned);
        }
        if !self.decode.is_empty() {
            for (name, n) in self.decode.entries() {
                s.set(name, n);
            }
        }
        for (name, stats) in &self.fields {
            let mut sub = gst::Structure::new_empty(name.as_str());
            for (k, v) in stats.entries() {
                sub.set(k, v);
            }
            s.set(name.as_str(), sub);
        }
        for (name, _, v) in self.named_values() {
            s.set(name, v);
        }
        if !self.alerts.is_empty() {
            s.set(
                "alerts",
                gst::Array::new(self.alerts.iter().map(|a| a.to_structure())),
            );
        }
        if !self.events.is_empty() {
            s.set(
                "events",
                gst::Array::new(self.events.iter().map(|a| a.to_structure())),
            );
        }
    }

    pub fn from_structure(s: &gst::StructureRef) -> Result<Self, ParseError> {
        let count = |f: &str| {
            s.get::<u64>(f)
                .map_err(|e| ParseError(format!("{}: field `{f}`: {e}", s.name())))
        };
        let mut fields = Vec::new();
        for (name, value) in s.iter() {
            if let Ok(sub) = value.get::<gst::Structure>() {
                fields.push((name.as_str().to_string(), field_stats_from_structure(&sub)?));
            }
        }
        let mut alerts = Vec::new();
        if let Ok(list) = s.get::<gst::Array>("alerts") {
            for v in list.iter() {
                let a = v
                    .get::<gst::Structure>()
                    .map_err(|e| ParseError(format!("{}: field `alerts`: {e}", s.name())))?;
                alerts.push(AlertCount::from_structure(&a)?);
            }
        }
        let mut events = Vec::new();
        if let Ok(list) = s.get::<gst::Array>("events") {
            for v in list.iter() {
                let a = v
                    .get::<gst::Structure>()
                    .map_err(|e| ParseError(format!("{}: field `events`: {e}", s.name())))?;
                events.push(EventCount::from_structure(&a)?);
            }
        }
        let optional = |f: &str| s.get_optional::<u64>(f).ok().flatten().unwrap_or(0);
        let decode = DecodeCounts {
            warnings: [
                optional("decode-warnings-ref"),
                optional("decode-warnings-dist"),
            ],
            corrupted: [optional("corrupted-ref"), optional("corrupted-dist")],
        };
        Ok(Summary {
            events,
            decode,
            frames: count("frames")?,
            unmatched_ref: count("unmatched-ref")?,
            unmatched_dist: count("unmatched-dist")?,
            skipped: optional("skipped"),
            unaligned: optional("unaligned"),
            fields,
            alerts,
        })
    }

    /// Reads a `gpumetrics-summary` element message; `None` for any other message.
    pub fn from_message(msg: &gst::MessageRef) -> Option<Self> {
        match msg.view() {
            gst::MessageView::Element(e) => {
                let s = e.structure()?;
                if s.name() == SUMMARY_MESSAGE_NAME {
                    Self::from_structure(s).ok()
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    /// An element message carrying this summary, posted by `src`.
    pub fn to_message(&self, src: &impl glib::prelude::IsA<gst::Object>) -> gst::Message {
        gst::message::Element::builder(self.to_structure())
            .src(src)
            .build()
    }
}

/// The statistics of one tumbling window `[start, end)` of running time (`window`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Window {
    /// Running time where the window starts (ns, a multiple of `window`).
    pub start: u64,
    /// Running time where it ends (ns, `start + window`).
    pub end: u64,
    /// What the window holds, in the summary's layout.
    pub stats: Summary,
}

impl Window {
    pub fn to_structure(&self) -> gst::Structure {
        let mut s = gst::Structure::builder(WINDOW_MESSAGE_NAME)
            .field("start", self.start)
            .field("end", self.end)
            .build();
        self.stats.write_into(&mut s);
        s
    }

    pub fn from_structure(s: &gst::StructureRef) -> Result<Self, ParseError> {
        let time = |f: &str| {
            s.get::<u64>(f)
                .map_err(|e| ParseError(format!("{}: field `{f}`: {e}", s.name())))
        };
        Ok(Window {
            start: time("start")?,
            end: time("end")?,
            stats: Summary::from_structure(s)?,
        })
    }

    /// Reads a `gpumetrics-window` element message; `None` for any other message.
    pub fn from_message(msg: &gst::MessageRef) -> Option<Self> {
        element_structure(msg, WINDOW_MESSAGE_NAME).and_then(|s| Self::from_structure(s).ok())
    }
}

/// Whether an alert rule went up or down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlertState {
    Raised,
    Cleared,
}

impl AlertState {
    pub fn as_str(self) -> &'static str {
        match self {
            AlertState::Raised => "raised",
            AlertState::Cleared => "cleared",
        }
    }
}

/// An alert rule raised or cleared (`gpumetrics-alert`).
#[derive(Debug, Clone, PartialEq)]
pub struct AlertChange {
    /// The rule as written in `alerts`.
    pub rule: String,
    pub field: String,
    pub state: AlertState,
    /// The value of the pair that changed the state.
    pub value: f64,
    /// Running time of that pair (ns).
    pub running_time: u64,
    /// Cleared: the running time it was raised at.
    pub since: Option<u64>,
    /// Cleared: the worst value while raised.
    pub worst: Option<f64>,
}

impl AlertChange {
    pub fn to_structure(&self) -> gst::Structure {
        let mut s = gst::Structure::builder(ALERT_MESSAGE_NAME)
            .field("rule", &self.rule)
            .field("field", &self.field)
            .field("state", self.state.as_str())
            .field("value", self.value)
            .field("running-time", self.running_time)
            .build();
        if let Some(since) = self.since {
            s.set("since", since);
        }
        if let Some(worst) = self.worst {
            s.set("worst", worst);
        }
        s
    }

    pub fn from_structure(s: &gst::StructureRef) -> Result<Self, ParseError> {
        let err = |f: &str, e: &dyn std::fmt::Display| {
            ParseError(format!("{}: field `{f}`: {e}", s.name()))
        };
        let state = match s
            .get::<String>("state")
            .map_err(|e| err("state", &e))?
            .as_str()
        {
            "raised" => AlertState::Raised,
            "cleared" => AlertState::Cleared,
            other => return Err(err("state", &other)),
        };
        Ok(AlertChange {
            rule: s.get("rule").map_err(|e| err("rule", &e))?,
            field: s.get("field").map_err(|e| err("field", &e))?,
            state,
            value: s.get("value").map_err(|e| err("value", &e))?,
            running_time: s.get("running-time").map_err(|e| err("running-time", &e))?,
            since: s.get_optional("since").ok().flatten(),
            worst: s.get_optional("worst").ok().flatten(),
        })
    }

    /// Reads a `gpumetrics-alert` element message; `None` for any other message.
    pub fn from_message(msg: &gst::MessageRef) -> Option<Self> {
        element_structure(msg, ALERT_MESSAGE_NAME).and_then(|s| Self::from_structure(s).ok())
    }
}

/// The structure of an element message named `name`.
fn element_structure<'a>(msg: &'a gst::MessageRef, name: &str) -> Option<&'a gst::StructureRef> {
    match msg.view() {
        gst::MessageView::Element(e) => e.structure().filter(|s| s.name() == name),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn init() {
        gst::init().unwrap();
    }

    fn field(name: &str) -> &'static Field {
        gpumetrics_engine::metric::field(name).unwrap()
    }

    #[test]
    fn frame_scores_roundtrip_with_inf() {
        init();
        let f = FrameScores {
            frame: 7,
            pts: Some(gst::ClockTime::from_mseconds(40)),
            running_time: Some(gst::ClockTime::from_mseconds(40)),
            duration: None,
            scores: vec![
                (field("psnr-y"), 41.5),
                (field("psnr-u"), f64::INFINITY),
                (field("mse-y"), 0.25),
            ],
        };
        let s = f.to_structure(FRAME_MESSAGE_NAME);
        assert_eq!(s.get::<u64>("frame").unwrap(), 7);
        assert_eq!(s.get::<f64>("psnr-u").unwrap(), f64::INFINITY);
        let back = FrameScores::from_structure(&s).unwrap();
        assert_eq!(back, f);
        assert_eq!(back.get("mse-y"), Some(0.25));
        assert_eq!(back.get("nope"), None);
        assert_eq!(back.value(field("psnr-u")), Some(f64::INFINITY));
        // A double that names no registry field is not a score.
        let mut s = s;
        s.set("no-such-field", 1.0f64);
        assert_eq!(FrameScores::from_structure(&s).unwrap(), f);
    }

    #[test]
    fn align_records_roundtrip_and_searching_may_have_no_offset() {
        init();
        let locked = AlignRecord {
            state: "locked".into(),
            offset: Some(-1_300_000_000),
            offset_frames: Some(-39),
            confidence: 0.97,
            running_time: 2_000_000_000,
            relocks: 2,
        };
        let s = locked.to_structure();
        assert_eq!(s.name(), ALIGN_MESSAGE_NAME);
        assert_eq!(s.get::<i64>("offset").unwrap(), -1_300_000_000);
        assert_eq!(AlignRecord::from_structure(&s).unwrap(), locked);
        let searching = AlignRecord {
            state: "searching".into(),
            offset: None,
            offset_frames: None,
            confidence: 0.0,
            relocks: 0,
            ..locked
        };
        let s = searching.to_structure();
        assert!(!s.has_field("offset"));
        assert_eq!(AlignRecord::from_structure(&s).unwrap(), searching);
        // The summary's `unaligned` only when there were such frames.
        let summary = Summary {
            unaligned: 5,
            ..Summary::default()
        };
        assert_eq!(
            Summary::from_structure(&summary.to_structure()).unwrap(),
            summary
        );
        assert!(!Summary::default().to_structure().has_field("unaligned"));
    }

    #[test]
    fn a_record_of_the_engines_scores_has_the_registrys_fields() {
        let mut scores = Scores::new();
        scores.push("psnr-y", 30.0);
        scores.push("ssim", 0.5);
        let r = FrameScores::of_scores(2, None, None, None, &scores);
        assert_eq!(r.frame, 2);
        let names: Vec<&str> = r.fields().map(|f| f.name).collect();
        assert_eq!(names, ["psnr-y", "ssim"]);
        assert_eq!(r.scores[1].0, field("ssim"));
        assert_eq!(r.scores[1].0.decimals, 5);
    }

    #[test]
    fn summary_roundtrip() {
        init();
        let st = FieldStats {
            mean: 30.0,
            min: 20.0,
            max: 40.0,
            stddev: 5.0,
            harmonic_mean: Some(29.0),
            pooled: Some(28.5),
            p1: 20.0,
            p5: 21.0,
            p50: 30.0,
            p95: 39.0,
            p99: 40.0,
        };
        let sum = Summary {
            frames: 10,
            unmatched_ref: 1,
            unmatched_dist: 2,
            skipped: 3,
            unaligned: 0,
            decode: DecodeCounts {
                warnings: [4, 0],
                corrupted: [0, 5],
            },
            alerts: vec![AlertCount {
                rule: "vmaf<70:2s".into(),
                episodes: 2,
                seconds: 3.5,
            }],
            events: vec![EventCount {
                event: "black".into(),
                input: "ref".into(),
                intervals: 2,
                seconds: 4.8,
            }],
            fields: vec![
                ("psnr-y".into(), st),
                (
                    "psnr-u".into(),
                    FieldStats {
                        harmonic_mean: None,
                        ..st
                    },
                ),
            ],
        };
        let s = sum.to_structure();
        assert_eq!(s.name(), SUMMARY_MESSAGE_NAME);
        let sub = s.get::<gst::Structure>("psnr-y").unwrap();
        assert_eq!(sub.get::<f64>("p95").unwrap(), 39.0);
        assert!(
            !s.get::<gst::Structure>("psnr-u")
                .unwrap()
                .has_field("harmonic-mean")
        );
        assert_eq!(Summary::from_structure(&s).unwrap(), sum);
        for duration in [None, Some(2_400_000_000)] {
            let e = EventRecord {
                event: "freeze".into(),
                state: if duration.is_some() { "end" } else { "start" }.into(),
                input: "dist".into(),
                running_time: 40_000_000,
                duration,
            };
            let es = e.to_structure();
            assert_eq!(es.name(), EVENT_MESSAGE_NAME);
            assert_eq!(es.has_field("duration"), duration.is_some());
            assert_eq!(EventRecord::from_structure(&es).unwrap(), e);
        }
        let w = Window {
            start: 1_000_000_000,
            end: 2_000_000_000,
            stats: sum.clone(),
        };
        let ws = w.to_structure();
        assert_eq!(ws.name(), WINDOW_MESSAGE_NAME);
        assert_eq!(ws.get::<u64>("skipped").unwrap(), 3);
        assert_eq!(Window::from_structure(&ws).unwrap(), w);
        let a = AlertChange {
            rule: "vmaf<70:2s".into(),
            field: "vmaf".into(),
            state: AlertState::Cleared,
            value: 80.0,
            running_time: 5,
            since: Some(2),
            worst: Some(40.0),
        };
        assert_eq!(AlertChange::from_structure(&a.to_structure()).unwrap(), a);
    }

    #[test]
    fn frame_scores_rejects_foreign_structure() {
        init();
        let s = gst::Structure::builder("other").field("x", 1.0f64).build();
        assert!(FrameScores::from_structure(&s).is_err());
    }
}
