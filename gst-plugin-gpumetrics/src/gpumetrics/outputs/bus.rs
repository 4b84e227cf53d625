// SPDX-License-Identifier: MPL-2.0
//! Bus messages: the `gpumetrics` element message per pair (with `post-messages`), the
//! `gpumetrics-window` message per window, the `gpumetrics-event` message per black or freeze
//! interval start and end, the `gpumetrics-alert` message per alert change
//! (with an element warning when a rule is raised, so that gst-launch users see it) and the
//! `gpumetrics-summary` message (always).

use gst::prelude::*;

use super::{Env, Pair, Sink};
use crate::gpumetrics::CAT;
use crate::message::{
    AlertChange, AlertState, AlignRecord, EventRecord, FRAME_MESSAGE_NAME, Summary, Window,
};

pub(crate) struct Bus;

impl Sink for Bus {
    fn record(&mut self, env: &Env<'_>, pair: &mut Pair<'_>) -> Result<(), gst::ErrorMessage> {
        gst::log!(
            CAT,
            obj = env.element,
            "pair {} scored {:?} after it arrived: {:?}",
            pair.record.frame,
            pair.arrived.elapsed(),
            pair.record
                .scores
                .iter()
                .map(|(f, v)| (f.name, v))
                .collect::<Vec<_>>()
        );
        if env.settings.post_messages {
            let msg = gst::message::Element::builder(pair.record.to_structure(FRAME_MESSAGE_NAME))
                .src(env.element)
                .build();
            let _ = env.element.post_message(msg);
        }
        Ok(())
    }

    fn window(&mut self, env: &Env<'_>, window: &Window) -> Result<(), gst::ErrorMessage> {
        let msg = gst::message::Element::builder(window.to_structure())
            .src(env.element)
            .build();
        let _ = env.element.post_message(msg);
        Ok(())
    }

    /// The `gpumetrics-event` message (always: intervals are rare and each matters), and
    /// an INFO line for gst-launch users' logs.
    fn event(&mut self, env: &Env<'_>, event: &EventRecord) -> Result<(), gst::ErrorMessage> {
        gst::info!(
            CAT,
            obj = env.element,
            "{} {} on {} at running time {}{}",
            event.event,
            event.state,
            event.input,
            gst::ClockTime::from_nseconds(event.running_time),
            event.duration.map_or(String::new(), |d| format!(
                ", duration {}",
                gst::ClockTime::from_nseconds(d)
            ))
        );
        let msg = gst::message::Element::builder(event.to_structure())
            .src(env.element)
            .build();
        let _ = env.element.post_message(msg);
        Ok(())
    }

    fn align(&mut self, env: &Env<'_>, a: &AlignRecord) -> Result<(), gst::ErrorMessage> {
        let text = format!(
            "align {} at running time {}: offset {} ({} frames), confidence {:.2}, {} re-locks",
            a.state,
            gst::ClockTime::from_nseconds(a.running_time),
            a.offset
                .map_or("unknown".into(), |o| format!("{:+.3} s", o as f64 / 1e9)),
            a.offset_frames.map_or("?".into(), |o| format!("{o:+}")),
            a.confidence,
            a.relocks
        );
        if a.state == "searching" {
            gst::debug!(CAT, obj = env.element, "{text}");
        } else {
            gst::info!(CAT, obj = env.element, "{text}");
        }
        let msg = gst::message::Element::builder(a.to_structure())
            .src(env.element)
            .build();
        let _ = env.element.post_message(msg);
        Ok(())
    }

    fn alert(&mut self, env: &Env<'_>, change: &AlertChange) -> Result<(), gst::ErrorMessage> {
        let msg = gst::message::Element::builder(change.to_structure())
            .src(env.element)
            .build();
        let _ = env.element.post_message(msg);
        let at = gst::ClockTime::from_nseconds(change.running_time);
        match change.state {
            AlertState::Raised => {
                let text = format!(
                    "alert raised: {} ({} = {} at running time {at})",
                    change.rule, change.field, change.value
                );
                gst::warning!(CAT, obj = env.element, "{text}");
                let warning = gst::message::Warning::builder(gst::StreamError::Failed, &text)
                    .src(env.element)
                    .build();
                let _ = env.element.post_message(warning);
            }
            AlertState::Cleared => gst::info!(
                CAT,
                obj = env.element,
                "alert cleared: {} ({} = {} at running time {at}, worst {})",
                change.rule,
                change.field,
                change.value,
                change.worst.unwrap_or(change.value)
            ),
        }
        Ok(())
    }

    fn summary(&mut self, env: &Env<'_>, summary: &Summary) -> Result<(), gst::ErrorMessage> {
        let _ = env.element.post_message(summary.to_message(env.element));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::pair_of;
    use super::*;
    use crate::gpumetrics::settings::Settings;
    use crate::message::FrameScores;

    #[test]
    fn posts_records_when_asked_and_the_summary_always() {
        gst::init().unwrap();
        let pipeline = gst::Pipeline::new();
        let element = gst::Bin::new().upcast::<gst::Element>();
        pipeline.add(&element).unwrap();
        let bus = pipeline.bus().unwrap();
        let mut settings = Settings::default();
        for post in [true, false] {
            settings.post_messages = post;
            let env = Env {
                element: &element,
                settings: &settings,
            };
            let (record, scores, mut buffer) = pair_of(4, 33.0);
            let mut pair = Pair {
                record: &record,
                scores: &scores,
                buffer: &mut buffer,
                arrived: std::time::Instant::now(),
            };
            Bus.record(&env, &mut pair).unwrap();
            Bus.summary(&env, &Summary::default()).unwrap();
            let mut frames = Vec::new();
            let mut summaries = Vec::new();
            while let Some(msg) = bus.pop() {
                assert_eq!(msg.src(), Some(element.upcast_ref::<gst::Object>()));
                frames.extend(FrameScores::from_message(&msg));
                summaries.extend(Summary::from_message(&msg));
            }
            assert_eq!(frames, if post { vec![record] } else { vec![] });
            assert_eq!(summaries, [Summary::default()]);
        }
    }
}
