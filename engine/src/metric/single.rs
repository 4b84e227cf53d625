//! No-reference metrics ([`Reference::None`](super::Reference::None)): one frame in, fields
//! out, computed on the distorted frame and on the reference frame, with their own state
//! for each (SI/TI's previous frame is per input).
//!
//! A no-reference metric is written as a [`CpuSingle`] (one frame of one [`Side`]) and its
//! entry wraps it in [`NoReference`], which is the [`CpuMetric`] the backend runs: it
//! measures the distorted frame, then the reference frame, so a record holds the metric's
//! distorted fields followed by its `ref-` fields. The metric picks the field names of a
//! side with [`Side::name`]. It has no lag: state across frames (the previous frame) is
//! restarted at the end of a sequence and at a flush, as the temporal metrics' is.
//!
//! The CUDA half (a `CudaSingle` with the same shape, wrapped the same way) comes with the
//! first no-reference metric that has GPU kernels.

use super::CpuMetric;
use super::temporal::Sequenced;
use crate::color::Colorimetry;
use crate::format::FrameLayout;
use crate::frame::PlanePtrs;
use crate::plan::Plan;
use crate::scores::Scores;

/// Which input a no-reference metric measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    Distorted,
    Reference,
}

impl Side {
    /// The side's frame layout in the plan.
    pub(crate) fn layout(self, plan: &Plan) -> &FrameLayout {
        match self {
            Side::Distorted => &plan.distorted,
            Side::Reference => &plan.reference,
        }
    }

    /// The side's colorimetry in the plan.
    pub(crate) fn colorimetry(self, plan: &Plan) -> &Colorimetry {
        match self {
            Side::Distorted => &plan.colorimetry[1],
            Side::Reference => &plan.colorimetry[0],
        }
    }

    /// The side's name of a field declared as `[name, ref-name]`.
    pub(crate) fn name(self, names: [&'static str; 2]) -> &'static str {
        match self {
            Side::Distorted => names[0],
            Side::Reference => names[1],
        }
    }
}

/// A no-reference metric's per-plan state for one side, on the CPU backend.
pub(crate) trait CpuSingle: Send {
    /// Measures one validated host frame of `side` and appends its fields.
    fn measure(&mut self, plan: &Plan, side: Side, frame: &PlanePtrs, out: &mut Scores);

    /// Forgets state across frames (a new sequence).
    fn restart(&mut self) {}
}

/// A no-reference metric on both inputs: a [`CpuMetric`] without lag.
pub(crate) struct NoReference<S> {
    distorted: S,
    reference: Option<S>,
}

impl<S: CpuSingle + 'static> NoReference<S> {
    /// The metric, one state per side from `make`; `None` when the distorted
    /// side cannot be measured. (A run without a reference frame will build no reference
    /// state here: the next step of single-input mode, see docs/METRICS.md.)
    pub(crate) fn boxed(make: impl Fn(Side) -> Option<S>) -> Option<Box<dyn CpuMetric>> {
        let distorted = make(Side::Distorted)?;
        Some(Box::new(NoReference {
            distorted,
            reference: make(Side::Reference),
        }))
    }
}

impl<S: CpuSingle> Sequenced for NoReference<S> {
    fn finish(&mut self, _plan: &Plan, _late: &mut [Scores]) {
        self.reset();
    }

    fn reset(&mut self) {
        self.distorted.restart();
        if let Some(r) = &mut self.reference {
            r.restart();
        }
    }
}

impl<S: CpuSingle> CpuMetric for NoReference<S> {
    fn measure(&mut self, plan: &Plan, r: &PlanePtrs, d: &PlanePtrs, scores: &mut Scores) {
        self.distorted.measure(plan, Side::Distorted, d, scores);
        if let Some(s) = &mut self.reference {
            s.measure(plan, Side::Reference, r, scores);
        }
    }
}
