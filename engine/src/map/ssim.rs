//! The SSIM map as scikit-image computes it (`structural_similarity(a, b,
//! gaussian_weights=True, sigma=1.5, use_sample_covariance=False, data_range=peak,
//! full=True)`): the local means, variances and covariance from a Gaussian filter (σ 1.5,
//! truncated at 3.5 σ: 11 taps, normalised) applied down the columns and then along the
//! rows with SciPy's `reflect` edges (`d c b a | a b c d`), then Wang et al.'s formula per
//! pixel, in f64. Its mean over the pixels at least 5 from every edge is the `ssim` field.

use super::kind::DistortionMap;
use gpumetrics_kernels::map::{reflect as reflect_at, ssim_of};

/// Radius of the filter: `int(3.5 · 1.5 + 0.5)`.
const RADIUS: i64 = 5;
const SIGMA: f64 = 1.5;

/// SciPy's `reflect` index of `i` into `n` samples (the kernels' function, which the GPU's
/// map runs too).
fn reflect(i: i64, n: i64) -> usize {
    reflect_at(i as i32, n as u32) as usize
}

/// The normalised taps (the GPU's too).
pub(crate) fn taps() -> [f64; 11] {
    let mut k = [0f64; 11];
    for (i, v) in k.iter_mut().enumerate() {
        let x = i as f64 - RADIUS as f64;
        *v = (-0.5 / (SIGMA * SIGMA) * x * x).exp();
    }
    let sum: f64 = k.iter().sum();
    k.map(|v| v / sum)
}

/// The SSIM map of two `width`×`height` planes of samples on one scale, `peak` their
/// largest value (the data range).
///
/// Rows in parallel, each in one sweep: the five moments (x, y, x², y², xy) filtered down
/// the columns for this row, then along it, then the formula, without a plane of any of
/// them. Each value is made by the same operations in the same order as filtering whole
/// planes one after the other (`gaussian_filter` per moment, SciPy's order: columns first,
/// taps in order from 0), so the map is that one's bit for bit (a test keeps the planes'
/// form to compare with); the row's inside, 5 from its ends, takes its taps without
/// reflecting.
pub fn map(
    reference: &[u16],
    distorted: &[u16],
    width: usize,
    height: usize,
    peak: f64,
) -> DistortionMap {
    use rayon::prelude::*;
    assert_eq!(reference.len(), width * height);
    assert_eq!(distorted.len(), width * height);
    let (w, h) = (width, height);
    let k = taps();
    let c1 = (0.01 * peak).powi(2);
    let c2 = (0.03 * peak).powi(2);
    let r = RADIUS as usize;
    let mut values = vec![0f32; w * h];
    values.par_chunks_mut(w.max(1)).enumerate().for_each_init(
        || vec![[0f64; 5]; w],
        |down, (y, out)| {
            down.iter_mut().for_each(|d| *d = [0.0; 5]);
            for (t, kt) in k.iter().enumerate() {
                let yy = reflect(y as i64 + t as i64 - RADIUS, h as i64);
                let (a, b) = (&reference[yy * w..][..w], &distorted[yy * w..][..w]);
                for ((d, &a), &b) in down.iter_mut().zip(a).zip(b) {
                    let (x, y) = (a as f64, b as f64);
                    let p = [x, y, x * x, y * y, x * y];
                    for (d, p) in d.iter_mut().zip(p) {
                        *d += kt * p;
                    }
                }
            }
            for (x, o) in out.iter_mut().enumerate() {
                let mut s = [0f64; 5];
                let inside = x >= r && x + r < w;
                for (t, kt) in k.iter().enumerate() {
                    let at = if inside {
                        x + t - r
                    } else {
                        reflect(x as i64 + t as i64 - RADIUS, w as i64)
                    };
                    for (s, v) in s.iter_mut().zip(down[at]) {
                        *s += kt * v;
                    }
                }
                *o = ssim_of(s, c1, c2);
            }
        },
    );
    DistortionMap {
        width,
        height,
        values,
    }
}

/// The mean of a map over the pixels at least 5 from every edge (scikit-image's `crop`):
/// the SSIM of the pair.
pub fn mean(m: &DistortionMap) -> f64 {
    let pad = RADIUS as usize;
    if m.width <= 2 * pad || m.height <= 2 * pad {
        return f64::NAN;
    }
    let mut sum = 0f64;
    for y in pad..m.height - pad {
        for x in pad..m.width - pad {
            sum += m.values[y * m.width + x] as f64;
        }
    }
    sum / ((m.width - 2 * pad) * (m.height - 2 * pad)) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reflect_is_scipys() {
        // d c b a | a b c d | d c b a
        let n = 4;
        let got: Vec<usize> = (-5..9).map(|i| reflect(i, n)).collect();
        assert_eq!(got, [3, 3, 2, 1, 0, 0, 1, 2, 3, 3, 2, 1, 0, 0]);
        assert_eq!(reflect(-3, 1), 0);
    }

    /// The planes' form the map had: each moment's plane filtered down the columns, then
    /// along the rows, then the formula.
    fn map_by_planes(x: &[u16], y: &[u16], w: usize, h: usize, peak: f64) -> Vec<f32> {
        let filter = |p: &[f64]| -> Vec<f64> {
            let k = taps();
            let mut down = vec![0f64; w * h];
            for (yy, row) in down.chunks_mut(w).enumerate() {
                for (t, kt) in k.iter().enumerate() {
                    let src = &p[reflect(yy as i64 + t as i64 - RADIUS, h as i64) * w..][..w];
                    for (o, v) in row.iter_mut().zip(src) {
                        *o += kt * v;
                    }
                }
            }
            let mut out = vec![0f64; w * h];
            for (o, row) in out.chunks_mut(w).zip(down.chunks(w)) {
                for (xx, v) in o.iter_mut().enumerate() {
                    let mut s = 0f64;
                    for (t, kt) in k.iter().enumerate() {
                        s += kt * row[reflect(xx as i64 + t as i64 - RADIUS, w as i64)];
                    }
                    *v = s;
                }
            }
            out
        };
        let fx: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        let fy: Vec<f64> = y.iter().map(|&v| v as f64).collect();
        let prod =
            |a: &[f64], b: &[f64]| -> Vec<f64> { a.iter().zip(b).map(|(p, q)| p * q).collect() };
        let planes = [
            filter(&fx),
            filter(&fy),
            filter(&prod(&fx, &fx)),
            filter(&prod(&fy, &fy)),
            filter(&prod(&fx, &fy)),
        ];
        let (c1, c2) = ((0.01 * peak).powi(2), (0.03 * peak).powi(2));
        (0..w * h)
            .map(|i| ssim_of(std::array::from_fn(|m| planes[m][i]), c1, c2))
            .collect()
    }

    /// Rows in one sweep give the planes' map bit for bit, on planes narrower and lower
    /// than the filter (reflected more than once), at 8 and 16 bits.
    #[test]
    fn one_sweep_per_row_is_the_planes_map() {
        let mut next = super::super::xorshift(3);
        for (w, h) in [
            (1, 1),
            (3, 2),
            (10, 11),
            (11, 10),
            (12, 13),
            (64, 37),
            (301, 77),
        ] {
            for peak in [255u32, 65535] {
                let x: Vec<u16> = (0..w * h).map(|_| (next() % (peak + 1)) as u16).collect();
                let y: Vec<u16> = x
                    .iter()
                    .map(|&v| (v as u32 + next() % 9).min(peak) as u16)
                    .collect();
                let got = map(&x, &y, w, h, peak as f64).values.clone();
                let want = map_by_planes(&x, &y, w, h, peak as f64);
                let same = got
                    .iter()
                    .zip(&want)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "{w}x{h} peak {peak}");
            }
        }
    }

    #[test]
    fn identical_planes_map_to_1() {
        let p: Vec<u16> = (0..20 * 15).map(|i| (i * 37 % 251) as u16).collect();
        let m = map(&p, &p, 20, 15, 255.0);
        assert!(m.values.iter().all(|&v| (v - 1.0).abs() < 1e-6));
        assert!((mean(&m) - 1.0).abs() < 1e-9);
    }
}
