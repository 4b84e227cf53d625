//! SpEED chroma on the GPU: per pair, the steps of the four jobs (U and V of the reference
//! and the distorted) as six launches (`speed_load`, `speed_resample` when the options
//! resample, `speed_antialias`, `speed_stats`: the reduced, mean-subtracted plane and the
//! covariance entries; `speed_qr`: the QR factors; `speed_solve`: each block's variance
//! estimate), each output element computed with the kernel crate's function the CPU backend
//! calls, in the same order of sums. One copy brings each job's outputs to pinned memory, and
//! [`SpeedChromaCuda::finish`] runs the rest on the host with the CPU backend's code
//! ([`super::solve`]): the eigenvalues (a sequential iteration, slow on one GPU thread),
//! the entropies (`log2` in f64, the host's) and the score. Buffers are allocated once, in
//! [`SpeedChromaCuda::new`]; nothing waits on the stream until the caller does.

use cudarc::driver::{CudaSlice, DriverError, LaunchConfig};

use super::solve::{ChromaScores, Solver};
use super::{Setup, SpeedOptions};
use crate::cuda::{DeviceMemory, Gpu, Readback, zeroed};
use crate::error::EngineError;
use crate::format::ChannelSpec;
use crate::frame::PlanePtrs;
use crate::plan::Plan;
use gpumetrics_kernels::channel::Channel;
use gpumetrics_kernels::speed::{
    ELEMS, Frames, JOBS, QR_THREADS, SOLVE_THREADS, STATS_THREADS, TILE_X, TILE_Y, stats,
};

/// SpEED chroma of one stream on the GPU: the per-pair launches and the host's share.
pub(crate) struct SpeedChromaCuda {
    opts: SpeedOptions,
    /// U and V: (reference, distorted) channel specs.
    channels: [(ChannelSpec, ChannelSpec); 2],
    /// Peaks of the reference and distorted formats.
    peaks: (u32, u32),
    /// The launches' parameters: sizes and buffer addresses, the channels set per pair.
    frames: Frames,
    /// The filter taps (anti-alias, then local mean).
    _taps: CudaSlice<f32>,
    /// Each `JOBS` regions of the job's length ([`Frames`]).
    plane: CudaSlice<f32>,
    scaled: CudaSlice<f32>,
    rows: CudaSlice<f32>,
    vertical: CudaSlice<f32>,
    out: CudaSlice<f32>,
    /// The copy of `out` (one pair's).
    host: Readback<f32>,
    /// One per plane (U, V), so that the planes' host steps run in parallel.
    solvers: [Solver; 2],
    /// A pair's launches and copy are queued and not read yet.
    queued: bool,
}

impl SpeedChromaCuda {
    /// The state for `plan`'s frames (refusing what [`super::SpeedChroma::new`] refuses),
    /// every buffer allocated here.
    pub(crate) fn new(gpu: &Gpu, plan: &Plan, opts: SpeedOptions) -> Result<Self, String> {
        let s = Setup::new(plan, opts)?;
        Self::allocate(gpu, s).map_err(|e| format!("speed_chroma: allocating GPU buffers: {e}"))
    }

    fn allocate(gpu: &Gpu, s: Setup) -> Result<Self, DriverError> {
        let d = s.dims;
        let stream = &gpu.stream;
        let u32_of = |v: usize| v as u32;
        let mut frames = Frames {
            channels: [Channel::default(); JOBS],
            max: s.peaks.0,
            method: s.resample as u32,
            width: u32_of(d.width),
            height: u32_of(d.height),
            scaled_width: u32_of(d.scaled_width),
            scaled_height: u32_of(d.scaled_height),
            resampled: d.resampled as u32,
            op_width: u32_of(d.op_width),
            op_height: u32_of(d.op_height),
            block: u32_of(d.block),
            blocks_x: u32_of(d.blocks_x),
            blocks_y: u32_of(d.blocks_y),
            aa_len: u32_of(s.antialias.len()),
            local_len: u32_of(s.local.len()),
            ..Frames::default()
        };
        let taps: Vec<f32> = s.antialias.iter().chain(&s.local).copied().collect();
        let buffer = |len: usize| zeroed::<f32>(stream, (JOBS * len).max(1));
        let taps_buf = zeroed::<f32>(stream, taps.len())?;
        // SAFETY: the buffer holds `taps.len()` values; `taps` lives until the stream is
        // synchronised below.
        unsafe {
            cudarc::driver::result::memcpy_htod_async(taps_buf.ptr(), &taps[..], stream.cu_stream())
        }?;
        let plane = buffer(frames.plane_len())?;
        let scaled = buffer(frames.scaled_len())?;
        let rows = buffer(frames.rows_len())?;
        let vertical = buffer(frames.op_len())?;
        let out = buffer(frames.out_len())?;
        let host = Readback::with_slots(&gpu.ctx, out.len(), 1)?;
        stream.synchronize()?;
        frames.taps = taps_buf.ptr();
        frames.plane = plane.ptr();
        frames.scaled = scaled.ptr();
        frames.rows = rows.ptr();
        frames.vertical = vertical.ptr();
        frames.out = out.ptr();
        Ok(SpeedChromaCuda {
            opts: s.opts,
            channels: s.channels,
            peaks: s.peaks,
            frames,
            _taps: taps_buf,
            plane,
            scaled,
            rows,
            vertical,
            out,
            host,
            solvers: [Solver::new(s.opts, d), Solver::new(s.opts, d)],
            queued: false,
        })
    }

    /// Why channel `c` cannot hold the measured `width`×`height` region, if it cannot.
    fn mismatch(&self, c: &Channel) -> Option<String> {
        let f = &self.frames;
        let row = (f.width as u64 - 1) * c.step as u64 + c.sample_bytes as u64;
        if c.ptr == 0 || (f.height > 1 && (c.pitch as u64) < row) {
            return Some(format!(
                "a chroma plane at {:#x} with pitch {} (rows need {row} bytes)",
                c.ptr, c.pitch
            ));
        }
        None
    }

    /// Queues every kernel and the device→pinned copy for the pair on `gpu.stream`, with no
    /// host synchronisation. `r`, `d`: the pair's validated device frames (the plan's
    /// layouts).
    pub(crate) fn queue(
        &mut self,
        gpu: &Gpu,
        r: &PlanePtrs,
        d: &PlanePtrs,
    ) -> Result<(), EngineError> {
        self.queued = false;
        // A pair queued and never read (its caller failed before `finish`) is dropped.
        self.host.clear();
        for (plane, (rc, dc)) in self.channels.iter().enumerate() {
            let rch = r.channel(rc, self.peaks.0);
            let dch = d.channel(dc, self.peaks.1);
            for (side, c) in [rch, dch].into_iter().enumerate() {
                if let Some(why) = self.mismatch(&c) {
                    return Err(EngineError::InvalidFrame(format!("speed_chroma: {why}")));
                }
                self.frames.channels[2 * plane + side] = c;
            }
        }
        self.launch(gpu)
            .map_err(|e| EngineError::Cuda(format!("running speed_chroma: {e}")))?;
        self.queued = true;
        Ok(())
    }

    fn launch(&mut self, gpu: &Gpu) -> Result<(), DriverError> {
        let (k, stream, f) = (&gpu.kernels, &gpu.stream, self.frames);
        let need = [
            (&self.plane, f.plane_len()),
            (&self.scaled, f.scaled_len()),
            (&self.rows, f.rows_len()),
            (&self.vertical, f.op_len()),
            (&self.out, f.out_len()),
        ];
        // The buffers were allocated from these sizes: a mismatch is a bug, not a frame's.
        assert!(need.iter().all(|(b, len)| b.len() >= JOBS * len));
        let grid = |w: u32, h: u32| LaunchConfig {
            grid_dim: (w.div_ceil(TILE_X), h.div_ceil(TILE_Y), JOBS as u32),
            block_dim: (TILE_X, TILE_Y, 1),
            shared_mem_bytes: 0,
        };
        let stats = LaunchConfig {
            grid_dim: (JOBS as u32, 1, 1),
            block_dim: (STATS_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let qr = LaunchConfig {
            grid_dim: (JOBS as u32, 1, 1),
            block_dim: (QR_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let solve = LaunchConfig {
            grid_dim: ((f.blocks() as u32).div_ceil(SOLVE_THREADS), JOBS as u32, 1),
            block_dim: (SOLVE_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: every channel was checked to hold the width×height region (`queue`; the
        // backend validated the frames against the plan's layouts, whose chroma planes hold
        // it: `Setup::new`); every buffer holds `JOBS` regions of its job's length (checked
        // above), the grids cover exactly the outputs each kernel bounds-checks; the kernels
        // and the copy run in stream order and the host reads after the caller's
        // synchronisation.
        unsafe {
            k.speed_load(stream, grid(f.width, f.height), f)?;
            if f.resampled != 0 {
                k.speed_resample(stream, grid(f.scaled_width, f.scaled_height), f)?;
            }
            k.speed_antialias(stream, grid(f.scaled_width, f.op_height), f)?;
            k.speed_stats(stream, stats, f)?;
            k.speed_qr(stream, qr, f)?;
            k.speed_solve(stream, solve, f)?;
            self.host.copy_in(self.out.ptr(), self.out.len(), stream)?;
        }
        Ok(())
    }

    /// After the caller synchronised `gpu.stream` following [`Self::queue`]: the pair's
    /// `speed_chroma_uv`, exactly [`super::SpeedChroma::score`]'s. NaN if nothing was queued
    /// (or the last queue failed).
    pub(crate) fn finish(&mut self) -> f64 {
        self.finish_scores().map_or(f64::NAN, |s| s.uv)
    }

    /// [`Self::finish`] with all three outputs ([`super::SpeedChroma::scores`]'s); `None`
    /// if nothing was queued.
    pub(crate) fn finish_scores(&mut self) -> Option<ChromaScores> {
        if !std::mem::take(&mut self.queued) {
            return None;
        }
        // Waits for the copy queued by `queue` (done already: the caller synchronised).
        let host = self.host.take(self.out.len()).ok()?;
        let n = self.frames.out_len();
        let f = &self.frames;
        let plane = |i: usize, solver: &mut Solver| {
            for side in 0..2 {
                let job = &host[(2 * i + side) * n..][..n];
                let pairs = &job[..stats::PAIRS];
                let r = &job[f.out_r()..][..ELEMS * ELEMS];
                let variances = &job[f.out_s()..][..f.blocks()];
                let op = &job[f.out_op()..][..f.op_len()];
                solver.estimate_solved(op, pairs, r, variances, side);
            }
            solver.plane_score()
        };
        let [su, sv] = &mut self.solvers;
        let planes = rayon::join(|| plane(0, su), || plane(1, sv));
        let planes = [planes.0, planes.1];
        Some(ChromaScores::new(planes, self.opts.max_val))
    }
}

#[cfg(test)]
mod tests {
    //! [`SpeedChromaCuda`] against [`super::super::SpeedChroma`] on the same pairs (a unit
    //! test: both are crate-internal). Needs a GPU:
    //! `cargo test -p gpumetrics-engine --lib speed::cuda -- --ignored --nocapture`.

    use super::*;
    use crate::format::{FrameLayout, PixelFormat};
    use crate::frame::{HostFrame, Plane};
    use crate::metric::vmaf::speed::{PrescaleMethod, SpeedChroma};
    use std::time::Instant;

    /// Planes of a frame: smooth waves with noise, `bps` bytes per sample (LE).
    fn planes(
        layout: &FrameLayout,
        bps: usize,
        seed: &mut u64,
        noise: u32,
    ) -> (Vec<Vec<u8>>, Vec<usize>) {
        let max = layout.format.peak();
        let mut next = || {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            *seed
        };
        let mut out = Vec::new();
        let mut strides = Vec::new();
        for p in 0..layout.format.n_planes() {
            let stride = layout.min_row_bytes(p) + 16;
            let rows = layout.plane_rows(p) as usize;
            let samples = layout.min_row_bytes(p) / bps;
            let mut data = vec![0u8; stride * rows];
            for y in 0..rows {
                for x in 0..samples {
                    let wave =
                        ((x as f32 * 0.05 + p as f32).sin() * (y as f32 * 0.07).cos() + 1.0) / 2.0;
                    let n = (next() % (noise as u64 + 1)) as f32 / 256.0;
                    let v = (((wave * 0.8 + n * 0.2) * max as f32) as u32).min(max);
                    let at = y * stride + x * bps;
                    data[at] = v as u8;
                    if bps == 2 {
                        data[at + 1] = (v >> 8) as u8;
                    }
                }
            }
            out.push(data);
            strides.push(stride);
        }
        (out, strides)
    }

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn cuda_matches_the_cpu_backend() {
        let ctx = cudarc::driver::CudaContext::new(0).expect("needs a CUDA GPU");
        let stream = ctx.new_stream().unwrap();
        let kernels = crate::cuda::kernels(&ctx).unwrap();
        let gpu = Gpu {
            ctx: ctx.clone(),
            stream,
            kernels,
        };
        let mode = |weight_var_mode| SpeedOptions {
            weight_var_mode,
            ..SpeedOptions::default()
        };
        let cases = [
            (PixelFormat::I420, 1920, 1080, 1, SpeedOptions::v1_3d0h()),
            (
                PixelFormat::I420,
                3840,
                2160,
                1,
                SpeedOptions::v1_3d0h_2160(),
            ),
            (PixelFormat::I420_10Le, 643, 481, 2, SpeedOptions::v1_5d0h()),
            (
                PixelFormat::Y444_10Le,
                320,
                240,
                2,
                SpeedOptions {
                    prescale: 1.5,
                    prescale_method: PrescaleMethod::Bicubic,
                    kernelscale: 2.0,
                    ..mode(3)
                },
            ),
            (PixelFormat::I422_10Le, 640, 360, 2, mode(0)),
        ];
        let mut seed = 0x5eed_u64;
        let mut worst = 0.0f64;
        for (format, w, h, bps, opts) in cases {
            let layout = FrameLayout {
                format,
                width: w,
                height: h,
            };
            let plan = Plan::new(layout, layout).unwrap();
            let mut cpu = SpeedChroma::new(&plan, opts).unwrap();
            let mut gpu_speed = SpeedChromaCuda::new(&gpu, &plan, opts).unwrap();
            for pair in 0..3 {
                let (rp, strides) = planes(&layout, bps, &mut seed, 255);
                let (dp, _) = planes(&layout, bps, &mut seed, 255 * (pair + 1));
                let host = |p: &[Vec<u8>]| {
                    let pl: Vec<Plane> = p
                        .iter()
                        .zip(&strides)
                        .map(|(d, &stride)| Plane { data: d, stride })
                        .collect();
                    HostFrame::new(&pl).validate(&layout, "test").unwrap()
                };
                let want = cpu.scores(&host(&rp), &host(&dp));
                let upload = |p: &[Vec<u8>]| {
                    let mut ptrs = PlanePtrs::default();
                    let mut keep = Vec::new();
                    for (i, d) in p.iter().enumerate() {
                        let b = zeroed::<u8>(&gpu.stream, d.len()).unwrap();
                        unsafe {
                            cudarc::driver::result::memcpy_htod_async(
                                b.ptr(),
                                &d[..],
                                gpu.stream.cu_stream(),
                            )
                        }
                        .unwrap();
                        ptrs.ptr[i] = b.ptr();
                        ptrs.pitch[i] = strides[i] as u32;
                        keep.push(b);
                    }
                    (ptrs, keep)
                };
                let ((rd, _k1), (dd, _k2)) = (upload(&rp), upload(&dp));
                gpu.stream.synchronize().unwrap();
                let t = Instant::now();
                gpu_speed.queue(&gpu, &rd, &dd).unwrap();
                gpu.stream.synchronize().unwrap();
                let device = t.elapsed();
                let t = Instant::now();
                let got = gpu_speed.finish_scores().expect("queued");
                let host_time = t.elapsed();
                let err = [(got.u, want.u), (got.v, want.v), (got.uv, want.uv)]
                    .iter()
                    .map(|&(a, b)| if a == b { 0.0 } else { (a - b).abs() })
                    .fold(0.0, f64::max);
                worst = worst.max(err);
                println!(
                    "{} {w}x{h} pair {pair}: cuda {got:?} cpu {want:?} err {err:e} \
                     (queue+sync {device:?}, finish {host_time:?})",
                    format.name()
                );
            }
        }
        assert!(worst <= 5e-7, "worst difference {worst:e}");
    }
}
