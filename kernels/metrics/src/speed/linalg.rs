//! The two small dense problems of SpEED, on row-major `n`×`n` f32 matrices, in libvmaf's
//! operation order (so in its rounding): the eigenvalues of the symmetric patch covariance
//! (Householder reduction to tridiagonal form, then implicit symmetric QR steps with
//! Wilkinson shifts, as GSL's `symmtd` and `symm` do) and the solution of `K X = Y` by a
//! Householder QR factorisation and back substitution, one column (block) at a time.
//!
//! libvmaf's C evaluates a few expressions in `double` (its `sqrt`, `1.0 / sqrt(..)`, the
//! `1e-6` comparisons, `-0.5 * tau * xv`); those are written out here as the same widening
//! and narrowing.

use gpumetrics_device::math::sqrt;

/// Relative size below which off-diagonal and pivot elements count as zero.
pub const EPS: f64 = 1e-6;
/// Iteration limit of the QR steps (libvmaf warns and goes on with what it has).
pub const MAX_ITERS: u32 = 500;

/// `sqrt` of an f32 through f64, as C's `sqrt(float)` stored back into a `float`.
#[inline(always)]
fn sqrt32(x: f32) -> f32 {
    sqrt(x as f64) as f32
}

#[inline(always)]
fn hypot32(x: f32, y: f32) -> f32 {
    sqrt32(x * x + y * y)
}

#[inline(always)]
fn sign(x: f32) -> f32 {
    if x >= 0.0 { 1.0 } else { -1.0 }
}

/// The Householder reflection that zeroes column `col` below row `start + 1`, stored in
/// place (libvmaf/GSL's convention: the vector scaled to a leading 1, the new pivot in its
/// place); returns its `tau` (0: nothing to reflect).
fn householder(a: &mut [f32], n: usize, col: usize, start: usize) -> f32 {
    if n - start == 1 {
        return 0.0;
    }
    let mut norm = 0.0f32;
    for i in start + 1..n {
        norm += a[i * n + col] * a[i * n + col];
    }
    let norm = sqrt32(norm);
    if norm == 0.0 {
        return 0.0;
    }
    let alpha = a[start * n + col];
    let beta = -sign(alpha) * hypot32(alpha, norm);
    let tau = (beta - alpha) / beta;
    let s = alpha - beta;
    if s != 0.0 {
        for i in start..n {
            a[i * n + col] /= s;
        }
        a[start * n + col] = beta;
    }
    tau
}

/// Reduces the symmetric `a` (overwritten) to tridiagonal form: its diagonal into `d`
/// (`n`), subdiagonal into `sd` (`n − 1`); `work` holds 2`n`.
fn tridiagonalise(a: &mut [f32], n: usize, d: &mut [f32], sd: &mut [f32], work: &mut [f32]) {
    let (v, x) = work[..2 * n].split_at_mut(n);
    for i in 0..n.saturating_sub(2) {
        let tau = householder(a, n, i, i + 1);
        for j in i + 1..n {
            v[j] = a[j * n + i];
        }
        if tau != 0.0 {
            a[(i + 1) * n + i] = v[i + 1];
            v[i + 1] = 1.0;
            for r in i + 1..n {
                let mut acc = 0.0f32;
                for c in i + 1..n {
                    acc += tau * a[r * n + c] * v[c];
                }
                x[r] = acc;
            }
            let mut xv = 0.0f32;
            for r in i + 1..n {
                xv += x[r] * v[r];
            }
            let alpha = (-0.5 * tau as f64 * xv as f64) as f32;
            for r in i + 1..n {
                x[r] += alpha * v[r];
            }
            for r in i + 1..n {
                for c in i + 1..n {
                    a[r * n + c] -= x[r] * v[c] + v[r] * x[c];
                }
            }
        }
    }
    for i in 0..n {
        d[i] = a[i * n + i];
    }
    for i in 0..n - 1 {
        sd[i] = a[(i + 1) * n + i];
    }
}

/// Zeroes the subdiagonal elements that are negligible next to their diagonal neighbours.
fn chop(d: &[f32], sd: &mut [f32], n: usize) {
    for i in 0..n - 1 {
        if (sd[i].abs() as f64) < EPS * (d[i].abs() + d[i + 1].abs()) as f64 {
            sd[i] = 0.0;
        }
    }
}

/// Wilkinson shift: the eigenvalue of the trailing 2×2 block closer to its last element.
fn shift(d: &[f32], sd: &[f32], n: usize) -> f32 {
    let (ta, tb, tab) = (d[n - 2], d[n - 1], sd[n - 2]);
    let dt = ((ta - tb) as f64 / 2.0) as f32;
    if dt > 0.0 {
        tb - tab * (tab / (dt + hypot32(dt, tab)))
    } else if dt == 0.0 {
        tb - tab.abs()
    } else {
        tb + tab * (tab / (-dt + hypot32(dt, tab)))
    }
}

/// Givens rotation (c, s) with `[c −s; s c]ᵀ (a, b) = (r, 0)`.
fn givens(a: f32, b: f32) -> (f32, f32) {
    if b == 0.0 {
        (1.0, 0.0)
    } else if b.abs() > a.abs() {
        let t = -a / b;
        let s1 = (1.0 / sqrt((1.0 + t * t) as f64)) as f32;
        (s1 * t, s1)
    } else {
        let t = -b / a;
        let c1 = (1.0 / sqrt((1.0 + t * t) as f64)) as f32;
        (c1, c1 * t)
    }
}

/// One implicit symmetric QR step on the unreduced tridiagonal block `d[..n]`, `sd[..n−1]`.
fn qr_step(d: &mut [f32], sd: &mut [f32], n: usize) {
    let mut mu = shift(d, sd, n);
    if EPS * (mu.abs() as f64) > (d[0].abs() + sd[0].abs()) as f64 {
        mu = 0.0;
    }
    let mut x = d[0] - mu;
    let mut z = sd[0];
    let (mut bk, mut zk) = (0.0f32, 0.0f32);
    let mut ap = d[0];
    let mut bp = sd[0];
    let mut aq = d[1];
    if n == 2 {
        let (c, s) = givens(x, z);
        let ap1 = c * (c * ap - s * bp) + s * (s * aq - c * bp);
        let bp1 = c * (s * ap + c * bp) - s * (s * bp + c * aq);
        let aq1 = s * (s * ap + c * bp) + c * (s * bp + c * aq);
        d[0] = ap1;
        sd[0] = bp1;
        d[1] = aq1;
        return;
    }
    let mut bq = sd[1];
    for k in 0..n - 1 {
        let (c, s) = givens(x, z);
        let bk1 = c * bk - s * zk;
        let ap1 = c * (c * ap - s * bp) + s * (s * aq - c * bp);
        let bp1 = c * (s * ap + c * bp) - s * (s * bp + c * aq);
        let zp1 = -s * bq;
        let aq1 = s * (s * ap + c * bp) + c * (s * bp + c * aq);
        let bq1 = c * bq;
        let ak = ap1;
        bk = bp1;
        zk = zp1;
        ap = aq1;
        bp = bq1;
        if k < n - 2 {
            aq = d[k + 2];
        }
        if k + 3 < n {
            bq = sd[k + 2];
        }
        d[k] = ak;
        if k > 0 {
            sd[k - 1] = bk1;
        }
        if k < n - 2 {
            sd[k + 1] = bp;
        }
        x = bk;
        z = zk;
    }
    d[n - 1] = ap;
    sd[n - 2] = bk;
}

/// Scratch [`eigenvalues`] needs for an `n`×`n` matrix.
pub const fn eigen_work(n: usize) -> usize {
    n * n + 4 * n
}

/// The eigenvalues of the symmetric `n`×`n` matrix `a` into `out` (unordered, as the
/// iteration leaves them); `work` holds [`eigen_work`]`(n)`. Returns false if the iteration
/// limit was reached (the values are then the partial result, as libvmaf's).
pub fn eigenvalues(a: &[f32], n: usize, out: &mut [f32], work: &mut [f32]) -> bool {
    if n == 0 {
        return true;
    }
    if n == 1 {
        out[0] = a[0];
        return true;
    }
    let (m, rest) = work.split_at_mut(n * n);
    let (d, rest) = rest.split_at_mut(n);
    let (sd, tmp) = rest.split_at_mut(n);
    m.copy_from_slice(&a[..n * n]);
    tridiagonalise(m, n, d, sd, tmp);
    chop(d, sd, n);
    let mut b = n - 1;
    let mut iters = 0;
    while b > 0 && iters < MAX_ITERS {
        if sd[b - 1] == 0.0 {
            b -= 1;
            continue;
        }
        let mut a0 = b - 1;
        while a0 > 0 && sd[a0 - 1] != 0.0 {
            a0 -= 1;
        }
        let len = b - a0 + 1;
        qr_step(&mut d[a0..], &mut sd[a0..], len);
        chop(&d[a0..], &mut sd[a0..], len);
        iters += 1;
    }
    out[..n].copy_from_slice(&d[..n]);
    iters < MAX_ITERS
}

/// Whether no eigenvalue is below [`EPS`] (libvmaf's test before it solves; a NaN passes,
/// as there).
pub fn is_regular(eigen: &[f32]) -> bool {
    !eigen.iter().any(|&l| (l as f64) < EPS)
}

/// `dst = x · y` for `n`×`n` matrices, accumulated in libvmaf's (i, k, j) order: each entry
/// is [`matmul_entry`]'s sum (this loop order vectorises on the host).
fn matmul(dst: &mut [f32], x: &[f32], y: &[f32], n: usize) {
    dst[..n * n].fill(0.0);
    for i in 0..n {
        for k in 0..n {
            let xik = x[i * n + k];
            for j in 0..n {
                dst[i * n + j] += xik * y[k * n + j];
            }
        }
    }
}

/// Scratch [`qr`] needs for an `n`×`n` matrix.
pub const fn qr_work(n: usize) -> usize {
    3 * n * n
}

/// Entry (i, j) of `z` at step `k` of [`qr`]: rows and columns before `k` reset to the
/// identity's.
#[inline(always)]
pub fn qr_reset(z: f32, i: usize, j: usize, k: usize) -> f32 {
    if i < k || j < k {
        if i == j { 1.0 } else { 0.0 }
    } else {
        z
    }
}

/// Step `k`'s reflection vector, in place: `v` holds column `k` of the reset `z` (`n`
/// values) and becomes the unit vector of the reflection; `akk` is the input's `a[k][k]`.
#[inline(always)]
pub fn qr_vector(v: &mut [f32], k: usize, akk: f32) {
    let mut ss = 0.0f32;
    for &e in v.iter() {
        ss += e * e;
    }
    v[k] += sign(akk) * sqrt32(ss);
    let mut ss = 0.0f32;
    for &e in v.iter() {
        ss += e * e;
    }
    let norm = sqrt32(ss);
    for e in v.iter_mut() {
        *e /= norm;
    }
}

/// Entry (i, j) of the reflection `I − 2 v vᵀ`.
#[inline(always)]
pub fn qr_reflection(v: &[f32], i: usize, j: usize) -> f32 {
    let h = -2.0 * v[i] * v[j];
    if i == j { h + 1.0 } else { h }
}

/// Entry (i, j) of `x · y` (`n`×`n`), summed in `matmul`'s order: from 0, over k
/// ascending (so one GPU thread per entry gets `matmul`'s values).
#[inline(always)]
pub fn matmul_entry(x: &[f32], y: &[f32], n: usize, i: usize, j: usize) -> f32 {
    let mut acc = 0.0f32;
    for k in 0..n {
        acc += x[i * n + k] * y[k * n + j];
    }
    acc
}

/// Whether no pivot of [`qr`]'s `r` is below [`EPS`] in magnitude.
#[inline(always)]
pub fn qr_regular(r: &[f32], n: usize) -> bool {
    !(0..n).any(|i| (r[i * n + i].abs() as f64) < EPS)
}

/// Householder QR factorisation of `a` (`n`×`n`): `p` receives the product of the
/// reflections (so `p · a = r`, i.e. `p = Qᵀ`) and `r` the upper triangle. `work` holds
/// [`qr_work`]`(n)`. Returns false if a pivot of `r` is below [`EPS`] in magnitude (the
/// system counts as singular, as libvmaf's back substitution decides). Built from
/// [`qr_reset`], [`qr_vector`], [`qr_reflection`] and products equal to [`matmul_entry`]'s,
/// which the GPU runs one entry per thread.
pub fn qr(a: &[f32], n: usize, p: &mut [f32], r: &mut [f32], work: &mut [f32]) -> bool {
    let (z, rest) = work.split_at_mut(n * n);
    let (h, tmp) = rest.split_at_mut(n * n);
    let tmp = &mut tmp[..n * n];
    z.copy_from_slice(&a[..n * n]);
    for i in 0..n {
        for j in 0..n {
            p[i * n + j] = if i == j { 1.0 } else { 0.0 };
        }
    }
    for k in 0..n.saturating_sub(1) {
        for i in 0..n {
            for j in 0..n {
                z[i * n + j] = qr_reset(z[i * n + j], i, j, k);
            }
        }
        let v = &mut r[..n];
        for i in 0..n {
            v[i] = z[i * n + k];
        }
        qr_vector(v, k, a[k * n + k]);
        for i in 0..n {
            for j in 0..n {
                h[i * n + j] = qr_reflection(v, i, j);
            }
        }
        matmul(tmp, h, z, n);
        z.copy_from_slice(tmp);
        matmul(tmp, h, p, n);
        p[..n * n].copy_from_slice(tmp);
    }
    matmul(r, p, a, n);
    qr_regular(r, n)
}

/// One column of the solution of `a x = y` from [`qr`]'s `p` and `r`: `x = r⁻¹ (p y)`,
/// where `y` is the column's `n` values and `x` receives `n`. Only valid when [`qr`]
/// returned true.
pub fn solve_column(p: &[f32], r: &[f32], n: usize, y: &[f32], x: &mut [f32], work: &mut [f32]) {
    let py = &mut work[..n];
    for i in 0..n {
        let mut acc = 0.0f32;
        for k in 0..n {
            acc += p[i * n + k] * y[k];
        }
        py[i] = acc;
    }
    for i in (0..n).rev() {
        let mut t = py[i];
        for k in i + 1..n {
            t -= x[k] * r[i * n + k];
        }
        x[i] = t / r[i * n + i];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;
    use std::vec::Vec;

    fn sorted(mut v: Vec<f32>) -> Vec<f32> {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v
    }

    fn eig(a: &[f32], n: usize) -> Vec<f32> {
        let mut out = vec![0.0; n];
        let mut work = vec![0.0; eigen_work(n)];
        assert!(eigenvalues(a, n, &mut out, &mut work));
        sorted(out)
    }

    #[test]
    fn eigenvalues_of_known_matrices() {
        assert_eq!(eig(&[2.0, 0.0, 0.0, 3.0], 2), vec![2.0, 3.0]);
        let e = eig(&[2.0, 1.0, 1.0, 2.0], 2);
        assert!(
            (e[0] - 1.0).abs() < 1e-6 && (e[1] - 3.0).abs() < 1e-6,
            "{e:?}"
        );
        // The second-difference matrix: 2 − 2cos(kπ/(n+1)).
        let n = 25;
        let mut a = vec![0.0f32; n * n];
        for i in 0..n {
            a[i * n + i] = 2.0;
            if i + 1 < n {
                a[i * n + i + 1] = -1.0;
                a[(i + 1) * n + i] = -1.0;
            }
        }
        let e = eig(&a, n);
        for (k, v) in e.iter().enumerate() {
            let want = 2.0 - 2.0 * (((k + 1) as f64) * core::f64::consts::PI / 26.0).cos();
            assert!((*v as f64 - want).abs() < 1e-5, "{k}: {v} vs {want}");
        }
        assert_eq!(eig(&[7.5], 1), vec![7.5]);
    }

    #[test]
    fn matmul_entries_are_matmuls_sums() {
        let n = 25;
        let mut seed = 7u32;
        let mut rnd = || {
            seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
            (seed >> 8) as f32 / (1 << 24) as f32 - 0.5
        };
        let x: Vec<f32> = (0..n * n).map(|_| rnd()).collect();
        let mut y: Vec<f32> = (0..n * n).map(|_| rnd()).collect();
        y[3] = -0.0;
        let mut dst = vec![0.0; n * n];
        matmul(&mut dst, &x, &y, n);
        for i in 0..n {
            for j in 0..n {
                assert_eq!(
                    matmul_entry(&x, &y, n, i, j).to_bits(),
                    dst[i * n + j].to_bits()
                );
            }
        }
    }

    #[test]
    fn qr_solves_a_regular_system_and_refuses_a_singular_one() {
        let n = 4;
        let a = [
            4.0f32, 1.0, 0.5, 0.0, 1.0, 3.0, 0.2, 0.1, 0.5, 0.2, 2.0, 0.3, 0.0, 0.1, 0.3, 1.5,
        ];
        let (mut p, mut r) = (vec![0.0; n * n], vec![0.0; n * n]);
        let mut work = vec![0.0; qr_work(n)];
        assert!(qr(&a, n, &mut p, &mut r, &mut work));
        let want = [1.0f32, -2.0, 0.5, 3.0];
        let y: Vec<f32> = (0..n)
            .map(|i| (0..n).map(|k| a[i * n + k] * want[k]).sum())
            .collect();
        let mut x = vec![0.0; n];
        solve_column(&p, &r, n, &y, &mut x, &mut work);
        for i in 0..n {
            assert!((x[i] - want[i]).abs() < 1e-5, "{x:?}");
        }
        let singular = [1.0f32, 2.0, 2.0, 4.0];
        let (mut p, mut r) = (vec![0.0; 4], vec![0.0; 4]);
        assert!(!qr(&singular, 2, &mut p, &mut r, &mut work));
    }
}
