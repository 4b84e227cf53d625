// SPDX-License-Identifier: MPL-2.0
//! Runs the built pipeline to the end: reads the per-pair and summary messages from the bus,
//! feeds the progress display and the record writer, and turns Ctrl-C into an orderly end
//! (the gates send EOS, the element posts the summary of what was measured).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use gst::prelude::*;
use gstgpumetrics::message::{FrameScores, Summary};

use crate::output::RecordSink;
use crate::pipeline::Built;
use crate::progress::Progress;

/// What a run measured.
pub struct Outcome {
    /// Per-pair records, when asked to keep them (for the plot and the per-frame table).
    pub records: Vec<FrameScores>,
    pub summary: Summary,
    /// The element's `memory-stats` at the end.
    pub memory_stats: Option<gst::Structure>,
    /// Ended by Ctrl-C.
    pub interrupted: bool,
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

pub fn run(
    built: &Built,
    stop: &Arc<AtomicBool>,
    sink: &mut RecordSink,
    progress: &mut Progress,
    keep_records: bool,
    verbose: bool,
) -> Result<Outcome> {
    let pipeline = &built.pipeline;
    let bus = pipeline.bus().context("pipeline without bus")?;
    pipeline.set_state(gst::State::Playing).map_err(|_| {
        // The reason is on the bus.
        let msg = bus
            .pop_filtered(&[gst::MessageType::Error])
            .and_then(|m| match m.view() {
                gst::MessageView::Error(e) => Some(error_text(e)),
                _ => None,
            });
        anyhow!(
            "cannot start the pipeline: {}",
            msg.unwrap_or_else(|| "see GST_DEBUG=3 for details".into())
        )
    })?;

    let mut records = Vec::new();
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
                    if keep_records {
                        records.push(rec);
                    }
                    progress.update(pairs);
                } else if let Some(s) = Summary::from_message(&msg) {
                    summary = Some(s);
                }
            }
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
        memory_stats,
        interrupted: interrupted_at.is_some(),
    })
}
