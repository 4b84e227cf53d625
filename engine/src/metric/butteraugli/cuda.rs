//! Butteraugli on the GPU: per pair, on the metric's stream, `linear_light` (or, when
//! SSIMULACRA2 runs too, nothing: the engine's shared stage converted the frames, and the
//! full level reads its planes, `crate::cuda::linear_light`), then (when
//! the frame has a half-resolution level) `ba_downsample`, then for each level the
//! [`STEPS`] as one launch each (both images or all planes of a stage in one grid, `z`;
//! the half level on a side stream, beside the full level), and `ba_reduce`, whose
//! per-block maxima and power sums come back in one copy, queued with the pair
//! (`CudaMetric::queue`) and read when the pair is completed. With `map=butteraugli` the
//! reduction also stores each pixel's final value, handed out in device memory with its
//! statistics (`crate::map::device`).
//!
//! Every buffer is allocated once per plan: the filter table and the reduction slots per
//! engine, and the planes, per level 38 planes and 6 padded Malta planes (4 · 38 + 4 · 6 ≈
//! 176 bytes per pixel, a quarter of that again for the half level: about 455 MB at
//! 1080p), in a scratch arena that the engines of one context with the same frame size
//! share (`crate::cuda::scratch`): a pair's planes are written before they are read, and
//! the padded planes' borders, zeroes, are never written.

use std::sync::Arc;

use cudarc::driver::{CudaEvent, CudaSlice, DriverError, LaunchConfig};
use gpumetrics_kernels::linear_light::Planes;

use super::{STEPS, Step, filters, level_len, level_sizes, params, plane_lens};
use crate::cuda::linear_light::{LinearLight, Reader, colour_blocks};
use crate::cuda::scratch::{Key, Share};
use crate::cuda::{Branch, DevPtr, DevPtrMut, DeviceMemory, Gpu, Readback, zeroed};
use crate::error::EngineError;
use crate::frame::PlanePtrs;
use crate::map::device::MapOut;
use crate::map::kind::MapKind;
use crate::metric::CudaMetric;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::butteraugli::blur::RUN;
use gpumetrics_kernels::butteraugli::malta::GROUP;
use gpumetrics_kernels::butteraugli::{
    BLOCK_ROWS, Level, Params, REDUCE_THREADS, REDUCE_VALUES, ROW_SPAN, Taps, plane,
};

/// Blocks of `ba_reduce` (fewer for small frames): a few per SM of a large GPU.
const REDUCE_BLOCKS: u32 = 512;

pub(super) struct Butteraugli {
    /// The arenas every level's planes lie in.
    scratch: Share,
    /// The levels, their plane addresses relative to an arena's start.
    levels: Vec<Level>,
    params: Params,
    upsampling: crate::color::ChromaUpsampling,
    taps: CudaSlice<u8>,
    reduce_blocks: u32,
    partials: CudaSlice<f64>,
    /// The partials of each pair in flight, on the host.
    host_partials: Readback<f64>,
    /// Where the half level runs: forked from the stream after the downsampling, joined
    /// back before the reduction.
    side: Branch,
    /// With `map=butteraugli`: where the reduction stores each pair's diffmap, handed out
    /// with the pair.
    map: Option<MapOut>,
    /// The engine's linear light when SSIMULACRA2 reads it too (`crate::cuda::linear_light`):
    /// the full level reads its linear RGB there instead of converting the frames.
    linear: Option<Reader>,
}

impl Butteraugli {
    pub(super) fn new(
        gpu: &Gpu,
        plan: &Plan,
        settings: &super::Settings,
        linear: Option<Arc<LinearLight>>,
    ) -> Result<Butteraugli, DriverError> {
        let stream = &gpu.stream;
        let sizes = level_sizes(plan);
        let total: usize = sizes
            .iter()
            .map(|&(w, h)| {
                let (planes, padded) = level_len(w, h);
                planes + padded
            })
            .sum();
        // Zeroed (a new arena is): the padded planes' borders must read 0 and are never
        // written.
        let key = Key {
            context: gpu.ctx.cu_ctx() as usize,
            metric: "butteraugli",
            layout: [sizes[0].0 as u64, sizes[0].1 as u64, 0],
            bytes: total * 4,
        };
        let scratch = Share::join(gpu, key, &|_, _| Ok(()))?;
        let mut at = 0u64;
        let levels = sizes
            .iter()
            .map(|&(w, h)| {
                let (n_planes, n_padded) = level_len(w, h);
                let (plane_len, padded_len) = plane_lens(w, h);
                let lv = Level {
                    base: at,
                    padded: at + n_planes as u64 * 4,
                    width: w,
                    height: h,
                    plane_len,
                    padded_len,
                    ..Level::default()
                };
                at += (n_planes + n_padded) as u64 * 4;
                lv
            })
            .collect::<Vec<_>>();
        let filters = filters();
        // SAFETY: `Taps` is `repr(C)` plain data (u32 and f32 fields, no padding).
        let bytes = unsafe {
            std::slice::from_raw_parts(
                filters.as_ptr().cast::<u8>(),
                std::mem::size_of_val(&filters),
            )
        };
        let taps = zeroed::<u8>(stream, bytes.len())?;
        // SAFETY: the buffer holds `bytes.len()` bytes; `filters` lives until the stream is
        // synchronised below.
        unsafe {
            cudarc::driver::result::memcpy_htod_async(taps.ptr(), bytes, stream.cu_stream())
        }?;
        let pixels = sizes[0].0 * sizes[0].1;
        let reduce_blocks = pixels.div_ceil(REDUCE_THREADS).clamp(1, REDUCE_BLOCKS);
        let slots = reduce_blocks as usize * REDUCE_VALUES;
        let partials = zeroed::<f64>(stream, slots)?;
        let host_partials = Readback::new(&gpu.ctx, slots)?;
        let map = match plan.map {
            Some(MapKind::Butteraugli) => Some(MapOut::new(
                gpu,
                MapKind::Butteraugli,
                sizes[0].0,
                sizes[0].1,
                plan.map_threshold,
            )?),
            _ => None,
        };
        stream.synchronize()?;
        Ok(Butteraugli {
            scratch,
            levels,
            params: params(settings.intensity),
            upsampling: settings.upsampling,
            taps,
            reduce_blocks,
            partials,
            host_partials,
            side: Branch::new(&gpu.stream)?,
            map,
            linear: linear.map(|l| l.reader()).transpose()?,
        })
    }

    /// Queues every stage of one pair and the copy of its reduction; `shared`: the pair's
    /// linear light from the engine's stage, which `gpu`'s stream already waits for.
    fn run(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
        shared: Option<Planes>,
    ) -> Result<(), DriverError> {
        let (k, stream) = (&gpu.kernels, &gpu.stream);
        let (rs, ds) = plan.color_sources(r, d, self.upsampling);
        let grid = |lv: &Level, z: u32| LaunchConfig {
            grid_dim: (lv.width.div_ceil(32), lv.height.div_ceil(BLOCK_ROWS), z),
            block_dim: (32, BLOCK_ROWS, 1),
            shared_mem_bytes: 0,
        };
        // The Gaussians' passes: a thread per run of RUN outputs along the pass.
        let row_grid = |lv: &Level, z: u32| LaunchConfig {
            grid_dim: (
                lv.width.div_ceil(ROW_SPAN),
                lv.height.div_ceil(BLOCK_ROWS),
                z,
            ),
            ..grid(lv, z)
        };
        let col_grid = |lv: &Level, z: u32| LaunchConfig {
            grid_dim: (
                lv.width.div_ceil(32),
                lv.height.div_ceil(BLOCK_ROWS * RUN as u32),
                z,
            ),
            ..grid(lv, z)
        };
        // The AC error: a thread per group of GROUP adjacent pixels of a row.
        let group_grid = |lv: &Level, z: u32| LaunchConfig {
            grid_dim: (
                lv.width.div_ceil(GROUP as u32).div_ceil(32),
                lv.height.div_ceil(BLOCK_ROWS),
                z,
            ),
            ..grid(lv, z)
        };
        let taps = || DevPtr::<Taps>::from_raw(self.taps.ptr());
        let prm = self.params;
        let lease = self.scratch.borrow(stream)?;
        let at = |lv: &Level| Level {
            base: lease.base() + lv.base,
            padded: lease.base() + lv.padded,
            ..*lv
        };
        // The full level (its linear RGB in the shared stage's planes when there is one)
        // and, for frames of 15×15 and more, the half level.
        let full = match shared {
            Some(p) => Level {
                rgb: p.base,
                rgb_len: p.plane_len,
                ..at(&self.levels[0])
            },
            None => at(&self.levels[0]),
        };
        let half = self.levels.get(1).map(at);
        // SAFETY: the frame pointers were validated against the plan's layouts (or are the
        // backend's upload buffers); every level, the filter table and the reduction slots
        // were sized for this plan in `new`, and kernels on one stream run in order.
        unsafe {
            if shared.is_none() {
                // The level's own linear-RGB planes, as the shared stage writes its own.
                let out = Planes {
                    base: full.base,
                    width: full.width,
                    height: full.height,
                    plane_len: full.plane_len,
                    _pad: 0,
                };
                let lin = colour_blocks(full.width, full.height);
                for (img, src) in [rs, ds].into_iter().enumerate() {
                    k.linear_light(stream, lin, src, img as u32, out)?;
                }
            }
            if let Some(half) = half {
                k.ba_downsample(stream, grid(&half, 6), full, half)?;
                // The half level runs on the side stream, beside the full level: its grids
                // are a quarter of the size and leave the device room (the levels share
                // nothing until the reduction).
                self.side.start_after(stream)?;
            }
            let side = &self.side.stream;
            let levels = std::iter::once((full, stream)).chain(half.map(|h| (h, side)));
            for (lv, stream) in levels {
                for (step, z) in STEPS {
                    let cfg = grid(&lv, z);
                    let col = col_grid(&lv, z);
                    match step {
                        Step::Blur5Row => k.ba_blur5_row(stream, cfg, lv, prm)?,
                        Step::Opsin => {
                            k.ba_opsin(stream, cfg, lv, prm)?;
                            // The full level's last read of the shared linear light (the
                            // downsampling and the opsin blur's row pass came before).
                            if lv.rgb != 0
                                && let Some(linear) = &mut self.linear
                            {
                                linear.done(stream)?;
                            }
                        }
                        Step::GaussRow { filter, from } => k.ba_gauss_row(
                            stream,
                            row_grid(&lv, z),
                            lv,
                            taps(),
                            filter,
                            from,
                            plane::tmp(0),
                        )?,
                        Step::LfCol => k.ba_lf_col(stream, col, lv, taps())?,
                        Step::MfCol => k.ba_mf_col(stream, col, lv, taps())?,
                        Step::UhfCol => k.ba_uhf_col(stream, col, lv, taps())?,
                        Step::MaskCol => k.ba_mask_col(stream, col, lv, taps())?,
                        Step::MaltaInputs => k.ba_malta_inputs(stream, cfg, lv, prm)?,
                        Step::AcError => k.ba_ac_error(stream, group_grid(&lv, z), lv, prm)?,
                        Step::Diffmap => k.ba_diffmap(stream, cfg, lv, prm)?,
                    }
                }
            }
            if half.is_some() {
                self.side.join_into(stream)?;
            }
            let cfg = LaunchConfig {
                grid_dim: (self.reduce_blocks, 1, 1),
                block_dim: (REDUCE_THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            let out = DevPtrMut::from_raw(self.partials.ptr());
            let map = DevPtrMut::from_raw(match &mut self.map {
                Some(handout) => handout.target()?,
                None => 0,
            });
            k.ba_reduce(
                stream,
                cfg,
                full,
                half.unwrap_or_default(),
                half.is_some() as u32,
                out,
                map,
            )?;
            // The arena is free for the next engine once the reduction has read it.
            lease.end()?;
            if let Some(handout) = &mut self.map {
                handout.commit(gpu, stream)?;
            }
            self.host_partials
                .copy_in(self.partials.ptr(), self.partials.len(), stream)
        }
    }

    /// [`Butteraugli::run`], its error an engine error.
    fn launch(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
    ) -> Result<(), EngineError> {
        let shared = match &mut self.linear {
            Some(linear) => Some(linear.wait(&gpu.stream, "butteraugli")?),
            None => None,
        };
        self.run(gpu, plan, r, d, shared)
            .map_err(|e| EngineError::Cuda(format!("running butteraugli: {e}")))
    }
}

/// No pairs held back.
impl crate::metric::temporal::Sequenced for Butteraugli {}

impl CudaMetric for Butteraugli {
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
        self.host_partials.clear();
        if let Some(handout) = &mut self.map {
            handout.clear();
        }
    }

    /// Every plane a pair reads it wrote first (in its arena, or in this instance's
    /// buffers); nothing is kept across pairs.
    fn independent(&self) -> bool {
        true
    }

    fn read(&mut self, _plan: &Plan, scores: &mut Scores) -> Result<(), EngineError> {
        if self.host_partials.queued() == 0 {
            return Err(EngineError::Unsupported(
                "butteraugli: no pair queued to read".into(),
            ));
        }
        let host = self
            .host_partials
            .take(self.partials.len())
            .map_err(|e| EngineError::Cuda(format!("running butteraugli: {e}")))?;
        let mut acc = [0.0f64; REDUCE_VALUES];
        for block in host.chunks(REDUCE_VALUES) {
            acc[0] = acc[0].max(block[0]);
            acc[1..]
                .iter_mut()
                .zip(&block[1..])
                .for_each(|(a, b)| *a += b);
        }
        let full = &self.levels[0];
        super::push_fields(&acc, full.width as u64 * full.height as u64, scores);
        if let Some(handout) = &mut self.map {
            let map = handout
                .take()
                .map_err(|e| EngineError::Cuda(format!("reading the butteraugli map: {e}")))?;
            scores.set_map(map);
        }
        Ok(())
    }
}
