//! The per-pixel and per-row math of SSIMULACRA2: one code path for the CPU backend and the
//! GPU kernels, the tiled forms of the recursion that the kernels run included.

use super::layout::{RING, VCHUNK};
use gpumetrics_device::math::{cbrtf, fmaf, sqrt};

/// Half-width N of the recursive filter: output n reads inputs n − N − 1 and n + N − 1.
pub const IIR_N: i32 = 5;
/// How far the outputs trail the inputs (N − 1): the step that reads input n + N − 1 writes
/// output n, so passes that walk the inputs from 0 write outputs from −`LAG` on.
pub const LAG: i32 = IIR_N - 1;
/// Input gains of the three resonators (k = 1, 3, 5).
const IIR_IN: [f32; 3] = [0.055_295_236, -0.058_836_687, 0.012_955_819];
/// −d1 = 2·cos(ω_k) of the three resonators.
const IIR_PREV: [f32; 3] = [1.902_113_1, 1.175_570_5, 0.000_000_000_000_000_122_464_69];

/// State of one recursive Gaussian (three resonators).
#[derive(Clone, Copy, Debug, Default)]
pub struct Iir {
    prev: [f32; 3],
    prev2: [f32; 3],
}

impl Iir {
    /// One step of the horizontal pass; `sum` = input[n − N − 1] + input[n + N − 1].
    #[inline(always)]
    pub fn horizontal(&mut self, sum: f32) -> f32 {
        let mut o = [0.0f32; 3];
        for (i, o) in o.iter_mut().enumerate() {
            let v = fmaf(-1.0, self.prev2[i], sum * IIR_IN[i]);
            let v = fmaf(IIR_PREV[i], self.prev[i], v);
            self.prev2[i] = self.prev[i];
            self.prev[i] = v;
            *o = v;
        }
        o[0] + o[1] + o[2]
    }

    /// One step of the vertical pass (the reference groups its terms differently here).
    #[inline(always)]
    pub fn vertical(&mut self, sum: f32) -> f32 {
        let mut o = [0.0f32; 3];
        for (i, o) in o.iter_mut().enumerate() {
            let t = fmaf(self.prev[i], -IIR_PREV[i], self.prev2[i]);
            let v = fmaf(sum, IIR_IN[i], -t);
            self.prev2[i] = self.prev[i];
            self.prev[i] = v;
            *o = v;
        }
        o[0] + o[1] + o[2]
    }
}

/// Moment `m` (a², b², ab, a, b) of a pixel (a, b).
#[inline(always)]
pub fn moment(m: u32, v: (f32, f32)) -> f32 {
    match m {
        0 => v.0 * v.0,
        1 => v.1 * v.1,
        2 => v.0 * v.1,
        3 => v.0,
        _ => v.1,
    }
}

/// Horizontal pass of moment `m` over a row of `w` pixels: `load(x)` gives (a, b),
/// `store(x, v)` receives the blurred moment of pixel x.
#[inline(always)]
pub fn blur_row(w: u32, m: u32, load: impl Fn(u32) -> (f32, f32), mut store: impl FnMut(u32, f32)) {
    let mut st = Iir::default();
    let w = w as i32;
    for n in 1 - IIR_N..w {
        let (l, r) = (n - IIR_N - 1, n + IIR_N - 1);
        let lv = if l >= 0 {
            moment(m, load(l as u32))
        } else {
            0.0
        };
        let rv = if r < w {
            moment(m, load(r as u32))
        } else {
            0.0
        };
        let v = st.horizontal(lv + rv);
        if n >= 0 {
            store(n as u32, v);
        }
    }
}

/// Vertical pass over a column of `h` pixels, fused with the maps: `load(y)` gives the five
/// horizontally blurred moments at row y, `ab(y)` the pixel's (a, b). Returns the six sums.
#[inline(always)]
pub fn column_sums(
    h: u32,
    load: impl Fn(u32) -> [f32; 5],
    ab: impl Fn(u32) -> (f32, f32),
) -> [f64; SUMS_PER_PLANE] {
    let mut acc = [0.0f64; SUMS_PER_PLANE];
    column_values(h, load, ab, |_, d, d1| accumulate(&mut acc, d, d1));
    acc
}

/// The vertical pass of [`column_sums`], giving each pixel's values instead of their sums:
/// `each(y, d, d1)` with the SSIM error ([`ssim_d`]) and the edge difference
/// ([`edge_d1`]) of row y, in row order (the distortion map is made of them).
#[inline(always)]
pub fn column_values(
    h: u32,
    load: impl Fn(u32) -> [f32; 5],
    ab: impl Fn(u32) -> (f32, f32),
    mut each: impl FnMut(u32, f64, f64),
) {
    let mut st = [Iir::default(); 5];
    let h = h as i32;
    for n in 1 - IIR_N..h {
        let (t, b) = (n - IIR_N - 1, n + IIR_N - 1);
        let tv = if t >= 0 { load(t as u32) } else { [0.0; 5] };
        let bv = if b < h { load(b as u32) } else { [0.0; 5] };
        let m: [f32; 5] = core::array::from_fn(|i| st[i].vertical(tv[i] + bv[i]));
        if n >= 0 {
            let [s11, s22, s12, mu1, mu2] = m;
            let (a, b) = ab(n as u32);
            each(
                n as u32,
                ssim_d(mu1, mu2, s11, s22, s12),
                edge_d1(a, mu1, b, mu2),
            );
        }
    }
}

/// Sums per plane and scale: L1 and L4 sums of the three maps (ssim, artifact, detail lost).
pub const SUMS_PER_PLANE: usize = 6;
/// Sums per scale (three planes).
pub const SUMS_PER_SCALE: usize = 3 * SUMS_PER_PLANE;
/// At most six scales (1:1 to 1:32).
pub const MAX_SCALES: usize = 6;
/// Images below this size in either dimension are not scored (and end the scale loop).
pub const MIN_SIZE: u32 = 8;

const OPSIN_BIAS: f32 = 0.003_793_073_4;
/// `cbrt(OPSIN_BIAS)` as the host rounds it (a test checks it against `std`).
const CBRT_BIAS: f32 = 0.155_954_2;

/// Cone response `k` (0: L, 1: M, 2: S) of linear RGB, cube-rooted and bias-corrected:
/// the per-channel half of [`xyb`].
#[inline(always)]
pub fn opsin(k: u32, rgb: [f32; 3]) -> f32 {
    const S0: f32 = 0.243_422_69;
    const S1: f32 = 0.204_767_45;
    let (m0, m1, m2) = match k {
        0 => (0.30, 1.0 - 0.078 - 0.30, 0.078),
        1 => (0.23, 1.0 - 0.078 - 0.23, 0.078),
        _ => (S0, S1, 1.0 - S0 - S1),
    };
    let [r, g, b] = rgb;
    let v = fmaf(m0, r, fmaf(m1, g, fmaf(m2, b, OPSIN_BIAS)));
    cbrtf(if v < 0.0 { 0.0 } else { v }) - CBRT_BIAS
}

/// The positive XYB of the three [`opsin`] responses.
#[inline(always)]
pub fn xyb_of_lms(l: f32, m: f32, s: f32) -> [f32; 3] {
    let x = 0.5 * (l - m);
    let y = 0.5 * (l + m);
    [fmaf(x, 14.0, 0.42), y + 0.01, (s - y) + 0.55]
}

/// Linear RGB to the positive XYB of SSIMULACRA2: X' = 14·X + 0.42, Y' = Y + 0.01,
/// B' = (B − Y) + 0.55. Same f32 operations (fused where the reference fuses) as the
/// reference's `yuvxyb`.
#[inline(always)]
pub fn xyb(rgb: [f32; 3]) -> [f32; 3] {
    xyb_of_lms(opsin(0, rgb), opsin(1, rgb), opsin(2, rgb))
}

/// The SSIM error map: 1 − SSIM' without the luminance denominator, clamped at 0 (NaN
/// from degenerate input counts as 0). The ratio in f32, the difference in f64, as the
/// reference computes it.
#[inline(always)]
pub fn ssim_d(mu1: f32, mu2: f32, s11: f32, s22: f32, s12: f32) -> f64 {
    const C2: f32 = 0.0009;
    let diff = mu1 - mu2;
    let num_m = fmaf(diff, -diff, 1.0);
    let num_s = fmaf(2.0, s12 - mu1 * mu2, C2);
    let den_s = (s11 - mu1 * mu1) + (s22 - mu2 * mu2) + C2;
    let d = 1.0 - ((num_m * num_s) / den_s) as f64;
    if d > 0.0 { d } else { 0.0 }
}

/// Edge difference d1 = (1 + |b − μ2|) / (1 + |a − μ1|) − 1 (in f64): artifact =
/// max(d1, 0), detail lost = max(−d1, 0).
#[inline(always)]
pub fn edge_d1(a: f32, mu1: f32, b: f32, mu2: f32) -> f64 {
    (1.0 + (b - mu2).abs() as f64) / (1.0 + (a - mu1).abs() as f64) - 1.0
}

/// Adds one pixel's map values to `acc` (d, d⁴, artifact, artifact⁴, detail, detail⁴).
#[inline(always)]
pub fn accumulate(acc: &mut [f64; SUMS_PER_PLANE], d: f64, d1: f64) {
    let pow4 = |v: f64| {
        let v2 = v * v;
        v2 * v2
    };
    let art = if d1 > 0.0 { d1 } else { 0.0 };
    let det = if d1 < 0.0 { -d1 } else { 0.0 };
    acc[0] += d;
    acc[1] += pow4(d);
    acc[2] += art;
    acc[3] += pow4(art);
    acc[4] += det;
    acc[5] += pow4(det);
}

/// Size of the next scale (rounded up).
#[inline(always)]
pub const fn half(n: u32) -> u32 {
    n.div_ceil(2)
}

/// The 2×2 box average at (ox, oy) of a `w`×`h` plane (edge clamped).
///
/// # Safety
/// `src` must hold `w * h` values.
#[inline(always)]
pub unsafe fn downsample_at(src: *const f32, w: u32, h: u32, ox: u32, oy: u32) -> f32 {
    let x0 = 2 * ox;
    let y0 = 2 * oy;
    let x1 = if x0 + 1 < w { x0 + 1 } else { w - 1 };
    let y1 = if y0 + 1 < h { y0 + 1 } else { h - 1 };
    let at = |x: u32, y: u32| unsafe { *src.add((y * w + x) as usize) };
    (at(x0, y0) + at(x1, y0) + at(x0, y1) + at(x1, y1)) * 0.25
}

/// Ten steps of the horizontal recursion of moment `M` for one row: the right inputs are
/// pixels `a[j]`, `b[j]` (j < 10), the left inputs `ring` (the previous group's right
/// inputs, replaced by these); `store(j, v)` receives the step's output. All loads come
/// before the first store, so the GPU overlaps them.
///
/// # Safety
/// `a` and `b` must hold ten values.
#[inline(always)]
pub unsafe fn hgroup<const M: u32>(
    st: &mut Iir,
    ring: &mut [f32; RING as usize],
    a: *const f32,
    b: *const f32,
    mut store: impl FnMut(u32, f32),
) {
    let mut right = [0.0f32; RING as usize];
    unroll!(j in [0 1 2 3 4 5 6 7 8 9] {
        right[j] = moment(M, unsafe { (*a.add(j), *b.add(j)) });
    });
    unroll!(j in [0 1 2 3 4 5 6 7 8 9] {
        store(j as u32, st.horizontal(ring[j] + right[j]));
    });
    *ring = right;
}

/// [`hgroup`] of moment `m` < 5, chosen at run time (each arm has a constant moment).
///
/// # Safety
/// As [`hgroup`].
#[inline(always)]
pub unsafe fn hgroup_of(
    m: u32,
    st: &mut Iir,
    ring: &mut [f32; RING as usize],
    a: *const f32,
    b: *const f32,
    store: impl FnMut(u32, f32),
) {
    unsafe {
        match m {
            0 => hgroup::<0>(st, ring, a, b, store),
            1 => hgroup::<1>(st, ring, a, b, store),
            2 => hgroup::<2>(st, ring, a, b, store),
            3 => hgroup::<3>(st, ring, a, b, store),
            _ => hgroup::<4>(st, ring, a, b, store),
        }
    }
}

/// One `VCHUNK` of the vertical recursion of a column: `now[j]` is input row 20k + j,
/// `ring[j]` input row 20k + j − 10 (replaced by rows 20k + 10 ..); `out(j, v)` receives
/// output row 20k + j − 4.
#[inline(always)]
pub fn vchunk(
    st: &mut Iir,
    ring: &mut [f32; RING as usize],
    now: [f32; VCHUNK as usize],
    mut out: impl FnMut(u32, f32),
) {
    unroll!(j in [0 1 2 3 4 5 6 7 8 9] {
        out(j as u32, st.vertical(ring[j] + now[j]));
    });
    unroll!(j in [0 1 2 3 4 5 6 7 8 9] {
        out(j as u32 + RING, st.vertical(now[j] + now[j + RING as usize]));
    });
    unroll!(j in [0 1 2 3 4 5 6 7 8 9] {
        ring[j] = now[j + RING as usize];
    });
}

/// Terms of one scale of SSIMULACRA2's distortion map, per plane c (X, Y, B) and map m (0
/// SSIM error, 1 artifact, 2 detail lost) at `3·c + m`: `(w1, k4)`, so that a pixel whose
/// map value is v contributes `w1·v + k4·v⁴` (its share of the weighted sum the score
/// comes from). `weights` are the reference's 108 (plane c's start at `6·c·scales`, then 6
/// per scale: L1 of the three maps, L4 of the three), `sums` this scale's
/// `SUMS_PER_SCALE` sums, `pixels` its pixel count: k4 = w4 / mean(v⁴)^¾, the cube of two
/// square roots (exact on the host and the GPU alike), 0 where mean(v⁴) is 0.
pub fn map_terms(
    weights: &[f64],
    scales: usize,
    s: usize,
    sums: &[f64],
    pixels: f64,
) -> [(f64, f64); 9] {
    let mut terms = [(0.0, 0.0); 9];
    for c in 0..3 {
        for m in 0..3 {
            let i = c * 6 * scales + s * 6;
            let (w1, w4) = (weights[i + m], weights[i + 3 + m]);
            let mean4 = sums[c * SUMS_PER_PLANE + m * 2 + 1] / pixels;
            let k4 = if mean4 > 0.0 {
                let q = sqrt(sqrt(mean4));
                w4 / (q * q * q)
            } else {
                0.0
            };
            terms[3 * c + m] = (w1, k4);
        }
    }
    terms
}

/// One pixel's contribution to the map at its scale: the sum over the nine terms
/// (`term(3·c + m)`, as [`map_terms`] gives them) of `w1·v + k4·v⁴`, v the plane's map
/// value from `value(c, which)` (which 0: the SSIM error; 1: d1, whose positive part is the
/// artifact and negative part the detail lost); terms whose weights are both 0 are left
/// out. (The terms come through a function so that the kernel reads them from shared
/// memory rather than copying them to a local array.)
#[inline(always)]
pub fn map_contribution(
    term: impl Fn(usize) -> (f64, f64),
    value: impl Fn(usize, usize) -> f32,
) -> f64 {
    let mut sum = 0.0f64;
    for c in 0..3 {
        for m in 0..3 {
            let (w1, k4) = term(3 * c + m);
            if w1 == 0.0 && k4 == 0.0 {
                continue;
            }
            let x = match m {
                0 => value(c, 0) as f64,
                1 => {
                    let d1 = value(c, 1) as f64;
                    if d1 > 0.0 { d1 } else { 0.0 }
                }
                _ => {
                    let d1 = -(value(c, 1) as f64);
                    if d1 > 0.0 { d1 } else { 0.0 }
                }
            };
            let x2 = x * x;
            sum += w1 * x + k4 * x2 * x2;
        }
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::super::layout::HCHUNK;
    use super::*;
    use std::vec;
    use std::vec::Vec;

    #[test]
    fn recursive_blur_is_the_nine_tap_gaussian() {
        // Impulse response (exact arithmetic: nine taps, sum 1).
        let mut out = [0.0f32; 21];
        let impulse = |x| if x == 10 { (1.0, 0.0) } else { (0.0, 0.0) };
        blur_row(21, 3, impulse, |x, v| out[x as usize] = v);
        let sum: f32 = out.iter().sum();
        assert!((sum - 1.0).abs() < 1e-5, "{sum}");
        assert!((out[10] - 0.264_621_1).abs() < 1e-6 && (out[14] - 0.009_414_368).abs() < 1e-6);
        assert!(
            out[16].abs() < 1e-6 && (out[9] - out[11]).abs() < 1e-6,
            "{out:?}"
        );
    }

    fn assert_same_bits(want: &[f32], got: &[f32], what: &str) {
        let same = want
            .iter()
            .zip(got)
            .all(|(x, y)| x.to_bits() == y.to_bits());
        assert!(same, "{what}: {want:?} vs {got:?}");
    }

    /// Deterministic test values in [0.3, 0.7).
    fn values(n: usize, seed: u32) -> Vec<f32> {
        let mut x = seed.wrapping_mul(2_654_435_761) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                0.3 + (x % 10_000) as f32 / 25_000.0
            })
            .collect()
    }

    /// The tiling of `ssimu2_hblur` (tiles of `HCHUNK` inputs, groups of ten steps with
    /// the left inputs in a ring) gives bit for bit the sequential pass, at every width and
    /// moment.
    #[test]
    fn tiled_horizontal_pass_equals_the_row_pass() {
        for w in [1u32, 3, 4, 5, 10, 31, 36, 37, 40, 41, 64, 100, 257] {
            let (a, b) = (values(w as usize, w), values(w as usize, w + 7));
            for m in 0..5u32 {
                let mut want = vec![0.0f32; w as usize];
                blur_row(
                    w,
                    m,
                    |x| (a[x as usize], b[x as usize]),
                    |x, v| want[x as usize] = v,
                );
                let mut got = vec![f32::NAN; w as usize];
                let (mut st, mut ring) = (Iir::default(), [0.0f32; RING as usize]);
                for k in 0..(w + LAG as u32).div_ceil(HCHUNK) {
                    let tile = |p: &[f32]| -> Vec<f32> {
                        (0..HCHUNK)
                            .map(|j| p.get((k * HCHUNK + j) as usize).copied().unwrap_or(0.0))
                            .collect()
                    };
                    let (ta, tb) = (tile(&a), tile(&b));
                    for g in (0..HCHUNK).step_by(RING as usize) {
                        let (pa, pb) = (ta[g as usize..].as_ptr(), tb[g as usize..].as_ptr());
                        let n0 = (k * HCHUNK + g) as i32 - LAG;
                        let store = |j: u32, v: f32| {
                            let n = n0 + j as i32;
                            if n >= 0 && (n as u32) < w {
                                got[n as usize] = v;
                            }
                        };
                        // SAFETY: ten values from each offset.
                        unsafe { hgroup_of(m, &mut st, &mut ring, pa, pb, store) };
                    }
                }
                assert_same_bits(&want, &got, &std::format!("w {w} m {m}"));
            }
        }
    }

    /// The chunked ring of `ssimu2_vblur` gives bit for bit the sequential pass.
    #[test]
    fn chunked_vertical_pass_equals_the_column_pass() {
        for h in [1u32, 4, 5, 6, 9, 10, 11, 16, 19, 20, 21, 33, 100] {
            let col = values(h as usize, h + 3);
            let mut want = vec![0.0f32; h as usize];
            let mut st = Iir::default();
            for n in 1 - IIR_N..h as i32 {
                let (t, b) = (n - IIR_N - 1, n + IIR_N - 1);
                let tv = if t >= 0 { col[t as usize] } else { 0.0 };
                let bv = if b < h as i32 { col[b as usize] } else { 0.0 };
                let v = st.vertical(tv + bv);
                if n >= 0 {
                    want[n as usize] = v;
                }
            }
            let mut got = vec![f32::NAN; h as usize];
            let (mut st, mut ring) = (Iir::default(), [0.0f32; RING as usize]);
            for k in 0..(h + LAG as u32).div_ceil(VCHUNK) {
                let now = core::array::from_fn(|j| {
                    let r = k * VCHUNK + j as u32;
                    if r < h { col[r as usize] } else { 0.0 }
                });
                vchunk(&mut st, &mut ring, now, |j, v| {
                    let n = (k * VCHUNK + j) as i32 - LAG;
                    if n >= 0 && (n as u32) < h {
                        got[n as usize] = v;
                    }
                });
            }
            assert_same_bits(&want, &got, &std::format!("h {h}"));
        }
    }

    #[test]
    fn cbrt_bias_is_the_hosts() {
        assert_eq!(CBRT_BIAS.to_bits(), OPSIN_BIAS.cbrt().to_bits());
    }

    #[test]
    fn xyb_of_black_and_white() {
        let k = xyb([0.0; 3]);
        assert!((k[0] - 0.42).abs() < 1e-6 && (k[1] - 0.01).abs() < 1e-6);
        assert!((k[2] - 0.55).abs() < 1e-6);
        let w = xyb([1.0; 3]);
        assert!((w[0] - 0.42).abs() < 1e-3, "{w:?}");
        assert!(w[1] > 0.8 && w[1] < 0.9, "{w:?}");
    }

    #[test]
    fn identical_moments_give_zero_error() {
        assert_eq!(ssim_d(0.3, 0.3, 0.1, 0.1, 0.1), 0.0);
        assert!(ssim_d(0.3, 0.3, 0.1, 0.2, 0.09) > 0.0);
        assert_eq!(edge_d1(0.5, 0.4, 0.5, 0.4), 0.0);
        assert!(edge_d1(0.5, 0.5, 0.7, 0.5) > 0.0);
        let mut acc = [0.0; 6];
        accumulate(&mut acc, 0.5, -0.5);
        assert_eq!(acc, [0.5, 0.0625, 0.0, 0.0, 0.5, 0.0625]);
    }

    #[test]
    fn downsample_clamps_edges() {
        let p = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]; // 3x2
        assert_eq!(unsafe { downsample_at(p.as_ptr(), 3, 2, 0, 0) }, 3.0);
        assert_eq!(unsafe { downsample_at(p.as_ptr(), 3, 2, 1, 0) }, 4.5);
        assert_eq!(half(3), 2);
    }
}
