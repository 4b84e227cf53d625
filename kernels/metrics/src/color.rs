//! Any accepted pixel format to linear light with BT.709 primaries, per pixel: the stage
//! that SSIMULACRA2 (and any metric defined on linear light) starts from. The CPU backend
//! and the GPU kernels call the same [`linear_rgb`].
//!
//! The conversion is display-referred and follows the reference the linear-light metrics
//! are checked against (the `ssimulacra2` crate's `Yuv`/`Rgb` inputs, i.e. `yuvxyb`): what a
//! viewer sees, through the display's EOTF, not the camera's inverse OETF. Steps for
//! Y'CbCr: read Y' and the chroma samples around the pixel, upsample chroma with a 4-tap
//! Catmull-Rom filter at the position given by the chroma siting (edge clamped; the
//! reference takes the nearest sample instead), scale the code values to Y' in [0, 1] and
//! Cb, Cr in [-0.5, 0.5] (clamped there), apply the Y'CbCr → R'G'B' matrix, apply the
//! transfer function's EOTF (BT.1886 for the SDR video transfers), then convert the primaries
//! to BT.709. R'G'B' outside [0, 1] (legal codes of saturated colours, codec overshoot) is
//! clipped to [0, 1] for PQ and HLG, as their displays do, and reaches the SDR curves
//! unclipped, as in the reference. R'G'B' input skips the matrix; gray input is
//! R' = G' = B' = Y'.

use crate::channel::{Channel, load};

/// Colour family of a [`ColorSource`].
pub const FAMILY_GRAY: u32 = 0;
pub const FAMILY_YUV: u32 = 1;
pub const FAMILY_RGB: u32 = 2;

/// Transfer functions to linear light ([`ColorSource::transfer`]).
pub const TRANSFER_LINEAR: u32 = 0;
/// sRGB's EOTF, with the continuous constants of `yuvxyb` (alpha 1.0550107).
pub const TRANSFER_SRGB: u32 = 1;
/// BT.1886 display EOTF, L = V^2.4: what BT.709, BT.601, SMPTE 240M and BT.2020 video is
/// shown with (the reference maps all of them, and "unspecified", to it).
pub const TRANSFER_BT1886: u32 = 2;
/// Pure power laws: BT.470 System M (2.2), System B/G (2.8), and GStreamer's gamma 1.8 / 2.0
/// and Adobe RGB (563/256).
pub const TRANSFER_GAMMA22: u32 = 3;
pub const TRANSFER_GAMMA28: u32 = 4;
pub const TRANSFER_GAMMA18: u32 = 5;
pub const TRANSFER_GAMMA20: u32 = 6;
pub const TRANSFER_ADOBE_RGB: u32 = 7;
/// SMPTE ST 2084 (PQ): EOTF to absolute light, then the reference's inverse OOTF
/// (BT.1886 inverse and BT.709 inverse OETF of 100·L, divided by 59.490803), scene light.
pub const TRANSFER_PQ: u32 = 8;
/// ARIB STD-B67 (HLG): inverse OETF to scene light (no OOTF, as the reference).
pub const TRANSFER_HLG: u32 = 9;
/// Logarithmic transfers of H.273 (100:1 and 316.22777:1 range).
pub const TRANSFER_LOG100: u32 = 10;
pub const TRANSFER_LOG316: u32 = 11;

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
    /// Y'CbCr code value to normalised value, `code · scale + offset` (fused, as the
    /// reference): Y' to [0, 1], Cb and Cr to [-0.5, 0.5].
    pub y_scale: f32,
    pub y_offset: f32,
    pub c_scale: f32,
    pub c_offset: f32,
    /// R'G'B' and gray code value to [0, 1]: `(code − black) / span`.
    pub black: f32,
    pub span: f32,
    /// Y'CbCr → R'G'B', row-major (rows R', G', B'; columns Y', Cb, Cr).
    pub yuv: [f32; 9],
    /// Linear RGB in the source's primaries → BT.709 primaries, row-major; applied when
    /// `convert_primaries` is not 0.
    pub primaries: [f32; 9],
    pub convert_primaries: u32,
    /// Position of chroma sample 0 in luma pixels: 0 co-sited, 0.5 centred.
    pub site_x: f32,
    pub site_y: f32,
    /// Not 0: chroma of luma pixel x is sample x >> sub_x (the nearest sample to the left,
    /// as the reference `yuvxyb` reads it) instead of the Catmull-Rom interpolation.
    pub chroma_nearest: u32,
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
fn taps(x: u32, sub: u32, site: f32, nearest: bool) -> (i32, [f32; 4]) {
    if sub == 0 || nearest {
        return ((x >> sub) as i32 - 1, [0.0, 1.0, 0.0, 0.0]);
    }
    // × 2^-sub: exact, as the division it stands for, and far cheaper on the GPU.
    let u = (x as f32 - site) * f32::from_bits((127 - sub) << 23);
    let j = {
        let t = gpumetrics_device::math::trunc_i32(u); // `u as i32`: toward zero
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
    let nearest = s.chroma_nearest != 0;
    let (x0, wx) = taps(x, s.sub_x, s.site_x, nearest);
    let (y0, wy) = taps(y, s.sub_y, s.site_y, nearest);
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

/// Chroma upsampled with taps `t` from `sample(i, j)`, the sample at column `t.x0 + i` and
/// row `t.y0 + j` (i, j in 0..4; unclamped), in code values. All sixteen taps, zero
/// weights included (they add exactly zero): the GPU then runs it without branches. The
/// offsets are constants after unrolling, so a sampler reading a tile at a base address
/// gets them as immediate offsets.
#[inline(always)]
pub fn upsample(t: &ChromaTaps, sample: impl Fn(usize, usize) -> f32) -> f32 {
    let mut acc = 0.0f32;
    unroll!(j in [0 1 2 3] {
        let mut r = 0.0f32;
        unroll!(i in [0 1 2 3] {
            r += t.wx[i] * sample(i, j);
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
        code(
            c,
            clamp_i(t.x0 + i as i32, size.0),
            clamp_i(t.y0 + j as i32, size.1),
        )
    })
}

/// `v` within [`lo`, `hi`] (`lo` < `hi`; NaN gives `lo`). Two selects, not nested
/// branches: the GPU compiled the nested form to a branch per clamp.
#[inline(always)]
fn clamp(v: f32, lo: f32, hi: f32) -> f32 {
    let a = if v > lo { v } else { lo };
    if a < hi { a } else { hi }
}

#[inline(always)]
fn clamp01(v: f32) -> f32 {
    clamp(v, 0.0, 1.0)
}

/// Transfer function `transfer` to linear light, for one non-linear value (which may lie
/// outside [0, 1]: R'G'B' from Y'CbCr is not clamped). PQ and HLG clip it to [0, 1] first;
/// the other curves take it as it is, as the reference does. The curves and their arithmetic are
/// the reference's (`yuvxyb`, as built by default), with its power function [`refmath::powf`].
#[inline(always)]
pub fn to_linear(v: f32, transfer: u32) -> f32 {
    use refmath::powf;
    const EPS: f32 = f32::EPSILON;
    // Below EPS the power laws give black (negative R'G'B' included), as the reference.
    let power = |g: f32| if v < EPS { 0.0 } else { powf(v, g) };
    match transfer {
        TRANSFER_SRGB => {
            const ALPHA: f32 = 1.055_010_7;
            const BETA: f32 = 0.003_041_282_5;
            let x = if v > 0.0 { v } else { 0.0 };
            if x < 12.92 * BETA {
                x / 12.92
            } else {
                powf((x + (ALPHA - 1.0)) / ALPHA, 2.4)
            }
        }
        TRANSFER_BT1886 => power(2.4),
        TRANSFER_GAMMA22 => power(2.2),
        TRANSFER_GAMMA28 => power(2.8),
        TRANSFER_GAMMA18 => power(1.8),
        TRANSFER_GAMMA20 => power(2.0),
        TRANSFER_ADOBE_RGB => power(563.0 / 256.0),
        // A PQ or HLG display clips the signal to [0, 1]: past 1.0 the PQ EOTF runs into its
        // pole near 2 (R' 1.74, from Y' 235 and Cb = Cr = 240 under BT.2020, is 32,000
        // times its 10,000 cd/m² peak) and HLG's exponential to 60 times its peak: light no
        // display shows, which made the scores unbounded (SSIMULACRA2 −6.7e9).
        // The SDR curves take such values as the reference does (docs/METRICS.md says why).
        TRANSFER_PQ => refmath::pq(clamp01(v)),
        TRANSFER_HLG => refmath::hlg(clamp01(v)),
        TRANSFER_LOG100 => {
            if v <= EPS {
                0.01
            } else {
                powf(10.0, 2.0 * (v - 1.0))
            }
        }
        TRANSFER_LOG316 => {
            if v <= EPS {
                0.003_162_277_6
            } else {
                powf(10.0, 2.5 * (v - 1.0))
            }
        }
        _ => v,
    }
}

/// The reference's transcendental functions, reproduced operation for operation so that
/// linear light equals the reference's to the last bit, on the host and on the GPU alike
/// (plain f32 multiplies and adds, no library calls). `yuvxyb` builds by default with its
/// "fastmath" feature: `powf(x, y) = 2^(y · log2 x)` with degree-5 polynomials for the
/// mantissa's log2 and for 2^fraction (José Fonseca's), and `a · b + c` unfused on x86-64.
/// Their error, about 2e-4 relative, is part of the reference's scores: computing the
/// exact power instead moves SSIMULACRA2 by up to 0.07 on 10-bit BT.2020 video.
pub mod refmath {
    /// `a · b + c`, two roundings.
    #[inline(always)]
    fn madd(a: f32, b: f32, c: f32) -> f32 {
        a * b + c
    }

    #[inline(always)]
    fn poly5(x: f32, c: [f32; 6]) -> f32 {
        let mut r = c[5];
        let mut i = 5;
        while i > 0 {
            i -= 1;
            r = madd(x, r, c[i]);
        }
        r
    }

    /// log2 x: the exponent plus a polynomial in the mantissa m ∈ [1, 2), times (m − 1).
    #[inline(always)]
    pub fn log2(x: f32) -> f32 {
        let bits = x.to_bits() as i32;
        let exp = (((bits & 0x7F80_0000) >> 23) - 127) as f32;
        let mant = f32::from_bits(((bits & 0x007F_FFFF) | 1f32.to_bits() as i32) as u32);
        let p = poly5(
            mant,
            [
                3.115_79,
                -3.324_199,
                2.598_845_2,
                -1.231_530_3,
                3.182_133_7E-1,
                -3.443_600_6E-2,
            ],
        );
        p * (mant - 1.0) + exp
    }

    /// 2^x: 2^i from the exponent bits times a polynomial in the fraction (i = x − ½
    /// truncated toward zero).
    #[inline(always)]
    pub fn exp2(x: f32) -> f32 {
        let x = x.clamp(-126.999_99, 129.0);
        let i = gpumetrics_device::math::trunc_i32(x - 0.5);
        let f = x - i as f32;
        let scale = f32::from_bits(((i + 127) << 23) as u32);
        scale
            * poly5(
                f,
                [
                    9.999_999_4E-1,
                    6.931_531E-1,
                    2.401_536_1E-1,
                    5.582_631_8E-2,
                    8.989_34E-3,
                    1.877_576_7E-3,
                ],
            )
    }

    /// x^y as the reference computes it.
    #[inline(always)]
    pub fn powf(x: f32, y: f32) -> f32 {
        exp2(log2(x) * y)
    }

    /// e^x as the reference computes it: 2^⌊t⌋ · 2^(t − ⌊t⌋), t = x · log2 e.
    #[inline(always)]
    pub fn expf(x: f32) -> f32 {
        let t = core::f32::consts::LOG2_E * x;
        let ft = {
            let i = gpumetrics_device::math::trunc_i32(t); // toward zero
            (if (i as f32) > t { i - 1 } else { i }) as f32
        };
        exp2(ft) * exp2(t - ft)
    }

    const BT709_ALPHA: f32 = 1.099_296_8;
    const BT709_BETA: f32 = 0.018_053_97;
    const PQ_M1: f32 = 0.159_301_76;
    const PQ_M2: f32 = 78.843_75;
    const PQ_C1: f32 = 0.835_937_5;
    const PQ_C2: f32 = 18.851_563;
    const PQ_C3: f32 = 18.6875;
    const PQ_OOTF_SCALE: f32 = 59.490_803;
    const HLG_A: f32 = 0.178_832_77;
    const HLG_B: f32 = 0.284_668_92;
    const HLG_C: f32 = 0.559_910_7;

    /// PQ code value to the reference's linear light: the ST 2084 EOTF (1.0 = 10,000
    /// cd/m²), then its inverse OOTF: ×100, the BT.1886 inverse, the BT.709 inverse OETF,
    /// ÷ 59.490803 (scene light).
    #[inline(always)]
    pub fn pq(v: f32) -> f32 {
        let display = if v > 0.0 {
            let p = powf(v, 1.0 / PQ_M2);
            let num = if p - PQ_C1 > 0.0 { p - PQ_C1 } else { 0.0 };
            // The reference fuses this one (`mul_add`).
            let den = gpumetrics_device::math::fmaf(PQ_C3, -p, PQ_C2);
            let den = if den > f32::EPSILON {
                den
            } else {
                f32::EPSILON
            };
            powf(num / den, 1.0 / PQ_M1)
        } else {
            0.0
        };
        let d = display * 100.0;
        let e = if d < f32::EPSILON {
            0.0
        } else {
            powf(d, 1.0 / 2.4)
        };
        let e = if e > 0.0 { e } else { 0.0 };
        let scene = if e < 4.5 * BT709_BETA {
            e / 4.5
        } else {
            powf((e + (BT709_ALPHA - 1.0)) / BT709_ALPHA, 1.0 / 0.45)
        };
        scene / PQ_OOTF_SCALE
    }

    /// HLG code value to scene light (the inverse OETF; 1.0 = nominal peak).
    #[inline(always)]
    pub fn hlg(v: f32) -> f32 {
        let x = if v > 0.0 { v } else { 0.0 };
        if x <= 0.5 {
            (x * x) * (1.0 / 3.0)
        } else {
            (expf((x - HLG_C) / HLG_A) + HLG_B) / 12.0
        }
    }
}

/// R'G'B' from Y'CbCr code values: Y' scaled to [0, 1] and Cb, Cr to [-0.5, 0.5] (each
/// clamped), then the matrix. R'G'B' is not clamped here: out-of-gamut colours reach
/// [`to_linear`], which clips them for PQ and HLG only.
#[inline(always)]
pub fn yuv_to_rgb(s: &ColorSource, y: f32, cb: f32, cr: f32) -> [f32; 3] {
    use gpumetrics_device::math::fmaf;
    let yv = clamp01(fmaf(y, s.y_scale, s.y_offset));
    let cb = clamp(fmaf(cb, s.c_scale, s.c_offset), -0.5, 0.5);
    let cr = clamp(fmaf(cr, s.c_scale, s.c_offset), -0.5, 0.5);
    let m = &s.yuv;
    [
        m[0] * yv + (m[1] * cb + m[2] * cr),
        m[3] * yv + (m[4] * cb + m[5] * cr),
        m[6] * yv + (m[7] * cb + m[8] * cr),
    ]
}

/// Non-linear R'G'B' of pixel (x, y) (RGB and gray in [0, 1]).
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
            clamp01((unsafe { code(&s.c[0], x, y) } - s.black) / s.span),
            clamp01((unsafe { code(&s.c[1], x, y) } - s.black) / s.span),
            clamp01((unsafe { code(&s.c[2], x, y) } - s.black) / s.span),
        ],
        _ => {
            let v = clamp01((unsafe { code(&s.c[0], x, y) } - s.black) / s.span);
            [v, v, v]
        }
    }
}

/// The transfer function of `s` on each channel, then its primaries to BT.709.
#[inline(always)]
pub fn to_linear_rgb(s: &ColorSource, p: [f32; 3]) -> [f32; 3] {
    let l = [
        to_linear(p[0], s.transfer),
        to_linear(p[1], s.transfer),
        to_linear(p[2], s.transfer),
    ];
    if s.convert_primaries == 0 {
        return l;
    }
    let m = &s.primaries;
    [
        m[0] * l[0] + (m[1] * l[1] + m[2] * l[2]),
        m[3] * l[0] + (m[4] * l[1] + m[5] * l[2]),
        m[6] * l[0] + (m[7] * l[1] + m[8] * l[2]),
    ]
}

/// Linear light (BT.709 primaries) of pixel (x, y).
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
        assert_eq!(taps(5, 1, 0.5, false), (1, catmull_rom(0.25)));
        assert_eq!(taps(0, 1, 0.5, false), (-2, catmull_rom(0.75)));
        assert_eq!(taps(4, 1, 0.0, false), (1, [0.0, 1.0, 0.0, 0.0]));
        // Nearest: sample x >> sub, whatever the siting.
        assert_eq!(taps(5, 1, 0.5, true), (1, [0.0, 1.0, 0.0, 0.0]));
        assert_eq!(taps(0, 1, 0.5, true), (-1, [0.0, 1.0, 0.0, 0.0]));
    }

    #[test]
    fn transfer_functions_are_continuous_and_fixed_at_ends() {
        // The SDR curves (to 1.0 and through 0), the HDR ones (through 0) and the log ones
        // (to 1.0; they stop above 0).
        let sdr = [
            TRANSFER_SRGB,
            TRANSFER_BT1886,
            TRANSFER_GAMMA22,
            TRANSFER_GAMMA28,
            TRANSFER_GAMMA18,
            TRANSFER_GAMMA20,
            TRANSFER_ADOBE_RGB,
            TRANSFER_LINEAR,
        ];
        for t in sdr.into_iter().chain([TRANSFER_HLG, TRANSFER_PQ]) {
            assert_eq!(to_linear(0.0, t), 0.0, "{t}");
            assert!(to_linear(-0.25, t) <= 0.0, "{t}");
        }
        for t in sdr.into_iter().chain([TRANSFER_LOG100, TRANSFER_LOG316]) {
            assert!(
                (to_linear(1.0, t) - 1.0).abs() < 2e-4,
                "{t}: {}",
                to_linear(1.0, t)
            );
        }
        // sRGB's two pieces meet at 12.92·beta (to the reference power's accuracy).
        let t = 12.92f32 * 0.003_041_282_5;
        let (a, b) = (
            to_linear(t * 0.999_999, TRANSFER_SRGB),
            to_linear(t, TRANSFER_SRGB),
        );
        assert!((a / b - 1.0).abs() < 3e-4, "{a} {b}");
        assert!((to_linear(0.5, TRANSFER_SRGB) / 0.214_041 - 1.0).abs() < 3e-4);
        // BT.1886: a 2.4 power, three times the camera curve's values in the dark.
        assert!((to_linear(0.5, TRANSFER_BT1886) / 0.5f32.powf(2.4) - 1.0).abs() < 3e-4);
        assert!((to_linear(0.1, TRANSFER_BT1886) / 0.003_981 - 1.0).abs() < 3e-4);
        // Values above 1 (unclamped R'G'B') keep the curve.
        assert!(to_linear(1.1, TRANSFER_BT1886) > 1.25);
    }

    #[test]
    fn reference_power_is_close_to_the_exact_one() {
        let mut worst = 0.0f32;
        for i in 1..10_000 {
            let x = i as f32 / 5000.0;
            for y in [2.4f32, 1.0 / 2.4, 2.2, 1.0 / 0.45] {
                worst = worst.max((refmath::powf(x, y) / x.powf(y) - 1.0).abs());
            }
            let e = (i as f32 - 5000.0) / 500.0;
            worst = worst.max((refmath::expf(e) / e.exp() - 1.0).abs());
        }
        assert!(worst < 5e-4, "{worst}");
        // Exact on powers of two for the log (mantissa 1).
        assert_eq!(refmath::log2(8.0), 3.0);
    }

    /// A BT.2020 limited-range 8-bit Y'CbCr source of `transfer`, primaries left as they
    /// are: [`to_linear_rgb`] gives the transfer's output itself.
    fn bt2020_source(transfer: u32) -> ColorSource {
        let (kr, kb) = (0.2627f32, 0.0593f32);
        let kg = 1.0 - kr - kb;
        ColorSource {
            family: FAMILY_YUV,
            transfer,
            y_scale: 1.0 / 219.0,
            y_offset: -16.0 / 219.0,
            c_scale: 1.0 / 224.0,
            c_offset: -128.0 / 224.0,
            yuv: [
                1.0,
                0.0,
                2.0 * (1.0 - kr),
                1.0,
                -2.0 * kb * (1.0 - kb) / kg,
                -2.0 * kr * (1.0 - kr) / kg,
                1.0,
                2.0 * (1.0 - kb),
                0.0,
            ],
            ..ColorSource::default()
        }
    }

    fn linear_of_codes(s: &ColorSource, y: f32, cb: f32, cr: f32) -> [f32; 3] {
        to_linear_rgb(s, yuv_to_rgb(s, y, cb, cr))
    }

    #[test]
    fn out_of_range_rgb_is_clipped_for_pq_and_hlg() {
        // Y' 235, Cb = Cr = 240: R' = 1 + 2(1 − Kr)·0.5 ≈ 1.74, B' ≈ 1.94, G' ≈ 0.23.
        let rgb = yuv_to_rgb(&bt2020_source(TRANSFER_PQ), 235.0, 240.0, 240.0);
        assert!(rgb[0] > 1.7 && rgb[2] > 1.9, "{rgb:?}");
        for t in [TRANSFER_PQ, TRANSFER_HLG] {
            let s = bt2020_source(t);
            let peak = to_linear(1.0, t);
            let l = linear_of_codes(&s, 235.0, 240.0, 240.0);
            // R' and B' at the display's peak, G' on the curve.
            assert_eq!([l[0], l[2]], [peak, peak], "{t}: {l:?}");
            assert_eq!(l[1], to_linear(rgb[1], t), "{t}: {l:?}");
            // R' and B' below 0 (Y' 16, Cb = Cr = 16): black.
            let dark = linear_of_codes(&s, 16.0, 16.0, 16.0);
            assert_eq!([dark[0], dark[2]], [0.0, 0.0], "{t}: {dark:?}");
            // Every legal code (every third value of each) stays in [0, peak].
            for y in (16..=235).step_by(3) {
                for cb in (16..=240).step_by(3) {
                    for cr in (16..=240).step_by(3) {
                        let l = linear_of_codes(&s, y as f32, cb as f32, cr as f32);
                        assert!(
                            l.iter().all(|v| (0.0..=peak).contains(v)),
                            "{t}: Y' {y} Cb {cb} Cr {cr}: {l:?} (peak {peak})"
                        );
                    }
                }
            }
        }
        // BT.1886 takes R'G'B' unclipped, as the reference (the `ssimulacra2` crate's video
        // input) does: V^2.4 of 1.74, bounded by the largest R'G'B' legal codes give
        // (1 + 2(1 − Kb)·0.5 ≈ 1.94, so below 1.94^2.4 ≈ 4.9).
        let s = bt2020_source(TRANSFER_BT1886);
        let l = linear_of_codes(&s, 235.0, 240.0, 240.0);
        assert_eq!(l[0], refmath::powf(rgb[0], 2.4), "{l:?}");
        for y in (16..=235).step_by(3) {
            for cb in (16..=240).step_by(3) {
                for cr in (16..=240).step_by(3) {
                    let l = linear_of_codes(&s, y as f32, cb as f32, cr as f32);
                    assert!(l.iter().all(|v| (0.0..4.9).contains(v)), "{l:?}");
                }
            }
        }
    }

    #[test]
    fn hdr_curves_match_their_definitions() {
        // PQ through the reference's inverse OOTF, evaluated exactly in f64.
        let display = |v: f64| {
            let (m1, m2, c1, c2, c3) = (
                2610.0 / 16384.0,
                2523.0 / 32.0,
                3424.0 / 4096.0,
                2413.0 / 128.0,
                2392.0 / 128.0,
            );
            let p = v.powf(1.0 / m2);
            ((p - c1).max(0.0) / (c2 - c3 * p)).powf(1.0 / m1) * 100.0
        };
        for v in [0.1f32, 0.3, 0.58, 0.75, 1.0] {
            let e = display(v as f64).powf(1.0 / 2.4);
            let (a, b) = (1.099_296_8f64, 0.018_053_97f64);
            let scene = if e < 4.5 * b {
                e / 4.5
            } else {
                ((e + a - 1.0) / a).powf(1.0 / 0.45)
            };
            let want = scene / 59.490_803;
            let got = to_linear(v, TRANSFER_PQ) as f64;
            assert!((got / want - 1.0).abs() < 2e-3, "PQ {v}: {got} vs {want}");
        }
        // HLG: x²/3 up to 0.5, continuous there; 1.0 is the nominal peak.
        assert_eq!(to_linear(0.5, TRANSFER_HLG), 0.25 * (1.0 / 3.0));
        assert!((to_linear(0.500_01, TRANSFER_HLG) * 12.0 - 1.0).abs() < 1e-3);
        assert!((to_linear(1.0, TRANSFER_HLG) - 1.0).abs() < 1e-3);
        assert!((to_linear(0.5, TRANSFER_LOG100) / 0.1 - 1.0).abs() < 3e-4);
        assert_eq!(to_linear(0.0, TRANSFER_LOG316), 0.003_162_277_6);
    }
}
