//! Freeze on the GPU, one state per input: per frame one `freeze_sad` launch (the sums of
//! absolute differences against the reference frame, a partial per block, while the frame
//! is written to the spare buffer) and one copy of the partials, which the host adds. The
//! reference frame stays on the device: when a frame is not frozen the host swaps the two
//! buffers, so no second pass copies it. Buffers are allocated once, for the side's layout.

use cudarc::driver::{DriverError, LaunchConfig};

use super::DIFF;
use crate::cuda::{DeviceBuffer, Gpu, PinnedBuffer};
use crate::error::EngineError;
use crate::frame::PlanePtrs;
use crate::metric::single::{CudaSingle, Side};
use crate::metric::temporal::Restart;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::freeze::{self, FreezeFrame};

pub(super) struct Freeze {
    /// The reference frame's samples (`FreezeFrame::count` values, its layout).
    reference: DeviceBuffer<u16>,
    /// Where the measured frame's samples go; swapped with `reference` when the frame is
    /// not frozen.
    spare: DeviceBuffer<u16>,
    /// One sum per block.
    partials: DeviceBuffer<u64>,
    /// The sums, back on the host.
    host: PinnedBuffer<u64>,
    /// The frame these buffers were made for (its addresses unset).
    shape: FreezeFrame,
    blocks: u32,
    /// No reference frame on the device yet (or a failed frame left it unknown).
    first: bool,
    noise: f64,
    depth: u32,
    /// This frame's sums and copy are queued ([`CudaSingle::queue`]), not read yet.
    queued: bool,
}

impl Freeze {
    pub(super) fn new(
        gpu: &Gpu,
        plan: &Plan,
        side: Side,
        noise: f64,
    ) -> Result<Freeze, DriverError> {
        let shape = super::frame(plan, side, &PlanePtrs::default());
        let n = (shape.count() as usize).max(1);
        let blocks = freeze::blocks(shape.rows);
        Ok(Freeze {
            reference: DeviceBuffer::zeroed(&gpu.stream, n)?,
            spare: DeviceBuffer::zeroed(&gpu.stream, n)?,
            partials: DeviceBuffer::zeroed(&gpu.stream, blocks as usize)?,
            // SAFETY: written by the copy in `sad` before it is read.
            host: unsafe { PinnedBuffer::new(&gpu.ctx, blocks as usize, 0) }?,
            shape,
            blocks,
            first: true,
            noise,
            depth: side.layout(plan).format.depth(),
            queued: false,
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

    /// Queues the sums and their copy to the host.
    fn launch(&mut self, gpu: &Gpu, f: FreezeFrame) -> Result<(), DriverError> {
        let cfg = LaunchConfig {
            grid_dim: (self.blocks, 1, 1),
            block_dim: (freeze::BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let out = self.partials.as_mut();
        // SAFETY: `f` was validated against the plan's layout by the backend and against
        // these buffers by `mismatch`; `reference` and `spare` hold `f.count()` values each
        // and are distinct allocations; `partials` holds one value per block; the copy
        // follows the kernel on the stream and the host reads after synchronising.
        unsafe {
            gpu.kernels.freeze_sad(
                &gpu.stream,
                cfg,
                f,
                self.reference.as_mut().as_const(),
                self.spare.as_mut(),
                self.first as u32,
                out,
            )?;
            self.host.copy_from_device(out.as_raw(), &gpu.stream)?;
        }
        Ok(())
    }

    /// Waits for the queued sums and adds the blocks' sums.
    fn sad(&mut self, gpu: &Gpu) -> Result<u64, DriverError> {
        gpu.stream.synchronize()?;
        // SAFETY: the copy completed.
        Ok(unsafe { self.host.as_slice() }.iter().sum())
    }
}

impl CudaSingle for Freeze {
    fn queue(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        side: Side,
        frame: &PlanePtrs,
    ) -> Result<(), EngineError> {
        let f = super::frame(plan, side, frame);
        if let Some(why) = self.mismatch(&f) {
            return Err(EngineError::InvalidFrame(format!("freeze: {why}")));
        }
        self.queued = false;
        self.launch(gpu, f).map_err(|e| {
            self.first = true;
            EngineError::Cuda(format!("running freeze: {e}"))
        })?;
        self.queued = true;
        Ok(())
    }

    fn measure(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        side: Side,
        frame: &PlanePtrs,
        out: &mut Scores,
    ) -> Result<(), EngineError> {
        if !self.queued {
            self.queue(gpu, plan, side, frame)?;
        }
        self.queued = false;
        let f = super::frame(plan, side, frame);
        let sad = self.sad(gpu).map_err(|e| {
            // The spare buffer may hold part of this frame; the reference is intact, but
            // which frame comes next is unknown: start again from the next frame.
            self.first = true;
            EngineError::Cuda(format!("running freeze: {e}"))
        })?;
        let frozen = if self.first {
            false
        } else {
            let diff = freeze::mafd(sad, f.count(), self.depth);
            out.push(side.name(DIFF), diff);
            super::is_frozen(diff, self.noise)
        };
        if !frozen {
            std::mem::swap(&mut self.reference, &mut self.spare);
        }
        self.first = false;
        Ok(())
    }
}

impl Restart for Freeze {
    fn restart(&mut self) {
        self.first = true;
        self.queued = false;
    }
}
