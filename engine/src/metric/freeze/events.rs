//! Frozen intervals, as FFmpeg 5.1's `freezedetect` reports them.
//!
//! freezedetect's rule, at each frame after the reference frame (the last frame that was
//! not frozen): its duration is the frame's time minus the reference frame's (after a
//! backwards jump in time: the frames since the reference times the frame duration); when
//! that is at least `freeze-min-duration`, a `freeze_start` (at the reference frame's time)
//! comes if no interval is open, and if this frame is not frozen a `freeze_end` (at this
//! frame's time, with that duration) closes it; a frame that is not frozen becomes the
//! reference frame. So one frame that is not frozen may both start and end an interval
//! (when the frames before it were frozen but too short a time, or when it comes long
//! after the reference frame). FFmpeg compares durations in µs (the pts difference rounded
//! to µs, `d` in µs): so does this.
//!
//! The detector reads `freeze-diff` (frozen when at most `freeze-noise`, the metric's own
//! decision); a record without it is a frame the metric had no reference frame for (the
//! first of a sequence): it becomes the reference frame, and an interval still open ends
//! there. At the end of the stream an interval whose `Start` was sent ends there.

use super::{DIFF, Settings};
use crate::event::{Detector, Event, EventHook, EventState, Input};
use crate::scores::Scores;

/// Frozen intervals in the registry: one detector per input, from the entry's settings.
pub(crate) const HOOK: EventHook = EventHook {
    kind: KIND,
    detector: |settings, input| {
        let s = settings
            .downcast_ref::<Settings>()
            .expect("freeze's events read freeze's settings");
        Box::new(FreezeEvents::new(input, s.noise, s.min_us))
    },
};

/// The name of frozen intervals in events.
const KIND: &str = "freeze";

/// The reference frame: its time and its number.
#[derive(Clone, Copy, Debug)]
struct ReferenceFrame {
    time: u64,
    n: u64,
}

/// One input's frozen intervals.
pub(crate) struct FreezeEvents {
    input: Input,
    field: &'static str,
    noise: f64,
    /// The shortest interval reported, µs.
    min_us: u64,
    reference: Option<ReferenceFrame>,
    /// An interval's `Start` was sent (freezedetect's `frozen`).
    frozen: bool,
    /// Frames seen.
    n: u64,
    /// The last frame duration given (for the frame-count duration after a jump back).
    frame_duration: Option<u64>,
}

impl FreezeEvents {
    pub(crate) fn new(input: Input, noise: f64, min_us: u64) -> FreezeEvents {
        FreezeEvents {
            input,
            field: input.field(DIFF),
            noise,
            min_us,
            reference: None,
            frozen: false,
            n: 0,
            frame_duration: None,
        }
    }

    fn event(&self, state: EventState, running_time: u64, duration: Option<u64>) -> Event {
        Event {
            kind: KIND,
            state,
            input: self.input,
            running_time,
            duration,
        }
    }
}

/// ns to µs, rounded to nearest (as `av_rescale_q`).
fn to_us(ns: u64) -> u64 {
    (ns + 500) / 1000
}

impl Detector for FreezeEvents {
    fn frame(&mut self, scores: &Scores, t: u64, duration: Option<u64>, out: &mut Vec<Event>) {
        self.n += 1;
        if duration.is_some() {
            self.frame_duration = duration;
        }
        let here = ReferenceFrame { time: t, n: self.n };
        let (Some(diff), Some(reference)) = (scores.get(self.field), self.reference) else {
            // No value: the metric has just taken this frame as its reference frame (or the
            // detector was reset while the metric kept its own): start again from here.
            if self.frozen
                && let Some(r) = self.reference
            {
                out.push(self.event(EventState::End, t, Some(t.saturating_sub(r.time))));
            }
            self.frozen = false;
            self.reference = Some(here);
            return;
        };
        let frozen = super::is_frozen(diff, self.noise);
        let length = if t >= reference.time {
            t - reference.time
        } else {
            (self.n - reference.n) * self.frame_duration.unwrap_or(0)
        };
        if to_us(length) >= self.min_us {
            if !self.frozen {
                out.push(self.event(EventState::Start, reference.time, None));
            }
            if !frozen {
                out.push(self.event(EventState::End, t, Some(length)));
            }
            self.frozen = frozen;
        }
        if !frozen {
            self.reference = Some(here);
        }
    }

    fn finish(&mut self, end: u64, out: &mut Vec<Event>) {
        if self.frozen
            && let Some(r) = self.reference
        {
            out.push(self.event(EventState::End, end, Some(end.saturating_sub(r.time))));
        }
        self.reset();
    }

    fn reset(&mut self) {
        self.reference = None;
        self.frozen = false;
        self.n = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;
    const FRAME: u64 = S / 10;

    /// Events over frames at `times` (ns) with `diffs` (None: no value), then EOS at `end`.
    fn run(
        frames: &[(u64, Option<f64>)],
        end: u64,
        min_us: u64,
    ) -> Vec<(EventState, u64, Option<u64>, usize)> {
        let mut d = FreezeEvents::new(Input::Distorted, 0.001, min_us);
        let (mut out, mut got) = (Vec::new(), Vec::new());
        for (i, &(t, diff)) in frames.iter().enumerate() {
            let mut s = Scores::new();
            if let Some(v) = diff {
                s.push("freeze-diff", v);
            }
            d.frame(&s, t, Some(FRAME), &mut out);
            got.extend(
                out.drain(..)
                    .map(|e| (e.state, e.running_time, e.duration, i)),
            );
        }
        d.finish(end, &mut out);
        got.extend(
            out.drain(..)
                .map(|e| (e.state, e.running_time, e.duration, frames.len())),
        );
        got
    }

    /// Frames at 10/s: the first without a value, then `diffs`.
    fn clip(diffs: &[f64]) -> Vec<(u64, Option<f64>)> {
        std::iter::once(None)
            .chain(diffs.iter().map(|&d| Some(d)))
            .enumerate()
            .map(|(i, d)| (i as u64 * FRAME, d))
            .collect()
    }

    #[test]
    fn exactly_the_minimum_starts_and_a_moving_frame_ends() {
        // Frame 0 the reference; 1..=20 frozen (frame 20 is 2 s after it); 21 moves.
        let mut diffs = vec![0.0; 20];
        diffs.push(0.5);
        diffs.extend([0.5, 0.5]);
        let got = run(&clip(&diffs), 24 * FRAME, 2_000_000);
        assert_eq!(
            got,
            [
                (EventState::Start, 0, None, 20),
                (EventState::End, 21 * FRAME, Some(21 * FRAME), 21),
            ]
        );
    }

    #[test]
    fn shorter_is_not_reported_open_at_eos_ends_there() {
        // Frozen to 1.8 s, moving at 1.9 s: nothing (moving at 2 s would be a 2 s freeze).
        let mut diffs = vec![0.0; 18];
        diffs.push(0.5);
        assert!(run(&clip(&diffs), 21 * FRAME, 2_000_000).is_empty());
        // Frozen to the end: starts at frame 20, ends at EOS.
        let diffs = vec![0.0; 25];
        let got = run(&clip(&diffs), 26 * FRAME, 2_000_000);
        assert_eq!(
            got,
            [
                (EventState::Start, 0, None, 20),
                (EventState::End, 26 * FRAME, Some(26 * FRAME), 26),
            ]
        );
        // Frozen but under the minimum by EOS: nothing.
        assert!(run(&clip(&[0.0; 5]), 6 * FRAME, 2_000_000).is_empty());
    }

    #[test]
    fn one_unfrozen_frame_long_after_the_reference_starts_and_ends() {
        // A frame 3 s after the reference that moves: freezedetect reports a 3 s freeze.
        let frames = [(0, None), (3 * S, Some(0.5)), (3 * S + FRAME, Some(0.5))];
        let got = run(&frames, 3 * S + 2 * FRAME, 2_000_000);
        assert_eq!(
            got,
            [
                (EventState::Start, 0, None, 1),
                (EventState::End, 3 * S, Some(3 * S), 1),
            ]
        );
        // The noise decides: 0.001 is frozen, just above is not.
        let mut d = vec![0.001; 20];
        d.push(0.0011);
        let got = run(&clip(&d), 22 * FRAME, 2_000_000);
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].1, 21 * FRAME);
    }

    #[test]
    fn reset_and_a_new_reference_frame() {
        let mut d = FreezeEvents::new(Input::Reference, 0.001, 0);
        let mut out = Vec::new();
        let rec = |v: Option<f64>| {
            let mut s = Scores::new();
            if let Some(v) = v {
                s.push("ref-freeze-diff", v);
            }
            s
        };
        d.frame(&rec(None), 0, None, &mut out);
        d.frame(&rec(Some(0.0)), FRAME, None, &mut out);
        assert_eq!(out.len(), 1, "a zero minimum starts at once: {out:?}");
        // The metric restarted (no value): the open interval ends here.
        d.frame(&rec(None), 2 * FRAME, None, &mut out);
        assert_eq!(out[1].state, EventState::End);
        assert_eq!(
            (out[1].running_time, out[1].duration),
            (2 * FRAME, Some(2 * FRAME))
        );
        d.frame(&rec(Some(0.0)), 3 * FRAME, None, &mut out);
        assert_eq!(out.len(), 3);
        // A flush forgets the open interval: no End at EOS.
        d.reset();
        d.finish(10 * FRAME, &mut out);
        assert_eq!(out.len(), 3);
        // A backwards jump: the duration counts frames since the reference.
        let frames = [(10 * S, None), (0, Some(0.0)), (FRAME, Some(0.5))];
        let got = run(&frames, 2 * FRAME, 150_000);
        assert_eq!(
            got,
            [
                (EventState::Start, 10 * S, None, 2),
                (EventState::End, FRAME, Some(2 * FRAME), 2),
            ]
        );
    }
}
