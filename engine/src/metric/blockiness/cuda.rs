//! Blockiness on the GPU, one state per input: per frame `blockiness_profiles` (the frame's
//! gradients summed per band of 32 rows or columns), `blockiness_bands` (the band sums
//! added to both profiles, which stay on the device for the sequence) and
//! `blockiness_periods` (each (direction, period) pair's sums, one warp each, written
//! straight to the frame's host slot, `Readback`: 16 bytes per pair), from which the host keeps the largest ratio. All are
//! queued first ([`CudaSingle::queue`]); `read` waits and reads.

use cudarc::driver::{CudaSlice, DriverError, LaunchConfig};

use super::{BLOCKINESS, Settings, value};
use crate::cuda::{DeviceMemory, Gpu, Readback, zeroed};
use crate::error::EngineError;
use crate::frame::PlanePtrs;
use crate::metric::no_reference::{CudaSingle, Input};
use crate::metric::temporal::Restart;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::blockiness::{self, Params};
use gpumetrics_kernels::luma8::Luma8;

pub(super) struct Blockiness {
    settings: Settings,
    /// The column profile (`width` values) and the row profile (`height` values).
    cols: CudaSlice<f32>,
    rows: CudaSlice<f32>,
    /// The frame's band sums: `bands(height) · width` for the columns, `bands(width) ·
    /// height` for the rows.
    col_bands: CudaSlice<f32>,
    row_bands: CudaSlice<f32>,
    /// Per (direction, period) pair, its four sums (`blockiness::decode`), on the host (one
    /// slot per frame in flight).
    host: Readback<f32>,
    /// (direction, period) pairs: 2 · periods.
    pairs: u32,
    width: u32,
    height: u32,
    /// The next frame queued starts a sequence (or a failed frame left the profiles
    /// unknown): start from 0. Cleared when a frame is queued.
    first: bool,
}

impl Blockiness {
    pub(super) fn new(
        gpu: &Gpu,
        plan: &Plan,
        side: Input,
        settings: Settings,
    ) -> Result<Blockiness, DriverError> {
        let layout = side.layout(plan);
        let (width, height) = (layout.width, layout.height);
        let pairs = 2 * blockiness::periods(&settings.params_for(Luma8::default()));
        let len = 4 * (pairs as usize).max(1);
        Ok(Blockiness {
            settings,
            cols: zeroed(&gpu.stream, (width as usize).max(1))?,
            rows: zeroed(&gpu.stream, (height as usize).max(1))?,
            col_bands: zeroed(
                &gpu.stream,
                (blockiness::bands(height) as usize * width as usize).max(1),
            )?,
            row_bands: zeroed(
                &gpu.stream,
                (blockiness::bands(width) as usize * height as usize).max(1),
            )?,
            host: Readback::new(&gpu.ctx, len)?,
            pairs,
            width,
            height,
            first: true,
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

    /// Queues the three kernels, the pairs' sums into the next host slot.
    fn launch(&mut self, gpu: &Gpu, p: Params) -> Result<(), DriverError> {
        let (k, stream) = (&gpu.kernels, &gpu.stream);
        let grid = blockiness::profile_grid(self.width, self.height);
        let cols = self.cols.as_mut();
        let rows = self.rows.as_mut();
        let col_bands = self.col_bands.as_mut();
        let row_bands = self.row_bands.as_mut();
        let sums = self.host.target()?;
        // SAFETY: the frame was validated against the plan's layout by the backend and
        // against these buffers by `mismatch`; the profiles hold width and height values,
        // the band buffers `bands(height) · width` and `bands(width) · height` (what
        // `profile_grid`'s blocks write), `sums` 4 per pair for the grid of `pairs` blocks;
        // the bands kernel's grid covers width + height; the kernels run in stream order and
        // the host reads the slot after the event committed after them.
        unsafe {
            if grid > 0 {
                let cfg = LaunchConfig {
                    grid_dim: (grid, 1, 1),
                    block_dim: (blockiness::BLOCK, 1, 1),
                    shared_mem_bytes: 0,
                };
                k.blockiness_profiles(stream, cfg, p, col_bands, row_bands)?;
            }
            let values = self.width + self.height;
            if values > 0 {
                let cfg = LaunchConfig {
                    grid_dim: (values.div_ceil(blockiness::BANDS_BLOCK), 1, 1),
                    block_dim: (blockiness::BANDS_BLOCK, 1, 1),
                    shared_mem_bytes: 0,
                };
                k.blockiness_bands(
                    stream,
                    cfg,
                    p,
                    cols,
                    rows,
                    col_bands.as_const(),
                    row_bands.as_const(),
                )?;
            }
            if self.pairs > 0 {
                let cfg = LaunchConfig {
                    grid_dim: (self.pairs, 1, 1),
                    block_dim: (blockiness::PERIOD_LANES, 1, 1),
                    shared_mem_bytes: 0,
                };
                k.blockiness_periods(stream, cfg, p, cols.as_const(), rows.as_const(), sums)?;
            }
        }
        // Without pairs nothing is written; the slot's event still marks the frame.
        self.host.commit(stream)?;
        Ok(())
    }

    /// Waits for the oldest queued frame; its value from the pairs' sums.
    fn value(&mut self) -> Result<f32, DriverError> {
        let host = self.host.take(4 * self.pairs as usize)?;
        if self.pairs == 0 {
            return Ok(0.0);
        }
        Ok(blockiness::combine(
            host.chunks_exact(4).map(blockiness::decode),
        ))
    }
}

impl CudaSingle for Blockiness {
    fn queue(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        side: Input,
        frame: &PlanePtrs,
    ) -> Result<(), EngineError> {
        let p = self.settings.params(plan, side, frame, self.first);
        if let Some(why) = self.mismatch(&p.luma) {
            return Err(EngineError::InvalidFrame(format!("blockiness: {why}")));
        }
        self.launch(gpu, p).map_err(|e| {
            // The profiles may hold part of this frame: start the next one afresh.
            self.first = true;
            EngineError::Cuda(format!("running blockiness: {e}"))
        })?;
        self.first = false;
        Ok(())
    }

    fn read(&mut self, _plan: &Plan, side: Input, out: &mut Scores) -> Result<(), EngineError> {
        if self.host.queued() == 0 {
            return Err(EngineError::Unsupported(
                "blockiness: no frame queued to read".into(),
            ));
        }
        let v = self.value().map_err(|e| {
            self.first = true;
            EngineError::Cuda(format!("running blockiness: {e}"))
        })?;
        if let Some(v) = value(v) {
            out.push(side.field(BLOCKINESS), v);
        }
        Ok(())
    }
}

impl Restart for Blockiness {
    fn restart(&mut self) {
        self.first = true;
        self.host.clear();
    }
}
