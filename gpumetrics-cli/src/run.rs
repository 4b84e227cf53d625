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

pub fn run(
    built: &Built,
    stop: &Arc<AtomicBool>,
    sink: &mut RecordSink,
    progress: &mut Progress,
    keep_records: bool,
    report: &Report,
    verbose: bool,
) -> Result<Outcome> {
    let pipeline = &built.pipeline;
    let bus = pipeline.bus().context("pipeline without bus")?;
    let live = start(pipeline)?;
    if live && !progress.is_live() {
        progress.set_live();
        progress.note(
            "live: the pipeline does not preroll; running until Ctrl-C or the end of the stream",
        );
    }
    let element = built.element.upcast_ref::<gst::Object>();

    let mut records = Vec::new();
    let mut events = Vec::new();
    let mut pairs = 0u64;
    let mut summary = None;
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
        match msg.view() {
            gst::MessageView::Element(_) => {
                if let Some(rec) = FrameScores::from_message(&msg) {
                    sink.frame(&rec).context("writing a per-frame record")?;
                    pairs += 1;
                    let running_time = rec.running_time.map(|t| t.nseconds());
                    if keep_records {
                        records.push(rec);
                    }
                    progress.update(pairs, running_time);
                } else if let Some(w) = Window::from_message(&msg) {
                    sink.window(&w).context("writing a window record")?;
                    report.window(&w, progress);
                } else if let Some(e) = EventRecord::from_message(&msg) {
                    sink.event(&e).context("writing an event record")?;
                    progress.note(&output::event_line(&e));
                    events.push(e);
                } else if let Some(a) = AlertChange::from_message(&msg) {
                    progress.note(&monitor::alert_line(&a));
                } else if let Some(s) = Summary::from_message(&msg) {
                    summary = Some(s);
                }
            }
            gst::MessageView::Warning(w)
                if report.alerts
                    && msg.src() == Some(element)
                    && monitor::is_alert_warning(&w.error().to_string()) => {}
            gst::MessageView::Warning(w) => {
                let mut text = format!("warning: {}", w.error());
                if verbose && let Some(d) = w.debug() {
                    text.push_str(&format!(" ({d})"));
                }
                progress.note(&text);
            }
            gst::MessageView::Error(e) => break Err(anyhow!(error_text(e))),
            gst::MessageView::Eos(_) => break Ok(()),
            _ => {}
        }
    };
    let memory_stats = built
        .element
        .property::<Option<gst::Structure>>("memory-stats");
    let _ = pipeline.set_state(gst::State::Null);
    progress.finish(pairs);
    result?;
    let Some(summary) = summary else {
        bail!("the element posted no summary");
    };
    sink.summary(&summary)
        .context("writing the summary record")?;
    Ok(Outcome {
        records,
        summary,
        events,
        memory_stats,
        interrupted: interrupted_at.is_some(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
