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
//! `blockiness_periods` is one block: thread t < 2·periods computes the ratio of one
//! (direction, period), thread 0 keeps the largest in FFmpeg's order.

#[cfg(target_arch = "nvptx64")]
use super::Params;
#[cfg(target_arch = "nvptx64")]
use super::{
    GRADS_LEN, PERIOD_SLOTS, SAMPLES_LEN, keep_larger, part, period_ratio, periods, stage, tile,
    tile_grads, tile_sum,
};
#[cfg(target_arch = "nvptx64")]
use gpumetrics_device as dev;

gpumetrics_device::kernel! {
    /// Adds the frame's gradients to `cols` (w values) and `rows` (h values), starting
    /// from 0 when `p.first` ≠ 0. Launch `BLOCK` threads (at least `LANES`) on grid.x =
    /// the sum of `profile_blocks(w, h)`.
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
