//! Black on the GPU, one state per input: per frame one `black_count` launch, whose blocks
//! write their partial counts straight to the frame's host slot (`Readback`), which the
//! host adds. Buffers are allocated once, for the side's layout.

use cudarc::driver::{DriverError, LaunchConfig};

use super::BLACK;
use crate::cuda::{Gpu, Readback};
use crate::error::EngineError;
use crate::frame::PlanePtrs;
use crate::metric::no_reference::{CudaSingle, Input};
use crate::metric::temporal::Restart;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::black::{self, BlackLuma};

pub(super) struct Black {
    /// The counts, back on the host (one slot per frame in flight).
    host: Readback<u32>,
    width: u32,
    height: u32,
    blocks: u32,
    threshold: u32,
}

impl Black {
    pub(super) fn new(
        gpu: &Gpu,
        plan: &Plan,
        side: Input,
        threshold: u32,
    ) -> Result<Black, DriverError> {
        let layout = side.layout(plan);
        let blocks = black::blocks(layout.height);
        Ok(Black {
            host: Readback::new(&gpu.ctx, blocks as usize)?,
            width: layout.width,
            height: layout.height,
            blocks,
            threshold,
        })
    }

    /// Why `l` is not a frame these buffers were made for, if it is not.
    fn mismatch(&self, l: &BlackLuma) -> Option<String> {
        if (l.width, l.height) != (self.width, self.height) {
            return Some(format!(
                "a {}x{} luma plane for buffers of {}x{}",
                l.width, l.height, self.width, self.height
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

    /// Queues the count, into the next host slot.
    fn launch(&mut self, gpu: &Gpu, l: BlackLuma) -> Result<(), DriverError> {
        let cfg = LaunchConfig {
            grid_dim: (self.blocks, 1, 1),
            block_dim: (black::BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let out = self.host.target()?;
        // SAFETY: `l` was validated against the plan's layout by the backend and against
        // these buffers by `mismatch`; the slot holds one value per block of the grid, and
        // the host reads it after the event committed after the kernel.
        unsafe {
            gpu.kernels.black_count(&gpu.stream, cfg, l, out)?;
        }
        self.host.commit(&gpu.stream)?;
        Ok(())
    }

    /// Waits for the oldest queued count and adds the blocks' counts.
    fn count(&mut self) -> Result<u64, DriverError> {
        let host = self.host.take(self.blocks as usize)?;
        Ok(host.iter().map(|&n| n as u64).sum())
    }
}

impl CudaSingle for Black {
    fn queue(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        side: Input,
        frame: &PlanePtrs,
    ) -> Result<(), EngineError> {
        let l = super::luma(plan, side, frame, self.threshold);
        if let Some(why) = self.mismatch(&l) {
            return Err(EngineError::InvalidFrame(format!("black: {why}")));
        }
        self.launch(gpu, l)
            .map_err(|e| EngineError::Cuda(format!("running black: {e}")))
    }

    fn read(&mut self, _plan: &Plan, side: Input, out: &mut Scores) -> Result<(), EngineError> {
        if self.host.queued() == 0 {
            return Err(EngineError::Unsupported(
                "black: no frame queued to read".into(),
            ));
        }
        let n = self
            .count()
            .map_err(|e| EngineError::Cuda(format!("running black: {e}")))?;
        out.push(side.field(BLACK), black::ratio(n, self.width, self.height));
        Ok(())
    }
}

impl Restart for Black {
    fn restart(&mut self) {
        self.host.clear();
    }
}
