//! CUDA backend: the same kernel crate compiled to PTX, on the engine's own stream.
//!
//! Everything is allocated once per plan (pinned staging, device frame buffers, result
//! slots); a frame pair costs at most two host-to-device copies, one memset, one launch and
//! one 24-byte copy back.

use std::sync::Arc;

use cudarc::driver::result as cu;
use cudarc::driver::{
    CudaContext, CudaSlice, CudaStream, DriverError, LaunchConfig, PinnedHostSlice,
};

use rayon::prelude::*;

use super::{Backend, Measurement};
use crate::cuda::{DevPtrMut, Kernels};
use crate::error::EngineError;
use crate::format::FrameLayout;
use crate::frame::{Frame, HostFrame, MAX_PLANES, PlanePtrs};
use crate::metrics::MetricSet;
use crate::plan::Plan;
use gpumetrics_kernels::psnr::{MAX_CHANNELS, PSNR_BLOCK};

fn cuda_err(what: &str) -> impl FnOnce(DriverError) -> EngineError + '_ {
    move |e| EngineError::Cuda(format!("{what}: {e}"))
}

/// The device address of a buffer owned by the backend (used on its one stream only).
fn raw_ptr<T>(buf: &CudaSlice<T>, stream: &CudaStream) -> u64 {
    let (ptr, _sync) = cudarc::driver::DevicePtr::device_ptr(buf, stream);
    ptr
}

/// Device pitches are multiples of this (coalesced row starts).
const PITCH_ALIGN: usize = 256;

/// A host frame's way to the device: pinned staging, then one asynchronous copy.
struct Upload {
    staging: PinnedHostSlice<u8>,
    staging_ptr: *mut u8,
    /// Owns the memory at `device_ptr`.
    _device: CudaSlice<u8>,
    device_ptr: u64,
    /// Per plane: byte offset in both buffers, pitch, row bytes, rows.
    planes: Vec<(usize, usize, usize, usize)>,
}

// SAFETY: the raw pointers address memory owned by the same struct.
unsafe impl Send for Upload {}

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
        let mut staging = unsafe {
            ctx.alloc_pinned_with_flags::<u8>(
                total,
                cudarc::driver::sys::CU_MEMHOSTALLOC_WRITECOMBINED,
            )
        }?;
        let staging_ptr = staging.as_mut_ptr()?;
        let device = stream.alloc_zeros::<u8>(total)?;
        let device_ptr = raw_ptr(&device, stream);
        Ok(Upload {
            staging,
            staging_ptr,
            _device: device,
            device_ptr,
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
            let staging = self.staging_ptr as usize + offset;
            (0..rows).into_par_iter().with_min_len(16).for_each(|y| {
                let s = &src.data[y * src.stride..y * src.stride + row];
                // SAFETY: offset + y * pitch + row <= staging length by construction, and
                // rows do not overlap.
                unsafe {
                    std::ptr::copy_nonoverlapping(s.as_ptr(), (staging + y * pitch) as *mut u8, row)
                };
            });
            out.ptr[i] = self.device_ptr + offset as u64;
            out.pitch[i] = pitch as u32;
        }
        let len = self.staging.len();
        // SAFETY: both buffers hold `len` bytes; the stream is synchronised before the
        // staging buffer is written again.
        unsafe {
            let src = std::slice::from_raw_parts(self.staging_ptr, len);
            cu::memcpy_htod_async(self.device_ptr, src, stream.cu_stream())?;
        }
        Ok(out)
    }
}

pub(crate) struct CudaBackend {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    kernels: Arc<Kernels>,
    uploads: [Upload; 2],
    /// Own the memory at `sums_ptr` / `host_sums_ptr`.
    _sums: CudaSlice<u64>,
    sums_ptr: u64,
    _host_sums: PinnedHostSlice<u64>,
    host_sums_ptr: *mut u64,
    grid_x: u32,
    /// Which half of `sums` the next pair adds into (the kernel clears the other).
    slot: usize,
    /// SSIM/MS-SSIM buffers, allocated with the first pair that asks for them.
    ssim: Option<super::cuda_ssim::CudaSsim>,
    /// SSIMULACRA2 buffers, allocated with the first pair that asks for the metric.
    ssimu2: Option<super::cuda_ssimulacra2::CudaSsimu2>,
    /// Set when running in a context lent by the caller; last, so it goes after the rest.
    _external: Option<crate::cuda::ExternalGuard>,
}

// SAFETY: the raw pointers address memory owned by the struct; CUDA objects are used from
// one thread at a time (the engine is `&mut`).
unsafe impl Send for CudaBackend {}

impl CudaBackend {
    pub(crate) fn new(device_id: u32, plan: &Plan) -> Result<CudaBackend, EngineError> {
        Self::on_context(open_context(device_id)?, plan)
    }

    /// Runs in a context owned by the caller (e.g. the one upstream decoded into).
    pub(crate) fn on_external(
        ext: crate::cuda::ExternalContext,
        plan: &Plan,
    ) -> Result<CudaBackend, EngineError> {
        let ctx = crate::cuda::wrap_external(&ext)?;
        let mut backend = Self::on_context(ctx.clone(), plan)?;
        backend._external = Some(crate::cuda::ExternalGuard::new(ctx, ext));
        Ok(backend)
    }

    fn on_context(ctx: Arc<CudaContext>, plan: &Plan) -> Result<CudaBackend, EngineError> {
        let setup = || -> Result<CudaBackend, DriverError> {
            let stream = ctx.new_stream()?;
            let kernels = crate::cuda::kernels(&ctx)?;
            let uploads = [
                Upload::new(&ctx, &stream, &plan.reference)?,
                Upload::new(&ctx, &stream, &plan.distorted)?,
            ];
            let sums = stream.alloc_zeros::<u64>(2 * MAX_CHANNELS)?;
            let sums_ptr = raw_ptr(&sums, &stream);
            // SAFETY: written by the device before it is read.
            let mut host_sums = unsafe { ctx.alloc_pinned_with_flags::<u64>(MAX_CHANNELS, 0) }?;
            let host_sums_ptr = host_sums.as_mut_ptr()?;
            let rows = plan
                .channels
                .iter()
                .map(|(c, _)| plan.reference.channel_size(c).1)
                .max()
                .unwrap_or(1);
            stream.synchronize()?;
            Ok(CudaBackend {
                ctx: ctx.clone(),
                stream,
                kernels,
                uploads,
                _sums: sums,
                sums_ptr,
                _host_sums: host_sums,
                host_sums_ptr,
                grid_x: rows.min(2048),
                slot: 0,
                ssim: None,
                ssimu2: None,
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
                    .upload(f, &host, &self.stream)
                    .map_err(cuda_err("uploading a frame"))
            }
            Frame::Device(f) => f.validate(layout, what),
        }
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn measure(
        &mut self,
        plan: &Plan,
        metrics: MetricSet,
        reference: &Frame,
        distorted: &Frame,
    ) -> Result<Measurement, EngineError> {
        self.ctx
            .bind_to_thread()
            .map_err(cuda_err("binding the CUDA context"))?;
        let r = self.device_planes(reference, plan, 0)?;
        let d = self.device_planes(distorted, plan, 1)?;
        let mut out = Measurement::default();
        if metrics.contains(MetricSet::PSNR) {
            let planes = plan.psnr_planes(&r, &d);
            let cfg = LaunchConfig {
                grid_dim: (self.grid_x, 1, planes.count),
                block_dim: (PSNR_BLOCK, 1, 1),
                shared_mem_bytes: 0,
            };
            let sums = DevPtrMut::<u64>::from_raw(self.sums_ptr);
            let add_to = sums.wrapping_add(self.slot * MAX_CHANNELS);
            let clear = sums.wrapping_add((1 - self.slot) * MAX_CHANNELS);
            let s = self.stream.cu_stream();
            // SAFETY: the plane pointers were validated against the layouts (or uploaded
            // into buffers sized for them); both result slots hold MAX_CHANNELS values.
            let queued = unsafe {
                self.kernels
                    .psnr_sse(&self.stream, cfg, planes, add_to, clear)
                    .and_then(|()| {
                        let host = std::slice::from_raw_parts_mut(self.host_sums_ptr, MAX_CHANNELS);
                        cu::memcpy_dtoh_async(host, add_to.as_raw(), s)
                    })
            };
            if let Err(e) = queued.and_then(|()| self.stream.synchronize()) {
                // Leave no stale sums behind for the next pair, should the stream recover.
                // SAFETY: both slots lie in `_sums`.
                let _ = unsafe { cu::memset_d8_async(self.sums_ptr, 0, 2 * MAX_CHANNELS * 8, s) };
                return Err(EngineError::Cuda(format!("running psnr_sse: {e}")));
            }
            self.slot = 1 - self.slot;
            // SAFETY: the copy above completed (stream synchronised).
            out.sse.copy_from_slice(unsafe {
                std::slice::from_raw_parts(self.host_sums_ptr, MAX_CHANNELS)
            });
        } else {
            self.stream
                .synchronize()
                .map_err(cuda_err("uploading frames"))?;
        }
        if metrics.contains(MetricSet::SSIMULACRA2) {
            out.ssimulacra2 = Some(super::cuda_ssimulacra2::measure(
                &mut self.ssimu2,
                &self.ctx,
                &self.stream,
                &self.kernels,
                plan,
                &r,
                &d,
            )?);
        }
        if let Some(job) = crate::ssim::Job::new(plan, metrics) {
            out.ssim = super::cuda_ssim::measure(
                &mut self.ssim,
                &self.ctx,
                &self.stream,
                &self.kernels,
                &job,
                plan,
                &r,
                &d,
            )?;
        }
        Ok(out)
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
