//! Thumbnails on the GPU: `thumb_cells` over a frame in device memory (one block per
//! cell), and the cell sums copied back (4.6 KB), so that a decoder's frames never leave
//! the device for alignment.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, LaunchConfig};

use super::thumbnail::{Thumbnail, thumb_frame};
use crate::cuda::{DevPtrMut, ExternalContext, ExternalGuard, Kernels, kernels, wrap_external};
use crate::error::EngineError;
use crate::format::FrameLayout;
use crate::frame::DeviceFrame;
use gpumetrics_kernels::thumb::{BLOCK, CELLS, COLS, ROWS};

fn cuda_err(e: impl std::fmt::Display) -> EngineError {
    EngineError::Cuda(format!("thumb_cells: {e}"))
}

/// Makes thumbnails of device frames in one CUDA context (that of the frames' memory).
pub struct Thumbnailer {
    stream: Arc<CudaStream>,
    kernels: Arc<Kernels>,
    sums: CudaSlice<u64>,
    handle: usize,
    /// Last: forgets the module loaded in the context when no engine uses it any more.
    _guard: ExternalGuard,
}

impl Thumbnailer {
    /// A thumbnailer in `context` (a context owned elsewhere, e.g. GStreamer's).
    pub fn new(context: ExternalContext) -> Result<Thumbnailer, EngineError> {
        let handle = context.handle();
        let ctx = wrap_external(&context)?;
        let stream = ctx.new_stream().map_err(cuda_err)?;
        let kernels = kernels(&ctx).map_err(cuda_err)?;
        let sums = stream.alloc_zeros::<u64>(CELLS).map_err(cuda_err)?;
        Ok(Thumbnailer {
            stream,
            kernels,
            sums,
            handle,
            _guard: ExternalGuard::new(ctx, context),
        })
    }

    /// The `CUcontext` it runs in.
    pub fn context_handle(&self) -> usize {
        self.handle
    }

    /// The thumbnail of `frame`, a frame of `layout` in this context's memory, checked
    /// against the layout first. Waits for the copy back (a few microseconds of work).
    pub fn of(
        &mut self,
        frame: &DeviceFrame,
        layout: &FrameLayout,
    ) -> Result<Thumbnail, EngineError> {
        let ptrs = frame.validate(layout, "thumbnail")?;
        let f = thumb_frame(layout, &ptrs);
        let cfg = LaunchConfig {
            grid_dim: (COLS, ROWS, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        {
            let (out, _guard) = DevPtrMut::of(&mut self.sums, &self.stream);
            // SAFETY: `validate` checked every plane's pointer and pitch against the layout;
            // the kernel reads inside `width`×`height` and writes CELLS sums.
            unsafe { self.kernels.thumb_cells(&self.stream, cfg, f, out) }.map_err(cuda_err)?;
        }
        let sums = self.stream.clone_dtoh(&self.sums).map_err(cuda_err)?;
        Ok(Thumbnail::of_sums(&f, &sums))
    }
}
