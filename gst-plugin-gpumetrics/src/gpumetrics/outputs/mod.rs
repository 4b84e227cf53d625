// SPDX-License-Identifier: MPL-2.0
//! Where the scores go: every measured pair's record, every unmatched frame, the run's
//! pooled summary and the end of the run are handed to a list of [`Sink`]s, one file each:
//!
//! | sink | file | does |
//! |------|------|------|
//! | [`pool::Pool`] | `pool.rs` | pools the scores and counts the unmatched frames: makes the [`Summary`] the others receive |
//! | [`stats_file::StatsFile`] | `stats_file.rs` | `stats-file`: a line per record, the summary last |
//! | [`feed::Feed`] | `feed.rs` | [`crate::GpuMetrics::subscribe`]: each record, window, event, alert change and summary as a typed value |
//! | [`bus::Bus`] | `bus.rs` | the `gpumetrics` message per pair (`post-messages`), the `gpumetrics-summary` message |
//! | [`buffer_meta::BufferMeta`] | `buffer_meta.rs` | `GstGpuMetricsMeta` on the distorted buffer (`attach-meta`) |
//! | [`prometheus::Prometheus`] | `prometheus.rs` | `prometheus-address`: the element's series on the process's endpoint of that address |
//!
//! Besides the records, the outputs make two kinds of events from them, handed to every
//! sink too: complete tumbling windows (`window`, [`window::Windows`]) and alert changes
//! (`alerts`, [`crate::alerts`]). A window that a pair's running time completes reaches the
//! sinks before that pair's record; an alert change after it.
//!
//! A new output (an exporter) is one more file with a `Sink` and one line in
//! [`Outputs::new`]. The element calls the outputs without its state lock, so that a sink
//! may post messages (a bus sync handler may read properties).

mod buffer_meta;
mod bus;
mod feed;
mod pool;
mod prometheus;
mod stats_file;
mod window;

pub use prometheus::Channels;

use std::time::Instant;

pub(crate) use feed::subscribe;

use gpumetrics_engine::Scores;
use gpumetrics_engine::events::Events;
use gst::prelude::*;

use super::settings::Settings;
use crate::alerts::{self, Alerts};
use crate::message::{AlertChange, AlignRecord, EventRecord, FrameScores, Summary, Window};

/// What every sink call may use besides its own state.
pub(crate) struct Env<'a> {
    /// The element: messages are posted from it.
    pub element: &'a gst::Element,
    /// The properties as they are now (some, e.g. `post-messages`, change while playing).
    pub settings: &'a Settings,
}

/// A measured pair, as the sinks receive it.
pub(crate) struct Pair<'a> {
    /// The record as messages, meta and files carry it.
    pub record: &'a FrameScores,
    /// The same scores as the engine made them (field names from its registry).
    pub scores: &'a Scores,
    /// The distorted buffer, pushed on `src` once every sink has had it.
    pub buffer: &'a mut gst::Buffer,
    /// When the pair was taken from the inputs (its scores are ready now).
    pub arrived: Instant,
}

/// Which input a frame without a partner came on: the engine's one type for it.
pub(crate) use gpumetrics_engine::events::Input;

/// One output of the element. Errors are element errors: the element posts the first one
/// and stops measuring.
pub(crate) trait Sink: Send {
    /// A measured pair, in pair order, before its buffer leaves.
    fn record(&mut self, env: &Env<'_>, pair: &mut Pair<'_>) -> Result<(), gst::ErrorMessage>;

    /// A frame without a partner (counted, never compared).
    fn unmatched(&mut self, _side: Input) {}

    /// A matched pair that `subsample` left unscored.
    fn skipped(&mut self) {}

    /// `align=auto`: a distorted frame that passed while no offset was locked.
    fn unaligned(&mut self) {}

    /// `align=auto`: the alignment changed (or reports its progress), in order with the
    /// records.
    fn align(&mut self, _env: &Env<'_>, _align: &AlignRecord) -> Result<(), gst::ErrorMessage> {
        Ok(())
    }

    /// A complete tumbling window (`window`), in order, before the records after it.
    fn window(&mut self, _env: &Env<'_>, _window: &Window) -> Result<(), gst::ErrorMessage> {
        Ok(())
    }

    /// A black or freeze interval started or ended, after the record of the frame that
    /// decided it (an interval still open at EOS ends before the summary).
    fn event(&mut self, _env: &Env<'_>, _event: &EventRecord) -> Result<(), gst::ErrorMessage> {
        Ok(())
    }

    /// An alert rule raised or cleared, after the record of the pair that changed it.
    fn alert(&mut self, _env: &Env<'_>, _change: &AlertChange) -> Result<(), gst::ErrorMessage> {
        Ok(())
    }

    /// The run's summary: at EOS, or when the element stops before one; again at the
    /// next EOS after a flushing seek (pooled statistics continue across it).
    fn summary(&mut self, _env: &Env<'_>, _summary: &Summary) -> Result<(), gst::ErrorMessage> {
        Ok(())
    }

    /// The element stops: the run's summary as it stands (also when none was posted,
    /// e.g. no frame arrived); nothing reaches the sink after this.
    fn end(&mut self, _summary: &Summary) {}
}

/// The `event` of a stall's `gpumetrics-event` (the element's own interval, beside the
/// metrics' `black` and `freeze`).
pub(crate) const STALL_EVENT: &str = "stall";

/// The sinks of a run, in the order they receive everything.
pub(crate) struct Outputs {
    /// The pooled summary: first, so that the others receive what it has counted.
    pool: pool::Pool,
    /// `window`: the window being filled.
    windows: Option<window::Windows>,
    /// `alerts`: the rules' states.
    alerts: Alerts,
    /// The black and freeze intervals of the records' fields (the engine's detectors).
    events: Option<Events>,
    /// Running time where the last record's frame ends: where an open interval ends at EOS.
    last_end: Option<u64>,
    sinks: Vec<Box<dyn Sink>>,
    /// `prometheus-address`: where its endpoint listens.
    prometheus_bound: Option<std::net::SocketAddr>,
    /// What the inputs' decoders reported, for the summary.
    decode: crate::message::DecodeCounts,
}

impl Outputs {
    /// The outputs `settings` ask for, of `element`; an alert rule, opening the stats file
    /// or listening on `prometheus-address` can fail (the element's start fails with the
    /// error).
    pub(crate) fn new(
        settings: &Settings,
        element: &gst::Element,
    ) -> Result<Outputs, gst::ErrorMessage> {
        let rules = match &settings.alerts {
            Some(text) => alerts::parse(text, &settings.columns())
                .map_err(|e| gst::error_msg!(gst::LibraryError::Settings, ("{e}")))?,
            None => Vec::new(),
        };
        // Before the stats file, so that a bind error leaves no empty file behind.
        let prometheus = match &settings.prometheus_address {
            Some(address) => {
                let rules: Vec<&str> = rules.iter().map(|r| r.text.as_str()).collect();
                Some(prometheus::Prometheus::open(
                    address,
                    &element.name(),
                    settings.channel.as_deref(),
                    &settings.device_label(),
                    &rules,
                )?)
            }
            None => None,
        };
        let prometheus_bound = prometheus.as_ref().map(prometheus::Prometheus::bound);
        let mut sinks: Vec<Box<dyn Sink>> = Vec::new();
        if let Some(path) = &settings.stats_file {
            // Before the messages: a record is on disk when its message is posted.
            sinks.push(Box::new(stats_file::StatsFile::with_columns(
                path,
                settings.stats_format(),
                settings.columns(),
            )?));
        }
        if let Some(subscribers) = feed::subscribers(element) {
            // Before the messages: a subscriber has a record before any message after it.
            sinks.push(Box::new(feed::Feed(subscribers)));
        }
        sinks.push(Box::new(bus::Bus));
        sinks.push(Box::new(buffer_meta::BufferMeta));
        if let Some(p) = prometheus {
            sinks.push(Box::new(p));
        }
        let mut outputs = Outputs::with_sinks(sinks);
        outputs.prometheus_bound = prometheus_bound;
        // Both inputs: a run of one input has no `ref-` fields, and a detector without its
        // fields finds nothing.
        let events = Events::new(settings.metrics.set(), &settings.options, true).map_err(|e| {
            let text = settings.bounded(&e, e.to_string());
            gst::error_msg!(gst::LibraryError::Settings, ("{text}"))
        })?;
        outputs.events = (!events.is_empty()).then_some(events);
        outputs.alerts = Alerts::new(rules);
        outputs.windows = (settings.window > 0).then(|| window::Windows::new(settings.window));
        Ok(outputs)
    }

    fn with_sinks(sinks: Vec<Box<dyn Sink>>) -> Outputs {
        Outputs {
            pool: pool::Pool::default(),
            windows: None,
            alerts: Alerts::default(),
            events: None,
            last_end: None,
            sinks,
            prometheus_bound: None,
            decode: Default::default(),
        }
    }

    /// Where the `prometheus-address` endpoint listens (with port 0: the port the system
    /// chose); `None` without one.
    pub(crate) fn prometheus_bound(&self) -> Option<std::net::SocketAddr> {
        self.prometheus_bound
    }

    /// Hands `events` to every sink, in order; stops at the first error.
    fn publish(
        &mut self,
        env: &Env<'_>,
        events: Vec<gpumetrics_engine::events::Event>,
    ) -> Result<(), gst::ErrorMessage> {
        for e in events {
            let record = EventRecord::of(&e);
            self.all().try_for_each(|s| s.event(env, &record))?;
        }
        Ok(())
    }

    fn all(&mut self) -> impl Iterator<Item = &mut dyn Sink> {
        std::iter::once(&mut self.pool as &mut dyn Sink)
            .chain(self.sinks.iter_mut().map(|s| &mut **s as &mut dyn Sink))
    }

    /// Hands the windows an event at `t` completes to every sink; stops at the first error.
    fn advance(&mut self, env: &Env<'_>, t: Option<u64>) -> Result<(), gst::ErrorMessage> {
        let Some(windows) = &mut self.windows else {
            return Ok(());
        };
        let alerts = &mut self.alerts;
        for w in windows.advance(t, |end| alerts.close_window(end)) {
            self.all().try_for_each(|s| s.window(env, &w))?;
        }
        Ok(())
    }

    fn add_to_window(&mut self, event: window::Event<'_>) {
        if let Some(w) = &mut self.windows {
            w.add(event);
        }
    }

    /// Before a measured pair's record is made: the windows its running time `t` completes
    /// go to every sink, and with `window` a field whose value is that of a span so far
    /// (`cvvdp`: the JOD from the start of the sequence) becomes that of the current
    /// window's span up to this pair, the window's `pooled` as it would end here (issue
    /// 47: "since the start of the run or of the current window"): from the pairs' window
    /// terms, which the engine makes as if the sequence started at the window
    /// (`Engine::start_window`), the reference's result on the window's frames.
    pub(crate) fn prepare(
        &mut self,
        env: &Env<'_>,
        t: Option<u64>,
        scores: &mut gpumetrics_engine::Scores,
    ) -> Result<(), gst::ErrorMessage> {
        self.advance(env, t)?;
        if let Some(w) = &self.windows {
            let spans: Vec<(&'static str, f64)> = scores
                .pool_terms()
                .filter_map(|(field, _)| w.span_jod_with(field, scores).map(|v| (field, v)))
                .collect();
            for (field, v) in spans {
                scores.replace(field, v);
            }
        }
        Ok(())
    }

    /// Hands a measured pair to every sink, then the alert changes it makes; stops at the
    /// first error.
    pub(crate) fn record(
        &mut self,
        env: &Env<'_>,
        pair: &mut Pair<'_>,
    ) -> Result<(), gst::ErrorMessage> {
        let t = pair.record.running_time.map(gst::ClockTime::nseconds);
        // Rules on a field these inputs do not give are said at their first pair.
        for text in self
            .alerts
            .unproduced(pair.scores.iter().map(|(name, _)| name))
        {
            gst::warning!(super::CAT, obj = env.element, "{text}");
            gst::element_warning!(env.element, gst::LibraryError::Settings, ("{text}"));
        }
        self.advance(env, t)?;
        self.add_to_window(window::Event::Pair(pair.scores));
        self.all().try_for_each(|s| s.record(env, pair))?;
        if let (Some(events), Some(t)) = (&mut self.events, t) {
            let duration = pair.record.duration.map(gst::ClockTime::nseconds);
            let mut found = Vec::new();
            events.frame(pair.scores, t, duration, &mut found);
            self.last_end = Some(t.saturating_add(duration.unwrap_or(0)));
            self.publish(env, found)?;
        }
        let record = pair.record;
        for change in self.alerts.observe(t, |f| record.value(f)) {
            self.all().try_for_each(|s| s.alert(env, &change))?;
        }
        Ok(())
    }

    /// A frame without a partner at running time `t`.
    pub(crate) fn unmatched(
        &mut self,
        env: &Env<'_>,
        side: Input,
        t: Option<u64>,
    ) -> Result<(), gst::ErrorMessage> {
        self.advance(env, t)?;
        self.add_to_window(window::Event::Unmatched(side));
        self.all().for_each(|s| s.unmatched(side));
        Ok(())
    }

    /// An input stalled or resumed (`gpumetrics-event` `event=stall`): counted by the
    /// summary and Prometheus like the metrics' intervals.
    pub(crate) fn stall(
        &mut self,
        env: &Env<'_>,
        stall: &super::stall::StallEvent,
    ) -> Result<(), gst::ErrorMessage> {
        let record = EventRecord {
            event: STALL_EVENT.into(),
            state: if stall.end { "end" } else { "start" }.into(),
            input: stall.input.name().into(),
            running_time: stall.running_time,
            duration: stall.duration,
        };
        self.all().try_for_each(|s| s.event(env, &record))
    }

    /// `align=auto`: a distorted frame at running time `t` passed unmeasured, no offset
    /// being locked.
    pub(crate) fn unaligned(
        &mut self,
        env: &Env<'_>,
        t: Option<u64>,
    ) -> Result<(), gst::ErrorMessage> {
        self.advance(env, t)?;
        self.all().for_each(|s| s.unaligned());
        Ok(())
    }

    /// `align=auto`: an alignment change, in order with the records.
    pub(crate) fn align(
        &mut self,
        env: &Env<'_>,
        align: &AlignRecord,
    ) -> Result<(), gst::ErrorMessage> {
        self.all().try_for_each(|s| s.align(env, align))
    }

    /// A flushing seek: running time may start over, so the next event may open a window
    /// before the current one (otherwise a late event counts in the window it arrives in).
    pub(crate) fn flush(&mut self) {
        if let Some(w) = &mut self.windows {
            w.flushed();
        }
    }

    /// A matched pair at running time `t` that `subsample` left unscored; `scores`: what
    /// the engine gave it when it went through (a metric needs every frame): a span
    /// field's `pooled` (`cvvdp`) takes its terms, since the span's frames are all in it.
    pub(crate) fn skipped(
        &mut self,
        env: &Env<'_>,
        t: Option<u64>,
        scores: Option<&gpumetrics_engine::Scores>,
    ) -> Result<(), gst::ErrorMessage> {
        self.advance(env, t)?;
        self.add_to_window(window::Event::Skipped(scores));
        if let Some(s) = scores {
            self.pool.span_terms(s);
        }
        self.all().for_each(|s| s.skipped());
        Ok(())
    }

    /// What the inputs' decoders reported so far (the summary gives it).
    pub(crate) fn set_decode(&mut self, decode: crate::message::DecodeCounts) {
        self.decode = decode;
    }

    /// The summary of what the run measured so far.
    pub(crate) fn current_summary(&self) -> Summary {
        Summary {
            alerts: self.alerts.totals(),
            decode: self.decode,
            ..self.pool.summary()
        }
    }

    /// Makes the run's summary and hands it to every sink (each gets it, whatever the
    /// others return), after the last window; returns it with the first error.
    pub(crate) fn summary(&mut self, env: &Env<'_>) -> (Summary, Result<(), gst::ErrorMessage>) {
        // Intervals still open end where the last frame ends.
        let mut result = Ok(());
        if let (Some(events), Some(end)) = (&mut self.events, self.last_end) {
            let mut found = Vec::new();
            events.finish(end, &mut found);
            result = self.publish(env, found);
        }
        let alerts = &mut self.alerts;
        if let Some(w) = self
            .windows
            .as_mut()
            .and_then(|w| w.finish(|end| alerts.close_last_window(end)))
        {
            for s in self.all() {
                let r = s.window(env, &w);
                if result.is_ok() {
                    result = r;
                }
            }
        }
        let summary = self.current_summary();
        for s in self.all() {
            let r = s.summary(env, &summary);
            if result.is_ok() {
                result = r;
            }
        }
        (summary, result)
    }

    /// The element stops: every sink's [`Sink::end`].
    pub(crate) fn end(mut self) {
        let summary = self.current_summary();
        self.all().for_each(|s| s.end(&summary));
    }
}

#[cfg(test)]
mod tests {
    use gst::prelude::*;
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A sink that writes down what it receives.
    struct Log(Arc<Mutex<Vec<String>>>, &'static str);

    impl Sink for Log {
        fn record(&mut self, _: &Env<'_>, pair: &mut Pair<'_>) -> Result<(), gst::ErrorMessage> {
            self.0
                .lock()
                .unwrap()
                .push(format!("{} record {}", self.1, pair.record.frame));
            if self.1 == "failing" {
                return Err(gst::error_msg!(gst::ResourceError::Write, ("failed")));
            }
            Ok(())
        }
        fn unmatched(&mut self, side: Input) {
            self.0
                .lock()
                .unwrap()
                .push(format!("{} unmatched {side:?}", self.1));
        }
        fn summary(&mut self, _: &Env<'_>, s: &Summary) -> Result<(), gst::ErrorMessage> {
            self.0
                .lock()
                .unwrap()
                .push(format!("{} summary {}", self.1, s.frames));
            if self.1 == "failing" {
                return Err(gst::error_msg!(gst::ResourceError::Write, ("failed")));
            }
            Ok(())
        }
        fn end(&mut self, s: &Summary) {
            self.0
                .lock()
                .unwrap()
                .push(format!("{} end {}", self.1, s.unmatched_dist));
        }
    }

    pub(super) fn pair_of(frame: u64, psnr: f64) -> (FrameScores, Scores, gst::Buffer) {
        let mut scores = Scores::new();
        scores.push("psnr-y", psnr);
        let record = FrameScores::of_scores(
            frame,
            Some(gst::ClockTime::from_mseconds(40 * frame)),
            Some(gst::ClockTime::from_mseconds(40 * frame)),
            Some(gst::ClockTime::from_mseconds(40)),
            &scores,
        );
        (record, scores, gst::Buffer::with_size(8).unwrap())
    }

    #[test]
    fn every_sink_gets_everything_in_order_and_the_pool_makes_the_summary() {
        gst::init().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut outputs = Outputs::with_sinks(vec![
            Box::new(Log(log.clone(), "a")),
            Box::new(Log(log.clone(), "b")),
        ]);
        let element = gst::Bin::new().upcast::<gst::Element>();
        let settings = Settings::default();
        let env = Env {
            element: &element,
            settings: &settings,
        };
        for i in 0..2 {
            let (record, scores, mut buffer) = pair_of(i, 30.0 + i as f64);
            let mut pair = Pair {
                record: &record,
                scores: &scores,
                buffer: &mut buffer,
                arrived: Instant::now(),
            };
            outputs.record(&env, &mut pair).unwrap();
        }
        outputs.unmatched(&env, Input::Distorted, None).unwrap();
        let (summary, result) = outputs.summary(&env);
        result.unwrap();
        assert_eq!(
            (
                summary.frames,
                summary.unmatched_ref,
                summary.unmatched_dist
            ),
            (2, 0, 1)
        );
        assert_eq!(summary.field("psnr-y").unwrap().mean, 30.5);
        outputs.end();
        assert_eq!(
            *log.lock().unwrap(),
            [
                "a record 0",
                "b record 0",
                "a record 1",
                "b record 1",
                "a unmatched Distorted",
                "b unmatched Distorted",
                "a summary 2",
                "b summary 2",
                "a end 1",
                "b end 1"
            ]
        );
    }

    #[test]
    fn a_failing_record_stops_the_pair_but_every_sink_gets_the_summary() {
        gst::init().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut outputs = Outputs::with_sinks(vec![
            Box::new(Log(log.clone(), "failing")),
            Box::new(Log(log.clone(), "b")),
        ]);
        let element = gst::Bin::new().upcast::<gst::Element>();
        let settings = Settings::default();
        let env = Env {
            element: &element,
            settings: &settings,
        };
        let (record, scores, mut buffer) = pair_of(0, 30.0);
        let mut pair = Pair {
            record: &record,
            scores: &scores,
            buffer: &mut buffer,
            arrived: Instant::now(),
        };
        assert!(outputs.record(&env, &mut pair).is_err());
        let (_, result) = outputs.summary(&env);
        assert!(result.is_err());
        assert_eq!(
            *log.lock().unwrap(),
            ["failing record 0", "failing summary 1", "b summary 1"]
        );
    }
}
