//! Tickets: the one path a pair takes through an engine.
//!
//! A caller submits a pair with a tag of its own ([`Tag`]) and later takes back `(tag,
//! scores)` in submission order, each pair with its own final scores. Between the two a
//! pair goes through two stages, both owned here and nowhere else:
//!
//! 1. **In flight**: submitted to the backend, its work queued (on the GPU) and its fields
//!    not read yet. The backend may read the pair's frames until it completes the pair;
//!    [`Scheduler::reads`] says which tags those are, so that a caller lending device
//!    frames knows when it may give them back. At most [`Backend::depth`] pairs are in
//!    flight: a submit that fills the backend completes the oldest one.
//! 2. **Held back**: completed, but its temporal metrics' fields (VMAF's motion needs the
//!    next reference frame) come with a later pair, [`Backend::lag`] pairs after it, or at
//!    the end of the sequence ([`Scheduler::end`]). The pair's frames are no longer read:
//!    temporal metrics keep their own copy of what they need.
//!
//! Whatever is complete waits in the ready queue for [`Scheduler::poll`]. Tags are opaque
//! here: the caller keeps whatever it needs of a pair (buffers, timestamps) under its tag,
//! and nothing matches scores to pairs by counting.
//!
//! An error of the device while a pair is in flight drops every pair not yet ready (their
//! frames are no longer read once the error is returned); the caller releases what it
//! holds under their tags.

use std::collections::VecDeque;

use crate::error::EngineError;
use crate::frame::Frame;
use crate::metric::temporal::Held;
use crate::plan::Plan;
use crate::scores::Scores;

/// The caller's name for a pair, given to [`crate::Engine::submit`] and handed back with
/// the pair's scores. Any number: the engine only carries it.
pub type Tag = u64;

/// A pair's frames for [`crate::Engine::submit`].
#[derive(Clone, Copy, Debug)]
pub enum Frames<'a> {
    /// A reference and a distorted frame (an engine built with both layouts).
    Pair {
        reference: &'a Frame<'a>,
        distorted: &'a Frame<'a>,
    },
    /// One input alone (an engine built with [`crate::Engine::single_builder`]).
    Single(&'a Frame<'a>),
}

/// Where an engine's kernels run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    Cuda,
    Cpu,
}

impl BackendKind {
    /// "cuda" or "cpu".
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Cuda => "cuda",
            BackendKind::Cpu => "cpu",
        }
    }
}

pub(crate) trait Backend: Send {
    fn kind(&self) -> BackendKind;

    /// Pairs the backend can have in flight: submitted, their fields not taken yet (1: it
    /// measures a pair before it takes the next).
    fn depth(&self) -> usize {
        1
    }

    /// Starts measuring one pair with every metric of the plan: validates the frames,
    /// brings host frames to where the kernels run and queues the metrics' work. At most
    /// [`Backend::depth`] pairs are in flight; the frames must stay valid until
    /// [`Backend::complete`] has taken this pair's fields.
    fn submit(
        &mut self,
        plan: &Plan,
        reference: &Frame,
        distorted: &Frame,
    ) -> Result<(), EngineError>;

    /// Finishes the oldest pair submitted, appending its fields in registry order: those
    /// of metrics without lag to `scores`, those of temporal metrics (of the pair
    /// [`Held::lag`] pairs back, `crate::metric::temporal`) to `late`.
    fn complete(
        &mut self,
        plan: &Plan,
        scores: &mut Scores,
        late: &mut Scores,
    ) -> Result<(), EngineError>;

    /// Pairs submitted and not completed (the scheduler's check that a failed submit
    /// dropped them, `crate::schedule`).
    fn in_flight(&self) -> usize;

    /// Drops the pairs in flight (a flush, or after an error), once the device no longer
    /// reads their frames.
    fn abandon(&mut self);

    /// The metrics' held pairs: their lag, the end of a sequence, a flush.
    fn lineup(&mut self) -> &mut dyn Held;

    /// As [`Held::lag`].
    fn lag(&self) -> usize;
}

/// The pairs between submit and poll, and the backend that measures them.
pub(crate) struct Scheduler {
    backend: Box<dyn Backend>,
    /// Submitted and not completed, oldest first: the backend may still read their frames.
    in_flight: VecDeque<Tag>,
    /// Completed, their instant fields known, waiting for their temporal fields.
    held: VecDeque<(Tag, Scores)>,
    /// Complete, for [`Scheduler::poll`].
    ready: VecDeque<(Tag, Scores)>,
}

impl Scheduler {
    pub(crate) fn new(backend: Box<dyn Backend>) -> Scheduler {
        let depth = backend.depth();
        Scheduler {
            backend,
            in_flight: VecDeque::with_capacity(depth),
            held: VecDeque::new(),
            ready: VecDeque::new(),
        }
    }

    pub(crate) fn backend(&self) -> &dyn Backend {
        &*self.backend
    }

    /// Pairs held back before their scores are final ([`Backend::lag`]).
    pub(crate) fn lag(&self) -> usize {
        self.backend.lag()
    }

    /// Pairs that may be in flight ([`Backend::depth`]).
    pub(crate) fn depth(&self) -> usize {
        self.backend.depth()
    }

    /// Submits a pair: its work is queued, and when the backend is then full the oldest
    /// pair in flight is completed. A frame that does not fit its layout is refused before
    /// anything is queued, and the pairs before it are kept; a device error drops every
    /// pair not ready yet (see the module's documentation).
    pub(crate) fn submit(
        &mut self,
        plan: &Plan,
        reference: &Frame,
        distorted: &Frame,
        tag: Tag,
    ) -> Result<(), EngineError> {
        if let Err(e) = self.backend.submit(plan, reference, distorted) {
            // A refused frame leaves the pairs in flight as they were; a failure after the
            // backend started queueing drops them there, and so every pair not ready here.
            if self.backend.in_flight() < self.in_flight.len() {
                self.reset();
            }
            return Err(e);
        }
        self.in_flight.push_back(tag);
        if self.in_flight.len() >= self.backend.depth() {
            self.complete(plan)?;
        }
        Ok(())
    }

    /// Completes the oldest pair in flight.
    fn complete(&mut self, plan: &Plan) -> Result<(), EngineError> {
        let (mut now, mut late) = (Scores::new(), Scores::new());
        if let Err(e) = self.backend.complete(plan, &mut now, &mut late) {
            self.reset();
            return Err(e);
        }
        let tag = self
            .in_flight
            .pop_front()
            .expect("the backend completed a pair the scheduler submitted");
        let lag = self.backend.lag();
        if lag == 0 {
            self.ready.push_back((tag, now));
            return Ok(());
        }
        self.held.push_back((tag, now));
        if self.held.len() > lag {
            let (tag, mut scores) = self.held.pop_front().expect("more than lag held");
            scores.append(late);
            self.ready.push_back((tag, scores));
        }
        Ok(())
    }

    /// Completes every pair in flight, so that their frames are no longer read and the
    /// pairs without lag are ready; pairs held back stay held, in their sequence.
    pub(crate) fn settle(&mut self, plan: &Plan) -> Result<(), EngineError> {
        while !self.in_flight.is_empty() {
            self.complete(plan)?;
        }
        Ok(())
    }

    /// End of the sequence (EOS, caps change): every pair becomes ready, the held ones
    /// scored as the last pairs of a sequence are; the next pair starts a new sequence.
    pub(crate) fn end(&mut self, plan: &Plan) -> Result<(), EngineError> {
        self.settle(plan)?;
        let mut late = vec![Scores::new(); self.held.len()];
        self.backend.lineup().finish(plan, &mut late);
        for ((tag, mut scores), late) in self.held.drain(..).zip(late) {
            scores.append(late);
            self.ready.push_back((tag, scores));
        }
        Ok(())
    }

    /// The oldest ready pair's tag and scores.
    pub(crate) fn poll(&mut self) -> Option<(Tag, Scores)> {
        self.ready.pop_front()
    }

    /// Whether the backend may still read the frames of the pair `tag` (it is in flight).
    pub(crate) fn reads(&self, tag: Tag) -> bool {
        self.in_flight.contains(&tag)
    }

    /// Pairs submitted and not complete (in flight or held back).
    pub(crate) fn pending(&self) -> usize {
        self.in_flight.len() + self.held.len()
    }

    /// The next pair submitted starts a window of the caller's
    /// ([`crate::Engine::start_window`]): the metrics hear it before that pair's work.
    pub(crate) fn start_window(&mut self) {
        self.backend.lineup().window_start();
    }

    /// Drops every pair not ready and the state across pairs (a flush, or after a device
    /// error); returns the tags dropped, oldest first. Ready pairs stay ready.
    pub(crate) fn reset(&mut self) -> Vec<Tag> {
        self.backend.abandon();
        self.backend.lineup().reset();
        // Held pairs were submitted before those in flight: oldest first as they come.
        self.held
            .drain(..)
            .map(|(t, _)| t)
            .chain(self.in_flight.drain(..))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{FrameLayout, PixelFormat};

    /// A backend whose "metric" gives each pair its submission number, with `lag` pairs
    /// of lag for a second, late field, and `depth` pairs in flight.
    struct Counting {
        depth: usize,
        lag: usize,
        submitted: u32,
        completed: u32,
        lineup: Lineup,
        fail_at: Option<u32>,
    }

    struct Lineup {
        lag: usize,
        /// Numbers of the pairs whose late field has not been given.
        held: VecDeque<u32>,
    }

    impl Held for Lineup {
        fn lag(&self) -> usize {
            self.lag
        }
        fn finish(&mut self, _: &Plan, late: &mut [Scores]) {
            for (s, n) in late.iter_mut().zip(self.held.drain(..)) {
                s.push("late", n as f64);
            }
        }
        fn reset(&mut self) {
            self.held.clear();
        }
        fn window_start(&mut self) {}
    }

    impl Backend for Counting {
        fn kind(&self) -> BackendKind {
            BackendKind::Cpu
        }
        fn depth(&self) -> usize {
            self.depth
        }
        fn submit(&mut self, _: &Plan, _: &Frame, _: &Frame) -> Result<(), EngineError> {
            self.submitted += 1;
            Ok(())
        }
        fn complete(
            &mut self,
            _: &Plan,
            now: &mut Scores,
            late: &mut Scores,
        ) -> Result<(), EngineError> {
            if self.fail_at == Some(self.completed) {
                return Err(EngineError::Cuda("injected".into()));
            }
            now.push("now", self.completed as f64);
            self.lineup.held.push_back(self.completed);
            if self.lineup.held.len() > self.lag {
                let n = self.lineup.held.pop_front().unwrap();
                late.push("late", n as f64);
            }
            self.completed += 1;
            Ok(())
        }
        fn in_flight(&self) -> usize {
            (self.submitted - self.completed) as usize
        }
        fn abandon(&mut self) {
            self.completed = self.submitted;
        }
        fn lineup(&mut self) -> &mut dyn Held {
            &mut self.lineup
        }
        fn lag(&self) -> usize {
            self.lag
        }
    }

    fn scheduler(depth: usize, lag: usize) -> Scheduler {
        Scheduler::new(Box::new(Counting {
            depth,
            lag,
            submitted: 0,
            completed: 0,
            lineup: Lineup {
                lag,
                held: VecDeque::new(),
            },
            fail_at: None,
        }))
    }

    fn plan() -> Plan {
        let l = FrameLayout {
            format: PixelFormat::Gray8,
            width: 8,
            height: 8,
        };
        Plan::new(l, l).unwrap()
    }

    fn frame() -> Frame<'static> {
        static DATA: [u8; 64] = [0; 64];
        Frame::Host(crate::HostFrame::new(&[crate::Plane {
            data: &DATA,
            stride: 8,
        }]))
    }

    /// Every tag comes back once, in order, with its own pair's fields, whatever the
    /// depth and the lag.
    #[test]
    fn every_tag_gets_its_own_scores_in_submission_order() {
        let (plan, f) = (plan(), frame());
        for depth in 1..=4 {
            for lag in 0..=2 {
                let mut s = scheduler(depth, lag);
                let mut out = Vec::new();
                for i in 0..7u64 {
                    s.submit(&plan, &f, &f, 100 + i).unwrap();
                    // The pair just submitted is read until it is completed.
                    assert_eq!(s.reads(100 + i), depth > 1, "depth {depth}");
                    out.extend(std::iter::from_fn(|| s.poll()));
                    assert!(s.pending() <= depth - 1 + lag, "depth {depth} lag {lag}");
                }
                s.end(&plan).unwrap();
                out.extend(std::iter::from_fn(|| s.poll()));
                assert_eq!(s.pending(), 0);
                let tags: Vec<Tag> = out.iter().map(|(t, _)| *t).collect();
                assert_eq!(
                    tags,
                    (100..107).collect::<Vec<_>>(),
                    "depth {depth} lag {lag}"
                );
                for (i, (_, scores)) in out.iter().enumerate() {
                    assert_eq!(scores.get("now"), Some(i as f64));
                    if lag > 0 {
                        assert_eq!(scores.get("late"), Some(i as f64), "pair {i}");
                    }
                }
            }
        }
    }

    #[test]
    fn settle_completes_the_pairs_in_flight_and_keeps_the_held_ones() {
        let (plan, f) = (plan(), frame());
        let mut s = scheduler(3, 1);
        s.submit(&plan, &f, &f, 1).unwrap();
        s.submit(&plan, &f, &f, 2).unwrap();
        assert!(s.reads(1) && s.reads(2));
        s.settle(&plan).unwrap();
        assert!(!s.reads(1) && !s.reads(2));
        // Pair 1's late field came with pair 2; pair 2 waits for the next pair.
        assert_eq!(s.poll().map(|(t, _)| t), Some(1));
        assert_eq!(s.poll(), None);
        assert_eq!(s.pending(), 1);
        s.end(&plan).unwrap();
        let (tag, scores) = s.poll().unwrap();
        assert_eq!((tag, scores.get("late")), (2, Some(1.0)));
    }

    #[test]
    fn a_device_error_drops_the_pairs_not_ready_and_reset_names_them() {
        let (plan, f) = (plan(), frame());
        let mut s = scheduler(2, 1);
        s.submit(&plan, &f, &f, 10).unwrap();
        s.submit(&plan, &f, &f, 11).unwrap();
        s.submit(&plan, &f, &f, 12).unwrap();
        assert_eq!(s.poll().map(|(t, _)| t), Some(10));
        // 11 held back, 12 in flight: a flush drops both, oldest first.
        assert_eq!(s.reset(), [11, 12]);
        assert_eq!(s.pending(), 0);

        let mut s = Scheduler::new(Box::new(Counting {
            depth: 2,
            lag: 0,
            submitted: 0,
            completed: 0,
            lineup: Lineup {
                lag: 0,
                held: VecDeque::new(),
            },
            fail_at: Some(1),
        }));
        s.submit(&plan, &f, &f, 1).unwrap();
        s.submit(&plan, &f, &f, 2).unwrap();
        s.submit(&plan, &f, &f, 3).unwrap_err();
        // Pair 1 was ready before the failure; 2 and 3 are gone.
        assert_eq!(s.poll().map(|(t, _)| t), Some(1));
        assert_eq!(s.pending(), 0);
    }
}
