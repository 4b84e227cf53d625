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
