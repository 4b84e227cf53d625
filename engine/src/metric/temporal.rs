//! Holding pairs back: the one mechanism for metrics whose fields for a pair depend on the
//! pairs after it (VMAF's motion2 needs the next reference frame; motion3 and CAMBI-like
//! windows need more), shared by the CPU and CUDA backends and the engine.
//!
//! * A temporal metric is written as two halves: a [`Window`] (in the metric's `mod.rs`,
//!   once) that turns a pair's per-frame values and those of the pairs after it into
//!   fields, and per backend a source of those per-frame values ([`CpuFrames`],
//!   [`CudaFrames`], both [`Restart`]). [`Temporal`] joins them into a [`CpuMetric`] or a
//!   [`CudaMetric`] and does the holding, the end of a sequence and the flush.
//! * A backend keeps its metrics in a [`Lineup`], which routes each metric's fields to
//!   the pair they belong to and aligns every temporal metric to the largest lag, so that
//!   the late fields of one call always belong to one pair.
//! * The scheduler (`crate::schedule`) keeps the instant fields of the pairs held back,
//!   under their tags, and joins them with their late fields.

use std::collections::VecDeque;

use crate::cuda::Gpu;
use crate::error::EngineError;
use crate::frame::PlanePtrs;
use crate::plan::Plan;
pub(crate) use crate::registry::Sequenced;
use crate::registry::{CpuMetric, CudaMetric};
use crate::scores::Scores;

/// The metric half of a temporal metric: from per-pair values to fields.
pub(crate) trait Window: Send {
    /// What the metric keeps of each pair until its fields can be computed.
    type Frame: Send;
    /// Pairs after a pair that its fields need (fixed for the window's life: the engine
    /// lines its metrics up by it).
    fn lag(&self) -> usize;

    /// Appends the fields of `frame`, given the frames after it: `lag` of them, fewer at
    /// the end of a sequence. Called once per pair, in order; the window may keep state
    /// across the pairs of a sequence.
    fn fields(
        &mut self,
        plan: &Plan,
        frame: &Self::Frame,
        following: &[Self::Frame],
        out: &mut Scores,
    );

    /// The next pair starts a sequence: forget the state across pairs.
    fn restart(&mut self) {}
}

/// What both backends' halves of a temporal metric have.
pub(crate) trait Restart {
    /// Forgets state across pairs (e.g. the previous frame a motion is measured against).
    fn restart(&mut self);
}

/// The CPU half of a temporal metric: one pair's per-frame values.
pub(crate) trait CpuFrames: Send + Restart {
    type Frame;
    fn frame(&mut self, plan: &Plan, r: &PlanePtrs, d: &PlanePtrs) -> Self::Frame;
}

/// The CUDA half of a temporal metric: one pair's per-frame values.
pub(crate) trait CudaFrames: Send + Restart {
    type Frame;

    /// Queues a pair's work without waiting, as [`CudaMetric::queue`]; `read` then reads
    /// the oldest pair queued.
    fn queue(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
    ) -> Result<(), EngineError>;

    /// As [`CudaMetric::drop_queued`].
    fn drop_queued(&mut self) {}

    /// Waits for the oldest pair queued and gives its values; an error when no pair is
    /// queued.
    fn read(&mut self, plan: &Plan) -> Result<Self::Frame, EngineError>;
}

/// A temporal metric: its window, its backend's frame source and the frames held; a
/// [`CpuMetric`] or a [`CudaMetric`] by its source.
pub(crate) struct Temporal<W: Window, S> {
    window: W,
    source: S,
    frames: VecDeque<W::Frame>,
    /// Frames held before the oldest one's fields are emitted (>= the window's lag).
    delay: usize,
}

impl<W: Window, S> Temporal<W, S> {
    pub(crate) fn new(window: W, source: S) -> Self {
        Temporal {
            window,
            source,
            frames: VecDeque::new(),
            delay: 0,
        }
        .with_own_lag()
    }

    fn with_own_lag(mut self) -> Self {
        self.delay = self.window.lag();
        self
    }

    /// Takes a pair's values; appends the fields of the pair `delay` pairs before it, if
    /// there is one.
    fn take(&mut self, plan: &Plan, frame: W::Frame, late: &mut Scores) {
        self.frames.push_back(frame);
        if self.frames.len() > self.delay {
            let frames = self.frames.make_contiguous();
            let following = &frames[1..=self.window.lag().min(frames.len() - 1)];
            self.window.fields(plan, &frames[0], following, late);
            self.frames.pop_front();
        }
    }

    fn drain(&mut self, plan: &Plan, late: &mut [Scores]) {
        debug_assert!(self.frames.len() <= late.len());
        let mut out = late.iter_mut();
        while !self.frames.is_empty() {
            let frames = self.frames.make_contiguous();
            let following = &frames[1..=self.window.lag().min(frames.len() - 1)];
            if let Some(s) = out.next() {
                self.window.fields(plan, &frames[0], following, s);
            }
            self.frames.pop_front();
        }
    }
}

impl<W: Window, S: Restart> Sequenced for Temporal<W, S> {
    fn lag(&self) -> usize {
        self.window.lag()
    }
    fn align(&mut self, lag: usize) {
        self.delay = lag.max(self.window.lag());
    }
    fn finish(&mut self, plan: &Plan, late: &mut [Scores]) {
        self.drain(plan, late);
        self.window.restart();
        self.source.restart();
    }
    fn reset(&mut self) {
        self.frames.clear();
        self.window.restart();
        self.source.restart();
    }
}

impl<W: Window, S: CpuFrames<Frame = W::Frame>> CpuMetric for Temporal<W, S> {
    fn measure(&mut self, plan: &Plan, r: &PlanePtrs, d: &PlanePtrs, late: &mut Scores) {
        let frame = self.source.frame(plan, r, d);
        self.take(plan, frame, late);
    }
}

impl<W: Window, S: CudaFrames<Frame = W::Frame>> CudaMetric for Temporal<W, S> {
    fn queue(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
        _uploaded: Option<&cudarc::driver::CudaEvent>,
    ) -> Result<(), EngineError> {
        self.source.queue(gpu, plan, r, d)
    }

    fn drop_queued(&mut self) {
        self.source.drop_queued();
    }

    fn read(&mut self, plan: &Plan, late: &mut Scores) -> Result<(), EngineError> {
        let frame = self.source.read(plan)?;
        self.take(plan, frame, late);
        Ok(())
    }
}

/// A backend's metric states in registry order, with the lag they share.
pub(crate) struct Lineup<M: ?Sized + Sequenced> {
    metrics: Vec<Box<M>>,
    lag: usize,
}

impl<M: ?Sized + Sequenced> Lineup<M> {
    pub(crate) fn new(mut metrics: Vec<Box<M>>) -> Self {
        let lag = metrics.iter().map(|m| m.lag()).max().unwrap_or(0);
        for m in &mut metrics {
            m.align(lag);
        }
        Lineup { metrics, lag }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.metrics.is_empty()
    }

    /// Every metric, in order (e.g. to queue their work before any of them waits).
    pub(crate) fn each(
        &mut self,
        mut f: impl FnMut(&mut M) -> Result<(), EngineError>,
    ) -> Result<(), EngineError> {
        self.metrics.iter_mut().try_for_each(|m| f(m))
    }

    /// Lets every metric measure one pair: `f(metric, out)` with `out` the scores of this
    /// pair for metrics without lag, the late scores (of the pair `lag` pairs back) for
    /// temporal ones.
    pub(crate) fn measure(
        &mut self,
        now: &mut Scores,
        late: &mut Scores,
        mut f: impl FnMut(&mut M, &mut Scores) -> Result<(), EngineError>,
    ) -> Result<(), EngineError> {
        for m in &mut self.metrics {
            let out = if m.lag() > 0 { &mut *late } else { &mut *now };
            f(m, out)?;
        }
        Ok(())
    }
}

/// What the engine asks of a backend's [`Lineup`], whatever its metric type.
pub(crate) trait Held: Send {
    /// The largest lag of the metrics.
    fn lag(&self) -> usize;
    /// As [`Sequenced::finish`], for every metric.
    fn finish(&mut self, plan: &Plan, late: &mut [Scores]);
    /// As [`Sequenced::reset`], for every metric.
    fn reset(&mut self);
    /// As [`Sequenced::window_start`], for every metric.
    fn window_start(&mut self);
}

impl<M: ?Sized + Sequenced + Send> Held for Lineup<M> {
    fn lag(&self) -> usize {
        self.lag
    }
    fn finish(&mut self, plan: &Plan, late: &mut [Scores]) {
        for m in &mut self.metrics {
            m.finish(plan, late);
        }
    }
    fn reset(&mut self) {
        for m in &mut self.metrics {
            m.reset();
        }
    }
    fn window_start(&mut self) {
        for m in &mut self.metrics {
            m.window_start();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scheduler's held stage in miniature (`crate::schedule`): the instant fields of
    /// the pairs held back, until their late fields arrive.
    #[derive(Debug, Default)]
    struct Pending {
        held: VecDeque<Scores>,
    }

    impl Pending {
        /// Takes a pair's instant fields and the late fields of the pair `lag` pairs back;
        /// returns that pair's complete scores once there is one.
        fn push(&mut self, lag: usize, now: Scores, late: Scores) -> Option<Scores> {
            if lag == 0 {
                return Some(now);
            }
            self.held.push_back(now);
            if self.held.len() > lag {
                let mut done = self.held.pop_front().expect("more than lag held");
                done.append(late);
                return Some(done);
            }
            None
        }

        /// Pairs held.
        fn len(&self) -> usize {
            self.held.len()
        }

        /// End of a sequence: the held pairs, oldest first, each with its late fields from
        /// `late` (as long as [`Pending::len`]).
        fn finish(&mut self, late: Vec<Scores>) -> Vec<Scores> {
            self.held
                .drain(..)
                .zip(late)
                .map(|(mut s, l)| {
                    s.append(l);
                    s
                })
                .collect()
        }

        fn reset(&mut self) {
            self.held.clear();
        }
    }

    /// A window over numbers: a frame's field is itself plus the sum of the following.
    struct Sum<const L: usize>;
    impl<const L: usize> Window for Sum<L> {
        type Frame = f64;
        fn lag(&self) -> usize {
            L
        }
        fn fields(&mut self, _: &Plan, frame: &f64, following: &[f64], out: &mut Scores) {
            out.push("sum", frame + following.iter().sum::<f64>());
        }
    }
    /// Frames 1, 2, 3, ... counted since the last restart.
    struct Count(f64);
    impl CpuFrames for Count {
        type Frame = f64;
        fn frame(&mut self, _: &Plan, _: &PlanePtrs, _: &PlanePtrs) -> f64 {
            self.0 += 1.0;
            self.0
        }
    }
    impl Restart for Count {
        fn restart(&mut self) {
            self.0 = 0.0;
        }
    }

    fn plan() -> Plan {
        let l = crate::FrameLayout {
            format: crate::PixelFormat::Gray8,
            width: 8,
            height: 8,
        };
        Plan::new(l, l).unwrap()
    }

    fn run(lineup: &mut Lineup<dyn CpuMetric>, pending: &mut Pending, n: usize) -> Vec<Scores> {
        let (plan, p) = (plan(), PlanePtrs::default());
        let mut out = Vec::new();
        for _ in 0..n {
            let (mut now, mut late) = (Scores::new(), Scores::new());
            lineup
                .measure(&mut now, &mut late, |m, s| {
                    m.measure(&plan, &p, &p, s);
                    Ok(())
                })
                .unwrap();
            out.extend(pending.push(lineup.lag(), now, late));
        }
        let mut late = vec![Scores::new(); pending.len()];
        lineup.finish(&plan, &mut late);
        out.extend(pending.finish(late));
        out
    }

    #[test]
    fn every_pair_gets_its_fields_once_in_order_whatever_the_lags() {
        let metrics: Vec<Box<dyn CpuMetric>> = vec![
            Box::new(Temporal::new(Sum::<1>, Count(0.0))),
            Box::new(Temporal::new(Sum::<2>, Count(0.0))),
        ];
        let mut lineup = Lineup::new(metrics);
        assert_eq!(lineup.lag(), 2);
        let mut pending = Pending::default();
        let out = run(&mut lineup, &mut pending, 4);
        let sums: Vec<Vec<f64>> = out
            .iter()
            .map(|s| s.iter().map(|f| f.1).collect())
            .collect();
        // Frames 1..4: lag-1 sums 1+2, 2+3, 3+4, 4; lag-2 sums 1+2+3, 2+3+4, 3+4, 4.
        assert_eq!(
            sums,
            [
                vec![3.0, 6.0],
                vec![5.0, 9.0],
                vec![7.0, 7.0],
                vec![4.0, 4.0]
            ]
        );
        // finish restarted the sources: a new sequence counts from 1 again.
        let out = run(&mut lineup, &mut pending, 1);
        assert_eq!(out[0].get("sum"), Some(1.0));
    }

    #[test]
    fn reset_drops_held_pairs_and_restarts() {
        let metrics: Vec<Box<dyn CpuMetric>> = vec![Box::new(Temporal::new(Sum::<1>, Count(0.0)))];
        let mut lineup = Lineup::new(metrics);
        let mut pending = Pending::default();
        let (plan, p) = (plan(), PlanePtrs::default());
        let (mut now, mut late) = (Scores::new(), Scores::new());
        lineup
            .measure(&mut now, &mut late, |m, s| {
                m.measure(&plan, &p, &p, s);
                Ok(())
            })
            .unwrap();
        assert_eq!(pending.push(1, now, late), None);
        lineup.reset();
        pending.reset();
        assert_eq!(pending.len(), 0);
        let out = run(&mut lineup, &mut pending, 2);
        assert_eq!(out[0].get("sum"), Some(3.0));
    }
}
