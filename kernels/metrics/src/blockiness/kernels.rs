//! The blockiness kernels: `blockiness_profiles` adds one frame's gradients to both
//! profiles, `blockiness_periods` searches the periods and writes the frame's value.
//!
//! # Thread mapping
//! `blockiness_profiles` runs `BLOCK` threads per CUDA block; the first
//! `profile_blocks(w, h).0` blocks own `LANES` profile columns each, the others `LANES`
//! profile rows each (`part`). A block walks its columns' rows (its rows' columns) in tiles
//! of `TILE` (`tile`): all threads stage the tile's 8-bit samples in shared memory
//! (coalesced reads, each sample converted once: `stage`), then compute its gradients
//! (`tile_grads`), then one thread per column (row) adds them to its running f32 sum in
//! row (column) order (`tile_sum`): FFmpeg's order of additions. The kernel crate's host
//! test `the_kernels_tiles_add_as_the_cpu_backend` runs the same steps thread by thread.
//! `blockiness_periods` runs one warp per (direction, period) pair (`pair`): lane l adds
//! the profile positions 3 + l, 3 + l + 32, .. (`lane_sums`), the shuffle-down tree adds
//! the lanes (`tree` on the host), lane 0 writes the pair's sums; the host keeps the
//! largest ratio in FFmpeg's order (`combine`).

#[cfg(target_arch = "nvptx64")]
use super::Params;
#[cfg(target_arch = "nvptx64")]
use super::{GRADS_LEN, SAMPLES_LEN, lane_sums, pair, part, stage, tile, tile_grads, tile_sum};
#[cfg(target_arch = "nvptx64")]
use gpumetrics_device as dev;

gpumetrics_device::kernel! {
    /// Adds the frame's gradients to `cols` (w values) and `rows` (h values), starting
    /// from 0 when `p.first` ≠ 0. Launch `BLOCK` threads (at least `LANES`) on grid.x =
    /// the sum of `profile_blocks(w, h)`.
    pub unsafe fn blockiness_profiles(p: Params, cols: *mut f32, rows: *mut f32) => profiles;

    /// `out[4j..4j + 4]` = pair j's `PeriodSums` (grid, other, grid count, other count;
    /// the counts as f32, exact). Launch `PERIOD_LANES` threads on grid.x = 2·periods.
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
    gpumetrics_device::shared!(static BLK_SAMPLES: [u32; SAMPLES_LEN]);
    gpumetrics_device::shared!(static BLK_GRADS: [f32; GRADS_LEN]);
    let l = p.luma;
    let t = dev::thread_idx_x();
    let threads = dev::block_dim_x();
    let part = part(l.width, l.height, dev::block_idx_x());
    let prof = if part.columns { cols } else { rows };
    let mine = t < part.lanes;
    let at = (part.first + t) as usize;
    let mut acc = if mine && p.first == 0 {
        unsafe { *prof.add(at) }
    } else {
        0.0
    };
    let (s, g) = (BLK_SAMPLES.as_mut_ptr(), BLK_GRADS.as_mut_ptr());
    let mut k = 0;
    while let Some(tl) = tile(&l, &part, k) {
        unsafe { stage(&l, &part, tl, s, t, threads) };
        unsafe { dev::sync_threads() };
        unsafe { tile_grads(&part, tl, s, g, t, threads) };
        unsafe { dev::sync_threads() };
        if mine {
            acc = unsafe { tile_sum(&part, tl, g, t, acc) };
        }
        unsafe { dev::sync_threads() };
        k += 1;
    }
    if mine {
        unsafe { *prof.add(at) = acc };
    }
}

/// The body of `blockiness_periods`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn periods_body(p: Params, cols: *const f32, rows: *const f32, out: *mut f32) {
    let j = dev::block_idx_x();
    let (columns, period) = pair(&p, j);
    let (prof, n) = if columns {
        (cols, p.luma.width)
    } else {
        (rows, p.luma.height)
    };
    let s = unsafe { lane_sums(prof, n, period, dev::thread_idx_x()) };
    let (mut grid, mut other) = (s.grid, s.other);
    let (mut grid_n, mut other_n) = (s.grid_n, s.other_n);
    let mut delta = 16;
    while delta > 0 {
        grid += unsafe { dev::shfl_down(dev::FULL_MASK, grid, delta) };
        other += unsafe { dev::shfl_down(dev::FULL_MASK, other, delta) };
        grid_n += unsafe { dev::shfl_down(dev::FULL_MASK, grid_n, delta) };
        other_n += unsafe { dev::shfl_down(dev::FULL_MASK, other_n, delta) };
        delta /= 2;
    }
    if dev::thread_idx_x() == 0 {
        let o = 4 * j as usize;
        unsafe {
            *out.add(o) = grid;
            *out.add(o + 1) = other;
            *out.add(o + 2) = grid_n as f32;
            *out.add(o + 3) = other_n as f32;
        }
    }
}
