//! The blockiness kernels: `blockiness_profiles` adds one frame's gradients to both
//! profiles, `blockiness_periods` searches the periods and writes the frame's value.
//!
//! # Thread mapping
//! `blockiness_profiles` runs `BLOCK` threads per CUDA block; the first
//! `profile_blocks(w, h).0` blocks own `LANES` profile columns each, the others `LANES`
//! profile rows each. A block walks its columns' rows (its rows' columns) in tiles of
//! `TILE`: all threads compute the tile's gradients into shared memory (coalesced reads
//! along rows), then warp 0, one lane per column (row), adds the tile's values to its
//! running f32 sum in row (column) order: FFmpeg's order of additions. `blockiness_periods`
//! is one block: thread t < 2·periods computes the ratio of one (direction, period), thread
//! 0 keeps the largest in FFmpeg's order.

#[cfg(target_arch = "nvptx64")]
use super::{
    LANES, PERIOD_SLOTS, STRIDE, TILE, TILE_LEN, col_grad, keep_larger, period_ratio, periods,
    profile_blocks, row_grad, span,
};
#[cfg(target_arch = "nvptx64")]
use super::Params;
#[cfg(target_arch = "nvptx64")]
use gpumetrics_device as dev;

gpumetrics_device::kernel! {
    /// Adds the frame's gradients to `cols` (w values) and `rows` (h values), starting
    /// from 0 when `p.first` ≠ 0. Launch `BLOCK` threads on grid.x = the sum of
    /// `profile_blocks(w, h)`.
    pub unsafe fn blockiness_profiles(p: Params, cols: *mut f32, rows: *mut f32) => profiles;

    /// `out[0]` = the frame's blockiness (possibly NaN) from the profiles. Launch one block
    /// of `PERIOD_THREADS` threads.
    pub unsafe fn blockiness_periods(
        p: Params,
        cols: *const f32,
        rows: *const f32,
        out: *mut f32,
    ) => periods_body;
}

/// The body of `blockiness_profiles`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn profiles(p: Params, cols: *mut f32, rows: *mut f32) {
    gpumetrics_device::shared!(static BLK_TILE: [f32; TILE_LEN]);
    let l = p.luma;
    let (w, h) = (l.width, l.height);
    let t = dev::thread_idx_x();
    let b = dev::block_idx_x();
    let (col_blocks, _) = profile_blocks(w, h);
    let warp0 = t < 32;
    if b < col_blocks {
        let (_, end) = span(w);
        let lane = t % LANES;
        let x = 3 + b * LANES + lane;
        let mine = x < end;
        let mut acc = if warp0 && mine && p.first == 0 {
            unsafe { *cols.add(x as usize) }
        } else {
            0.0
        };
        let mut y0 = 1;
        while y0 < h {
            let mut r = t / LANES;
            while r < TILE {
                let y = y0 + r;
                let v = if mine && y < h {
                    unsafe { col_grad(&l, x, y) }
                } else {
                    0.0
                };
                unsafe { BLK_TILE.write((r * LANES + lane) as usize, v) };
                r += dev::block_dim_x() / LANES;
            }
            unsafe { dev::sync_threads() };
            if warp0 {
                let n = if h - y0 < TILE { h - y0 } else { TILE };
                for r in 0..n {
                    acc += unsafe { BLK_TILE.read((r * LANES + lane) as usize) };
                }
            }
            unsafe { dev::sync_threads() };
            y0 += TILE;
        }
        if warp0 && mine {
            unsafe { *cols.add(x as usize) = acc };
        }
    } else {
        let (_, end) = span(h);
        let first_row = 3 + (b - col_blocks) * LANES;
        let lane_row = first_row + t % LANES;
        let mine = warp0 && lane_row < end;
        let mut acc = if mine && p.first == 0 {
            unsafe { *rows.add(lane_row as usize) }
        } else {
            0.0
        };
        let c = t % TILE;
        let mut x0 = 1;
        while x0 < w {
            let x = x0 + c;
            let mut r = t / TILE;
            while r < LANES {
                let y = first_row + r;
                let v = if y < end && x < w {
                    unsafe { row_grad(&l, x, y) }
                } else {
                    0.0
                };
                unsafe { BLK_TILE.write((r * STRIDE + c) as usize, v) };
                r += dev::block_dim_x() / TILE;
            }
            unsafe { dev::sync_threads() };
            if warp0 {
                let n = if w - x0 < TILE { w - x0 } else { TILE };
                let lane = t % LANES;
                for c in 0..n {
                    acc += unsafe { BLK_TILE.read((lane * STRIDE + c) as usize) };
                }
            }
            unsafe { dev::sync_threads() };
            x0 += TILE;
        }
        if mine {
            unsafe { *rows.add(lane_row as usize) = acc };
        }
    }
}

/// The body of `blockiness_periods`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn periods_body(p: Params, cols: *const f32, rows: *const f32, out: *mut f32) {
    gpumetrics_device::shared!(static BLK_RATIOS: [f32; PERIOD_SLOTS]);
    gpumetrics_device::shared!(static BLK_VALID: [u32; PERIOD_SLOTS]);
    let np = periods(&p);
    let t = dev::thread_idx_x();
    if t < 2 * np {
        let (prof, n) = if t < np {
            (cols, p.luma.width)
        } else {
            (rows as *const f32, p.luma.height)
        };
        let r = unsafe { period_ratio(prof, n, p.period_min + t % np) };
        unsafe {
            BLK_RATIOS.write(t as usize, r.unwrap_or(0.0));
            BLK_VALID.write(t as usize, r.is_some() as u32);
        }
    }
    unsafe { dev::sync_threads() };
    if t == 0 {
        let mut ret = 0.0f32;
        for i in 0..2 * np {
            if unsafe { BLK_VALID.read(i as usize) } != 0 {
                ret = keep_larger(ret, unsafe { BLK_RATIOS.read(i as usize) });
            }
        }
        unsafe { *out = ret };
    }
}
