//! SSIMULACRA2 on the GPU. Per frame pair, on the backend's stream:
//!
//! 1. `ssimu2_linearize`, once per frame: the frame → XYB at scale 0, and its 2×2 average
//!    at scale 1 in linear RGB and XYB, in one pass (scale 0's linear RGB is never stored);
//!    when Butteraugli runs too, `ssimu2_xyb_of_linear` does the same from the linear RGB
//!    that the engine's shared stage converted once for both (`crate::cuda::linear_light`);
//! 2. `ssimu2_downsample` for scales 2..: linear RGB and XYB of the next scale;
//! 3. `ssimu2_hblur`: the reference's recursive Gaussian along rows, of the five moments of
//!    every plane of every scale in one grid (the recursion is sequential, so parallelism
//!    comes from rows × planes × moments × scales);
//! 4. `ssimu2_vblur`: the same along columns, fused with the three maps and their sums,
//!    again all scales in one grid;
//! 5. `ssimu2_finish`: the per-block sums reduced in f64; one copy of `SUMS_PER_SCALE` (18)
//!    sums per scale, queued with the pair (`CudaMetric::queue`) and read when the pair is
//!    completed;
//! 6. with `map=ssimulacra2`, `ssimu2_map_terms`, `ssimu2_map_scale` per scale and
//!    `ssimu2_map_sum`: the map from the values the column pass stored and the sums
//!    (`super::map`'s definition: each scale's contributions at its own size, as the host
//!    makes them, then their sum per full-size pixel), handed out in device memory with
//!    its statistics (`crate::map::device`).
//!
//! Every buffer is allocated once per plan: per scale 6 XYB and 15 moment planes (all
//! scales at once, so that they run concurrently; the moment planes in whole strips of 32
//! rows) and, from scale 1, 6 linear-RGB planes: about 4 · 4/3 · 21 + 4 · 1/3 · 6 = 120
//! bytes per pixel, 250 MB at 1080p. They lie, with the partial sums, the sums and the
//! table of levels, in a scratch arena that the engines of one context with the same frame
//! size share (`crate::cuda::scratch`): a pair writes what it reads, and the table, which
//! holds addresses inside the arena, is written when the arena is made.

use std::sync::Arc;

use cudarc::driver::{CudaEvent, DriverError, LaunchConfig};

use super::{Sums, WEIGHTS, scale_sizes};
use crate::cuda::linear_light::{LinearLight, Reader};
use crate::cuda::scratch::{Key, Share};
use crate::cuda::{DevPtr, DevPtrMut, Gpu, Readback};
use crate::error::EngineError;
use crate::frame::PlanePtrs;
use crate::map::device::MapOut;
use crate::map::kind::{DistortionMap, MapKind};
use crate::metric::CudaMetric;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::ssimulacra2::layout::{
    BLUR_THREADS, FINISH_THREADS, LIN_COLS, LIN_WARPS, Level, MAP_BLOCK, MAP_TERMS_LEN,
    PIXEL_BLOCK, Scale,
};
use gpumetrics_kernels::ssimulacra2::math::{MAX_SCALES, SUMS_PER_SCALE, half};

/// Buffers of one plan, allocated once.
pub(super) struct Ssimu2 {
    upsampling: crate::color::ChromaUpsampling,
    /// The arenas that every buffer below lies in; the addresses below are offsets from an
    /// arena's start.
    scratch: Share,
    /// Linear RGB of scales 1.. (index 0 unused: scale 0 is converted straight to XYB).
    rgb: Vec<Scale>,
    /// XYB of scales 0.. (scales 0 and 1 always exist: the linearize kernel writes both).
    xyb: Vec<Scale>,
    /// Scored scales.
    n_scales: usize,
    /// The table of levels (`Level`, with addresses inside the arena).
    levels: u64,
    h_blocks: u32,
    v_blocks: u32,
    /// The sums, `MAX_SCALES · SUMS_PER_SCALE` f64 values.
    out: u64,
    /// `out` of each pair in flight, on the host.
    host_out: Readback<f64>,
    /// With `map=ssimulacra2`: the weights' place in the arena (the reference's 108), and
    /// where each pair's map (`ssimu2_map_sum`'s output) is written and handed out.
    map: Option<MapBuffers>,
    /// The engine's linear light when Butteraugli reads it too (`crate::cuda::linear_light`):
    /// scales 0 and 1 come from its planes (`ssimu2_xyb_of_linear`) instead of the frames.
    linear: Option<Reader>,
}

/// The buffers of the SSIMULACRA2 map on the GPU.
struct MapBuffers {
    weights: u64,
    /// `ssimu2_map_terms`' output and each scale's contributions (arena offsets).
    terms: u64,
    contrib: u64,
    width: u32,
    height: u32,
    handout: MapOut,
}

impl Ssimu2 {
    pub(super) fn new(
        gpu: &Gpu,
        plan: &Plan,
        upsampling: crate::color::ChromaUpsampling,
        linear: Option<Arc<LinearLight>>,
    ) -> Result<Ssimu2, DriverError> {
        let (w0, h0) = (plan.reference.width, plan.reference.height);
        let n_scales = scale_sizes(w0, h0).len();
        let with_map = plan.map == Some(MapKind::Ssimulacra2);
        let mut sizes = vec![(w0, h0)];
        while sizes.len() < n_scales.max(2) {
            let (w, h) = *sizes.last().expect("one size");
            sizes.push((half(w), half(h)));
        }
        // Per scale: XYB 6 planes, linear RGB 6 from scale 1, and if scored 15 moment planes
        // in whole strips of 32 rows (`Level::moment_len`).
        let len = |s: usize| sizes[s].0 as u64 * sizes[s].1 as u64;
        let moment_len = |s: usize| {
            let (width, height) = sizes[s];
            Level {
                width,
                height,
                ..Default::default()
            }
            .moment_len()
        };
        // Each region starts 256-byte aligned (the column pass reads 16-byte vectors):
        // at a multiple of 64 f32 values.
        const ALIGN: u64 = 256 / 4;
        // Byte offsets in the arena.
        let mut offset = 0u64;
        let mut take = |values: u64| {
            offset = offset.next_multiple_of(ALIGN);
            let at = offset * 4;
            offset += values;
            at
        };
        let scale = |base: u64, s: usize| Scale {
            base,
            width: sizes[s].0,
            height: sizes[s].1,
            plane_len: sizes[s].0 * sizes[s].1,
            _pad: 0,
        };
        let (mut rgb, mut xyb, mut levels) = (Vec::new(), Vec::new(), Vec::new());
        let (mut n_partials, mut h_blocks, mut v_blocks) = (0u32, 0u32, 0u32);
        for s in 0..sizes.len() {
            xyb.push(scale(take(6 * len(s)), s));
            rgb.push(if s > 0 {
                scale(take(6 * len(s)), s)
            } else {
                Scale::default()
            });
            if s < n_scales {
                let lv = Level {
                    xyb: xyb[s].base,
                    moments: take(15 * moment_len(s)),
                    // The map's values: 6 planes (an offset past the first region, never 0).
                    values: if with_map { take(6 * len(s)) } else { 0 },
                    // An offset until the partials are allocated.
                    partials: n_partials as u64,
                    width: sizes[s].0,
                    height: sizes[s].1,
                    h_first: h_blocks,
                    v_first: v_blocks,
                };
                let groups = lv.v_blocks_per_plane();
                n_partials += SUMS_PER_SCALE as u32 * groups;
                h_blocks += 3 * lv.h_blocks_per_plane();
                v_blocks += 3 * groups;
                levels.push(lv);
            }
        }
        // Then the partial sums, the sums and the table of levels (f64 and u64 values: two
        // f32 slots each).
        let partials = take(2 * n_partials.max(1) as u64);
        let out = take(2 * (MAX_SCALES * SUMS_PER_SCALE) as u64);
        for lv in &mut levels {
            lv.partials = partials + lv.partials * 8;
        }
        let table = take(std::mem::size_of_val(&levels[..]).div_ceil(4) as u64);
        // With the map: its weights and terms (f64: two f32 slots each) and each scale's
        // contributions, one scale after the other; the map itself goes straight into the
        // pair's own buffer (`MapOut::target`).
        let map_at = with_map.then(|| {
            let weights = take(2 * WEIGHTS.len() as u64);
            let terms = take(2 * MAP_TERMS_LEN as u64);
            let contrib = take(
                levels
                    .iter()
                    .map(|lv| lv.width as u64 * lv.height as u64)
                    .sum(),
            );
            (weights, terms, contrib)
        });
        let key = Key {
            context: gpu.ctx.cu_ctx() as usize,
            metric: "ssimulacra2",
            // Arenas with the map's buffers are another layout.
            layout: [w0 as u64, h0 as u64, with_map as u64],
            bytes: offset as usize * 4,
        };
        // A new arena's table: the levels with the arena's addresses.
        let init = |base: u64, stream: &std::sync::Arc<cudarc::driver::CudaStream>| {
            let at: Vec<Level> = levels
                .iter()
                .map(|lv| Level {
                    xyb: base + lv.xyb,
                    moments: base + lv.moments,
                    partials: base + lv.partials,
                    values: if lv.values != 0 { base + lv.values } else { 0 },
                    ..*lv
                })
                .collect();
            if let Some((weights, _, _)) = map_at {
                // SAFETY: the weights' region holds 108 f64; WEIGHTS is a static.
                unsafe {
                    cudarc::driver::result::memcpy_htod_async(
                        base + weights,
                        &WEIGHTS[..],
                        stream.cu_stream(),
                    )
                }?;
            }
            // SAFETY: `Level` is `repr(C)` plain data without padding (u64 and u32 fields).
            let bytes = unsafe {
                std::slice::from_raw_parts(at.as_ptr().cast::<u8>(), std::mem::size_of_val(&at[..]))
            };
            // SAFETY: the table's region holds `bytes.len()` bytes; `at` lives until the
            // stream is synchronised.
            unsafe {
                cudarc::driver::result::memcpy_htod_async(base + table, bytes, stream.cu_stream())
            }?;
            stream.synchronize()
        };
        let scratch = Share::join(gpu, key, &init)?;
        let host_out = Readback::new(&gpu.ctx, MAX_SCALES * SUMS_PER_SCALE)?;
        let map = match map_at {
            Some((weights, terms, contrib)) => Some(MapBuffers {
                weights,
                terms,
                contrib,
                width: w0,
                height: h0,
                handout: MapOut::new(gpu, MapKind::Ssimulacra2, w0, h0, plan.map_threshold)?,
            }),
            None => None,
        };
        Ok(Ssimu2 {
            upsampling,
            scratch,
            rgb,
            xyb,
            n_scales,
            levels: table,
            h_blocks,
            v_blocks,
            out,
            host_out,
            map,
            linear: linear.map(|l| l.reader()).transpose()?,
        })
    }

    /// Queues the whole pipeline for one pair and the copy of its sums (nothing for a
    /// frame too small to score).
    fn launch(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
    ) -> Result<(), EngineError> {
        let (k, stream) = (&gpu.kernels, &gpu.stream);
        if self.n_scales == 0 {
            return Ok(());
        }
        let (rs, ds) = plan.color_sources(r, d, self.upsampling);
        let grid = |s: &Scale| LaunchConfig {
            grid_dim: (
                s.width.div_ceil(PIXEL_BLOCK),
                s.height.div_ceil(PIXEL_BLOCK),
                2,
            ),
            block_dim: (PIXEL_BLOCK, PIXEL_BLOCK, 1),
            shared_mem_bytes: 0,
        };
        let blur = |blocks: u32| LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (BLUR_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let n = self.n_scales;
        let values = n * SUMS_PER_SCALE;
        // The pair's linear light from the engine's stage, when there is one: the stream
        // waits for its conversion.
        let shared = match &mut self.linear {
            Some(linear) => {
                let planes = linear.wait(stream, "ssimulacra2")?;
                Some(Scale {
                    base: planes.base,
                    width: planes.width,
                    height: planes.height,
                    plane_len: planes.plane_len,
                    _pad: 0,
                })
            }
            None => None,
        };
        // SAFETY: the frame pointers were validated against the plan's layouts (or are
        // the backend's upload buffers); every plane, level, partials and output slot was
        // sized for this plan in `new`, in the arena lent here.
        let queued = unsafe {
            (|| -> Result<(), DriverError> {
                let lease = self.scratch.borrow(stream)?;
                let base = lease.base();
                let at = |s: &Scale| Scale {
                    base: base + s.base,
                    ..*s
                };
                let (rgb, xyb) = (&self.rgb, &self.xyb);
                let levels = DevPtr::from_raw(base + self.levels);
                let out = base + self.out;
                let lin = LaunchConfig {
                    grid_dim: (
                        (2 * rgb[1].width).div_ceil(LIN_COLS),
                        (2 * rgb[1].height).div_ceil(2 * LIN_WARPS),
                        1,
                    ),
                    block_dim: (32, LIN_WARPS, 1),
                    shared_mem_bytes: 0,
                };
                match (shared, &mut self.linear) {
                    (Some(planes), Some(linear)) => {
                        for img in 0..2 {
                            let (xyb0, rgb1, xyb1) = (at(&xyb[0]), at(&rgb[1]), at(&xyb[1]));
                            k.ssimu2_xyb_of_linear(stream, lin, planes, img, xyb0, rgb1, xyb1)?;
                        }
                        // Its only read of the shared planes.
                        linear.done(stream)?;
                    }
                    _ => {
                        for (img, src) in [rs, ds].into_iter().enumerate() {
                            k.ssimu2_linearize(
                                stream,
                                lin,
                                src,
                                img as u32,
                                at(&xyb[0]),
                                at(&rgb[1]),
                                at(&xyb[1]),
                            )?;
                        }
                    }
                }
                for i in 2..n {
                    let (prev, cur) = (at(&rgb[i - 1]), at(&rgb[i]));
                    k.ssimu2_downsample(stream, grid(&cur), prev, cur, at(&xyb[i]))?;
                }
                k.ssimu2_hblur(stream, blur(self.h_blocks), levels, n as u32)?;
                k.ssimu2_vblur(stream, blur(self.v_blocks), levels, n as u32)?;
                let cfg = LaunchConfig {
                    grid_dim: (SUMS_PER_SCALE as u32, n as u32, 1),
                    block_dim: (FINISH_THREADS, 1, 1),
                    shared_mem_bytes: 0,
                };
                k.ssimu2_finish(stream, cfg, levels, DevPtrMut::from_raw(out))?;
                if let Some(m) = &mut self.map {
                    let terms = base + m.terms;
                    let one = LaunchConfig {
                        grid_dim: (1, 1, 1),
                        block_dim: (MAX_SCALES as u32, 1, 1),
                        shared_mem_bytes: 0,
                    };
                    k.ssimu2_map_terms(
                        stream,
                        one,
                        levels,
                        n as u32,
                        DevPtr::from_raw(out),
                        DevPtr::from_raw(base + m.weights),
                        DevPtrMut::from_raw(terms),
                    )?;
                    let tiles = |w: u32, h: u32| LaunchConfig {
                        grid_dim: (w.div_ceil(MAP_BLOCK), h.div_ceil(MAP_BLOCK), 1),
                        block_dim: (MAP_BLOCK, MAP_BLOCK, 1),
                        shared_mem_bytes: 0,
                    };
                    // Each scale's contributions at its own size (a full-size pixel of
                    // scale s shares its contribution with 4^s others), then their sum.
                    let mut contrib = base + m.contrib;
                    for (s, scale) in xyb.iter().enumerate().take(n) {
                        let (w, h) = (scale.width, scale.height);
                        k.ssimu2_map_scale(
                            stream,
                            tiles(w, h),
                            levels,
                            s as u32,
                            DevPtr::from_raw(terms),
                            DevPtrMut::from_raw(contrib),
                        )?;
                        contrib += 4 * w as u64 * h as u64;
                    }
                    k.ssimu2_map_sum(
                        stream,
                        tiles(m.width, m.height),
                        levels,
                        n as u32,
                        DevPtr::from_raw(base + m.contrib),
                        DevPtrMut::from_raw(m.handout.target()?),
                        m.width,
                        m.height,
                    )?;
                    m.handout.commit(gpu, stream)?;
                }
                self.host_out.copy_in(out, values, stream)?;
                // The arena is free for the next engine once the sums are copied out.
                lease.end()
            })()
        };
        queued.map_err(|e| EngineError::Cuda(format!("running ssimulacra2: {e}")))
    }

    /// Waits for the oldest pair queued and gives its sums.
    fn sums(&mut self) -> Result<Sums, EngineError> {
        let mut out = Sums {
            scales: self.n_scales,
            ..Default::default()
        };
        if self.n_scales == 0 {
            return Ok(out);
        }
        let values = self.n_scales * SUMS_PER_SCALE;
        let host = self
            .host_out
            .take(values)
            .map_err(|e| EngineError::Cuda(format!("running ssimulacra2: {e}")))?;
        for (i, chunk) in host.chunks(SUMS_PER_SCALE).enumerate() {
            out.sums[i].copy_from_slice(chunk);
            out.pixels[i] = self.xyb[i].plane_len as u64;
        }
        Ok(out)
    }
}

/// No pairs held back.
impl crate::metric::temporal::Sequenced for Ssimu2 {}

impl CudaMetric for Ssimu2 {
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
        self.host_out.clear();
        if let Some(m) = &mut self.map {
            m.handout.clear();
        }
    }

    /// Every plane and sum a pair reads (all in its arena) it wrote first; nothing is kept
    /// across pairs.
    fn independent(&self) -> bool {
        true
    }

    /// A frame too small to score queues nothing, and reads the sums of no scale.
    fn read(&mut self, _plan: &Plan, scores: &mut Scores) -> Result<(), EngineError> {
        if self.n_scales > 0 && self.host_out.queued() == 0 {
            return Err(EngineError::Unsupported(
                "ssimulacra2: no pair queued to read".into(),
            ));
        }
        let sums = self.sums()?;
        super::push_fields(&sums, scores);
        if let Some(m) = &mut self.map {
            // A frame too small to score has an empty map, as on the CPU.
            let map = if self.n_scales == 0 {
                let (w, h) = (m.width as usize, m.height as usize);
                crate::map::PairMap::on_host(
                    MapKind::Ssimulacra2,
                    DistortionMap {
                        width: w,
                        height: h,
                        values: vec![0.0; w * h],
                    },
                )
            } else {
                m.handout
                    .take()
                    .map_err(|e| EngineError::Cuda(format!("reading the ssimulacra2 map: {e}")))?
            };
            scores.set_map(map);
        }
        Ok(())
    }
}
