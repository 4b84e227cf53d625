//! Copies of a pair's planes to the host, for the metrics and maps that run on the CPU
//! behind the CUDA backend (ColorVideoVDP until its kernels exist, the distortion maps): one
//! host buffer per plane, reused pair after pair.

use cudarc::driver::DriverError;

use super::Gpu;
use crate::format::FrameLayout;
use crate::frame::PlanePtrs;

/// Host copies of one frame's planes.
#[derive(Default)]
pub(crate) struct HostCopy {
    planes: Vec<Vec<u8>>,
}

impl HostCopy {
    /// Queues copies of the planes of a frame at `ptrs` (device addresses, validated for
    /// `layout`) on `gpu`'s stream and gives their host addresses, valid until the next
    /// call. The copies are complete once the stream is synchronised.
    pub(crate) fn queue(
        &mut self,
        gpu: &Gpu,
        layout: &FrameLayout,
        ptrs: &PlanePtrs,
    ) -> Result<PlanePtrs, DriverError> {
        let planes = layout.format.n_planes();
        self.planes.resize_with(planes, Vec::new);
        let mut out = *ptrs;
        for (p, buf) in self.planes.iter_mut().enumerate().take(planes) {
            let rows = layout.plane_rows(p) as usize;
            let pitch = ptrs.pitch[p] as usize;
            let bytes = (rows - 1) * pitch + layout.min_row_bytes(p);
            buf.resize(bytes, 0);
            // SAFETY: the backend validated the plane against the layout: `rows` rows of
            // `pitch` bytes, the last one at least `min_row_bytes` long, are readable on
            // the device; the host buffer holds `bytes`.
            unsafe {
                cudarc::driver::result::memcpy_dtoh_async(
                    &mut buf[..],
                    ptrs.ptr[p],
                    gpu.stream.cu_stream(),
                )
            }?;
            out.ptr[p] = buf.as_ptr() as u64;
        }
        Ok(out)
    }
}

/// Copies both frames of a pair to `copies` (reference, distorted) and waits for them.
pub(crate) fn pair_to_host(
    gpu: &Gpu,
    plan: &crate::plan::Plan,
    r: &PlanePtrs,
    d: &PlanePtrs,
    copies: &mut [HostCopy; 2],
) -> Result<(PlanePtrs, PlanePtrs), DriverError> {
    let [cr, cd] = copies;
    let hr = cr.queue(gpu, &plan.reference, r)?;
    let hd = cd.queue(gpu, &plan.distorted, d)?;
    gpu.stream.synchronize()?;
    Ok((hr, hd))
}
