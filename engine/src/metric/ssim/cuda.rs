//! SSIM / MS-SSIM on the GPU: one `ssim_scale` launch per scale (all channels of that scale
//! in one grid), each also writing the next scale's pooled planes; one 240-byte result copy
//! per pair, queued with the pair (`CudaMetric::queue`) and read when the pair is completed.
//! Buffers are allocated once per plan.

use cudarc::driver::{CudaEvent, CudaSlice, DriverError, LaunchConfig};

use super::{Job, SUMS, float_sizes, float_sums, scale_sizes};
use crate::cuda::{AddSlots, DevPtrMut, DeviceMemory, Gpu, Readback, zeroed};
use crate::error::EngineError;
use crate::frame::PlanePtrs;
use crate::metric::CudaMetric;
use crate::metric_set::MetricSet;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::channel::{Channel, ChannelPair, MAX_CHANNELS};
use gpumetrics_kernels::ssim::float::{DOWN_TILE, Decimation, down, f32_channel};
use gpumetrics_kernels::ssim::{
    BLOCK_ROWS, F32_SAMPLES, FLOAT_BLOCK, SCALES, ScalePair, SsimPlanes, TILE_W, grid,
};

/// Pooled planes of one channel at scales 1.. (reference, distorted), f32, packed rows.
struct Pooled {
    _buffers: Vec<CudaSlice<f32>>,
    /// Per scale 1..SCALES: (reference, distorted) addresses.
    ptrs: [(u64, u64); SCALES],
}

pub(super) struct Ssim {
    job: Job,
    set: MetricSet,
    pooled: Vec<Option<Pooled>>,
    /// Where the launches add the pair's sums.
    sums: AddSlots<f64>,
    /// Where they come back to the host.
    host: Readback<f64>,
    /// The planes of libvmaf's float SSIM's horizontal pass ([`Job::float`], sized for its
    /// first scale), and its decimated scales 1.. (reference, distorted).
    float_rows: Option<CudaSlice<f32>>,
    float_scales: Vec<(CudaSlice<f32>, CudaSlice<f32>)>,
}

impl Ssim {
    pub(super) fn new(
        gpu: &Gpu,
        plan: &Plan,
        job: Job,
        set: MetricSet,
    ) -> Result<Ssim, DriverError> {
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
                let r = zeroed::<f32>(&gpu.stream, n)?;
                let d = zeroed::<f32>(&gpu.stream, n)?;
                ptrs[s] = (r.ptr(), d.ptr());
                buffers.push(r);
                buffers.push(d);
            }
            pooled.push(Some(Pooled {
                _buffers: buffers,
                ptrs,
            }));
        }
        let (w, h) = (plan.reference.width, plan.reference.height);
        let float_rows = if job.float > 0 {
            let n = gpumetrics_kernels::ssim::valid(w) as usize * h as usize;
            Some(zeroed::<f32>(
                &gpu.stream,
                gpumetrics_kernels::ssim::float::PLANES * n,
            )?)
        } else {
            None
        };
        let mut float_scales = Vec::new();
        for &(sw, sh) in float_sizes(w, h).iter().take(job.float as usize).skip(1) {
            let n = sw as usize * sh as usize;
            float_scales.push((
                zeroed::<f32>(&gpu.stream, n)?,
                zeroed::<f32>(&gpu.stream, n)?,
            ));
        }
        Ok(Ssim {
            job,
            set,
            pooled,
            sums: AddSlots::new(&gpu.stream, SUMS)?,
            host: Readback::new(&gpu.ctx, SUMS)?,
            float_rows,
            float_scales,
        })
    }

    /// Queues every scale and the copy of the pair's sums.
    fn run(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
    ) -> Result<(), DriverError> {
        let base = self.job.planes(plan, r, d);
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
        let (add_to, clear) = self.sums.targets();
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
            // buffers hold each scale's size; both result slots hold SUMS values.
            unsafe {
                gpu.kernels
                    .ssim_scale(&gpu.stream, cfg, planes, add_to, clear_now)?
            };
        }
        if let Some(rows) = &self.float_rows {
            let cfg = |rows: u32| LaunchConfig {
                grid_dim: (rows.clamp(1, 2048), 1, 1),
                block_dim: (FLOAT_BLOCK, 1, 1),
                shared_mem_bytes: 0,
            };
            let mut p = Job::float_ssim(plan, &base, rows.ptr());
            for scale in 0..self.job.float as usize {
                if scale > 0 {
                    let (r, d) = &self.float_scales[scale - 1];
                    let dec = Decimation {
                        pair: p.pair,
                        divisor: p.divisor,
                        _pad: 0,
                        down_reference: r.ptr(),
                        down_distorted: d.ptr(),
                    };
                    let (dw, dh) = (down(p.pair.width), down(p.pair.height));
                    let tiles = LaunchConfig {
                        grid_dim: (dw.div_ceil(DOWN_TILE), dh.div_ceil(DOWN_TILE), 1),
                        block_dim: (DOWN_TILE, DOWN_TILE, 1),
                        shared_mem_bytes: 0,
                    };
                    // SAFETY: the source is the validated luma or the previous scale's
                    // planes; the next scale's planes hold dw×dh values.
                    unsafe { gpu.kernels.vmaf_ssim_down(&gpu.stream, tiles, dec)? };
                    p.pair = ChannelPair {
                        reference: f32_channel(r.ptr(), dw),
                        distorted: f32_channel(d.ptr(), dw),
                        width: dw,
                        height: dh,
                    };
                    p.divisor = 1.0;
                }
                let at = float_sums(scale);
                // SAFETY: `rows` holds the planes of the first (largest) scale; both result
                // slots hold SUMS values.
                unsafe {
                    gpu.kernels
                        .vmaf_ssim_rows(&gpu.stream, cfg(p.pair.height), p)?;
                    gpu.kernels.vmaf_ssim_map(
                        &gpu.stream,
                        cfg(p.pair.height),
                        p,
                        add_to.wrapping_add(at),
                        clear.wrapping_add(at),
                    )?;
                }
            }
        }
        self.sums.copy_to(&mut self.host)
    }

    /// [`Ssim::run`], with the slots left clean after a failure.
    fn launch(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
    ) -> Result<(), EngineError> {
        self.run(gpu, plan, r, d).map_err(|e| {
            // Leave no stale sums behind for the next pair, should the stream recover.
            self.host.clear();
            self.sums.zero();
            EngineError::Cuda(format!("running ssim_scale: {e}"))
        })
    }
}

/// No pairs held back.
impl crate::metric::temporal::Sequenced for Ssim {}

impl CudaMetric for Ssim {
    fn queue(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
        _uploaded: Option<&CudaEvent>,
    ) -> Result<(), EngineError> {
        self.launch(gpu, plan, r, d)
    }

    fn drop_queued(&mut self) {
        self.host.clear();
        self.sums.zero();
    }

    /// Every plane a pair reads (the scales' planes in this instance's buffers) it wrote
    /// first; nothing is kept across pairs.
    fn independent(&self) -> bool {
        true
    }

    fn read(&mut self, plan: &Plan, scores: &mut Scores) -> Result<(), EngineError> {
        if self.host.queued() == 0 {
            return Err(EngineError::Unsupported(
                "ssim: no pair queued to read".into(),
            ));
        }
        let mut sums = [0.0; SUMS];
        match self.host.take(SUMS) {
            Ok(s) => sums.copy_from_slice(s),
            Err(e) => {
                self.host.clear();
                self.sums.zero();
                return Err(EngineError::Cuda(format!("running ssim_scale: {e}")));
            }
        }
        super::push_fields(plan, &self.job, self.set, &sums, scores);
        Ok(())
    }
}

const _: () = assert!(MAX_CHANNELS == 3);
