//! No-reference metrics ([`Reference::None`](super::Reference::None)): one frame in, fields
//! out, computed on the distorted frame and on the reference frame, with their own state
//! for each (SI/TI's previous frame is per input).
//!
//! A no-reference metric is written per backend as a [`CpuSingle`] or a [`CudaSingle`]
//! (one frame of one [`Side`]) and its entry wraps it in [`NoReference`], which is the
//! [`CpuMetric`] or [`CudaMetric`] the backend runs: it measures the distorted frame, then
//! the reference frame, so a record holds the metric's distorted fields followed by its
//! `ref-` fields. The metric picks the field names of a side with [`Side::name`]. It has
//! no lag: state across frames (the previous frame, [`Restart`]) is restarted at the end of
//! a sequence and at a flush, as the temporal metrics' is.

use cudarc::driver::DriverError;

use super::temporal::{Restart, Sequenced};
use super::{CpuMetric, CudaMetric, CudaState};
use crate::color::Colorimetry;
use crate::cuda::Gpu;
use crate::error::EngineError;
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
pub(crate) trait CpuSingle: Send + Restart {
    /// Measures one validated host frame of `side` and appends its fields.
    fn measure(&mut self, plan: &Plan, side: Side, frame: &PlanePtrs, out: &mut Scores);
}

/// A no-reference metric's per-plan state for one side, on the CUDA backend (its buffers
/// allocated once, for the side's layout).
pub(crate) trait CudaSingle: Send + Restart {
    /// Queues the frame's kernels and result copy without waiting ([`CudaMetric::queue`]);
    /// `measure` then waits and reads. The default queues nothing (all in `measure`).
    fn queue(
        &mut self,
        _gpu: &Gpu,
        _plan: &Plan,
        _side: Side,
        _frame: &PlanePtrs,
    ) -> Result<(), EngineError> {
        Ok(())
    }

    /// Queues the metric's kernels for one validated device frame of `side` on the
    /// engine's stream, waits for its sums and appends its fields.
    fn measure(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        side: Side,
        frame: &PlanePtrs,
        out: &mut Scores,
    ) -> Result<(), EngineError>;
}

/// A no-reference metric on both inputs: a [`CpuMetric`] without lag.
pub(crate) struct NoReference<S> {
    distorted: S,
    reference: Option<S>,
}

impl<S: CpuSingle + 'static> NoReference<S> {
    /// The metric, one state per side from `make` (none for the reference side when the
    /// plan has no reference input, [`Plan::single`]); `None` when the distorted side
    /// cannot be measured.
    pub(crate) fn boxed(
        plan: &Plan,
        make: impl Fn(Side) -> Option<S>,
    ) -> Option<Box<dyn CpuMetric>> {
        let distorted = make(Side::Distorted)?;
        Some(Box::new(NoReference {
            distorted,
            reference: if plan.has_reference {
                make(Side::Reference)
            } else {
                None
            },
        }))
    }
}

impl<S: CudaSingle + 'static> NoReference<S> {
    /// The metric on the CUDA backend, one state per side from `make` (as
    /// [`NoReference::boxed`]).
    pub(crate) fn cuda_boxed(
        plan: &Plan,
        mut make: impl FnMut(Side) -> Result<Option<S>, DriverError>,
    ) -> CudaState {
        let Some(distorted) = make(Side::Distorted)? else {
            return Ok(None);
        };
        let reference = if plan.has_reference {
            make(Side::Reference)?
        } else {
            None
        };
        Ok(Some(Box::new(NoReference {
            distorted,
            reference,
        })))
    }
}

impl<S: Restart> Sequenced for NoReference<S> {
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

impl<S: CudaSingle> CudaMetric for NoReference<S> {
    fn queue(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
    ) -> Result<(), EngineError> {
        self.distorted.queue(gpu, plan, Side::Distorted, d)?;
        if let Some(s) = &mut self.reference {
            s.queue(gpu, plan, Side::Reference, r)?;
        }
        Ok(())
    }

    fn measure(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
        scores: &mut Scores,
    ) -> Result<(), EngineError> {
        self.distorted
            .measure(gpu, plan, Side::Distorted, d, scores)?;
        if let Some(s) = &mut self.reference {
            s.measure(gpu, plan, Side::Reference, r, scores)?;
        }
        Ok(())
    }
}
