//! Butteraugli on the CPU: the kernel crate's per-pixel functions over rows in parallel
//! (rayon), stage after stage as on the GPU, on level buffers allocated once per plan.

use rayon::prelude::*;

use super::{STEPS, Step, filters, level_len, level_sizes, params, plane_lens};
use crate::frame::PlanePtrs;
use crate::map::kind::{DistortionMap, MapKind};
use crate::metric::CpuMetric;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::butteraugli::pixel;
use gpumetrics_kernels::butteraugli::{Level, Params, REDUCE_VALUES, Taps, filter};

pub(super) struct Butteraugli {
    /// Owns the memory the levels point into (planes, then padded planes, per level).
    _buffers: Vec<Vec<f32>>,
    levels: Vec<Level>,
    params: Params,
    upsampling: crate::color::ChromaUpsampling,
    taps: [Taps; filter::COUNT],
}

impl Butteraugli {
    pub(super) fn new(plan: &Plan, settings: &super::Settings) -> Butteraugli {
        let mut buffers = Vec::new();
        let mut levels = Vec::new();
        for (w, h) in level_sizes(plan) {
            let (planes, padded) = level_len(w, h);
            let (plane_len, padded_len) = plane_lens(w, h);
            let mut buf = vec![0.0f32; planes + padded];
            let base = buf.as_mut_ptr() as u64;
            levels.push(Level {
                base,
                padded: base + planes as u64 * 4,
                width: w,
                height: h,
                plane_len,
                padded_len,
                ..Level::default()
            });
            buffers.push(buf);
        }
        Butteraugli {
            _buffers: buffers,
            levels,
            params: params(settings.intensity),
            upsampling: settings.upsampling,
            taps: filters(),
        }
    }
}

/// Runs `f(z, x, y)` for every pixel of `lv` and every `z` below `count`, rows in parallel.
fn for_each_pixel(lv: &Level, count: u32, f: impl Fn(u32, u32, u32) + Sync) {
    let (w, h) = (lv.width, lv.height);
    (0..count * h).into_par_iter().for_each(|row| {
        let (z, y) = (row / h, row % h);
        for x in 0..w {
            f(z, x, y);
        }
    });
}

// SAFETY (for every `unsafe` call below): the levels were allocated for this plan with
// every plane the pixel functions address; the frame sources were validated against the
// plan's layouts; each pixel function writes only its own pixel of its output planes, and
// a stage reads only planes that earlier stages finished.
/// No pairs held back.
impl crate::metric::temporal::Sequenced for Butteraugli {}

impl CpuMetric for Butteraugli {
    fn measure(&mut self, plan: &Plan, r: &PlanePtrs, d: &PlanePtrs, scores: &mut Scores) {
        let (rs, ds) = plan.color_sources(r, d, self.upsampling);
        let (levels, prm, taps) = (&self.levels, &self.params, self.taps.as_ptr() as u64);
        let taps = || taps as *const Taps;
        let full = levels[0];
        for_each_pixel(&full, 2, |img, x, y| {
            let src = if img == 0 { &rs } else { &ds };
            unsafe { pixel::linearize(src, &full, img, x, y) }
        });
        if let Some(half) = levels.get(1) {
            for_each_pixel(half, 6, |p, x, y| unsafe {
                pixel::downsample(&full, half, p, x, y)
            });
        }
        for lv in levels {
            for (step, count) in STEPS {
                for_each_pixel(lv, count, |z, x, y| unsafe {
                    match step {
                        Step::Blur5Row => pixel::blur5_row(lv, prm, z, x, y),
                        Step::Opsin => pixel::opsin(lv, prm, z, x, y),
                        Step::GaussRow { filter, from } => pixel::gauss_row(
                            lv,
                            taps().add(filter as usize),
                            from + z,
                            gpumetrics_kernels::butteraugli::plane::tmp(z),
                            x,
                            y,
                        ),
                        Step::LfCol => pixel::lf_col(lv, taps(), z, x, y),
                        Step::MfCol => pixel::mf_col(lv, taps(), z, x, y),
                        Step::UhfCol => pixel::uhf_col(lv, taps(), z, x, y),
                        Step::MaskCol => pixel::mask_col(lv, taps(), x, y),
                        Step::MaltaInputs => pixel::malta_inputs(lv, prm, x, y),
                        Step::AcError => pixel::ac_error(lv, prm, z, x, y),
                        Step::Diffmap => pixel::diffmap(lv, prm, x, y),
                    }
                });
            }
        }
        let half = levels.get(1);
        let acc = (0..full.height)
            .into_par_iter()
            .map(|y| {
                let mut acc = [0.0f64; REDUCE_VALUES];
                for x in 0..full.width {
                    pixel::accumulate(&mut acc, unsafe { pixel::final_value(&full, half, x, y) });
                }
                acc
            })
            .reduce(
                || [0.0f64; REDUCE_VALUES],
                |mut a, b| {
                    a[0] = a[0].max(b[0]);
                    a[1..].iter_mut().zip(&b[1..]).for_each(|(a, b)| *a += b);
                    a
                },
            );
        super::push_fields(&acc, full.width as u64 * full.height as u64, scores);
        if plan.map == Some(MapKind::Butteraugli) {
            scores.set_map(crate::map::PairMap::on_host(
                MapKind::Butteraugli,
                self.diffmap(),
            ));
        }
    }
}

impl Butteraugli {
    /// The final diffmap of the pair measured last: libjxl's, whose maximum is the
    /// `butteraugli` field (the full-resolution level's values plus the half-resolution
    /// level's, as the fields are pooled from).
    pub(crate) fn diffmap(&self) -> DistortionMap {
        let full = self.levels[0];
        let half = self.levels.get(1);
        let (w, h) = (full.width as usize, full.height as usize);
        let mut values = vec![0f32; w * h];
        values.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
            for (x, v) in row.iter_mut().enumerate() {
                // SAFETY: as for the fields: the levels hold the pair's finished planes.
                *v = unsafe { pixel::final_value(&full, half, x as u32, y as u32) };
            }
        });
        DistortionMap {
            width: w,
            height: h,
            values,
        }
    }
}
