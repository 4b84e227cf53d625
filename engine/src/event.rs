//! Events: intervals a metric finds in a stream (black frames, frozen frames), one end at
//! a time. A metric that reports intervals declares an [`EventHook`] in its registry entry
//! (`crate::metric::Entry::events`); the front that runs the detectors of the requested
//! metrics is `crate::events`, the outputs (messages, stats files, Prometheus) take the
//! events' names from there and know no metric by name.

use std::any::Any;

use crate::scores::Scores;

/// Which end of an interval an event marks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventState {
    Start,
    End,
}

impl EventState {
    /// `start` or `end`.
    pub fn name(self) -> &'static str {
        match self {
            EventState::Start => "start",
            EventState::End => "end",
        }
    }
}

pub use crate::input::Input;

/// One end of an interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Event {
    /// What the interval is: the reporting metric's [`EventHook::kind`] (`black`,
    /// `freeze`).
    pub kind: &'static str,
    pub state: EventState,
    pub input: Input,
    /// ns. `Start`: the running time of the interval's first frame; `End`: that of the
    /// first frame after the interval (or the end of the stream).
    pub running_time: u64,
    /// ns, the interval's length (`End` minus `Start` running time): on `End` only.
    pub duration: Option<u64>,
}

/// One detector: one metric's intervals on one input.
pub(crate) trait Detector: Send {
    /// One record, with its frame's running time and duration (ns).
    fn frame(
        &mut self,
        scores: &Scores,
        running_time: u64,
        duration: Option<u64>,
        out: &mut Vec<Event>,
    );
    /// End of stream at `end` (ns).
    fn finish(&mut self, end: u64, out: &mut Vec<Event>);
    /// A flush: forget open intervals.
    fn reset(&mut self);
}

/// A metric's events: what its intervals are called and how its detectors are made.
#[derive(Clone, Copy)]
pub(crate) struct EventHook {
    /// The intervals' name in events, messages and stats files (`black`).
    pub kind: &'static str,
    /// The detector of one input, from the settings the entry's `configure` parsed (the
    /// options are parsed once, there).
    pub detector: fn(&(dyn Any + Send + Sync), Input) -> Box<dyn Detector>,
}
