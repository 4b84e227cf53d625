//! Float math that works on both targets without libdevice.
//!
//! On `nvptx64` the `f32` functions are single PTX instructions (`sqrt.rn`, `fma.rn`) or the
//! hardware approximations of the special function unit (`rsqrt.approx`, `ex2.approx`,
//! `lg2.approx`; a few ulp of error, subnormals flushed to zero), which is what CUDA's fast
//! math gives too. On the host the same names call `std`, so host results can differ from
//! device results in the last bits for the approximate functions: compare with a tolerance.
//! Names follow C: an `f` suffix is `f32`, no suffix is `f64`.

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

/// Correctly rounded square root (`sqrt.rn.f32`).
#[inline(always)]
pub fn sqrtf(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: pure arithmetic instruction on registers.
        unsafe {
            asm!("sqrt.rn.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.sqrt()
    }
}

/// Approximate reciprocal square root `1/sqrt(x)` (`rsqrt.approx.ftz.f32`).
#[inline(always)]
pub fn rsqrtf(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: pure arithmetic instruction on registers.
        unsafe {
            asm!("rsqrt.approx.ftz.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        1.0 / x.sqrt()
    }
}

/// Approximate `2^x` (`ex2.approx.ftz.f32`).
#[inline(always)]
pub fn exp2f(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: pure arithmetic instruction on registers.
        unsafe {
            asm!("ex2.approx.ftz.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.exp2()
    }
}

/// Approximate `log2(x)` (`lg2.approx.ftz.f32`).
#[inline(always)]
pub fn log2f(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: pure arithmetic instruction on registers.
        unsafe {
            asm!("lg2.approx.ftz.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.log2()
    }
}

/// Approximate `log10(x)`: `log2f(x) · log10(2)` on the device, `std`'s `log10` on the host.
#[inline(always)]
pub fn log10f(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        log2f(x) * core::f32::consts::LOG10_2
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.log10()
    }
}

/// Approximate `e^x`: `exp2f(x · log2(e))` on the device, `std`'s `exp` on the host.
#[inline(always)]
pub fn expf(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        exp2f(x * core::f32::consts::LOG2_E)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.exp()
    }
}

/// Approximate `f64` reciprocal `1/x` (`rcp.approx.ftz.f64`, about 20 correct bits: for
/// corrections that are small next to the value they correct).
#[inline(always)]
pub fn rcp_approx(x: f64) -> f64 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f64;
        // SAFETY: pure arithmetic instruction on registers.
        unsafe {
            asm!("rcp.approx.ftz.f64 {r}, {x};", r = out(reg64) r, x = in(reg64) x, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        1.0 / x
    }
}

/// `a / b` within 2 ulp on the device (`div.full.f32`: full range, a few instructions,
/// where Rust's `/` compiles to the IEEE-rounded division, a subroutine with a slow path);
/// `/` on the host. For quotients whose last ulp does not matter next to the metric's
/// tolerance.
#[inline(always)]
pub fn div_full(a: f32, b: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: pure arithmetic instruction on registers.
        unsafe {
            asm!("div.full.f32 {r}, {a}, {b};", r = out(reg32) r, a = in(reg32) a, b = in(reg32) b,
                 options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        a / b
    }
}

/// `x as i32`: truncated toward zero, saturated at the `i32` range, NaN to 0. On the device
/// one `cvt.rzi.s32.f32`, which has exactly those semantics (PTX ISA, `cvt`: float to
/// integer conversions saturate, and NaN gives 0 for a 32-bit destination); Rust's `as`
/// compiles there to the conversion plus three compares and three selects that redo what
/// the instruction already does.
#[inline(always)]
pub fn trunc_i32(x: f32) -> i32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: i32;
        // SAFETY: pure arithmetic instruction on registers.
        unsafe {
            asm!("cvt.rzi.s32.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x as i32
    }
}

/// The IEEE half float nearest `x` (ties to even), as its bits, with values past the half's
/// range (infinities too) saturated to ±65504 and NaN to a quiet NaN. On the device the
/// range clamp and one `cvt.rn.f16.f32` (IEEE round to nearest even, subnormal halves
/// kept: the same bits as the host's integer arithmetic for every number; a NaN may be
/// another NaN).
#[inline(always)]
pub fn half_bits(x: f32) -> u16 {
    #[cfg(target_arch = "nvptx64")]
    {
        let x = x.clamp(-65504.0, 65504.0);
        let h: u16;
        // SAFETY: pure conversion instruction on registers.
        unsafe {
            asm!("cvt.rn.f16.f32 {h}, {x};", h = out(reg16) h, x = in(reg32) x, options(pure, nomem, nostack))
        };
        h
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        half_bits_soft(x)
    }
}

/// [`half_bits`] in integer arithmetic (the host's).
#[cfg_attr(target_arch = "nvptx64", allow(dead_code))]
#[inline(always)]
fn half_bits_soft(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let a = b & 0x7fff_ffff;
    if a > 0x7f80_0000 {
        return sign | 0x7e00;
    }
    // 65504 and past (its rounding's upper bound is 65520: saturated too).
    if a >= 0x477f_e000 {
        return sign | 0x7bff;
    }
    if a >= 0x3880_0000 {
        // A normal half: the exponent rebased (127 − 15), 13 mantissa bits rounded off
        // (ties to even; a carry into the exponent is the right result).
        let m = a - (112 << 23);
        return sign | ((m + 0x0fff + ((m >> 13) & 1)) >> 13) as u16;
    }
    // Subnormal or zero: the multiple of 2^−24 nearest |x|, ties to even (1024 of them is
    // the smallest normal, which the bits give as they are).
    let e = a >> 23;
    if e < 102 {
        // Below 2^−25: zero.
        return sign;
    }
    let mant = (a & 0x7f_ffff) | 0x80_0000;
    let shift = 126 - e;
    let (h, rem, halfway) = (mant >> shift, mant & ((1 << shift) - 1), 1 << (shift - 1));
    let up = rem > halfway || (rem == halfway && h & 1 == 1);
    sign | (h + up as u32) as u16
}

/// The value of half float bits `h` (exact: every half is an `f32`); one `cvt.f32.f16` on
/// the device.
#[inline(always)]
pub fn half_value(h: u16) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: pure conversion instruction on registers.
        unsafe {
            asm!("cvt.f32.f16 {r}, {h};", r = out(reg32) r, h = in(reg16) h, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
        let (e, m) = (((h >> 10) & 0x1f) as u32, (h & 0x3ff) as u32);
        match e {
            0 => sign * m as f32 * (1.0 / 16_777_216.0),
            31 if m == 0 => sign * f32::INFINITY,
            31 => f32::NAN,
            _ => f32::from_bits((((h & 0x8000) as u32) << 16) | ((e + 112) << 23) | (m << 13)),
        }
    }
}

/// Fused multiply-add `a * b + c` with one rounding (`fma.rn.f32`).
#[inline(always)]
pub fn fmaf(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: pure arithmetic instruction on registers.
        unsafe {
            asm!("fma.rn.f32 {r}, {a}, {b}, {c};", r = out(reg32) r, a = in(reg32) a, b = in(reg32) b,
                 c = in(reg32) c, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        a.mul_add(b, c)
    }
}

/// Cube root, also of negative numbers, rounded like the host's `cbrt`: `std` on the host; on
/// the device the hardware estimate `exp2(log2|x| / 3)` refined by two Newton steps in `f64`
/// ([`cbrt_step`]), then rounded once, so GPU results match the CPU backend's (SSIMULACRA2's
/// XYB needs that).
#[inline(always)]
pub fn cbrtf(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let a = f32::from_bits(x.to_bits() & 0x7fff_ffff);
        if a == 0.0 || x != x || a == f32::INFINITY {
            return x;
        }
        let big = a as f64;
        let mut y = exp2f(log2f(a) * (1.0 / 3.0)) as f64;
        for _ in 0..2 {
            y = cbrt_step(y, big);
        }
        f32::from_bits((y as f32).to_bits() | (x.to_bits() & 0x8000_0000))
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.cbrt()
    }
}

/// One Newton step towards `cbrt(big)` from `y`, in `f64`: `y − (y³ − big) / (3y²)`. The
/// correction is small next to `y`, so an approximate reciprocal divides it. (The device
/// path of [`cbrtf`]; public so that the host tests check its convergence.)
#[inline(always)]
pub fn cbrt_step(y: f64, big: f64) -> f64 {
    let y2 = y * y;
    y - (y2 * y - big) * rcp_approx(3.0 * y2)
}

/// `x^y` for `x > 0` as `exp2(y * log2(x))` on the device (`pow(0, y > 0) = 0`; negative
/// `x` gives NaN on the device, unlike `std`'s `powf` for integer `y`).
#[inline(always)]
pub fn powf(x: f32, y: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        if x == 0.0 && y > 0.0 {
            return 0.0;
        }
        exp2f(y * log2f(x))
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.powf(y)
    }
}

/// Correctly rounded `f64` square root (`sqrt.rn.f64`).
#[inline(always)]
pub fn sqrt(x: f64) -> f64 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f64;
        // SAFETY: pure arithmetic instruction on registers.
        unsafe {
            asm!("sqrt.rn.f64 {r}, {x};", r = out(reg64) r, x = in(reg64) x, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.sqrt()
    }
}

/// `f64` fused multiply-add with one rounding (`fma.rn.f64`).
#[inline(always)]
pub fn fma(a: f64, b: f64, c: f64) -> f64 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f64;
        // SAFETY: pure arithmetic instruction on registers.
        unsafe {
            asm!("fma.rn.f64 {r}, {a}, {b}, {c};", r = out(reg64) r, a = in(reg64) a, b = in(reg64) b,
                 c = in(reg64) c, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        a.mul_add(b, c)
    }
}

/// `f64` base-2 logarithm, as close as the host's `log2` allows: `std` on the host, where the
/// references (libvmaf's SpEED) call C's `log2`; on the device the software [`log2_soft`]
/// (PTX has no `f64` logarithm instruction).
#[inline(always)]
pub fn log2(x: f64) -> f64 {
    #[cfg(target_arch = "nvptx64")]
    {
        log2_soft(x)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.log2()
    }
}

/// `log2(x)` from the exponent and the series of `atanh`: with `x = m·2^e`, `m` in
/// [√½, √2), `ln m = 2·atanh(s)` for `s = (m−1)/(m+1)`, `|s| < 0.172`, whose odd powers fall
/// below an `f64` ulp after twelve terms. Within a few ulp of a correctly rounded result;
/// NaN below 0, −∞ at 0, ∞ and NaN pass through. (The device path of [`log2`]; public so
/// that the host tests compare it with `std`.)
#[inline(always)]
pub fn log2_soft(x: f64) -> f64 {
    if x.is_nan() || x == f64::INFINITY {
        return x;
    }
    if x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    let (mut bits, mut e) = (x.to_bits(), -1023i64);
    if bits >> 52 == 0 {
        // Subnormal: normalise by 2^54 first.
        bits = (x * 18014398509481984.0).to_bits();
        e -= 54;
    }
    e += (bits >> 52) as i64;
    let mut m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    if m > core::f64::consts::SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let mut series = 0.0;
    let mut k = 25.0;
    while k > 1.0 {
        series = series * s2 + 1.0 / k;
        k -= 2.0;
    }
    let ln_m = 2.0 * s * (1.0 + s2 * series);
    e as f64 + ln_m * core::f64::consts::LOG2_E
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;

    #[test]
    fn halves_round_trip_and_round_to_the_nearest_even() {
        // Every finite half is its own nearest.
        for h in 0..=u16::MAX {
            let v = half_value(h);
            if v.is_finite() {
                assert_eq!(
                    half_bits(v),
                    if v == 0.0 { h & 0x8000 } else { h },
                    "{h:#06x}"
                );
            }
        }
        // Floats over the whole range: no half is nearer, and a tie goes to the even one.
        let nearest = |x: f32| {
            let h = half_bits(x);
            let d = |h: u16| (half_value(h) as f64 - x as f64).abs();
            for n in [h.wrapping_sub(1), h.wrapping_add(1)] {
                let other = half_value(n);
                if !other.is_finite() || (n ^ h) & 0x8000 != 0 {
                    continue;
                }
                assert!(
                    d(h) < d(n) || (d(h) == d(n) && h & 1 == 0),
                    "{x:e}: {h:#06x} vs {n:#06x}"
                );
            }
        };
        let mut b = 0u32;
        while b < 0x477f_e000 {
            nearest(f32::from_bits(b));
            nearest(-f32::from_bits(b));
            b += 977;
        }
        // Ties, both parities, in the normal and subnormal ranges.
        for h in [0x0001u16, 0x0002, 0x03ff, 0x0400, 0x3c00, 0x3c01, 0x7bfe] {
            let mid = (half_value(h) as f64 + half_value(h + 1) as f64) / 2.0;
            assert_eq!(
                half_bits(mid as f32),
                if h & 1 == 0 { h } else { h + 1 },
                "{h:#06x}"
            );
        }
        assert_eq!(half_bits(2f32.powi(-25)), 0);
        assert_eq!(half_bits(65520.0), 0x7bff);
        assert_eq!(half_bits(-1e9), 0xfbff);
        assert_eq!(half_bits(f32::INFINITY), 0x7bff);
        assert!(half_value(half_bits(f32::NAN)).is_nan());
    }

    #[test]
    fn host_math_matches_std() {
        assert_eq!(sqrtf(9.0), 3.0);
        assert_eq!(cbrtf(-27.0), -3.0);
        assert!((powf(2.0, 10.0) - 1024.0).abs() < 1e-3);
        assert_eq!(fma(2.0, 3.0, 1.0), 7.0);
        assert!((rsqrtf(4.0) - 0.5).abs() < 1e-6);
        assert!((exp2f(log2f(5.0)) - 5.0).abs() < 1e-5);
    }

    #[test]
    fn software_log2_is_within_a_few_ulp_of_std() {
        let mut worst = 0.0f64;
        let mut x = 1e-310f64;
        while x < 1e300 {
            for f in [1.0, 1.0000001, 1.37, 1.414, 1.415, 1.5, 1.9999] {
                let v = x * f;
                let (got, want) = (log2_soft(v), v.log2());
                let ulp = f64::EPSILON * want.abs().max(1.0);
                worst = worst.max((got - want).abs() / ulp);
            }
            x *= 3.7;
        }
        assert!(worst <= 4.0, "{worst} ulp");
        assert_eq!(log2_soft(8.0), 3.0);
        assert_eq!(log2_soft(0.0), f64::NEG_INFINITY);
        assert!(log2_soft(-1.0).is_nan());
        assert_eq!(log2(1024.0), 10.0);
    }

    #[test]
    fn cbrt_steps_converge_to_the_root() {
        // The device path's arithmetic, run on the host from a deliberately poor estimate
        // (relative error 1e-6, worse than the hardware's): two steps reach the f64 root.
        let mut worst = 0.0f64;
        for i in 1..20_000u32 {
            let x = i as f64 / 20_000.0;
            let want = x.cbrt();
            let mut y = want * (1.0 + 1e-6);
            for _ in 0..2 {
                y = cbrt_step(y, x);
            }
            worst = worst.max((y / want - 1.0).abs());
        }
        assert!(worst < 1e-13, "{worst}");
    }
}
