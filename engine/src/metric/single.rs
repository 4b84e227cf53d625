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
//!
//! On the CUDA backend each side of each no-reference metric runs on its own stream (a
//! [`Lanes`] entry, forked from the engine's): these kernels are small and mostly wait on
//! memory latency, so those of different metrics and sides overlap on the device instead of
//! queueing behind one another. Each lane waits for the engine's stream (the frame's
//! uploads) before its kernels; `measure` waits for its own lane only.

use cudarc::driver::{CudaEvent, DriverError};

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
///
/// Frames may be in flight ([`crate::cuda::IN_FLIGHT`]): `queue` may be called for the
/// next frame before `measure` read this one, so the results come back through a
/// [`crate::cuda::Readback`] and state that the next frame's kernels need (the previous
/// frame, which buffer is the reference) stays on the device or is settled when queueing.
pub(crate) trait CudaSingle: Send + Restart {
    /// Queues the frame's kernels and result copy on the side's stream without waiting
    /// ([`CudaMetric::queue`]).
    fn queue(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        side: Side,
        frame: &PlanePtrs,
    ) -> Result<(), EngineError>;

    /// Waits for the oldest frame queued and appends its fields; with nothing queued it
    /// queues `frame` first.
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
    /// The sides' streams on the CUDA backend (none on the CPU backend).
    lanes: Option<Lanes>,
}

/// The CUDA streams of a no-reference metric's sides, and the event that orders them after
/// the engine's stream.
struct Lanes {
    distorted: Gpu,
    reference: Option<Gpu>,
    /// Recorded on the engine's stream when a frame's kernels are queued: where the frame's
    /// uploads (and every earlier use of the lanes' inputs) end.
    ready: CudaEvent,
    /// Frames queued on the lanes and not measured yet.
    queued: usize,
}

impl Lanes {
    /// A lane for the distorted side and, `with_reference`, one for the reference side;
    /// each a new stream that starts after the engine's current work.
    fn new(gpu: &Gpu, with_reference: bool) -> Result<Lanes, DriverError> {
        Ok(Lanes {
            distorted: gpu.fork()?,
            reference: if with_reference {
                Some(gpu.fork()?)
            } else {
                None
            },
            ready: gpu.ctx.new_event(None)?,
            queued: 0,
        })
    }

    /// Makes both lanes wait for the work queued so far on the engine's stream.
    fn fork(&mut self, gpu: &Gpu) -> Result<(), EngineError> {
        let wait = || -> Result<(), DriverError> {
            self.ready.record(&gpu.stream)?;
            self.distorted.stream.wait(&self.ready)?;
            if let Some(r) = &self.reference {
                r.stream.wait(&self.ready)?;
            }
            Ok(())
        };
        wait().map_err(|e| EngineError::Cuda(format!("ordering the metric's streams: {e}")))
    }
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
            lanes: None,
        }))
    }
}

impl<S: CudaSingle + 'static> NoReference<S> {
    /// The metric on the CUDA backend, one state per side from `make`, which allocates on
    /// the side's lane (as [`NoReference::boxed`]).
    pub(crate) fn cuda_boxed(
        gpu: &Gpu,
        plan: &Plan,
        mut make: impl FnMut(&Gpu, Side) -> Result<Option<S>, DriverError>,
    ) -> CudaState {
        let mut lanes = Lanes::new(gpu, plan.has_reference)?;
        let Some(distorted) = make(&lanes.distorted, Side::Distorted)? else {
            return Ok(None);
        };
        let reference = match &lanes.reference {
            Some(lane) => make(lane, Side::Reference)?,
            None => None,
        };
        if reference.is_none() {
            lanes.reference = None;
        }
        // The states' buffers are ready before their first frame.
        lanes.distorted.stream.synchronize()?;
        if let Some(r) = &lanes.reference {
            r.stream.synchronize()?;
        }
        Ok(Some(Box::new(NoReference {
            distorted,
            reference,
            lanes: Some(lanes),
        })))
    }

    /// The lanes, after making them wait for the work queued so far on the engine's
    /// stream (this frame's uploads).
    fn forked(&mut self, gpu: &Gpu) -> Result<&mut Lanes, EngineError> {
        let lanes = self
            .lanes
            .as_mut()
            .expect("a CUDA no-reference metric has its lanes");
        lanes.fork(gpu)?;
        Ok(lanes)
    }
}

impl<S: Restart> Sequenced for NoReference<S> {
    fn finish(&mut self, _plan: &Plan, _late: &mut [Scores]) {
        self.reset();
    }

    fn reset(&mut self) {
        if let Some(lanes) = &mut self.lanes {
            lanes.queued = 0;
        }
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

impl<S: CudaSingle + 'static> CudaMetric for NoReference<S> {
    fn queue(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
    ) -> Result<(), EngineError> {
        self.forked(gpu)?.queued += 1;
        let lanes = self.lanes.as_ref().expect("a CUDA metric has its lanes");
        self.distorted
            .queue(&lanes.distorted, plan, Side::Distorted, d)?;
        if let (Some(s), Some(lane)) = (&mut self.reference, &lanes.reference) {
            s.queue(lane, plan, Side::Reference, r)?;
        }
        Ok(())
    }

    fn drop_queued(&mut self) {
        self.reset();
    }

    fn measure(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
        scores: &mut Scores,
    ) -> Result<(), EngineError> {
        // Without `queue` first, the states queue their work here, on lanes forked now.
        let lanes = self.lanes.as_mut().expect("a CUDA metric has its lanes");
        if lanes.queued > 0 {
            lanes.queued -= 1;
        } else {
            self.forked(gpu)?;
        }
        let lanes = self.lanes.as_ref().expect("a CUDA metric has its lanes");
        self.distorted
            .measure(&lanes.distorted, plan, Side::Distorted, d, scores)?;
        if let (Some(s), Some(lane)) = (&mut self.reference, &lanes.reference) {
            s.measure(lane, plan, Side::Reference, r, scores)?;
        }
        Ok(())
    }
}
