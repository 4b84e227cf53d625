//! The blurs of Butteraugli, one output sample at a time: libjxl's Gaussian with clamped,
//! renormalised borders (the frequency separation and the masking) and the mirrored 5-tap
//! `Separable5` (the opsin dynamics).

use super::{HALVES, MAX_TAPS, Taps, filter};
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
    #[inline(always)]
    fn sum(w: [f32; 3], v: impl Fn(i32) -> f32) -> f32 {
        v(0) * w[0] + (v(-1) + v(1)) * w[1] + (v(-2) + v(2)) * w[2]
    }
    if i >= 2 && i + 2 < n {
        // Inside, the mirror is the identity: no loop per tap (on the GPU its tests were
        // most of the blur's instructions).
        sum(w, |d| at((i as i32 + d) as u32))
    } else {
        let (i, n) = (i as i32, n as i32);
        sum(w, |d| at(mirror(i + d, n)))
    }
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

/// libjxl's sigmas of the four Gaussians ([`filter`] order), its `f64` values rounded to
/// `f32` as it does: LF, the MF/HF split, the HF/UHF split and the masking blur.
#[allow(clippy::excessive_precision)]
pub const SIGMAS: [f32; filter::COUNT] =
    [7.155_933_394_43, 3.224_899_012_62, 1.564_163_278_05, 2.7];

/// The four Gaussians' weights as constants, as `f32` bits: per Gaussian ([`filter`]
/// order) its raw weights, then its normalised ones, for the offsets 0..=`half` from the
/// centre (zero beyond). They are [`taps`] of [`SIGMAS`] with the host's `exp`, bit for
/// bit: the test `tables_are_the_host_taps` checks that and prints the table to paste when
/// they differ. As constants, the GPU's run kernels multiply by immediates; read from the
/// filter table, the 33 weights of LF took registers that the kernel did not have, and
/// were loaded again per tap (233 instructions per output where 70 do).
#[rustfmt::skip]
pub const GAUSS_TABLES: [[[u32; MAX_HALF + 1]; 2]; filter::COUNT] = [
    [
        [0x3f800000, 0x3f7d8335, 0x3f7631b6, 0x3f6a76a1, 0x3f5af92d, 0x3f488d3c,
         0x3f3420ac, 0x3f1ea7a1, 0x3f090a0e, 0x3ee828bd, 0x3ec0d91e, 0x3e9d1877,
         0x3e7afe2e, 0x3e44a10c, 0x3e170fad, 0x3de39e4b, 0x3da82bb2],
        [0x3d694109, 0x3d66fcd2, 0x3d6051ca, 0x3d55a189, 0x3d47846b, 0x3d36bb7f,
         0x3d241f7f, 0x3d108ee0, 0x3cf9b9ee, 0x3cd3880f, 0x3cafb69a, 0x3c8f232d,
         0x3c64b11b, 0x3c332888, 0x3c09a3a5, 0x3bcf64e5, 0x3b993a7e],
    ],
    [
        [0x3f800000, 0x3f73fbc3, 0x3f5336a5, 0x3f261518, 0x3eed3ea2, 0x3e99ea29,
         0x3e35661c, 0x3dc230fa, 0x00000000, 0x00000000, 0x00000000, 0x00000000,
         0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000],
        [0x3e013369, 0x3df645b9, 0x3dd531e7, 0x3da7a3f7, 0x3d6f7869, 0x3d1b5bcf,
         0x3cb719c4, 0x3c44035b, 0x00000000, 0x00000000, 0x00000000, 0x00000000,
         0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000],
    ],
    [
        [0x3f800000, 0x3f50aea8, 0x3ee21326, 0x3e22bef0, 0x00000000, 0x00000000,
         0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000,
         0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000],
        [0x3e85a2dc, 0x3e59defe, 0x3dec078a, 0x3d29e977, 0x00000000, 0x00000000,
         0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000,
         0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000],
    ],
    [
        [0x3f800000, 0x3f6f07c2, 0x3f4293c4, 0x3f0a169c, 0x3eaadff1, 0x3e38579f,
         0x3dad612b, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000,
         0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000],
        [0x3e19adfb, 0x3e0f7e16, 0x3de99d1a, 0x3da5cab8, 0x3d4d27f0, 0x3cdd534c,
         0x3c5029cf, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000,
         0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000],
    ],
];

/// Index in [`filter`] order of the Gaussian whose `half` is `h`.
const fn filter_of_half(h: usize) -> usize {
    let mut f = 0;
    while f < filter::COUNT {
        if HALVES[f] == h {
            return f;
        }
        f += 1;
    }
    panic!("no Gaussian of this half-width")
}

/// The raw (`normalised` false) or normalised weights of Gaussian `f` ([`filter`] order),
/// tap `t` (offset `t − half`) at `[t]`, zero past `2·half`.
const fn weights(f: usize, normalised: bool) -> [f32; RUN_TAPS] {
    let (h, half) = (HALVES[f], &GAUSS_TABLES[f][normalised as usize]);
    let mut w = [0.0f32; RUN_TAPS];
    let mut t = 0;
    while t < 2 * h + 1 {
        w[t] = f32::from_bits(half[h.abs_diff(t)]);
        t += 1;
    }
    w
}

/// [`weights`] of the Gaussian whose `half` is `H`, as the run kernels take them.
pub const fn run_table<const H: usize>(normalised: bool) -> [f32; RUN_TAPS] {
    weights(filter_of_half(H), normalised)
}

/// The filter table entry of Gaussian `f` ([`filter`] order), from [`GAUSS_TABLES`].
pub const fn table_taps(f: usize) -> Taps {
    let (raw, normalised) = (weights(f, false), weights(f, true));
    let mut t = Taps {
        half: HALVES[f] as u32,
        _pad: [0; 3],
        kernel: [0.0; MAX_TAPS],
        scaled: [0.0; MAX_TAPS],
    };
    let mut k = 0;
    while k < RUN_TAPS {
        t.kernel[k] = raw[k];
        t.scaled[k] = normalised[k];
        k += 1;
    }
    t
}

/// [`gauss`] of [`RUN`] consecutive interior outputs ([`run_inside`]) with `half` = `H`:
/// `v[m]` is the sample `m − H` places from the first output, `w` the normalised weights
/// ([`run_table`]). Each output's taps are added in [`gauss`]'s order with its
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

/// [`gauss`] of the [`RUN`] outputs from index `i` of a line of `n`, wherever they lie:
/// `v` as for [`gauss_run`], any finite values outside the line. Outputs where
/// [`gauss`] uses the normalised weights get [`gauss_run`]'s value; the others (within
/// `H` of an edge) add the raw weights of the taps inside the line, in [`gauss`]'s order
/// and with its operations, and divide by their sum, so every value is [`gauss`]'s bit for
/// bit. Straight-line code (the taps outside get weight 0): the GPU's row pass takes it
/// for the runs at a row's ends, whose lanes would otherwise run [`gauss`]'s loops over the
/// filter table while the rest of their warp waits.
/// Outputs at or past `n` are left 0.
#[inline(always)]
pub fn gauss_run_edge<const H: usize, const FUSED: bool>(
    v: &[f32; RUN_SAMPLES],
    i: u32,
    n: u32,
) -> [f32; RUN] {
    let raw = const { run_table::<H>(false) };
    let inner = gauss_run::<H, FUSED>(v, &const { run_table::<H>(true) });
    let half = H as u32;
    let border1 = if half < n { half } else { n };
    let border2 = n.saturating_sub(half);
    let mut out = [0.0f32; RUN];
    unroll!(j in [0 1 2 3] {
        let p = i + j as u32;
        if p < n {
            out[j] = if p >= border1 && p < border2 {
                inner[j]
            } else {
                // A tap outside adds a zero weight and a zero product: +0 and ±0 leave a
                // sum that starts at +0 as it is, so the in-line ones round as in `gauss`.
                // Spelled out for every tap (a loop over LF's 33 stayed rolled, with `v`
                // in local memory and the weights loaded from global memory).
                const _: () = assert!(RUN_TAPS == 33, "the unroll! list below");
                let (mut weight, mut sum) = (0.0f32, 0.0f32);
                unroll!(t in [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24
                              25 26 27 28 29 30 31 32] {
                    if t < 2 * H + 1 {
                        let q = p as i32 - H as i32 + t as i32;
                        let k = if q >= 0 && (q as u32) < n { raw[t] } else { 0.0 };
                        weight += k;
                        sum += v[j + t] * k;
                    }
                });
                sum * (1.0 / weight)
            };
        }
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
            let w = run_table::<H>(true);
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
        check::<16>(SIGMAS[filter::LF as usize]);
        check::<7>(SIGMAS[filter::HF as usize]);
        check::<3>(SIGMAS[filter::UHF as usize]);
        check::<6>(SIGMAS[filter::MASK as usize]);
    }

    /// The constant tables are what the host computes from the sigmas, bit for bit; when
    /// not, the test prints the table to paste over [`GAUSS_TABLES`].
    #[test]
    fn tables_are_the_host_taps() {
        use std::fmt::Write;
        let host = SIGMAS.map(|s| taps(s, |x: f32| x.exp()));
        let mut text = std::string::String::from(
            "pub const GAUSS_TABLES: [[[u32; MAX_HALF + 1]; 2]; filter::COUNT] = [\n",
        );
        for t in &host {
            let h = t.half as usize;
            text += "    [\n";
            for weights in [&t.kernel, &t.scaled] {
                text += "        [";
                for d in 0..=MAX_HALF {
                    let bits = if d <= h { weights[h + d].to_bits() } else { 0 };
                    write!(text, "0x{bits:08x}").unwrap();
                    text += if d == MAX_HALF {
                        ""
                    } else if d % 6 == 5 {
                        ",\n         "
                    } else {
                        ", "
                    };
                }
                text += "],\n";
            }
            text += "    ],\n";
        }
        text += "];\n";
        let same = (0..filter::COUNT).all(|f| {
            let (a, b) = (&host[f], table_taps(f));
            a.half == b.half
                && a.kernel.map(f32::to_bits) == b.kernel.map(f32::to_bits)
                && a.scaled.map(f32::to_bits) == b.scaled.map(f32::to_bits)
        });
        assert!(
            same,
            "the Gaussian tables differ from the host's taps; paste:\n{text}"
        );
        assert_eq!(host.map(|t| t.half as usize), HALVES);
    }

    /// Runs anywhere in a line, edges included, equal [`gauss`] at each output bit for bit,
    /// for every Gaussian, both accumulations and lines from 1 sample to wider than two
    /// Gaussians.
    #[test]
    fn edge_runs_equal_gauss_bit_for_bit() {
        fn check<const H: usize>(f: usize) {
            let t = table_taps(f);
            let mut seed = 0x2545_f491u32;
            for n in (1..=2 * H as u32 + 12).chain([61, 97]) {
                let line: std::vec::Vec<f32> = (0..n)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 17;
                        seed ^= seed << 5;
                        (seed % 20001) as f32 / 1000.0 - 10.0
                    })
                    .collect();
                for i in 0..n {
                    // Samples outside the line are other finite values (the GPU's column
                    // pass reads the edge rows again): the run must not count them.
                    let mut v = [1.0e30f32; RUN_SAMPLES];
                    for (m, v) in v.iter_mut().enumerate().take(RUN + 2 * H) {
                        let at = i as i64 - H as i64 + m as i64;
                        if at >= 0 && at < n as i64 {
                            *v = line[at as usize];
                        }
                    }
                    for fused in [false, true] {
                        let got = if fused {
                            gauss_run_edge::<H, true>(&v, i, n)
                        } else {
                            gauss_run_edge::<H, false>(&v, i, n)
                        };
                        for (j, g) in got.iter().enumerate() {
                            let p = i + j as u32;
                            let want = if p < n {
                                unsafe { gauss(&t, p, n, fused, |k| line[k as usize]) }
                            } else {
                                0.0
                            };
                            assert_eq!(
                                g.to_bits(),
                                want.to_bits(),
                                "H {H} n {n} i {i} j {j} {fused}"
                            );
                        }
                    }
                }
            }
        }
        check::<16>(filter::LF as usize);
        check::<7>(filter::HF as usize);
        check::<3>(filter::UHF as usize);
        check::<6>(filter::MASK as usize);
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

    /// The interior shortcut of [`blur5`] gives the mirrored sum bit for bit.
    #[test]
    fn blur5_inside_equals_the_mirrored_sum() {
        let w = blur5_weights(1.2, |x: f32| x.exp());
        for n in 1..12u32 {
            let line: std::vec::Vec<f32> =
                (0..n).map(|k| (k * k % 7) as f32 * 0.37 - 1.1).collect();
            for i in 0..n {
                let (ii, nn) = (i as i32, n as i32);
                let v = |d: i32| line[mirror(ii + d, nn) as usize];
                let want = v(0) * w[0] + (v(-1) + v(1)) * w[1] + (v(-2) + v(2)) * w[2];
                let got = blur5(w, i, n, |k| line[k as usize]);
                assert_eq!(got.to_bits(), want.to_bits(), "n {n} i {i}");
            }
        }
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
