//! SI/TI on the GPU, one state per input: per frame one `siti_sums` launch (per block the
//! f64 sums of the gradients, of their squares, of the motions and of their squares, on a
//! grid of tiles that each block converts once into shared memory; the frame's luma
//! becomes the previous frame), written straight to the frame's host slot (`Readback`),
//! which the host adds in block order. The previous frame's luma stays on the device. Buffers are allocated once,
//! for the side's layout.

use cudarc::driver::{CudaSlice, DriverError, LaunchConfig};

use super::{SI, TI};
use crate::cuda::{DeviceMemory, Gpu, Readback, zeroed};
use crate::error::EngineError;
use crate::frame::PlanePtrs;
use crate::metric::no_reference::{CudaSingle, Input};
use crate::metric::temporal::Restart;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::siti::{self, Luma};

pub(super) struct Siti {
    /// The previous frame's full-range luma, `width · height` values (pitch `width`).
    previous: CudaSlice<u16>,
    /// Per block the four sums of `siti::Sums` (`4 · blocks` values), on the host (one
    /// slot per frame in flight).
    host: Readback<f64>,
    width: u32,
    height: u32,
    blocks: u32,
    /// The next frame queued has no previous frame on the device (a new sequence, or a
    /// failed frame left it unknown): its TI is 0. Cleared when a frame is queued, so that
    /// the frame queued after it (maybe before this one is read) measures its motion.
    first: bool,
}

impl Siti {
    /// The state for `side`'s frames (the entry checked that they are at least 3×3).
    pub(super) fn new(gpu: &Gpu, plan: &Plan, side: Input) -> Result<Siti, DriverError> {
        let layout = side.layout(plan);
        let (width, height) = (layout.width, layout.height);
        debug_assert!(width >= super::MIN_SIDE && height >= super::MIN_SIDE);
        let blocks = siti::blocks(width, height);
        Ok(Siti {
            previous: zeroed(&gpu.stream, width as usize * height as usize)?,
            host: Readback::new(&gpu.ctx, 4 * blocks as usize)?,
            width,
            height,
            blocks,
            first: true,
        })
    }

    /// Why `l` is not a frame these buffers were made for, if it is not.
    fn mismatch(&self, l: &Luma) -> Option<String> {
        if (l.width, l.height) != (self.width, self.height) {
            return Some(format!(
                "a {}x{} luma plane for buffers of {}x{}",
                l.width, l.height, self.width, self.height
            ));
        }
        if !l.factor.is_power_of_two() || l.factor > 256 {
            // `siti::to_full_range` needs 2^(depth − 8) for a depth of 8 to 16.
            return Some(format!("a luma depth factor of {}", l.factor));
        }
        if l.chan.sample_bytes == 1 && l.factor != 1 {
            // The kernel's 1-byte reads take the 8-bit factor as a constant.
            return Some(format!(
                "1-byte luma samples with a depth factor of {}",
                l.factor
            ));
        }
        let c = &l.chan;
        let row = (l.width as u64 - 1) * c.step as u64 + c.sample_bytes as u64;
        if c.ptr == 0 || (l.height > 1 && (c.pitch as u64) < row) {
            return Some(format!(
                "a luma plane at {:#x} with pitch {} (rows need {row} bytes)",
                c.ptr, c.pitch
            ));
        }
        None
    }

    /// Queues the kernel, its partials into the next host slot.
    fn launch(&mut self, gpu: &Gpu, l: Luma) -> Result<(), DriverError> {
        let (k, stream) = (&gpu.kernels, &gpu.stream);
        let cfg = LaunchConfig {
            grid_dim: (self.blocks, 1, 1),
            block_dim: (siti::BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let first = self.first as u32;
        let sums = self.host.target()?;
        let previous = self.previous.as_mut();
        // SAFETY: `l` was validated against the plan's layout by the backend and against
        // these buffers' size by `mismatch`; `previous` holds width·height values, the
        // slot 4·blocks values for the grid of `blocks` blocks; the host reads it after the
        // event committed after the kernel.
        unsafe {
            k.siti_sums(stream, cfg, l, previous, first, sums)?;
        }
        self.host.commit(stream)?;
        Ok(())
    }

    /// Waits for the oldest queued frame and adds its partials in block order.
    fn sums(&mut self) -> Result<siti::Sums, DriverError> {
        let host = self.host.take(4 * self.blocks as usize)?;
        let mut total = [0.0f64; 4];
        for p in host.chunks_exact(4) {
            for (t, v) in total.iter_mut().zip(p) {
                *t += v;
            }
        }
        Ok(total)
    }
}

impl CudaSingle for Siti {
    fn queue(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        side: Input,
        frame: &PlanePtrs,
    ) -> Result<(), EngineError> {
        let l = super::luma(plan, side, frame);
        if let Some(why) = self.mismatch(&l) {
            return Err(EngineError::InvalidFrame(format!("siti: {why}")));
        }
        self.launch(gpu, l).map_err(|e| {
            self.first = true;
            EngineError::Cuda(format!("running siti: {e}"))
        })?;
        self.first = false;
        Ok(())
    }

    fn read(&mut self, _plan: &Plan, side: Input, out: &mut Scores) -> Result<(), EngineError> {
        if self.host.queued() == 0 {
            return Err(EngineError::Unsupported(
                "siti: no frame queued to read".into(),
            ));
        }
        let s = self.sums().map_err(|e| {
            // `previous` may hold part of this frame: measure the next against nothing.
            self.first = true;
            EngineError::Cuda(format!("running siti: {e}"))
        })?;
        let (ng, nm) = siti::counts(self.width, self.height);
        out.push(side.field(SI), siti::stddev(s[0], s[1], ng) as f64);
        out.push(side.field(TI), siti::stddev(s[2], s[3], nm) as f64);
        Ok(())
    }
}

impl Restart for Siti {
    fn restart(&mut self) {
        self.first = true;
        self.host.clear();
    }
}
