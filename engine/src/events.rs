//! Events: intervals that the no-reference metrics find in a stream, as FFmpeg 5.1's
//! detectors report them: black intervals (`blackdetect`'s `black_start` / `black_end`)
//! and frozen intervals (`freezedetect`'s `freeze_start` / `freeze_end`), on each input.
//!
//! The detectors read the records the engine produces (the `black` and `freeze-diff`
//! fields and their `ref-` twins) with the frames' running times: a front end (the element,
//! the command) feeds every record to [`Events::frame`], in order, and posts the events it
//! gets. Each detector lives next to its metric (`metric::black::events`,
//! `metric::freeze::events`, where their rules are written out) and is declared in its
//! registry entry (`crate::event::EventHook`); this module is the front that builds them
//! for the requested metrics.
//!
//! An interval's [`EventState::Start`] comes as soon as the interval is known to be
//! reported (it always precedes its [`EventState::End`], and no `Start` comes for an
//! interval that will not be reported); its `End` comes at the first frame after it, or at
//! [`Events::finish`] for an interval still open at the end of the stream.

use crate::error::EngineError;
use crate::metric::Options;
use crate::metric_set::MetricSet;
use crate::scores::Scores;

use crate::event::Detector;
pub use crate::event::{Event, EventState, Input};

/// The event detectors of an engine's metrics.
pub struct Events {
    detectors: Vec<Box<dyn Detector>>,
    /// The names of the requested metrics' intervals, in registry order.
    kinds: Vec<&'static str>,
}

impl Events {
    /// Detectors for the requested metrics that have events (their entries'
    /// [`EventHook`](crate::event::EventHook)s: black, freeze), in registry order, on the
    /// distorted input and, when `with_reference`, on the reference input too.
    pub fn new(
        set: MetricSet,
        options: &Options,
        with_reference: bool,
    ) -> Result<Events, EngineError> {
        let inputs: &[Input] = if with_reference {
            &[Input::Distorted, Input::Reference]
        } else {
            &[Input::Distorted]
        };
        let configured = crate::metric::Configured::all(set, options)?;
        let detectors = configured
            .iter()
            .flat_map(|c| c.detectors(inputs))
            .collect();
        let kinds = configured
            .iter()
            .filter_map(|c| c.entry.events.map(|h| h.kind))
            .collect();
        Ok(Events { detectors, kinds })
    }

    /// What the requested metrics' intervals are called (`black`, `freeze`), in registry
    /// order: the values of [`Event::kind`] this front can give.
    pub fn kinds(&self) -> &[&'static str] {
        &self.kinds
    }

    /// No detector: no metric with events was requested.
    pub fn is_empty(&self) -> bool {
        self.detectors.is_empty()
    }

    /// One record (a frame of each input), in order: its fields, the frame's running time
    /// and duration (ns).
    pub fn frame(
        &mut self,
        scores: &Scores,
        running_time: u64,
        duration: Option<u64>,
        out: &mut Vec<Event>,
    ) {
        for d in &mut self.detectors {
            d.frame(scores, running_time, duration, out);
        }
    }

    /// End of stream at `end` (ns): intervals still open that qualify end here.
    pub fn finish(&mut self, end: u64, out: &mut Vec<Event>) {
        for d in &mut self.detectors {
            d.finish(end, out);
        }
    }

    /// A flush: forget open intervals (no events).
    pub fn reset(&mut self) {
        for d in &mut self.detectors {
            d.reset();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metric::{OptionValue, black, freeze};

    fn scores(fields: &[(&'static str, f64)]) -> Scores {
        let mut s = Scores::new();
        for &(n, v) in fields {
            s.push(n, v);
        }
        s
    }

    #[test]
    fn detectors_per_metric_and_input_in_record_order() {
        let o = Options::new();
        assert!(Events::new(MetricSet::PSNR, &o, true).unwrap().is_empty());
        let both = black::FLAG | freeze::FLAG;
        assert_eq!(
            Events::new(both, &o, true).unwrap().kinds(),
            ["black", "freeze"]
        );
        assert_eq!(Events::new(both, &o, true).unwrap().detectors.len(), 4);
        assert_eq!(Events::new(both, &o, false).unwrap().detectors.len(), 2);
        assert_eq!(
            Events::new(freeze::FLAG, &o, false)
                .unwrap()
                .detectors
                .len(),
            1
        );
        assert_eq!(
            (EventState::End.name(), Input::Reference.name()),
            ("end", "ref")
        );
    }

    #[test]
    fn both_inputs_at_once_and_eos() {
        let o = Options::new()
            .with("black-min-duration", OptionValue::Float(0.0))
            .unwrap()
            .with("freeze-min-duration", OptionValue::Float(0.0))
            .unwrap();
        let mut e = Events::new(black::FLAG | freeze::FLAG, &o, true).unwrap();
        let mut out = Vec::new();
        // Frame 0: the distorted is black, the reference not; no freeze value yet.
        e.frame(
            &scores(&[("black", 1.0), ("ref-black", 0.0)]),
            0,
            Some(10),
            &mut out,
        );
        assert_eq!(out.len(), 1);
        assert_eq!(
            (out[0].kind, out[0].input, out[0].state),
            ("black", Input::Distorted, EventState::Start)
        );
        out.clear();
        // Frame 1: both frozen; the reference is black now.
        let s = scores(&[
            ("black", 1.0),
            ("ref-black", 0.99),
            ("freeze-diff", 0.0),
            ("ref-freeze-diff", 0.0005),
        ]);
        e.frame(&s, 10, Some(10), &mut out);
        let got: Vec<_> = out
            .iter()
            .map(|v| (v.kind, v.input, v.state, v.running_time))
            .collect();
        assert_eq!(
            got,
            [
                ("black", Input::Reference, EventState::Start, 10),
                ("freeze", Input::Distorted, EventState::Start, 0),
                ("freeze", Input::Reference, EventState::Start, 0),
            ]
        );
        out.clear();
        e.finish(20, &mut out);
        let got: Vec<_> = out
            .iter()
            .map(|v| (v.kind, v.input, v.running_time, v.duration))
            .collect();
        assert_eq!(
            got,
            [
                ("black", Input::Distorted, 20, Some(20)),
                ("black", Input::Reference, 20, Some(10)),
                ("freeze", Input::Distorted, 20, Some(20)),
                ("freeze", Input::Reference, 20, Some(20)),
            ]
        );
        // Without the reference input its fields are not read.
        let mut e = Events::new(black::FLAG, &o, false).unwrap();
        out.clear();
        e.frame(
            &scores(&[("black", 0.0), ("ref-black", 1.0)]),
            0,
            None,
            &mut out,
        );
        e.finish(5, &mut out);
        assert!(out.is_empty(), "{out:?}");
    }
}
