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

/// Consecutive outputs of one line that a GPU thread of the run kernels computes: the
/// samples between them are loaded once for all of them, so a Gaussian of `2·half + 1`
/// taps costs `(RUN + 2·half) / RUN` loads per output instead of `2·half + 1`.
pub const RUN: usize = 4;
/// The largest `half` of the Gaussians (LF's), which sizes the run arrays.
pub const MAX_HALF: usize = 16;
/// Samples a run reads: its outputs and up to [`MAX_HALF`] on each side.
pub const RUN_SAMPLES: usize = RUN + 2 * MAX_HALF;
/// Weights of the widest Gaussian.
pub const RUN_TAPS: usize = 2 * MAX_HALF + 1;

/// Whether the [`RUN`] outputs from index `i` of a line of `n` all lie where [`gauss`]
/// uses the normalised weights (`half ≤ i`, `i + RUN − 1 < n − half`).
#[inline(always)]
pub fn run_inside(i: u32, n: u32, half: u32) -> bool {
    i >= half && i + RUN as u32 + half <= n
}

/// The normalised weights of `taps` for a Gaussian of `half` = `H`, as a run reads them.
///
/// # Safety
/// `taps` must point to a valid [`Taps`] whose `half` is `H` (≤ [`MAX_HALF`]).
#[inline(always)]
pub unsafe fn run_weights<const H: usize>(taps: *const Taps) -> [f32; RUN_TAPS] {
    let mut w = [0.0f32; RUN_TAPS];
    // An index loop of constant length, which LLVM unrolls (an iterator chain stays a
    // loop on the GPU, and the array in local memory).
    #[allow(clippy::needless_range_loop)]
    for k in 0..2 * H + 1 {
        // SAFETY: the caller's contract.
        w[k] = unsafe { (*taps).scaled[k] };
    }
    w
}

/// [`gauss`] of [`RUN`] consecutive interior outputs ([`run_inside`]) with `half` = `H`:
/// `v[m]` is the sample `m − H` places from the first output, `w` the normalised weights
/// ([`run_weights`]). Each output's taps are added in [`gauss`]'s order with its
/// operations (`FUSED` as its `fused`), so the values are the same bit for bit; only the
/// loads are shared.
#[inline(always)]
pub fn gauss_run<const H: usize, const FUSED: bool>(
    v: &[f32; RUN_SAMPLES],
    w: &[f32; RUN_TAPS],
) -> [f32; RUN] {
    const _: () = assert!(RUN == 4, "the unroll! list below");
    let mut out = [0.0f32; RUN];
    unroll!(j in [0 1 2 3] {
        out[j] = if FUSED {
            let mut sum = v[j] * w[0];
            for k in 1..2 * H + 1 {
                sum = fmaf(v[j + k], w[k], sum);
            }
            sum
        } else {
            let mut sum = 0.0f32;
            for k in 0..2 * H + 1 {
                sum += v[j + k] * w[k];
            }
            sum
        };
    });
    out
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

    /// A run of four interior outputs equals [`gauss`] at each, bit for bit, for every
    /// Gaussian of Butteraugli and both accumulations, at every run position of a line.
    #[test]
    fn runs_equal_gauss_bit_for_bit() {
        fn check<const H: usize>(sigma: f32) {
            let t = taps(sigma, |x: f32| x.exp());
            assert_eq!(t.half as usize, H);
            let w = unsafe { run_weights::<H>(&t) };
            let mut seed = 0x9e37_79b9u32;
            let line: std::vec::Vec<f32> = (0..97)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 17;
                    seed ^= seed << 5;
                    (seed % 20001) as f32 / 1000.0 - 10.0
                })
                .collect();
            let n = line.len() as u32;
            let mut runs = 0;
            for i in 0..n {
                if !run_inside(i, n, H as u32) {
                    continue;
                }
                let mut v = [0.0f32; RUN_SAMPLES];
                for (m, v) in v.iter_mut().enumerate().take(RUN + 2 * H) {
                    *v = line[i as usize - H + m];
                }
                for fused in [false, true] {
                    let got = if fused {
                        gauss_run::<H, true>(&v, &w)
                    } else {
                        gauss_run::<H, false>(&v, &w)
                    };
                    for (j, g) in got.iter().enumerate() {
                        let want =
                            unsafe { gauss(&t, i + j as u32, n, fused, |k| line[k as usize]) };
                        assert_eq!(g.to_bits(), want.to_bits(), "H {H} i {i} j {j} {fused}");
                    }
                }
                runs += 1;
            }
            assert_eq!(runs, 97 - 2 * H - RUN + 1);
        }
        check::<16>(7.155_933);
        check::<7>(3.224_899);
        check::<3>(1.564_163_3);
        check::<6>(2.7);
    }

    #[test]
    fn run_inside_is_the_interior_of_gauss() {
        // n 40, half 7: outputs 7..=32 are interior, so runs start at 7..=29.
        assert!(!run_inside(6, 40, 7));
        assert!(run_inside(7, 40, 7));
        assert!(run_inside(29, 40, 7));
        assert!(!run_inside(30, 40, 7));
        // Lines too short for any interior output.
        assert!(!run_inside(0, 10, 16));
        assert!(!run_inside(16, 20, 16));
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
