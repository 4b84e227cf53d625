//! XPSNR on the GPU: per pair one `xpsnr_blocks` launch (one block per XPSNR block: its
//! SSEs and weight, the reference luma into the history) and one `xpsnr_finish` (the
//! smoothing and each plane's weighted sum), which writes the planes' distortions straight
//! to the pair's host slot (`Readback`). The activity source's previous frames stay on the device;
//! which buffer a pair writes is the host's count, since pairs run in order on the metric's
//! one lane. Buffers are allocated once, for the plan.

use cudarc::driver::{CudaSlice, DriverError, LaunchConfig};

use crate::cuda::{DeviceMemory, Gpu, Readback, zeroed};
use crate::error::EngineError;
use crate::frame::PlanePtrs;
use crate::metric::CudaMetric;
use crate::metric::temporal::Sequenced;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::channel::MAX_CHANNELS;
use gpumetrics_kernels::xpsnr::{self, Grid, History, XpsnrPlanes};

pub(super) struct Xpsnr {
    /// Whose activity weights the errors.
    activity: super::Activity,
    grid: Grid,
    /// The plane sizes the buffers were made for (luma, then chroma).
    sizes: [(u32, u32); MAX_CHANNELS],
    /// The activity source's previous frames: two luma frames (`History`'s layout; one value for a
    /// frame too small to weight, which never reads it).
    history: CudaSlice<u16>,
    /// Per block each plane's SSE (plane after plane) and the weights, written by
    /// `xpsnr_blocks` and read by `xpsnr_finish`, pair after pair on the stream.
    sse: CudaSlice<u64>,
    weights: CudaSlice<f64>,
    /// Each plane's distortion, on the host (one slot per pair in flight).
    host: Readback<u64>,
    /// The buffer of `history` the next pair writes.
    write: u32,
    /// Previous frames of the sequence in `history` (0 to 2) for the next pair queued.
    frames: u32,
}

impl Xpsnr {
    pub(super) fn new(
        gpu: &Gpu,
        plan: &Plan,
        second_order: bool,
        activity: super::Activity,
    ) -> Result<Xpsnr, DriverError> {
        let grid = super::grid(plan, second_order, activity);
        let n = grid.blocks() as usize;
        let history = if grid.weighted() {
            2 * grid.width as usize * grid.height as usize
        } else {
            1
        };
        let mut sizes = [(0, 0); MAX_CHANNELS];
        for (s, (c, _)) in sizes.iter_mut().zip(&plan.channels) {
            *s = plan.reference.channel_size(c);
        }
        Ok(Xpsnr {
            activity,
            grid,
            sizes,
            history: zeroed(&gpu.stream, history)?,
            sse: zeroed(&gpu.stream, MAX_CHANNELS * n)?,
            weights: zeroed(&gpu.stream, n)?,
            host: Readback::new(&gpu.ctx, MAX_CHANNELS)?,
            write: 0,
            frames: 0,
        })
    }

    /// Why `p` is not a pair these buffers were made for, if it is not.
    fn mismatch(&self, p: &XpsnrPlanes) -> Option<String> {
        for c in 0..self.grid.planes as usize {
            let pair = &p.pairs[c];
            if (pair.width, pair.height) != self.sizes[c] {
                return Some(format!(
                    "plane {c} of {}x{} for buffers of {:?}",
                    pair.width, pair.height, self.sizes[c]
                ));
            }
            for (what, ch) in [
                ("reference", &pair.reference),
                ("distorted", &pair.distorted),
            ] {
                let row = (pair.width as u64 - 1) * ch.step as u64 + ch.sample_bytes as u64;
                if ch.ptr == 0 || (pair.height > 1 && (ch.pitch as u64) < row) {
                    return Some(format!(
                        "{what} plane {c} at {:#x} with pitch {} (rows need {row} bytes)",
                        ch.ptr, ch.pitch
                    ));
                }
            }
        }
        None
    }

    /// Queues the pair's two launches, the distortions into the next host slot.
    fn launch(&mut self, gpu: &Gpu, p: XpsnrPlanes) -> Result<(), DriverError> {
        let g = self.grid;
        let blocks = LaunchConfig {
            grid_dim: (g.cols, g.rows, 1),
            block_dim: (xpsnr::BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let one = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (xpsnr::FINISH, 1, 1),
            shared_mem_bytes: 0,
        };
        let history = History {
            ptr: self.history.ptr(),
            write: self.write,
            frames: self.frames,
        };
        let (sse, weights) = (self.sse.as_mut(), self.weights.as_mut());
        let out = self.host.target()?;
        // SAFETY: the planes were validated against the plan's layouts by the backend and
        // against these buffers by `mismatch`; `history` holds two luma frames of the
        // grid's size (a weighted grid; an unweighted one never reads it), `sse` 3 · n and
        // `weights` n values for the grid's n blocks, the slot 3; the kernels run in stream
        // order and the host reads the slot after the event committed after them.
        unsafe {
            let k = &gpu.kernels;
            k.xpsnr_blocks(&gpu.stream, blocks, g, p, history, sse, weights)?;
            k.xpsnr_finish(&gpu.stream, one, g, sse.as_const(), weights, out)?;
        }
        self.host.commit(&gpu.stream)
    }

    /// A new sequence: no previous frames (also after a failed pair, which may have left
    /// the history half written).
    fn restart(&mut self) {
        self.write = 0;
        self.frames = 0;
    }
}

/// No pair held back; the previous frames end with the sequence.
impl Sequenced for Xpsnr {
    fn finish(&mut self, _plan: &Plan, _late: &mut [Scores]) {
        self.host.clear();
        self.restart();
    }

    fn reset(&mut self) {
        self.host.clear();
        self.restart();
    }
}

impl CudaMetric for Xpsnr {
    fn queue(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
        _uploaded: Option<&cudarc::driver::CudaEvent>,
    ) -> Result<(), EngineError> {
        let p = super::planes(plan, r, d, self.activity);
        if let Some(why) = self.mismatch(&p) {
            return Err(EngineError::InvalidFrame(format!("xpsnr: {why}")));
        }
        self.launch(gpu, p).map_err(|e| {
            self.restart();
            EngineError::Cuda(format!("running xpsnr: {e}"))
        })?;
        if self.grid.weighted() {
            self.write ^= 1;
            self.frames = (self.frames + 1).min(2);
        }
        Ok(())
    }

    fn drop_queued(&mut self) {
        // The dropped pairs' frames are in the history: start the sequence again.
        self.host.clear();
        self.restart();
    }

    fn read(&mut self, plan: &Plan, scores: &mut Scores) -> Result<(), EngineError> {
        if self.host.queued() == 0 {
            return Err(EngineError::Unsupported(
                "xpsnr: no pair queued to read".into(),
            ));
        }
        let distortion = match self.host.take(MAX_CHANNELS) {
            Ok(d) => d,
            Err(e) => {
                self.host.clear();
                self.restart();
                return Err(EngineError::Cuda(format!("running xpsnr: {e}")));
            }
        };
        super::push_fields(
            plan,
            self.activity,
            &distortion[..plan.channels.len()],
            scores,
        );
        Ok(())
    }
}
