//! libvmaf's `float_ssim` at scale 1 (what the AOM CTC's `aom-ssim-db` reads): luma scaled
//! to 0..255 by a power of two, an 11-tap Gaussian window whose taps are libvmaf's
//! (rounded to six decimals, so they sum to 1.000002), applied as two separable passes over
//! the valid region, in single precision as libvmaf computes it: each tap's product is an
//! `f32`, the products of a pass are summed in `f64` and the pass's result is stored as an
//! `f32`; the map value mixes `f32` and `f64` where libvmaf's C does. Reproducing its
//! roundings is the point: σ² = E\[x²\] − μ² in `f32`, with the window's excess weight,
//! moves the frame's SSIM by ~1e-4, 0.04 dB at 1080p.
//!
//! The horizontal pass ([`row_sums`]) writes five planes (μx, μy, x², y², xy filtered
//! along rows) of `valid(width)` columns for every row; the vertical pass ([`map_value`])
//! reads 11 rows of them per map value. The CPU backend and the `vmaf_ssim_rows` /
//! `vmaf_ssim_map` kernels call the same functions.

use super::{TAPS, valid};
use crate::channel::{ChannelPair, load, rescale};

/// libvmaf's Gaussian taps (σ = 1.5), as its source writes them.
pub const VMAF_TAPS: [f32; TAPS] = [
    0.001028, 0.007599, 0.036001, 0.109361, 0.213006, 0.266012, 0.213006, 0.109361, 0.036001,
    0.007599, 0.001028,
];

/// The horizontally filtered planes of one frame pair.
pub const PLANES: usize = 5;

/// One luma pair and the planes of its horizontal pass.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FloatSsim {
    /// Luma of both frames, native samples (same depth; `width`×`height` the frame's).
    pub pair: ChannelPair,
    /// 2^(bits − 8): libvmaf divides samples of more than 8 bits by it.
    pub divisor: f32,
    pub _pad: u32,
    /// [`PLANES`] `f32` planes of `valid(width)` × `height` values, one after the other.
    pub rows: u64,
}

impl FloatSsim {
    /// Values per plane of [`FloatSsim::rows`].
    #[inline(always)]
    pub fn plane_len(&self) -> usize {
        valid(self.pair.width) as usize * self.pair.height as usize
    }
}

/// A sample as libvmaf's `picture_copy` makes it, at the depth of the reference (whose
/// peak is `to_max`).
///
/// # Safety
/// `row` must hold `x + 1` samples of `c`.
#[inline(always)]
unsafe fn sample(
    row: *const u8,
    x: u32,
    c: &crate::channel::Channel,
    to_max: u32,
    divisor: f32,
) -> f32 {
    let v = rescale(unsafe { load(row, x, c) }, c.max, to_max) as f32;
    if divisor == 1.0 { v } else { v / divisor }
}

/// Sum over the taps of `f32` products, in `f64`, stored as `f32` (libvmaf's pass).
#[inline(always)]
fn pass(values: &[f32; TAPS]) -> f32 {
    let mut sum = 0.0f64;
    for k in 0..TAPS {
        sum += (values[k] * VMAF_TAPS[k]) as f64;
    }
    sum as f32
}

/// The horizontal pass at column `x` (< `valid(width)`) of row `y`: μx, μy, x², y², xy
/// filtered along the row.
///
/// # Safety
/// `p.pair` must describe readable memory of its size.
#[inline(always)]
pub unsafe fn row_sums(p: &FloatSsim, x: u32, y: u32) -> [f32; PLANES] {
    let pr = &p.pair;
    let a = (pr.reference.ptr + y as u64 * pr.reference.pitch as u64) as *const u8;
    let b = (pr.distorted.ptr + y as u64 * pr.distorted.pitch as u64) as *const u8;
    let mut r = [0f32; TAPS];
    let mut d = [0f32; TAPS];
    for k in 0..TAPS {
        unsafe {
            let to = pr.reference.max;
            r[k] = sample(a, x + k as u32, &pr.reference, to, p.divisor);
            d[k] = sample(b, x + k as u32, &pr.distorted, to, p.divisor);
        }
    }
    let mut rr = [0f32; TAPS];
    let mut dd = [0f32; TAPS];
    let mut rd = [0f32; TAPS];
    for k in 0..TAPS {
        rr[k] = r[k] * r[k];
        dd[k] = d[k] * d[k];
        rd[k] = r[k] * d[k];
    }
    [pass(&r), pass(&d), pass(&rr), pass(&dd), pass(&rd)]
}

/// Writes [`row_sums`] of (`x`, `y`) to the planes.
///
/// # Safety
/// As [`row_sums`]; `p.rows` must hold the planes.
#[inline(always)]
pub unsafe fn store_row_sums(p: &FloatSsim, x: u32, y: u32) {
    let v = unsafe { row_sums(p, x, y) };
    let (n, at) = (p.plane_len(), (y * valid(p.pair.width) + x) as usize);
    let out = p.rows as *mut f32;
    for (i, v) in v.into_iter().enumerate() {
        unsafe { *out.add(i * n + at) = v };
    }
}

/// libvmaf's constants: C1 = (0.01·255)², C2 = (0.03·255)², C3 = C2 / 2, in `f32`.
#[inline(always)]
fn constants() -> (f32, f32, f32) {
    let (a, b) = (0.01f32 * 255.0, 0.03f32 * 255.0);
    let c2 = b * b;
    (a * a, c2, c2 / 2.0)
}

/// The map value (l·c·s) at (`x`, `y`) of the valid region, from the planes of the
/// horizontal pass.
///
/// # Safety
/// `p.rows` must hold the planes, written for rows `y..y + 11`.
#[inline(always)]
pub unsafe fn map_value(p: &FloatSsim, x: u32, y: u32) -> f64 {
    let (n, w) = (p.plane_len(), valid(p.pair.width) as usize);
    let rows = p.rows as *const f32;
    let mut v = [0f32; PLANES];
    for (i, out) in v.iter_mut().enumerate() {
        let mut col = [0f32; TAPS];
        for (k, c) in col.iter_mut().enumerate() {
            *c = unsafe { *rows.add(i * n + (y as usize + k) * w + x as usize) };
        }
        *out = pass(&col);
    }
    let [mu_r, mu_d, rr, dd, rd] = v;
    let (c1, c2, c3) = constants();
    let var_r = (rr - mu_r * mu_r).max(0.0);
    let var_d = (dd - mu_d * mu_d).max(0.0);
    let cov = rd - mu_r * mu_d;
    let sigmas = gpumetrics_device::math::sqrt((var_r * var_d) as f64) as f32;
    let l =
        (2.0 * mu_r as f64 * mu_d as f64 + c1 as f64) / ((mu_r * mu_r + mu_d * mu_d + c1) as f64);
    let c = (2.0 * sigmas as f64 + c2 as f64) / ((var_r + var_d + c2) as f64);
    // libvmaf's fix of a flat window of identical frames: a covariance rounded below 0
    // where both deviations are 0 counts as 0.
    let cov = if cov < 0.0 && sigmas <= 0.0 { 0.0 } else { cov };
    let s = (cov + c3) / (sigmas + c3);
    l * c * s as f64
}

/// The frame's SSIM from the sum of its map values, rounded to `f32` as libvmaf returns it.
pub fn ssim(sum: f64, width: u32, height: u32) -> f64 {
    (sum / (valid(width) as f64 * valid(height) as f64)) as f32 as f64
}
