//! Thumbnails for live alignment: a frame's luma as a small grid of cell sums, the picture
//! the element compares to find which reference frame a distorted frame shows.
//!
//! The grid is [`COLS`]×[`ROWS`] cells over the whole frame; cell `(cx, cy)` covers columns
//! `cx·w/COLS .. (cx+1)·w/COLS` and every second row (`y0, y0 + 2, ..`) of
//! `cy·h/ROWS .. (cy+1)·h/ROWS`: half the rows are enough for a mean, and halve what a
//! thumbnail costs on the CPU. Luma is the first channel of Y'CbCr and gray formats, and
//! `R + 2G + B` of RGB ones (weights 1, 2, 1; [`ThumbFrame::weights`]). The sums are
//! integers, so both backends give the same thumbnail bit for bit; [`mean8`] scales a sum
//! to the mean on an 8-bit scale.
//!
//! One code path for the host and the GPU: [`cell_sum`] is one cell; the GPU kernel
//! (`kernels.rs`: `thumb_cells`) runs [`thread_sum`] in every thread of one block per cell.

mod kernels;

use crate::channel::{Channel, load};

/// Cells per row of a thumbnail.
pub const COLS: u32 = 32;
/// Rows of cells.
pub const ROWS: u32 = 18;
/// Cells of a thumbnail.
pub const CELLS: usize = (COLS * ROWS) as usize;
/// Threads per block of `thumb_cells` (one block per cell).
pub const BLOCK: u32 = 128;
/// Warps per block.
pub const WARPS: usize = BLOCK as usize / 32;

/// The luma of one frame as the thumbnail reads it. Crosses the kernel boundary by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThumbFrame {
    /// The channels luma is made of: one (Y', gray) or three (R, G, B).
    pub chans: [Channel; 3],
    /// The weight of each channel (`[1, 0, 0]`, or `[1, 2, 1]` for RGB).
    pub weights: [u32; 3],
    /// Channels used: 1 or 3.
    pub count: u32,
    /// Luma size of the frame.
    pub width: u32,
    pub height: u32,
}

impl ThumbFrame {
    /// Columns `x0..x1` and rows `y0..y1` of cell `(cx, cy)` (of which every second row,
    /// from `y0`, is read).
    #[inline(always)]
    pub fn cell(&self, cx: u32, cy: u32) -> (u32, u32, u32, u32) {
        let x0 = (cx as u64 * self.width as u64 / COLS as u64) as u32;
        let x1 = ((cx as u64 + 1) * self.width as u64 / COLS as u64) as u32;
        let y0 = (cy as u64 * self.height as u64 / ROWS as u64) as u32;
        let y1 = ((cy as u64 + 1) * self.height as u64 / ROWS as u64) as u32;
        (x0, x1, y0, y1)
    }

    /// Samples a cell's sum adds (each channel counted once, weights aside).
    #[inline(always)]
    pub fn samples(&self, cx: u32, cy: u32) -> u64 {
        let (x0, x1, y0, y1) = self.cell(cx, cy);
        (x1 - x0) as u64 * (y1 - y0).div_ceil(2) as u64
    }

    /// The sum of the weights (the scale of a weighted sample).
    #[inline(always)]
    pub fn weight(&self) -> u32 {
        let mut w = 0;
        let mut c = 0;
        while c < self.count as usize && c < 3 {
            w += self.weights[c];
            c += 1;
        }
        w
    }
}

/// The weighted luma sample at `(x, y)`.
///
/// # Safety
/// `(x, y)` must lie inside every used channel.
#[inline(always)]
pub unsafe fn sample(f: &ThumbFrame, x: u32, y: u32) -> u64 {
    let mut s = 0u64;
    let mut c = 0;
    while c < f.count as usize && c < 3 {
        let ch = &f.chans[c];
        let row = (ch.ptr + y as u64 * ch.pitch as u64) as *const u8;
        s += f.weights[c] as u64 * unsafe { load(row, x, ch) } as u64;
        c += 1;
    }
    s
}

/// What thread `t` of `threads` adds of cell `(cx, cy)`: samples `t, t + threads, ..` of
/// the cell's read rows, in row-major order.
///
/// # Safety
/// The channels must hold `width`×`height` samples.
#[inline(always)]
pub unsafe fn thread_sum(f: &ThumbFrame, cx: u32, cy: u32, t: u32, threads: u32) -> u64 {
    let (x0, x1, y0, y1) = f.cell(cx, cy);
    let w = x1 - x0;
    if w == 0 {
        return 0;
    }
    let n = w * (y1 - y0).div_ceil(2);
    let mut sum = 0u64;
    let mut i = t;
    while i < n {
        let (x, y) = (x0 + i % w, y0 + 2 * (i / w));
        sum += unsafe { sample(f, x, y) };
        i += threads;
    }
    sum
}

/// The sum of cell `(cx, cy)` on the host: plain 8-bit luma row by row (what the compiler
/// vectorises), anything else sample by sample. Equal to the GPU's block sum.
///
/// # Safety
/// The channels must hold `width`×`height` samples.
pub unsafe fn cell_sum(f: &ThumbFrame, cx: u32, cy: u32) -> u64 {
    let (x0, x1, y0, y1) = f.cell(cx, cy);
    let plain = f.count == 1 && f.chans[0].is_plain_bytes();
    let mut sum = 0u64;
    let mut y = y0;
    while y < y1 {
        if plain {
            let ch = &f.chans[0];
            let row = (ch.ptr + y as u64 * ch.pitch as u64 + x0 as u64) as *const u8;
            // SAFETY: the row holds `width` samples and x1 <= width.
            let bytes = unsafe { core::slice::from_raw_parts(row, (x1 - x0) as usize) };
            sum += f.weights[0] as u64 * bytes.iter().map(|&b| b as u32).sum::<u32>() as u64;
        } else {
            for x in x0..x1 {
                sum += unsafe { sample(f, x, y) };
            }
        }
        y += 2;
    }
    sum
}

/// A cell's mean on an 8-bit scale (0..=255) from its sum.
pub fn mean8(f: &ThumbFrame, cx: u32, cy: u32, sum: u64) -> f32 {
    let n = f.samples(cx, cy) * f.weight() as u64;
    let max = f.chans[0].max.max(1) as f64;
    if n == 0 {
        return 0.0;
    }
    (sum as f64 / n as f64 * 255.0 / max) as f32
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn gray(data: &[u8], w: u32, h: u32) -> ThumbFrame {
        ThumbFrame {
            chans: [
                Channel {
                    ptr: data.as_ptr() as u64,
                    pitch: w,
                    step: 1,
                    sample_bytes: 1,
                    shift: 0,
                    max: 255,
                    _pad: 0,
                },
                Channel::default(),
                Channel::default(),
            ],
            weights: [1, 0, 0],
            count: 1,
            width: w,
            height: h,
        }
    }

    #[test]
    fn cells_tile_the_frame_and_the_thread_split_adds_up_to_the_cell() {
        let (w, h) = (100u32, 37u32);
        let data: Vec<u8> = (0..w * h).map(|i| (i * 7 % 251) as u8).collect();
        let f = gray(&data, w, h);
        let mut covered = 0u64;
        for cy in 0..ROWS {
            for cx in 0..COLS {
                let (x0, x1, y0, y1) = f.cell(cx, cy);
                covered += ((x1 - x0) * (y1 - y0)) as u64;
                let host = unsafe { cell_sum(&f, cx, cy) };
                let split: u64 = (0..5)
                    .map(|t| unsafe { thread_sum(&f, cx, cy, t, 5) })
                    .sum();
                assert_eq!(host, split, "cell {cx},{cy}");
                let mut direct = 0u64;
                for y in (y0..y1).step_by(2) {
                    for x in x0..x1 {
                        direct += data[(y * w + x) as usize] as u64;
                    }
                }
                assert_eq!(host, direct);
            }
        }
        assert_eq!(covered, (w * h) as u64);
    }

    #[test]
    fn a_flat_frame_has_its_value_in_every_cell() {
        let (w, h) = (64u32, 36u32);
        let data = std::vec![200u8; (w * h) as usize];
        let f = gray(&data, w, h);
        for cy in 0..ROWS {
            for cx in 0..COLS {
                let s = unsafe { cell_sum(&f, cx, cy) };
                assert_eq!(mean8(&f, cx, cy, s), 200.0);
            }
        }
    }
}
