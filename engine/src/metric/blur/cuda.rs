//! Blur on the GPU, one state per input: per frame `blur_gauss` (the blurred plane),
//! `blur_suppress` (the suppressed gradients), `blur_widths` (per CUDA block, the exact sum
//! and the count of the edge widths of one 32×32 tile of one block, written straight to
//! the frame's host slot, `Readback`), which the host adds per block and pools ([`super::pool`]). All are queued first
//! ([`CudaSingle::queue`]); `read` waits and reads. Buffers are
//! allocated once, for the side's layout.

use cudarc::driver::{CudaSlice, DriverError, LaunchConfig};

use super::{BLUR, Settings, pool};
use crate::cuda::{DeviceMemory, Gpu, Readback, zeroed};
use crate::error::EngineError;
use crate::frame::PlanePtrs;
use crate::metric::no_reference::{CudaSingle, Input};
use crate::metric::temporal::Restart;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::blur::{self, Params};
use gpumetrics_kernels::luma8::Luma8;

pub(super) struct Blur {
    settings: Settings,
    /// The blurred and the suppressed planes, `width · height` bytes each (pitch `width`).
    blurred: CudaSlice<u8>,
    suppressed: CudaSlice<u8>,
    /// Per CUDA block of `blur_widths`: (sum, count), on the host (one slot per frame in
    /// flight).
    host: Readback<f64>,
    /// Values of the partials: 2 per block of the grid.
    len: usize,
    width: u32,
    height: u32,
    /// CUDA blocks of `blur_widths` (0: the frame holds no whole block, nothing runs).
    grid: u32,
    means: Vec<f32>,
    sums: Vec<(f64, u32)>,
}

impl Blur {
    pub(super) fn new(
        gpu: &Gpu,
        plan: &Plan,
        side: Input,
        settings: Settings,
    ) -> Result<Blur, DriverError> {
        let layout = side.layout(plan);
        let (width, height) = (layout.width, layout.height);
        let p = settings.params(Luma8 {
            width,
            height,
            ..Luma8::default()
        });
        let blocks = p.cols as usize * p.rows as usize;
        let grid = (blocks * p.chunks as usize) as u32;
        let n = (width as usize * height as usize).max(1);
        let len = 2 * (grid as usize).max(1);
        Ok(Blur {
            settings,
            blurred: zeroed(&gpu.stream, n)?,
            suppressed: zeroed(&gpu.stream, n)?,
            host: Readback::new(&gpu.ctx, len)?,
            len: 2 * grid as usize,
            width,
            height,
            grid,
            means: Vec::with_capacity(blocks),
            sums: Vec::with_capacity(blocks),
        })
    }

    /// Why `l` is not a frame these buffers were made for, if it is not.
    fn mismatch(&self, l: &Luma8) -> Option<String> {
        if (l.width, l.height) != (self.width, self.height) {
            return Some(format!(
                "a {}x{} luma plane for buffers of {}x{}",
                l.width, l.height, self.width, self.height
            ));
        }
        let c = &l.chan;
        let row = (l.width as u64).saturating_sub(1) * c.step as u64 + c.sample_bytes as u64;
        if c.ptr == 0 || (l.height > 1 && (c.pitch as u64) < row) {
            return Some(format!(
                "a luma plane at {:#x} with pitch {} (rows need {row} bytes)",
                c.ptr, c.pitch
            ));
        }
        None
    }

    /// Queues the three kernels, the width partials into the next host slot.
    fn launch(&mut self, gpu: &Gpu, p: Params) -> Result<(), DriverError> {
        let (k, stream) = (&gpu.kernels, &gpu.stream);
        let plane = LaunchConfig {
            grid_dim: (
                self.width.div_ceil(blur::TILE_W),
                self.height.div_ceil(blur::TILE_H),
                1,
            ),
            block_dim: (blur::TILE_W, blur::THREADS_Y, 1),
            shared_mem_bytes: 0,
        };
        let blurred = self.blurred.as_mut();
        let suppressed = self.suppressed.as_mut();
        let partials = self.host.target()?;
        let cfg = LaunchConfig {
            grid_dim: (self.grid, 1, 1),
            block_dim: (blur::BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the frame was validated against the plan's layout by the backend and
        // against these buffers by `mismatch`; both planes hold width·height bytes, the
        // slot 2·grid values for the grid of `grid` blocks; the kernels run in stream order
        // and the host reads the slot after the event committed after them.
        unsafe {
            k.blur_gauss(stream, plane, p, blurred)?;
            k.blur_suppress(stream, plane, p, blurred.as_const(), suppressed)?;
            k.blur_widths(
                stream,
                cfg,
                p,
                blurred.as_const(),
                suppressed.as_const(),
                partials,
            )?;
        }
        self.host.commit(stream)?;
        Ok(())
    }
}

impl CudaSingle for Blur {
    fn queue(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        side: Input,
        frame: &PlanePtrs,
    ) -> Result<(), EngineError> {
        let l = super::luma8(plan, side, frame);
        if let Some(why) = self.mismatch(&l) {
            return Err(EngineError::InvalidFrame(format!("blur: {why}")));
        }
        if self.grid == 0 {
            // No whole block (or an empty frame): nothing runs.
            return Ok(());
        }
        self.launch(gpu, self.settings.params(l))
            .map_err(|e| EngineError::Cuda(format!("running blur: {e}")))
    }

    fn read(&mut self, _plan: &Plan, side: Input, out: &mut Scores) -> Result<(), EngineError> {
        if self.grid == 0 {
            // No whole block (or an empty frame): nothing was queued; FFmpeg's 0/0, no
            // field.
            return Ok(());
        }
        if self.host.queued() == 0 {
            return Err(EngineError::Unsupported(
                "blur: no frame queued to read".into(),
            ));
        }
        // The blocks' layout depends on the frame's size alone (as in `new`).
        let p = self.settings.params(Luma8 {
            width: self.width,
            height: self.height,
            ..Luma8::default()
        });
        self.sums.clear();
        self.sums.resize((p.cols * p.rows) as usize, (0.0, 0));
        let host = self
            .host
            .take(self.len)
            .map_err(|e| EngineError::Cuda(format!("running blur: {e}")))?;
        for (b, pair) in host.chunks_exact(2).enumerate() {
            let s = &mut self.sums[b / p.chunks as usize];
            s.0 += pair[0];
            s.1 += pair[1] as u32;
        }
        if let Some(v) = pool(
            self.sums.iter().copied(),
            self.settings.pct,
            &mut self.means,
        ) {
            out.push(side.field(BLUR), v as f64);
        }
        Ok(())
    }
}

impl Restart for Blur {
    fn restart(&mut self) {
        self.host.clear();
    }
}
