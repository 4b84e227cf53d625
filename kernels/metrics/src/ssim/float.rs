//! libvmaf's `float_ssim` at scale 1 and `float_ms_ssim` (what the AOM CTC's `aom-ssim-db`
//! and `aom-ms-ssim-db` read): luma scaled to 0..255 by a power of two, an 11-tap Gaussian
//! window whose taps are libvmaf's (rounded to six decimals, so they sum to 1.000002),
//! applied as two separable passes over the valid region, in single precision as libvmaf
//! computes it: each tap's product an `f32`, the products of a pass summed in `f64`, the
//! pass's result stored as an `f32`; the map values mix `f32` and `f64` where libvmaf's C
//! does. Reproducing its roundings is the point: σ² = E\[x²\] − μ² in `f32`, with the
//! window's excess weight, moves a frame's SSIM by ~1e-4, 0.04 dB at 1080p.
//!
//! MS-SSIM's scales are made by [`decimate`]: libvmaf's 9×9 low-pass filter (the outer
//! product of the 9/7 wavelet's low-pass taps, as its table rounds them) at every other
//! sample, borders mirrored; each scale's means of l, c and s come from the same passes.
//!
//! The horizontal pass ([`store_row_sums`]) writes five planes (μx, μy, x², y², xy filtered
//! along rows) of `valid(width)` columns for every row; the vertical pass ([`map_values`])
//! reads 11 rows of them per map position. The CPU backend and the `vmaf_ssim_rows`,
//! `vmaf_ssim_map` and `vmaf_ssim_down` kernels call the same functions.

use super::{F32_SAMPLES, TAPS, valid};
use crate::channel::{Channel, ChannelPair, load, rescale};

/// libvmaf's Gaussian taps (σ = 1.5), as its source writes them.
pub const VMAF_TAPS: [f32; TAPS] = [
    0.001028, 0.007599, 0.036001, 0.109361, 0.213006, 0.266012, 0.213006, 0.109361, 0.036001,
    0.007599, 0.001028,
];

/// libvmaf's 9×9 MS-SSIM low-pass filter, by distance from its centre (4 − |i − 4|, for row
/// and column): its 2D table's values, which are not the products of its rounded 1D taps.
const LPF: [[f32; 5]; 5] = [
    [0.000714, -0.000450, -0.002090, 0.007132, 0.016114],
    [-0.000450, 0.000283, 0.001316, -0.004490, -0.010146],
    [-0.002090, 0.001316, 0.006115, -0.020867, -0.047149],
    [0.007132, -0.004490, -0.020867, 0.071207, 0.160885],
    [0.016114, -0.010146, -0.047149, 0.160885, 0.363505],
];

/// MS-SSIM's scales.
pub const MS_SCALES: usize = 5;

/// libvmaf's MS-SSIM exponents per scale: luminance (only at the last), contrast and
/// structure (the same).
pub const MS_ALPHAS: [f32; MS_SCALES] = [0.0, 0.0, 0.0, 0.0, 0.1333];
pub const MS_BETAS: [f32; MS_SCALES] = [0.0448, 0.2856, 0.3001, 0.2363, 0.1333];

/// The horizontally filtered planes of one frame pair.
pub const PLANES: usize = 5;

/// f64 sums per scale: l, c, s and l·c·s over the valid region.
pub const SUMS: usize = 4;

/// One scale of a luma pair and the planes of its horizontal pass.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FloatSsim {
    /// Both frames: native samples (scale 0, same depth) or f32 planes (`sample_bytes` =
    /// [`F32_SAMPLES`]: a decimated scale).
    pub pair: ChannelPair,
    /// 2^(bits − 8): libvmaf divides native samples of more than 8 bits by it.
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

/// A sample as libvmaf holds it: a native one as its `picture_copy` makes it (at the depth
/// of the reference, whose peak is `to_max`), a decimated one as it is.
///
/// # Safety
/// `row` must hold `x + 1` samples of `c`.
#[inline(always)]
unsafe fn read(row: *const u8, x: u32, c: &Channel, to_max: u32, divisor: f32) -> f32 {
    if c.sample_bytes == F32_SAMPLES {
        return unsafe { *(row.add(x as usize * 4) as *const f32) };
    }
    let v = rescale(unsafe { load(row, x, c) }, c.max, to_max) as f32;
    if divisor == 1.0 { v } else { v / divisor }
}

/// Row `y` of a channel.
#[inline(always)]
fn row(c: &Channel, y: u32) -> *const u8 {
    (c.ptr + y as u64 * c.pitch as u64) as *const u8
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
    let (a, b) = (row(&pr.reference, y), row(&pr.distorted, y));
    let to = pr.reference.max;
    let mut r = [0f32; TAPS];
    let mut d = [0f32; TAPS];
    for k in 0..TAPS {
        unsafe {
            r[k] = read(a, x + k as u32, &pr.reference, to, p.divisor);
            d[k] = read(b, x + k as u32, &pr.distorted, to, p.divisor);
        }
    }
    window_sums(&r, &d)
}

/// [`row_sums`] from staged samples: `r(base + k)` and `d(base + k)` are the window's k-th
/// samples. The same products and sums: the same values.
#[inline(always)]
pub fn row_sums_staged(
    r: impl Fn(usize) -> f32,
    d: impl Fn(usize) -> f32,
    base: usize,
) -> [f32; PLANES] {
    let mut rv = [0f32; TAPS];
    let mut dv = [0f32; TAPS];
    for k in 0..TAPS {
        rv[k] = r(base + k);
        dv[k] = d(base + k);
    }
    window_sums(&rv, &dv)
}

/// The five filtered values of one window of samples of both frames.
#[inline(always)]
fn window_sums(r: &[f32; TAPS], d: &[f32; TAPS]) -> [f32; PLANES] {
    let mut rr = [0f32; TAPS];
    let mut dd = [0f32; TAPS];
    let mut rd = [0f32; TAPS];
    for k in 0..TAPS {
        rr[k] = r[k] * r[k];
        dd[k] = d[k] * d[k];
        rd[k] = r[k] * d[k];
    }
    [pass(r), pass(d), pass(&rr), pass(&dd), pass(&rd)]
}

/// Columns of a row the GPU's horizontal pass stages per round, and the samples that takes.
pub const ROW_CHUNK: u32 = 1024;
pub const ROW_STAGE: u32 = ROW_CHUNK + TAPS as u32 - 1;

/// Sample `x` of row `y` of `c`, as the passes read it (see [`row_sums`]).
///
/// # Safety
/// `c` must describe readable memory holding that sample.
#[inline(always)]
pub unsafe fn sample(c: &Channel, x: u32, y: u32, to_max: u32, divisor: f32) -> f32 {
    unsafe { read(row(c, y), x, c, to_max, divisor) }
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

/// The map values at (`x`, `y`) of the valid region, from the planes of the horizontal
/// pass: l, c, s and l·c·s (what [`SUMS`] adds up).
///
/// # Safety
/// `p.rows` must hold the planes, written for rows `y..y + 11`.
#[inline(always)]
pub unsafe fn map_values(p: &FloatSsim, x: u32, y: u32) -> [f64; SUMS] {
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
    let s = ((cov + c3) / (sigmas + c3)) as f64;
    [l, c, s, l * c * s]
}

/// A sum over the valid region as the mean libvmaf returns: rounded to `f32`.
#[inline(always)]
pub fn mean(sum: f64, width: u32, height: u32) -> f64 {
    (sum / (valid(width) as f64 * valid(height) as f64)) as f32 as f64
}

/// The size of the next MS-SSIM scale: half, rounded up.
#[inline(always)]
pub fn down(n: u32) -> u32 {
    n / 2 + (n & 1)
}

/// Whether a w×h frame has libvmaf's MS-SSIM: each of its scales, halved rounding down,
/// at least 11×11 (libvmaf refuses the frame otherwise).
pub fn ms_fits(w: u32, h: u32) -> bool {
    (0..MS_SCALES).all(|s| (w >> s) >= TAPS as u32 && (h >> s) >= TAPS as u32)
}

/// Mirrors a coordinate into 0..n as libvmaf's symmetric border does.
#[inline(always)]
fn mirror(i: i64, n: i64) -> i64 {
    if i < 0 {
        -1 - i
    } else if i >= n {
        2 * n - i - 1
    } else {
        i
    }
}

/// The pixel (`x`, `y`) of the next scale of `c` (w×h, native samples or f32): libvmaf's
/// low-pass filter at (2x, 2y), rows outer, each product an `f32`, summed in `f64`.
///
/// # Safety
/// `c` must describe readable memory of w×h samples.
#[inline(always)]
pub unsafe fn decimate(
    c: &Channel,
    w: u32,
    h: u32,
    to_max: u32,
    divisor: f32,
    x: u32,
    y: u32,
) -> f32 {
    let (cx, cy) = (2 * x as i64, 2 * y as i64);
    let mut sum = 0.0f64;
    for v in -4i64..=4 {
        let r = row(c, mirror(cy + v, h as i64) as u32);
        let kr = &LPF[(4 - v.abs()) as usize];
        for u in -4i64..=4 {
            let s = unsafe { read(r, mirror(cx + u, w as i64) as u32, c, to_max, divisor) };
            sum += (s * kr[(4 - u.abs()) as usize]) as f64;
        }
    }
    sum as f32
}

/// The GPU's decimation works on tiles: [`DOWN_TILE`]² next-scale pixels per block, from a
/// staged span of [`DOWN_SPAN`]² source samples per frame (the 9×9 windows of the tile's
/// pixels, two samples apart).
pub const DOWN_TILE: u32 = 16;
pub const DOWN_SPAN: u32 = 2 * DOWN_TILE + 7;

/// The source sample at (`x`, `y`) as [`decimate`] reads it: mirrored into the w×h frame.
/// A coordinate further out than one mirror reaches (staged for a tile's pixels past the
/// next scale's edge, which nothing reads) is clamped first, so that no read leaves the
/// frame.
///
/// # Safety
/// `c` must describe readable memory of w×h samples; w, h ≥ 4.
#[inline(always)]
pub unsafe fn mirrored_sample(
    c: &Channel,
    w: u32,
    h: u32,
    to_max: u32,
    divisor: f32,
    x: i64,
    y: i64,
) -> f32 {
    let (wi, hi) = (w as i64, h as i64);
    let y = mirror(y.clamp(-hi, 2 * hi - 1), hi) as u32;
    let x = mirror(x.clamp(-wi, 2 * wi - 1), wi) as u32;
    unsafe { read(row(c, y), x, c, to_max, divisor) }
}

/// [`decimate`] from staged samples: `sample(base + v·stride + u)` is the source sample
/// (2x − 4 + u, 2y − 4 + v). The same products, summed in the same order: the same value.
#[inline(always)]
pub fn decimate_staged(sample: impl Fn(usize) -> f32, base: usize, stride: usize) -> f32 {
    let mut sum = 0.0f64;
    let mut v = 0;
    while v < 9 {
        let kr = &LPF[4 - (v as i64 - 4).unsigned_abs() as usize];
        let mut u = 0;
        while u < 9 {
            let k = kr[4 - (u as i64 - 4).unsigned_abs() as usize];
            sum += (sample(base + v * stride + u) * k) as f64;
            u += 1;
        }
        v += 1;
    }
    sum as f32
}

/// One MS-SSIM scale of both frames to make: the source (w×h) and where the next goes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Decimation {
    /// The source scale (as [`FloatSsim::pair`]).
    pub pair: ChannelPair,
    pub divisor: f32,
    pub _pad: u32,
    /// f32 planes of [`down`]`(width)` × [`down`]`(height)`, packed rows.
    pub down_reference: u64,
    pub down_distorted: u64,
}

/// Writes the pixel (`x`, `y`) of both frames' next scale.
///
/// # Safety
/// As [`decimate`]; the `down_*` planes must hold the next scale.
#[inline(always)]
pub unsafe fn store_decimated(p: &Decimation, x: u32, y: u32) {
    let (w, h) = (p.pair.width, p.pair.height);
    let to = p.pair.reference.max;
    let at = (y * down(w) + x) as usize;
    unsafe {
        *(p.down_reference as *mut f32).add(at) =
            decimate(&p.pair.reference, w, h, to, p.divisor, x, y);
        *(p.down_distorted as *mut f32).add(at) =
            decimate(&p.pair.distorted, w, h, to, p.divisor, x, y);
    }
}

/// An f32 plane of `width` samples per row as a channel.
pub fn f32_channel(ptr: u64, width: u32) -> Channel {
    Channel {
        ptr,
        pitch: width * 4,
        step: 4,
        sample_bytes: F32_SAMPLES,
        shift: 0,
        max: 0,
        _pad: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The GPU's staged decimation gives `decimate`'s values bit for bit, at the frame's
    /// edges (mirrored) and inside, for tiles that run past the next scale's edge.
    #[test]
    fn staged_decimation_equals_decimate() {
        for (w, h) in [(37u32, 23u32), (64, 48), (11, 11)] {
            let mut seed = 0x2545_f491u32;
            let frame: std::vec::Vec<f32> = (0..w * h)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 17;
                    seed ^= seed << 5;
                    (seed % 25_500) as f32 / 100.0
                })
                .collect();
            let c = f32_channel(frame.as_ptr() as u64, w);
            let (dw, dh) = (down(w), down(h));
            for ty0 in (0..dh).step_by(DOWN_TILE as usize) {
                for tx0 in (0..dw).step_by(DOWN_TILE as usize) {
                    let (sx0, sy0) = (2 * tx0 as i64 - 4, 2 * ty0 as i64 - 4);
                    let span = DOWN_SPAN as usize;
                    let staged: std::vec::Vec<f32> = (0..span * span)
                        .map(|i| unsafe {
                            let (x, y) = (sx0 + (i % span) as i64, sy0 + (i / span) as i64);
                            mirrored_sample(&c, w, h, 0, 1.0, x, y)
                        })
                        .collect();
                    for ty in 0..DOWN_TILE {
                        for tx in 0..DOWN_TILE {
                            let (x, y) = (tx0 + tx, ty0 + ty);
                            if x >= dw || y >= dh {
                                continue;
                            }
                            let base = (2 * ty * DOWN_SPAN + 2 * tx) as usize;
                            let got = decimate_staged(|k| staged[k], base, span);
                            let want = unsafe { decimate(&c, w, h, 0, 1.0, x, y) };
                            assert_eq!(got.to_bits(), want.to_bits(), "{w}x{h} at {x},{y}");
                        }
                    }
                }
            }
        }
    }
}
