//! Any accepted pixel format to linear RGB in [0, 1], per pixel: the conversion that
//! SSIMULACRA2 (and any metric defined on linear light) starts from. The CPU backend and
//! the GPU kernels call the same [`linear_rgb`].
//!
//! Steps for Y'CbCr: read Y' and the chroma samples around the pixel, upsample chroma with a
//! 4-tap Catmull-Rom filter at the position given by the chroma siting (edge clamped), remove
//! the range offsets and scales, apply the matrix (Kr/Kb of BT.601, BT.709 or BT.2020), clamp
//! R'G'B' to [0, 1], then apply the inverse transfer function. R'G'B' input skips the matrix;
//! gray input is R' = G' = B' = Y'.

use crate::psnr::{Channel, load};

/// `x^y` for `x > 0`, where the exponent `y` is the `f32` nearest to `num / den`, rounded
/// as the host's `powf` rounds it: `std` on the host. On the GPU the `den`-th root of
/// `x^num` (f64) by two Newton steps from the hardware estimate, times `x^(y − num/den)`
/// (about 1e-7 from 1, from the estimate's log): within about 1e-13 of the exact power, so
/// the f32 result differs from the host's only in rare half-way cases. (SSIMULACRA2
/// amplifies last-bit differences of its input: the hardware approximations alone would
/// move GPU scores by up to ~0.08 from the CPU's.)
#[inline(always)]
pub fn powf_ratio(x: f32, y: f32, num: u32, den: u32) -> f32 {
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let _ = (num, den);
        x.powf(y)
    }
    #[cfg(target_arch = "nvptx64")]
    {
        use gpumetrics_device::math::{exp2f, log2f};
        if x <= 0.0 {
            return 0.0;
        }
        let l = log2f(x);
        let big = powi_f64(x as f64, num);
        let mut p = exp2f(y * l) as f64;
        for _ in 0..2 {
            p = root_step(p, big, den);
        }
        let d = (y as f64 - num as f64 / den as f64) * (l as f64 * core::f64::consts::LN_2);
        (p + p * (d + 0.5 * d * d)) as f32
    }
}

/// `b^n` in f64 by squaring (`n` is a constant at every call, so this unrolls).
#[inline(always)]
pub fn powi_f64(mut b: f64, mut n: u32) -> f64 {
    let mut r = 1.0f64;
    while n > 0 {
        if n & 1 == 1 {
            r *= b;
        }
        b *= b;
        n >>= 1;
    }
    r
}

/// One Newton step towards the `n`-th root of `big` from `p`, in f64; the correction is
/// small next to `p`, so an approximate reciprocal divides it.
#[inline(always)]
pub fn root_step(p: f64, big: f64, n: u32) -> f64 {
    let pn1 = powi_f64(p, n - 1);
    p - (pn1 * p - big) * gpumetrics_device::math::rcp_approx(n as f64 * pn1)
}

/// Cube root rounded like the host's `cbrt`: `std` on the host; on the GPU the hardware
/// estimate refined by two Newton steps in f64, then rounded once.
#[inline(always)]
pub fn cbrtf(x: f32) -> f32 {
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.cbrt()
    }
    #[cfg(target_arch = "nvptx64")]
    {
        use gpumetrics_device::math::{exp2f, log2f};
        let a = f32::from_bits(x.to_bits() & 0x7fff_ffff);
        if a == 0.0 || x != x || a == f32::INFINITY {
            return x;
        }
        let big = a as f64;
        let mut y = exp2f(log2f(a) * (1.0 / 3.0)) as f64;
        for _ in 0..2 {
            y = root_step(y, big, 3);
        }
        f32::from_bits((y as f32).to_bits() | (x.to_bits() & 0x8000_0000))
    }
}

/// Colour family of a [`ColorSource`].
pub const FAMILY_GRAY: u32 = 0;
pub const FAMILY_YUV: u32 = 1;
pub const FAMILY_RGB: u32 = 2;

/// Inverse transfer functions ([`ColorSource::transfer`]).
pub const TRANSFER_LINEAR: u32 = 0;
/// IEC 61966-2-1 (sRGB).
pub const TRANSFER_SRGB: u32 = 1;
/// BT.709 / BT.601 / BT.2020 (10-bit) OETF, inverted.
pub const TRANSFER_BT709: u32 = 2;
/// BT.2020 12-bit OETF (same curve with more precise constants), inverted.
pub const TRANSFER_BT2020_12: u32 = 3;

/// How to read one frame and turn it into linear RGB. Built by the engine from the format
/// and the stream's colorimetry; crosses the kernel boundary by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ColorSource {
    /// Y', Cb, Cr or R', G', B' (gray: three times Y').
    pub c: [Channel; 3],
    pub width: u32,
    pub height: u32,
    /// log2 of the chroma subsampling.
    pub sub_x: u32,
    pub sub_y: u32,
    pub family: u32,
    pub transfer: u32,
    /// Code value of black (Y') and of zero chroma, and the code-value span of 1.0.
    pub y_offset: f32,
    pub y_scale: f32,
    pub c_offset: f32,
    pub c_scale: f32,
    /// R' = Y' + cr_r·Cr; G' = Y' + cb_g·Cb + cr_g·Cr; B' = Y' + cb_b·Cb.
    pub cr_r: f32,
    pub cb_g: f32,
    pub cr_g: f32,
    pub cb_b: f32,
    /// Position of chroma sample 0 in luma pixels: 0 co-sited, 0.5 centred.
    pub site_x: f32,
    pub site_y: f32,
}

/// Catmull-Rom weights for the taps at -1, 0, 1, 2 of a position `t` in [0, 1).
#[inline(always)]
pub fn catmull_rom(t: f32) -> [f32; 4] {
    let t2 = t * t;
    let t3 = t2 * t;
    [
        0.5 * (-t3 + 2.0 * t2 - t),
        0.5 * (3.0 * t3 - 5.0 * t2 + 2.0),
        0.5 * (-3.0 * t3 + 4.0 * t2 + t),
        0.5 * (t3 - t2),
    ]
}

/// Where luma pixel `x` falls between chroma samples: (first tap index, weights).
#[inline(always)]
fn taps(x: u32, sub: u32, site: f32) -> (i32, [f32; 4]) {
    if sub == 0 {
        return (x as i32 - 1, [0.0, 1.0, 0.0, 0.0]);
    }
    // × 2^-sub: exact, as the division it stands for, and far cheaper on the GPU.
    let u = (x as f32 - site) * f32::from_bits((127 - sub) << 23);
    let j = {
        let t = u as i32; // truncates toward zero
        if (t as f32) > u { t - 1 } else { t }
    };
    (j - 1, catmull_rom(u - j as f32))
}

#[inline(always)]
pub fn clamp_i(v: i32, hi: u32) -> u32 {
    if v < 0 {
        0
    } else if v as u32 >= hi {
        hi - 1
    } else {
        v as u32
    }
}

/// Sample (x, y) of channel `c` as a float code value.
///
/// # Safety
/// (x, y) must lie inside the channel that `c` describes.
#[inline(always)]
pub unsafe fn code(c: &Channel, x: u32, y: u32) -> f32 {
    let row = (c.ptr + y as u64 * c.pitch as u64) as *const u8;
    unsafe { load(row, x, c) as f32 }
}

/// Where luma pixel (x, y) reads its chroma: the first of four sample columns and rows
/// (before edge clamping) and their Catmull-Rom weights. Shared by Cb and Cr.
#[derive(Clone, Copy, Debug)]
pub struct ChromaTaps {
    pub x0: i32,
    pub wx: [f32; 4],
    pub y0: i32,
    pub wy: [f32; 4],
}

/// The [`ChromaTaps`] of luma pixel (x, y) of a subsampled source.
#[inline(always)]
pub fn chroma_taps(s: &ColorSource, x: u32, y: u32) -> ChromaTaps {
    let (x0, wx) = taps(x, s.sub_x, s.site_x);
    let (y0, wy) = taps(y, s.sub_y, s.site_y);
    ChromaTaps { x0, wx, y0, wy }
}

/// Size of the chroma planes of a subsampled source.
#[inline(always)]
pub fn chroma_size(s: &ColorSource) -> (u32, u32) {
    (
        s.width.div_ceil(1 << s.sub_x),
        s.height.div_ceil(1 << s.sub_y),
    )
}

/// Chroma upsampled with taps `t` from `sample(column, row)` (unclamped indices), in code
/// values. All sixteen taps, zero weights included (they add exactly zero): the GPU then
/// runs it without branches.
#[inline(always)]
pub fn upsample(t: &ChromaTaps, sample: impl Fn(i32, i32) -> f32) -> f32 {
    let mut acc = 0.0f32;
    unroll!(j in [0 1 2 3] {
        let mut r = 0.0f32;
        unroll!(i in [0 1 2 3] {
            r += t.wx[i] * sample(t.x0 + i as i32, t.y0 + j as i32);
        });
        acc += t.wy[j] * r;
    });
    acc
}

/// Chroma channel `c` (of size `size`) upsampled with taps `t`, read from memory.
///
/// # Safety
/// `c` must describe readable memory of that size.
#[inline(always)]
pub unsafe fn chroma(c: &Channel, size: (u32, u32), t: &ChromaTaps) -> f32 {
    upsample(t, |i, j| unsafe {
        code(c, clamp_i(i, size.0), clamp_i(j, size.1))
    })
}

#[inline(always)]
fn clamp01(v: f32) -> f32 {
    if v > 0.0 {
        if v < 1.0 { v } else { 1.0 }
    } else {
        0.0
    }
}

/// Inverse transfer function: non-linear R', G' or B' in [0, 1] to linear light.
#[inline(always)]
pub fn to_linear(v: f32, transfer: u32) -> f32 {
    match transfer {
        TRANSFER_SRGB => {
            if v <= 0.04045 {
                v / 12.92
            } else {
                powf_ratio((v + 0.055) / 1.055, 2.4, 12, 5)
            }
        }
        TRANSFER_BT709 => {
            if v < 0.081 {
                v / 4.5
            } else {
                powf_ratio((v + 0.099) / 1.099, 1.0 / 0.45, 20, 9)
            }
        }
        TRANSFER_BT2020_12 => {
            const A: f32 = 1.099_296_8;
            const B: f32 = 0.018_053_97;
            if v < 4.5 * B {
                v / 4.5
            } else {
                powf_ratio((v + (A - 1.0)) / A, 1.0 / 0.45, 20, 9)
            }
        }
        _ => v,
    }
}

/// Non-linear R'G'B' in [0, 1] (clamped) from Y'CbCr code values.
#[inline(always)]
pub fn yuv_to_rgb(s: &ColorSource, y: f32, cb: f32, cr: f32) -> [f32; 3] {
    let yv = (y - s.y_offset) / s.y_scale;
    let cb = (cb - s.c_offset) / s.c_scale;
    let cr = (cr - s.c_offset) / s.c_scale;
    [
        clamp01(yv + s.cr_r * cr),
        clamp01(yv + s.cb_g * cb + s.cr_g * cr),
        clamp01(yv + s.cb_b * cb),
    ]
}

/// Non-linear R'G'B' in [0, 1] of pixel (x, y) (clamped).
///
/// # Safety
/// (x, y) must lie inside the frame that `s` describes, in readable memory.
#[inline(always)]
pub unsafe fn nonlinear_rgb(s: &ColorSource, x: u32, y: u32) -> [f32; 3] {
    match s.family {
        FAMILY_YUV => {
            let (cb, cr) = if s.sub_x == 0 && s.sub_y == 0 {
                unsafe { (code(&s.c[1], x, y), code(&s.c[2], x, y)) }
            } else {
                let (t, size) = (chroma_taps(s, x, y), chroma_size(s));
                unsafe { (chroma(&s.c[1], size, &t), chroma(&s.c[2], size, &t)) }
            };
            yuv_to_rgb(s, unsafe { code(&s.c[0], x, y) }, cb, cr)
        }
        FAMILY_RGB => [
            clamp01((unsafe { code(&s.c[0], x, y) } - s.y_offset) / s.y_scale),
            clamp01((unsafe { code(&s.c[1], x, y) } - s.y_offset) / s.y_scale),
            clamp01((unsafe { code(&s.c[2], x, y) } - s.y_offset) / s.y_scale),
        ],
        _ => {
            let v = clamp01((unsafe { code(&s.c[0], x, y) } - s.y_offset) / s.y_scale);
            [v, v, v]
        }
    }
}

/// The inverse transfer function of `s` on each channel.
#[inline(always)]
pub fn to_linear_rgb(s: &ColorSource, p: [f32; 3]) -> [f32; 3] {
    [
        to_linear(p[0], s.transfer),
        to_linear(p[1], s.transfer),
        to_linear(p[2], s.transfer),
    ]
}

/// Linear RGB in [0, 1] of pixel (x, y).
///
/// # Safety
/// As [`nonlinear_rgb`].
#[inline(always)]
pub unsafe fn linear_rgb(s: &ColorSource, x: u32, y: u32) -> [f32; 3] {
    to_linear_rgb(s, unsafe { nonlinear_rgb(s, x, y) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catmull_rom_interpolates() {
        assert_eq!(catmull_rom(0.0), [0.0, 1.0, 0.0, 0.0]);
        for t in [0.25f32, 0.5, 0.75] {
            let w = catmull_rom(t);
            assert!((w.iter().sum::<f32>() - 1.0).abs() < 1e-6);
            // linear ramps are reproduced exactly
            let v: f32 = w
                .iter()
                .enumerate()
                .map(|(i, w)| w * (i as f32 - 1.0))
                .sum();
            assert!((v - t).abs() < 1e-6);
        }
        assert_eq!(taps(5, 1, 0.5), (1, catmull_rom(0.25)));
        assert_eq!(taps(0, 1, 0.5), (-2, catmull_rom(0.75)));
        assert_eq!(taps(4, 1, 0.0), (1, [0.0, 1.0, 0.0, 0.0]));
    }

    #[test]
    fn root_steps_converge_to_the_power() {
        // The device path's arithmetic, run on the host from a deliberately poor estimate
        // (relative error 1e-6, worse than the hardware's): two steps reach the f64 power.
        let mut worst = 0.0f64;
        for i in 1..20_000u32 {
            let x = i as f64 / 20_000.0;
            for (num, den) in [(12u32, 5u32), (20, 9), (1, 3)] {
                let want = x.powf(num as f64 / den as f64);
                let big = powi_f64(x, num);
                let mut p = want * (1.0 + 1e-6);
                for _ in 0..2 {
                    p = root_step(p, big, den);
                }
                worst = worst.max((p / want - 1.0).abs());
            }
        }
        assert!(worst < 1e-13, "{worst}");
        assert_eq!(powi_f64(1.5, 12), 1.5f64.powi(12));
    }

    #[test]
    fn transfer_functions_are_continuous_and_fixed_at_ends() {
        for t in [
            TRANSFER_SRGB,
            TRANSFER_BT709,
            TRANSFER_BT2020_12,
            TRANSFER_LINEAR,
        ] {
            assert_eq!(to_linear(0.0, t), 0.0);
            assert!((to_linear(1.0, t) - 1.0).abs() < 1e-6);
        }
        let a = to_linear(0.04045, TRANSFER_SRGB);
        let b = to_linear(0.040451, TRANSFER_SRGB);
        assert!((a - b).abs() < 1e-6);
        assert!((to_linear(0.5, TRANSFER_SRGB) - 0.214_041).abs() < 1e-5);
        assert!((to_linear(0.5, TRANSFER_BT709) - 0.259_589).abs() < 1e-5);
    }
}
