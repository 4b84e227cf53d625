//! VMAF on the GPU: the kernel crate's functions as kernels, on the metric's stream. Per
//! pair: `vmaf_load` (luma to `u16`), per VIF scale `vmaf_vif_fused` (the vertical pass of
//! a tile in shared memory, the horizontal pass and the sums from there) and
//! `vmaf_vif_down`, and beside them on a side stream per ADM level `vmaf_adm_dwt` +
//! `vmaf_adm_decouple` + `vmaf_adm_rows` and the motion difference's blur and SAD (a
//! stream forked from the metric's, joined back with cudarc's `join`), then one copy of
//! the 53 integer sums; for the v1 models SpEED chroma's ([`SpeedChromaCuda`]) and CAMBI's
//! ([`CambiCuda`]) kernels, each on a stream of its own that starts after the pair's
//! uploads. A second model that differs only in its enhancement gain limits (`vmaf-neg`
//! beside `vmaf`) is measured in the same pass: `vmaf_vif_fused` adds its VIF sums too, and
//! ADM's decoupling and row sums run again with its limit, into a second block of sums.
//!
//! Every buffer is allocated once per plan (about 40 bytes per pixel); the sums are zeroed
//! by one memset per pair. What a pair writes before it reads (the distorted luma, the VIF
//! and ADM planes, the motion difference: all but about 4 bytes per pixel) lies in a
//! scratch arena that the engines of one context with the same frame size and model share
//! (`crate::cuda::scratch`); the reference lumas kept for motion are the engine's own.
//!
//! A pair's kernels and the copy of its sums are queued with the pair (`CudaFrames::queue`)
//! and read when it is completed (`CudaFrames::read`), so the host never waits for the
//! device between pairs in flight; with the side streams (the v1 models) a pair is queued
//! and read in one go when it is completed, as the side streams' results are read by
//! synchronising their streams and SpEED chroma keeps one pair's results (see `impl
//! CudaFrames for Vmaf`).

use cudarc::driver::result as cu;

use cudarc::driver::{CudaEvent, CudaSlice, DriverError, LaunchConfig};

use super::adm::{AdmOptions, adm_scale};
use super::model::Feature;
use super::speed::SpeedChromaCuda;
use super::{Frame, Sums, adm_sizes, frame_features, luma_bpc, vif_sizes};
use crate::cuda::scratch::{Key, Share};
use crate::cuda::{Branch, DevPtrMut, DeviceMemory, Gpu, Readback, zeroed};
use crate::error::EngineError;
use crate::frame::PlanePtrs;
use crate::metric::cambi::CambiCuda;
use crate::metric::temporal::{CudaFrames, Restart};
use crate::plan::Plan;
use gpumetrics_kernels::vmaf::{Plane, ROW_BLOCK, TILE, adm, vif};

/// u64 sums per pair: VIF 4×4, ADM 4×6, the SAD, then ADM's AIM 4×3 (at [`AIM`]).
const SUMS: usize = 16 + 24 + 1 + 12;
/// Where the AIM sums start (scale `s`'s h, v, d at `AIM + 3·s`).
const AIM: usize = 41;

pub(super) struct Vmaf {
    /// Owns the engine's own planes: `luma_ref`, `history`, the log2 table and `out`.
    _memory: CudaSlice<u8>,
    /// The arenas of the planes below whose addresses are offsets from an arena's start:
    /// `luma_dist`, the VIF and ADM planes, `motion_tmp`.
    scratch: Share,
    /// The pair's luma as `u16` (reference, the engine's own; distorted, in the arena).
    luma_ref: Plane,
    luma_dist: Plane,
    /// VIF images of scales 1..3 (reference, distorted).
    vif_images: Vec<[Plane; 2]>,
    log2: u64,
    adm_bands: Vec<Plane>,
    adm_maps: Plane,
    /// Motion: the vertical pass of the difference (`i32`), and the earlier reference lumas
    /// (the oldest first; as many as the model's motion distance), of which `held` are
    /// frames of this sequence. `luma_ref` and the history trade planes after each pair.
    motion_tmp: Plane,
    history: Vec<Plane>,
    held: usize,
    out: u64,
    /// The sums of each pair in flight, on the host.
    host_out: Readback<u64>,
    /// Per pair in flight, oldest first: whether its SAD was measured (a previous
    /// reference luma of its sequence was on the device).
    motions: std::collections::VecDeque<bool>,
    /// SpEED chroma of the pair, for the models that read it, on a stream of its own.
    speed: Option<(SpeedChromaCuda, Gpu)>,
    /// CAMBI of the distorted frame, for the models that read it, on a stream of its own.
    cambi: Option<(CambiCuda, Gpu)>,
    /// Recorded on the engine's stream when a pair's kernels are queued: where the side
    /// streams start (after the pair's uploads).
    ready: CudaEvent,
    /// With the side streams: the frames of the pairs queued, each measured in one go when
    /// it is read (see `impl CudaFrames for Vmaf`), and the lane they run on.
    deferred: std::collections::VecDeque<(PlanePtrs, PlanePtrs)>,
    lane: Option<Gpu>,
    /// The model (its gain limits parameterise the kernels).
    model: std::sync::Arc<super::Model>,
    /// ADM's options.
    adm: AdmOptions,
    /// A second model's VIF gain limit and ADM options, when it reads the same features
    /// but for its enhancement gain limits (`vmaf-neg` beside `vmaf`): VIF's filtering,
    /// ADM's wavelets and motion are computed once; `vmaf_vif_fused` computes its VIF terms
    /// beside the first model's, and ADM's `vmaf_adm_decouple` and `vmaf_adm_rows` run
    /// again with its limit, into a second block of sums after the first.
    second: Option<(f64, AdmOptions)>,
    /// Where ADM and motion run, beside VIF: forked after the pair's lumas are loaded,
    /// joined back before the copy of the sums.
    side: Branch,
}

impl Vmaf {
    pub(super) fn new(
        gpu: &Gpu,
        plan: &Plan,
        model: std::sync::Arc<super::Model>,
        cambi: &crate::metric::cambi::CambiSettings,
        second: Option<&super::Model>,
    ) -> Result<Option<Vmaf>, DriverError> {
        let second = second.map(|m| (m.vif_gain_limit, m.adm));
        let blocks = 1 + second.is_some() as usize;
        let stream = &gpu.stream;
        let (w, h) = (plan.reference.width, plan.reference.height);
        let vs = vif_sizes(w, h);
        let asz = adm_sizes(w, h);
        let n = |(w, h): (u32, u32)| w as u64 * h as u64;
        let distance = model.motion.distance();
        // The engine's own regions and the arena's, in bytes, each 256-byte aligned.
        let own: Vec<u64> = vec![
            2 * n(vs[0]),
            2 * distance as u64 * n(vs[0]),
            2 * vif::LOG2_LEN as u64,
            8 * (SUMS * blocks) as u64,
        ];
        let mut shared: Vec<u64> = vec![2 * n(vs[0])];
        shared.extend(vs[1..].iter().map(|&s| 2 * 2 * n(s)));
        shared.extend(asz.iter().map(|&s| 8 * 4 * n(s)));
        shared.push(adm::MAPS as u64 * 4 * n(asz[0]));
        shared.push(4 * n(vs[0]));
        let starts = |regions: &[u64], base: u64| {
            let mut at = base;
            let mut starts = Vec::new();
            for r in regions {
                starts.push(at);
                at += r.next_multiple_of(256);
            }
            (starts, at - base)
        };
        let (own_at, own_total) = starts(&own, 0);
        let memory = zeroed::<u8>(stream, own_total as usize)?;
        let own_at: Vec<u64> = own_at.iter().map(|a| memory.ptr() + a).collect();
        let (at, shared_total) = starts(&shared, 0);
        let key = Key {
            context: gpu.ctx.cu_ctx() as usize,
            metric: "vmaf",
            // The model's choices of kernels: VIF or not, ADM's scale 0 or not.
            layout: [
                w as u64,
                h as u64,
                model.generations().0 as u64 | (model.adm.skip_scale0 as u64) << 1,
            ],
            bytes: shared_total as usize,
        };
        let scratch = Share::join(gpu, key, &|_, _| Ok(()))?;
        let plane = |ptr: u64, (width, height): (u32, u32)| Plane {
            ptr,
            stride: width,
            width,
            height,
            _pad: 0,
        };
        let pair =
            |ptr: u64, s: (u32, u32), elem: u64| [plane(ptr, s), plane(ptr + elem * n(s), s)];
        let luma_ref = plane(own_at[0], vs[0]);
        let history = (0..distance as u64)
            .map(|k| plane(own_at[1] + 2 * k * n(vs[0]), vs[0]))
            .collect();
        let log2 = own_at[2];
        let out = own_at[3];
        let luma_dist = plane(at[0], vs[0]);
        let vif_images = (1..4).map(|i| pair(at[i], vs[i], 2)).collect();
        let adm_bands = (0..4).map(|i| plane(at[4 + i], asz[i])).collect();
        let adm_maps = plane(at[8], asz[0]);
        let motion_tmp = plane(at[9], vs[0]);
        let table = super::cpu::log2_table();
        // SAFETY: the region holds the table; `table` lives until the synchronisation below.
        unsafe { cu::memcpy_htod_async(log2, &table[..], stream.cu_stream()) }?;
        let host_out = Readback::new(&gpu.ctx, SUMS * blocks)?;
        // SpEED and CAMBI read only the pair: their own streams overlap them with ADM and
        // motion.
        // `check` refused the plans whose features cannot be made (`host::why_not`).
        let speed = if model.reads(Feature::SpeedChromaUv) {
            let lane = gpu.fork()?;
            let Ok(s) = SpeedChromaCuda::new(&lane, plan, model.speed) else {
                return Ok(None);
            };
            lane.stream.synchronize()?;
            Some((s, lane))
        } else {
            None
        };
        let cambi = if model.reads(Feature::Cambi) {
            let lane = gpu.fork()?;
            match CambiCuda::new(&lane, &plan.distorted, cambi)? {
                Ok(c) => Some((c, lane)),
                Err(_) => return Ok(None),
            }
        } else {
            None
        };
        stream.synchronize()?;
        Ok(Some(Vmaf {
            _memory: memory,
            scratch,
            luma_ref,
            luma_dist,
            vif_images,
            log2,
            adm_bands,
            adm_maps,
            motion_tmp,
            history,
            held: 0,
            out,
            host_out,
            motions: std::collections::VecDeque::new(),
            adm: model.adm,
            second,
            speed,
            cambi,
            ready: gpu.ctx.new_event(None)?,
            deferred: std::collections::VecDeque::new(),
            lane: None,
            model,
            side: Branch::new(&gpu.stream)?,
        }))
    }

    /// Queues the pipeline for one pair and the copy of its sums and SAD.
    fn launch(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
    ) -> Result<(), DriverError> {
        let (k, stream, side) = (&gpu.kernels, &gpu.stream, &self.side.stream);
        let (w, h) = (plan.reference.width, plan.reference.height);
        let bpc = luma_bpc(plan);
        let tiles = |w: u32, h: u32| LaunchConfig {
            grid_dim: (w.div_ceil(TILE), h.div_ceil(TILE), 1),
            block_dim: (TILE, TILE, 1),
            shared_mem_bytes: 0,
        };
        let rows = |h: u32| LaunchConfig {
            grid_dim: (h, 1, 1),
            block_dim: (ROW_BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let out = |i: usize| DevPtrMut::<u64>::from_raw(self.out + 8 * i as u64);
        let luma = plan.psnr_planes(r, d).pairs[0];
        let vs = vif_sizes(w, h);
        let asz = adm_sizes(w, h);
        let distance = self.history.len();
        let measure_motion = self.held == distance;
        let lease = self.scratch.borrow(stream)?;
        let at = |p: Plane| Plane {
            ptr: lease.base() + p.ptr,
            ..p
        };
        let lumas = [self.luma_ref, at(self.luma_dist)];
        let vif_image = |i: usize| {
            let [r, d] = self.vif_images[i];
            [at(r), at(d)]
        };
        let adm_band = |i: usize| at(self.adm_bands[i]);
        let adm_maps = at(self.adm_maps);
        let motion_tmp = at(self.motion_tmp);
        // SAFETY: the frame pointers were validated against the plan's layouts (or are the
        // backend's upload buffers); every plane was allocated for this plan in `new`, and
        // the kernels of one pair run in stream order.
        unsafe {
            cu::memset_d8_async(self.out, 0, 8 * self.sums_len(), stream.cu_stream())?;
            k.vmaf_load(
                stream,
                tiles(w, h),
                luma.reference,
                luma.distorted,
                lumas[0],
                lumas[1],
            )?;
            // VIF on the stream, ADM and motion on the side stream: the three read the
            // loaded lumas and write planes and sums of their own, and ADM's coarse
            // levels and row sums are small grids that leave the device room.
            self.side.start_after(stream)?;
            // VIF, for the models that read it (not the v1 models).
            let vif_scales = if self.model.generations().0 { 4 } else { 0 };
            for (scale, &(sw, sh)) in vs.iter().enumerate().take(vif_scales) {
                let [r, d] = if scale == 0 {
                    lumas
                } else {
                    vif_image(scale - 1)
                };
                let s = vif::VifScale {
                    reference: r,
                    distorted: d,
                    // The fused kernel keeps the vertical pass in shared memory.
                    tmp: Plane::default(),
                    log2: self.log2,
                    gain_limit: self.model.vif_gain_limit,
                    scale: scale as u32,
                    bpc,
                };
                let fused = LaunchConfig {
                    grid_dim: (sw.div_ceil(vif::FUSED_W), sh.div_ceil(vif::FUSED_H), 1),
                    block_dim: (vif::FUSED_THREADS, 1, 1),
                    shared_mem_bytes: 0,
                };
                let (second, out2) = match self.second {
                    Some((gain_limit, _)) => (gain_limit, out(SUMS + 4 * scale)),
                    None => (0.0, DevPtrMut::null()),
                };
                k.vmaf_vif_fused(stream, fused, s, second, out(4 * scale), out2)?;
                if scale < 3 {
                    let [nr, nd] = vif_image(scale);
                    k.vmaf_vif_down(stream, tiles(nr.width, nr.height), s, nr, nd)?;
                }
            }
            for (scale, &(bw, bh)) in asz.iter().enumerate() {
                let bands = adm_band(scale);
                let dwt = if scale == 0 {
                    adm::Dwt {
                        src_ref: lumas[0],
                        src_dis: lumas[1],
                        bands,
                        scale: 0,
                        bpc,
                    }
                } else {
                    let p = adm_band(scale - 1);
                    adm::Dwt {
                        src_ref: p.nth::<i32>(adm::BAND_A),
                        src_dis: p.nth::<i32>(adm::DIS + adm::BAND_A),
                        bands,
                        scale: scale as u32,
                        bpc,
                    }
                };
                k.vmaf_adm_dwt(side, tiles(bw, bh), dwt)?;
                if scale == 0 && self.adm.skip_scale0 {
                    continue;
                }
                let s = adm::Scale {
                    bands,
                    maps: Plane {
                        stride: bw,
                        width: bw,
                        height: bh,
                        ..adm_maps
                    },
                    ..adm_scale(&self.adm, scale)
                };
                k.vmaf_adm_decouple(side, tiles(bw, bh), s)?;
                k.vmaf_adm_rows(side, rows(bh), s, out(16 + 6 * scale), out(AIM + 3 * scale))?;
                if let Some((_, adm)) = &self.second {
                    // The maps are rewritten after the first model's rows read them.
                    let s = adm::Scale {
                        bands: s.bands,
                        maps: s.maps,
                        ..adm_scale(adm, scale)
                    };
                    let (o, a) = (SUMS + 16 + 6 * scale, SUMS + AIM + 3 * scale);
                    k.vmaf_adm_decouple(side, tiles(bw, bh), s)?;
                    k.vmaf_adm_rows(side, rows(bh), s, out(o), out(a))?;
                }
            }
            if measure_motion {
                let (prev, cur) = (self.history[0], lumas[0]);
                k.vmaf_motion_diff_y(side, tiles(w, h), prev, cur, motion_tmp, bpc)?;
                k.vmaf_motion_sad(side, rows(h), motion_tmp, out(40))?;
            }
            // The sums are copied once VIF, ADM and motion are done (and the next pair's
            // load, on the stream, waits for this pair's motion, which reads the plane it
            // writes).
            self.side.join_into(stream)?;
            self.host_out.copy_in(self.out, self.sums_len(), stream)?;
        }
        // The arena is free for the next engine once the sums are added up.
        lease.end()?;
        self.motions.push_back(measure_motion);
        // This pair's luma joins the history; the oldest plane takes its place (the next
        // pair's kernels, queued after these, write it).
        let oldest = self.history.remove(0);
        self.history
            .push(std::mem::replace(&mut self.luma_ref, oldest));
        self.held = (self.held + 1).min(distance);
        Ok(())
    }

    /// The u64 values a pair's sums take: one block per model measured.
    fn sums_len(&self) -> usize {
        SUMS * (1 + self.second.is_some() as usize)
    }

    /// Waits for the oldest pair queued and gives its sums (the second model's too, when
    /// there is one) and SAD.
    fn sums(&mut self) -> Result<(Sums, Option<Sums>, Option<u64>), DriverError> {
        let measured_motion = self.motions.pop_front().unwrap_or(false);
        let len = self.sums_len();
        let host = self.host_out.take(len)?;
        let block = |host: &[u64]| {
            let mut sums = Sums::default();
            for scale in 0..4 {
                for i in 0..4 {
                    sums.vif[scale][i] = host[4 * scale + i] as i64;
                }
                for i in 0..6 {
                    sums.adm[scale][i] = host[16 + 6 * scale + i] as i64;
                }
                for i in 0..3 {
                    sums.adm_aim[scale][i] = host[AIM + 3 * scale + i] as i64;
                }
            }
            sums
        };
        let second = (len > SUMS).then(|| block(&host[SUMS..]));
        let sad = measured_motion.then_some(host[40]);
        Ok((block(host), second, sad))
    }

    /// The oldest pair's features without the side streams: the model's, and the second
    /// model's when there is one.
    fn read_frames(&mut self, plan: &Plan) -> Result<(Frame, Option<Frame>), EngineError> {
        if self.host_out.queued() == 0 {
            return Err(EngineError::Unsupported(
                "vmaf: no pair queued to read".into(),
            ));
        }
        let (sums, second, sad) = self
            .sums()
            .map_err(|e| EngineError::Cuda(format!("running vmaf: {e}")))?;
        let (w, h) = (plan.reference.width, plan.reference.height);
        let motion = self.model.motion.score(sad, w, h);
        let first = frame_features(plan, &sums, motion, &self.adm);
        let second = match (second, &self.second) {
            (Some(sums), Some((_, adm))) => Some(frame_features(plan, &sums, motion, adm)),
            _ => None,
        };
        Ok((first, second))
    }

    /// Whether a pair's work is read by synchronising side streams (SpEED chroma, CAMBI),
    /// so that it is queued and read in one go.
    fn has_lanes(&self) -> bool {
        self.speed.is_some() || self.cambi.is_some()
    }
}

/// A pair's features; the window (`super::Settings`) holds them for motion2.
///
/// Without the side streams (the v0 models) `queue` queues a pair's kernels and the copy
/// of its sums, and `read` reads them: the host never waits for the device between pairs
/// in flight. With them ([`Vmaf::has_lanes`]: SpEED chroma, CAMBI), SpEED chroma keeps one
/// pair's host results ([`SpeedChromaCuda::finish`] reads the last pair queued), which the
/// next pair's copy would overwrite before this pair is read; so `queue` keeps the pair's
/// frames (valid until the backend completes the pair) and `read` queues and reads that
/// pair in one go, synchronising the side streams: the launches, copies, events and
/// synchronisations of the pairs measured as before this change, in the same order on
/// the same streams, while the other metrics keep their pairs in flight.
impl CudaFrames for Vmaf {
    type Frame = Frame;

    fn queue(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
    ) -> Result<(), EngineError> {
        if self.has_lanes() {
            if self.lane.is_none() {
                self.lane = Some(Gpu {
                    ctx: gpu.ctx.clone(),
                    stream: gpu.stream.clone(),
                    kernels: gpu.kernels.clone(),
                });
            }
            self.deferred.push_back((*r, *d));
            return Ok(());
        }
        self.launch(gpu, plan, r, d)
            .map_err(|e| EngineError::Cuda(format!("running vmaf: {e}")))
    }

    fn drop_queued(&mut self) {
        self.host_out.clear();
        self.motions.clear();
        self.deferred.clear();
    }

    fn read(&mut self, plan: &Plan) -> Result<Frame, EngineError> {
        if !self.has_lanes() {
            return Ok(self.read_frames(plan)?.0);
        }
        let (Some((r, d)), Some(gpu)) = (self.deferred.pop_front(), self.lane.take()) else {
            return Err(EngineError::Unsupported(
                "vmaf: no pair queued to read".into(),
            ));
        };
        let measured = self.measure_with_lanes(&gpu, plan, &r, &d);
        self.lane = Some(gpu);
        measured
    }
}

impl Vmaf {
    /// One pair with the side streams, queued and read in one go (see above).
    fn measure_with_lanes(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
    ) -> Result<Frame, EngineError> {
        let failed = |e: DriverError| EngineError::Cuda(format!("running vmaf: {e}"));
        // The side streams start after the pair's uploads, queued on the engine's stream.
        self.ready
            .record(&gpu.stream)
            .map_err(|e| EngineError::Cuda(format!("ordering vmaf's streams: {e}")))?;
        let ordered = |lane: &Gpu, ready: &CudaEvent| {
            lane.stream
                .wait(ready)
                .map_err(|e| EngineError::Cuda(format!("ordering vmaf's streams: {e}")))
        };
        if let Some((s, lane)) = &mut self.speed {
            ordered(lane, &self.ready)?;
            s.queue(lane, r, d)?;
        }
        if let Some((c, lane)) = &mut self.cambi {
            ordered(lane, &self.ready)?;
            // One frame at a time here: nothing of an earlier, failed frame is read.
            c.clear();
            c.queue(lane, d)?;
        }
        self.launch(gpu, plan, r, d).map_err(failed)?;
        let (sums, _, sad) = self.sums().map_err(failed)?;
        let (w, h) = (plan.reference.width, plan.reference.height);
        let motion = self.model.motion.score(sad, w, h);
        let mut f = frame_features(plan, &sums, motion, &self.adm);
        // The side streams end before the next pair's uploads may overwrite their inputs.
        let done = |lane: &Gpu| {
            lane.stream
                .synchronize()
                .map_err(|e| EngineError::Cuda(format!("running vmaf's features: {e}")))
        };
        if let Some((s, lane)) = &mut self.speed {
            done(lane)?;
            f.speed_chroma_uv = s.finish();
        }
        if let Some((c, lane)) = &mut self.cambi {
            done(lane)?;
            f.cambi = c.finish()?;
        }
        Ok(f)
    }
}

/// A [`Vmaf`] with a second model (its `second`): both models' features of each pair, for
/// [`super::Both`].
pub(super) struct Shared(pub(super) Vmaf);

impl CudaFrames for Shared {
    type Frame = [Frame; 2];

    fn queue(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
    ) -> Result<(), EngineError> {
        self.0
            .launch(gpu, plan, r, d)
            .map_err(|e| EngineError::Cuda(format!("running vmaf: {e}")))
    }

    fn drop_queued(&mut self) {
        self.0.drop_queued();
    }

    fn read(&mut self, plan: &Plan) -> Result<[Frame; 2], EngineError> {
        match self.0.read_frames(plan)? {
            (first, Some(second)) => Ok([first, second]),
            (_, None) => Err(EngineError::Unsupported(
                "vmaf: the second model's features were not measured".into(),
            )),
        }
    }
}

impl Restart for Shared {
    fn restart(&mut self) {
        self.0.restart();
    }
}

impl Restart for Vmaf {
    /// The next pair's motion is measured against nothing (a new sequence).
    fn restart(&mut self) {
        self.held = 0;
    }
}
