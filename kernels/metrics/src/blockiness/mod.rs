//! Blockiness: FFmpeg 5.1's `blockdetect` (Muijs and Kirenko 2005) on one frame's luma, as
//! its code computes it (`libavfilter/vf_blockdetect.c`):
//!
//! * per pixel, a normalised gradient across columns: `|s(x) − s(x+1)|` over the sum of
//!   the six neighbouring absolute differences of the row (at least 1), in f32
//!   ([`col_grad`]), for 3 ≤ x < w − 4 and rows 1 ≤ y < h; the same down the columns
//!   ([`row_grad`]) for 3 ≤ y < h − 4 and columns 1 ≤ x < w;
//! * a column profile, each column's gradients added in f32 row by row, and a row profile,
//!   each row's added in f32 column by column. FFmpeg never clears them between frames:
//!   the profiles add up over the whole sequence (a flat frame repeats the previous value).
//!   The order of these f32 additions is kept on both backends, so the profiles are the
//!   same bit for bit however long the sequence;
//! * per period p of `period_min..=period_max` and direction, the mean over the grid
//!   positions (`i % p == p − 1`) of the largest of three neighbouring profile values,
//!   over the mean of the other positions' values, in f32 ([`period_ratio`]);
//! * the largest ratio, horizontal periods then vertical ones, with FFmpeg's `a > b ? a :
//!   b` ([`keep_larger`]): a 0/0 ratio (a flat profile) is NaN and replaces the running
//!   value, a later number replaces a NaN. Frames too small for any period give 0.
//!
//! One code path for the host and the GPU: the CPU backend runs [`add_col_row`] and
//! [`row_sum`] (and [`ratio`] for the result), the kernels (`kernels.rs`) the same
//! per-pixel functions and the same sequential additions, one thread per column or row.

mod kernels;

use crate::luma8::{self, Luma8};

/// Threads per block of the profile kernel.
pub const BLOCK: u32 = 256;
/// Columns (or rows) per block of the profile kernel.
pub const LANES: u32 = 32;
/// Rows (or columns) per shared-memory tile of the profile kernel.
pub const TILE: u32 = 64;
/// Tile row stride in the row part (one more than [`TILE`]: no bank conflicts).
pub const STRIDE: u32 = TILE + 1;
/// Threads of the period kernel: two directions of at most 63 periods.
pub const PERIOD_THREADS: u32 = 128;
/// Shared values of the profile kernel's tile (`LANES · STRIDE`, the larger of its two
/// shapes) and of the period kernel (`PERIOD_THREADS`).
pub const TILE_LEN: usize = 32 * 65;
pub const PERIOD_SLOTS: usize = 128;
const _: () = assert!(TILE_LEN == (LANES * STRIDE) as usize && TILE_LEN >= (TILE * LANES) as usize);
const _: () = assert!(PERIOD_SLOTS == PERIOD_THREADS as usize);

/// One frame and the options, as the kernels take them. Crosses the kernel boundary by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Params {
    pub luma: Luma8,
    pub period_min: u32,
    pub period_max: u32,
    /// 1: the first frame of a sequence (the profiles start from 0).
    pub first: u32,
    pub _pad: u32,
}

/// The columns of the column profile (3..w − 4) and the rows of the row profile
/// (3..h − 4), as (first, end).
#[inline(always)]
pub fn span(n: u32) -> (u32, u32) {
    (3, if n > 4 { n - 4 } else { 0 })
}

/// Profile columns (or rows) of a side of `n`.
#[inline(always)]
pub fn span_len(n: u32) -> u32 {
    let (a, b) = span(n);
    b.saturating_sub(a)
}

/// CUDA blocks of the column part and of the row part of the profile kernel.
pub fn profile_blocks(w: u32, h: u32) -> (u32, u32) {
    (span_len(w).div_ceil(LANES), span_len(h).div_ceil(LANES))
}

/// `|a − b|` of two samples.
#[inline(always)]
fn diff(a: u32, b: u32) -> u32 {
    a.abs_diff(b)
}

/// The normalised gradient between columns x and x + 1 of row y (3 ≤ x < w − 4).
///
/// # Safety
/// (x − 3 ..= x + 4, y) must lie in the plane.
#[inline(always)]
pub unsafe fn col_grad(l: &Luma8, x: u32, y: u32) -> f32 {
    let s = |x: u32| unsafe { luma8::sample(l, x, y) };
    let v: [u32; 8] = [
        s(x - 3),
        s(x - 2),
        s(x - 1),
        s(x),
        s(x + 1),
        s(x + 2),
        s(x + 3),
        s(x + 4),
    ];
    normalised(&v)
}

/// The normalised gradient between rows y and y + 1 of column x (3 ≤ y < h − 4).
///
/// # Safety
/// (x, y − 3 ..= y + 4) must lie in the plane.
#[inline(always)]
pub unsafe fn row_grad(l: &Luma8, x: u32, y: u32) -> f32 {
    let s = |y: u32| unsafe { luma8::sample(l, x, y) };
    let v: [u32; 8] = [
        s(y - 3),
        s(y - 2),
        s(y - 1),
        s(y),
        s(y + 1),
        s(y + 2),
        s(y + 3),
        s(y + 4),
    ];
    normalised(&v)
}

/// `|v3 − v4|` over the sum of the other six neighbouring differences (at least 1), in
/// f32 (the integer sum is exact in f32).
#[inline(always)]
fn normalised(v: &[u32; 8]) -> f32 {
    let g = diff(v[3], v[4]) as f32;
    let others = diff(v[4], v[5])
        + diff(v[5], v[6])
        + diff(v[6], v[7])
        + diff(v[3], v[2])
        + diff(v[2], v[1])
        + diff(v[1], v[0]);
    let t = others as f32;
    g / if t > 1.0 { t } else { 1.0 }
}

/// Adds row y's column gradients of columns `from..to` to the column profile, whose
/// column `from` is `cols[0]` (columns outside [`span`] untouched), one f32 addition per
/// column, as FFmpeg's row loop.
///
/// # Safety
/// `cols` holds `to − from` values; row y is readable.
#[inline]
pub unsafe fn add_col_row(l: &Luma8, y: u32, from: u32, to: u32, cols: *mut f32) {
    let (a, b) = span(l.width);
    for x in from.max(a)..to.min(b) {
        unsafe { *cols.add((x - from) as usize) += col_grad(l, x, y) };
    }
}

/// Row y's row-profile value: `start` plus its row gradients, added in f32 column by column.
///
/// # Safety
/// 3 ≤ y < h − 4; the rows are readable.
#[inline]
pub unsafe fn row_sum(l: &Luma8, y: u32, start: f32) -> f32 {
    let mut acc = start;
    for x in 1..l.width {
        acc += unsafe { row_grad(l, x, y) };
    }
    acc
}

/// The ratio of period `period` over the profile `prof` (positions [`span`] of `n`):
/// `None` when the period has no grid position or no other position there (FFmpeg skips
/// it), else the f32 ratio of the means (NaN for 0/0).
///
/// # Safety
/// `prof` holds `n` values.
#[inline(always)]
pub unsafe fn period_ratio(prof: *const f32, n: u32, period: u32) -> Option<f32> {
    let (a, b) = span(n);
    let at = |i: u32| unsafe { *prof.add(i as usize) };
    let (mut block, mut other) = (0.0f32, 0.0f32);
    let (mut nb, mut no) = (0u32, 0u32);
    for i in a..b {
        if i % period == period - 1 {
            block += max(max(at(i), at(i + 1)), at(i - 1));
            nb += 1;
        } else {
            other += at(i);
            no += 1;
        }
    }
    if nb == 0 || no == 0 {
        return None;
    }
    Some((block / nb as f32) / (other / no as f32))
}

/// FFmpeg's `FFMAX(a, b)`: `a > b ? a : b` (so a NaN `b` wins, and so does any `b` over a
/// NaN `a`).
#[inline(always)]
pub fn max(a: f32, b: f32) -> f32 {
    if a > b { a } else { b }
}

/// The running result after one more period's ratio (FFmpeg's `FFMAX(ret, temp)`).
#[inline(always)]
pub fn keep_larger(ret: f32, ratio: f32) -> f32 {
    max(ret, ratio)
}

/// The periods searched: `period_min..=period_max` (none when min > max).
#[inline(always)]
pub fn periods(p: &Params) -> u32 {
    if p.period_max >= p.period_min {
        p.period_max - p.period_min + 1
    } else {
        0
    }
}

/// The frame's blockiness from the two profiles: every horizontal period in order, then
/// every vertical one, kept with [`keep_larger`] from 0.
///
/// # Safety
/// `cols` holds `w`, `rows` `h` values.
pub unsafe fn ratio(p: &Params, cols: *const f32, rows: *const f32) -> f32 {
    let mut ret = 0.0f32;
    for (prof, n) in [(cols, p.luma.width), (rows, p.luma.height)] {
        for k in 0..periods(p) {
            if let Some(r) = unsafe { period_ratio(prof, n, p.period_min + k) } {
                ret = keep_larger(ret, r);
            }
        }
    }
    ret
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::Channel;
    use std::vec;
    use std::vec::Vec;

    fn luma(d: &[u8], w: u32, h: u32) -> Luma8 {
        Luma8 {
            chan: Channel {
                ptr: d.as_ptr() as u64,
                pitch: w,
                step: 1,
                sample_bytes: 1,
                shift: 0,
                max: 255,
                _pad: 0,
            },
            width: w,
            height: h,
            shift: 0,
            full_range: 0,
        }
    }

    fn params(w: u32, h: u32) -> Params {
        Params {
            luma: luma(&[], w, h),
            period_min: 3,
            period_max: 24,
            first: 1,
            _pad: 0,
        }
    }

    #[test]
    fn the_gradient_is_normalised_by_its_neighbours() {
        let row = [10u8, 10, 10, 10, 50, 50, 50, 50];
        let l = luma(&row, 8, 1);
        assert_eq!(unsafe { col_grad(&l, 3, 0) }, 40.0); // no other differences: / 1
        let row = [0u8, 2, 4, 6, 26, 28, 30, 32];
        let l = luma(&row, 8, 1);
        assert_eq!(unsafe { col_grad(&l, 3, 0) }, 20.0 / 12.0);
    }

    #[test]
    fn flat_profiles_are_nan_and_numbers_replace_nan() {
        let zeros = vec![0f32; 40];
        let r = unsafe { period_ratio(zeros.as_ptr(), 40, 8) };
        assert!(r.unwrap().is_nan());
        assert!(keep_larger(0.0, f32::NAN).is_nan());
        assert_eq!(keep_larger(f32::NAN, 2.0), 2.0);
        // A flat frame: both profiles 0, the result NaN.
        let p = params(40, 40);
        assert!(unsafe { ratio(&p, zeros.as_ptr(), zeros.as_ptr()) }.is_nan());
        // Too small for any period (w, h ≤ 8): 0.
        let p = params(8, 8);
        assert_eq!(unsafe { ratio(&p, zeros.as_ptr(), zeros.as_ptr()) }, 0.0);
    }

    #[test]
    fn a_grid_of_period_8_stands_out() {
        // Column profile: 1 at the grid (x % 8 == 7), 0.25 elsewhere.
        let n = 64u32;
        let prof: Vec<f32> = (0..n).map(|x| if x % 8 == 7 { 1.0 } else { 0.25 }).collect();
        let r8 = unsafe { period_ratio(prof.as_ptr(), n, 8) }.unwrap();
        assert_eq!(r8, 4.0);
        let r5 = unsafe { period_ratio(prof.as_ptr(), n, 5) }.unwrap();
        assert!(r5 < 2.0, "{r5}");
        let flat = vec![0f32; 64];
        let mut p = params(n, n);
        p.period_max = 8;
        // The row profile is flat (NaN ratios): NaN comes last and stays.
        assert!(unsafe { ratio(&p, prof.as_ptr(), flat.as_ptr()) }.is_nan());
        // The other way round, the vertical numbers replace the horizontal NaN.
        assert_eq!(unsafe { ratio(&p, flat.as_ptr(), prof.as_ptr()) }, 4.0);
    }

    #[test]
    fn profiles_add_up_in_row_and_column_order() {
        let (w, h) = (12u32, 10u32);
        let d: Vec<u8> = (0..w * h).map(|i| ((i * 37) % 251) as u8).collect();
        let l = luma(&d, w, h);
        let mut cols = vec![0f32; w as usize];
        for y in 1..h {
            unsafe { add_col_row(&l, y, 0, w, cols.as_mut_ptr()) };
        }
        let mut want = 0f32;
        for y in 1..h {
            want += unsafe { col_grad(&l, 5, y) };
        }
        assert_eq!(cols[5], want);
        assert_eq!((cols[2], cols[8]), (0.0, 0.0));
        let mut want = 0f32;
        for x in 1..w {
            want += unsafe { row_grad(&l, x, 4) };
        }
        assert_eq!(unsafe { row_sum(&l, 4, 0.0) }, want);
    }
}
