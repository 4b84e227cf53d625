//! Black intervals, as FFmpeg 5.1's `blackdetect` reports them.
//!
//! blackdetect's rule: a frame is black when its picture black ratio (the `black` field) is
//! at least `black-picture-threshold`; an interval starts at the first black frame
//! (`black_start`) and ends at the first frame that is not black (`black_end`); it is
//! reported when `black_end − black_start >= black-min-duration` (blackdetect compares in
//! its time base, `d` truncated to it; here in ns, `d` truncated to ns). At the end of the
//! stream an open interval is reported when the last frame's time minus the start
//! qualifies (blackdetect then prints `black_end` = the last frame's time; our `End` is at
//! the end of the stream, with the duration to it).
//!
//! When events come: `Start` at the first black frame whose time minus the start
//! qualifies (from then on the interval is reported, whichever way it ends), else together
//! with its `End` at the frame that ends it; so `Start` always precedes its `End` and an
//! interval that will not be reported gives no event. A record without the field (a format
//! the metric cannot measure) is skipped.

use super::{BLACK, Settings};
use crate::event::{Detector, Event, EventHook, EventState, Input};
use crate::scores::Scores;

/// Black intervals in the registry: one detector per input, from the entry's settings.
pub(crate) const HOOK: EventHook = EventHook {
    kind: KIND,
    detector: |settings, input| {
        let s = settings
            .downcast_ref::<Settings>()
            .expect("black's events read black's settings");
        Box::new(BlackEvents::new(input, s.picture_threshold, s.min_duration))
    },
};

/// The name of black intervals in events.
const KIND: &str = "black";

/// An interval being followed: its first frame's time and whether its `Start` was sent.
#[derive(Clone, Copy, Debug)]
struct Open {
    start: u64,
    announced: bool,
}

/// One input's black intervals.
pub(crate) struct BlackEvents {
    input: Input,
    field: &'static str,
    /// A frame is black when its ratio is at least this.
    picture: f64,
    /// The shortest interval reported, ns.
    min: u64,
    open: Option<Open>,
}

impl BlackEvents {
    pub(crate) fn new(input: Input, picture: f64, min: u64) -> BlackEvents {
        BlackEvents {
            input,
            field: input.field(BLACK),
            picture,
            min,
            open: None,
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

impl Detector for BlackEvents {
    fn frame(&mut self, scores: &Scores, t: u64, _duration: Option<u64>, out: &mut Vec<Event>) {
        let Some(ratio) = scores.get(self.field) else {
            return;
        };
        if ratio >= self.picture {
            let open = self.open.get_or_insert(Open {
                start: t,
                announced: false,
            });
            if !open.announced && t.saturating_sub(open.start) >= self.min {
                open.announced = true;
                let start = open.start;
                out.push(self.event(EventState::Start, start, None));
            }
        } else if let Some(open) = self.open.take() {
            let length = t.saturating_sub(open.start);
            if length >= self.min {
                if !open.announced {
                    out.push(self.event(EventState::Start, open.start, None));
                }
                out.push(self.event(EventState::End, t, Some(length)));
            }
        }
    }

    fn finish(&mut self, end: u64, out: &mut Vec<Event>) {
        // Announced exactly when the last (black) frame's time minus the start qualifies.
        if let Some(open) = self.open.take()
            && open.announced
        {
            out.push(self.event(EventState::End, end, Some(end.saturating_sub(open.start))));
        }
    }

    fn reset(&mut self) {
        self.open = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;
    /// 10 frames/s.
    const FRAME: u64 = S / 10;

    /// Events of the distorted input over frames of `ratios` at 10 frames/s, then EOS.
    fn run(ratios: &[f64], min: u64) -> Vec<(EventState, u64, Option<u64>, usize)> {
        let mut d = BlackEvents::new(Input::Distorted, 0.98, min);
        let mut out = Vec::new();
        let mut got = Vec::new();
        for (i, &r) in ratios.iter().enumerate() {
            let mut s = Scores::new();
            s.push("black", r);
            d.frame(&s, i as u64 * FRAME, Some(FRAME), &mut out);
            got.extend(
                out.drain(..)
                    .map(|e| (e.state, e.running_time, e.duration, i)),
            );
        }
        d.finish(ratios.len() as u64 * FRAME, &mut out);
        got.extend(
            out.drain(..)
                .map(|e| (e.state, e.running_time, e.duration, ratios.len())),
        );
        got
    }

    #[test]
    fn an_interval_of_exactly_the_minimum_is_reported() {
        // Black frames 1..=20, frame 21 not: 21·0.1 − 0.1 = 2 s.
        let mut r = vec![0.0; 25];
        for v in &mut r[1..21] {
            *v = 1.0;
        }
        let got = run(&r, 2 * S);
        assert_eq!(
            got,
            [
                (EventState::Start, FRAME, None, 21),
                (EventState::End, 21 * FRAME, Some(2 * S), 21),
            ]
        );
    }

    #[test]
    fn a_shorter_interval_is_not_and_start_comes_early_for_a_long_one() {
        let mut r = vec![0.0; 40];
        for v in &mut r[0..19] {
            *v = 0.99;
        }
        for v in &mut r[20..40] {
            *v = 1.0;
        }
        r[19] = 0.97;
        // Frames 0..19: 1.9 s, not reported; 20..40: 1.9 s to the last frame, not reported
        // at EOS either.
        assert!(run(&r, 2 * S).is_empty());
        // With 1 s: the first interval starts at frame 10 (1 s after frame 0) and ends at
        // 19; the second starts at frame 30 and ends at EOS (4 s).
        let got = run(&r, S);
        assert_eq!(
            got,
            [
                (EventState::Start, 0, None, 10),
                (EventState::End, 19 * FRAME, Some(19 * FRAME), 19),
                (EventState::Start, 20 * FRAME, None, 30),
                (EventState::End, 40 * FRAME, Some(20 * FRAME), 40),
            ]
        );
    }

    #[test]
    fn open_at_eos_qualifies_by_the_last_frame_and_reset_forgets() {
        // Black from frame 5 to the last frame, 9: 0.4 s by the last frame, 0.5 s to EOS.
        let mut r = vec![0.0; 10];
        for v in &mut r[5..] {
            *v = 1.0;
        }
        // blackdetect measures to the last frame: 0.5 s does not qualify.
        assert!(run(&r, FRAME * 5).is_empty());
        let got = run(&r, FRAME * 4);
        assert_eq!(
            got,
            [
                (EventState::Start, 5 * FRAME, None, 9),
                (EventState::End, 10 * FRAME, Some(5 * FRAME), 10),
            ]
        );
        // A zero minimum: one black frame is an interval.
        let got = run(&[0.0, 1.0, 0.0], 0);
        assert_eq!(
            got,
            [
                (EventState::Start, FRAME, None, 1),
                (EventState::End, 2 * FRAME, Some(FRAME), 2),
            ]
        );
        let mut d = BlackEvents::new(Input::Reference, 0.98, 0);
        let mut out = Vec::new();
        let mut s = Scores::new();
        s.push("ref-black", 1.0);
        d.frame(&s, 0, None, &mut out);
        assert_eq!(out.len(), 1);
        d.reset();
        d.finish(10, &mut out);
        assert_eq!(out.len(), 1, "{out:?}");
        // Records without the field are skipped.
        d.frame(&Scores::new(), 20, None, &mut out);
        assert_eq!(out.len(), 1);
    }
}
