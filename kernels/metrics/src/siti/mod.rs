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
//! * both deviations as FFmpeg's: the mean in f64 over the f32 values, each deviation
//!   rounded to f32 and squared in f32, the squares summed in f64 ([`sq_dev`]), the root in
//!   f64 then rounded to f32 ([`stddev`]).
//!
//! One code path for the host and the GPU (raw pointers, `gpumetrics_device::math`): the
//! CPU backend calls the row functions on host pointers. The GPU kernels over them are not
//! written yet (no `kernels.rs`): the CUDA backend refuses `siti` (see docs/METRICS.md).

use crate::channel::{Channel, load};

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
    /// 2^(depth − 8): 1 for 8-bit, 4 for 10-bit.
    pub factor: u32,
}

/// A limited-range luma sample brought to full range, as FFmpeg's `siti` does: clamp
/// `y − 16f` to `[0, 219f]`, then `(256f − 1)·y / (219f)` truncated.
#[inline(always)]
pub fn to_full_range(y: u32, factor: u32) -> u32 {
    let shift = 16 * factor as i64;
    let limit_upper = 235 * factor as i64 - shift;
    let full_upper = 256 * factor as i64 - 1;
    let limited = (y as i64 - shift).clamp(0, limit_upper);
    (full_upper * limited / limit_upper) as u32
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

/// Sobel gradient magnitude at the inner pixel (x, y) (1 ≤ x < w − 1, 1 ≤ y < h − 1), given
/// the three rows around it: `sqrt(gx² + gy²)` of the integer sums, in f64 rounded to f32.
///
/// # Safety
/// The three rows must hold `x + 2` samples.
#[inline(always)]
pub unsafe fn sobel(above: *const u8, here: *const u8, below: *const u8, x: u32, l: &Luma) -> f32 {
    let s = |row, x| unsafe { sample(row, x, l) } as i64;
    let (a0, a1, a2) = (s(above, x - 1), s(above, x), s(above, x + 1));
    let (h0, h2) = (s(here, x - 1), s(here, x + 1));
    let (b0, b1, b2) = (s(below, x - 1), s(below, x), s(below, x + 1));
    // x: columns left minus right (1 2 1); y: row above minus row below (1 2 1).
    let gx = (a0 - a2) + 2 * (h0 - h2) + (b0 - b2);
    let gy = (a0 + 2 * a1 + a2) - (b0 + 2 * b1 + b2);
    gpumetrics_device::math::sqrt((gx * gx + gy * gy) as f64) as f32
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
        let m = if first {
            0.0
        } else {
            (cur as i32 - unsafe { *p } as i32) as f32
        };
        unsafe {
            *p = cur as u16;
            *out.add(x) = m;
        }
    }
}

/// One value's squared deviation from `mean`, as FFmpeg's `std_deviation`: the difference
/// rounded to f32, squared in f32.
#[inline(always)]
pub fn sq_dev(v: f32, mean: f64) -> f64 {
    let d = (v as f64 - mean) as f32;
    (d * d) as f64
}

/// The sum of `n` values (f64).
///
/// # Safety
/// `p` must hold `n` values.
#[inline]
pub unsafe fn sum(p: *const f32, n: usize) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        s += unsafe { *p.add(i) } as f64;
    }
    s
}

/// The sum of the squared deviations of `n` values from `mean` ([`sq_dev`]).
///
/// # Safety
/// `p` must hold `n` values.
#[inline]
pub unsafe fn sq_dev_sum(p: *const f32, n: usize, mean: f64) -> f64 {
    let mut s = 0.0;
    for i in 0..n {
        s += sq_dev(unsafe { *p.add(i) }, mean);
    }
    s
}

/// The population standard deviation from the sum of squared deviations of `n` values,
/// rounded to f32 as FFmpeg returns it.
#[inline(always)]
pub fn stddev(sq_dev_sum: f64, n: u64) -> f32 {
    gpumetrics_device::math::sqrt(sq_dev_sum / n as f64) as f32
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

    #[test]
    fn stddev_is_the_population_one() {
        let v = [2f32, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let mean = unsafe { sum(v.as_ptr(), v.len()) } / v.len() as f64;
        assert_eq!(mean, 5.0);
        let sq = unsafe { sq_dev_sum(v.as_ptr(), v.len(), mean) };
        assert_eq!(stddev(sq, v.len() as u64), 2.0);
    }
}
