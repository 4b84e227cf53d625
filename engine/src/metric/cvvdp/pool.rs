//! ColorVideoVDP's pooling to JOD (`do_pooling_and_jods`, `met2jod`): the per-band,
//! per-channel, per-frame differences weighted (chromatic and transient channels, the base
//! band), then p-norms over bands (β_sch), channels (β_tch) and frames (β_t, normalised; a
//! single frame takes the image integration factor instead), mapped to just-objectionable
//! differences (10 = none), linearly below 0.1. The reference's norms use its `safe_pow`
//! (the calibrated exponents are tensors): `(Σ (x + ε)^p − ε^p) / N + ε)^(1/p) − ε^(1/p)`,
//! ε = 1e-5. In float32.

use super::temporal::parameter;
use gpumetrics_kernels::cvvdp::{BAND_CHANNELS, Heat};

const EPS: f32 = 1e-5;

/// The reference's `safe_pow`: `(x + ε)^p − ε^p`, ε = 1e-5.
pub(super) fn safe_pow(x: f32, p: f32) -> f32 {
    (x + EPS).powf(p) - EPS.powf(p)
}

/// [`safe_pow`] to one exponent, its `ε^p` computed once (what a loop over a band's
/// samples calls).
#[derive(Clone, Copy, Debug)]
pub(super) struct SafePow {
    p: f32,
    eps_p: f32,
}

impl SafePow {
    pub(super) fn new(p: f32) -> SafePow {
        SafePow {
            p,
            eps_p: EPS.powf(p),
        }
    }

    #[inline]
    pub(super) fn of(self, x: f32) -> f32 {
        (x + EPS).powf(self.p) - self.eps_p
    }
}

/// The reference's `lp_norm` with a tensor exponent: over `values`, divided by `n` first.
fn lp_norm(values: impl Iterator<Item = f32>, p: f32, n: f32) -> f32 {
    let sum: f32 = values.map(|x| safe_pow(x, p)).sum();
    safe_pow(sum / n, 1.0 / p)
}

/// A band's differences of one channel pooled over its pixels (β, normalised by their
/// count).
pub fn spatial(d: &[f32]) -> f32 {
    let beta = parameter("beta")[0] as f32;
    use rayon::prelude::*;
    let pow = SafePow::new(beta);
    let sum: f64 = d.par_iter().map(|&x| pow.of(x) as f64).sum();
    spatial_of_sum(sum, d.len())
}

/// [`spatial`] from the sum of `safe_pow(d, β)` over a band's `n` samples (what the GPU's
/// pooling kernels add up).
pub fn spatial_of_sum(sum: f64, n: usize) -> f32 {
    let beta = parameter("beta")[0] as f32;
    safe_pow((sum / n as f64) as f32, 1.0 / beta)
}

/// One frame's differences `q[channel][band]` pooled over bands (β_sch, the chromatic and
/// transient channels' weights, the base band's) and channels (β_tch): the value the frames
/// are pooled over.
pub fn frame(q: &[Vec<f32>]) -> f32 {
    let p = |name: &str| parameter(name)[0] as f32;
    let chrom = p("ch_chrom_w");
    let channel_w = [1.0, chrom, chrom, p("ch_trans_w")];
    let baseband: Vec<f32> = parameter("baseband_weight")
        .iter()
        .map(|&v| v as f32)
        .collect();
    let per_channel = q.iter().enumerate().map(|(c, bands)| {
        let n = bands.len();
        lp_norm(
            bands.iter().enumerate().map(|(b, &v)| {
                let band_w = if b + 1 == n { baseband[c] } else { 1.0 };
                v * channel_w[c] * band_w
            }),
            p("beta_sch"),
            1.0,
        )
    });
    lp_norm(per_channel, p("beta_tch"), 1.0)
}

/// One band of the video's `raw` heat map: the band's differences `d` (per channel, the
/// video's four) weighted per channel (the base band's weights too) and pooled over the
/// channels (β_tch, not normalised), over the band's `get_band` factor `mul` (the
/// reference's `set_lband`).
pub fn heat_band(d: &[super::pyramid::Plane], base: bool, mul: f32) -> super::pyramid::Plane {
    use rayon::prelude::*;
    let heat = heat_constants(base, 0);
    let (width, height) = (d[0].width, d[0].height);
    let channels = d.len().min(BAND_CHANNELS);
    let data = (0..width * height)
        .into_par_iter()
        .map(|i| {
            let mut v = [0f32; BAND_CHANNELS];
            for (v, dc) in v.iter_mut().zip(d) {
                *v = dc.data[i];
            }
            heat.value(v, channels, mul)
        })
        .collect();
    super::pyramid::Plane::new(width, height, data)
}

/// The constants of a band's heat ([`Heat`]: the channels' weights, the base band's times
/// `baseband_weight`, and β_tch's), its plane at device address `plane` (0 on the host).
pub fn heat_constants(base: bool, plane: u64) -> Heat {
    let p = |name: &str| parameter(name)[0] as f32;
    let chrom = p("ch_chrom_w");
    let baseband = parameter("baseband_weight");
    let mut w = [1.0, chrom, chrom, p("ch_trans_w")];
    if base {
        for (w, b) in w.iter_mut().zip(&baseband) {
            *w *= *b as f32;
        }
    }
    let beta = p("beta_tch");
    let inv = 1.0 / beta;
    Heat {
        plane,
        w,
        beta,
        beta_eps: EPS.powf(beta),
        inv,
        inv_eps: EPS.powf(inv),
    }
}

/// The reference's `raw` heat map value of a collapsed heat sample `v`: `1 − met2jod(v) / 10`.
pub fn heat_of(v: f32) -> f32 {
    1.0 - met2jod(v) / 10.0
}

/// What a frame adds to the pooling over frames: its [`frame`] value to the power β_t (the
/// reference's `safe_pow`). Sums of these over a span give its JOD ([`span_jod`]).
pub fn frame_term(frame: f32) -> f64 {
    safe_pow(frame, parameter("beta_t")[0] as f32) as f64
}

/// The JOD of a span of `frames` video frames (two or more, or one frame of a longer
/// video) whose [`frame_term`]s sum to `sum`.
pub fn span_jod(sum: f64, frames: u64) -> f32 {
    let beta_t = parameter("beta_t")[0] as f32;
    met2jod(safe_pow((sum / frames as f64) as f32, 1.0 / beta_t))
}

/// The JOD of a span from its pooling terms ([`crate::scores::PoolTerms::Cvvdp`]): a
/// one-pair span that begins the sequence is an image, as the reference sees one frame.
pub fn terms_jod(sum: f64, frames: u64, image: f64) -> f64 {
    if frames == 1 && image.is_finite() {
        image_jod(image as f32) as f64
    } else if frames == 0 {
        10.0
    } else {
        span_jod(sum, frames) as f64
    }
}

/// The JOD of an image (a single-frame video): its [`frame`] value times the image
/// integration factor.
pub fn image_jod(frame: f32) -> f32 {
    met2jod(frame * parameter("image_int")[0] as f32)
}

/// The JOD of differences `q[channel][frame][band]` (channels: sustained Y, RG, VY and, for
/// video, transient Y; the last band the base band).
pub fn jod(q: &[Vec<Vec<f32>>]) -> f32 {
    let frames = q[0].len();
    let per_frame: Vec<f32> = (0..frames)
        .map(|f| frame(&q.iter().map(|c| c[f].clone()).collect::<Vec<_>>()))
        .collect();
    if frames == 1 {
        image_jod(per_frame[0])
    } else {
        span_jod(per_frame.into_iter().map(frame_term).sum(), frames as u64)
    }
}

/// Differences to JOD (`met2jod`).
pub fn met2jod(q: f32) -> f32 {
    let (a, e) = jod_constants();
    gpumetrics_kernels::cvvdp::met2jod(q, a, e)
}

/// `jod_a` and `jod_exp`, as float32.
pub fn jod_constants() -> (f32, f32) {
    (parameter("jod_a")[0] as f32, parameter("jod_exp")[0] as f32)
}
