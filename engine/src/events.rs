//! PLACEHOLDER until the black/freeze detectors land (branch nr-bf replaces this file).

use crate::error::EngineError;
use crate::metric::Options;
use crate::metrics::MetricSet;
use crate::scores::Scores;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    Black,
    Freeze,
}
impl EventKind {
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Black => "black",
            EventKind::Freeze => "freeze",
        }
    }
}
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventState {
    Start,
    End,
}
impl EventState {
    pub fn name(self) -> &'static str {
        match self {
            EventState::Start => "start",
            EventState::End => "end",
        }
    }
}
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    Reference,
    Distorted,
}
impl Input {
    pub fn name(self) -> &'static str {
        match self {
            Input::Reference => "ref",
            Input::Distorted => "dist",
        }
    }
}
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub kind: EventKind,
    pub state: EventState,
    pub input: Input,
    pub running_time: u64,
    pub duration: Option<u64>,
}
pub struct Events;
impl Events {
    pub fn new(_set: MetricSet, _o: &Options, _r: bool) -> Result<Events, EngineError> {
        Ok(Events)
    }
    pub fn is_empty(&self) -> bool {
        true
    }
    pub fn frame(&mut self, _s: &Scores, _t: u64, _d: Option<u64>, _out: &mut Vec<Event>) {}
    pub fn finish(&mut self, _end: u64, _out: &mut Vec<Event>) {}
    pub fn reset(&mut self) {}
}
