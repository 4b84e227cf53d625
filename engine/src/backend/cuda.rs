//! CUDA backend: the same kernel crate compiled to PTX, on the engine's own stream.
//!
//! Everything is allocated once per plan (pinned staging and device buffers for host
//! frames here, each metric's buffers in its own `cuda.rs`); a host frame pair costs two
//! host-to-device copies, then each metric queues its kernels and copies its sums back.

use std::sync::Arc;

use cudarc::driver::result as cu;
use cudarc::driver::{CudaContext, CudaStream, DriverError};

use rayon::prelude::*;

use super::{Backend, BackendKind, Held};
use crate::cuda::{DeviceBuffer, Gpu, PinnedBuffer};
use crate::error::EngineError;
use crate::format::FrameLayout;
use crate::frame::{Frame, HostFrame, MAX_PLANES, PlanePtrs};
use crate::metric::temporal::Lineup;
use crate::metric::{Configured, CudaMetric};
use crate::metrics::MetricSet;
use crate::plan::Plan;
use crate::scores::Scores;

fn cuda_err(what: &str) -> impl FnOnce(DriverError) -> EngineError + '_ {
    move |e| EngineError::Cuda(format!("{what}: {e}"))
}

/// Device pitches are multiples of this (coalesced row starts).
const PITCH_ALIGN: usize = 256;

/// A host frame's way to the device: pinned staging, then one asynchronous copy.
struct Upload {
    staging: PinnedBuffer<u8>,
    device: DeviceBuffer<u8>,
    /// Per plane: byte offset in both buffers, pitch, row bytes, rows.
    planes: Vec<(usize, usize, usize, usize)>,
}

impl Upload {
    fn new(
        ctx: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
        layout: &FrameLayout,
    ) -> Result<Upload, DriverError> {
        let mut planes = Vec::new();
        let mut total = 0;
        for p in 0..layout.format.n_planes() {
            let row = layout.min_row_bytes(p);
            let pitch = row.next_multiple_of(PITCH_ALIGN);
            let rows = layout.plane_rows(p) as usize;
            planes.push((total, pitch, row, rows));
            total += pitch * rows;
        }
        // SAFETY: the staging memory is written before every copy that reads it.
        let staging = unsafe {
            PinnedBuffer::new(
                ctx,
                total,
                cudarc::driver::sys::CU_MEMHOSTALLOC_WRITECOMBINED,
            )
        }?;
        let device = DeviceBuffer::zeroed(stream, total)?;
        Ok(Upload {
            staging,
            device,
            planes,
        })
    }

    /// Copies the validated host frame into staging and queues the upload.
    fn upload(
        &mut self,
        frame: &HostFrame,
        host: &PlanePtrs,
        stream: &CudaStream,
    ) -> Result<PlanePtrs, DriverError> {
        let mut out = PlanePtrs::default();
        for (i, &(offset, pitch, row, rows)) in self.planes.iter().enumerate() {
            let src = frame.planes()[i];
            debug_assert_eq!(src.data.as_ptr() as u64, host.ptr[i]);
            // Rows in parallel: a single core cannot fill write-combined memory at PCIe speed.
            let staging = self.staging.as_mut_ptr() as usize + offset;
            (0..rows).into_par_iter().with_min_len(16).for_each(|y| {
                let s = &src.data[y * src.stride..y * src.stride + row];
                // SAFETY: offset + y * pitch + row <= staging length by construction, and
                // rows do not overlap.
                unsafe {
                    std::ptr::copy_nonoverlapping(s.as_ptr(), (staging + y * pitch) as *mut u8, row)
                };
            });
            out.ptr[i] = self.device.ptr_at(offset);
            out.pitch[i] = pitch as u32;
        }
        // SAFETY: both buffers hold the same length; the stream is synchronised (every
        // pair waits for its metrics' sums) before the staging buffer is written again.
        unsafe {
            cu::memcpy_htod_async(
                self.device.ptr(),
                self.staging.as_slice(),
                stream.cu_stream(),
            )?;
        }
        Ok(out)
    }
}

pub(crate) struct CudaBackend {
    gpu: Gpu,
    /// Staging for host frames: the reference's (when the plan has one), the distorted's.
    uploads: [Option<Upload>; 2],
    /// Every requested metric's state, allocated for the plan.
    metrics: Lineup<dyn CudaMetric>,
    /// Set when running in a context lent by the caller; last, so it goes after the rest.
    _external: Option<crate::cuda::ExternalGuard>,
}

impl CudaBackend {
    pub(crate) fn new(
        device_id: u32,
        plan: &Plan,
        set: MetricSet,
        configured: &[Configured],
    ) -> Result<CudaBackend, EngineError> {
        Self::on_context(open_context(device_id)?, plan, set, configured)
    }

    /// Runs in a context owned by the caller (e.g. the one upstream decoded into).
    pub(crate) fn on_external(
        ext: crate::cuda::ExternalContext,
        plan: &Plan,
        set: MetricSet,
        configured: &[Configured],
    ) -> Result<CudaBackend, EngineError> {
        let ctx = crate::cuda::wrap_external(&ext)?;
        let mut backend = Self::on_context(ctx.clone(), plan, set, configured)?;
        backend._external = Some(crate::cuda::ExternalGuard::new(ctx, ext));
        Ok(backend)
    }

    fn on_context(
        ctx: Arc<CudaContext>,
        plan: &Plan,
        set: MetricSet,
        configured: &[Configured],
    ) -> Result<CudaBackend, EngineError> {
        let setup = || -> Result<CudaBackend, DriverError> {
            let stream = ctx.new_stream()?;
            let kernels = crate::cuda::kernels(&ctx)?;
            let uploads = [
                match plan.has_reference {
                    true => Some(Upload::new(&ctx, &stream, &plan.reference)?),
                    false => None,
                },
                Some(Upload::new(&ctx, &stream, &plan.distorted)?),
            ];
            let gpu = Gpu {
                ctx: ctx.clone(),
                stream,
                kernels,
            };
            let mut metrics = Vec::new();
            for c in configured {
                if let Some(m) = (c.entry.cuda)(&gpu, &c.setup(plan, set))? {
                    metrics.push(m);
                }
            }
            let metrics = Lineup::new(metrics);
            gpu.stream.synchronize()?;
            Ok(CudaBackend {
                gpu,
                uploads,
                metrics,
                _external: None,
            })
        };
        setup().map_err(cuda_err("setting up the CUDA backend"))
    }

    fn device_planes(
        &mut self,
        frame: &Frame,
        plan: &Plan,
        index: usize,
    ) -> Result<PlanePtrs, EngineError> {
        let (layout, what) = if index == 0 {
            (&plan.reference, "reference")
        } else {
            (&plan.distorted, "distorted")
        };
        match frame {
            Frame::Host(f) => {
                let host = f.validate(layout, what)?;
                self.uploads[index]
                    .as_mut()
                    .expect("a staging buffer for each input of the plan")
                    .upload(f, &host, &self.gpu.stream)
                    .map_err(cuda_err("uploading a frame"))
            }
            Frame::Device(f) => f.validate(layout, what),
        }
    }
}

impl Backend for CudaBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cuda
    }

    fn measure(
        &mut self,
        plan: &Plan,
        reference: &Frame,
        distorted: &Frame,
        scores: &mut Scores,
        late: &mut Scores,
    ) -> Result<(), EngineError> {
        self.gpu
            .ctx
            .bind_to_thread()
            .map_err(cuda_err("binding the CUDA context"))?;
        let d = self.device_planes(distorted, plan, 1)?;
        // One input alone: its frame stands for both (uploaded once); the no-reference
        // metrics measure only the distorted side.
        let r = if plan.has_reference {
            self.device_planes(reference, plan, 0)?
        } else {
            d
        };
        if self.metrics.is_empty() {
            // Nothing waits for the uploads otherwise: surface their errors here.
            return self
                .gpu
                .stream
                .synchronize()
                .map_err(cuda_err("uploading frames"));
        }
        let gpu = &self.gpu;
        let result = self
            .metrics
            .each(|m| m.queue(gpu, plan, &r, &d))
            .and_then(|()| {
                self.metrics
                    .measure(scores, late, |m, out| m.measure(gpu, plan, &r, &d, out))
            });
        if result.is_err() {
            // Metrics on their own streams (the no-reference ones) may still read the
            // frames: nothing reuses them before that work is done.
            let _ = gpu.ctx.synchronize();
        }
        result
    }

    fn lineup(&mut self) -> &mut dyn Held {
        &mut self.metrics
    }

    fn lag(&self) -> usize {
        self.metrics.lag()
    }
}

const _: () = assert!(MAX_PLANES >= 3);

/// The primary context of `device_id` (shared by every engine on that device), or why
/// there is none. Never panics, also where no CUDA driver is installed.
pub(crate) fn open_context(device_id: u32) -> Result<Arc<CudaContext>, EngineError> {
    // SAFETY: only tries to load the driver library.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(EngineError::CudaUnavailable(
            "the CUDA driver library (libcuda.so) was not found".into(),
        ));
    }
    let open = || -> Result<Arc<CudaContext>, String> {
        let count =
            CudaContext::device_count().map_err(|e| format!("cannot query CUDA devices: {e}"))?;
        if device_id as i64 >= count as i64 {
            return Err(format!(
                "device-id {device_id} does not exist ({count} CUDA device(s) found)"
            ));
        }
        CudaContext::new(device_id as usize)
            .map_err(|e| format!("cannot open CUDA device {device_id}: {e}"))
    };
    // cudarc panics on missing driver symbols; keep that inside the engine.
    std::panic::catch_unwind(open)
        .unwrap_or_else(|_| Err("the CUDA driver is unusable (missing symbols?)".into()))
        .map_err(EngineError::CudaUnavailable)
}
