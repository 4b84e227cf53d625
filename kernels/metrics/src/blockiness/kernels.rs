//! The blockiness kernels: `blockiness_profiles` sums one frame's gradients per band,
//! `blockiness_bands` adds the bands to both profiles, `blockiness_periods` searches the
//! periods and writes the frame's value.
//!
//! # Thread mapping
//! `blockiness_profiles` runs `BLOCK` threads per CUDA block, one block per (group, band)
//! (`part_band`): a group is `LANES` profile columns (the column groups first) or `LANES`
//! profile rows, a band its tile of `TILE` rows (columns) (`tile`). All threads stage the
//! tile's 8-bit samples in shared memory (coalesced reads, each sample converted once:
//! `stage`), then compute its gradients (`tile_grads`), then one thread per column (row)
//! adds them in f32 in row (column) order from 0 (`tile_sum`) and writes the band's sum.
//! `blockiness_bands` runs one thread per profile value (the columns', then the rows'):
//! the value (0 on a first frame) plus its band sums in band order (`add_bands`). The
//! kernel crate's host test `the_kernels_tiles_add_as_the_cpu_backend` runs the same steps
//! thread by thread.
//! `blockiness_periods` runs one warp per (direction, period) pair (`pair`): lane l adds
//! the profile positions 3 + l, 3 + l + 32, .. (`lane_sums`), the shuffle-down tree adds
//! the lanes (`tree` on the host), lane 0 writes the pair's sums; the host keeps the
//! largest ratio in FFmpeg's order (`combine`).

#[cfg(target_arch = "nvptx64")]
use super::Params;
#[cfg(target_arch = "nvptx64")]
use super::{
    GRADS_LEN, SAMPLES_LEN, add_bands, bands, lane_sums, pair, part_band, span, stage, tile,
    tile_grads, tile_sum,
};
#[cfg(target_arch = "nvptx64")]
use gpumetrics_device as dev;

gpumetrics_device::kernel! {
    /// Writes the band sums of the frame's gradients: band k of profile column x at
    /// `col_bands[k·w + x]`, of profile row y at `row_bands[k·h + y]` (profile columns
    /// and rows only). Launch `BLOCK` threads (at least `LANES`) on grid.x =
    /// `profile_grid(w, h)`, `col_bands` holding `bands(h)·w` values, `row_bands`
    /// `bands(w)·h`.
    pub unsafe fn blockiness_profiles(p: Params, col_bands: *mut f32, row_bands: *mut f32)
        => profiles;

    /// Adds the band sums to `cols` (w values) and `rows` (h values), starting from 0 when
    /// `p.first` ≠ 0 (profile columns and rows only). Launch `BANDS_BLOCK` threads on
    /// grid.x covering w + h.
    pub unsafe fn blockiness_bands(
        p: Params,
        cols: *mut f32,
        rows: *mut f32,
        col_bands: *const f32,
        row_bands: *const f32,
    ) => bands_body;

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
unsafe fn profiles(p: Params, col_bands: *mut f32, row_bands: *mut f32) {
    gpumetrics_device::shared!(static BLK_SAMPLES: [u32; SAMPLES_LEN]);
    gpumetrics_device::shared!(static BLK_GRADS: [f32; GRADS_LEN]);
    let l = p.luma;
    let t = dev::thread_idx_x();
    let threads = dev::block_dim_x();
    let (part, k) = part_band(l.width, l.height, dev::block_idx_x());
    // The same for every thread of the block: none returns before a barrier it skips.
    let Some(tl) = tile(&l, &part, k) else {
        return;
    };
    let (s, g) = (BLK_SAMPLES.as_mut_ptr(), BLK_GRADS.as_mut_ptr());
    unsafe { stage(&l, &part, tl, s, t, threads) };
    unsafe { dev::sync_threads() };
    unsafe { tile_grads(&part, tl, s, g, t, threads) };
    unsafe { dev::sync_threads() };
    if t < part.lanes {
        let v = unsafe { tile_sum(&part, tl, g, t, 0.0) };
        let (out, n) = if part.columns {
            (col_bands, l.width)
        } else {
            (row_bands, l.height)
        };
        unsafe { *out.add(k as usize * n as usize + (part.first + t) as usize) = v };
    }
}

/// The body of `blockiness_bands`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn bands_body(
    p: Params,
    cols: *mut f32,
    rows: *mut f32,
    col_bands: *const f32,
    row_bands: *const f32,
) {
    let (w, h) = (p.luma.width, p.luma.height);
    let i = dev::block_idx_x() * dev::block_dim_x() + dev::thread_idx_x();
    let (prof, band_sums, n, i, count) = if i < w {
        (cols, col_bands, w, i, bands(h))
    } else if i - w < h {
        (rows, row_bands, h, i - w, bands(w))
    } else {
        return;
    };
    let (a, b) = span(n);
    if i < a || i >= b {
        return;
    }
    let start = if p.first != 0 {
        0.0
    } else {
        unsafe { *prof.add(i as usize) }
    };
    let v = unsafe { add_bands(start, band_sums, n, i, count) };
    unsafe { *prof.add(i as usize) = v };
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
