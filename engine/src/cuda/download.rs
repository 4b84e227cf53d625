//! A device frame's way back to the host, for the few steps that run on the CPU inside a
//! CUDA run (VMAF v1's CAMBI and SpEED chroma until they have kernels of their own): pinned
//! host memory sized once per plan, one 2-D copy per plane queued on the stream.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream, DriverError, sys};

use super::PinnedBuffer;
use crate::format::FrameLayout;
use crate::frame::PlanePtrs;

/// Pinned host planes of one layout, tightly pitched.
pub(crate) struct Download {
    host: PinnedBuffer<u8>,
    /// Per plane: byte offset in `host`, row bytes, rows.
    planes: Vec<(usize, usize, usize)>,
}

impl Download {
    pub(crate) fn new(ctx: &Arc<CudaContext>, layout: &FrameLayout) -> Result<Self, DriverError> {
        let mut planes = Vec::new();
        let mut total = 0;
        for p in 0..layout.format.n_planes() {
            let row = layout.min_row_bytes(p);
            let rows = layout.plane_rows(p) as usize;
            planes.push((total, row, rows));
            total += (row * rows).next_multiple_of(64);
        }
        // SAFETY: every plane is written by `queue`'s copies before `host_planes` is read.
        let host = unsafe { PinnedBuffer::new(ctx, total.max(1), 0) }?;
        Ok(Download { host, planes })
    }

    /// Queues the copies of `frame`'s planes (validated against the layout this was made
    /// for) into the host planes.
    ///
    /// # Safety
    /// `frame` must address readable device planes of that layout until the stream is
    /// synchronised, and the host planes must not be read before then.
    pub(crate) unsafe fn queue(
        &self,
        frame: &PlanePtrs,
        stream: &CudaStream,
    ) -> Result<(), DriverError> {
        for (i, &(offset, row, rows)) in self.planes.iter().enumerate() {
            let copy = sys::CUDA_MEMCPY2D {
                srcXInBytes: 0,
                srcY: 0,
                srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
                srcHost: std::ptr::null(),
                srcDevice: frame.ptr[i],
                srcArray: std::ptr::null_mut(),
                srcPitch: frame.pitch[i] as usize,
                dstXInBytes: 0,
                dstY: 0,
                dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_HOST,
                // SAFETY (of the address): offset + row · rows lies inside `host`.
                dstHost: unsafe { self.host.as_mut_ptr().add(offset) }.cast(),
                dstDevice: 0,
                dstArray: std::ptr::null_mut(),
                dstPitch: row,
                WidthInBytes: row,
                Height: rows,
            };
            // SAFETY: the caller vouches for the source; the destination is ours.
            unsafe { sys::cuMemcpy2DAsync_v2(&copy, stream.cu_stream()) }.result()?;
        }
        Ok(())
    }

    /// The host planes, as the CPU functions take them (after the stream is synchronised).
    pub(crate) fn host_planes(&self) -> PlanePtrs {
        let mut out = PlanePtrs::default();
        for (i, &(offset, row, _)) in self.planes.iter().enumerate() {
            out.ptr[i] = self.host.as_mut_ptr() as u64 + offset as u64;
            out.pitch[i] = row as u32;
        }
        out
    }
}
