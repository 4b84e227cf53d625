//! Black: the fraction of a frame's luma samples at or below a threshold, FFmpeg 5.1's
//! `blackdetect` per-frame `picture_black_ratio`:
//!
//! * the threshold is an integer sample value ([`threshold`]): `pix_th · (2^depth − 1)` for a
//!   full-range frame, `16f + pix_th · 219f` (f = 2^(depth − 8)) for a limited-range one,
//!   computed in f64 and truncated, as FFmpeg converts it to an unsigned int;
//! * the ratio is the count of luma samples `<= threshold` over `w·h`, in f64.
//!
//! One code path for the host and the GPU: [`count_row`] counts one row; the CPU backend
//! calls it per row, the GPU kernel (`kernels.rs`: `black_count`) runs [`thread_count`] in
//! every thread ([`BLOCK`] threads per block, [`blocks`] blocks striding over the rows) and
//! writes one partial count per block, which the host adds. Counts are integers, so both
//! backends give the same ratio, bit for bit.

mod kernels;

use crate::channel::{Channel, load};

/// Threads per block of `black_count`.
pub const BLOCK: u32 = 256;
/// Warps per block.
pub const WARPS: usize = BLOCK as usize / 32;
/// Most blocks of one launch: blocks stride over the rows, so this bounds the partials.
pub const MAX_BLOCKS: u32 = 1024;

/// Blocks of the `black_count` launch for a frame of `height` rows (one per row, at most
/// [`MAX_BLOCKS`]); each writes one partial count.
pub const fn blocks(height: u32) -> u32 {
    if height == 0 {
        1
    } else if height > MAX_BLOCKS {
        MAX_BLOCKS
    } else {
        height
    }
}

/// One frame's luma plane as black reads it. Crosses the kernel boundary by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlackLuma {
    /// The luma channel (samples already at their depth: `Channel::shift` applied).
    pub chan: Channel,
    pub width: u32,
    pub height: u32,
    /// A sample is black when `<= threshold` ([`threshold`]).
    pub threshold: u32,
    pub _pad: u32,
}

/// FFmpeg 5.1's integer pixel threshold for `pix_th` (0..1) at `depth` bits: full range
/// `pix_th · max`, limited range `16f + pix_th · 219f`, the f64 value truncated (FFmpeg
/// stores it in an `unsigned int`).
pub fn threshold(pix_th: f64, depth: u32, full_range: bool) -> u32 {
    let max = ((1u64 << depth) - 1) as f64;
    let f = (1u64 << (depth - 8)) as f64;
    let t = if full_range {
        pix_th * max
    } else {
        // The same operation order as FFmpeg: (pix_th · 219) · f, then + 16f.
        16.0 * f + pix_th * 219.0 * f
    };
    t as u32
}

/// Start of row `y` of `l`.
#[inline(always)]
pub fn row_ptr(l: &BlackLuma, y: u32) -> *const u8 {
    (l.chan.ptr + y as u64 * l.chan.pitch as u64) as *const u8
}

/// Whether sample `x` of `row` is black.
///
/// # Safety
/// The row must hold `x + 1` samples of `l.chan`.
#[inline(always)]
pub unsafe fn is_black(row: *const u8, x: u32, l: &BlackLuma) -> bool {
    unsafe { load(row, x, &l.chan) <= l.threshold }
}

/// Black samples of row `y`.
///
/// # Safety
/// `l` must describe readable memory and `y < l.height`.
#[inline]
pub unsafe fn count_row(l: &BlackLuma, y: u32) -> u32 {
    let row = row_ptr(l, y);
    let mut n = 0;
    for x in 0..l.width {
        n += unsafe { is_black(row, x, l) } as u32;
    }
    n
}

/// One GPU thread's share of a frame: thread `thread` of block `block` of `blocks` visits
/// rows `block, block + blocks, ..` and in each the columns `thread, thread + BLOCK, ..`
/// (adjacent threads read adjacent samples), counting the black ones.
///
/// # Safety
/// `l` must describe readable memory.
#[inline(always)]
pub unsafe fn thread_count(l: &BlackLuma, block: u32, blocks: u32, thread: u32) -> u32 {
    if by_words(l) {
        return unsafe { thread_count_words(l, block, blocks, thread) };
    }
    let mut n = 0;
    let mut y = block;
    while y < l.height {
        let row = row_ptr(l, y);
        let mut x = thread;
        while x < l.width {
            n += unsafe { is_black(row, x, l) } as u32;
            x += BLOCK;
        }
        y += blocks;
    }
    n
}

/// Whether `l`'s rows can be read four samples per aligned 32-bit load: plain bytes
/// (8-bit planar or semi-planar luma), the plane start and the pitch multiples of 4. The
/// same for every thread.
#[inline(always)]
pub fn by_words(l: &BlackLuma) -> bool {
    l.chan.is_plain_bytes() && l.chan.rows_aligned(4)
}

/// [`thread_count`] of a [`by_words`] frame: in each row the thread takes the words
/// `thread, thread + BLOCK, ..` (samples 4k .. 4k + 4, all inside the row), then, when the
/// width is not a multiple of 4, thread t < width % 4 the sample of the last partial word.
/// The same samples as one at a time, so the same count.
///
/// # Safety
/// As [`thread_count`]; [`by_words`]`(l)`.
#[inline(always)]
unsafe fn thread_count_words(l: &BlackLuma, block: u32, blocks: u32, thread: u32) -> u32 {
    let (words, tail) = (l.width / 4, l.width % 4);
    let th = l.threshold;
    let mut n = 0;
    let mut y = block;
    while y < l.height {
        let row = row_ptr(l, y);
        let mut k = thread;
        while k < words {
            // SAFETY: 4-byte aligned (by_words) and inside the row (4k + 4 <= width).
            let v = unsafe { *(row.add(4 * k as usize) as *const u32) };
            n += ((v & 0xff) <= th) as u32
                + ((v >> 8 & 0xff) <= th) as u32
                + ((v >> 16 & 0xff) <= th) as u32
                + ((v >> 24) <= th) as u32;
            k += BLOCK;
        }
        if thread < tail {
            n += unsafe { is_black(row, 4 * words + thread, l) } as u32;
        }
        y += blocks;
    }
    n
}

/// The picture black ratio of `count` black samples in a `w`×`h` plane, as FFmpeg
/// divides: f64 count over the f64 product.
#[inline(always)]
pub fn ratio(count: u64, width: u32, height: u32) -> f64 {
    count as f64 / (width as u64 * height as u64) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn luma(data: &[u8], w: u32, h: u32, bytes: u32, threshold: u32) -> BlackLuma {
        BlackLuma {
            chan: Channel {
                ptr: data.as_ptr() as u64,
                pitch: w * bytes,
                step: bytes,
                sample_bytes: bytes,
                shift: 0,
                max: if bytes == 1 { 255 } else { 1023 },
                _pad: 0,
            },
            width: w,
            height: h,
            threshold,
            _pad: 0,
        }
    }

    #[test]
    fn thresholds_are_ffmpeg_5_1s() {
        // 8 bit: 16 + 21.9 = 37.9 → 37; full 25.5 → 25.
        assert_eq!(threshold(0.10, 8, false), 37);
        assert_eq!(threshold(0.10, 8, true), 25);
        // 10 bit: 64 + 87.6 → 151 (FFmpeg 5.1 logs pixel_black_th_i:151); full 102.3 → 102.
        assert_eq!(threshold(0.10, 10, false), 151);
        assert_eq!(threshold(0.10, 10, true), 102);
        assert_eq!(threshold(0.0, 8, false), 16);
        assert_eq!(threshold(1.0, 8, false), 235);
        assert_eq!(threshold(1.0, 8, true), 255);
        assert_eq!(threshold(1.0, 16, true), 65535);
        assert_eq!(threshold(0.10, 12, false), 16 * 16 + 350);
    }

    #[test]
    fn counts_at_and_below_the_threshold() {
        let d = [36u8, 37, 38, 0, 255, 37];
        let l = luma(&d, 3, 2, 1, 37);
        assert_eq!(unsafe { count_row(&l, 0) }, 2);
        assert_eq!(unsafe { count_row(&l, 1) }, 2);
        let by_threads: u32 = (0..BLOCK)
            .map(|t| unsafe { thread_count(&l, 0, 1, t) })
            .sum();
        assert_eq!(by_threads, 4);
        assert_eq!(ratio(4, 3, 2), 4.0 / 6.0);
    }

    #[test]
    fn words_count_as_samples() {
        // Widths around multiples of 4, pitches aligned or not, a plane start off by one.
        let d: Vec<u8> = (0..64 * 9 + 1).map(|i| (i * 37 % 256) as u8).collect();
        let start = d.as_ptr().align_offset(4);
        for &(w, pitch) in &[
            (1u32, 4u32),
            (3, 4),
            (4, 4),
            (5, 8),
            (13, 16),
            (16, 16),
            (17, 20),
            (17, 17),
        ] {
            for offset in [start, start + 1] {
                let mut l = luma(&d[offset..], w, 9, 1, 120);
                l.chan.pitch = pitch;
                let rows: u32 = (0..9).map(|y| unsafe { count_row(&l, y) }).sum();
                let threads: u32 = (0..BLOCK)
                    .map(|t| unsafe { thread_count(&l, 0, 1, t) })
                    .sum();
                assert_eq!(threads, rows, "{w} wide, pitch {pitch}, offset {offset}");
                assert_eq!(
                    by_words(&l),
                    offset == start && pitch % 4 == 0,
                    "{w} wide, pitch {pitch}, offset {offset}"
                );
            }
        }
    }

    #[test]
    fn ten_bit_samples_are_little_endian() {
        let v: [u16; 4] = [151, 152, 1023, 0];
        let d: Vec<u8> = v.iter().flat_map(|s| s.to_le_bytes()).collect();
        let l = luma(&d, 4, 1, 2, 151);
        assert_eq!(unsafe { count_row(&l, 0) }, 2);
        // One pixel, all black.
        let one = [0u8, 0];
        assert_eq!(unsafe { count_row(&luma(&one, 1, 1, 2, 151), 0) }, 1);
    }

    #[test]
    fn blocks_stride_over_every_row_once() {
        let (w, h) = (300u32, 2100u32);
        let d: Vec<u8> = (0..w * h).map(|i| (i * 7 % 256) as u8).collect();
        let l = luma(&d, w, h, 1, 40);
        let rows: u32 = (0..h).map(|y| unsafe { count_row(&l, y) }).sum();
        let b = blocks(h);
        assert_eq!(b, MAX_BLOCKS);
        let threads: u32 = (0..b)
            .flat_map(|blk| (0..BLOCK).map(move |t| (blk, t)))
            .map(|(blk, t)| unsafe { thread_count(&l, blk, b, t) })
            .sum();
        assert_eq!(threads, rows);
    }
}
