//! The blurs of Butteraugli, one output sample at a time: libjxl's Gaussian with clamped,
//! renormalised borders (the frequency separation and the masking) and the mirrored 5-tap
//! `Separable5` (the opsin dynamics).

use super::Taps;
use gpumetrics_device::math::fmaf;

/// Index `i` (which may lie up to one image size outside) reflected into `0..n` with the
/// edge sample not repeated at the mirror (−1 → 0, n → n − 1), as libjxl's `Mirror`.
#[inline(always)]
pub fn mirror(mut i: i32, n: i32) -> u32 {
    while i < 0 || i >= n {
        i = if i < 0 { -i - 1 } else { 2 * n - 1 - i };
    }
    i as u32
}

/// Mirrored 5-tap blur of the samples `at(−2..=2)` around index `i` of a line of `n`.
#[inline(always)]
pub fn blur5(w: [f32; 3], i: u32, n: u32, at: impl Fn(u32) -> f32) -> f32 {
    let (i, n) = (i as i32, n as i32);
    let v = |d: i32| at(mirror(i + d, n));
    v(0) * w[0] + (v(-1) + v(1)) * w[1] + (v(-2) + v(2)) * w[2]
}

/// Gaussian of the samples around index `i` of a line of `n`, read by `at`. Inside, the
/// normalised weights; within `half` of an edge, only the taps inside, divided by their
/// own sum. `fused` selects the accumulation of libjxl's column pass (multiply-add, from
/// the first tap) over that of its row pass (products summed).
///
/// # Safety
/// `taps` must point to a valid [`Taps`].
#[inline(always)]
pub unsafe fn gauss(
    taps: *const Taps,
    i: u32,
    n: u32,
    fused: bool,
    at: impl Fn(u32) -> f32,
) -> f32 {
    // SAFETY: the caller's contract.
    let t = unsafe { &*taps };
    let half = t.half;
    let border1 = if half < n { half } else { n };
    let border2 = n.saturating_sub(half);
    if i >= border1 && i < border2 {
        let first = i - half;
        let len = 2 * half + 1;
        if fused {
            let mut sum = at(first) * t.scaled[0];
            for k in 1..len {
                sum = fmaf(at(first + k), t.scaled[k as usize], sum);
            }
            sum
        } else {
            let mut sum = 0.0f32;
            for k in 0..len {
                sum += at(first + k) * t.scaled[k as usize];
            }
            sum
        }
    } else {
        let lo = i.saturating_sub(half);
        let hi = if i + half < n { i + half } else { n - 1 };
        let k0 = lo + half - i;
        let mut weight = 0.0f32;
        let mut sum = 0.0f32;
        for j in lo..=hi {
            let k = t.kernel[(k0 + j - lo) as usize];
            weight += k;
            sum += at(j) * k;
        }
        sum * (1.0 / weight)
    }
}

/// The raw weights of libjxl's Gaussian for `sigma` (`exp` supplied by the host, which
/// builds the table once): `2·⌊max(2.25·σ, 1)⌋ + 1` of them, and the same normalised.
pub fn taps(sigma: f32, exp: impl Fn(f32) -> f32) -> Taps {
    let scaler = -1.0 / (2.0 * sigma * sigma);
    let diff = {
        let d = 2.25 * if sigma < 0.0 { -sigma } else { sigma };
        (if d > 1.0 { d } else { 1.0 }) as u32
    };
    let mut t = Taps {
        half: diff,
        ..Default::default()
    };
    let len = (2 * diff + 1) as usize;
    for (k, w) in t.kernel[..len].iter_mut().enumerate() {
        let i = k as i32 - diff as i32;
        *w = exp(scaler * (i * i) as f32);
    }
    let mut sum = 0.0f32;
    for w in &t.kernel[..len] {
        sum += *w;
    }
    let inv = 1.0 / sum;
    for k in 0..len {
        t.scaled[k] = t.kernel[k] * inv;
    }
    t
}

/// Centre, ±1 and ±2 weights of the normalised 5-tap Gaussian for `sigma` (1.2 in opsin
/// dynamics).
pub fn blur5_weights(sigma: f32, exp: impl Fn(f32) -> f32) -> [f32; 3] {
    let t = taps(sigma, exp);
    let k = &t.kernel;
    let sum = k[0] + k[1] + k[2] + k[3] + k[4];
    let scale = 1.0 / sum;
    [k[2] * scale, k[1] * scale, k[0] * scale]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tap_counts_follow_sigma() {
        let exp = |x: f32| x.exp();
        assert_eq!(taps(7.155_933, exp).half, 16);
        assert_eq!(taps(3.224_899, exp).half, 7);
        assert_eq!(taps(1.564_163_3, exp).half, 3);
        assert_eq!(taps(2.7, exp).half, 6);
        assert_eq!(taps(1.2, exp).half, 2);
    }

    #[test]
    fn mirror_does_not_repeat_the_edge() {
        assert_eq!(
            [-2, -1, 0, 9, 10, 11].map(|i| mirror(i, 10)),
            [1, 0, 0, 9, 9, 8]
        );
    }

    #[test]
    fn gauss_keeps_constants_everywhere() {
        let t = taps(3.224_899, |x: f32| x.exp());
        for n in [1u32, 5, 15, 40] {
            for i in 0..n {
                for fused in [false, true] {
                    let v = unsafe { gauss(&t, i, n, fused, |_| 2.5) };
                    assert!((v - 2.5).abs() < 1e-5, "n {n} i {i}: {v}");
                }
            }
        }
        // A step blurs into a ramp and renormalises at the edge.
        let v = unsafe { gauss(&t, 0, 40, false, |j| if j < 20 { 0.0 } else { 1.0 }) };
        assert_eq!(v, 0.0);
    }
}
