//! ColorVideoVDP on the CUDA backend, for now through the CPU path: each pair's planes are
//! copied to the host after the pair's uploads (in place of device frames: NVDEC's output)
//! and measured by [`CvvdpCpu`], so that a run on the GPU reports the same JOD as one on the
//! CPU. The GPU kernels of issue 47 are to replace this; until then cvvdp costs a host
//! copy and the CPU's time per pair.

use std::collections::VecDeque;

use cudarc::driver::{CudaEvent, DriverError};

use super::cpu::CvvdpCpu;
use crate::cuda::Gpu;
use crate::error::EngineError;
use crate::format::FrameLayout;
use crate::frame::PlanePtrs;
use crate::metric::{CpuMetric, CudaMetric};
use crate::plan::Plan;
use crate::scores::Scores;

pub(super) struct CvvdpHost {
    cpu: CvvdpCpu,
    /// Host copies of each side's planes (reference, distorted), reused pair after pair.
    host: [Vec<Vec<u8>>; 2],
    /// Scores of the pairs queued and not read, oldest first.
    ready: VecDeque<Scores>,
}

impl CvvdpHost {
    pub(super) fn new(cpu: CvvdpCpu) -> CvvdpHost {
        CvvdpHost {
            cpu,
            host: [Vec::new(), Vec::new()],
            ready: VecDeque::new(),
        }
    }
}

/// Copies the planes of a frame at `ptrs` (device addresses) into `host` and gives their
/// host addresses.
fn download(
    gpu: &Gpu,
    layout: &FrameLayout,
    ptrs: &PlanePtrs,
    host: &mut Vec<Vec<u8>>,
) -> Result<PlanePtrs, DriverError> {
    let planes = layout.format.n_planes();
    host.resize_with(planes, Vec::new);
    let mut out = *ptrs;
    for (p, buf) in host.iter_mut().enumerate().take(planes) {
        let rows = layout.plane_rows(p) as usize;
        let pitch = ptrs.pitch[p] as usize;
        let bytes = (rows - 1) * pitch + layout.min_row_bytes(p);
        buf.resize(bytes, 0);
        // SAFETY: the backend validated the plane against the layout: `rows` rows of
        // `pitch` bytes, the last one at least `min_row_bytes` long, are readable on the
        // device; the host buffer holds `bytes`.
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

impl crate::metric::temporal::Sequenced for CvvdpHost {
    fn finish(&mut self, plan: &Plan, late: &mut [Scores]) {
        self.cpu.finish(plan, late);
    }

    fn reset(&mut self) {
        self.ready.clear();
        self.cpu.reset();
    }
}

impl CudaMetric for CvvdpHost {
    fn queue(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
        _uploaded: Option<&CudaEvent>,
    ) -> Result<(), EngineError> {
        let [hr, hd] = &mut self.host;
        let copied = download(gpu, &plan.reference, r, hr)
            .and_then(|hr| Ok((hr, download(gpu, &plan.distorted, d, hd)?)))
            .and_then(|p| gpu.stream.synchronize().map(|()| p));
        let (hr, hd) = copied
            .map_err(|e| EngineError::Cuda(format!("copying a pair to the host for cvvdp: {e}")))?;
        let mut scores = Scores::new();
        self.cpu.measure(plan, &hr, &hd, &mut scores);
        self.ready.push_back(scores);
        Ok(())
    }

    fn drop_queued(&mut self) {
        self.ready.clear();
    }

    fn read(&mut self, _plan: &Plan, scores: &mut Scores) -> Result<(), EngineError> {
        let s = self
            .ready
            .pop_front()
            .ok_or_else(|| EngineError::Unsupported("cvvdp: no pair queued to read".into()))?;
        scores.append(s);
        Ok(())
    }
}
