// SPDX-License-Identifier: MPL-2.0
//! Tumbling windows of running time (`window`): `[k * window, (k + 1) * window)`, aligned to
//! running time 0. Each pair, unmatched frame and skipped pair falls in the window of its
//! running time; when one arrives past the current window's end, that window is complete
//! and so is every window between (posted with no pairs, so that gaps show). The last one
//! closes at the end of the run. A window is posted once and never re-opened, so window
//! starts strictly increase: an event whose running time lies before the current window (a
//! frame of an input that resumed after a live stall with its backlog, given up as
//! unmatched) counts in the current window. Only after a flushing seek, where running time
//! starts over, does such an event close the current window and start anew.

use gpumetrics_engine::{Pooler, Scores};

use super::Input;
use super::pool::summary_of;
use crate::message::{AlertCount, Window};

/// Windows between two events beyond which the empty ones are not posted one by one (a
/// jump of hours in running time with a 1 ms window); one window spans the gap instead.
const MAX_EMPTY_WINDOWS: u64 = 10_000;

#[derive(Debug)]
struct Current {
    start: u64,
    end: u64,
    pooler: Pooler,
    unmatched_ref: u64,
    unmatched_dist: u64,
    skipped: u64,
}

impl Current {
    fn new(start: u64, end: u64) -> Self {
        Current {
            start,
            end,
            pooler: Pooler::new(),
            unmatched_ref: 0,
            unmatched_dist: 0,
            skipped: 0,
        }
    }
}

/// The window being filled.
#[derive(Debug)]
pub(crate) struct Windows {
    length: u64,
    current: Option<Current>,
    /// A flushing seek happened since the last event: running time may have gone back.
    flushed: bool,
}

/// What a window's event is.
pub(crate) enum Event<'a> {
    Pair(&'a Scores),
    Unmatched(Input),
    /// With the engine's scores when the pair went through it (a span field's terms).
    Skipped(Option<&'a Scores>),
}

impl Windows {
    /// Windows of `length` ns (non-zero).
    pub(crate) fn new(length: u64) -> Self {
        debug_assert!(length > 0);
        Windows {
            length,
            current: None,
            flushed: false,
        }
    }

    /// The JOD of the current window's pairs and `scores`' pair (not added yet), for a
    /// field whose per-pair value is that of a span ([`Pooler::span_jod_with`]: `cvvdp`).
    pub(crate) fn span_jod_with(&self, field: &str, scores: &Scores) -> Option<f64> {
        self.current
            .as_ref()
            .and_then(|c| c.pooler.span_jod_with(field, scores))
    }

    /// A flushing seek: the next event may start running time over.
    pub(crate) fn flushed(&mut self) {
        self.flushed = true;
    }

    fn start_of(&self, t: u64) -> u64 {
        t - t % self.length
    }

    /// The windows that end at or before `t` (complete when an event at `t` arrives), each
    /// with its alert counts from `close`; `t` then falls in the current window. An event
    /// without a running time stays in the current window.
    pub(crate) fn advance(
        &mut self,
        t: Option<u64>,
        mut close: impl FnMut(u64) -> Vec<AlertCount>,
    ) -> Vec<Window> {
        let Some(t) = t else {
            if self.current.is_none() {
                self.current = Some(Current::new(0, self.length));
            }
            return Vec::new();
        };
        let mut done = Vec::new();
        let flushed = std::mem::take(&mut self.flushed);
        match &self.current {
            None => {}
            Some(c) if t >= c.start && t < c.end => return done,
            // A late event: the window it belongs to was posted; it counts in this one.
            Some(c) if t < c.start && !flushed => return done,
            Some(c) if t < c.start => {
                // Running time went back (a flushing seek): this window ends here.
                let end = c.end;
                done.push(self.take(close(end)));
            }
            Some(c) => {
                let end = c.end;
                done.push(self.take(close(end)));
                let first_empty = end;
                let next = self.start_of(t);
                let gap = (next - first_empty) / self.length;
                if gap > MAX_EMPTY_WINDOWS {
                    let mut w = Window {
                        start: first_empty,
                        end: next,
                        ..Default::default()
                    };
                    w.stats.alerts = close(next);
                    done.push(w);
                } else {
                    let mut s = first_empty;
                    while s < next {
                        let mut w = Window {
                            start: s,
                            end: s + self.length,
                            ..Default::default()
                        };
                        w.stats.alerts = close(s + self.length);
                        done.push(w);
                        s += self.length;
                    }
                }
            }
        }
        let start = self.start_of(t);
        self.current = Some(Current::new(start, start.saturating_add(self.length)));
        done
    }

    /// Adds an event to the current window (after [`Windows::advance`] for its time).
    pub(crate) fn add(&mut self, event: Event<'_>) {
        let c = self
            .current
            .get_or_insert_with(|| Current::new(0, self.length));
        match event {
            // A span field's window terms (the engine restarted its span at the window).
            Event::Pair(scores) => c.pooler.push_window(scores),
            Event::Unmatched(Input::Reference) => c.unmatched_ref += 1,
            Event::Unmatched(Input::Distorted) => c.unmatched_dist += 1,
            Event::Skipped(scores) => {
                c.skipped += 1;
                if let Some(s) = scores {
                    c.pooler.push_span_terms(s, true);
                }
            }
        }
    }

    /// The end of the run: the current window, if any, as it stands.
    pub(crate) fn finish(&mut self, close: impl FnOnce(u64) -> Vec<AlertCount>) -> Option<Window> {
        let end = self.current.as_ref()?.end;
        Some(self.take(close(end)))
    }

    fn take(&mut self, alerts: Vec<AlertCount>) -> Window {
        let c = self.current.take().expect("a current window");
        let mut stats = summary_of(&c.pooler);
        stats.unmatched_ref = c.unmatched_ref;
        stats.unmatched_dist = c.unmatched_dist;
        stats.skipped = c.skipped;
        stats.alerts = alerts;
        Window {
            start: c.start,
            end: c.end,
            stats,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn scores(v: f64) -> Scores {
        let mut s = Scores::new();
        s.push("psnr-y", v);
        s
    }

    fn feed(w: &mut Windows, t: u64, event: Event<'_>) -> Vec<Window> {
        let done = w.advance(Some(t), |_| Vec::new());
        w.add(event);
        done
    }

    #[test]
    fn windows_tumble_on_running_time_and_gaps_post_empty_windows() {
        let mut w = Windows::new(S);
        assert!(feed(&mut w, S / 2, Event::Pair(&scores(30.0))).is_empty());
        assert!(feed(&mut w, S / 2 + 1, Event::Pair(&scores(40.0))).is_empty());
        assert!(feed(&mut w, S - 1, Event::Unmatched(Input::Reference)).is_empty());
        // 3.2 s: windows [0, 1) with the two pairs, then [1, 2) and [2, 3) empty.
        let done = feed(&mut w, 3 * S + S / 5, Event::Skipped(None));
        let spans: Vec<(u64, u64, u64)> = done
            .iter()
            .map(|x| (x.start / S, x.end / S, x.stats.frames))
            .collect();
        assert_eq!(spans, [(0, 1, 2), (1, 2, 0), (2, 3, 0)]);
        assert_eq!(done[0].stats.field("psnr-y").unwrap().mean, 35.0);
        assert_eq!(done[0].stats.unmatched_ref, 1);
        assert!(done[1].stats.fields.is_empty());
        let last = w.finish(|_| Vec::new()).unwrap();
        assert_eq!(
            (last.start, last.end, last.stats.skipped),
            (3 * S, 4 * S, 1)
        );
        assert!(w.finish(|_| Vec::new()).is_none());
    }

    #[test]
    fn a_late_event_counts_in_the_current_window_which_is_posted_once() {
        // Issue 43, finding 2: after a live stall the frames of the input that resumed with
        // its backlog were given up as unmatched at running times whose windows had been
        // posted, and those windows were posted again (starts went backwards).
        let mut w = Windows::new(S);
        let mut posted = Vec::new();
        for t in [S / 2, 6 * S + 1] {
            posted.extend(feed(&mut w, t, Event::Unmatched(Input::Reference)));
        }
        for t in [S + 1, 2 * S, 5 * S] {
            posted.extend(feed(&mut w, t, Event::Unmatched(Input::Distorted)));
        }
        posted.extend(feed(&mut w, 7 * S, Event::Pair(&scores(1.0))));
        posted.extend(w.finish(|_| Vec::new()));
        let starts: Vec<u64> = posted.iter().map(|x| x.start / S).collect();
        assert_eq!(starts, [0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(
            posted[6].stats.unmatched_dist, 3,
            "late events count where they arrive"
        );
        assert_eq!(posted[6].stats.unmatched_ref, 1);
        assert_eq!(
            posted.iter().map(|x| x.stats.unmatched_dist).sum::<u64>(),
            3,
            "each once"
        );
    }

    #[test]
    fn running_time_going_back_after_a_flush_closes_the_window() {
        let mut w = Windows::new(S);
        feed(&mut w, 5 * S, Event::Pair(&scores(1.0)));
        w.flushed();
        let done = feed(&mut w, S / 10, Event::Pair(&scores(2.0)));
        assert_eq!(done.len(), 1);
        assert_eq!((done[0].start, done[0].stats.frames), (5 * S, 1));
        assert_eq!(w.finish(|_| Vec::new()).unwrap().start, 0);
    }

    #[test]
    fn a_huge_gap_is_one_empty_window() {
        let mut w = Windows::new(1_000_000);
        feed(&mut w, 0, Event::Skipped(None));
        let done = feed(&mut w, 3600 * S, Event::Skipped(None));
        assert_eq!(done.len(), 2);
        assert_eq!((done[1].start, done[1].end), (1_000_000, 3600 * S));
    }

    #[test]
    fn alert_counts_are_taken_at_each_window_end() {
        let mut w = Windows::new(S);
        feed(&mut w, 0, Event::Skipped(None));
        let mut ends = Vec::new();
        w.advance(Some(2 * S), |end| {
            ends.push(end);
            Vec::new()
        });
        assert_eq!(ends, [S, 2 * S]);
    }
}
