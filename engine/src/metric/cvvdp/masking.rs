//! ColorVideoVDP's masking of one band (`apply_masking_model`, model `mult-mutual`): the
//! test and reference contrasts weighted by sensitivity, their common part blurred (phase
//! uncertainty) and pooled across channels as the masker, the difference raised to `mask_p`
//! over one plus the masker, softly clamped. In float32, as the reference computes.

use std::sync::LazyLock;

use super::pyramid::Plane;
use super::temporal::parameter;
use gpumetrics_kernels::cvvdp::{self, BLUR_RADIUS, BLUR_TAPS, CHANNEL_GAIN as GAIN, Masking};

pub use gpumetrics_kernels::cvvdp::BAND_CHANNELS;

/// The masking model's constants from the reference's parameters, as the kernels take
/// them.
pub static MASKING: LazyLock<Masking> = LazyLock::new(|| {
    let one = |name: &str| parameter(name)[0] as f32;
    let eps = |p: f32| cvvdp::EPS.powf(p);
    let q: [f32; BAND_CHANNELS] = {
        let q = parameter("mask_q");
        std::array::from_fn(|c| q[c] as f32)
    };
    let xcm = parameter("xcm_weights");
    let (p, beta) = (one("mask_p"), one("beta"));
    Masking {
        p,
        p_eps: eps(p),
        q,
        q_eps: q.map(eps),
        mask_c: 10f32.powf(one("mask_c")),
        d_max: 10f32.powf(one("d_max")),
        xcm: std::array::from_fn(|i| 2f32.powf(xcm[i] as f32)),
        beta,
        beta_eps: eps(beta),
    }
});

/// The phase-uncertainty blur's taps: the normalised Gaussian of σ `pu_dilate`, 13 taps.
pub fn blur_taps() -> [f32; BLUR_TAPS] {
    let sigma = parameter("pu_dilate")[0] as f32;
    let pdf: [f32; BLUR_TAPS] = std::array::from_fn(|i| {
        let x = i as i32 - BLUR_RADIUS;
        (-0.5 * (x as f32 / sigma).powi(2)).exp()
    });
    let sum: f32 = pdf.iter().sum();
    pdf.map(|v| v / sum)
}

/// torchvision's `GaussianBlur(13, 3)` (the phase uncertainty, `pu_dilate` 3): the outer
/// product of the normalised 1-D Gaussian with reflected edges, applied as its two 1-D
/// passes (the same sums in another order: float32 rounding apart, the reference's 2-D
/// convolution).
pub fn phase_blur(m: &Plane) -> Plane {
    use rayon::prelude::*;
    const R: i32 = BLUR_RADIUS;
    let k = blur_taps();
    let (w, h) = (m.width, m.height);
    let reflect = |i: i32, n: usize| cvvdp::reflect(i, n as u32) as usize;
    let mut across = vec![0f32; m.data.len()];
    across
        .par_chunks_mut(w)
        .zip(m.data.par_chunks(w))
        .for_each(|(out, row)| {
            for (x, o) in out.iter_mut().enumerate() {
                let mut s = 0f32;
                for (t, kt) in k.iter().enumerate() {
                    s += kt * row[reflect(x as i32 + t as i32 - R, w)];
                }
                *o = s;
            }
        });
    let mut out = vec![0f32; m.data.len()];
    out.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
        for (t, kt) in k.iter().enumerate() {
            let src = &across[reflect(y as i32 + t as i32 - R, h) * w..][..w];
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
    let k = &*MASKING;
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
            m.data.par_iter().map(|&v| cvvdp::masker(k, c, v)).collect()
        })
        .collect();
    (0..channels)
        .map(|c| {
            let data = (0..n)
                .into_par_iter()
                .map(|i| {
                    let mut m = [0f32; BAND_CHANNELS];
                    for (v, mk) in m.iter_mut().zip(&mq) {
                        *v = mk[i];
                    }
                    cvvdp::difference(k, c, tp[c][i] - rp[c][i], &m, channels)
                })
                .collect();
            Plane::new(w, h, data)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The GPU's masker blur folds the taps in pairs (`cvvdp::blur_sum`): they must be
    /// symmetric to the bit.
    #[test]
    fn the_blur_taps_are_symmetric() {
        let k = blur_taps();
        for t in 0..BLUR_TAPS {
            assert_eq!(k[t].to_bits(), k[BLUR_TAPS - 1 - t].to_bits(), "tap {t}");
        }
        assert!(k[BLUR_RADIUS as usize] > k[0]);
    }
}
