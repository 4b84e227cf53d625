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

/// `x^y` for `x > 0` as the host's `powf` rounds it: `std` on the host; on the GPU
/// `exp2(y·log2 x)` evaluated in f64 and rounded once, which agrees with the host in all
/// but rare half-way cases. (SSIMULACRA2 amplifies last-bit differences of its input: the
/// SFU approximations alone would move GPU scores by up to ~0.08 from the CPU's.)
#[inline(always)]
pub fn powf(x: f32, y: f32) -> f32 {
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.powf(y)
    }
    #[cfg(target_arch = "nvptx64")]
    {
        if x <= 0.0 {
            return 0.0;
        }
        exp2_f64(y as f64 * log2_f64(x as f64)) as f32
    }
}

/// Cube root rounded like the host's `cbrt`: `std` on the host; on the GPU the SFU estimate
/// refined by one Newton step in f64 (about 44 correct bits), then rounded once.
#[inline(always)]
pub fn cbrtf(x: f32) -> f32 {
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.cbrt()
    }
    #[cfg(target_arch = "nvptx64")]
    {
        if x == 0.0 || x != x {
            return x;
        }
        cbrt_refine(gpumetrics_device::math::cbrtf(x), x)
    }
}

/// One Newton step for `cbrt(x)` from the estimate `y`, in f64.
#[inline(always)]
pub fn cbrt_refine(y: f32, x: f32) -> f32 {
    let (y, x) = (y as f64, x as f64);
    (y - (y * y * y - x) / (3.0 * y * y)) as f32
}

/// log2 of a positive normal f64 (about 1e-16 relative error): `x = m·2^e` with m in
/// [√½, √2), ln m from the atanh series.
#[inline(always)]
pub fn log2_f64(x: f64) -> f64 {
    let bits = x.to_bits();
    let mut e = ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mut m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | (1023u64 << 52));
    if m > core::f64::consts::SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    let t = (m - 1.0) / (m + 1.0);
    let t2 = t * t;
    // 2 / (2k + 1), k = 0..12
    const C: [f64; 12] = {
        let mut c = [0.0; 12];
        let mut k = 0;
        while k < 12 {
            c[k] = 2.0 / (2 * k + 1) as f64;
            k += 1;
        }
        c
    };
    let mut s = 0.0f64;
    for c in C.iter().rev() {
        s = s * t2 + c;
    }
    e as f64 + s * t * core::f64::consts::LOG2_E
}

/// 2^z in f64 (about 1e-16 relative error; 0 below 2^-1022).
#[inline(always)]
pub fn exp2_f64(z: f64) -> f64 {
    if z < -1022.0 {
        return 0.0;
    }
    let mut n = z as i64; // toward zero
    let mut f = z - n as f64;
    if f > 0.5 {
        n += 1;
        f -= 1.0;
    } else if f < -0.5 {
        n -= 1;
        f += 1.0;
    }
    let r = f * core::f64::consts::LN_2;
    // 1 / k, k = 1..=16
    const INV: [f64; 16] = {
        let mut c = [0.0; 16];
        let mut k = 0;
        while k < 16 {
            c[k] = 1.0 / (k + 1) as f64;
            k += 1;
        }
        c
    };
    let mut p = 1.0f64;
    for inv in INV.iter().rev() {
        p = 1.0 + p * r * inv;
    }
    p * f64::from_bits(((n + 1023) as u64) << 52)
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
    let u = (x as f32 - site) / (1u32 << sub) as f32;
    let j = {
        let t = u as i32; // truncates toward zero
        if (t as f32) > u { t - 1 } else { t }
    };
    (j - 1, catmull_rom(u - j as f32))
}

#[inline(always)]
fn clamp_i(v: i32, hi: u32) -> u32 {
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

/// Chroma channel `c` upsampled to luma pixel (x, y), in code values.
///
/// # Safety
/// `s` must describe readable memory.
#[inline(always)]
pub unsafe fn chroma(s: &ColorSource, c: &Channel, x: u32, y: u32) -> f32 {
    if s.sub_x == 0 && s.sub_y == 0 {
        return unsafe { code(c, x, y) };
    }
    let cw = s.width.div_ceil(1 << s.sub_x);
    let ch = s.height.div_ceil(1 << s.sub_y);
    let (x0, wx) = taps(x, s.sub_x, s.site_x);
    let (y0, wy) = taps(y, s.sub_y, s.site_y);
    let mut acc = 0.0f32;
    for (j, wyj) in wy.iter().enumerate() {
        if *wyj == 0.0 {
            continue;
        }
        let yy = clamp_i(y0 + j as i32, ch);
        let mut row = 0.0f32;
        for (i, wxi) in wx.iter().enumerate() {
            if *wxi != 0.0 {
                row += *wxi * unsafe { code(c, clamp_i(x0 + i as i32, cw), yy) };
            }
        }
        acc += *wyj * row;
    }
    acc
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
                powf((v + 0.055) / 1.055, 2.4)
            }
        }
        TRANSFER_BT709 => {
            if v < 0.081 {
                v / 4.5
            } else {
                powf((v + 0.099) / 1.099, 1.0 / 0.45)
            }
        }
        TRANSFER_BT2020_12 => {
            const A: f32 = 1.099_296_8;
            const B: f32 = 0.018_053_97;
            if v < 4.5 * B {
                v / 4.5
            } else {
                powf((v + (A - 1.0)) / A, 1.0 / 0.45)
            }
        }
        _ => v,
    }
}

/// Non-linear R'G'B' in [0, 1] of pixel (x, y) (clamped).
///
/// # Safety
/// (x, y) must lie inside the frame that `s` describes, in readable memory.
#[inline(always)]
pub unsafe fn nonlinear_rgb(s: &ColorSource, x: u32, y: u32) -> [f32; 3] {
    match s.family {
        FAMILY_YUV => {
            let yv = (unsafe { code(&s.c[0], x, y) } - s.y_offset) / s.y_scale;
            let cb = (unsafe { chroma(s, &s.c[1], x, y) } - s.c_offset) / s.c_scale;
            let cr = (unsafe { chroma(s, &s.c[2], x, y) } - s.c_offset) / s.c_scale;
            [
                clamp01(yv + s.cr_r * cr),
                clamp01(yv + s.cb_g * cb + s.cr_g * cr),
                clamp01(yv + s.cb_b * cb),
            ]
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

/// Linear RGB in [0, 1] of pixel (x, y).
///
/// # Safety
/// As [`nonlinear_rgb`].
#[inline(always)]
pub unsafe fn linear_rgb(s: &ColorSource, x: u32, y: u32) -> [f32; 3] {
    let p = unsafe { nonlinear_rgb(s, x, y) };
    [
        to_linear(p[0], s.transfer),
        to_linear(p[1], s.transfer),
        to_linear(p[2], s.transfer),
    ]
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
    fn f64_helpers_round_like_std() {
        let mut worst = 0.0f64;
        for i in 1..20_000u32 {
            let x = i as f32 / 20_000.0;
            let p = exp2_f64(2.4f32 as f64 * log2_f64(x as f64)) as f32;
            let q = x.powf(2.4);
            worst = worst.max(((p.to_bits() as i64) - (q.to_bits() as i64)).abs() as f64);
            let c = cbrt_refine(x.cbrt() * (1.0 + 3e-7), x);
            assert_eq!(c, x.cbrt(), "{x}");
        }
        assert!(worst <= 1.0, "{worst} ulp");
        assert!((exp2_f64(-3.25) - 2f64.powf(-3.25)).abs() < 1e-16);
        assert!((log2_f64(0.3) - 0.3f64.log2()).abs() < 1e-15);
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
