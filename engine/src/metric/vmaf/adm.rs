//! ADM's float steps (libvmaf `integer_adm.c`): the contrast sensitivity factors of each
//! scale, the kernels' per-scale parameters, and the features from the kernels' integer
//! sums.

use gpumetrics_kernels::vmaf::adm::{self, ceil_log2, region};

use super::{Frame, adm_sizes};

/// libvmaf's `dwt_quant_step` (float, with its double intermediates).
fn quant_step(lambda: usize, theta: usize) -> f32 {
    const A: f32 = 0.495;
    const K: f32 = 0.466;
    const F0: f32 = 0.401;
    const G: [f32; 4] = [1.501, 1.0, 0.534, 1.0];
    const AMP: [[f32; 4]; 6] = [
        [0.62171, 0.67234, 0.72709, 0.67234],
        [0.34537, 0.41317, 0.49428, 0.41317],
        [0.18004, 0.22727, 0.28688, 0.22727],
        [0.091401, 0.11792, 0.15214, 0.11792],
        [0.045943, 0.059758, 0.077727, 0.059758],
        [0.023013, 0.030018, 0.039156, 0.030018],
    ];
    let r = (3.0f64 * 1080.0 * std::f64::consts::PI / 180.0) as f32;
    let temp =
        (2.0f64.powf((lambda + 1) as f64) * F0 as f64 * G[theta] as f64 / r as f64).log10() as f32;
    (2.0 * A as f64 * 10.0f64.powf((K * temp * temp) as f64) / AMP[lambda][theta] as f64) as f32
}

/// The contrast sensitivity factors (1/Q) of h, v, d at an ADM scale.
fn rfactor(scale: usize) -> [f32; 3] {
    let (f1, f2) = (quant_step(scale, 1), quant_step(scale, 2));
    [1.0 / f1, 1.0 / f1, 1.0 / f2]
}

/// The fixed-point factors the kernels multiply by (libvmaf's `i_rfactor`; scale 0 uses its
/// constants for the default viewing distance and display height).
pub(crate) fn fixed_rfactor(scale: usize) -> [u32; 3] {
    if scale == 0 {
        [36453, 36453, 49417]
    } else {
        rfactor(scale).map(|r| (r as f64 * 4294967296.0) as u32)
    }
}

/// The kernels' parameters of ADM scale `scale` under the model's ADM gain limit, with
/// `bands`/`maps` to be filled in.
pub(crate) fn adm_scale(gain_limit: f64, scale: usize) -> adm::Scale {
    adm::Scale {
        gain_limit,
        rfactor: fixed_rfactor(scale),
        scale: scale as u32,
        ..Default::default()
    }
}

/// libvmaf's ADM num and den of one scale (band size w×h) from its sums.
fn adm_scale_num_den(scale: usize, w: u32, h: u32, s: &[i64; 6]) -> (f32, f32) {
    let (left, top, right, bottom) = region(w, h);
    let area = ((bottom - top) * (right - left)) as f32 / 32.0;
    let add = area.powf(1.0 / 3.0);
    let rf = rfactor(scale);
    let (num_sh, den_sh) = adm::row_shifts(&adm::Scale {
        bands: gpumetrics_kernels::vmaf::Plane {
            width: w,
            height: h,
            ..Default::default()
        },
        scale: scale as u32,
        ..Default::default()
    });
    let cube_root = |v: f32| v.powf(1.0 / 3.0);
    let (num, den);
    if scale == 0 {
        let cub = ceil_log2(w).wrapping_sub(4);
        let f = |v: i64, bits: u32| {
            (v as f64 / 2f64.powf(bits.wrapping_sub(cub).wrapping_sub(num_sh) as f64)) as f32
        };
        let fd = |v: i64| {
            (v as f64 / 2f64.powf(57u32.wrapping_sub(cub + 1).wrapping_sub(num_sh) as f64)) as f32
        };
        num = (cube_root(f(s[0], 52)) + add)
            + (cube_root(f(s[1], 52)) + add)
            + (cube_root(fd(s[2])) + add);
        let shift_csf = 2f64.powf(18u32.wrapping_sub(den_sh) as f64);
        let csf = |v: i64, r: f32| (v as u64 as f64 / shift_csf) * (r as f64).powf(3.0);
        den = (cube_root(csf(s[3], rf[0]) as f32) + add)
            + (cube_root(csf(s[4], rf[1]) as f32) + add)
            + (cube_root(csf(s[5], rf[2]) as f32) + add);
    } else {
        let cub = ceil_log2(w);
        const FINAL: [u32; 3] = [45, 39, 36];
        let shift =
            2f64.powf(FINAL[scale - 1].wrapping_sub(cub).wrapping_sub(num_sh) as f64) as f32;
        let f = |v: i64| v as f32 / shift;
        num = (cube_root(f(s[0])) + add) + (cube_root(f(s[1])) + add) + (cube_root(f(s[2])) + add);
        const CONVERT: [u32; 3] = [32, 27, 23];
        let den_cub = ceil_log2(right - left);
        let shift_csf = 2f64.powf(
            CONVERT[scale - 1]
                .wrapping_sub(den_sh)
                .wrapping_sub(den_cub) as f64,
        );
        let csf = |v: i64, r: f32| (v as u64 as f64 / shift_csf) * (r as f64).powf(3.0);
        den = (cube_root(csf(s[3], rf[0]) as f32) + add)
            + (cube_root(csf(s[4], rf[1]) as f32) + add)
            + (cube_root(csf(s[5], rf[2]) as f32) + add);
    }
    (num, den)
}

/// ADM's features of a w×h frame from its per-scale sums: `adm2` and `adm_scale`.
pub(crate) fn features(w: u32, h: u32, sums: &[[i64; 6]; 4], f: &mut Frame) {
    let (mut num, mut den) = (0.0f64, 0.0f64);
    for (k, &(bw, bh)) in adm_sizes(w, h).iter().enumerate() {
        let (n, d) = adm_scale_num_den(k, bw, bh, &sums[k]);
        num += n as f64;
        den += d as f64;
        f.adm_scale[k] = n as f64 / d as f64;
    }
    let limit = 1e-10 * (w * h) as f64 / (1920.0 * 1080.0);
    let num = if num < limit { 0.0 } else { num };
    let den = if den < limit { 0.0 } else { den };
    f.adm2 = if den == 0.0 { 1.0 } else { num / den };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_factors_are_the_float_factors_in_fixed_point() {
        // Scale 0: libvmaf's hard-coded constants, which its float formula misses by a few
        // units in Q21/Q23 (36451 and 49415); they are used as libvmaf uses them.
        let rf = rfactor(0);
        assert_eq!(fixed_rfactor(0), [36453, 36453, 49417]);
        assert!(((rf[0] as f64 * 2f64.powi(21)) as i64 - 36453).abs() <= 4);
        assert!(((rf[2] as f64 * 2f64.powi(23)) as i64 - 49417).abs() <= 4);
        // Scales 1-3: Q32 of the float factors (the reference test checks the features).
        for s in 1..4 {
            let q = fixed_rfactor(s);
            assert_eq!(q[0], q[1]);
            assert_eq!(q[0], (rfactor(s)[0] as f64 * 4294967296.0) as u32);
        }
    }

    #[test]
    fn cos_1deg_matches_libvmaf() {
        let c = ((1.0f64 * std::f64::consts::PI / 180.0).cos()
            * (1.0f64 * std::f64::consts::PI / 180.0).cos()) as f32;
        assert_eq!(c, gpumetrics_kernels::vmaf::adm::COS_1DEG_SQ);
    }
}
