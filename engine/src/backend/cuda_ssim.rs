//! SSIM / MS-SSIM on the GPU: one `ssim_scale` launch per scale (all channels of that scale
//! in one grid), each also writing the next scale's pooled planes; one 240-byte result copy
//! per pair. Buffers are allocated with the first pair and reused.

use std::sync::Arc;

use cudarc::driver::result as cu;
use cudarc::driver::{
    CudaContext, CudaSlice, CudaStream, DriverError, LaunchConfig, PinnedHostSlice,
};

use crate::cuda::{DevPtrMut, Kernels};
use crate::error::EngineError;
use crate::frame::PlanePtrs;
use crate::plan::Plan;
use crate::ssim::{Job, scale_sizes};
use gpumetrics_kernels::psnr::{Channel, ChannelPair, MAX_CHANNELS};
use gpumetrics_kernels::ssim::{
    BLOCK_ROWS, F32_SAMPLES, RESULT_LEN, SCALES, ScalePair, SsimPlanes, TILE_W, grid,
};

fn raw_ptr<T>(buf: &CudaSlice<T>, stream: &CudaStream) -> u64 {
    let (ptr, _sync) = cudarc::driver::DevicePtr::device_ptr(buf, stream);
    ptr
}

/// Pooled planes of one channel at scales 1.. (reference, distorted), f32, packed rows.
struct Pooled {
    _buffers: Vec<CudaSlice<f32>>,
    /// Per scale 1..SCALES: (reference, distorted) addresses.
    ptrs: [(u64, u64); SCALES],
}

pub(crate) struct CudaSsim {
    job: Job,
    pooled: Vec<Option<Pooled>>,
    /// Two result slots of `RESULT_LEN` f64 (the first launch of a pair clears the other).
    _sums: CudaSlice<f64>,
    sums_ptr: u64,
    _host: PinnedHostSlice<f64>,
    host_ptr: *mut f64,
    slot: usize,
}

// SAFETY: the raw pointers address memory owned by the struct, used on one stream.
unsafe impl Send for CudaSsim {}

impl CudaSsim {
    fn new(
        ctx: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
        plan: &Plan,
        job: Job,
    ) -> Result<CudaSsim, DriverError> {
        let mut pooled = Vec::new();
        for (i, (c, _)) in plan.channels.iter().enumerate() {
            if job.levels[i] < 2 {
                pooled.push(None);
                continue;
            }
            let (w, h) = plan.reference.channel_size(c);
            let sizes = scale_sizes(w, h);
            let mut buffers = Vec::new();
            let mut ptrs = [(0, 0); SCALES];
            for s in 1..job.levels[i] as usize {
                let n = sizes[s].0 as usize * sizes[s].1 as usize;
                let r = stream.alloc_zeros::<f32>(n)?;
                let d = stream.alloc_zeros::<f32>(n)?;
                ptrs[s] = (raw_ptr(&r, stream), raw_ptr(&d, stream));
                buffers.push(r);
                buffers.push(d);
            }
            pooled.push(Some(Pooled {
                _buffers: buffers,
                ptrs,
            }));
        }
        let sums = stream.alloc_zeros::<f64>(2 * RESULT_LEN)?;
        let sums_ptr = raw_ptr(&sums, stream);
        // SAFETY: written by the device before it is read.
        let mut host = unsafe { ctx.alloc_pinned_with_flags::<f64>(RESULT_LEN, 0) }?;
        let host_ptr = host.as_mut_ptr()?;
        Ok(CudaSsim {
            job,
            pooled,
            _sums: sums,
            sums_ptr,
            _host: host,
            host_ptr,
            slot: 0,
        })
    }

    /// Queues every scale, copies the slot back and waits for it.
    fn run(
        &mut self,
        stream: &Arc<CudaStream>,
        kernels: &Kernels,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
    ) -> Result<[f64; RESULT_LEN], DriverError> {
        let base = plan.psnr_planes(r, d);
        let peak = plan.reference.format.peak();
        let f32_chan = |ptr: u64, w: u32| Channel {
            ptr,
            pitch: w * 4,
            step: 4,
            sample_bytes: F32_SAMPLES,
            shift: 0,
            max: peak,
            _pad: 0,
        };
        let sums = DevPtrMut::<f64>::from_raw(self.sums_ptr);
        let add_to = sums.wrapping_add(self.slot * RESULT_LEN);
        let clear = sums.wrapping_add((1 - self.slot) * RESULT_LEN);
        for scale in 0..self.job.max_levels() as usize {
            let mut planes = SsimPlanes {
                scale: scale as u32,
                ..Default::default()
            };
            let (mut gx, mut gy) = (0, 0);
            for (i, (c, _)) in plan.channels.iter().enumerate() {
                let levels = self.job.levels[i] as usize;
                if levels <= scale {
                    continue;
                }
                let sizes = scale_sizes(base.pairs[i].width, base.pairs[i].height);
                let (w, h) = sizes[scale];
                debug_assert_eq!(plan.reference.channel_size(c).0, sizes[0].0);
                let pair = if scale == 0 {
                    base.pairs[i]
                } else {
                    let (pr, pd) = self.pooled[i].as_ref().expect("pooled planes").ptrs[scale];
                    ChannelPair {
                        reference: f32_chan(pr, w),
                        distorted: f32_chan(pd, w),
                        width: w,
                        height: h,
                    }
                };
                let pool = scale + 1 < levels;
                let (down_reference, down_distorted) = if pool {
                    self.pooled[i].as_ref().expect("pooled planes").ptrs[scale + 1]
                } else {
                    (0, 0)
                };
                let (bx, by) = grid(w, h, pool);
                gx = gx.max(bx);
                gy = gy.max(by);
                planes.pairs[planes.count as usize] = ScalePair {
                    pair,
                    down_reference,
                    down_distorted,
                    down_width: if pool { sizes[scale + 1].0 } else { 0 },
                    down_height: if pool { sizes[scale + 1].1 } else { 0 },
                    index: i as u32,
                    _pad: 0,
                };
                planes.count += 1;
            }
            let cfg = LaunchConfig {
                grid_dim: (gx.max(1), gy.max(1), planes.count),
                block_dim: (TILE_W, BLOCK_ROWS, 1),
                shared_mem_bytes: 0,
            };
            let clear_now = if scale == 0 { clear } else { DevPtrMut::null() };
            // SAFETY: the plane pointers were validated against the layouts; the pooled
            // buffers hold each scale's size; both result slots hold RESULT_LEN values.
            unsafe { kernels.ssim_scale(stream, cfg, planes, add_to, clear_now)? };
        }
        // SAFETY: the host buffer holds RESULT_LEN values; synchronised below.
        unsafe {
            let host = std::slice::from_raw_parts_mut(self.host_ptr, RESULT_LEN);
            cu::memcpy_dtoh_async(host, add_to.as_raw(), stream.cu_stream())?;
        }
        stream.synchronize()?;
        self.slot = 1 - self.slot;
        let mut out = [0.0; RESULT_LEN];
        // SAFETY: the copy completed.
        out.copy_from_slice(unsafe { std::slice::from_raw_parts(self.host_ptr, RESULT_LEN) });
        Ok(out)
    }
}

/// Sums of one pair; `state` holds the buffers from the first call on.
#[allow(clippy::too_many_arguments)]
pub(crate) fn measure(
    state: &mut Option<CudaSsim>,
    ctx: &Arc<CudaContext>,
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    job: &Job,
    plan: &Plan,
    r: &PlanePtrs,
    d: &PlanePtrs,
) -> Result<[f64; RESULT_LEN], EngineError> {
    let s = match state {
        Some(s) if s.job == *job => s,
        _ => {
            *state = None;
            state.insert(
                CudaSsim::new(ctx, stream, plan, *job)
                    .map_err(|e| EngineError::Cuda(format!("allocating SSIM buffers: {e}")))?,
            )
        }
    };
    s.run(stream, kernels, plan, r, d).map_err(|e| {
        // Leave no stale sums behind for the next pair, should the stream recover.
        // SAFETY: both slots lie in `_sums`.
        let _ =
            unsafe { cu::memset_d8_async(s.sums_ptr, 0, 2 * RESULT_LEN * 8, stream.cu_stream()) };
        EngineError::Cuda(format!("running ssim_scale: {e}"))
    })
}

const _: () = assert!(MAX_CHANNELS == 3);
