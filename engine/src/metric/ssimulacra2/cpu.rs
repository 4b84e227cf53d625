//! SSIMULACRA2 on the CPU: the kernel crate's per-pixel and per-row code, rows in parallel
//! with rayon. Same steps as the GPU: linear RGB, then per scale XYB, the five blurred
//! moments (horizontal pass into a scratch image, vertical pass fused with the maps) and
//! the map sums.

use rayon::prelude::*;

use super::map::{ScaleValues, contribution_map};
use super::{Sums, scale_sizes};
use crate::frame::PlanePtrs;
use crate::map::MapKind;
use crate::metric::CpuMetric;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::color::{ColorSource, linear_rgb};
use gpumetrics_kernels::ssimulacra2::math::{
    SUMS_PER_PLANE, SUMS_PER_SCALE, blur_row, column_sums, column_values, downsample_at, xyb,
};

/// SSIMULACRA2 on the CPU (no state: scratch images are per pair).
pub(super) struct Ssimu2 {
    pub upsampling: crate::color::ChromaUpsampling,
}

/// No pairs held back.
impl crate::metric::temporal::Sequenced for Ssimu2 {}

impl CpuMetric for Ssimu2 {
    fn measure(&mut self, plan: &Plan, r: &PlanePtrs, d: &PlanePtrs, scores: &mut Scores) {
        let map = plan.map == Some(MapKind::Ssimulacra2);
        let (sums, values) = sums(plan, r, d, self.upsampling, map);
        // A frame too small to score (no scale) has a map of zeros, as on the GPU.
        if map {
            let (w, h) = (
                plan.reference.width as usize,
                plan.reference.height as usize,
            );
            let map = contribution_map(&sums, &values, w, h);
            scores.set_map(crate::map::PairMap::on_host(MapKind::Ssimulacra2, map));
        }
        super::push_fields(&sums, scores);
    }
}

/// Six planes (reference R, G, B, distorted R, G, B) of one scale.
struct Planes {
    w: usize,
    h: usize,
    data: Vec<f32>,
}

impl Planes {
    fn plane(&self, i: usize) -> &[f32] {
        &self.data[i * self.w * self.h..][..self.w * self.h]
    }
}

/// Raw pointer that rayon tasks may share (each writes disjoint elements).
#[derive(Clone, Copy)]
struct Shared(*mut f32);
// SAFETY: only used for disjoint writes inside one parallel loop.
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

impl Shared {
    /// Element `i` (a method, so that closures capture the whole `Send` wrapper).
    ///
    /// # Safety
    /// `i` must lie in the buffer, and no other task may access element `i`.
    unsafe fn at(self, i: usize) -> *mut f32 {
        unsafe { self.0.add(i) }
    }
}

fn linearize(src: [&ColorSource; 2], w: usize, h: usize) -> Planes {
    let mut data = vec![0.0f32; 6 * w * h];
    let out = Shared(data.as_mut_ptr());
    (0..2 * h).into_par_iter().for_each(|row| {
        let (img, y) = (row / h, row % h);
        for x in 0..w {
            // SAFETY: the sources were validated against the plan's layouts.
            let rgb = unsafe { linear_rgb(src[img], x as u32, y as u32) };
            for (c, v) in rgb.into_iter().enumerate() {
                // SAFETY: (img, c, y, x) indexes a distinct element of `data`.
                unsafe { *out.at((img * 3 + c) * w * h + y * w + x) = v };
            }
        }
    });
    Planes { w, h, data }
}

fn downsample(p: &Planes, w: usize, h: usize) -> Planes {
    let mut data = vec![0.0f32; 6 * w * h];
    data.par_chunks_mut(w).enumerate().for_each(|(row, out)| {
        let (i, y) = (row / h, row % h);
        let src = p.plane(i);
        for (x, o) in out.iter_mut().enumerate() {
            // SAFETY: `src` holds the previous scale's p.w * p.h values.
            *o = unsafe { downsample_at(src.as_ptr(), p.w as u32, p.h as u32, x as u32, y as u32) };
        }
    });
    Planes { w, h, data }
}

/// Map sums of one scale (plane·6 + map·2 + norm), and with `values` each pixel's map
/// values.
fn scale_sums(p: &Planes, mut values: Option<&mut ScaleValues>) -> [f64; SUMS_PER_SCALE] {
    let (w, h) = (p.w, p.h);
    // XYB planes: reference X, Y, B, distorted X, Y, B.
    let mut xyb_data = vec![0.0f32; 6 * w * h];
    let out = Shared(xyb_data.as_mut_ptr());
    (0..2 * h).into_par_iter().for_each(|row| {
        let (img, y) = (row / h, row % h);
        let [r, g, b] = [0, 1, 2].map(|c| &p.plane(img * 3 + c)[y * w..][..w]);
        for (x, ((r, g), b)) in r.iter().zip(g).zip(b).enumerate() {
            let v = xyb([*r, *g, *b]);
            for (c, v) in v.into_iter().enumerate() {
                // SAFETY: (img, c, y, x) indexes a distinct element of `xyb_data`.
                unsafe { *out.at((img * 3 + c) * w * h + y * w + x) = v };
            }
        }
    });
    let plane = |i: usize| &xyb_data[i * w * h..][..w * h];
    let mut sums = [0.0f64; SUMS_PER_SCALE];
    // Horizontally blurred moments, five planes.
    let mut hb = vec![0.0f32; 5 * w * h];
    for c in 0..3 {
        let (a, b) = (plane(c), plane(3 + c));
        let out = Shared(hb.as_mut_ptr());
        (0..h).into_par_iter().for_each(|y| {
            let (ra, rb) = (&a[y * w..][..w], &b[y * w..][..w]);
            for k in 0..5 {
                blur_row(
                    w as u32,
                    k as u32,
                    |x| (ra[x as usize], rb[x as usize]),
                    // SAFETY: (k, y, x) indexes a distinct element of `hb`.
                    |x, v| unsafe { *out.at(k * w * h + y * w + x as usize) = v },
                );
            }
        });
        let hb = &hb;
        if let Some(v) = values.as_deref_mut() {
            let out = Shared(v.data.as_mut_ptr());
            (0..w).into_par_iter().for_each(|x| {
                column_values(
                    h as u32,
                    |y| std::array::from_fn(|k| hb[k * w * h + y as usize * w + x]),
                    |y| (a[y as usize * w + x], b[y as usize * w + x]),
                    |y, d, d1| {
                        let i = y as usize * w + x;
                        // SAFETY: (c, map, y, x) indexes a distinct element of the values.
                        unsafe {
                            *out.at(2 * c * w * h + i) = d as f32;
                            *out.at((2 * c + 1) * w * h + i) = d1 as f32;
                        }
                    },
                )
            });
        }
        let plane_sums = (0..w)
            .into_par_iter()
            .map(|x| {
                column_sums(
                    h as u32,
                    |y| std::array::from_fn(|k| hb[k * w * h + y as usize * w + x]),
                    |y| (a[y as usize * w + x], b[y as usize * w + x]),
                )
            })
            .reduce(
                || [0.0f64; SUMS_PER_PLANE],
                |mut x, y| {
                    x.iter_mut().zip(y).for_each(|(x, y)| *x += y);
                    x
                },
            );
        sums[c * SUMS_PER_PLANE..][..SUMS_PER_PLANE].copy_from_slice(&plane_sums);
    }
    sums
}

/// SSIMULACRA2 sums of a validated host frame pair, and with `map` every scale's pixel
/// values.
fn sums(
    plan: &Plan,
    r: &PlanePtrs,
    d: &PlanePtrs,
    upsampling: crate::color::ChromaUpsampling,
    map: bool,
) -> (Sums, Vec<ScaleValues>) {
    let src = plan.color_sources(r, d, upsampling);
    let sizes = scale_sizes(plan.reference.width, plan.reference.height);
    let mut out = Sums {
        scales: sizes.len(),
        ..Default::default()
    };
    let mut values = Vec::new();
    let Some(&(w, h)) = sizes.first() else {
        return (out, values);
    };
    let mut planes = linearize([&src.0, &src.1], w as usize, h as usize);
    for (s, &(w, h)) in sizes.iter().enumerate() {
        if s > 0 {
            planes = downsample(&planes, w as usize, h as usize);
        }
        out.pixels[s] = w as u64 * h as u64;
        let mut v = map.then(|| ScaleValues::new(w as usize, h as usize));
        out.sums[s] = scale_sums(&planes, v.as_mut());
        values.extend(v);
    }
    (out, values)
}
