//! SI and TI (ITU-T P.910 spatial and temporal information) on one frame's luma, computed
//! as FFmpeg 5.1's `siti` filter computes them:
//!
//! * luma samples are first brought to full range when the frame is limited range:
//!   `y' = (2^depth − 1) · clamp(y − 16·f, 0, 219·f) / (219·f)` in integers (truncating),
//!   `f = 2^(depth − 8)` ([`to_full_range`]);
//! * SI: the population standard deviation of the Sobel gradient magnitude
//!   `sqrt(gx² + gy²)` (f32), over the pixels whose 3×3 neighbourhood lies inside the frame
//!   (the one-pixel border is left out: a `(w − 2)·(h − 2)` map, [`sobel_row`]);
//! * TI: the same standard deviation of the per-pixel difference with the previous frame's
//!   full-range luma (`w·h` values, [`motion_row`]); 0 on the first frame;
//! * both deviations over the f32 values as population standard deviations, from one pass:
//!   the values' sum and the sum of their squares in f64 ([`sums`]), then
//!   `sqrt(squares/n − mean²)` in f64 rounded to f32 ([`stddev`]). FFmpeg takes two passes
//!   (the mean, then each deviation rounded to f32 and squared in f32); the one-pass value
//!   is the exact deviation to about 1e-12 relative, FFmpeg's to its f32 rounding of the
//!   deviations (about 1e-7 relative), far below the two decimals it prints.
//!
//! One code path for the host and the GPU (raw pointers, `gpumetrics_device::math`): the
//! CPU backend calls the row functions ([`sobel_row`], [`motion_row`]) on host pointers and
//! sums each map in row order; the GPU kernel (`kernels.rs`: `siti_sums`, over
//! [`thread_sums`] on tiles whose samples the block converts once into shared memory,
//! [`tile_sample`]) computes the same per-pixel values ([`magnitude`], [`motion`]), bit for
//! bit, and sums them per thread, per warp and per block ([`BLOCK`] threads, [`blocks`]
//! blocks) into f64 partials that the host adds in block order. Only the order of the f64
//! additions differs (about 1e-15 relative); the host test
//! `gpu_order_agrees_with_the_cpu_order` emulates the GPU's order.

mod kernels;

use crate::channel::{Channel, load};

/// Threads per block of the SI/TI kernels.
pub const BLOCK: u32 = 256;
/// Warps per block.
pub const WARPS: usize = BLOCK as usize / 32;
/// Most blocks of one launch: blocks stride over the tiles, so this bounds the partials
/// the host adds.
pub const MAX_BLOCKS: u32 = 1024;
/// Columns of a tile: one thread per column.
pub const TILE_W: u32 = 128;
/// Consecutive rows of one column that one thread visits in a tile.
pub const ROWS: u32 = 8;
/// Rows of a tile: `BLOCK / TILE_W` threads per column, [`ROWS`] rows each.
pub const TILE_H: u32 = BLOCK / TILE_W * ROWS;
/// Samples per row of a tile's sample buffer: the tile's columns and one on each side.
pub const TILE_PITCH: u32 = TILE_W + 2;
/// Loads per thread that fill a tile's buffer: `TILE_LEN / BLOCK` rounded up.
pub const TILE_LOADS: u32 = (TILE_LEN as u32).div_ceil(BLOCK);
/// Samples of a tile's buffer: `TILE_PITCH` × (`TILE_H` + 2), the tile and its one-sample
/// halo, full range ([`tile_sample`]).
pub const TILE_LEN: usize = (TILE_PITCH * (TILE_H + 2)) as usize;

/// Tiles of a `width`×`height` frame: (columns, rows) of [`TILE_W`]×[`TILE_H`] tiles,
/// numbered row by row.
pub const fn tiles(width: u32, height: u32) -> (u32, u32) {
    (width.div_ceil(TILE_W), height.div_ceil(TILE_H))
}

/// Blocks of the SI/TI launches for a `width`×`height` frame (one per tile, at most
/// [`MAX_BLOCKS`]: block b takes tiles b, b + blocks, ..); the kernel writes the four
/// partial sums of [`Sums`] per block.
pub const fn blocks(width: u32, height: u32) -> u32 {
    let (tx, ty) = tiles(width, height);
    let n = tx as u64 * ty as u64;
    if n == 0 {
        1
    } else if n > MAX_BLOCKS as u64 {
        MAX_BLOCKS
    } else {
        n as u32
    }
}

/// One frame's luma plane as SI/TI read it. Crosses the kernel boundary by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Luma {
    /// The luma channel (`max` = 2^depth − 1).
    pub chan: Channel,
    pub width: u32,
    pub height: u32,
    /// 1: samples are full range as they are; 0: limited range, converted by
    /// [`to_full_range`].
    pub full_range: u32,
    /// 2^(depth − 8): 1 for 8-bit, 4 for 10-bit (a power of two, at most 256).
    pub factor: u32,
}

/// ⌈2^32 / 219⌉: `(n · RECIP_219) >> 32` is `n / 219` for every n < 2^24 (the error
/// 41 = `RECIP_219 · 219 − 2^32` is below 2^(32 − 24); checked for every such n by a test).
const RECIP_219: u64 = 19_611_723;

/// A limited-range luma sample brought to full range, as FFmpeg's `siti` does: clamp
/// `y − 16f` to `[0, 219f]`, then `(256f − 1)·y / (219f)` truncated. `factor` = f must be
/// a power of two of at most 256 (depth 8 to 16).
///
/// No division: with f = 2^k, `n / (219·2^k)` is `(n >> k) / 219`; `n` = `(256f − 1)·y`
/// is below 2^32 and `n >> k` below `(256f − 1)·219` < 2^24, so the division by 219 is the
/// exact multiply-shift by `RECIP_219` (one `mul.hi.u32` on the GPU). A test compares it
/// with the division for every sample value of every depth.
#[inline(always)]
pub fn to_full_range(y: u32, factor: u32) -> u32 {
    let shift = 16 * factor;
    let limit_upper = 219 * factor;
    let full_upper = 256 * factor - 1;
    let limited = y.saturating_sub(shift);
    let limited = if limited > limit_upper {
        limit_upper
    } else {
        limited
    };
    let n = (full_upper * limited) >> factor.trailing_zeros();
    ((n as u64 * RECIP_219) >> 32) as u32
}

/// Full-range luma sample `x` of the row starting at `row`.
///
/// # Safety
/// The row must hold `x + 1` samples of `l.chan`.
#[inline(always)]
pub unsafe fn sample(row: *const u8, x: u32, l: &Luma) -> u32 {
    let y = unsafe { load(row, x, &l.chan) };
    if l.full_range != 0 {
        y
    } else {
        to_full_range(y, l.factor)
    }
}

/// Start of row `y` of `l`.
#[inline(always)]
pub fn row_ptr(l: &Luma, y: u32) -> *const u8 {
    (l.chan.ptr + y as u64 * l.chan.pitch as u64) as *const u8
}

/// Sobel gradient magnitude of a 3×3 neighbourhood of full-range samples: `a` the row
/// above (left, centre, right), `h` the pixel's row (its centre unused), `b` the row
/// below; `sqrt(gx² + gy²)` of the integer sums, in f64 rounded to f32 (FFmpeg's value).
///
/// Where both sums are below 2048 (every 8-bit pixel, most pixels of deeper video) the
/// square sum is below 2^23, exact in f32, and the f32 square root is taken instead: a
/// correctly rounded square root in f32 equals the f64 one rounded to f32 (53 ≥ 2·24 + 2
/// bits make the double rounding of a square root innocuous; `small_roots_in_f32_are_exact`
/// checks every value), at a fraction of the f64 root's instructions on the GPU.
#[inline(always)]
pub fn magnitude(a: (u32, u32, u32), h: (u32, u32, u32), b: (u32, u32, u32)) -> f32 {
    let (a0, a1, a2) = (a.0 as i32, a.1 as i32, a.2 as i32);
    let (h0, h2) = (h.0 as i32, h.2 as i32);
    let (b0, b1, b2) = (b.0 as i32, b.1 as i32, b.2 as i32);
    // x: columns left minus right (1 2 1); y: row above minus row below (1 2 1). Each is
    // at most 4·65535 in magnitude (i32).
    let gx = ((a0 - a2) + 2 * (h0 - h2) + (b0 - b2)).unsigned_abs();
    let gy = ((a0 + 2 * a1 + a2) - (b0 + 2 * b1 + b2)).unsigned_abs();
    if (gx | gy) < SMALL_GRADIENT {
        gpumetrics_device::math::sqrtf((gx * gx + gy * gy) as f32)
    } else {
        // The squares summed in u64 (exact).
        let q = gx as u64 * gx as u64 + gy as u64 * gy as u64;
        gpumetrics_device::math::sqrt(q as f64) as f32
    }
}

/// Gradient sums below this (in magnitude) have `gx² + gy² < 2^23`: [`magnitude`] takes
/// their root in f32.
const SMALL_GRADIENT: u32 = 1 << 11;

/// Sobel gradient magnitude at the inner pixel (x, y) (1 ≤ x < w − 1, 1 ≤ y < h − 1), given
/// the three rows around it ([`magnitude`]).
///
/// # Safety
/// The three rows must hold `x + 2` samples.
#[inline(always)]
pub unsafe fn sobel(above: *const u8, here: *const u8, below: *const u8, x: u32, l: &Luma) -> f32 {
    let s = |row, x| unsafe { sample(row, x, l) };
    let three = |row| (s(row, x - 1), s(row, x), s(row, x + 1));
    magnitude(three(above), three(here), three(below))
}

/// Row `y` (0 ≤ y < h − 2) of the `(w − 2)·(h − 2)` gradient map: frame row `y + 1`, its
/// `w − 2` inner pixels, written to `out[0..w − 2]`.
///
/// # Safety
/// `l` must describe readable memory, `out` must hold `w − 2` values, and `w, h ≥ 3`.
#[inline]
pub unsafe fn sobel_row(l: &Luma, y: u32, out: *mut f32) {
    let (above, here, below) = (row_ptr(l, y), row_ptr(l, y + 1), row_ptr(l, y + 2));
    for x in 1..l.width - 1 {
        unsafe { *out.add(x as usize - 1) = sobel(above, here, below, x, l) };
    }
}

/// Row `y` of the motion map: each full-range sample minus `prev[x]` (the previous
/// frame's, 0 when `first`), written to `out[x]`; `prev[x]` becomes this frame's sample.
///
/// # Safety
/// `l` must describe readable memory; `prev` and `out` must hold `w` values.
#[inline]
pub unsafe fn motion_row(l: &Luma, y: u32, first: bool, prev: *mut u16, out: *mut f32) {
    let row = row_ptr(l, y);
    for x in 0..l.width as usize {
        let cur = unsafe { sample(row, x as u32, l) };
        let p = unsafe { prev.add(x) };
        unsafe {
            *out.add(x) = motion(cur, *p, first);
            *p = cur as u16;
        }
    }
}

/// One pixel's motion: its full-range sample `cur` minus the previous frame's `prev`, 0
/// on the first frame.
#[inline(always)]
pub fn motion(cur: u32, prev: u16, first: bool) -> f32 {
    if first {
        0.0
    } else {
        (cur as i32 - prev as i32) as f32
    }
}

/// The origin (first column, first row) of tile `tile` of a `width`-column frame.
#[inline(always)]
pub fn tile_origin(tile: u32, width: u32) -> (u32, u32) {
    let tx = width.div_ceil(TILE_W);
    ((tile % tx) * TILE_W, (tile / tx) * TILE_H)
}

/// Entry `i` of the sample buffer of the tile at `origin` ([`TILE_LEN`] entries, row
/// pitch [`TILE_PITCH`]): the full-range sample at (`x0 − 1 + i % TILE_PITCH`,
/// `y0 − 1 + i / TILE_PITCH`), the coordinates clamped to the frame. Entries outside the
/// frame thus repeat an edge sample, so that every load is valid without a branch; no
/// pixel uses them (only inner pixels read their neighbours, all inside the frame).
///
/// # Safety
/// `l` must describe readable memory of at least one sample.
#[inline(always)]
pub unsafe fn tile_sample(l: &Luma, origin: (u32, u32), i: u32) -> u32 {
    match (l.chan.sample_bytes == 2, l.full_range != 0) {
        (false, false) => unsafe { tile_sample_as::<false, false>(l, origin, i) },
        (false, true) => unsafe { tile_sample_as::<false, true>(l, origin, i) },
        (true, false) => unsafe { tile_sample_as::<true, false>(l, origin, i) },
        (true, true) => unsafe { tile_sample_as::<true, true>(l, origin, i) },
    }
}

/// [`tile_sample`] for a channel of 2-byte samples (`WIDE`) or 1-byte ones, full range
/// (`FULL`) or limited, read by [`sample_as`].
///
/// # Safety
/// As [`tile_sample`]; `WIDE` must be `l.chan.sample_bytes == 2`, `FULL`
/// `l.full_range != 0`.
#[inline(always)]
pub unsafe fn tile_sample_as<const WIDE: bool, const FULL: bool>(
    l: &Luma,
    origin: (u32, u32),
    i: u32,
) -> u32 {
    let x = (origin.0 + i % TILE_PITCH)
        .saturating_sub(1)
        .min(l.width - 1);
    let y = (origin.1 + i / TILE_PITCH)
        .saturating_sub(1)
        .min(l.height - 1);
    unsafe { sample_as::<WIDE, FULL>(row_ptr(l, y), x, l) }
}

/// [`sample`] with the sample size (`WIDE`: 2 bytes) and the range (`FULL`) known at
/// compile time: the same value, in straight-line code that the tile loads are unrolled
/// over.
///
/// # Safety
/// As [`sample`]; `WIDE` must be `l.chan.sample_bytes == 2`, `FULL` `l.full_range != 0`;
/// 1-byte samples must have `l.factor` 1.
#[inline(always)]
pub unsafe fn sample_as<const WIDE: bool, const FULL: bool>(
    row: *const u8,
    x: u32,
    l: &Luma,
) -> u32 {
    let p = unsafe { row.add((x * l.chan.step) as usize) };
    let raw = if WIDE {
        // Unaligned-safe little-endian read, as `channel::load`.
        unsafe { (*p as u32) | ((*p.add(1) as u32) << 8) }
    } else {
        unsafe { *p as u32 }
    };
    let y = raw >> l.chan.shift;
    // 1-byte samples are 8-bit (factor 1): a constant, so the conversion folds to a few
    // instructions.
    let factor = if WIDE { l.factor } else { 1 };
    if FULL { y } else { to_full_range(y, factor) }
}

/// Running sums of one frame's values: the gradients, their squares, the motions, their
/// squares (f64).
pub type Sums = [f64; 4];

/// Adds value `v` and its square to `acc[i]`, `acc[i + 1]`.
#[inline(always)]
fn add(acc: &mut Sums, i: usize, v: f32) {
    let v = v as f64;
    acc[i] += v;
    acc[i + 1] += v * v;
}

/// One GPU thread's running sums ([`thread_sums`]): the gradients and their squares in
/// f64, the motions (integers) and their squares in integers. Integer sums are exact, and
/// so are the f64 sums of the same integers that the CPU backend makes while they stay
/// below 2^53 (a 16-bit 8K frame of full-scale motion would pass it): both backends give
/// the same TI, without a conversion and four f64 operations per pixel on the GPU.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ThreadSums {
    pub gradient: f64,
    pub gradient_squares: f64,
    pub motion: i64,
    pub motion_squares: u64,
}

impl ThreadSums {
    /// The four sums as [`Sums`] (the integer ones in f64: exact below 2^53, far above what
    /// one thread's pixels, 8 per tile of a few tiles, add up to).
    #[inline(always)]
    pub fn to_sums(self) -> Sums {
        [
            self.gradient,
            self.gradient_squares,
            self.motion as f64,
            self.motion_squares as f64,
        ]
    }
}

/// One GPU thread's share of the tile at `origin`, added to its running sums `acc`
/// ([`ThreadSums`]): thread `thread` takes column `x0 + thread % TILE_W` and, from row `y0 +
/// (thread / TILE_W)·ROWS`, [`ROWS`] rows (those inside the frame), in row order. Per pixel
/// it adds the gradient (inner pixels) and the motion against `prev`, then stores the
/// pixel's sample in `prev` (the previous frame for the next one). `tile(i)` is entry i of
/// the tile's sample buffer ([`tile_sample`]: shared memory on the GPU).
///
/// # Safety
/// `prev` must hold `l.width · l.height` values (row pitch `l.width`), and no other thread
/// may touch this thread's pixels of `prev` during the call.
#[inline(always)]
pub unsafe fn thread_sums(
    l: &Luma,
    tile: impl Fn(u32) -> u32,
    origin: (u32, u32),
    prev: *mut u16,
    first: bool,
    thread: u32,
    mut acc: ThreadSums,
) -> ThreadSums {
    let (w, h) = (l.width, l.height);
    let (tx, ty) = (thread % TILE_W, thread / TILE_W);
    let x = origin.0 + tx;
    if x >= w {
        return acc;
    }
    let inner_col = x >= 1 && x + 1 < w;
    // Buffer row j holds frame row y0 − 1 + j; the thread's column is buffer column tx + 1.
    let three = |j: u32| {
        let i = j * TILE_PITCH + tx;
        (tile(i), tile(i + 1), tile(i + 2))
    };
    let j0 = ty * ROWS;
    let (mut above, mut here) = (three(j0), three(j0 + 1));
    let mut r = 0;
    while r < ROWS {
        let y = origin.1 + j0 + r;
        if y >= h {
            break;
        }
        let below = three(j0 + r + 2);
        let cur = here.1;
        let p = unsafe { prev.add(y as usize * w as usize + x as usize) };
        if !first {
            // [`motion`]'s value, as an integer.
            let d = cur as i32 - unsafe { *p } as i32;
            let m = d.unsigned_abs();
            acc.motion += d as i64;
            acc.motion_squares += (m * m) as u64;
        }
        if inner_col && y >= 1 && y + 1 < h {
            let g = magnitude(above, here, below) as f64;
            acc.gradient += g;
            acc.gradient_squares += g * g;
        }
        unsafe { *p = cur as u16 };
        above = here;
        here = below;
        r += 1;
    }
    acc
}

/// Values of the gradient map and of the motion map of a `w`×`h` frame.
#[inline(always)]
pub fn counts(w: u32, h: u32) -> (u64, u64) {
    ((w as u64 - 2) * (h as u64 - 2), w as u64 * h as u64)
}

/// The sum of `n` values and the sum of their squares (f64, in order).
///
/// # Safety
/// `p` must hold `n` values.
#[inline]
pub unsafe fn sums(p: *const f32, n: usize) -> (f64, f64) {
    let mut acc = [0.0; 4];
    for i in 0..n {
        add(&mut acc, 0, unsafe { *p.add(i) });
    }
    (acc[0], acc[1])
}

/// The population standard deviation of `n` values from their sum and the sum of their
/// squares, rounded to f32 as FFmpeg returns it (a variance below 0 by rounding is 0).
#[inline(always)]
pub fn stddev(sum: f64, squares: f64, n: u64) -> f32 {
    let n = n as f64;
    let mean = sum / n;
    let var = squares / n - mean * mean;
    gpumetrics_device::math::sqrt(if var > 0.0 { var } else { 0.0 }) as f32
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;
    use std::vec::Vec;

    fn luma(data: &[u8], w: u32, h: u32, full: bool) -> Luma {
        Luma {
            chan: Channel {
                ptr: data.as_ptr() as u64,
                pitch: w,
                step: 1,
                sample_bytes: 1,
                shift: 0,
                max: 255,
                _pad: 0,
            },
            width: w,
            height: h,
            full_range: full as u32,
            factor: 1,
        }
    }

    #[test]
    fn limited_range_is_stretched_and_clamped_as_ffmpeg() {
        assert_eq!(to_full_range(16, 1), 0);
        assert_eq!(to_full_range(235, 1), 255);
        assert_eq!(to_full_range(0, 1), 0);
        assert_eq!(to_full_range(255, 1), 255);
        assert_eq!(to_full_range(128, 1), 255 * 112 / 219); // 130, truncated
        assert_eq!(to_full_range(64, 4), 0);
        assert_eq!(to_full_range(940, 4), 1023);
        assert_eq!(to_full_range(512, 4), 1023 * 448 / 876);
        assert_eq!(to_full_range(65535, 256), 65535);
    }

    /// The multiply-shift of [`to_full_range`] against FFmpeg's division, for every sample
    /// value of a 16-bit container at every depth from 8 to 16.
    #[test]
    fn full_range_without_division_is_exact() {
        for depth in 8..=16u32 {
            let factor = 1u32 << (depth - 8);
            let shift = 16 * factor as i64;
            let limit_upper = 235 * factor as i64 - shift;
            let full_upper = 256 * factor as i64 - 1;
            for y in 0..=u16::MAX as u32 {
                let limited = (y as i64 - shift).clamp(0, limit_upper);
                let want = (full_upper * limited / limit_upper) as u32;
                assert_eq!(to_full_range(y, factor), want, "depth {depth}, sample {y}");
            }
        }
        for n in 0..1u64 << 24 {
            assert_eq!((n * RECIP_219) >> 32, n / 219);
        }
    }

    #[test]
    fn sample_as_reads_as_sample() {
        let d: Vec<u8> = (0..=255u8).chain((0..=255u8).rev()).collect();
        for (step, bytes, shift) in [
            (1u32, 1u32, 0u32),
            (2, 1, 0),
            (2, 2, 0),
            (2, 2, 6),
            (4, 2, 0),
        ] {
            for full in [0, 1] {
                // 1-byte samples are 8-bit: factor 1 (the engine checks it).
                for factor in [1u32, 4, 256].into_iter().filter(|&f| bytes == 2 || f == 1) {
                    let l = Luma {
                        chan: Channel {
                            ptr: d.as_ptr() as u64,
                            pitch: d.len() as u32,
                            step,
                            sample_bytes: bytes,
                            shift,
                            max: 65535,
                            _pad: 0,
                        },
                        width: (d.len() as u32 - bytes) / step + 1,
                        height: 1,
                        full_range: full,
                        factor,
                    };
                    for x in 0..l.width {
                        let want = unsafe { sample(d.as_ptr(), x, &l) };
                        let p = d.as_ptr();
                        let got = match (bytes == 2, full != 0) {
                            (false, false) => unsafe { sample_as::<false, false>(p, x, &l) },
                            (false, true) => unsafe { sample_as::<false, true>(p, x, &l) },
                            (true, false) => unsafe { sample_as::<true, false>(p, x, &l) },
                            (true, true) => unsafe { sample_as::<true, true>(p, x, &l) },
                        };
                        assert_eq!(got, want, "x {x} step {step} bytes {bytes} full {full}");
                    }
                }
            }
        }
    }

    #[test]
    fn blocks_cover_the_tiles() {
        assert_eq!(TILE_H, 16);
        assert_eq!(tiles(1920, 1080), (15, 68));
        assert_eq!(blocks(1920, 1080), 1020);
        assert_eq!(blocks(3840, 2160), MAX_BLOCKS);
        assert_eq!(blocks(3, 3), 1);
        assert_eq!(tile_origin(16, 1920), (128, 16));
    }

    #[test]
    fn sobel_of_a_vertical_edge() {
        // 4x3, columns 0 0 100 100: the inner pixels (1,1) and (2,1) see the edge.
        let d: Vec<u8> = [0u8, 0, 100, 100].repeat(3);
        let l = luma(&d, 4, 3, true);
        let mut out = [0f32; 2];
        unsafe { sobel_row(&l, 0, out.as_mut_ptr()) };
        // gx = (0 - 100) * (1 + 2 + 1) at x = 1, the same at x = 2; gy = 0.
        assert_eq!(out, [400.0, 400.0]);
    }

    #[test]
    fn sobel_of_a_horizontal_edge_and_range_conversion() {
        // 3x3, rows 16 16 235 (limited): full range 0 0 255; gy = -(255 * 4).
        let d: Vec<u8> = [[16u8; 3], [16; 3], [235; 3]].concat();
        let l = luma(&d, 3, 3, false);
        let mut out = [0f32; 1];
        unsafe { sobel_row(&l, 0, out.as_mut_ptr()) };
        assert_eq!(out, [1020.0]);
    }

    #[test]
    fn motion_is_zero_first_then_the_difference() {
        let a = [10u8, 20, 30];
        let b = [12u8, 15, 30];
        let mut prev = vec![0u16; 3];
        let mut out = [1f32; 3];
        unsafe {
            motion_row(
                &luma(&a, 3, 1, true),
                0,
                true,
                prev.as_mut_ptr(),
                out.as_mut_ptr(),
            )
        };
        assert_eq!(out, [0.0; 3]);
        assert_eq!(prev, [10, 20, 30]);
        unsafe {
            motion_row(
                &luma(&b, 3, 1, true),
                0,
                false,
                prev.as_mut_ptr(),
                out.as_mut_ptr(),
            )
        };
        assert_eq!(out, [2.0, -5.0, 0.0]);
    }

    /// [`magnitude`]'s f32 root of a square sum below 2^23 is the f64 root rounded to f32,
    /// for every such sum (and on to 2^24).
    #[test]
    fn small_roots_in_f32_are_exact() {
        for q in 0u32..1 << 24 {
            let f32_root = gpumetrics_device::math::sqrtf(q as f32);
            let f64_root = gpumetrics_device::math::sqrt(q as f64) as f32;
            assert_eq!(f32_root.to_bits(), f64_root.to_bits(), "sqrt({q})");
        }
    }

    /// Gradients on both sides of [`SMALL_GRADIENT`] (and the largest 16-bit one) equal the
    /// f64 root of the exact square sum.
    #[test]
    fn magnitude_takes_the_f64_value_on_both_paths() {
        let want = |gx: u64, gy: u64| ((gx * gx + gy * gy) as f64).sqrt() as f32;
        // A row above of (v, 0, 0) and a row below of (0, 0, 0): gx = v, gy = v.
        for v in [0u32, 1, 2047, 2048, 2049, 65535] {
            let m = magnitude((v, 0, 0), (0, 0, 0), (0, 0, 0));
            assert_eq!(m, want(v as u64, v as u64), "v {v}");
        }
        // gx = 4·65535 (a full-scale vertical edge), gy = 0.
        let m = magnitude((65535, 0, 0), (65535, 0, 0), (65535, 0, 0));
        assert_eq!(m, want(4 * 65535, 0));
        // gx = 2047 exactly, gy = 2048: one on each side of the bound.
        let m = magnitude((2047, 1024, 0), (0, 0, 0), (0, 0, 0));
        assert_eq!(m, want(2047, 2047 + 2048));
    }

    /// The GPU threads' integer motion sums ([`thread_sums`] over every thread of the one
    /// tile of a 16-bit frame with full-scale motion, ±65535 at every pixel) equal the f64
    /// sums of the CPU's motion map ([`motion_row`], [`sums`]).
    #[test]
    fn integer_motion_sums_equal_the_f64_sums() {
        let (w, h) = (5u32, 3u32);
        let cur: Vec<u8> = (0..w * h)
            .flat_map(|i| if i % 2 == 0 { [0u8, 0] } else { [255, 255] })
            .collect();
        let l = Luma {
            chan: Channel {
                ptr: cur.as_ptr() as u64,
                pitch: 2 * w,
                step: 2,
                sample_bytes: 2,
                shift: 0,
                max: 65535,
                _pad: 0,
            },
            width: w,
            height: h,
            full_range: 1,
            factor: 256,
        };
        let opposite: Vec<u16> = (0..w * h)
            .map(|i| if i % 2 == 0 { 65535 } else { 0 })
            .collect();
        let origin = tile_origin(0, w);
        let buf: Vec<u32> = (0..TILE_LEN as u32)
            .map(|i| unsafe { tile_sample(&l, origin, i) })
            .collect();
        let mut prev = opposite.clone();
        let (mut motion, mut squares) = (0i64, 0u64);
        for t in 0..BLOCK {
            let read = |k: u32| buf[k as usize];
            let s = unsafe {
                thread_sums(
                    &l,
                    read,
                    origin,
                    prev.as_mut_ptr(),
                    false,
                    t,
                    ThreadSums::default(),
                )
            };
            motion += s.motion;
            squares += s.motion_squares;
        }
        let mut prev = opposite;
        let mut map = vec![0f32; (w * h) as usize];
        for y in 0..h {
            let at = (y * w) as usize;
            unsafe {
                motion_row(
                    &l,
                    y,
                    false,
                    prev[at..].as_mut_ptr(),
                    map[at..].as_mut_ptr(),
                )
            };
        }
        let (sum, sum_sq) = unsafe { sums(map.as_ptr(), map.len()) };
        assert_eq!(squares, 15 * 65535 * 65535);
        assert_eq!((motion as f64, squares as f64), (sum, sum_sq));
    }

    #[test]
    fn stddev_is_the_population_one() {
        let v = [2f32, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let (s, sq) = unsafe { sums(v.as_ptr(), v.len()) };
        assert_eq!((s, sq), (40.0, 232.0));
        assert_eq!(stddev(s, sq, v.len() as u64), 2.0);
        // Equal values: 0, also where rounding would make the variance negative.
        let v = [0.1f32; 7];
        let (s, sq) = unsafe { sums(v.as_ptr(), v.len()) };
        assert_eq!(stddev(s, sq, 7), 0.0);
        assert_eq!(stddev(30.0, 100.0 * 3.0 - 1e-9, 3), 0.0);
    }

    /// The GPU kernel's order of additions, emulated: per thread ([`thread_sums`] over the
    /// block's tiles b, b + blocks, .., each read through [`tile_sample`]), the
    /// shuffle-down tree of each warp, the warps in order, the blocks' partials added by the
    /// host in block order.
    fn gpu_order(l: &Luma, prev: &mut [u16], first: bool) -> (f32, f32) {
        let blocks = blocks(l.width, l.height);
        let (tx, ty) = tiles(l.width, l.height);
        let warp_down = |v: &mut [f64]| {
            for delta in [16, 8, 4, 2, 1] {
                let old = v.to_vec();
                for (i, x) in v.iter_mut().enumerate() {
                    *x += if i + delta < 32 {
                        old[i + delta]
                    } else {
                        old[i]
                    };
                }
            }
            v[0]
        };
        let partials: Vec<Sums> = (0..blocks)
            .map(|b| {
                let mut t = vec![ThreadSums::default(); BLOCK as usize];
                let mut tile = b;
                while tile < tx * ty {
                    let origin = tile_origin(tile, l.width);
                    let buf: Vec<u32> = (0..TILE_LEN as u32)
                        .map(|i| unsafe { tile_sample(l, origin, i) })
                        .collect();
                    for (i, acc) in t.iter_mut().enumerate() {
                        let read = |k: u32| buf[k as usize];
                        let p = prev.as_mut_ptr();
                        *acc = unsafe { thread_sums(l, read, origin, p, first, i as u32, *acc) };
                    }
                    tile += blocks;
                }
                let t: Vec<Sums> = t.iter().map(|s| s.to_sums()).collect();
                let mut s = [0.0f64; 4];
                for w in t.chunks(32) {
                    for (k, s) in s.iter_mut().enumerate() {
                        *s += warp_down(&mut w.iter().map(|p| p[k]).collect::<Vec<_>>());
                    }
                }
                s
            })
            .collect();
        let mut total = [0.0f64; 4];
        for p in &partials {
            for (t, v) in total.iter_mut().zip(p) {
                *t += v;
            }
        }
        let (ng, nm) = counts(l.width, l.height);
        (
            stddev(total[0], total[1], ng),
            stddev(total[2], total[3], nm),
        )
    }

    /// The CPU backend's order (`engine/src/metric/siti/cpu.rs`): the row functions, each
    /// map summed in bands of 32 rows, the bands in order.
    fn cpu_order(l: &Luma, prev: &mut [u16], first: bool) -> (f32, f32) {
        let (w, h) = (l.width as usize, l.height as usize);
        let mut grad = vec![0f32; (w - 2) * (h - 2)];
        let mut mot = vec![0f32; w * h];
        for y in 0..h - 2 {
            unsafe { sobel_row(l, y as u32, grad[y * (w - 2)..].as_mut_ptr()) };
        }
        for y in 0..h {
            unsafe {
                motion_row(
                    l,
                    y as u32,
                    first,
                    prev[y * w..].as_mut_ptr(),
                    mot[y * w..].as_mut_ptr(),
                )
            };
        }
        let dev = |map: &[f32], row: usize| {
            let (mut s, mut sq) = (0.0, 0.0);
            for c in map.chunks(row * 32) {
                let (a, b) = unsafe { sums(c.as_ptr(), c.len()) };
                s += a;
                sq += b;
            }
            stddev(s, sq, map.len() as u64)
        };
        (dev(&grad, w - 2), dev(&mot, w))
    }

    #[test]
    fn gpu_order_agrees_with_the_cpu_order() {
        let mut seed = 0x5eedu64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut worst = 0f64;
        // (w, h, 16-bit samples, full range, smooth)
        for &(w, h, wide, full, smooth) in &[
            (3u32, 3u32, false, true, false),
            (4, 3, false, false, false),
            (5, 7, true, false, false),
            (97, 61, false, false, true),
            (333, 211, true, true, false),
            (257, 1030, true, false, true),
            (1920, 1080, false, true, true),
            // 21 × 50 tiles: more than MAX_BLOCKS, blocks stride.
            (2600, 800, true, false, true),
        ] {
            let (bytes, max) = if wide { (2u32, 1023u32) } else { (1, 255) };
            let pitch = w * bytes + 3;
            let frames: Vec<Vec<u8>> = (0..3)
                .map(|k| {
                    let mut d = vec![0u8; (pitch * h) as usize];
                    for y in 0..h {
                        for x in 0..w {
                            let v = if smooth {
                                ((x * 3 + y * 2 + k * 5) as u64 + rnd() % 4) % (max as u64 + 1)
                            } else {
                                rnd() % (max as u64 + 1)
                            } as u32;
                            let at = (y * pitch + x * bytes) as usize;
                            d[at] = v as u8;
                            if wide {
                                d[at + 1] = (v >> 8) as u8;
                            }
                        }
                    }
                    d
                })
                .collect();
            let mut prev_gpu = vec![0u16; (w * h) as usize];
            let mut prev_cpu = prev_gpu.clone();
            for (k, f) in frames.iter().enumerate() {
                let l = Luma {
                    chan: Channel {
                        ptr: f.as_ptr() as u64,
                        pitch,
                        step: bytes,
                        sample_bytes: bytes,
                        shift: 0,
                        max,
                        _pad: 0,
                    },
                    width: w,
                    height: h,
                    full_range: full as u32,
                    factor: if wide { 4 } else { 1 },
                };
                let g = gpu_order(&l, &mut prev_gpu, k == 0);
                let c = cpu_order(&l, &mut prev_cpu, k == 0);
                assert_eq!(prev_gpu, prev_cpu);
                for (a, b) in [(g.0, c.0), (g.1, c.1)] {
                    let e = ((a - b) as f64).abs() / (b as f64).abs().max(1e-30);
                    assert!(e <= 1e-6, "{w}x{h} frame {k}: {g:?} vs {c:?}");
                    worst = worst.max(e);
                }
                if k == 0 {
                    assert_eq!((g.1, c.1), (0.0, 0.0));
                }
            }
        }
        std::println!("largest relative difference GPU vs CPU order: {worst:e}");
    }
}
