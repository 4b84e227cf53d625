//! SSIMULACRA2's distortion map (`map=ssimulacra2`). Neither reference (libjxl's
//! `ssimulacra2` tool, the `ssimulacra2` crate) has one, so it is defined here from the
//! score itself: each pixel's share of the weighted sum of the 108 norms that the score is
//! mapped from.
//!
//! The weighted sum is, over scales s, planes c (X, Y, B) and maps m (SSIM error, artifact,
//! detail lost), `w1 · mean(v) + w4 · mean(v⁴)^¼`. Pixel j of scale s contributes
//! `w1 · v_j + w4 · v_j⁴ / mean(v⁴)^¾` to n times that (n the scale's pixels), so the mean
//! of these contributions over the scale is its two terms exactly. A full-size pixel (x, y)
//! gets the sum over the scales of the contribution of the pixel covering it,
//! (x >> s, y >> s): the map's mean is the weighted sum (exactly when the size divides by
//! 2^(scales − 1); edge pixels of odd sizes count a little more otherwise), 0 where the
//! pair does not differ, and a frame whose every pixel had value v would score as a frame
//! of weighted sum v ([`score_of_sum`]).

use super::{Sums, WEIGHTS};
use crate::map::DistortionMap;
use gpumetrics_kernels::ssimulacra2::math::{map_contribution, map_terms};

/// One scale's per-pixel values: per plane (X, Y, B), the SSIM error and the edge
/// difference d1 (artifact = max(d1, 0), detail lost = max(−d1, 0)), each a `w`×`h` plane.
pub(super) struct ScaleValues {
    pub w: usize,
    pub h: usize,
    /// `[plane][0: SSIM error, 1: d1][y][x]`.
    pub data: Vec<f32>,
}

impl ScaleValues {
    pub fn new(w: usize, h: usize) -> ScaleValues {
        ScaleValues {
            w,
            h,
            data: vec![0.0; 6 * w * h],
        }
    }

    fn at(&self, plane: usize, which: usize, i: usize) -> f32 {
        self.data[(plane * 2 + which) * self.w * self.h + i]
    }
}

/// The map of a pair of `width`×`height` frames from its sums and every scale's values.
pub(super) fn contribution_map(
    sums: &Sums,
    scales: &[ScaleValues],
    width: usize,
    height: usize,
) -> DistortionMap {
    let mut values = vec![0f32; width * height];
    for (s, v) in scales.iter().enumerate().take(sums.scales) {
        let terms = map_terms(
            &WEIGHTS,
            sums.scales,
            s,
            &sums.sums[s],
            sums.pixels[s] as f64,
        );
        let contribution: Vec<f64> = (0..v.w * v.h)
            .map(|i| map_contribution(|t| terms[t], |c, which| v.at(c, which, i)))
            .collect();
        for y in 0..height {
            let row = &contribution[((y >> s).min(v.h - 1)) * v.w..][..v.w];
            for (x, out) in values[y * width..][..width].iter_mut().enumerate() {
                *out += row[(x >> s).min(v.w - 1)] as f32;
            }
        }
    }
    DistortionMap {
        width,
        height,
        values,
    }
}

/// The score of a weighted sum (the reference's final mapping; [`super::score`] applies it
/// to the sum of a pair's norms).
pub fn score_of_sum(sum: f64) -> f64 {
    let s = sum * 0.956_238_261_683_484_4;
    let p = (6.248_496_625_763_138e-5 * s * s).mul_add(
        s,
        2.326_765_642_916_932f64.mul_add(s, -0.020_884_521_182_843_837 * s * s),
    );
    if p > 0.0 {
        p.powf(0.627_633_646_783_138_7).mul_add(-10.0, 100.0)
    } else {
        100.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map::{MapKind, SSIMULACRA2_THRESHOLD};
    use crate::{
        BackendChoice, Engine, EngineConfig, Frame, FrameLayout, HostFrame, MetricSet, PixelFormat,
        Plane, Scores,
    };

    /// A textured RGB frame; `damage` adds a strong pattern inside the square at
    /// (40..56, 8..24).
    fn frame(w: usize, h: usize, damage: bool) -> Vec<u8> {
        let mut v = Vec::with_capacity(3 * w * h);
        for y in 0..h {
            for x in 0..w {
                for c in 0..3 {
                    let base = 128.0 + 60.0 * ((x as f64 * 0.31 + c as f64).sin())
                        - 40.0 * ((y as f64 * 0.23).cos());
                    let hit = damage && (40..56).contains(&x) && (8..24).contains(&y);
                    let d = if hit {
                        50.0 * (((x + y) % 2) as f64 - 0.5)
                    } else {
                        0.0
                    };
                    v.push((base + d).round().clamp(0.0, 255.0) as u8);
                }
            }
        }
        v
    }

    fn measure(w: usize, h: usize, r: &[u8], d: &[u8]) -> Scores {
        let cfg = EngineConfig {
            metrics: MetricSet::SSIMULACRA2,
            backend: BackendChoice::Cpu,
            ..Default::default()
        };
        let l = FrameLayout {
            format: PixelFormat::Rgb,
            width: w as u32,
            height: h as u32,
        };
        let mut e = Engine::builder(&cfg, l, l)
            .map(MapKind::Ssimulacra2)
            .build()
            .unwrap();
        let plane = |data| {
            [Plane {
                data,
                stride: 3 * w,
            }]
        };
        e.compare(
            &Frame::Host(HostFrame::new(&plane(r))),
            &Frame::Host(HostFrame::new(&plane(d))),
        )
        .unwrap()
    }

    #[test]
    fn the_maps_mean_is_the_sum_the_score_comes_from() {
        // 64×48: five scales (64×48 to 4×3), each dividing the size.
        let (w, h) = (64, 48);
        let s = measure(w, h, &frame(w, h, false), &frame(w, h, true));
        let map = s.map().expect("a map");
        assert_eq!(map.kind(), MapKind::Ssimulacra2);
        let map = map.values().unwrap();
        assert_eq!((map.width, map.height), (w, h));
        let mean = map.values.iter().map(|v| *v as f64).sum::<f64>() / (w * h) as f64;
        let score = s.get("ssimulacra2").unwrap();
        assert!(score < 95.0, "{score}");
        assert!(
            (score_of_sum(mean) - score).abs() < 1e-3,
            "mean {mean}: {} against {score}",
            score_of_sum(mean)
        );
        // Where: the peak lies in the damaged square (or within the blur's reach of it).
        let stats = s.get("ssimulacra2-peak-x").zip(s.get("ssimulacra2-peak-y"));
        let (px, py) = stats.expect("the peak's position");
        assert!(
            (34.0..62.0).contains(&px) && (2.0..30.0).contains(&py),
            "{px} {py}"
        );
    }

    #[test]
    fn an_identical_pair_has_an_empty_map() {
        let (w, h) = (33, 17);
        let f = frame(w, h, true);
        let s = measure(w, h, &f, &f);
        let map = s.map().expect("a map").values().unwrap();
        assert!(map.values.iter().all(|v| *v == 0.0));
        assert_eq!(s.get("ssimulacra2"), Some(100.0));
    }

    #[test]
    fn the_default_threshold_scores_70() {
        assert!((score_of_sum(SSIMULACRA2_THRESHOLD) - 70.0).abs() < 0.01);
    }
}
