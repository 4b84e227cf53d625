// SPDX-License-Identifier: MPL-2.0
//! Runs the built pipeline to the end: reads the per-pair, window, event, alert and summary
//! messages from the bus, feeds the progress display and the record writer, prints windows,
//! black/freeze intervals and alert changes as they arrive, and turns Ctrl-C into an orderly end (the gates send EOS, the
//! element posts the last window and the summary of what was measured). A pipeline that
//! does not preroll is live: the display switches to running time instead of an ETA.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use gst::prelude::*;
use gstgpumetrics::message::{AlertChange, EventRecord, FrameScores, Summary, Window};

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

fn error_text(e: &gst::message::Error) -> String {
    let src = e
        .src()
        .map(|s| s.path_string().to_string())
        .unwrap_or_default();
    match e.debug() {
        Some(d) if !d.is_empty() => format!("{} ({src}; {d})", e.error()),
        _ => format!("{} ({src})", e.error()),
    }
}

/// Sets `pipeline` PLAYING, through PAUSED: whether it is live (a live source answers
/// NO_PREROLL in PAUSED: it produces data only when playing).
fn start(pipeline: &gst::Pipeline) -> Result<bool> {
    let cannot_start = |_| {
        // The reason is on the bus.
        let msg = pipeline
            .bus()
            .and_then(|bus| bus.pop_filtered(&[gst::MessageType::Error]))
            .and_then(|m| match m.view() {
                gst::MessageView::Error(e) => Some(error_text(e)),
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

/// Runs `pipeline` with one gpumetrics element per distorted input (`elements`, in the
/// order given; one, or several against one reference): the outcome of each, in that
/// order. A record is written with the index of the element that posted it.
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
    let live = start(pipeline)?;
    if live && !progress.is_live() {
        progress.set_live();
        progress.note(
            "live: the pipeline does not preroll; running until Ctrl-C or the end of the stream",
        );
    }
    let n = elements.len();
    let mut records = vec![Vec::new(); n];
    let mut events = vec![Vec::new(); n];
    let mut pairs = 0u64;
    let mut summaries: Vec<Option<Summary>> = vec![None; n];
    // With several elements the records are held until each has measured a pair (or the
    // run ends): a distorted file whose raw format differs from the reference's fails at its
    // first pair and the run is made again with it converted (see `measure`); records
    // written meanwhile for the other files would be written twice.
    let mut held: Option<Vec<Held>> = (n > 1).then(Vec::new);
    let mut started = vec![false; n];
    let mut interrupted_at: Option<Instant> = None;
    let mut hard_stopped = false;
    let result: Result<()> = loop {
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
        let Some(msg) = bus.timed_pop(gst::ClockTime::from_mseconds(100)) else {
            continue;
        };
        // Which element posted it (one element: all its messages are its own).
        let from = elements
            .iter()
            .position(|e| msg.src() == Some(e.upcast_ref::<gst::Object>()));
        match msg.view() {
            gst::MessageView::Element(_) => {
                let Some(which) = from.or((n == 1).then_some(0)) else {
                    continue;
                };
                // A write error (a full disk, a closed pipe) ends the run here, so that the
                // pipeline is stopped below before the error is reported.
                let written = |r: std::io::Result<()>, what: &str| {
                    r.map_err(|e| anyhow::Error::new(e).context(format!("writing {what}")))
                };
                if let Some(mut rec) = FrameScores::from_message(&msg) {
                    rec.frame += report.frame_base;
                    started[which] = true;
                    let result = match &mut held {
                        Some(h) => {
                            h.push(Held::Frame(which, rec.clone()));
                            if started.iter().all(|s| *s) {
                                write_held(sink, held.take().unwrap_or_default())
                            } else {
                                Ok(())
                            }
                        }
                        None => written(sink.frame(which, &rec), "a per-frame record"),
                    };
                    if let Err(e) = result {
                        break Err(e);
                    }
                    pairs += 1;
                    let running_time = rec.running_time.map(|t| t.nseconds());
                    if keep_records {
                        records[which].push(rec);
                    }
                    progress.update(pairs, running_time);
                } else if let Some(w) = Window::from_message(&msg) {
                    if let Err(e) = written(sink.window(which, &w), "a window record") {
                        break Err(e);
                    }
                    report.window(&w, progress);
                } else if let Some(e) = EventRecord::from_message(&msg) {
                    let result = match &mut held {
                        Some(h) => {
                            h.push(Held::Event(which, e.clone()));
                            Ok(())
                        }
                        None => written(sink.event(which, &e), "an event record"),
                    };
                    if let Err(e) = result {
                        break Err(e);
                    }
                    progress.note(&output::event_line(&e));
                    events[which].push(e);
                } else if let Some(a) = AlertChange::from_message(&msg) {
                    progress.note(&monitor::alert_line(&a));
                } else if let Some(s) = Summary::from_message(&msg) {
                    summaries[which] = Some(s);
                }
            }
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
            gst::MessageView::Error(e) => break Err(anyhow!(error_text(e))),
            gst::MessageView::Eos(_) => break write_held(sink, held.take().unwrap_or_default()),
            _ => {}
        }
    };
    let memory_stats: Vec<_> = elements
        .iter()
        .map(|e| e.property::<Option<gst::Structure>>("memory-stats"))
        .collect();
    let _ = pipeline.set_state(gst::State::Null);
    progress.finish(pairs);
    result?;
    let Some(summaries) = summaries.into_iter().collect::<Option<Vec<Summary>>>() else {
        bail!("the element posted no summary");
    };
    sink.summaries(&summaries)
        .context("writing the summary record")?;
    let interrupted = interrupted_at.is_some();
    Ok(summaries
        .into_iter()
        .zip(records)
        .zip(events)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// One input measured alone (ref_sink unlinked), with `gpumetrics-event` messages from
    /// the element (posted here, from its dist_sink, as the element posts its detectors'):
    /// the run keeps them, writes them as event records among the frames, and the frames
    /// have the distorted fields only.
    #[test]
    fn one_input_runs_alone_and_keeps_the_event_records() {
        use crate::cli::FormatArg;
        use crate::gate::GateConfig;
        use crate::pipeline::{self, Decoding, PipelineConfig};
        use std::sync::atomic::AtomicU64;

        gst::init().unwrap();
        gstgpumetrics::plugin_register_static().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let clip = dir.path().join("clip.y4m");
        let launch = format!(
            "videotestsrc num-buffers=8 pattern=ball ! video/x-raw,format=I420,width=64,\
             height=48,framerate=10/1 ! y4menc ! filesink location={}",
            clip.display()
        );
        let p = gst::parse::launch(&launch)
            .unwrap()
            .downcast::<gst::Pipeline>()
            .unwrap();
        p.set_state(gst::State::Playing).unwrap();
        let bus = p.bus().unwrap();
        let done = bus.timed_pop_filtered(
            gst::ClockTime::from_seconds(30),
            &[gst::MessageType::Eos, gst::MessageType::Error],
        );
        assert!(matches!(done.unwrap().view(), gst::MessageView::Eos(_)));
        p.set_state(gst::State::Null).unwrap();

        let input =
            crate::input::discover(clip.to_str().unwrap(), "distorted", &Default::default())
                .unwrap();
        let config = PipelineConfig {
            metrics: "siti".into(),
            backend: "cpu",
            device: 0,
            pairing: "timestamp",
            options: Vec::new(),
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
        // A black interval from the 3rd frame (0.2 s) to the 6th (0.5 s).
        let seen = AtomicU64::new(0);
        element.static_pad("dist_sink").unwrap().add_probe(
            gst::PadProbeType::BUFFER,
            move |pad, _| {
                let n = seen.fetch_add(1, Ordering::SeqCst);
                let record = |state: &str, at: u64, duration| EventRecord {
                    event: "black".into(),
                    state: state.into(),
                    input: "dist".into(),
                    running_time: at,
                    duration,
                };
                let event = match n {
                    2 => Some(record("start", 200_000_000, None)),
                    5 => Some(record("end", 500_000_000, Some(300_000_000))),
                    _ => None,
                };
                if let (Some(e), Some(el)) = (event, pad.parent_element()) {
                    let msg = gst::message::Element::builder(e.to_structure())
                        .src(&el)
                        .build();
                    let _ = el.post_message(msg);
                }
                gst::PadProbeReturn::Ok
            },
        );
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
        assert_eq!(fields, ["si", "ti"]);
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
