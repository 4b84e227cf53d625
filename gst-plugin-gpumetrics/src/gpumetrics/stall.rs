// SPDX-License-Identifier: MPL-2.0
//! Stalls of a live input, and the frames of the other input that wait for it.
//!
//! In a live pipeline an input that delivers no frame by the live deadline (its partner's
//! running time + the pairing tolerance + the element's latency) has *stalled*: the element
//! posts `gpumetrics-event` `event=stall` `state=start` for it. The frames the other input
//! delivers meanwhile are taken off their pad (so that its upstream, a live source, is never
//! blocked) and *held*, each for `stall-budget` of running time past its own deadline: when
//! the stalled input delivers again within that budget (a network stall that ends with the
//! backlog, a decoder that catches up), its frames are paired with the held ones and
//! measured. A held frame whose budget is spent is counted unmatched (a distorted one goes
//! downstream without scores), once. The held frames are bounded in time by the budget and
//! in number by [`MAX_HELD`], whatever the timestamps.
//!
//! The stall ends (`state=end`, with its duration) when the stalled input delivers a frame
//! again, ends (EOS), or the run ends. Times are running times of the data: a stall starts
//! at the running time of the first frame left without a partner and ends where the data
//! flow is when the input resumes (the clock's running time less the latency).
//!
//! Generic over the buffer type, for the tests.

use std::collections::VecDeque;

use super::outputs::Input;
use crate::pairing::Head;

/// Frames held at most, whatever the budget (a live source with bogus timestamps must not
/// grow the memory without end): 10 s at 100 frames per second.
pub(crate) const MAX_HELD: usize = 1000;

/// `stall-budget` when not set: 2 s of frames (at 1080p30 NV12, 60 frames, ~190 MB).
pub(crate) const DEFAULT_BUDGET: u64 = 2_000_000_000;

/// A stall in progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stall {
    pub input: Input,
    /// Running time of the first frame left without a partner.
    pub start: u64,
}

/// One end of a stall, for the outputs (`gpumetrics-event`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StallEvent {
    pub input: Input,
    /// `false`: the stall starts; `true`: it ends.
    pub end: bool,
    pub running_time: u64,
    /// On the end: its length.
    pub duration: Option<u64>,
}

/// The run's stalls and held frames.
#[derive(Debug)]
pub(crate) struct Stalls<B> {
    stall: Option<Stall>,
    /// The input whose frames are held (the one that kept delivering).
    held_side: Option<Input>,
    held: VecDeque<(B, Head)>,
}

impl<B> Default for Stalls<B> {
    fn default() -> Self {
        Stalls {
            stall: None,
            held_side: None,
            held: VecDeque::new(),
        }
    }
}

impl<B> Stalls<B> {
    /// The stall in progress.
    pub(crate) fn current(&self) -> Option<Stall> {
        self.stall
    }

    /// `input` stalled, its partner due at `running_time`: the start event, or `None` when
    /// that input's stall is already in progress.
    pub(crate) fn start(&mut self, input: Input, running_time: u64) -> Option<StallEvent> {
        if self.stall.is_some_and(|s| s.input == input) {
            return None;
        }
        // The other input's stall (if any) ended: frames of this one were waiting.
        self.stall = Some(Stall {
            input,
            start: running_time,
        });
        Some(StallEvent {
            input,
            end: false,
            running_time,
            duration: None,
        })
    }

    /// The stalled input delivers again (or ended) at `running_time`: the end event.
    pub(crate) fn end(&mut self, running_time: u64) -> Option<StallEvent> {
        let s = self.stall.take()?;
        let at = running_time.max(s.start);
        Some(StallEvent {
            input: s.input,
            end: true,
            running_time: at,
            duration: Some(at - s.start),
        })
    }

    /// The oldest held frame and its input.
    pub(crate) fn front(&self) -> Option<(Input, Head)> {
        let side = self.held_side?;
        self.held.front().map(|(_, h)| (side, *h))
    }

    /// Frames held.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.held.len()
    }

    /// Holds a frame of `side`; when [`MAX_HELD`] are held already, the oldest comes back
    /// (it is unmatched). Frames of only one input are ever held: a frame of the other one
    /// means that pairing went on (the held ones are taken first), so `side` must match.
    pub(crate) fn hold(&mut self, side: Input, buffer: B, head: Head) -> Option<(B, Head)> {
        debug_assert!(self.held.is_empty() || self.held_side == Some(side));
        self.held_side = Some(side);
        self.held.push_back((buffer, head));
        (self.held.len() > MAX_HELD)
            .then(|| self.held.pop_front())
            .flatten()
    }

    /// Takes the oldest held frame (paired, or unmatched).
    pub(crate) fn pop(&mut self) -> Option<(Input, B, Head)> {
        let side = self.held_side?;
        let (b, h) = self.held.pop_front()?;
        if self.held.is_empty() {
            self.held_side = None;
        }
        Some((side, b, h))
    }

    /// The running time by which the oldest held frame's budget is spent (before the
    /// element's latency is added), or `None` with nothing held. An untimed frame is given
    /// no budget (it cannot be placed in time).
    pub(crate) fn deadline(&self, tolerance: u64, budget: u64) -> Option<u64> {
        let (_, h) = self.held.front()?;
        Some(
            h.running_time
                .map_or(0, |t| t.saturating_add(tolerance).saturating_add(budget)),
        )
    }

    /// A flush: the held frames go with the flushed data; a stall in progress is forgotten
    /// (the next frames start anew).
    pub(crate) fn clear(&mut self) -> Vec<(Input, B, Head)> {
        let mut out = Vec::new();
        while let Some(x) = self.pop() {
            out.push(x);
        }
        self.stall = None;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn head(ms: u64) -> Head {
        Head {
            running_time: Some(ms * MS),
            duration: Some(40 * MS),
        }
    }

    #[test]
    fn a_stall_starts_once_and_ends_with_its_duration() {
        let mut s = Stalls::<u32>::default();
        assert_eq!(s.end(5), None, "no stall, no end");
        let e = s.start(Input::Distorted, 1000 * MS).unwrap();
        assert_eq!(
            (e.input, e.end, e.running_time),
            (Input::Distorted, false, 1000 * MS)
        );
        assert_eq!(
            s.start(Input::Distorted, 1040 * MS),
            None,
            "already stalled"
        );
        let e = s.end(5000 * MS).unwrap();
        assert_eq!(
            (e.end, e.running_time, e.duration),
            (true, 5000 * MS, Some(4000 * MS))
        );
        assert_eq!(s.current(), None);
        // An end "before" the start (the input resumed with its backlog) is a stall of 0.
        s.start(Input::Reference, 100 * MS);
        assert_eq!(s.end(50 * MS).unwrap().duration, Some(0));
    }

    #[test]
    fn held_frames_leave_oldest_first_and_are_bounded() {
        let mut s = Stalls::<u32>::default();
        assert_eq!(s.front(), None);
        assert_eq!(s.deadline(20 * MS, 100 * MS), None);
        for i in 0..MAX_HELD as u32 {
            assert_eq!(s.hold(Input::Reference, i, head(40 * i as u64)), None);
        }
        assert_eq!(s.front(), Some((Input::Reference, head(0))));
        assert_eq!(s.deadline(20 * MS, 100 * MS), Some(120 * MS));
        // One more: the oldest comes back, unmatched.
        let (b, h) = s.hold(Input::Reference, 9999, head(40_000)).unwrap();
        assert_eq!((b, h), (0, head(0)));
        assert_eq!(s.len(), MAX_HELD);
        assert_eq!(
            s.pop().map(|(side, b, _)| (side, b)),
            Some((Input::Reference, 1))
        );
        let rest = s.clear();
        assert_eq!(rest.len(), MAX_HELD - 1);
        assert_eq!(rest.last().unwrap().1, 9999);
        assert_eq!(s.front(), None);
        // Empty again: the other input's frames may be held now.
        s.hold(Input::Distorted, 7, head(0));
        assert_eq!(s.front().unwrap().0, Input::Distorted);
    }

    #[test]
    fn an_untimed_held_frame_has_no_budget() {
        let mut s = Stalls::<u32>::default();
        s.hold(Input::Distorted, 1, Head::default());
        assert_eq!(s.deadline(20 * MS, 100 * MS), Some(0));
        // Saturating: a frame near the end of the clock range.
        let mut s = Stalls::<u32>::default();
        s.hold(Input::Distorted, 1, head(u64::MAX / MS));
        assert_eq!(s.deadline(u64::MAX, u64::MAX), Some(u64::MAX));
    }
}
