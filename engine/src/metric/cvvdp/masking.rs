//! ColorVideoVDP's masking of one band (`apply_masking_model`, model `mult-mutual`): the
//! test and reference contrasts weighted by sensitivity, their common part blurred (phase
//! uncertainty) and pooled across channels as the masker, the difference raised to `mask_p`
//! over one plus the masker, softly clamped. In float32, as the reference computes.

use super::pyramid::Plane;
use super::temporal::parameter;

/// Channels of a band: sustained Y, RG, VY, transient Y.
pub const BAND_CHANNELS: usize = 4;

/// The per-channel gains of the sensitivity-weighted contrast.
const GAIN: [f32; BAND_CHANNELS] = [1.0, 1.45, 1.0, 1.0];

/// The reference's `safe_pow`: `(x + 1e-5)^p − 1e-5^p`.
fn safe_pow(x: f32, p: f32) -> f32 {
    (x + 1e-5).powf(p) - 1e-5f32.powf(p)
}

/// torchvision's `GaussianBlur(13, 3)` (the phase uncertainty, `pu_dilate` 3): one 13×13
/// kernel (the outer product of the normalised 1-D Gaussian) with reflected edges.
pub fn phase_blur(m: &Plane) -> Plane {
    const R: i64 = 6;
    let sigma = parameter("pu_dilate")[0] as f32;
    let pdf: Vec<f32> = (-R..=R)
        .map(|x| (-0.5 * (x as f32 / sigma).powi(2)).exp())
        .collect();
    let sum: f32 = pdf.iter().sum();
    let k: Vec<f32> = pdf.iter().map(|v| v / sum).collect();
    let (w, h) = (m.width as i64, m.height as i64);
    // Reflect without repeating the edge (torch's `reflect` padding).
    let reflect = |i: i64, n: i64| {
        let i = if i < 0 { -i } else { i };
        if i >= n { 2 * (n - 1) - i } else { i }
    };
    let mut out = vec![0f32; m.data.len()];
    for y in 0..h {
        for x in 0..w {
            let mut s = 0f32;
            for dy in -R..=R {
                let row = reflect(y + dy, h) * w;
                for dx in -R..=R {
                    let weight = k[(dy + R) as usize] * k[(dx + R) as usize];
                    s += weight * m.data[(row + reflect(x + dx, w)) as usize];
                }
            }
            out[(y * w + x) as usize] = s;
        }
    }
    Plane::new(m.width, m.height, out)
}

/// The visible difference of one band (not the base band): `test`, `reference` and the
/// sensitivity `s` per channel (the CSF of the reference's background, with the
/// sensitivity correction), all of one size. Four channels for video, three (no transient
/// one) for an image: the cross-channel pooling takes the first rows of its matrix.
pub fn band_difference(test: &[Plane], reference: &[Plane], s: &[Plane]) -> Vec<Plane> {
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
        (0..n).map(|i| x.data[i] * s[c].data[i] * GAIN[c]).collect()
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
                (0..n).map(|i| tp[c][i].abs().min(rp[c][i].abs())).collect(),
            );
            let m = if blur { phase_blur(&common) } else { common };
            m.data
                .iter()
                .map(|v| safe_pow((v * mask_c).abs(), q[c]))
                .collect()
        })
        .collect();
    (0..channels)
        .map(|c| {
            let data = (0..n)
                .map(|i| {
                    // Cross-channel pooling: weights 2^xcm as a 4×4 matrix, column `c`.
                    let mut m = 0f32;
                    for (k, mk) in mq.iter().enumerate() {
                        m += mk[i] * xcm[k * BAND_CHANNELS + c];
                    }
                    let du = safe_pow((tp[c][i] - rp[c][i]).abs(), p) / (1.0 + m);
                    d_max * du / (d_max + du)
                })
                .collect();
            Plane::new(w, h, data)
        })
        .collect()
}
