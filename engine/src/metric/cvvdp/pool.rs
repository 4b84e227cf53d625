//! ColorVideoVDP's pooling to JOD (`do_pooling_and_jods`, `met2jod`): the per-band,
//! per-channel, per-frame differences weighted (chromatic and transient channels, the base
//! band), then p-norms over bands (β_sch), channels (β_tch) and frames (β_t, normalised; a
//! single frame takes the image integration factor instead), mapped to just-objectionable
//! differences (10 = none), linearly below 0.1. The reference's norms use its `safe_pow`
//! (the calibrated exponents are tensors): `(Σ (x + ε)^p − ε^p) / N + ε)^(1/p) − ε^(1/p)`,
//! ε = 1e-5. In float32.

use super::temporal::parameter;

const EPS: f32 = 1e-5;

fn safe_pow(x: f32, p: f32) -> f32 {
    (x + EPS).powf(p) - EPS.powf(p)
}

/// The reference's `lp_norm` with a tensor exponent: over `values`, divided by `n` first.
fn lp_norm(values: impl Iterator<Item = f32>, p: f32, n: f32) -> f32 {
    let sum: f32 = values.map(|x| safe_pow(x, p)).sum();
    safe_pow(sum / n, 1.0 / p)
}

/// The JOD of differences `q[channel][frame][band]` (channels: sustained Y, RG, VY and, for
/// video, transient Y; the last band the base band).
pub fn jod(q: &[Vec<Vec<f32>>]) -> f32 {
    let p = |name: &str| parameter(name)[0] as f32;
    let channels = q.len();
    let frames = q[0].len();
    let chrom = p("ch_chrom_w");
    let channel_w = [1.0, chrom, chrom, p("ch_trans_w")];
    let baseband: Vec<f32> = parameter("baseband_weight")
        .iter()
        .map(|&v| v as f32)
        .collect();
    let per_frame: Vec<f32> = (0..frames)
        .map(|f| {
            let per_channel = (0..channels).map(|c| {
                let bands = q[c][f].len();
                lp_norm(
                    q[c][f].iter().enumerate().map(|(b, &v)| {
                        let band_w = if b + 1 == bands { baseband[c] } else { 1.0 };
                        v * channel_w[c] * band_w
                    }),
                    p("beta_sch"),
                    1.0,
                )
            });
            lp_norm(per_channel, p("beta_tch"), 1.0)
        })
        .collect();
    let total = if frames == 1 {
        per_frame[0] * p("image_int")
    } else {
        lp_norm(per_frame.into_iter(), p("beta_t"), frames as f32)
    };
    met2jod(total)
}

/// Differences to JOD (`met2jod`).
pub fn met2jod(q: f32) -> f32 {
    let (a, e) = (parameter("jod_a")[0] as f32, parameter("jod_exp")[0] as f32);
    const Q_T: f32 = 0.1;
    if q <= Q_T {
        10.0 - a * Q_T.powf(e - 1.0) * q
    } else {
        10.0 - a * q.powf(e)
    }
}
