// SPDX-License-Identifier: MPL-2.0
//! The distorted buffers on their way to `src`, in arrival order: a measured pair's buffer
//! waits, under the tag it was submitted with ([`gpumetrics_engine::Engine::submit`]),
//! until the engine hands back that tag's scores ([`Queue::score`]; an engine with lag
//! holds pairs back and one with pairs in flight returns them later, see
//! [`gpumetrics_engine::Engine::delay`]), and an unmatched distorted buffer that arrives
//! meanwhile waits behind it, so that the output stays in order. Frames without a partner
//! and pairs `subsample` skips queue up the same way, so that the outputs (whose windows
//! follow running time) receive every event in order.
//!
//! A measured pair's reference buffer is kept with it while the engine may still read its
//! frame (CUDA memory is read in place after the submit returned, and a buffer released
//! earlier could go back to its pool and be overwritten): [`Queue::release_unread`].
//! Generic over the buffer type, for the tests.

use std::collections::VecDeque;
use std::time::Instant;

use gpumetrics_engine::{Scores, Tag};

use super::outputs::Input;
use super::stall::StallEvent;
use crate::message::AlignRecord;

/// What a record says about its pair besides the scores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PairInfo {
    /// Index of the pair, counting matched pairs (scored or skipped).
    pub frame: u64,
    /// Running time of the distorted buffer.
    pub running_time: Option<u64>,
    /// When the pair was taken from the inputs.
    pub arrived: Instant,
    /// `subsample` leaves it unscored: the engine sees it (temporal features need every
    /// frame), its scores are dropped.
    pub skip: bool,
}

/// A buffer ready to leave, or an event for the outputs.
#[derive(Debug, PartialEq)]
pub(crate) enum Ready<B> {
    /// A measured pair with its scores.
    Scored {
        buffer: B,
        pair: PairInfo,
        scores: Scores,
    },
    /// A matched pair `subsample` left unscored.
    /// `scores`: what the engine gave the pair when a metric needs every frame (the
    /// pair went through it), for the terms a span's pooling takes of it.
    Skipped {
        buffer: B,
        pair: PairInfo,
        scores: Option<Scores>,
    },
    /// A frame without a partner: a distorted one leaves without scores, a reference one
    /// has no buffer here.
    Unmatched {
        buffer: Option<B>,
        side: Input,
        running_time: Option<u64>,
    },
    /// An input stalled or resumed: told in order with the frames around it.
    Stall(StallEvent),
    /// `align=auto`: a distorted frame that passed while no offset was locked (it leaves
    /// without scores).
    Unaligned { buffer: B, running_time: u64 },
    /// `align=auto`: the alignment changed, told in order with the frames around it.
    Align(AlignRecord),
}

#[derive(Debug)]
enum Entry<B> {
    Pair {
        tag: Tag,
        buffer: B,
        /// The reference buffer, while the engine may read its frame.
        reference: Option<B>,
        pair: PairInfo,
        scores: Option<Scores>,
    },
    Ready(Ready<B>),
}

#[derive(Debug)]
pub(crate) struct Queue<B> {
    entries: VecDeque<Entry<B>>,
}

impl<B> Default for Queue<B> {
    fn default() -> Self {
        Queue {
            entries: VecDeque::new(),
        }
    }
}

impl<B> Queue<B> {
    /// A measured pair's buffers, submitted as `tag`, waiting for its scores.
    pub(crate) fn push_pair(&mut self, tag: Tag, buffer: B, reference: Option<B>, pair: PairInfo) {
        self.entries.push_back(Entry::Pair {
            tag,
            buffer,
            reference,
            pair,
            scores: None,
        });
    }

    /// Releases the reference buffers of the pairs whose frames the engine no longer
    /// `reads` ([`gpumetrics_engine::Engine::reads`]).
    pub(crate) fn release_unread(&mut self, reads: impl Fn(Tag) -> bool) {
        for e in &mut self.entries {
            if let Entry::Pair { tag, reference, .. } = e
                && reference.is_some()
                && !reads(*tag)
            {
                *reference = None;
            }
        }
    }

    /// Reference buffers kept for the engine to read.
    #[cfg(test)]
    fn references(&self) -> Vec<&B> {
        self.entries
            .iter()
            .filter_map(|e| match e {
                Entry::Pair { reference, .. } => reference.as_ref(),
                _ => None,
            })
            .collect()
    }

    /// A frame without a partner (a distorted one with its buffer): it leaves after the
    /// entries before it.
    pub(crate) fn push_unmatched(
        &mut self,
        buffer: Option<B>,
        side: Input,
        running_time: Option<u64>,
    ) {
        self.entries.push_back(Entry::Ready(Ready::Unmatched {
            buffer,
            side,
            running_time,
        }));
    }

    /// A stall's start or end: it leaves after the entries before it.
    pub(crate) fn push_stall(&mut self, event: StallEvent) {
        self.entries.push_back(Entry::Ready(Ready::Stall(event)));
    }

    /// `align=auto`: a distorted frame passed unmeasured; it leaves after the entries
    /// before it.
    pub(crate) fn push_unaligned(&mut self, buffer: B, running_time: u64) {
        self.entries.push_back(Entry::Ready(Ready::Unaligned {
            buffer,
            running_time,
        }));
    }

    /// `align=auto`: an alignment change, after the entries before it.
    pub(crate) fn push_align(&mut self, record: AlignRecord) {
        self.entries.push_back(Entry::Ready(Ready::Align(record)));
    }

    /// A pair `subsample` skips without the engine (no metric needs every frame).
    pub(crate) fn push_skipped(&mut self, buffer: B, pair: PairInfo) {
        self.entries.push_back(Entry::Ready(Ready::Skipped {
            buffer,
            pair,
            scores: None,
        }));
    }

    /// Measured pairs still waiting for their scores (held back or in flight).
    pub(crate) fn waiting(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| matches!(e, Entry::Pair { scores: None, .. }))
            .count()
    }

    /// The index of the oldest pair waiting for its scores (what an error of the engine's
    /// names).
    pub(crate) fn oldest_waiting(&self) -> Option<u64> {
        self.entries.iter().find_map(|e| match e {
            Entry::Pair {
                pair, scores: None, ..
            } => Some(pair.frame),
            _ => None,
        })
    }

    /// The scores of the pair submitted as `tag` (what [`Engine::poll`] hands back).
    /// `false` when no pair waits under that tag (the scores are dropped).
    ///
    /// [`Engine::poll`]: gpumetrics_engine::Engine::poll
    pub(crate) fn score(&mut self, tag: Tag, scores: Scores) -> bool {
        let slot = self.entries.iter_mut().find_map(|e| match e {
            Entry::Pair {
                tag: t,
                scores: s @ None,
                ..
            } if *t == tag => Some(s),
            _ => None,
        });
        match slot {
            Some(slot) => {
                *slot = Some(scores);
                true
            }
            None => false,
        }
    }

    /// The engine will not score the waiting pairs (it ended or dropped them, or failed):
    /// they get no scores (an empty record) and their reference buffers are released, so
    /// that every buffer leaves.
    pub(crate) fn finish(&mut self) {
        for e in &mut self.entries {
            if let Entry::Pair {
                scores, reference, ..
            } = e
            {
                *reference = None;
                if scores.is_none() {
                    *scores = Some(Scores::new());
                }
            }
        }
    }

    /// Takes the buffers that can leave now: from the front, up to the first pair still
    /// waiting for its scores.
    pub(crate) fn ready(&mut self) -> Vec<Ready<B>> {
        let mut out = Vec::new();
        while let Some(front) = self.entries.front() {
            if matches!(front, Entry::Pair { scores: None, .. }) {
                break;
            }
            match self.entries.pop_front() {
                Some(Entry::Pair {
                    buffer,
                    pair,
                    scores: Some(scores),
                    ..
                }) if pair.skip => out.push(Ready::Skipped {
                    buffer,
                    pair,
                    scores: Some(scores),
                }),
                Some(Entry::Pair {
                    buffer,
                    pair,
                    scores: Some(scores),
                    ..
                }) => out.push(Ready::Scored {
                    buffer,
                    pair,
                    scores,
                }),
                Some(Entry::Ready(r)) => out.push(r),
                _ => unreachable!("the front was checked"),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(frame: u64) -> PairInfo {
        PairInfo {
            frame,
            running_time: Some(frame * 40),
            arrived: Instant::now(),
            skip: false,
        }
    }

    fn scores(v: f64) -> Scores {
        let mut s = Scores::new();
        s.push("x", v);
        s
    }

    /// What left: `buffer=x` for a scored pair (`buffer=-` without scores), `buffer:u` for
    /// an unmatched buffer.
    fn left(q: &mut Queue<u32>) -> Vec<String> {
        q.ready()
            .into_iter()
            .map(|r| match r {
                Ready::Scored {
                    buffer,
                    pair,
                    scores,
                } => {
                    assert_eq!(pair.running_time, Some(pair.frame * 40));
                    let x = scores.get("x").map_or("-".into(), |v| v.to_string());
                    format!("{buffer}={x}")
                }
                Ready::Unmatched {
                    buffer: Some(b), ..
                } => format!("{b}:u"),
                Ready::Unmatched { side, .. } => format!("{side:?}:u"),
                Ready::Skipped { buffer, pair, .. } => format!("{buffer}:s{}", pair.frame),
                Ready::Stall(e) => format!("stall:{}", if e.end { "end" } else { "start" }),
                Ready::Unaligned { buffer, .. } => format!("{buffer}:a"),
                Ready::Align(a) => format!("align:{}", a.state),
            })
            .collect()
    }

    #[test]
    fn a_stall_leaves_in_order_behind_the_pairs_before_it() {
        let mut q = Queue::default();
        q.push_pair(0, 0, None, info(0));
        let start = StallEvent {
            input: Input::Distorted,
            end: false,
            running_time: 40,
            duration: None,
        };
        q.push_stall(start);
        q.push_unmatched(None, Input::Reference, Some(40));
        assert!(left(&mut q).is_empty(), "the pair waits for its scores");
        assert!(q.score(0, scores(1.0)));
        assert_eq!(left(&mut q), ["0=1", "stall:start", "Reference:u"]);
    }

    #[test]
    fn without_lag_every_pair_leaves_at_once() {
        let mut q = Queue::default();
        q.push_pair(0, 0, None, info(0));
        assert!(!q.score(1, scores(1.0)), "no pair was submitted as 1");
        assert!(q.score(0, scores(1.0)));
        assert_eq!(left(&mut q), ["0=1"]);
        q.push_unmatched(Some(1), Input::Distorted, Some(40));
        assert_eq!(left(&mut q), ["1:u"]);
        assert!(!q.score(0, scores(2.0)), "no pair waits");
    }

    #[test]
    fn held_pairs_keep_unmatched_buffers_behind_them_in_order() {
        // Lag 2: the engine returns pair n's scores when pair n + 2 is pushed.
        let mut q = Queue::default();
        q.push_pair(0, 0, None, info(0));
        q.push_unmatched(Some(1), Input::Distorted, Some(40));
        q.push_pair(1, 2, None, info(1));
        assert_eq!(q.waiting(), 2);
        assert!(left(&mut q).is_empty());
        q.push_pair(2, 3, None, info(2));
        assert!(q.score(0, scores(10.0)));
        assert_eq!(left(&mut q), ["0=10", "1:u"]);
        q.push_unmatched(Some(4), Input::Distorted, Some(160));
        q.push_pair(3, 5, None, info(3));
        assert!(q.score(1, scores(11.0)));
        assert_eq!(left(&mut q), ["2=11"]);
        // End of the sequence: the engine finishes the two held pairs.
        assert_eq!(q.waiting(), 2);
        assert!(q.score(2, scores(12.0)) && q.score(3, scores(13.0)));
        q.finish();
        assert_eq!(left(&mut q), ["3=12", "4:u", "5=13"]);
        assert_eq!(q.waiting(), 0);
    }

    #[test]
    fn skipped_pairs_and_unmatched_reference_frames_keep_their_place() {
        let mut q = Queue::default();
        q.push_pair(0, 0, None, info(0));
        q.push_unmatched(None, Input::Reference, Some(40));
        // Skipped with the engine (lag): its scores are dropped when they come.
        q.push_pair(
            1,
            1,
            None,
            PairInfo {
                skip: true,
                ..info(1)
            },
        );
        q.push_skipped(2, info(2));
        assert!(left(&mut q).is_empty());
        assert!(q.score(0, scores(5.0)));
        assert_eq!(left(&mut q), ["0=5", "Reference:u"]);
        assert!(q.score(1, scores(6.0)));
        assert_eq!(left(&mut q), ["1:s1", "2:s2"]);
    }

    #[test]
    fn pairs_in_flight_wait_and_nothing_overtakes_them() {
        // Two pairs in flight, no lag: the engine returns pair n's scores when pair n + 1 is
        // pushed. A skipped pair and an unmatched buffer queued meanwhile leave after it.
        let mut q = Queue::default();
        q.push_pair(0, 0, None, info(0));
        assert_eq!((q.waiting(), q.oldest_waiting()), (1, Some(0)));
        q.push_skipped(1, info(1));
        q.push_unmatched(Some(2), Input::Distorted, Some(80));
        assert!(left(&mut q).is_empty(), "pair 0 is in flight");
        q.push_pair(2, 3, None, info(2));
        assert!(q.score(0, scores(1.0)));
        assert_eq!(left(&mut q), ["0=1", "1:s1", "2:u"]);
        assert_eq!((q.waiting(), q.oldest_waiting()), (1, Some(2)));
        // End of the run: the pair in flight is waiting, and finished.
        q.push_skipped(4, info(3));
        assert!(q.score(2, scores(2.0)));
        q.finish();
        assert_eq!(left(&mut q), ["3=2", "4:s3"]);
        assert_eq!((q.waiting(), q.oldest_waiting()), (0, None));
    }

    #[test]
    fn pairs_the_engine_did_not_finish_leave_without_scores() {
        let mut q = Queue::default();
        q.push_pair(0, 0, None, info(0));
        q.push_pair(1, 1, None, info(1));
        assert!(q.score(0, scores(1.0)));
        q.finish();
        assert_eq!(left(&mut q), ["0=1", "1=-"]);
    }

    /// Scores come back by tag: a pair completed out of the order the queue holds them
    /// still gets its own scores, and nothing leaves before the pairs in front of it.
    #[test]
    fn scores_go_to_their_tag_not_to_the_oldest_pair() {
        let mut q = Queue::default();
        q.push_pair(7, 0, None, info(0));
        q.push_pair(8, 1, None, info(1));
        assert!(q.score(8, scores(2.0)));
        assert!(left(&mut q).is_empty(), "pair 7 is still waiting");
        assert!(!q.score(8, scores(3.0)), "pair 8 has its scores already");
        assert!(q.score(7, scores(1.0)));
        assert_eq!(left(&mut q), ["0=1", "1=2"]);
    }

    /// Reference buffers stay while the engine reads their frames, and go when it no
    /// longer does or when the pairs are finished.
    #[test]
    fn reference_buffers_are_kept_while_the_engine_reads_them() {
        let mut q = Queue::default();
        for t in 0..4 {
            q.push_pair(t, t as u32, Some(100 + t as u32), info(t));
        }
        // The last two pairs are in flight.
        q.release_unread(|t| t >= 2);
        assert_eq!(q.references(), [&102, &103]);
        q.release_unread(|t| t >= 2);
        assert_eq!(
            q.references(),
            [&102, &103],
            "released once, kept otherwise"
        );
        q.finish();
        assert!(q.references().is_empty());
    }
}
