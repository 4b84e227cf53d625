//! No-reference metrics ([`Reference::None`](super::Reference::None)): one frame in, fields
//! out, computed on the distorted frame and on the reference frame, with their own state
//! for each (SI/TI's previous frame is per input).
//!
//! A no-reference metric is written per backend as a [`CpuSingle`] or a [`CudaSingle`]
//! (one frame of one [`Input`]) and its entry wraps it in [`NoReference`], which is the
//! [`CpuMetric`] or [`CudaMetric`] the backend runs: it measures the distorted frame, then
//! the reference frame, so a record holds the metric's distorted fields followed by its
//! `ref-` fields. The metric picks the field names of a side with [`Input::name`]. It has
//! no lag: state across frames (the previous frame, [`Restart`]) is restarted at the end of
//! a sequence and at a flush, as the temporal metrics' is.
//!
//! On the CUDA backend each side of each no-reference metric runs on its own stream (a
//! [`Lanes`] entry, forked from the engine's): these kernels are small and mostly wait on
//! memory latency, so those of different metrics and sides overlap on the device instead of
//! queueing behind one another. Each lane waits for the frame's uploads (host frames; a
//! frame already in device memory waits for nothing) before its kernels; `read` waits
//! for its own results only (`Readback`), so frames can be in flight.

use std::collections::VecDeque;

use cudarc::driver::{CudaEvent, DriverError};

use super::temporal::{Restart, Sequenced};
use super::{CpuMetric, CudaMetric, CudaState};
use crate::cuda::Gpu;
use crate::error::EngineError;
use crate::frame::PlanePtrs;
use crate::plan::Plan;
use crate::registry::Setup;
use crate::scores::Scores;

pub(crate) use crate::input::Input;

/// A no-reference metric's per-plan state for one side, on the CPU backend.
pub(crate) trait CpuSingle: Send + Restart {
    /// Measures one validated host frame of `side` and appends its fields.
    fn measure(&mut self, plan: &Plan, side: Input, frame: &PlanePtrs, out: &mut Scores);
}

/// A no-reference metric's per-plan state for one side, on the CUDA backend (its buffers
/// allocated once, for the side's layout).
///
/// Frames may be in flight ([`crate::cuda::IN_FLIGHT`]): `queue` may be called for the
/// next frame before `read` read this one, so the results come back through a
/// [`crate::cuda::Readback`] and state that the next frame's kernels need (the previous
/// frame, which buffer is the reference) stays on the device or is settled when queueing.
/// Every frame read was queued first ([`NoReference`] queues each frame before it reads it).
pub(crate) trait CudaSingle: Send + Restart {
    /// Queues the frame's kernels and result copy on the side's stream without waiting
    /// ([`CudaMetric::queue`]).
    fn queue(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        side: Input,
        frame: &PlanePtrs,
    ) -> Result<(), EngineError>;

    /// Waits for the oldest frame queued and appends its fields; an error, and nothing
    /// appended, when no frame is queued.
    fn read(&mut self, plan: &Plan, side: Input, out: &mut Scores) -> Result<(), EngineError>;
}

/// A no-reference metric on both inputs: a [`CpuMetric`] without lag.
pub(crate) struct NoReference<S> {
    /// The states: one copy, or on the CUDA backend one per frame in flight for a metric
    /// without state across frames ([`NoReference::cuda_boxed`]).
    copies: Vec<Replica<S>>,
    /// The copy the next frame is queued on.
    next: usize,
    /// The copies of the frames queued and not read yet, oldest first.
    queued: VecDeque<usize>,
}

/// One state per side, and on the CUDA backend the sides' streams.
struct Replica<S> {
    distorted: S,
    reference: Option<S>,
    /// The sides' streams on the CUDA backend (none on the CPU backend).
    lanes: Option<Lanes>,
}

/// The CUDA streams of a no-reference metric's sides.
struct Lanes {
    distorted: Gpu,
    reference: Option<Gpu>,
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
        })
    }

    /// Makes both lanes wait for `event` (the frame's uploads; frames already in device
    /// memory wait for nothing).
    fn wait(&self, event: &CudaEvent) -> Result<(), DriverError> {
        self.distorted.stream.wait(event)?;
        if let Some(r) = &self.reference {
            r.stream.wait(event)?;
        }
        Ok(())
    }
}

/// Whether the metric measures the reference input too: the plan has one and the request
/// does not leave it out ([`Setup::reference_side`]).
fn measures_reference(s: &Setup) -> bool {
    s.plan.has_reference && s.reference_side
}

fn ordering(e: DriverError) -> EngineError {
    EngineError::Cuda(format!("ordering the metric's streams: {e}"))
}

impl<S: CpuSingle + 'static> NoReference<S> {
    /// The metric, one state per side from `make` (none for the reference side when the
    /// plan has no reference input, [`Plan::single`]); `None` when the distorted side
    /// cannot be measured.
    pub(crate) fn boxed(
        s: &Setup,
        make: impl Fn(Input) -> Option<S>,
    ) -> Option<Box<dyn CpuMetric>> {
        let distorted = make(Input::Distorted)?;
        let copy = Replica {
            distorted,
            reference: if measures_reference(s) {
                make(Input::Reference)
            } else {
                None
            },
            lanes: None,
        };
        Some(Box::new(NoReference::of(vec![copy])))
    }
}

impl<S> NoReference<S> {
    fn of(copies: Vec<Replica<S>>) -> Self {
        NoReference {
            copies,
            next: 0,
            queued: VecDeque::with_capacity(crate::cuda::IN_FLIGHT),
        }
    }
}

impl<S: CudaSingle + 'static> NoReference<S> {
    /// The metric on the CUDA backend, one state per side from `make`, which allocates on
    /// the side's lane (as [`NoReference::boxed`]).
    ///
    /// A metric without state across frames (each frame's fields depend on that frame
    /// alone: blur, CAMBI) asks for `copies` = [`Setup::in_flight`]: the
    /// frames in flight then go to the copies in turn, each on its own streams, so that
    /// one frame's chain of small kernels runs beside the next one's instead of after it.
    /// A metric with such state (the previous frame) asks for one.
    pub(crate) fn cuda_boxed(
        gpu: &Gpu,
        s: &Setup,
        copies: usize,
        mut make: impl FnMut(&Gpu, Input) -> Result<Option<S>, DriverError>,
    ) -> CudaState {
        let mut made = Vec::with_capacity(copies.max(1));
        for _ in 0..copies.max(1) {
            let mut lanes = Lanes::new(gpu, measures_reference(s))?;
            let Some(distorted) = make(&lanes.distorted, Input::Distorted)? else {
                return Ok(None);
            };
            let reference = match &lanes.reference {
                Some(lane) => make(lane, Input::Reference)?,
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
            made.push(Replica {
                distorted,
                reference,
                lanes: Some(lanes),
            });
        }
        Ok(Some(Box::new(NoReference::of(made))))
    }
}

impl<S: CudaSingle> Replica<S> {
    fn lanes(&self) -> &Lanes {
        self.lanes
            .as_ref()
            .expect("a CUDA no-reference metric has its lanes")
    }

    fn queue(&mut self, plan: &Plan, r: &PlanePtrs, d: &PlanePtrs) -> Result<(), EngineError> {
        let lanes = self.lanes.as_ref().expect("a CUDA metric has its lanes");
        self.distorted
            .queue(&lanes.distorted, plan, Input::Distorted, d)?;
        if let (Some(s), Some(lane)) = (&mut self.reference, &lanes.reference) {
            s.queue(lane, plan, Input::Reference, r)?;
        }
        Ok(())
    }
}

impl<S: Restart> Sequenced for NoReference<S> {
    fn finish(&mut self, _plan: &Plan, _late: &mut [Scores]) {
        self.reset();
    }

    fn reset(&mut self) {
        self.queued.clear();
        self.next = 0;
        for c in &mut self.copies {
            c.distorted.restart();
            if let Some(r) = &mut c.reference {
                r.restart();
            }
        }
    }
}

impl<S: CpuSingle> CpuMetric for NoReference<S> {
    fn measure(&mut self, plan: &Plan, r: &PlanePtrs, d: &PlanePtrs, scores: &mut Scores) {
        let c = &mut self.copies[0];
        c.distorted.measure(plan, Input::Distorted, d, scores);
        if let Some(s) = &mut c.reference {
            s.measure(plan, Input::Reference, r, scores);
        }
    }
}

impl<S: CudaSingle + 'static> CudaMetric for NoReference<S> {
    fn queue(
        &mut self,
        _gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
        uploaded: Option<&CudaEvent>,
    ) -> Result<(), EngineError> {
        let i = self.next;
        let c = &mut self.copies[i];
        if let Some(event) = uploaded {
            c.lanes().wait(event).map_err(ordering)?;
        }
        c.queue(plan, r, d)?;
        self.queued.push_back(i);
        self.next = (i + 1) % self.copies.len();
        Ok(())
    }

    fn drop_queued(&mut self) {
        self.reset();
    }

    fn read(&mut self, plan: &Plan, scores: &mut Scores) -> Result<(), EngineError> {
        let Some(i) = self.queued.pop_front() else {
            return Err(EngineError::Unsupported(
                "a no-reference metric: no frame queued to read".into(),
            ));
        };
        let c = &mut self.copies[i];
        // The sides `Replica::queue` queued.
        let reference = c.lanes().reference.is_some();
        c.distorted.read(plan, Input::Distorted, scores)?;
        if let (Some(s), true) = (&mut c.reference, reference) {
            s.read(plan, Input::Reference, scores)?;
        }
        Ok(())
    }
}
