//! Freeze: the mean absolute difference of a frame against a reference frame, FFmpeg 5.1's
//! `freezedetect` measure (`is_frozen`):
//!
//! * over every plane: each channel of the format, `width` samples per row (chroma widths
//!   rounded up, as FFmpeg's line sizes are) and `height` rows (chroma heights
//!   `h >> log2_chroma_h`, rounded **down**, as freezedetect takes them: the last chroma row
//!   of an odd-height 4:2:0 frame is left out);
//! * the integer sum of `|cur − ref|` over those samples, divided in f64 by their count and
//!   by 2^depth ([`mafd`]).
//!
//! The reference frame is the last frame that was not frozen ([`frozen`], from the value
//! and the noise threshold); it is kept as u16 samples, channel after channel, row pitch
//! `width` ([`FreezeFrame::offset`]). While summing, every sample of the frame is also
//! written into a spare buffer of the same layout, so a frame that becomes the reference
//! costs no second pass: the two buffers swap roles (on the GPU `freeze_decide` does it, so
//! the host need not answer before the next frame is queued).
//!
//! One code path for the host and the GPU: [`sad_row`] is one row on the CPU backend; the
//! GPU kernel (`kernels.rs`: `freeze_sad`) runs [`thread_sad`] in every thread ([`BLOCK`]
//! threads per block, [`blocks`] blocks striding over the rows of all channels in turn) and
//! writes one partial sum per block. Sums are integers, so both backends agree bit for bit.

mod kernels;

use crate::channel::{Channel, load};

/// Threads per block of `freeze_sad`.
pub const BLOCK: u32 = 256;
/// Warps per block.
pub const WARPS: usize = BLOCK as usize / 32;
/// Most blocks of one launch: blocks stride over the rows, so this bounds the partials.
pub const MAX_BLOCKS: u32 = 1024;

/// Blocks of the `freeze_sad` launch for `rows` rows in all (one per row, at most
/// [`MAX_BLOCKS`]); each writes one partial sum.
pub const fn blocks(rows: u32) -> u32 {
    if rows == 0 {
        1
    } else if rows > MAX_BLOCKS {
        MAX_BLOCKS
    } else {
        rows
    }
}

/// One frame's channels as freeze reads them. Crosses the kernel boundary by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FreezeFrame {
    /// The channels (samples at their depth: `Channel::shift` applied); the first
    /// `planes` are used.
    pub chans: [Channel; 3],
    /// Samples per row of each channel.
    pub width: [u32; 3],
    /// Rows of each channel that are measured.
    pub height: [u32; 3],
    /// Channels used: 1 (gray) or 3.
    pub planes: u32,
    /// Rows of all used channels together, `Σ height`.
    pub rows: u32,
    /// Where each channel starts in the reference and spare buffers, in samples.
    pub offset: [u32; 3],
    pub _pad: u32,
}

impl FreezeFrame {
    /// Samples measured: `Σ width · height` (FFmpeg's `count`), also the length of the
    /// reference buffer.
    pub fn count(&self) -> u64 {
        (0..self.planes as usize)
            .map(|c| self.width[c] as u64 * self.height[c] as u64)
            .sum()
    }

    /// Values of one frame buffer of the GPU's pair (reference and spare side by side):
    /// [`FreezeFrame::count`] rounded up to a multiple of 4, so that the second buffer
    /// starts 8-byte aligned as the first does ([`vector_row`]'s stores need it).
    pub fn buffer_len(&self) -> u64 {
        self.count().next_multiple_of(4)
    }

    /// Sets `rows` and `offset` from `planes`, `width` and `height`.
    pub fn with_offsets(mut self) -> FreezeFrame {
        let (mut rows, mut at) = (0u32, 0u32);
        for c in 0..self.planes as usize {
            self.offset[c] = at;
            at += self.width[c] * self.height[c];
            rows += self.height[c];
        }
        self.rows = rows;
        self
    }

    /// The channel and its row of row `r` of all channels in turn (`r < rows`). Written
    /// with constant indices (no loop over the arrays), so that the GPU keeps the struct in
    /// registers and parameter space rather than copying it to local memory.
    #[inline(always)]
    pub fn locate(&self, r: u32) -> (usize, u32) {
        if r < self.height[0] {
            (0, r)
        } else if r - self.height[0] < self.height[1] {
            (1, r - self.height[0])
        } else {
            (2, r - self.height[0] - self.height[1])
        }
    }

    /// Channel `c`, its width and its offset in the reference layout (constant indices, as
    /// [`FreezeFrame::locate`]).
    #[inline(always)]
    pub fn plane(&self, c: usize) -> (Channel, u32, u32) {
        match c {
            0 => (self.chans[0], self.width[0], self.offset[0]),
            1 => (self.chans[1], self.width[1], self.offset[1]),
            _ => (self.chans[2], self.width[2], self.offset[2]),
        }
    }
}

/// Start of row `y` of channel `ch`.
#[inline(always)]
pub fn row_ptr(ch: &Channel, y: u32) -> *const u8 {
    (ch.ptr + y as u64 * ch.pitch as u64) as *const u8
}

/// One sample's absolute difference.
#[inline(always)]
pub fn abs_diff(cur: u32, reference: u16) -> u32 {
    let r = reference as u32;
    cur.abs_diff(r)
}

/// Row `y` of channel `c`: the sum of `|cur − reference[x]|` (0 when `first`: there is no
/// reference), and every sample written to `spare[x]`.
///
/// # Safety
/// `f` must describe readable memory, `y < f.height[c]`; `reference` (unless `first`) and
/// `spare` must hold `f.width[c]` values.
#[inline]
pub unsafe fn sad_row(
    f: &FreezeFrame,
    c: usize,
    y: u32,
    reference: *const u16,
    spare: *mut u16,
    first: bool,
) -> u64 {
    let (ch, width, _) = f.plane(c);
    let row = row_ptr(&ch, y);
    let mut s = 0u64;
    for x in 0..width as usize {
        let cur = unsafe { load(row, x as u32, &ch) };
        if !first {
            s += abs_diff(cur, unsafe { *reference.add(x) }) as u64;
        }
        unsafe { *spare.add(x) = cur as u16 };
    }
    s
}

/// Consecutive samples of one row that a GPU thread handles per step of [`thread_sad`]:
/// its loads are independent (so they overlap in flight) and, on aligned planar rows
/// ([`vector_row`]), one 4- or 8-byte load of the frame, one 8-byte load of the reference
/// and one 8-byte store to the spare.
pub const GROUP: u32 = 4;

/// Whether channel `c`'s rows can be read [`GROUP`] samples at a time with one aligned load
/// (planar 8-bit or 16-bit samples, plane start and pitch aligned to the group's bytes) and
/// its reference row written 4 values at a time (width and offset multiples of 4, so every
/// row of the reference layout starts 8-byte aligned). The same for every thread.
#[inline(always)]
pub fn vector_row(ch: &Channel, width: u32, offset: u32) -> bool {
    ch.step == ch.sample_bytes
        && ch.sample_bytes <= 2
        && ch.rows_aligned(GROUP * ch.sample_bytes)
        && width.is_multiple_of(GROUP)
        && offset.is_multiple_of(GROUP)
}

/// One group of [`GROUP`] samples of a [`vector_row`] row from `x` (`x % GROUP == 0`,
/// `x + GROUP <= width`): the sum of `|cur − reference|` (0 when `first`), the samples
/// written to `spare`.
///
/// # Safety
/// As [`thread_sad`], with `row` the row's start and `i` the group's index in the
/// reference layout (`i % 4 == 0`, so `reference`/`spare` + `i` is 8-byte aligned when the
/// buffers are).
#[inline(always)]
unsafe fn vector_group(
    row: *const u8,
    ch: &Channel,
    x: u32,
    i: usize,
    reference: *const u16,
    spare: *mut u16,
    first: bool,
) -> u32 {
    let cur: [u32; 4] = if ch.sample_bytes == 1 {
        let v = unsafe { *(row.add(x as usize) as *const u32) };
        [v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, v >> 24]
    } else {
        let v = unsafe { *(row.add(2 * x as usize) as *const u64) };
        let s = ch.shift;
        [
            (v as u32 & 0xffff) >> s,
            ((v >> 16) as u32 & 0xffff) >> s,
            ((v >> 32) as u32 & 0xffff) >> s,
            ((v >> 48) as u32) >> s,
        ]
    };
    let mut s = 0u32;
    if !first {
        let r = unsafe { *(reference.add(i) as *const u64) };
        for (k, c) in cur.iter().enumerate() {
            s += abs_diff(*c, (r >> (16 * k)) as u16);
        }
    }
    let packed =
        cur[0] as u64 | (cur[1] as u64) << 16 | (cur[2] as u64) << 32 | (cur[3] as u64) << 48;
    unsafe { *(spare.add(i) as *mut u64) = packed };
    s
}

/// One GPU thread's share of a frame: thread `thread` of block `block` of `blocks` visits
/// rows `block, block + blocks, ..` of all channels in turn ([`FreezeFrame::locate`]) and
/// in each the groups of [`GROUP`] columns from `GROUP · thread`, `GROUP · (thread +
/// BLOCK)`, .., summing the absolute differences with `reference` (none when `first`) and
/// writing each sample to `spare`. Rows that allow it are read and written a group at a
/// time ([`vector_row`]), others (packed formats, odd widths, unaligned planes) a sample at
/// a time; the sums are the same integers either way.
///
/// # Safety
/// `f` must describe readable memory; `reference` (unless `first`) and `spare` must hold
/// [`FreezeFrame::count`] values laid out as [`FreezeFrame::offset`] says, 8-byte aligned,
/// and no other thread may write this thread's samples of `spare` during the call.
#[inline(always)]
pub unsafe fn thread_sad(
    f: &FreezeFrame,
    reference: *const u16,
    spare: *mut u16,
    first: bool,
    block: u32,
    blocks: u32,
    thread: u32,
) -> u64 {
    let mut s = 0u64;
    let mut r = block;
    while r < f.rows {
        let (c, y) = f.locate(r);
        let (ch, width, offset) = f.plane(c);
        let row = row_ptr(&ch, y);
        let at = offset as usize + y as usize * width as usize;
        let vector = vector_row(&ch, width, offset);
        let mut x = thread * GROUP;
        while x < width {
            let i = at + x as usize;
            if vector {
                s += unsafe { vector_group(row, &ch, x, i, reference, spare, first) } as u64;
            } else {
                let mut k = 0;
                while k < GROUP && x + k < width {
                    let cur = unsafe { load(row, x + k, &ch) };
                    if !first {
                        s += abs_diff(cur, unsafe { *reference.add(i + k as usize) }) as u64;
                    }
                    unsafe { *spare.add(i + k as usize) = cur as u16 };
                    k += 1;
                }
            }
            x += BLOCK * GROUP;
        }
        r += blocks;
    }
    s
}

/// Whether a frame whose value is `diff` is frozen: FFmpeg's `mafd <= noise`.
#[inline(always)]
pub fn is_frozen(diff: f64, noise: f64) -> bool {
    diff <= noise
}

/// Whether a frame whose sum of absolute differences is `sad` (over `count` samples of
/// `depth` bits) is frozen; the first frame of a sequence never is (it has no reference).
/// Both backends decide with this: the CPU engine on the host, the GPU in `freeze_decide`.
#[inline(always)]
pub fn frozen(sad: u64, count: u64, depth: u32, noise: f64, first: bool) -> bool {
    !first && is_frozen(mafd(sad, count, depth), noise)
}

/// FFmpeg's `mafd`: the sum of absolute differences over `count` samples of `depth` bits,
/// `sad / count / 2^depth` in f64.
#[inline(always)]
pub fn mafd(sad: u64, count: u64, depth: u32) -> f64 {
    sad as f64 / count as f64 / (1u64 << depth) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;
    use std::vec::Vec;

    fn chan(data: &[u8], pitch: u32, bytes: u32) -> Channel {
        Channel {
            ptr: data.as_ptr() as u64,
            pitch,
            step: bytes,
            sample_bytes: bytes,
            shift: 0,
            max: if bytes == 1 { 255 } else { 1023 },
            _pad: 0,
        }
    }

    /// A 3-channel frame: luma `w`×`h`, chroma `cw`×`ch`, 8-bit, tight pitches.
    fn frame(y: &[u8], u: &[u8], v: &[u8], w: u32, h: u32, cw: u32, ch: u32) -> FreezeFrame {
        FreezeFrame {
            chans: [chan(y, w, 1), chan(u, cw, 1), chan(v, cw, 1)],
            width: [w, cw, cw],
            height: [h, ch, ch],
            planes: 3,
            ..Default::default()
        }
        .with_offsets()
    }

    fn host_sad(f: &FreezeFrame, reference: &[u16], spare: &mut [u16], first: bool) -> u64 {
        let mut s = 0;
        for c in 0..f.planes as usize {
            for y in 0..f.height[c] {
                let at = f.offset[c] as usize + (y * f.width[c]) as usize;
                s += unsafe {
                    sad_row(
                        f,
                        c,
                        y,
                        reference[at..].as_ptr(),
                        spare[at..].as_mut_ptr(),
                        first,
                    )
                };
            }
        }
        s
    }

    #[test]
    fn layout_rows_and_count() {
        let (y, u) = (vec![0u8; 35], vec![0u8; 8]);
        // 7x5 4:2:0 as freezedetect reads it: chroma 4 wide, 5 >> 1 = 2 rows.
        let f = frame(&y, &u, &u, 7, 5, 4, 2);
        assert_eq!(f.rows, 9);
        assert_eq!(f.offset, [0, 35, 43]);
        assert_eq!(f.count(), 35 + 8 + 8);
        assert_eq!(f.locate(4), (0, 4));
        assert_eq!(f.locate(5), (1, 0));
        assert_eq!(f.locate(8), (2, 1));
    }

    #[test]
    fn sad_against_the_reference_and_the_spare_copy() {
        let y0 = [10u8, 20, 30, 40];
        let y1 = [12u8, 20, 25, 40];
        let c0 = [128u8];
        let c1 = [130u8];
        let f0 = frame(&y0, &c0, &c0, 2, 2, 1, 1);
        let f1 = frame(&y1, &c1, &c0, 2, 2, 1, 1);
        let n = f0.count() as usize;
        let (mut reference, mut spare) = (vec![0u16; n], vec![0u16; n]);
        assert_eq!(host_sad(&f0, &reference, &mut spare, true), 0);
        core::mem::swap(&mut reference, &mut spare);
        assert_eq!(reference, [10, 20, 30, 40, 128, 128]);
        let s = host_sad(&f1, &reference, &mut spare, false);
        assert_eq!(s, 2 + 5 + 2);
        assert_eq!(spare, [12, 20, 25, 40, 130, 128]);
        assert_eq!(mafd(s, 6, 8), 9.0 / 6.0 / 256.0);
    }

    #[test]
    fn threads_cover_every_sample_once_as_the_rows() {
        let (w, h) = (301u32, 1400u32);
        let (cw, ch) = (151u32, 700u32);
        let mk = |n: u32, k: u32| -> Vec<u8> { (0..n).map(|i| (i * k % 251) as u8).collect() };
        let (y, u, v) = (mk(w * h, 7), mk(cw * ch, 3), mk(cw * ch, 5));
        let (y2, u2, v2) = (mk(w * h, 11), mk(cw * ch, 13), mk(cw * ch, 2));
        let f = frame(&y, &u, &v, w, h, cw, ch);
        let g = frame(&y2, &u2, &v2, w, h, cw, ch);
        let n = f.count() as usize;
        let mut reference = vec![0u16; n];
        let mut spare = vec![0u16; n];
        host_sad(&f, &reference, &mut spare, true);
        core::mem::swap(&mut reference, &mut spare);
        let want = host_sad(&g, &reference, &mut spare, false);
        let mut spare_gpu = vec![0u16; n];
        let b = blocks(g.rows);
        assert_eq!(b, MAX_BLOCKS);
        let mut got = 0;
        for blk in 0..b {
            for t in 0..BLOCK {
                got += unsafe {
                    thread_sad(
                        &g,
                        reference.as_ptr(),
                        spare_gpu.as_mut_ptr(),
                        false,
                        blk,
                        b,
                        t,
                    )
                };
            }
        }
        assert_eq!(got, want);
        assert_eq!(spare_gpu, spare);
        assert!(want > 0);
    }

    /// Bytes in storage aligned to 8, as device allocations are.
    fn aligned(bytes: &[u8]) -> Vec<u64> {
        let mut v = vec![0u64; bytes.len().div_ceil(8)];
        for (i, b) in bytes.iter().enumerate() {
            v[i / 8] |= (*b as u64) << (8 * (i % 8));
        }
        v
    }

    #[test]
    fn aligned_rows_go_a_group_at_a_time_with_the_same_sums() {
        // 8-bit 4:2:0 with widths multiple of 4, and 10-bit in the high bits of 16-bit
        // containers (P010-like): both take the group path; the sums and the spare are the
        // row function's.
        for (bytes, shift, max) in [(1u32, 0u32, 255u32), (2, 6, 1023)] {
            let (w, h, cw, chh) = (64u32, 9u32, 32u32, 4u32);
            let mk = |n: u32, k: u32| -> Vec<u8> {
                (0..n)
                    .flat_map(|i| {
                        let v = ((i * k) % (max + 1)) << shift;
                        if bytes == 1 {
                            vec![v as u8]
                        } else {
                            vec![v as u8, (v >> 8) as u8]
                        }
                    })
                    .collect()
            };
            let planes = |k: u32| {
                [
                    aligned(&mk(w * h, k)),
                    aligned(&mk(cw * chh, k + 1)),
                    aligned(&mk(cw * chh, k + 2)),
                ]
            };
            let frame_of = |p: &[Vec<u64>; 3]| {
                let c = |d: &Vec<u64>, width: u32| Channel {
                    ptr: d.as_ptr() as u64,
                    pitch: width * bytes,
                    step: bytes,
                    sample_bytes: bytes,
                    shift,
                    max,
                    _pad: 0,
                };
                FreezeFrame {
                    chans: [c(&p[0], w), c(&p[1], cw), c(&p[2], cw)],
                    width: [w, cw, cw],
                    height: [h, chh, chh],
                    planes: 3,
                    ..Default::default()
                }
                .with_offsets()
            };
            let (a, b) = (planes(7), planes(11));
            let (fa, fb) = (frame_of(&a), frame_of(&b));
            for c in 0..3 {
                let (ch, width, offset) = fb.plane(c);
                assert!(vector_row(&ch, width, offset));
            }
            let n = fa.count() as usize;
            let (mut reference, mut spare) = (vec![0u16; n], vec![0u16; n]);
            host_sad(&fa, &reference, &mut spare, true);
            core::mem::swap(&mut reference, &mut spare);
            let want = host_sad(&fb, &reference, &mut spare, false);
            assert!(want > 0);
            let mut ref_words = vec![0u64; n.div_ceil(4)];
            let mut spare_words = vec![0u64; n.div_ceil(4)];
            for (i, v) in reference.iter().enumerate() {
                ref_words[i / 4] |= (*v as u64) << (16 * (i % 4));
            }
            let mut got = 0;
            for t in 0..BLOCK {
                got += unsafe {
                    thread_sad(
                        &fb,
                        ref_words.as_ptr() as *const u16,
                        spare_words.as_mut_ptr() as *mut u16,
                        false,
                        0,
                        1,
                        t,
                    )
                };
            }
            assert_eq!(got, want);
            let got_spare: Vec<u16> = (0..n)
                .map(|i| (spare_words[i / 4] >> (16 * (i % 4))) as u16)
                .collect();
            assert_eq!(got_spare, spare);
        }
    }

    #[test]
    fn unaligned_or_packed_rows_go_a_sample_at_a_time() {
        let d = [0u64; 8];
        let p = d.as_ptr() as u64;
        let c = |ptr: u64, pitch: u32, step: u32, bytes: u32| Channel {
            ptr,
            pitch,
            step,
            sample_bytes: bytes,
            ..Default::default()
        };
        assert!(vector_row(&c(p, 16, 1, 1), 16, 0));
        assert!(!vector_row(&c(p + 1, 16, 1, 1), 16, 0));
        assert!(!vector_row(&c(p, 18, 1, 1), 16, 0));
        assert!(!vector_row(&c(p, 16, 1, 1), 14, 0));
        assert!(!vector_row(&c(p, 16, 1, 1), 16, 2));
        assert!(!vector_row(&c(p, 64, 4, 1), 16, 0));
        assert!(vector_row(&c(p, 32, 2, 2), 16, 0));
        assert!(!vector_row(&c(p + 4, 32, 2, 2), 16, 0));
    }

    #[test]
    fn sixteen_bit_extremes() {
        let a: Vec<u8> = [0u16, 65535].iter().flat_map(|s| s.to_le_bytes()).collect();
        let b: Vec<u8> = [65535u16, 0].iter().flat_map(|s| s.to_le_bytes()).collect();
        let one = |d: &[u8]| {
            FreezeFrame {
                chans: [chan(d, 4, 2), Channel::default(), Channel::default()],
                width: [2, 0, 0],
                height: [1, 0, 0],
                planes: 1,
                ..Default::default()
            }
            .with_offsets()
        };
        let (fa, fb) = (one(&a), one(&b));
        let mut reference = vec![0u16; 2];
        let mut spare = vec![0u16; 2];
        host_sad(&fa, &reference, &mut spare, true);
        core::mem::swap(&mut reference, &mut spare);
        let s = host_sad(&fb, &reference, &mut spare, false);
        assert_eq!(s, 2 * 65535);
        assert_eq!(mafd(s, 2, 16), 65535.0 / 65536.0);
    }
}
