//! ColorVideoVDP's masking of one band (`apply_masking_model`, model `mult-mutual`): the
//! test and reference contrasts weighted by sensitivity, their common part blurred (phase
//! uncertainty) and pooled across channels as the masker, the difference raised to `mask_p`
//! over one plus the masker, softly clamped. In float32, as the reference computes.

use super::pool::SafePow;
use super::pyramid::Plane;
use super::temporal::parameter;

/// Channels of a band: sustained Y, RG, VY, transient Y.
pub const BAND_CHANNELS: usize = 4;

/// The per-channel gains of the sensitivity-weighted contrast.
const GAIN: [f32; BAND_CHANNELS] = [1.0, 1.45, 1.0, 1.0];

/// torchvision's `GaussianBlur(13, 3)` (the phase uncertainty, `pu_dilate` 3): the outer
/// product of the normalised 1-D Gaussian with reflected edges, applied as its two 1-D
/// passes (the same sums in another order: float32 rounding apart, the reference's 2-D
/// convolution).
pub fn phase_blur(m: &Plane) -> Plane {
    use rayon::prelude::*;
    const R: i64 = 6;
    let sigma = parameter("pu_dilate")[0] as f32;
    let pdf: Vec<f32> = (-R..=R)
        .map(|x| (-0.5 * (x as f32 / sigma).powi(2)).exp())
        .collect();
    let sum: f32 = pdf.iter().sum();
    let k: Vec<f32> = pdf.iter().map(|v| v / sum).collect();
    let (w, h) = (m.width, m.height);
    // Reflect without repeating the edge (torch's `reflect` padding).
    let reflect = |i: i64, n: usize| -> usize {
        let n = n as i64;
        let i = if i < 0 { -i } else { i };
        (if i >= n { 2 * (n - 1) - i } else { i }) as usize
    };
    let mut across = vec![0f32; m.data.len()];
    across
        .par_chunks_mut(w)
        .zip(m.data.par_chunks(w))
        .for_each(|(out, row)| {
            for (x, o) in out.iter_mut().enumerate() {
                let mut s = 0f32;
                for (t, kt) in k.iter().enumerate() {
                    s += kt * row[reflect(x as i64 + t as i64 - R, w)];
                }
                *o = s;
            }
        });
    let mut out = vec![0f32; m.data.len()];
    out.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
        for (t, kt) in k.iter().enumerate() {
            let src = &across[reflect(y as i64 + t as i64 - R, h) * w..][..w];
            for (o, v) in row.iter_mut().zip(src) {
                *o += kt * v;
            }
        }
    });
    Plane::new(w, h, out)
}

/// The visible difference of one band (not the base band): `test`, `reference` and the
/// sensitivity `s` per channel (the CSF of the reference's background, with the
/// sensitivity correction), all of one size. Four channels for video, three (no transient
/// one) for an image: the cross-channel pooling takes the first rows of its matrix.
pub fn band_difference(test: &[Plane], reference: &[Plane], s: &[Plane]) -> Vec<Plane> {
    use rayon::prelude::*;
    let channels = test.len();
    assert!(channels <= BAND_CHANNELS && reference.len() == channels && s.len() == channels);
    let p = parameter("mask_p")[0] as f32;
    let q: Vec<f32> = parameter("mask_q").iter().map(|&v| v as f32).collect();
    let mask_c = 10f32.powf(parameter("mask_c")[0] as f32);
    let d_max = 10f32.powf(parameter("d_max")[0] as f32);
    let xcm: Vec<f32> = parameter("xcm_weights")
        .iter()
        .map(|&v| 2f32.powf(v as f32))
        .collect();
    let (w, h) = (test[0].width, test[0].height);
    let n = w * h;
    let weighted = |c: usize, x: &Plane| -> Vec<f32> {
        x.data
            .par_iter()
            .zip(&s[c].data)
            .map(|(v, s)| v * s * GAIN[c])
            .collect()
    };
    let tp: Vec<Vec<f32>> = (0..channels).map(|c| weighted(c, &test[c])).collect();
    let rp: Vec<Vec<f32>> = (0..channels).map(|c| weighted(c, &reference[c])).collect();
    let blur = w > 6 && h > 6;
    // The masker of each channel, to the power q.
    let mq: Vec<Vec<f32>> = (0..channels)
        .map(|c| {
            let common = Plane::new(
                w,
                h,
                tp[c]
                    .par_iter()
                    .zip(&rp[c])
                    .map(|(t, r)| t.abs().min(r.abs()))
                    .collect(),
            );
            let m = if blur { phase_blur(&common) } else { common };
            let pow = SafePow::new(q[c]);
            m.data
                .par_iter()
                .map(|v| pow.of((v * mask_c).abs()))
                .collect()
        })
        .collect();
    let pow_p = SafePow::new(p);
    (0..channels)
        .map(|c| {
            let data = (0..n)
                .into_par_iter()
                .map(|i| {
                    // Cross-channel pooling: weights 2^xcm as a 4×4 matrix, column `c`.
                    let mut m = 0f32;
                    for (k, mk) in mq.iter().enumerate() {
                        m += mk[i] * xcm[k * BAND_CHANNELS + c];
                    }
                    let du = pow_p.of((tp[c][i] - rp[c][i]).abs()) / (1.0 + m);
                    d_max * du / (d_max + du)
                })
                .collect();
            Plane::new(w, h, data)
        })
        .collect()
}
