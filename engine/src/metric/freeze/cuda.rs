//! Freeze on the GPU, one state per input: per frame one `freeze_sad` launch (the sums of
//! absolute differences against the reference frame, a partial per block, while the frame
//! is written to the spare buffer), one `freeze_decide` (one warp adds the partials and,
//! when the frame is not frozen, makes the spare the reference: no second pass copies the
//! frame, and no host decision stands between two frames in flight), which writes the total
//! straight to the frame's host slot (`Readback`). Buffers are allocated once, for the side's layout.

use cudarc::driver::{CudaSlice, DriverError, LaunchConfig};

use super::DIFF;
use crate::cuda::{DeviceMemory, Gpu, Readback, zeroed};
use crate::error::EngineError;
use crate::frame::PlanePtrs;
use crate::metric::no_reference::{CudaSingle, Input};
use crate::metric::temporal::Restart;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::freeze::{self, FreezeFrame};

pub(super) struct Freeze {
    /// Two frames' samples (`FreezeFrame::count` values each, its layout): the reference
    /// frame and the spare the measured frame is written to. Which is which is `state`'s.
    buffers: CudaSlice<u16>,
    /// On the device: which of `buffers` is the reference (0 or 1), flipped by
    /// `freeze_decide` when a frame is not frozen.
    state: CudaSlice<u32>,
    /// One sum per block.
    partials: CudaSlice<u64>,
    /// The frame's total, on the host (one slot per frame in flight).
    host: Readback<u64>,
    /// The frame these buffers were made for (its addresses unset).
    shape: FreezeFrame,
    blocks: u32,
    /// The next frame queued has no reference frame on the device (a new sequence, or a
    /// failed frame left it unknown). Cleared when a frame is queued.
    first: bool,
    noise: f64,
    depth: u32,
    /// Per frame queued and not read: whether it was the first of its sequence.
    firsts: std::collections::VecDeque<bool>,
}

impl Freeze {
    pub(super) fn new(
        gpu: &Gpu,
        plan: &Plan,
        side: Input,
        noise: f64,
    ) -> Result<Freeze, DriverError> {
        let shape = super::frame(plan, side, &PlanePtrs::default());
        let n = (shape.buffer_len() as usize).max(4);
        let blocks = freeze::blocks(shape.rows);
        Ok(Freeze {
            buffers: zeroed(&gpu.stream, 2 * n)?,
            state: zeroed(&gpu.stream, 1)?,
            partials: zeroed(&gpu.stream, blocks as usize)?,
            host: Readback::new(&gpu.ctx, 1)?,
            shape,
            blocks,
            first: true,
            noise,
            depth: side.layout(plan).format.depth(),
            firsts: std::collections::VecDeque::with_capacity(crate::cuda::IN_FLIGHT),
        })
    }

    /// Why `f` is not a frame these buffers were made for, if it is not.
    fn mismatch(&self, f: &FreezeFrame) -> Option<String> {
        let s = &self.shape;
        if (f.planes, f.width, f.height, f.offset) != (s.planes, s.width, s.height, s.offset) {
            return Some(format!(
                "planes of {:?}x{:?} for buffers of {:?}x{:?}",
                f.width, f.height, s.width, s.height
            ));
        }
        for c in 0..f.planes as usize {
            let (ch, w, _) = f.plane(c);
            if w == 0 || f.height[c] == 0 {
                continue;
            }
            let row = (w as u64 - 1) * ch.step as u64 + ch.sample_bytes as u64;
            if ch.ptr == 0 || (f.height[c] > 1 && (ch.pitch as u64) < row) {
                return Some(format!(
                    "channel {c} at {:#x} with pitch {} (rows need {row} bytes)",
                    ch.ptr, ch.pitch
                ));
            }
        }
        None
    }

    /// Queues the sums and the decision, the total into the next host slot.
    fn launch(&mut self, gpu: &Gpu, f: FreezeFrame) -> Result<(), DriverError> {
        let cfg = LaunchConfig {
            grid_dim: (self.blocks, 1, 1),
            block_dim: (freeze::BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let one_warp = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (32, 1, 1),
            shared_mem_bytes: 0,
        };
        let partials = self.partials.as_mut();
        let total = self.host.target()?;
        let state = self.state.as_mut();
        let first = self.first as u32;
        // SAFETY: `f` was validated against the plan's layout by the backend and against
        // these buffers by `mismatch`; `buffers` holds two frames of `f.buffer_len()`
        // values (allocations are 256-byte aligned, so both start 8-byte aligned) and
        // `state` one value, 0 or 1 (zeroed, then only flipped by `freeze_decide`);
        // `partials` holds one value per block and the slot one; the kernels run in stream
        // order and the host reads the slot after the event committed after them.
        unsafe {
            let k = &gpu.kernels;
            k.freeze_sad(
                &gpu.stream,
                cfg,
                f,
                self.buffers.as_mut(),
                state.as_const(),
                first,
                partials,
            )?;
            k.freeze_decide(
                &gpu.stream,
                one_warp,
                partials.as_const(),
                self.blocks,
                f.count(),
                self.depth,
                self.noise,
                first,
                state,
                total,
            )?;
        }
        self.host.commit(&gpu.stream)?;
        Ok(())
    }
}

impl CudaSingle for Freeze {
    fn queue(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        side: Input,
        frame: &PlanePtrs,
    ) -> Result<(), EngineError> {
        let f = super::frame(plan, side, frame);
        if let Some(why) = self.mismatch(&f) {
            return Err(EngineError::InvalidFrame(format!("freeze: {why}")));
        }
        self.launch(gpu, f).map_err(|e| {
            // Which buffer holds the reference is unknown now: start again from the next
            // frame.
            self.first = true;
            EngineError::Cuda(format!("running freeze: {e}"))
        })?;
        self.firsts.push_back(self.first);
        self.first = false;
        Ok(())
    }

    fn read(&mut self, _plan: &Plan, side: Input, out: &mut Scores) -> Result<(), EngineError> {
        if self.host.queued() == 0 {
            return Err(EngineError::Unsupported(
                "freeze: no frame queued to read".into(),
            ));
        }
        let first = self.firsts.pop_front().unwrap_or(true);
        let sad = match self.host.take(1) {
            Ok(total) => total[0],
            Err(e) => {
                self.first = true;
                return Err(EngineError::Cuda(format!("running freeze: {e}")));
            }
        };
        if !first {
            // The value the device decided with (`freeze_decide`), from the same sum.
            out.push(
                side.field(DIFF),
                freeze::mafd(sad, self.shape.count(), self.depth),
            );
        }
        Ok(())
    }
}

impl Restart for Freeze {
    fn restart(&mut self) {
        self.first = true;
        self.host.clear();
        self.firsts.clear();
    }
}
