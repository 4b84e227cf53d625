//! ColorVideoVDP on the GPU: the CPU's pipeline ([`Model`]) from the same per-sample
//! functions (`gpumetrics_kernels::cvvdp`), on the backend's stream. Per pair:
//!
//! 1. `cvvdp_dkl` (`cvvdp_dkl_sdr420` for 4:2:0 on an sRGB display), once per side: the
//!    frame read in place (device frames) or from its upload, to DKL, into the side's slot
//!    of the history (the last frames of each side, a ring);
//! 2. per pass (the video's; the first pair of a sequence also the image's, which the
//!    reference gives a one-frame span): `cvvdp_temporal`, the eight channels of pyramid
//!    level 0 and the pass's sums cleared; the Gaussian pyramid (`cvvdp_reduce`); per band
//!    the weighted contrasts against the next level, expanded as it is read (no expanded
//!    planes: `cvvdp_band`), the masker's blur (along rows, then columns, in shared memory)
//!    with the masked differences pooled (`cvvdp_mask`, f64 sums), each one launch for
//!    every band of the pass (`Levels`: a table of the bands' parameters, made once; the
//!    band kernel's levels 0 and 1 apart, `cvvdp_band_one`, its parameters in the
//!    parameter space);
//!    the base band (`cvvdp_base`);
//! 3. one copy of both passes' sums (`2 · PASS_SUMS` f64), read when the pair completes:
//!    the pooling over bands, channels and frames ([`Running`]) runs on the host, as on
//!    the CPU.
//!
//! Past a sequence's first pair, the common case (4:2:0 Y′CbCr on an sRGB display, rows of
//! whole runs of `DKL_TEMPORAL_VEC` pixels: `dkl_temporal_takes`) makes steps 1 and the
//! video pass's `cvvdp_temporal` one launch, `cvvdp_dkl_temporal`, whose threads read
//! back the newest frames right after writing them. Per launch it takes about the time of
//! the three it replaces; the pairs gained (H100, 1080p: 2,023 → 2,144 pairs/s at 2 in
//! flight, docs/BENCHMARKS.md ~09:33) are in how the lanes overlap.
//!
//! Pairs in flight take lanes in turn ([`Lane`], up to [`LANES`]): the metric's stream and
//! branches of it, each with its own pyramids, band planes and sums, the history shared.
//! One pair's passes leave most of the device idle at times (the coarse levels, each
//! kernel's last blocks) and its temporal filter waits on memory where the band kernels
//! wait on their arithmetic: two engines side by side made 14 % more pairs than one (H100,
//! docs/BENCHMARKS.md). The ring has a slot more per lane past the first: the slot a pair
//! writes was last read by the pair a lap of the lanes before, on its own lane, so a pair
//! waits only for the previous pair's frames (`Lane::written`), which its filters read;
//! a pair that starts a sequence (slots from 0 again) waits for the other lanes' last
//! filters too (`Lane::filtered`).
//!
//! Every buffer is allocated once per plan: the history (2 · 3 planes a slot, the filters'
//! length and lanes − 1 more slots; half floats where no heat map is made, the chromatic
//! planes, and on an sRGB display the achromatic one too: `history_layout`; the
//! achromatic plane's halves took the fused kernel from 152 to 117 µs a 1080p launch and
//! the pairs from 2,330 to 2,530 a second at 4 in flight, H100, docs/BENCHMARKS.md
//! 2026-12-06 ~12:15), per lane both pyramids (8 channels) and each band's planes
//! (`OUT_PLANES`, of every level: the bands of a pass run at once): about (6 · (taps +
//! lanes − 1) + 22 · lanes) · 4 bytes a pixel, 0.6 GB at 1080p30 (9 taps) with one lane,
//! 0.9 with two, 1.1 with three, 1.3 with four.

use std::collections::VecDeque;
use std::sync::Arc;

use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, DriverError, LaunchConfig};

use super::cpu;
use super::csf::luminance_axis;
use super::masking::{MASKING, blur_taps};
use super::model::{Model, Running};
use super::pool;
use crate::cuda::{Branch, DeviceMemory, Gpu, Readback, zeroed};
use crate::error::EngineError;
use crate::format::ChannelSpec;
use crate::frame::PlanePtrs;
use crate::map::device::MapOut;
use crate::map::kind::MapKind;
use crate::metric::CudaMetric;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::cvvdp::{
    BAND_CHANNELS, BLOCK_X, BLOCK_Y, BLUR_TAPS, Band, CHANNELS, DKL_TEMPORAL_VEC, GRID, Levels,
    MASK_ROWS, MAX_BANDS, OUT_PLANES, PASS_SUMS, Planes, SUM_THREADS, Source, TEMPORAL_VEC,
    Temporal, dkl_temporal_takes, history_layout, sdr420,
};

/// A [`Band`]'s bytes, as the kernels read it from a table (`Levels::bands`).
fn band_bytes(b: &Band) -> Vec<u8> {
    // SAFETY: `Band` is `repr(C)` plain data without padding (its size is asserted with
    // the kernels' crate), so each of its bytes is initialised.
    unsafe { std::slice::from_raw_parts((b as *const Band).cast::<u8>(), size_of::<Band>()) }
        .to_vec()
}

/// Lanes at most: pairs in flight past it share them. A third lane keeps a third pair's
/// kernels ready where two lanes both wait on one kind of work (memory or arithmetic); a
/// fourth made 1.1 % more pairs at 4 in flight (H100, 2,277 → 2,302, docs/BENCHMARKS.md
/// 2026-12-06 ~11:30).
const LANES: usize = 4;

/// The finest bands, each launched on its own (`cvvdp_band_one`); the coarser ones, each
/// too small to fill the device alone, share one launch of `cvvdp_band`.
const ONE_BANDS: usize = 2;

/// The pairs' sums: video pass, then image pass.
const SUMS: usize = 2 * PASS_SUMS;

/// What a pair's passes write, one set per lane: pairs in flight take the lanes in turn.
struct Lane {
    /// The lane's stream: `None` for the metric's own, else a branch of it.
    branch: Option<Branch>,
    /// Each level's pyramid (`CHANNELS` planes), at offsets into the arena.
    g: Vec<usize>,
    /// Each band's output planes (`Band::out`, of the band's size), the base band's none.
    out: Vec<usize>,
    /// The bands' parameters (`Band`, the base band's not), the video pass's then the image
    /// pass's, as bytes: `Levels::bands`.
    bands: CudaSlice<u8>,
    /// Where the passes add their sums.
    sums: CudaSlice<f64>,
    /// Recorded after the lane's newest temporal filter: a pair that starts a sequence
    /// overwrites slots of the history that filter may read, so it waits for this first.
    filtered: CudaEvent,
    /// Recorded after the lane's newest frames went into the history: the next pair (on the
    /// next lane) reads them, so it waits for this first.
    written: CudaEvent,
}

impl Lane {
    /// The stream the lane's work goes to.
    fn stream<'a>(&'a self, gpu: &'a Gpu) -> &'a Arc<CudaStream> {
        self.branch.as_ref().map_or(&gpu.stream, |b| &b.stream)
    }
}

pub(super) struct CvvdpCuda {
    /// The constants of the display, size and frame rate (levels, CSF, gain, taps).
    model: Model,
    /// Each level's size, level 0 the frame's, the last the base band's.
    sizes: Vec<(u32, u32)>,
    /// Every plane below, at offsets (in f32 values) into it.
    arena: CudaSlice<f32>,
    history: usize,
    /// One lane, or one per pair in flight up to [`LANES`] (no heat map).
    lanes: Vec<Lane>,
    /// The lane of the next pair.
    next_lane: usize,
    /// The metric's stream, where the buffers are freed (after the branch's work: `Drop`).
    stream: Arc<CudaStream>,
    /// The filters' taps (`[4][len]`) and the CSF's rows (`[band][channel][GRID]`).
    taps: CudaSlice<f32>,
    csf: CudaSlice<f32>,
    host: Readback<f64>,
    /// The filters' length; the history ring's slots (`len` and one more per lane past the
    /// first: the slot a pair writes was last read by the pair a lap of the lanes before,
    /// on its own lane), the oldest slot, frames held.
    len: u32,
    slots: u32,
    oldest: u32,
    held: u32,
    /// Pairs queued since the sequence started.
    pushed: u64,
    /// The masker blur's taps (the same for every band).
    blur_taps: [f32; BLUR_TAPS],
    /// Whether each pair queued and not read had the image pass (the first of a sequence).
    queued: VecDeque<bool>,
    running: Running,
    /// With `map=cvvdp`: each band's heat plane (an offset into the arena, of the band's
    /// size) and where each pair's map is handed out.
    heat: Option<(Vec<usize>, MapOut)>,
}

impl CvvdpCuda {
    /// With `heat`, each pair's heat map too (`map=cvvdp`). As many lanes as `lanes` asks
    /// for, up to [`LANES`], where no heat map is made (its collapse and hand-out keep one
    /// pair's planes).
    pub(super) fn new(
        gpu: &Gpu,
        plan: &Plan,
        model: Model,
        heat: bool,
        lanes: usize,
    ) -> Result<CvvdpCuda, DriverError> {
        let lanes = if heat { 1 } else { lanes.clamp(1, LANES) };
        let (w, h) = (plan.reference.width, plan.reference.height);
        let levels = model.levels();
        let mut sizes = vec![(w, h)];
        for _ in 0..levels {
            let (w, h) = *sizes.last().expect("level 0");
            sizes.push((w.div_ceil(2), h.div_ceil(2)));
        }
        // The pooling sums hold `MAX_BANDS` bands a pass; `bands` makes at most 16.
        assert!(
            sizes.len() <= MAX_BANDS,
            "cvvdp: {} bands past the sums' {MAX_BANDS}",
            sizes.len()
        );
        let len = model.taps()[0].len();
        let slots = len + lanes - 1;
        let n = |(w, h): (u32, u32)| w as usize * h as usize;
        // Offsets, each region 64 values (256 bytes) aligned.
        let mut offset = 0usize;
        let mut take = |values: usize| {
            offset = offset.next_multiple_of(64);
            let at = offset;
            offset += values;
            at
        };
        let history = take(2 * slots * 3 * n(sizes[0]));
        let pyramids: Vec<(Vec<usize>, Vec<usize>)> = (0..lanes)
            .map(|_| {
                let g: Vec<usize> = sizes.iter().map(|&s| take(CHANNELS * n(s))).collect();
                let out: Vec<usize> = sizes[..levels]
                    .iter()
                    .map(|&s| take(OUT_PLANES as usize * n(s)))
                    .collect();
                (g, out)
            })
            .collect();
        let heat_planes: Option<Vec<usize>> =
            heat.then(|| sizes.iter().map(|&s| take(n(s))).collect());
        let arena = zeroed::<f32>(&gpu.stream, offset.max(1))?;
        let taps: Vec<f32> = model.taps().iter().flatten().copied().collect();
        let mut csf = Vec::with_capacity(sizes.len() * BAND_CHANNELS * GRID);
        for band in model.csf() {
            for c in band {
                csf.extend_from_slice(c.log_s());
            }
        }
        let taps = gpu.stream.clone_htod(&taps)?;
        let csf = gpu.stream.clone_htod(&csf)?;
        let frame0 = sizes[0];
        let lanes = pyramids
            .into_iter()
            .map(|(g, out)| {
                Ok(Lane {
                    branch: None,
                    g,
                    out,
                    bands: zeroed::<u8>(&gpu.stream, 2 * levels * size_of::<Band>())?,
                    sums: zeroed::<f64>(&gpu.stream, SUMS)?,
                    filtered: gpu.ctx.new_event(None)?,
                    written: gpu.ctx.new_event(None)?,
                })
            })
            .collect::<Result<Vec<Lane>, DriverError>>()?;
        let mut me = CvvdpCuda {
            sizes,
            arena,
            history,
            lanes,
            next_lane: 0,
            stream: gpu.stream.clone(),
            taps,
            csf,
            host: Readback::new(&gpu.ctx, SUMS)?,
            len: len as u32,
            slots: slots as u32,
            oldest: 0,
            held: 0,
            pushed: 0,
            blur_taps: blur_taps(),
            queued: VecDeque::new(),
            running: Running::default(),
            heat: match heat_planes {
                Some(planes) => Some((
                    planes,
                    MapOut::new(gpu, MapKind::Cvvdp, frame0.0, frame0.1, plan.map_threshold)?,
                )),
                None => None,
            },
            model,
        };
        // The tables point into the arena and the sums: made once, as their buffers.
        for i in 0..me.lanes.len() {
            let bytes: Vec<u8> = [false, true]
                .into_iter()
                .flat_map(|image| (0..levels).map(move |b| (b, image)))
                .flat_map(|(b, image)| band_bytes(&me.band(i, b, image)))
                .collect();
            gpu.stream.memcpy_htod(&bytes, &mut me.lanes[i].bands)?;
        }
        // The other lanes' streams, forked after the buffers' set-up (they wait for it).
        for lane in me.lanes.iter_mut().skip(1) {
            lane.branch = Some(Branch::new(&gpu.stream)?);
        }
        Ok(me)
    }

    fn restart(&mut self) {
        self.start_sequence();
        self.queued.clear();
        self.host.clear();
        if let Some((_, host)) = &mut self.heat {
            host.clear();
        }
        self.running = Running::default();
    }

    /// The next pair queued starts a sequence (its history and image pass), the pairs
    /// queued before still read as they were (the pooling over frames starts again when
    /// that pair is read).
    fn start_sequence(&mut self) {
        self.oldest = 0;
        self.held = 0;
        self.pushed = 0;
    }

    fn planes(&self, offset: usize, (width, height): (u32, u32)) -> Planes {
        Planes {
            base: self.arena.ptr_at(offset),
            stride: width as u64 * height as u64,
            width,
            height,
        }
    }

    /// The history's layout (`history_layout`: half floats where no heat map is made, the
    /// achromatic plane too on an sRGB display; the CPU's model rounds alike).
    fn layout(&self) -> u32 {
        history_layout(self.model.photometry(), self.heat.is_some())
    }

    /// Band `b`'s parameters in a pass (the image pass's or the video's) on lane `lane`.
    fn band(&self, lane: usize, b: usize, image: bool) -> Band {
        let sizes = &self.sizes;
        let levels = sizes.len() - 1;
        let Lane { g, out, sums, .. } = &self.lanes[lane];
        let sums = sums.ptr_at(if image { PASS_SUMS } else { 0 });
        let (l0, l_last) = luminance_axis();
        let channels = if image { 3 } else { BAND_CHANNELS as u32 };
        let size = sizes[b];
        Band {
            g: self.planes(g[b], size),
            next: if b < levels {
                self.planes(g[b + 1], sizes[b + 1])
            } else {
                Planes::default()
            },
            out: match out.get(b) {
                Some(&at) => self.planes(at, size),
                None => Planes::default(),
            },
            csf: self.csf.ptr_at(b * BAND_CHANNELS * GRID),
            l0,
            l_last,
            gain: self.model.gain(),
            // The reference reads the bands between the finest and the base band
            // doubled (`lpyr_dec.get_band`).
            mul: if b == 0 || b == levels { 1.0 } else { 2.0 },
            channels,
            blur: (size.0 > 6 && size.1 > 6) as u32,
            blur_taps: self.blur_taps,
            _pad: 0,
            masking: *MASKING,
            sums: sums + (8 * b * BAND_CHANNELS) as u64,
            // The heat map is the video pass's.
            heat: match (&self.heat, image) {
                (Some((planes, _)), false) => {
                    pool::heat_constants(b == levels, self.arena.ptr_at(planes[b]))
                }
                _ => Default::default(),
            },
        }
    }

    /// Queues one pass over the history as it stands (the image pass of its newest frame,
    /// or the video pass) on lane `li`, its sums at `PASS_SUMS · pass` of the lane's; the
    /// video pass records the lane's `filtered` after its temporal filter. With `fused`
    /// (the test and reference sides, of the video pass), the newest frames are not in the
    /// history yet: `cvvdp_dkl_temporal` writes them there as it filters, and the lane's
    /// `written` is recorded after it.
    ///
    /// # Safety
    /// The history holds `held` frames written by work queued before on the lane's stream
    /// (or ordered before it), but the newest where `fused`, whose frame pointers are valid
    /// for the plan's layouts.
    unsafe fn pass(
        &self,
        gpu: &Gpu,
        li: usize,
        image: bool,
        fused: Option<&[Source; 2]>,
    ) -> Result<(), DriverError> {
        let lane = &self.lanes[li];
        let (k, stream) = (&gpu.kernels, lane.stream(gpu));
        let per_pixel = |(w, h): (u32, u32), z: u32| LaunchConfig {
            grid_dim: (w.div_ceil(BLOCK_X), h.div_ceil(BLOCK_Y), z),
            block_dim: (BLOCK_X, BLOCK_Y, 1),
            shared_mem_bytes: 0,
        };
        let sizes = &self.sizes;
        let levels = sizes.len() - 1;
        let sums = lane.sums.ptr_at(if image { PASS_SUMS } else { 0 });
        let frame = sizes[0].0 as u64 * sizes[0].1 as u64;
        // The newest `len` frames held.
        let held = self.held.min(self.len);
        let t = Temporal {
            history: self.arena.ptr_at(self.history),
            plane_len: frame,
            taps: self.taps.ptr(),
            sums,
            len: self.len,
            slots: self.slots,
            oldest: (self.oldest + self.held - held) % self.slots,
            held,
            image: image as u32,
            // Every region of the arena starts 256-byte aligned; the planes of a region are
            // `frame` samples apart.
            vec: frame.is_multiple_of(TEMPORAL_VEC as u64) as u32,
            halves: self.layout(),
            _pad: 0,
        };
        let per_thread = if t.vec != 0 { TEMPORAL_VEC as u64 } else { 1 };
        let temporal_cfg = LaunchConfig {
            grid_dim: (frame.div_ceil(per_thread * SUM_THREADS as u64) as u32, 1, 1),
            block_dim: (SUM_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let g0 = self.planes(lane.g[0], sizes[0]);
        // SAFETY (of every launch): each `Planes` lies inside the arena, sized in `new`
        // for these levels; the kernels check their coordinates against the sizes.
        unsafe {
            match fused {
                Some([test, reference]) => {
                    let (w, h) = sizes[0];
                    let cfg = LaunchConfig {
                        grid_dim: (
                            (w / DKL_TEMPORAL_VEC).div_ceil(BLOCK_X),
                            h.div_ceil(BLOCK_Y),
                            1,
                        ),
                        block_dim: (BLOCK_X, BLOCK_Y, 1),
                        shared_mem_bytes: 0,
                    };
                    let photometry = *self.model.photometry();
                    k.cvvdp_dkl_temporal(stream, cfg, *test, *reference, photometry, t, g0)?;
                    lane.written.record(stream)?;
                }
                None => k.cvvdp_temporal(stream, temporal_cfg, t, g0)?,
            }
            if !image {
                lane.filtered.record(stream)?;
            }
            let z = CHANNELS as u32;
            for i in 1..=levels {
                let src = self.planes(lane.g[i - 1], sizes[i - 1]);
                let dst = self.planes(lane.g[i], sizes[i]);
                k.cvvdp_reduce(stream, per_pixel(sizes[i], z), src, dst)?;
            }
        }
        // SAFETY: as above; the sums hold `PASS_SUMS` values per pass; the tables hold each
        // pass's `levels` bands, for these sizes.
        unsafe {
            let table = lane
                .bands
                .ptr_at(if image { levels * size_of::<Band>() } else { 0 });
            // The bands from `first` on, their blocks in one grid, `rows` sample rows a block.
            let launch = |first: usize, rows: u32| {
                let l = Levels::new(
                    table + (first * size_of::<Band>()) as u64,
                    &sizes[first..levels],
                    rows,
                );
                let cfg = LaunchConfig {
                    grid_dim: (l.blocks(), 1, 1),
                    block_dim: (BLOCK_X, BLOCK_Y, 1),
                    shared_mem_bytes: 0,
                };
                (l, cfg)
            };
            // Levels 0 and 1 each with its parameters in the parameter space
            // (`cvvdp_band_one`: 44 registers against the table kernel's 62, and the
            // interior path), the coarser bands in one launch; no band but the base:
            // nothing (a grid of no blocks is an error).
            for (b, &size) in sizes.iter().enumerate().take(levels.min(ONE_BANDS)) {
                k.cvvdp_band_one(stream, per_pixel(size, 1), self.band(li, b, image))?;
            }
            if levels > ONE_BANDS {
                let (l, cfg) = launch(ONE_BANDS, BLOCK_Y);
                k.cvvdp_band(stream, cfg, l)?;
            }
            if levels > 0 {
                let (l, cfg) = launch(0, BLOCK_Y * MASK_ROWS);
                k.cvvdp_mask(stream, cfg, l)?;
            }
            let one = LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: (SUM_THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            k.cvvdp_base(stream, one, self.band(li, levels, image))?;
        }
        Ok(())
    }

    /// Queues a pair on the next lane: both frames into the history, the passes, the copy
    /// of their sums. `uploaded`: recorded after the pair's uploads (host frames), which a
    /// branch waits for (the metric's stream waited already).
    fn launch(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
        uploaded: Option<&CudaEvent>,
    ) -> Result<bool, DriverError> {
        let li = self.next_lane;
        self.next_lane = (li + 1) % self.lanes.len();
        let lane = &self.lanes[li];
        let (k, stream) = (&gpu.kernels, lane.stream(gpu));
        if let (Some(_), Some(event)) = (&lane.branch, uploaded) {
            stream.wait(event)?;
        }
        // The previous pair's frames, which this pair's filters read, and through that pair's
        // own wait every older one. In a sequence, the slot written below was last read by
        // the pair a lap of the lanes before, earlier on this lane's stream; a pair that
        // starts a sequence takes slots from 0 again, which the other lanes' newest filters
        // may still read.
        let lanes = self.lanes.len();
        if lanes > 1 {
            stream.wait(&self.lanes[(li + lanes - 1) % lanes].written)?;
        }
        if self.pushed == 0 {
            for (i, other) in self.lanes.iter().enumerate() {
                if i != li {
                    stream.wait(&other.filtered)?;
                }
            }
        }
        let slot = if self.held < self.slots {
            self.held += 1;
            (self.oldest + self.held - 1) % self.slots
        } else {
            let s = self.oldest;
            self.oldest = (self.oldest + 1) % self.slots;
            s
        };
        let frame = self.sizes[0];
        let n = frame.0 as usize * frame.1 as usize;
        let photometry = *self.model.photometry();
        // Side 0 the test (distorted), 1 the reference, as the history holds them.
        let sides = [
            (&plan.distorted, d, &plan.colorimetry[1]),
            (&plan.reference, r, &plan.colorimetry[0]),
        ];
        let sources: [Source; 2] = [0, 1].map(|side| {
            let (layout, ptrs, colorimetry) = sides[side];
            let specs: Vec<&ChannelSpec> = plan
                .channels
                .iter()
                .map(|(rs, ds)| if side == 1 { rs } else { ds })
                .collect();
            cpu::source(layout, colorimetry, &specs, ptrs)
        });
        let first = self.pushed == 0;
        // The common case past a sequence's first pair: both sides to DKL in the video
        // pass's temporal launch (`cvvdp_dkl_temporal`).
        let [test, reference] = &sources;
        let fuse = !first && dkl_temporal_takes(test, reference, &photometry, frame.0, frame.1);
        for (side, src) in sources.iter().enumerate().filter(|_| !fuse) {
            let src = *src;
            let at = self.history + (side * self.slots as usize + slot as usize) * 3 * n;
            let out = self.planes(at, frame);
            let cfg = LaunchConfig {
                grid_dim: (frame.0.div_ceil(BLOCK_X), frame.1.div_ceil(BLOCK_Y), 1),
                block_dim: (BLOCK_X, BLOCK_Y, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: the frame pointers were validated against the plan's layouts (or are
            // the backend's upload buffers); the slot's three planes lie in the arena.
            let halves = self.layout();
            // The common case (4:2:0 Y'CbCr on an sRGB display) on its own kernel, the
            // same code with those parameters constant (`cvvdp_dkl_sdr420`).
            unsafe {
                if sdr420(&src, &photometry) {
                    k.cvvdp_dkl_sdr420(stream, cfg, src, photometry, out, halves)
                } else {
                    k.cvvdp_dkl(stream, cfg, src, photometry, out, halves)
                }
            }?;
        }
        if !fuse {
            self.lanes[li].written.record(stream)?;
        }
        // SAFETY: the history's frames were written by the launches above and before, but
        // the newest where `fuse`, whose pointers were validated as above.
        unsafe {
            if first {
                self.pass(gpu, li, true, None)?;
            }
            self.pass(gpu, li, false, fuse.then_some(&sources))?;
            // One lane with a heat map: the metric's stream.
            self.collapse_heat(gpu)?;
            let lane = &self.lanes[li];
            self.host.copy_in(lane.sums.ptr(), SUMS, lane.stream(gpu))?;
        }
        self.pushed += 1;
        Ok(first)
    }

    /// With a heat map: the video pass's band heats collapsed from the base band up, made
    /// the reference's `raw` map at full size, and its hand-out queued (`crate::map::device`).
    ///
    /// # Safety
    /// The video pass's band heats were written by work queued before on the stream.
    unsafe fn collapse_heat(&mut self, gpu: &Gpu) -> Result<(), DriverError> {
        let Some((planes, handout)) = &mut self.heat else {
            return Ok(());
        };
        let (k, stream) = (&gpu.kernels, &gpu.stream);
        let per_pixel = |(w, h): (u32, u32)| LaunchConfig {
            grid_dim: (w.div_ceil(BLOCK_X), h.div_ceil(BLOCK_Y), 1),
            block_dim: (BLOCK_X, BLOCK_Y, 1),
            shared_mem_bytes: 0,
        };
        let plane = |b: usize| {
            let (width, height) = self.sizes[b];
            Planes {
                base: self.arena.ptr_at(planes[b]),
                stride: width as u64 * height as u64,
                width,
                height,
            }
        };
        let (a, e) = pool::jod_constants();
        // SAFETY: every band's heat plane lies in the arena at its band's size.
        unsafe {
            for b in (0..self.sizes.len() - 1).rev() {
                k.cvvdp_heat_up(stream, per_pixel(self.sizes[b]), plane(b + 1), plane(b))?;
            }
            k.cvvdp_heat_jod(stream, per_pixel(self.sizes[0]), plane(0), a, e)?;
            handout.copy_in(gpu, stream, self.arena.ptr_at(planes[0]))
        }
    }

    /// The per-frame value of a pass from its sums.
    fn frame(&self, sums: &[f64], channels: usize) -> f32 {
        let q: Vec<Vec<f32>> = (0..channels)
            .map(|c| {
                self.sizes
                    .iter()
                    .enumerate()
                    .map(|(b, &(w, h))| {
                        pool::spatial_of_sum(sums[b * BAND_CHANNELS + c], w as usize * h as usize)
                    })
                    .collect()
            })
            .collect();
        pool::frame(&q)
    }
}

impl Drop for CvvdpCuda {
    fn drop(&mut self) {
        // The buffers are freed on the metric's stream: after the branch's work too.
        for b in self.lanes.iter().filter_map(|l| l.branch.as_ref()) {
            let _ = b.join_into(&self.stream);
        }
    }
}

impl crate::metric::temporal::Sequenced for CvvdpCuda {
    fn finish(&mut self, _plan: &Plan, _late: &mut [Scores]) {
        self.restart();
    }

    fn reset(&mut self) {
        self.restart();
    }
}

impl CudaMetric for CvvdpCuda {
    fn queue(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
        uploaded: Option<&CudaEvent>,
    ) -> Result<(), EngineError> {
        match self.launch(gpu, plan, r, d, uploaded) {
            Ok(first) => {
                self.queued.push_back(first);
                Ok(())
            }
            Err(e) => {
                self.restart();
                Err(EngineError::Cuda(format!("running cvvdp: {e}")))
            }
        }
    }

    fn drop_queued(&mut self) {
        self.restart();
    }

    fn read(&mut self, _plan: &Plan, scores: &mut Scores) -> Result<(), EngineError> {
        let Some(first) = self.queued.pop_front() else {
            return Err(EngineError::Unsupported(
                "cvvdp: no pair queued to read".into(),
            ));
        };
        let mut sums = [0f64; SUMS];
        match self.host.take(SUMS) {
            Ok(s) => sums.copy_from_slice(s),
            Err(e) => {
                self.restart();
                return Err(EngineError::Cuda(format!("running cvvdp: {e}")));
            }
        };
        let video = self.frame(&sums[..PASS_SUMS], BAND_CHANNELS);
        let image = first.then(|| self.frame(&sums[PASS_SUMS..], 3));
        if first {
            // A sequence's first pair (its image pass): its pooling starts here.
            self.running = Running::default();
        }
        let step = self.running.push(image, video);
        super::push(&step, scores);
        if let Some((_, handout)) = &mut self.heat {
            match handout.take() {
                Ok(map) => scores.set_map(map),
                Err(e) => {
                    self.restart();
                    return Err(EngineError::Cuda(format!("reading the cvvdp map: {e}")));
                }
            }
        }
        Ok(())
    }
}

/// [`CvvdpCuda`] with the windows' second instance ([`super::Shadowing`]): made on the
/// metric's stream at the first window that needs it (its own history and buffers, as much
/// device memory again), it takes the pairs the shadowing gives it, after the main
/// instance's work for the same pair; its terms are the pair's window terms.
pub(super) struct Windowed {
    main: CvvdpCuda,
    shadow: Option<CvvdpCuda>,
    display: String,
    shadowing: super::Shadowing,
    /// Whether each pair queued and not read went to the shadow too.
    shadowed: VecDeque<bool>,
}

impl Windowed {
    pub(super) fn new(main: CvvdpCuda, display: &str) -> Windowed {
        Windowed {
            main,
            shadow: None,
            display: display.to_string(),
            shadowing: super::Shadowing::default(),
            shadowed: VecDeque::new(),
        }
    }

    fn restart(&mut self) {
        self.main.restart();
        if let Some(s) = &mut self.shadow {
            s.restart();
        }
        self.shadowing.clear();
        self.shadowed.clear();
    }
}

impl crate::metric::temporal::Sequenced for Windowed {
    fn finish(&mut self, _plan: &Plan, _late: &mut [Scores]) {
        self.restart();
    }

    fn reset(&mut self) {
        self.restart();
    }

    fn window_start(&mut self) {
        self.shadowing.start();
    }
}

impl CudaMetric for Windowed {
    fn queue(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
        uploaded: Option<&CudaEvent>,
    ) -> Result<(), EngineError> {
        let to_shadow = self
            .shadowing
            .next(self.main.pushed == 0, self.main.len as usize);
        self.main.queue(gpu, plan, r, d, uploaded)?;
        let took = match to_shadow {
            None => false,
            Some(restart) => {
                if self.shadow.is_none() {
                    let model =
                        cpu::model(plan, &self.display).map_err(EngineError::Unsupported)?;
                    // The shadow's map would be the window's: the pair's is the main one's.
                    // One lane: the window's pairs are a share of the main instance's work,
                    // not worth another set of pyramids.
                    let made = CvvdpCuda::new(gpu, plan, model, false, 1).map_err(|e| {
                        EngineError::Cuda(format!("making cvvdp's window instance: {e}"))
                    })?;
                    self.shadow = Some(made);
                }
                let shadow = self.shadow.as_mut().expect("made above");
                if restart {
                    shadow.start_sequence();
                }
                shadow.queue(gpu, plan, r, d, uploaded)?;
                true
            }
        };
        self.shadowed.push_back(took);
        Ok(())
    }

    fn drop_queued(&mut self) {
        self.restart();
    }

    fn read(&mut self, plan: &Plan, scores: &mut Scores) -> Result<(), EngineError> {
        let Some(took) = self.shadowed.pop_front() else {
            return Err(EngineError::Unsupported(
                "cvvdp: no pair queued to read".into(),
            ));
        };
        self.main.read(plan, scores)?;
        if took {
            let mut own = Scores::new();
            self.shadow
                .as_mut()
                .expect("the shadow took the pair")
                .read(plan, &mut own)?;
            if let Some((_, t)) = own.pool_terms().find(|(f, _)| *f == super::FIELD) {
                scores.push_window_terms(super::FIELD, t);
            }
        }
        Ok(())
    }
}
