//! Luma as FFmpeg 5.1's 8-bit-only filters (`blurdetect`, `blockdetect`) see it.
//!
//! Those filters accept 8-bit formats only, so FFmpeg's automatically inserted scaler
//! converts deeper luma to 8 bit before them (to `yuv420p`, `yuv422p`, ..: limited range).
//! libswscale does it in one of three ways ([`Range`]), all with an 8×8 ordered dither,
//! `s` = depth − 8:
//!
//! * limited-range luma: its unscaled plane copy, `t = (v + d) >> s; t − (t >> 8)` with
//!   `d` = [`DITHER`]`[s − 1][y & 7][x & 7]`;
//! * full-range Y'CbCr: its scaler, which also converts to limited range: the sample
//!   widened to 15 bits (`v · 2^14 >> (depth − 1)`, at most 2^15 − 1), the range
//!   converted (`(t · 14071 + 33561947) >> 14`), then `(t + d) >> 7` clipped to 0..255
//!   with `d` = [`DITHER`]`[7][y & 7][x & 7]` (its 128-scale matrix);
//! * full-range gray: the unscaled copy again, full-range rounding:
//!   `(v − (v >> 8) + d) >> s`.
//!
//! All three were checked bit for bit against Debian's `ffmpeg` 5.1 (`-vf format=yuv420p`,
//! `format=gray`) on random 10-, 12- and 16-bit planes (and P010, which takes the first
//! way when limited). 8-bit samples are
//! read as they are, whatever their range: FFmpeg hands them to the filters unchanged.
//! [`sample`] is the one function both metrics, on both backends, read luma through.

use crate::channel::{Channel, load};

/// libswscale's ordered-dither matrices of its unscaled depth reduction, one per shift
/// (depth − 8 = 1..8): the values added before the right shift. The last is also its
/// scaler's 128-scale matrix.
pub const DITHER: [[[u8; 8]; 8]; 8] = [
    [
        [0, 1, 0, 1, 0, 1, 0, 1],
        [1, 0, 1, 0, 1, 0, 1, 0],
        [0, 1, 0, 1, 0, 1, 0, 1],
        [1, 0, 1, 0, 1, 0, 1, 0],
        [0, 1, 0, 1, 0, 1, 0, 1],
        [1, 0, 1, 0, 1, 0, 1, 0],
        [0, 1, 0, 1, 0, 1, 0, 1],
        [1, 0, 1, 0, 1, 0, 1, 0],
    ],
    [
        [1, 2, 1, 2, 1, 2, 1, 2],
        [3, 0, 3, 0, 3, 0, 3, 0],
        [1, 2, 1, 2, 1, 2, 1, 2],
        [3, 0, 3, 0, 3, 0, 3, 0],
        [1, 2, 1, 2, 1, 2, 1, 2],
        [3, 0, 3, 0, 3, 0, 3, 0],
        [1, 2, 1, 2, 1, 2, 1, 2],
        [3, 0, 3, 0, 3, 0, 3, 0],
    ],
    [
        [2, 4, 3, 5, 2, 4, 3, 5],
        [6, 0, 7, 1, 6, 0, 7, 1],
        [3, 5, 2, 4, 3, 5, 2, 4],
        [7, 1, 6, 0, 7, 1, 6, 0],
        [2, 4, 3, 5, 2, 4, 3, 5],
        [6, 0, 7, 1, 6, 0, 7, 1],
        [3, 5, 2, 4, 3, 5, 2, 4],
        [7, 1, 6, 0, 7, 1, 6, 0],
    ],
    [
        [4, 8, 7, 11, 4, 8, 7, 11],
        [12, 0, 15, 3, 12, 0, 15, 3],
        [6, 10, 5, 9, 6, 10, 5, 9],
        [14, 2, 13, 1, 14, 2, 13, 1],
        [4, 8, 7, 11, 4, 8, 7, 11],
        [12, 0, 15, 3, 12, 0, 15, 3],
        [6, 10, 5, 9, 6, 10, 5, 9],
        [14, 2, 13, 1, 14, 2, 13, 1],
    ],
    [
        [9, 17, 15, 23, 8, 16, 14, 22],
        [25, 1, 31, 7, 24, 0, 30, 6],
        [13, 21, 11, 19, 12, 20, 10, 18],
        [29, 5, 27, 3, 28, 4, 26, 2],
        [8, 16, 14, 22, 9, 17, 15, 23],
        [24, 0, 30, 6, 25, 1, 31, 7],
        [12, 20, 10, 18, 13, 21, 11, 19],
        [28, 4, 26, 2, 29, 5, 27, 3],
    ],
    [
        [18, 34, 30, 46, 17, 33, 29, 45],
        [50, 2, 62, 14, 49, 1, 61, 13],
        [26, 42, 22, 38, 25, 41, 21, 37],
        [58, 10, 54, 6, 57, 9, 53, 5],
        [16, 32, 28, 44, 19, 35, 31, 47],
        [48, 0, 60, 12, 51, 3, 63, 15],
        [24, 40, 20, 36, 27, 43, 23, 39],
        [56, 8, 52, 4, 59, 11, 55, 7],
    ],
    [
        [18, 34, 30, 46, 17, 33, 29, 45],
        [50, 2, 62, 14, 49, 1, 61, 13],
        [26, 42, 22, 38, 25, 41, 21, 37],
        [58, 10, 54, 6, 57, 9, 53, 5],
        [16, 32, 28, 44, 19, 35, 31, 47],
        [48, 0, 60, 12, 51, 3, 63, 15],
        [24, 40, 20, 36, 27, 43, 23, 39],
        [56, 8, 52, 4, 59, 11, 55, 7],
    ],
    [
        [36, 68, 60, 92, 34, 66, 58, 90],
        [100, 4, 124, 28, 98, 2, 122, 26],
        [52, 84, 44, 76, 50, 82, 42, 74],
        [116, 20, 108, 12, 114, 18, 106, 10],
        [32, 64, 56, 88, 38, 70, 62, 94],
        [96, 0, 120, 24, 102, 6, 126, 30],
        [48, 80, 40, 72, 54, 86, 46, 78],
        [112, 16, 104, 8, 118, 22, 110, 14],
    ],
];

/// One frame's luma plane, read as 8-bit samples. Crosses the kernel boundary by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Luma8 {
    /// The luma channel at its own depth.
    pub chan: Channel,
    pub width: u32,
    pub height: u32,
    /// depth − 8 (0 for 8-bit samples, at most 8).
    pub shift: u32,
    /// How deeper samples are reduced: a [`Range`] as `u32`.
    pub range: u32,
}

/// The three ways of [`to_8bit`], by the frame's range and colour family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Range {
    /// Limited range (any family).
    Limited = 0,
    /// Full-range Y'CbCr: made limited on the way.
    FullYuv = 1,
    /// Full-range gray: kept full.
    FullGray = 2,
}

/// A sample `v` of `shift + 8` bits at (x, y) brought to 8 bits as FFmpeg's scaler does
/// before the filters (see the module).
#[inline(always)]
pub fn to_8bit(v: u32, shift: u32, range: u32, x: u32, y: u32) -> u32 {
    if shift == 0 {
        return v;
    }
    let (row, col) = ((y & 7) as usize, (x & 7) as usize);
    let d = DITHER[(shift as usize - 1) & 7][row][col] as u32;
    if range == Range::FullGray as u32 {
        (v - (v >> 8) + d) >> shift
    } else if range == Range::FullYuv as u32 {
        let wide = ((v << 14) >> (shift + 7)).min(32767);
        let limited = (wide * 14071 + 33561947) >> 14;
        let t = (limited + DITHER[7][row][col] as u32) >> 7;
        if t > 255 { 255 } else { t }
    } else {
        let t = (v + d) >> shift;
        t - (t >> 8)
    }
}

/// Start of row `y` of `l`.
#[inline(always)]
pub fn row_ptr(l: &Luma8, y: u32) -> *const u8 {
    (l.chan.ptr + y as u64 * l.chan.pitch as u64) as *const u8
}

/// Whether `l`'s samples are plain bytes (8-bit planar or semi-planar luma, no shift):
/// then [`sample`] is the byte itself, and [`sample_as`] with `PLAIN` reads just that.
#[inline(always)]
pub fn is_plain(l: &Luma8) -> bool {
    l.chan.is_plain_bytes() && l.shift == 0
}

/// [`sample`], with `PLAIN` = [`is_plain`]`(l)` known to the compiler: a kernel that
/// branches once per block on [`is_plain`] reads 8-bit frames without the general
/// format's arithmetic (the same value either way).
///
/// # Safety
/// As [`sample`]; `PLAIN` only when [`is_plain`]`(l)`.
#[inline(always)]
pub unsafe fn sample_as<const PLAIN: bool>(l: &Luma8, x: u32, y: u32) -> u32 {
    if PLAIN {
        unsafe { *row_ptr(l, y).add(x as usize) as u32 }
    } else {
        unsafe { sample(l, x, y) }
    }
}

/// The 8-bit luma sample (x, y) of `l`.
///
/// # Safety
/// (x, y) must lie in the plane `l` describes, and that plane must be readable.
#[inline(always)]
pub unsafe fn sample(l: &Luma8, x: u32, y: u32) -> u32 {
    let v = unsafe { load(row_ptr(l, y), x, &l.chan) };
    to_8bit(v, l.shift, l.range, x, y)
}

#[cfg(test)]
mod tests {
    use super::*;

    const L: u32 = Range::Limited as u32;
    const Y: u32 = Range::FullYuv as u32;
    const G: u32 = Range::FullGray as u32;

    #[test]
    fn plain_samples_are_the_general_ones() {
        let data: std::vec::Vec<u8> = (0..6 * 4).map(|i| (i * 37 % 251) as u8).collect();
        let chan = |step, sample_bytes, shift| Channel {
            ptr: data.as_ptr() as u64,
            pitch: 6,
            step,
            sample_bytes,
            shift,
            max: 255,
            _pad: 0,
        };
        let l = Luma8 {
            chan: chan(1, 1, 0),
            width: 6,
            height: 4,
            shift: 0,
            range: L,
        };
        assert!(is_plain(&l));
        for y in 0..4 {
            for x in 0..6 {
                let general = unsafe { sample(&l, x, y) };
                assert_eq!(unsafe { sample_as::<true>(&l, x, y) }, general);
                assert_eq!(unsafe { sample_as::<false>(&l, x, y) }, general);
                assert_eq!(general, data[(y * 6 + x) as usize] as u32);
            }
        }
        // Packed, 16-bit, shifted or deeper luma takes the general path.
        let not = |chan, shift| !is_plain(&Luma8 { chan, shift, ..l });
        assert!(not(chan(2, 1, 0), 0) && not(chan(2, 2, 0), 2) && not(chan(1, 1, 2), 0));
        assert!(not(chan(1, 1, 0), 2));
    }

    #[test]
    fn eight_bit_samples_pass_and_deeper_ones_are_dithered() {
        assert_eq!(to_8bit(200, 0, L, 3, 5), 200);
        // 10-bit limited: (v + d) >> 2, d = 1 or 2 on even rows, 3 or 0 on odd rows.
        assert_eq!(to_8bit(1023, 2, L, 0, 0), 255); // (1023 + 1) >> 2 = 256 → 255
        assert_eq!(to_8bit(402, 2, L, 0, 1), 101); // (402 + 3) >> 2
        assert_eq!(to_8bit(402, 2, L, 1, 1), 100); // (402 + 0) >> 2
        assert_eq!(to_8bit(0, 2, L, 7, 7), 0);
        // 10-bit full range, to limited range: 0 → 16, 1023 → about 235.
        assert_eq!(to_8bit(0, 2, Y, 0, 0), 16); // (2048 + 36) >> 7
        assert_eq!(to_8bit(1023, 2, Y, 1, 0), 236); // (30162 + 68) >> 7
        assert_eq!(to_8bit(512, 2, Y, 1, 1), 125); // (16119 + 4) >> 7
        // 16-bit: the largest sample stays 255 (235 once full range is made limited).
        assert_eq!(to_8bit(65535, 8, L, 5, 3), 255);
        assert_eq!(to_8bit(65535, 8, Y, 5, 3), 235);
        // Full-range gray: (v − v/256 + d) >> s.
        assert_eq!(to_8bit(1023, 2, G, 0, 1), 255); // (1023 − 3 + 3) >> 2
        assert_eq!(to_8bit(512, 2, G, 1, 0), 128); // (512 − 2 + 2) >> 2
        assert_eq!(to_8bit(65535, 8, G, 5, 3), 255);
    }
}
