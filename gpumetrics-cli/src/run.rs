// SPDX-License-Identifier: MPL-2.0
//! Runs the built pipeline to the end: takes the per-pair, window, event, alert and summary
//! records from the elements' subscriptions (the bus is watched for errors, warnings and
//! EOS), feeds the progress display and the record writer, prints windows,
//! black/freeze intervals and alert changes as they arrive, and turns Ctrl-C into an orderly end (the gates send EOS, the
//! element posts the last window and the summary of what was measured). A pipeline that
//! does not preroll is live: the display switches to running time instead of an ETA.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use gst::prelude::*;
use gstgpumetrics::message::{EventRecord, FrameScores, Summary, Window};
use gstgpumetrics::{GpuMetrics, Output};

use crate::monitor;
use crate::output::{self, RecordSink};
#[cfg(test)]
use crate::pipeline::Built;
use crate::progress::Progress;

/// What a run measured.
pub struct Outcome {
    /// Per-pair records, when asked to keep them (for the plot and the per-frame table).
    pub records: Vec<FrameScores>,
    pub summary: Summary,
    /// The black and freeze intervals' starts and ends, in the order the element posted them.
    pub events: Vec<EventRecord>,
    /// The element's `memory-stats` at the end.
    pub memory_stats: Option<gst::Structure>,
    /// Ended by Ctrl-C.
    pub interrupted: bool,
}

/// What the run prints as the element's windows and alerts arrive.
pub struct Report {
    /// The fields whose means a window line shows ([`monitor::main_fields`]).
    pub fields: Vec<String>,
    /// What a window counts: `pair`, or `frame` for one input measured alone.
    pub unit: &'static str,
    /// Window lines go to stdout (with the summary table); else to stderr.
    pub windows_to_stdout: bool,
    /// Alert rules are set: the element's warning for a raised alert is left out (its
    /// `ALERT raised` line says it).
    pub alerts: bool,
    /// Added to the element's pair index to give the reference's frame number (the
    /// reference frames a negative offset dropped), so that records count the input's
    /// frames.
    pub frame_base: u64,
    /// `--map NAME:DIR`: where the maps go.
    pub map_dir: Option<std::path::PathBuf>,
}

impl Report {
    fn window(&self, w: &Window, progress: &mut Progress) {
        let line = monitor::window_line(w, &self.fields, self.unit);
        if self.windows_to_stdout {
            progress.out(&line);
        } else {
            progress.note(&line);
        }
        progress.window(line);
    }
}

/// A record held back ([`run_elements`]), with the index of its element.
enum Held {
    Frame(usize, FrameScores),
    Event(usize, EventRecord),
}

/// Writes the records held back, in the order they came.
fn write_held(sink: &mut RecordSink, held: Vec<Held>) -> Result<()> {
    for h in held {
        match h {
            Held::Frame(which, rec) => sink.frame(which, &rec),
            Held::Event(which, e) => sink.event(which, &e),
        }
        .context("writing a per-frame record")?;
    }
    Ok(())
}

/// How long an interrupted run may take to drain before the pipeline is stopped hard.
const DRAIN_GRACE: Duration = Duration::from_secs(10);

/// Sets `pipeline` PLAYING, through PAUSED: whether it is live (a live source answers
/// NO_PREROLL in PAUSED: it produces data only when playing).
pub fn start(pipeline: &gst::Pipeline) -> Result<bool> {
    let cannot_start = |_| {
        // The reason is on the bus.
        let msg = pipeline
            .bus()
            .and_then(|bus| bus.pop_filtered(&[gst::MessageType::Error]))
            .and_then(|m| match m.view() {
                gst::MessageView::Error(e) => Some(crate::advice::error_text(e)),
                _ => None,
            });
        anyhow!(
            "cannot start the pipeline: {}",
            msg.unwrap_or_else(|| "see GST_DEBUG=3 for details".into())
        )
    };
    let paused = pipeline
        .set_state(gst::State::Paused)
        .map_err(cannot_start)?;
    pipeline
        .set_state(gst::State::Playing)
        .map_err(cannot_start)?;
    Ok(paused == gst::StateChangeSuccess::NoPreroll)
}

/// Runs a pipeline of one pair ([`crate::pipeline::build`]): its outcome. The command runs
/// every pipeline as [`run_elements`]; this is the tests' shorter way in.
#[cfg(test)]
pub fn run(
    built: &Built,
    stop: &Arc<AtomicBool>,
    sink: &mut RecordSink,
    progress: &mut Progress,
    keep_records: bool,
    report: &Report,
    verbose: bool,
) -> Result<Outcome> {
    let elements = std::slice::from_ref(&built.element);
    let mut outcomes = run_elements(
        &built.pipeline,
        elements,
        stop,
        sink,
        progress,
        keep_records,
        report,
        verbose,
    )?;
    Ok(outcomes.remove(0))
}

/// What the run has taken from the elements' records so far.
struct Taken {
    /// Per element: its records, when asked to keep them.
    records: Vec<Vec<FrameScores>>,
    /// Per element: its events.
    events: Vec<Vec<EventRecord>>,
    /// Per element: its latest summary.
    summaries: Vec<Option<Summary>>,
    /// Pairs measured, over all elements.
    pairs: u64,
    /// With several elements the records are held until each has measured a pair (or the
    /// run ends): a distorted file whose raw format differs from the reference's fails at
    /// its first pair and the run is made again with it converted (see `measure`); records
    /// written meanwhile for the other files would be written twice.
    held: Option<Vec<Held>>,
    /// Per element: it has measured a pair.
    started: Vec<bool>,
    keep_records: bool,
    /// The live alignment's state and offset printed last.
    aligned: Option<(String, Option<i64>)>,
}

impl Taken {
    fn new(n: usize, keep_records: bool) -> Taken {
        Taken {
            records: vec![Vec::new(); n],
            events: vec![Vec::new(); n],
            summaries: vec![None; n],
            pairs: 0,
            held: (n > 1).then(Vec::new),
            started: vec![false; n],
            keep_records,
            aligned: None,
        }
    }

    /// Writes, prints and keeps what element `which` handed over. A write error (a full
    /// disk, a closed pipe) is returned, so that the run ends and the pipeline is stopped
    /// before the error is reported.
    fn take(
        &mut self,
        which: usize,
        output: Output,
        sink: &mut RecordSink,
        progress: &mut Progress,
        report: &Report,
    ) -> Result<()> {
        let written = |r: std::io::Result<()>, what: &str| {
            r.map_err(|e| anyhow::Error::new(e).context(format!("writing {what}")))
        };
        match output {
            Output::Frame(mut rec) => {
                rec.frame += report.frame_base;
                self.started[which] = true;
                match &mut self.held {
                    Some(h) => {
                        h.push(Held::Frame(which, rec.clone()));
                        if self.started.iter().all(|s| *s) {
                            write_held(sink, self.held.take().unwrap_or_default())?;
                        }
                    }
                    None => written(sink.frame(which, &rec), "a per-frame record")?,
                }
                self.pairs += 1;
                let running_time = rec.running_time.map(|t| t.nseconds());
                if self.keep_records {
                    self.records[which].push(rec);
                }
                progress.update(self.pairs, running_time);
            }
            Output::Window(w) => {
                written(sink.window(which, &w), "a window record")?;
                report.window(&w, progress);
            }
            Output::Event(e) => {
                match &mut self.held {
                    Some(h) => h.push(Held::Event(which, e.clone())),
                    None => written(sink.event(which, &e), "an event record")?,
                }
                progress.note(&output::event_line(&e));
                self.events[which].push(e);
            }
            Output::Alert(a) => progress.note(&monitor::alert_line(&a)),
            Output::Align(a) => {
                written(sink.align(which, &a), "an alignment record")?;
                if let Some(line) = monitor::align_line(&a, &mut self.aligned) {
                    progress.note(&line);
                }
            }
            Output::Summary(s) => self.summaries[which] = Some(s),
            Output::Map(m) => {
                if let Some(dir) = &report.map_dir {
                    crate::maps::write(dir, m.kind, m.frame + report.frame_base, &m.map)?;
                }
            }
        }
        Ok(())
    }
}

/// How long the run waits for a bus message before it looks at the records again.
const POLL: gst::ClockTime = gst::ClockTime::from_mseconds(20);

/// Runs `pipeline` with one gpumetrics element per distorted input (`elements`, in the
/// order given; one, or several against one reference): the outcome of each, in that
/// order. The records (frames, windows, events, alert changes, summaries) come from each
/// element's subscription ([`GpuMetrics::subscribe_with`]), into one channel in the order
/// the elements make them; a record is written with the index of its element. The bus is
/// watched for the rest (errors, warnings, EOS).
#[allow(clippy::too_many_arguments)]
pub fn run_elements(
    pipeline: &gst::Pipeline,
    elements: &[gst::Element],
    stop: &Arc<AtomicBool>,
    sink: &mut RecordSink,
    progress: &mut Progress,
    keep_records: bool,
    report: &Report,
    verbose: bool,
) -> Result<Vec<Outcome>> {
    let bus = pipeline.bus().context("pipeline without bus")?;
    let feed = subscribe(elements)?;
    let live = start(pipeline)?;
    if live && !progress.is_live() {
        progress.set_live();
        progress.note(
            "live: the pipeline does not preroll; running until Ctrl-C or the end of the stream",
        );
    }
    let mut taken = Taken::new(elements.len(), keep_records);
    let mut interrupted_at: Option<Instant> = None;
    let mut hard_stopped = false;
    let result: Result<()> = 'run: loop {
        if stop.load(Ordering::SeqCst) && interrupted_at.is_none() {
            interrupted_at = Some(Instant::now());
            progress.note("interrupted: finishing the pairs in flight (Ctrl-C again to abort)");
        }
        if let Some(t) = interrupted_at
            && t.elapsed() > DRAIN_GRACE
            && !hard_stopped
        {
            // A decoder that never produces another buffer never meets the gate: end the
            // sources instead.
            hard_stopped = true;
            pipeline.send_event(gst::event::Eos::new());
        }
        let msg = bus.timed_pop(POLL);
        // The records come first: an element hands each over before it posts the messages
        // after it (its EOS included), so a message is seen after the records before it.
        while let Ok((which, output)) = feed.try_recv() {
            if let Err(e) = taken.take(which, output, sink, progress, report) {
                break 'run Err(e);
            }
        }
        let Some(msg) = msg else {
            continue;
        };
        // Which element posted it.
        let from = elements
            .iter()
            .position(|e| msg.src() == Some(e.upcast_ref::<gst::Object>()));
        match msg.view() {
            gst::MessageView::Warning(w)
                if report.alerts
                    && from.is_some()
                    && monitor::is_alert_warning(&w.error().to_string()) => {}
            gst::MessageView::Warning(w) => {
                let mut text = format!("warning: {}", w.error());
                if verbose && let Some(d) = w.debug() {
                    text.push_str(&format!(" ({d})"));
                }
                progress.note(&text);
            }
            gst::MessageView::Error(e) => break Err(anyhow!(crate::advice::error_text(e))),
            gst::MessageView::Eos(_) => {
                break write_held(sink, taken.held.take().unwrap_or_default());
            }
            _ => {}
        }
    };
    let memory_stats: Vec<_> = elements
        .iter()
        .map(|e| e.property::<Option<gst::Structure>>("memory-stats"))
        .collect();
    let _ = pipeline.set_state(gst::State::Null);
    progress.finish(taken.pairs);
    result?;
    let Some(summaries) = taken
        .summaries
        .into_iter()
        .collect::<Option<Vec<Summary>>>()
    else {
        bail!("the element posted no summary");
    };
    sink.summaries(&summaries)
        .context("writing the summary record")?;
    let interrupted = interrupted_at.is_some();
    Ok(summaries
        .into_iter()
        .zip(taken.records)
        .zip(taken.events)
        .zip(memory_stats)
        .map(|(((summary, records), events), memory_stats)| Outcome {
            records,
            summary,
            events,
            memory_stats,
            interrupted,
        })
        .collect())
}

/// One channel of the records of every element in `elements`, each with the element's
/// index, in the order the elements hand them over (subscribed before the pipeline
/// starts; unbounded, so that no record is lost and no streaming thread waits).
pub fn subscribe(elements: &[gst::Element]) -> Result<mpsc::Receiver<(usize, Output)>> {
    let (tx, rx) = mpsc::channel();
    for (which, element) in elements.iter().enumerate() {
        let element = element
            .downcast_ref::<GpuMetrics>()
            .with_context(|| format!("{} is no gpumetrics element", element.name()))?;
        let tx = tx.clone();
        element.subscribe_with(move |output| tx.send((which, output.clone())).is_ok());
    }
    Ok(rx)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One input measured alone (ref_sink unlinked), with a black interval the element
    /// finds (frames 2 to 4 of 8 black, `black-min-duration` 0.1 s): the run takes its
    /// start and end from the element's subscription, keeps them, writes them as event
    /// records among the frames, and the frames have the distorted fields only.
    #[test]
    fn one_input_runs_alone_and_keeps_the_event_records() {
        use crate::cli::FormatArg;
        use crate::gate::GateConfig;
        use crate::pipeline::{self, Decoding, PipelineConfig};
        use gpumetrics_engine::metric::OptionValue;

        gst::init().unwrap();
        gstgpumetrics::plugin_register_static().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let clip = dir.path().join("clip.y4m");
        // 64x48 4:2:0 at 10 fps: grey noise, but black (Y 16) from 0.2 s to 0.5 s.
        let (w, h) = (64usize, 48usize);
        let mut y4m = b"YUV4MPEG2 W64 H48 F10:1 Ip A1:1 C420jpeg\n".to_vec();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for n in 0..8 {
            y4m.extend_from_slice(b"FRAME\n");
            for _ in 0..w * h {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                y4m.push(if (2..5).contains(&n) {
                    16
                } else {
                    108 + (seed % 41) as u8
                });
            }
            y4m.extend(std::iter::repeat_n(128u8, w * h / 2));
        }
        std::fs::write(&clip, y4m).unwrap();

        let input =
            crate::input::discover(clip.to_str().unwrap(), "distorted", &Default::default())
                .unwrap();
        let min_duration = gpumetrics_engine::metric::options()
            .find(|o| o.name == "black-min-duration")
            .unwrap();
        let config = PipelineConfig {
            metrics: "siti+black".into(),
            backend: "cpu",
            device: 0,
            pairing: "timestamp",
            options: vec![(min_duration, OptionValue::Float(0.1))],
            map: None,
            map_video: None,
            scale_to: None,
            convert_to: None,
            decoding: [Decoding::Software, Decoding::Software],
            gates: [GateConfig {
                every: 1,
                ..Default::default()
            }; 2],
            monitoring: Default::default(),
        };
        let stop = Arc::new(AtomicBool::new(false));
        let built = pipeline::build(&config, [None, Some(&input)], stop.clone()).unwrap();
        assert!(built.gates[0].is_none());
        let element = built.element.clone();
        assert!(!element.static_pad("ref_sink").unwrap().is_linked());
        let path = dir.path().join("records.jsonl");
        let mut sink = RecordSink::open(
            FormatArg::Jsonl,
            output::destination(Some(&path)).unwrap(),
            crate::fields::of_run(gpumetrics_engine::metric::no_reference(), true),
            &(),
        )
        .unwrap();
        let mut progress = Progress::new(None, true, false, "frames");
        let report = Report {
            fields: vec!["si".into()],
            unit: "frame",
            windows_to_stdout: false,
            alerts: false,
            frame_base: 0,
            map_dir: None,
        };
        let outcome = run(
            &built,
            &stop,
            &mut sink,
            &mut progress,
            true,
            &report,
            false,
        )
        .unwrap();
        drop(sink);
        assert_eq!(outcome.summary.frames, 8, "{:?}", outcome.summary);
        let fields: Vec<&str> = outcome
            .summary
            .fields
            .iter()
            .map(|(n, _)| n.as_str())
            .collect();
        assert_eq!(fields, ["si", "ti", "black"]);
        assert_eq!(outcome.records.len(), 8);
        assert!(
            outcome
                .records
                .iter()
                .all(|r| r.fields().all(|f| !f.name.starts_with("ref-"))),
            "{:?}",
            outcome.records
        );
        let states: Vec<&str> = outcome.events.iter().map(|e| e.state.as_str()).collect();
        assert_eq!(states, ["start", "end"], "{:?}", outcome.events);
        assert_eq!(
            output::event_line(&outcome.events[1]),
            "black: 0.200–0.500 s (0.300 s) on dist"
        );
        // In the file: the event records among the frames, in the element's layout.
        let text = std::fs::read_to_string(&path).unwrap();
        let types: Vec<String> = text
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                v["type"].as_str().unwrap().to_string()
            })
            .collect();
        assert_eq!(types[0], "header", "{text}");
        assert_eq!(types.iter().filter(|t| *t == "frame").count(), 8, "{text}");
        assert_eq!(types.iter().filter(|t| *t == "event").count(), 2, "{text}");
        assert_eq!(types.last().map(String::as_str), Some("summary"), "{text}");
        let end = text.lines().find(|l| l.contains("\"end\"")).expect(&text);
        assert!(
            end.contains(
                "\"type\":\"event\",\"event\":\"black\",\"state\":\"end\",\
                          \"input\":\"dist\",\"running-time\":500000000,\"duration\":300000000"
            ),
            "{end}"
        );
    }

    #[test]
    fn a_pipeline_that_does_not_preroll_is_live() {
        gst::init().unwrap();
        for (launch, live) in [
            ("videotestsrc is-live=true ! fakesink", true),
            ("videotestsrc ! fakesink", false),
        ] {
            let p = gst::parse::launch(launch)
                .unwrap()
                .downcast::<gst::Pipeline>()
                .unwrap();
            assert_eq!(start(&p).unwrap(), live, "{launch}");
            p.set_state(gst::State::Null).unwrap();
        }
        let p = gst::parse::launch("filesrc location=/nonexistent/clip.mp4 ! fakesink")
            .unwrap()
            .downcast::<gst::Pipeline>()
            .unwrap();
        let e = start(&p).unwrap_err().to_string();
        assert!(
            e.contains("cannot start the pipeline: ") && e.contains("nonexistent"),
            "{e}"
        );
        p.set_state(gst::State::Null).unwrap();
    }
}
