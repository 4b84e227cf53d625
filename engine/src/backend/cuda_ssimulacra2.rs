//! SSIMULACRA2 on the GPU. Per frame pair, on the backend's stream:
//!
//! 1. `ssimu2_linearize`: both frames → linear RGB planes at scale 0, and their 2×2 average
//!    at scale 1 in the same pass;
//! 2. `ssimu2_downsample` for scales 2..;
//! 3. per scale: `ssimu2_xyb` (six XYB planes, stored transposed so that the sequential
//!    passes read consecutive addresses), `ssimu2_hblur` (the reference's recursive Gaussian
//!    along rows, one thread per row, plane and moment), `ssimu2_vblur` (the same along
//!    columns, fused with the three maps and their sums per column block);
//! 4. `ssimu2_finish`: the per-block sums reduced in f64; one copy of 18 sums per scale.
//!
//! Every buffer is allocated once, when the first pair is measured: the linear-RGB pyramid
//! (6 planes per scale) and, reused by every scale, 6 XYB + 15 moment planes of scale-0
//! size: 4 · (6 · 4/3 + 21) = 116 bytes per pixel, 241 MB at 1080p.

use std::sync::Arc;

use cudarc::driver::result as cu;
use cudarc::driver::{CudaSlice, CudaStream, DriverError, LaunchConfig, PinnedHostSlice};

use crate::cuda::{DevPtr, DevPtrMut, Kernels};
use crate::error::EngineError;
use crate::frame::PlanePtrs;
use crate::plan::Plan;
use crate::ssimulacra2::{Sums, scale_sizes};
use gpumetrics_kernels::ssimulacra2::{
    BlurParams, S2_FINISH_THREADS, S2_LINE_THREADS, S2_MAX_SCALES, S2_PIXEL_BLOCK,
    S2_SUMS_PER_SCALE, Scale, half,
};

/// Buffers of one plan, allocated once.
pub(crate) struct CudaSsimu2 {
    /// Owns the memory of every `scales[i].base`.
    _planes: CudaSlice<f32>,
    /// Scales 0 and 1 always exist (the linearize kernel writes both); scored: `n_scales`.
    scales: Vec<Scale>,
    n_scales: usize,
    /// Blur and maps of each scored scale.
    blurs: Vec<BlurParams>,
    _work: CudaSlice<f32>,
    _partials: CudaSlice<f64>,
    _meta: CudaSlice<u32>,
    meta_ptr: u64,
    partials_ptr: u64,
    _out: CudaSlice<f64>,
    out_ptr: u64,
    _host_out: PinnedHostSlice<f64>,
    host_out_ptr: *mut f64,
}

// SAFETY: the raw pointers address memory owned by the struct, used from one thread at a time.
unsafe impl Send for CudaSsimu2 {}

fn raw<T>(buf: &CudaSlice<T>, stream: &CudaStream) -> u64 {
    let (ptr, _sync) = cudarc::driver::DevicePtr::device_ptr(buf, stream);
    ptr
}

impl CudaSsimu2 {
    pub(crate) fn new(
        ctx: &Arc<cudarc::driver::CudaContext>,
        stream: &Arc<CudaStream>,
        plan: &Plan,
    ) -> Result<CudaSsimu2, DriverError> {
        let (w0, h0) = (plan.reference.width, plan.reference.height);
        let n_scales = scale_sizes(w0, h0).len();
        let mut sizes = vec![(w0, h0)];
        while sizes.len() < n_scales.max(2) {
            let (w, h) = *sizes.last().expect("one size");
            sizes.push((half(w), half(h)));
        }
        let total: usize = sizes
            .iter()
            .map(|&(w, h)| 6 * w as usize * h as usize)
            .sum();
        let planes = stream.alloc_zeros::<f32>(total)?;
        let base = raw(&planes, stream);
        let mut scales = Vec::new();
        let mut offset = 0u64;
        for &(width, height) in &sizes {
            scales.push(Scale {
                base: base + offset * 4,
                width,
                height,
                plane_len: width * height,
                _pad: 0,
            });
            offset += 6 * width as u64 * height as u64;
        }
        // XYB (6 planes) and moments (15 planes) of scale-0 size, reused by every scale.
        let len0 = w0 as usize * h0 as usize;
        let work = stream.alloc_zeros::<f32>(21 * len0)?;
        let work_ptr = raw(&work, stream);
        let mut meta = Vec::new();
        let mut n_partials = 0u32;
        for s in &scales[..n_scales] {
            meta.extend([n_partials, s.width.div_ceil(S2_LINE_THREADS)]);
            n_partials += S2_SUMS_PER_SCALE as u32 * s.width.div_ceil(S2_LINE_THREADS);
        }
        let partials = stream.alloc_zeros::<f64>(n_partials.max(1) as usize)?;
        let partials_ptr = raw(&partials, stream);
        let blurs = scales[..n_scales]
            .iter()
            .zip(meta.chunks(2))
            .map(|(s, m)| BlurParams {
                xyb: Scale {
                    base: work_ptr,
                    ..*s
                },
                moments: work_ptr + 6 * s.plane_len as u64 * 4,
                partials: partials_ptr + m[0] as u64 * 8,
                n_tiles: m[1],
                _pad: 0,
            })
            .collect();
        meta.resize(2 * S2_MAX_SCALES, 0);
        let meta_buf = stream.clone_htod(&meta)?;
        let meta_ptr = raw(&meta_buf, stream);
        let out = stream.alloc_zeros::<f64>(S2_MAX_SCALES * S2_SUMS_PER_SCALE)?;
        let out_ptr = raw(&out, stream);
        // SAFETY: written by the device before it is read.
        let mut host_out =
            unsafe { ctx.alloc_pinned_with_flags::<f64>(S2_MAX_SCALES * S2_SUMS_PER_SCALE, 0) }?;
        let host_out_ptr = host_out.as_mut_ptr()?;
        stream.synchronize()?;
        Ok(CudaSsimu2 {
            _planes: planes,
            scales,
            n_scales,
            blurs,
            _work: work,
            _partials: partials,
            _meta: meta_buf,
            meta_ptr,
            partials_ptr,
            _out: out,
            out_ptr,
            _host_out: host_out,
            host_out_ptr,
        })
    }

    /// Queues the whole pipeline for one pair and waits for its sums.
    pub(crate) fn measure(
        &mut self,
        k: &Kernels,
        stream: &Arc<CudaStream>,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
    ) -> Result<Sums, EngineError> {
        let mut out = Sums {
            scales: self.n_scales,
            ..Default::default()
        };
        if self.n_scales == 0 {
            return Ok(out);
        }
        let (rs, ds) = plan.color_sources(r, d);
        let grid = |s: &Scale, z: u32| LaunchConfig {
            grid_dim: (
                s.width.div_ceil(S2_PIXEL_BLOCK),
                s.height.div_ceil(S2_PIXEL_BLOCK),
                z,
            ),
            block_dim: (S2_PIXEL_BLOCK, S2_PIXEL_BLOCK, 1),
            shared_mem_bytes: 0,
        };
        let n = self.n_scales;
        let values = n * S2_SUMS_PER_SCALE;
        // SAFETY: the frame pointers were validated against the plan's layouts (or are
        // the backend's upload buffers); every scale buffer, partials and output slot was
        // sized for this plan in `new`.
        let queued = unsafe {
            (|| -> Result<(), DriverError> {
                let s = &self.scales;
                k.ssimu2_linearize(stream, grid(&s[1], 2), rs, ds, s[0], s[1])?;
                for i in 2..n {
                    k.ssimu2_downsample(stream, grid(&s[i], 6), s[i - 1], s[i])?;
                }
                for (b, sc) in self.blurs.iter().zip(s) {
                    let tiles = LaunchConfig {
                        grid_dim: (sc.width.div_ceil(32), sc.height.div_ceil(32), 2),
                        block_dim: (32, 8, 1),
                        shared_mem_bytes: 0,
                    };
                    k.ssimu2_xyb(stream, tiles, *sc, b.xyb)?;
                    let rows = LaunchConfig {
                        grid_dim: (sc.height.div_ceil(S2_LINE_THREADS), 3, 5),
                        block_dim: (S2_LINE_THREADS, 1, 1),
                        shared_mem_bytes: 0,
                    };
                    k.ssimu2_hblur(stream, rows, *b)?;
                    let cols = LaunchConfig {
                        grid_dim: (b.n_tiles, 3, 1),
                        ..rows
                    };
                    k.ssimu2_vblur(stream, cols, *b)?;
                }
                let cfg = LaunchConfig {
                    grid_dim: (S2_SUMS_PER_SCALE as u32, n as u32, 1),
                    block_dim: (S2_FINISH_THREADS, 1, 1),
                    shared_mem_bytes: 0,
                };
                k.ssimu2_finish(
                    stream,
                    cfg,
                    DevPtr::from_raw(self.partials_ptr),
                    DevPtr::from_raw(self.meta_ptr),
                    DevPtrMut::from_raw(self.out_ptr),
                )?;
                let host = std::slice::from_raw_parts_mut(self.host_out_ptr, values);
                cu::memcpy_dtoh_async(host, self.out_ptr, stream.cu_stream())?;
                stream.synchronize()
            })()
        };
        queued.map_err(|e| EngineError::Cuda(format!("running ssimulacra2: {e}")))?;
        // SAFETY: the copy completed (stream synchronised).
        let host = unsafe { std::slice::from_raw_parts(self.host_out_ptr, values) };
        for (i, chunk) in host.chunks(S2_SUMS_PER_SCALE).enumerate() {
            out.sums[i].copy_from_slice(chunk);
            out.pixels[i] = self.scales[i].plane_len as u64;
        }
        Ok(out)
    }
}

/// Measures with `state`, allocating it on first use (once per plan).
pub(crate) fn measure(
    state: &mut Option<CudaSsimu2>,
    ctx: &Arc<cudarc::driver::CudaContext>,
    stream: &Arc<CudaStream>,
    kernels: &Kernels,
    plan: &Plan,
    r: &PlanePtrs,
    d: &PlanePtrs,
) -> Result<Sums, EngineError> {
    if state.is_none() {
        let s = CudaSsimu2::new(ctx, stream, plan)
            .map_err(|e| EngineError::Cuda(format!("allocating ssimulacra2 buffers: {e}")))?;
        *state = Some(s);
    }
    let s = state.as_mut().expect("just set");
    s.measure(kernels, stream, plan, r, d)
}
