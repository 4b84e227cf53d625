//! VMAF on the CPU: the kernel crate's per-pixel and per-row functions over host buffers
//! (allocated once per plan), rows in parallel with rayon.

use rayon::prelude::*;

use std::collections::VecDeque;

use super::adm::{AdmOptions, adm_scale};
use super::host::HostFeatures;
use super::{Frame, Sums, adm_sizes, frame_features, luma_bpc, vif_sizes};
use crate::frame::PlanePtrs;
use crate::metric::temporal::{CpuFrames, Restart};
use crate::plan::Plan;
use gpumetrics_kernels::vmaf::{self as k, Plane, adm, motion, vif};

/// A plane over a host buffer.
fn plane<T>(buf: &[T], offset: usize, width: u32, height: u32) -> Plane {
    debug_assert!(offset + width as usize * height as usize <= buf.len());
    Plane {
        ptr: buf[offset..].as_ptr() as u64,
        stride: width,
        width,
        height,
        _pad: 0,
    }
}

/// Runs `f(x, y)` for every pixel of a w×h grid, rows in parallel.
fn for_each_pixel(w: u32, h: u32, f: impl Fn(u32, u32) + Sync) {
    (0..h).into_par_iter().for_each(|y| {
        for x in 0..w {
            f(x, y)
        }
    });
}

pub(super) struct Vmaf {
    /// Reference and distorted luma as `u16`.
    luma: [Vec<u16>; 2],
    /// VIF scales 1..3 (reference, distorted), each its own buffer.
    vif_images: Vec<[Vec<u16>; 2]>,
    /// The vertical pass's five planes (sized for scale 0).
    vif_tmp: Vec<u32>,
    /// ADM's buffers and options.
    pub(super) adm: Adm,
    /// Motion: the vertical pass of the difference, and the earlier reference lumas (the
    /// oldest first; as many as the model's motion distance), of which `held` are frames of
    /// this sequence.
    motion_tmp: Vec<i32>,
    history: VecDeque<Vec<u16>>,
    held: usize,
    log2: Vec<u16>,
    /// SpEED chroma and CAMBI, for the models that read them.
    host: Option<HostFeatures>,
    /// The model (its gain limits parameterise the kernels).
    model: std::sync::Arc<super::Model>,
}

/// ADM on the host: its bands per level (8 planes), the maps of one level ([`adm::MAPS`]
/// planes, sized for level 0), and its options.
pub(super) struct Adm {
    bands: Vec<Vec<i32>>,
    maps: Vec<i32>,
    pub(super) options: AdmOptions,
}

impl Adm {
    /// Buffers for w×h frames.
    pub(super) fn new(w: u32, h: u32, options: AdmOptions) -> Adm {
        let bands = adm_sizes(w, h)
            .iter()
            .map(|&(w, h)| vec![0; 8 * w as usize * h as usize])
            .collect();
        let (bw, bh) = adm_sizes(w, h)[0];
        Adm {
            bands,
            maps: vec![0; adm::MAPS as usize * bw as usize * bh as usize],
            options,
        }
    }

    /// ADM's sums (`sums.adm`, `sums.adm_aim`) of a pair of w×h `bpc`-bit lumas (buffers of
    /// w·h samples; w and h those of [`Adm::new`]).
    pub(super) fn sums(&self, luma: &[Vec<u16>; 2], w: u32, h: u32, bpc: u32, sums: &mut Sums) {
        debug_assert!(luma.iter().all(|l| l.len() >= w as usize * h as usize));
        let sizes = adm_sizes(w, h);
        for scale in 0..4 {
            let (bw, bh) = sizes[scale];
            let bands = plane(&self.bands[scale], 0, bw, bh);
            let dwt = if scale == 0 {
                adm::Dwt {
                    src_ref: plane(&luma[0], 0, w, h),
                    src_dis: plane(&luma[1], 0, w, h),
                    bands,
                    scale: 0,
                    bpc,
                }
            } else {
                let (pw, ph) = sizes[scale - 1];
                let prev = plane(&self.bands[scale - 1], 0, pw, ph);
                adm::Dwt {
                    src_ref: prev.nth::<i32>(adm::BAND_A),
                    src_dis: prev.nth::<i32>(adm::DIS + adm::BAND_A),
                    bands,
                    scale: scale as u32,
                    bpc,
                }
            };
            // SAFETY: bands and maps are buffers of this struct sized for the level.
            for_each_pixel(bw, bh, |x, y| unsafe { adm::dwt_store(&dwt, x, y) });
            if scale == 0 && self.options.skip_scale0 {
                continue;
            }
            let s = adm::Scale {
                bands,
                maps: plane(&self.maps, 0, bw, bh),
                ..adm_scale(&self.options, scale)
            };
            for_each_pixel(bw, bh, |x, y| unsafe { adm::decouple_store(&s, x, y) });
            let total = (0..bh)
                .into_par_iter()
                .map(|y| unsafe { adm::row(&s, y) })
                .reduce(adm::RowSums::default, |a, b| adm::RowSums {
                    num: std::array::from_fn(|k| a.num[k].wrapping_add(b.num[k])),
                    den: std::array::from_fn(|k| a.den[k].wrapping_add(b.den[k])),
                    aim: std::array::from_fn(|k| a.aim[k].wrapping_add(b.aim[k])),
                });
            for k in 0..3 {
                sums.adm[scale][k] = total.num[k];
                sums.adm[scale][3 + k] = total.den[k] as i64;
                sums.adm_aim[scale][k] = total.aim[k];
            }
        }
    }
}

/// libvmaf's `log_generate` table for the indices it reads (see `vif::LOG2_LEN`).
pub(super) fn log2_table() -> Vec<u16> {
    (0..vif::LOG2_LEN as u32)
        .map(|i| {
            let v = (i + vif::LOG2_BASE) as f64;
            ((v.log2() as f32 * 2048.0) as f64).round() as u16
        })
        .collect()
}

impl Vmaf {
    pub(super) fn new(
        plan: &Plan,
        model: std::sync::Arc<super::Model>,
        cambi: &crate::metric::cambi::CambiSettings,
    ) -> Result<Vmaf, String> {
        let (w, h) = (plan.reference.width, plan.reference.height);
        let n = w as usize * h as usize;
        let vif_images = vif_sizes(w, h)[1..]
            .iter()
            .map(|&(w, h)| {
                let n = w as usize * h as usize;
                [vec![0; n], vec![0; n]]
            })
            .collect();
        Ok(Vmaf {
            luma: [vec![0; n], vec![0; n]],
            vif_images,
            vif_tmp: vec![0; 5 * n],
            motion_tmp: vec![0; n],
            history: (0..model.motion.distance()).map(|_| vec![0; n]).collect(),
            held: 0,
            log2: log2_table(),
            adm: Adm::new(w, h, model.adm),
            host: HostFeatures::new(plan, &model, cambi)?,
            model,
        })
    }

    /// The integer sums and the SAD to the previous blurred reference of one pair whose
    /// luma is in `self.luma`.
    fn sums(&mut self, plan: &Plan) -> (Sums, Option<u64>) {
        let (w, h) = (plan.reference.width, plan.reference.height);
        let bpc = luma_bpc(plan);
        let mut sums = Sums::default();

        // VIF, for the models that read it (not the v1 models).
        let vif_scales = if self.model.generations().0 { 4 } else { 0 };
        let vs = vif_sizes(w, h);
        for scale in 0..vif_scales {
            let (sw, sh) = vs[scale];
            let (r, d) = if scale == 0 {
                (&self.luma[0], &self.luma[1])
            } else {
                let im = &self.vif_images[scale - 1];
                (&im[0], &im[1])
            };
            let s = vif::VifScale {
                reference: plane(r, 0, sw, sh),
                distorted: plane(d, 0, sw, sh),
                tmp: plane(&self.vif_tmp, 0, sw, sh),
                log2: self.log2.as_ptr() as u64,
                gain_limit: self.model.vif_gain_limit,
                scale: scale as u32,
                bpc,
            };
            // SAFETY: every plane lies in a buffer of this struct sized for it; the tmp
            // planes are written one pixel per call, then read.
            for_each_pixel(sw, sh, |x, y| unsafe { vif::vertical_store(&s, x, y) });
            let rows: Vec<vif::Sums> = (0..sh)
                .into_par_iter()
                .map(|y| {
                    let mut acc = vif::Sums::default();
                    for x in 0..sw {
                        acc.add(&unsafe { vif::pixel(&s, x, y) });
                    }
                    acc
                })
                .collect();
            let mut total = vif::Sums::default();
            rows.iter().for_each(|r| total.add(r));
            sums.vif[scale] = total.to_array();
            if scale < 3 {
                let (nw, nh) = vs[scale + 1];
                let im = &self.vif_images[scale];
                let (nr, nd) = (plane(&im[0], 0, nw, nh), plane(&im[1], 0, nw, nh));
                // SAFETY: as above; the next scale's images are other buffers.
                for_each_pixel(nw, nh, |x, y| unsafe {
                    let (a, b) = vif::down(&s, x, y);
                    nr.set::<u16>(x, y, a);
                    nd.set::<u16>(x, y, b);
                });
            }
        }

        // ADM.
        self.adm.sums(&self.luma, w, h, bpc, &mut sums);

        // Motion: against the reference frame `distance` pairs back, once there is one; the
        // current luma then joins the history (its buffer swapped, not copied).
        let distance = self.history.len();
        let sad = (self.held == distance).then(|| {
            let prev = plane(&self.history[0], 0, w, h);
            let cur = plane(&self.luma[0], 0, w, h);
            let tmp = plane(&self.motion_tmp, 0, w, h);
            // SAFETY: three distinct buffers of the frame's size.
            for_each_pixel(w, h, |x, y| unsafe {
                tmp.set::<i32>(x, y, motion::diff_y(&prev, &cur, x, y, bpc))
            });
            (0..h)
                .into_par_iter()
                .map(|y| unsafe { motion::sad_row(&tmp, y) })
                .sum::<u64>()
        });
        let oldest = self
            .history
            .pop_front()
            .expect("a motion distance of 1 or 2");
        self.history
            .push_back(std::mem::replace(&mut self.luma[0], oldest));
        self.held = (self.held + 1).min(distance);
        (sums, sad)
    }
}

/// A pair's features; the window (`super::Settings`) holds them for motion2.
impl CpuFrames for Vmaf {
    type Frame = Frame;

    fn frame(&mut self, plan: &Plan, r: &PlanePtrs, d: &PlanePtrs) -> Frame {
        let (w, h) = (plan.reference.width, plan.reference.height);
        let luma = plan.psnr_planes(r, d).pairs[0];
        let (rc, dc) = (luma.reference, luma.distorted);
        let (out_r, out_d) = (plane(&self.luma[0], 0, w, h), plane(&self.luma[1], 0, w, h));
        // SAFETY: the backend validated both frames against the plan's layouts; the outputs
        // are this struct's frame-sized buffers.
        for_each_pixel(w, h, |x, y| unsafe {
            k::load(&rc, &out_r, x, y, rc.max);
            k::load(&dc, &out_d, x, y, rc.max);
        });
        let (sums, sad) = self.sums(plan);
        let motion = self.model.motion.score(sad, w, h);
        let mut f = frame_features(plan, &sums, motion, &self.adm.options);
        if let Some(host) = &mut self.host {
            host.measure(r, d, &mut f);
        }
        f
    }
}

impl Restart for Vmaf {
    /// The next pair's motion is measured against nothing (a new sequence).
    fn restart(&mut self) {
        self.held = 0;
    }
}
