//! The SSIM map as scikit-image computes it (`structural_similarity(a, b,
//! gaussian_weights=True, sigma=1.5, use_sample_covariance=False, data_range=peak,
//! full=True)`): the local means, variances and covariance from a Gaussian filter (σ 1.5,
//! truncated at 3.5 σ: 11 taps, normalised) applied down the columns and then along the
//! rows with SciPy's `reflect` edges (`d c b a | a b c d`), then Wang et al.'s formula per
//! pixel, in f64. Its mean over the pixels at least 5 from every edge is the `ssim` field.

use super::kind::DistortionMap;
use gpumetrics_kernels::map::{reflect, ssim_of};

/// Radius of the filter: `int(3.5 · 1.5 + 0.5)`.
const RADIUS: i64 = 5;
const SIGMA: f64 = 1.5;

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

/// `gaussian_filter` of a `w`×`h` plane: down the columns (axis 0), then along the rows.
fn filter(p: &[f64], w: usize, h: usize) -> Vec<f64> {
    use rayon::prelude::*;
    let k = taps();
    let mut down = vec![0f64; w * h];
    down.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
        for (t, kt) in k.iter().enumerate() {
            let src =
                &p[reflect(y as i32 + t as i32 - RADIUS as i32, h as u32) as usize * w..][..w];
            for (o, v) in row.iter_mut().zip(src) {
                *o += kt * v;
            }
        }
    });
    let mut out = vec![0f64; w * h];
    out.par_chunks_mut(w)
        .zip(down.par_chunks(w))
        .for_each(|(o, row)| {
            for (x, v) in o.iter_mut().enumerate() {
                let mut s = 0f64;
                for (t, kt) in k.iter().enumerate() {
                    s += kt * row[reflect(x as i32 + t as i32 - RADIUS as i32, w as u32) as usize];
                }
                *v = s;
            }
        });
    out
}

/// The SSIM map of two `width`×`height` planes of samples on one scale, `peak` their
/// largest value (the data range).
pub fn map(
    reference: &[u16],
    distorted: &[u16],
    width: usize,
    height: usize,
    peak: f64,
) -> DistortionMap {
    assert_eq!(reference.len(), width * height);
    assert_eq!(distorted.len(), width * height);
    let x: Vec<f64> = reference.iter().map(|&v| v as f64).collect();
    let y: Vec<f64> = distorted.iter().map(|&v| v as f64).collect();
    let product =
        |a: &[f64], b: &[f64]| -> Vec<f64> { a.iter().zip(b).map(|(p, q)| p * q).collect() };
    let (w, h) = (width, height);
    let ux = filter(&x, w, h);
    let uy = filter(&y, w, h);
    let uxx = filter(&product(&x, &x), w, h);
    let uyy = filter(&product(&y, &y), w, h);
    let uxy = filter(&product(&x, &y), w, h);
    let c1 = (0.01 * peak).powi(2);
    let c2 = (0.03 * peak).powi(2);
    let values = (0..w * h)
        .map(|i| ssim_of([ux[i], uy[i], uxx[i], uyy[i], uxy[i]], c1, c2))
        .collect();
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
        let got: Vec<u32> = (-5..9).map(|i| reflect(i, n)).collect();
        assert_eq!(got, [3, 3, 2, 1, 0, 0, 1, 2, 3, 3, 2, 1, 0, 0]);
        assert_eq!(reflect(-3, 1), 0);
    }

    #[test]
    fn identical_planes_map_to_1() {
        let p: Vec<u16> = (0..20 * 15).map(|i| (i * 37 % 251) as u16).collect();
        let m = map(&p, &p, 20, 15, 255.0);
        assert!(m.values.iter().all(|&v| (v - 1.0).abs() < 1e-6));
        assert!((mean(&m) - 1.0).abs() < 1e-9);
    }
}
