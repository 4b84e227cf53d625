//! SpEED's statistics on the reduced, mean-subtracted plane (`op`, rows `stride` apart):
//! the patch covariance (one entry per call), each block's variance estimate and entropy,
//! and each block's term of the score, in libvmaf's precision.

use super::{Dims, ELEMS};
use gpumetrics_device::math::log2;

/// `log2(2πe)`, the entropy of a unit Gaussian in bits (less the ½).
pub const LOG2_2PI_E: f64 = 4.094191170361282;

/// Mean of the patch-aligned sub-image starting at (`row`, `col`) of the `span` region
/// ([`Dims::patch_span`]): one entry of the patch mean vector. f32 sum in raster order.
pub fn patch_mean(op: &[f32], stride: usize, span: (usize, usize), row: usize, col: usize) -> f32 {
    let (w, h) = span;
    let mut sum = 0.0f32;
    for i in 0..h {
        let base = (row + i) * stride + col;
        for &v in &op[base..base + w] {
            sum += v;
        }
    }
    sum / (w * h) as f32
}

/// Entries of the symmetric patch covariance that are computed: the pairs (x, y ≤ x).
pub const PAIRS: usize = ELEMS * (ELEMS + 1) / 2;

/// Pair `e` of the covariance entries, in the order x = 0, 1, .., and for each x, y = 0..=x
/// (`e = x(x+1)/2 + y`).
#[inline(always)]
pub fn pair(e: usize) -> (usize, usize) {
    let mut x = 0;
    while (x + 1) * (x + 2) / 2 <= e {
        x += 1;
    }
    (x, e - x * (x + 1) / 2)
}

/// Index of the entry (x, y) (either order) among [`pair`]'s.
#[inline(always)]
pub fn pair_index(x: usize, y: usize) -> usize {
    let (x, y) = if x >= y { (x, y) } else { (y, x) };
    x * (x + 1) / 2 + y
}

/// Covariance of the patch elements `x` and `y` (indices `row * block + col` into the
/// patch), with their means from [`patch_mean`] (`means[index]`). f64 sum, as libvmaf.
pub fn patch_covariance(
    op: &[f32],
    stride: usize,
    dims: &Dims,
    means: &[f32],
    x: usize,
    y: usize,
) -> f32 {
    let (w, h) = dims.patch_span();
    let b = dims.block;
    let (mx, my) = (means[x] as f64, means[y] as f64);
    let (ox, oy) = ((x / b) * stride + x % b, (y / b) * stride + y % b);
    let mut sum = 0.0f64;
    for i in 0..h {
        let (rx, ry) = (&op[ox + i * stride..][..w], &op[oy + i * stride..][..w]);
        for (&a, &c) in rx.iter().zip(ry) {
            sum += (a as f64 - mx) * (c as f64 - my);
        }
    }
    (sum / (w * h) as f64) as f32
}

/// The `dims.block²` values of block `k` (raster order of blocks), patch order, into `y`:
/// the block's column of the right-hand side.
pub fn block_values(op: &[f32], stride: usize, dims: &Dims, k: usize, y: &mut [f32]) {
    let b = dims.block;
    let (bx, by) = (k % dims.blocks_x, k / dims.blocks_x);
    for r in 0..b {
        for c in 0..b {
            y[r * b + c] = op[(by * b + r) * stride + bx * b + c];
        }
    }
}

/// The block's variance estimate `s = Σᵢ xᵢ yᵢ / n` from the solution `x` of `K x = y`
/// (all zero when `K` could not be inverted), summed in element order as libvmaf.
pub fn block_variance(x: &[f32], y: &[f32], n: usize) -> f32 {
    let d = n as f32;
    let mut s = (x[0] * y[0]) / d;
    for i in 1..n {
        s += (x[i] * y[i]) / d;
    }
    s
}

/// The block's entropy `Σₖ [log2(λₖ⁺ s + σ²ₙ) + log2(2πe)]` over the covariance's
/// eigenvalues (negative ones as 0), accumulated in f32 with each term in f64, as libvmaf.
pub fn block_entropy(eigen: &[f32], s: f32, sigma_nn: f32) -> f32 {
    let mut h = 0.0f32;
    for &l in eigen {
        let l = if l < 0.0 { 0.0 } else { l };
        h = (h as f64 + (log2((l * s + sigma_nn) as f64) + LOG2_2PI_E)) as f32;
    }
    h
}

/// The entropy below which a block counts as invisible: that of the noise floor,
/// `n · [log2((1 + floor)·σ²ₙ) + log2(2πe)]`.
pub fn base_entropy(n: usize, nn_floor: f32, sigma_nn: f32) -> f32 {
    (n as f64 * (log2(((1.0 + nn_floor) * sigma_nn) as f64) + LOG2_2PI_E)) as f32
}

/// Highest `speed_weight_var_mode`.
pub const MAX_WEIGHT_MODE: u32 = 6;

/// One block's term of the score: 0 when both entropies are below `base`, else
/// `|h_ref·log2(1 + v_r) − h_dis·log2(1 + v_d)|` with the variances `v_r`, `v_d` that
/// `mode` picks (0: own; 1: the reference's; 2: the distorted's; 3: their mean; 4: own for
/// the reference, the mean for the distorted; 5 and 6: 3:1 and 1:3 mixes for the
/// distorted). Modes above 6 give NaN (refused before).
pub fn block_term(
    (ref_h, ref_v): (f32, f32),
    (dis_h, dis_v): (f32, f32),
    base: f32,
    mode: u32,
) -> f32 {
    if ref_h < base && dis_h < base {
        return 0.0;
    }
    let own = |v: f32| log2((1.0 + v) as f64);
    let mean = log2(1.0 + (ref_v + dis_v) as f64 / 2.0);
    let (wr, wd) = match mode {
        0 => (own(ref_v), own(dis_v)),
        1 => (own(ref_v), own(ref_v)),
        2 => (own(dis_v), own(dis_v)),
        3 => (mean, mean),
        4 => (own(ref_v), mean),
        5 => (
            own(ref_v),
            log2(1.0 + (0.75 * ref_v as f64 + 0.25 * dis_v as f64)),
        ),
        6 => (
            own(ref_v),
            log2(1.0 + (0.25 * ref_v as f64 + 0.75 * dis_v as f64)),
        ),
        _ => return f32::NAN,
    };
    let r = (ref_h as f64 * wr) as f32;
    let d = (dis_h as f64 * wd) as f32;
    (r - d).abs()
}

/// A plane's score from the terms of its blocks (summed in block order in f32) and the
/// solver's outcome for each side: 0 if exactly one side could not be inverted.
pub fn plane_score(term_sum: f32, blocks: usize, ref_ok: bool, dis_ok: bool) -> f32 {
    if ref_ok != dis_ok {
        0.0
    } else {
        term_sum / blocks as f32
    }
}

/// `speed_chroma_uv` from the U and V scores and whether each plane was free of solver
/// failures: a plane that failed alone is replaced by the other, then the mean, capped at
/// `max_val` (NaN gives `max_val`, as C's `MIN`).
pub fn chroma_uv((u, u_ok): (f32, bool), (v, v_ok): (f32, bool), max_val: f64) -> f64 {
    let uv = if !u_ok && v_ok {
        v
    } else if !v_ok && u_ok {
        u
    } else {
        ((u + v) as f64 / 2.0) as f32
    };
    if (uv as f64) < max_val {
        uv as f64
    } else {
        max_val
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::speed::linalg::{eigen_work, eigenvalues, is_regular, qr, qr_work, solve_column};
    use std::vec;
    use std::vec::Vec;

    /// The statistics of a whole plane as libvmaf's `est_params` computes them: per block
    /// (entropy, variance), and whether the covariance could be inverted.
    pub(crate) fn estimate(
        op: &[f32],
        stride: usize,
        dims: &Dims,
        sigma_nn: f32,
    ) -> (Vec<(f32, f32)>, bool) {
        let n = dims.block * dims.block;
        let means: Vec<f32> = (0..n)
            .map(|i| {
                patch_mean(
                    op,
                    stride,
                    dims.patch_span(),
                    i / dims.block,
                    i % dims.block,
                )
            })
            .collect();
        let mut k = vec![0.0f32; n * n];
        for x in 0..n {
            for y in 0..=x {
                let c = patch_covariance(op, stride, dims, &means, x, y);
                k[x * n + y] = c;
                k[y * n + x] = c;
            }
        }
        let mut eig = vec![0.0; n];
        let mut work = vec![0.0; eigen_work(n).max(qr_work(n))];
        eigenvalues(&k, n, &mut eig, &mut work);
        let (mut p, mut r) = (vec![0.0; n * n], vec![0.0; n * n]);
        let ok = is_regular(&eig) && qr(&k, n, &mut p, &mut r, &mut work);
        let out = (0..dims.blocks())
            .map(|b| {
                let (mut y, mut x) = (vec![0.0; n], vec![0.0; n]);
                block_values(op, stride, dims, b, &mut y);
                if ok {
                    solve_column(&p, &r, n, &y, &mut x, &mut work);
                }
                let s = block_variance(&x, &y, n);
                (block_entropy(&eig, s, sigma_nn), s)
            })
            .collect();
        (out, ok)
    }

    fn dims(w: usize, h: usize, block: usize) -> Dims {
        Dims {
            width: w << 4,
            height: h << 4,
            scaled_width: w << 4,
            scaled_height: h << 4,
            resampled: false,
            op_width: w,
            op_height: h,
            block,
            blocks_x: w / block,
            blocks_y: h / block,
        }
    }

    /// libvmaf's own unit test of `est_params` (libvmaf/test/test_speed_chroma.c): a 13×9
    /// plane in blocks of 3, σ²ₙ = 0.1, and its expected entropies and variances.
    #[test]
    fn estimates_match_libvmafs_unit_test() {
        #[rustfmt::skip]
        let plane = [
            7.86, 4.69, 0.91, -1.37, 0.49, 7.36, 3.0, -3.17, -0.6, -0.78, 0.51, 4.93, 0.15,
            2.43, -0.7, 1.08, -1.0, -1.25, 1.79, -0.3, 2.89, 0.74, -1.69, -1.35, 0.72, -1.65,
            -2.23, -3.72, -0.05, -2.41, -4.17, 0.99, 3.82, 3.13, -2.06, 0.54, 2.9, -0.92, -1.53,
            -1.84, 1.57, 3.06, -0.91, -1.19, -0.89, -1.25, -1.14, -2.92, 2.29, 6.61, 0.36, -0.11,
            -1.45, 1.21, 2.0, 1.67, -0.31, -1.87, -2.68, -0.12, -3.34, -2.65, 0.81, -0.32, -0.97,
            0.74, -0.44, -2.7, 4.63, 3.01, 0.78, -1.91, -0.95, -0.89, -0.09, -1.58, 0.78, 1.47,
            2.14, 3.92, -4.08, -4.39, -1.2, 1.87, -1.09, -1.09, 0.52, 1.31, -2.23, -1.49, 0.32,
            -3.84, 2.4, 2.1, -2.95, -4.24, 1.5, 0.28, 1.27, 2.29, 1.91, -2.4, -1.36, -1.64,
            2.37, 1.27, 1.86, 7.02, 1.78, -0.72, -2.33, -2.79, -2.4, 0.12, -0.74, 1.12, 0.74f32,
        ];
        let entropy = [
            62.61018648,
            63.12108021,
            65.8986951,
            55.66976117,
            47.21675636,
            50.25993884,
            59.12113044,
            58.38842338,
            62.19691515,
            61.1713589,
            51.08823474,
            45.50999794f64,
        ];
        let variance = [
            1.6228419,
            1.68918131,
            2.09931166,
            0.93845804,
            0.47526583,
            0.60855795,
            1.23333762,
            1.16401841,
            1.57105656,
            1.4494503,
            0.65059199,
            0.41313011f64,
        ];
        let d = dims(13, 9, 3);
        assert_eq!(d.patch_span(), (10, 7));
        let (got, ok) = estimate(&plane, 13, &d, 0.1);
        assert!(ok);
        for (i, (h, v)) in got.iter().enumerate() {
            assert!(
                (*h as f64 - entropy[i]).abs() < 1e-4,
                "{i}: entropy {h} vs {}",
                entropy[i]
            );
            assert!(
                (*v as f64 - variance[i]).abs() < 1e-4,
                "{i}: variance {v} vs {}",
                variance[i]
            );
        }
    }

    #[test]
    fn a_flat_plane_is_singular_and_scores_zero() {
        let d = dims(20, 15, 5);
        let (got, ok) = estimate(&[0.0; 300], 20, &d, 0.19);
        assert!(!ok);
        let base = base_entropy(25, 0.1, 0.19);
        for &(h, v) in &got {
            assert_eq!(v, 0.0);
            // Every eigenvalue is 0: the entropy is the noise's, below the floor's.
            assert!(h < base, "{h} {base}");
            assert_eq!(block_term((h, v), (h, v), base, 5), 0.0);
        }
        // Without a floor the noise entropy equals the base: the term is computed, and is 0.
        let base0 = base_entropy(25, 0.0, 0.19);
        assert_eq!(block_term(got[0], got[0], base0, 0), 0.0);
        assert_eq!(plane_score(0.0, 12, false, false), 0.0);
    }

    #[test]
    fn identical_blocks_score_zero_except_for_modes_of_mixed_precision() {
        let (h, v) = (80.0f32, 2.5f32);
        for mode in 0..=4 {
            assert_eq!(block_term((h, v), (h, v), 0.0, mode), 0.0, "{mode}");
        }
        // Mode 5 weights the reference by log2(1 + v) with 1 + v rounded to f32 and the
        // distorted in f64: libvmaf's score of identical inputs is this small residue.
        let t = block_term((h, v), (h, v), 0.0, 5);
        assert!(t < 1e-4, "{t}");
        assert!(block_term((h, v), (h, v), 0.0, 7).is_nan());
        assert!(block_term((h, v), (h * 1.1, v), 0.0, 0) > 1.0);
    }

    #[test]
    fn pairs_enumerate_the_lower_triangle_in_row_order() {
        let want: Vec<(usize, usize)> = (0..ELEMS)
            .flat_map(|x| (0..=x).map(move |y| (x, y)))
            .collect();
        let got: Vec<(usize, usize)> = (0..PAIRS).map(pair).collect();
        assert_eq!(got, want);
        for (e, &(x, y)) in want.iter().enumerate() {
            assert_eq!((pair_index(x, y), pair_index(y, x)), (e, e));
        }
    }

    #[test]
    fn chroma_uv_replaces_a_failed_plane_and_caps() {
        assert_eq!(chroma_uv((2.0, true), (4.0, true), 45.0), 3.0);
        assert_eq!(chroma_uv((0.0, false), (4.0, true), 45.0), 4.0);
        assert_eq!(chroma_uv((2.0, true), (0.0, false), 45.0), 2.0);
        assert_eq!(chroma_uv((0.0, false), (0.0, false), 45.0), 0.0);
        assert_eq!(chroma_uv((100.0, true), (50.0, true), 45.0), 45.0);
        assert_eq!(chroma_uv((f32::NAN, true), (1.0, true), 45.0), 45.0);
        assert_eq!(plane_score(3.0, 2, true, false), 0.0);
        assert_eq!(plane_score(3.0, 2, true, true), 1.5);
    }
}
