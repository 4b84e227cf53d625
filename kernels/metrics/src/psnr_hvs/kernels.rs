//! The PSNR-HVS kernels: thin `kernel!` declarations over their device-only bodies. Three
//! passes per pair, every plane in one grid (grid.z = plane), one thread per 8×8 block:
//! `psnr_hvs_terms` writes each block's error terms ([`super::block_terms`]) and each
//! thread block's exact sum of them; `psnr_hvs_scan` turns those sums into the exact sum
//! before each thread block; `psnr_hvs_sums` walks every block's terms from the exact sum
//! before it ([`super::block_contribution`]) and adds what libvmaf's single-precision sum
//! gains over the block to the plane's result.

#[cfg(target_arch = "nvptx64")]
use super::{
    COEFFS, HvsPlane, HvsPlanes, SCAN_THREADS, SCAN_WARPS, TILE, WARPS, WEIGHTS, Weights,
    block_contribution, block_terms, tiles,
};
#[cfg(target_arch = "nvptx64")]
use crate::channel::MAX_CHANNELS;
#[cfg(target_arch = "nvptx64")]
use gpumetrics_device::{self as dev, SharedArray};

gpumetrics_device::kernel! {
    /// Pass 1: the error terms of every block of every plane (to `plane.terms`) and, per
    /// thread block, the f64 sum of its blocks' terms (to `plane.tile_sums[tile]`). Launch
    /// with `TILE` threads, grid.x = the largest `tiles(blocks)` of the planes, grid.z =
    /// `planes.count`.
    pub unsafe fn psnr_hvs_terms(planes: HvsPlanes) => terms;

    /// Pass 2: replaces each plane's tile sums, in place, by the sum of the tiles before
    /// each (an exclusive prefix). Launch with `SCAN_THREADS` threads, grid = (1, 1,
    /// `planes.count`).
    pub unsafe fn psnr_hvs_scan(planes: HvsPlanes) => scan;

    /// Pass 3: adds each plane's emulated single-precision sum of its terms to
    /// `out[plane]`, and zeroes `clear[0..MAX_CHANNELS]` for the next pair (callers
    /// alternate two result slots). Launch as `psnr_hvs_terms`.
    pub unsafe fn psnr_hvs_sums(planes: HvsPlanes, out: *mut f64, clear: *mut f64) => sums;
}

/// Plane `c` of the launch, by constant index: indexing the parameter struct with `c`
/// would copy it to local memory.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn plane(planes: &HvsPlanes, c: u32) -> HvsPlane {
    match c {
        0 => planes.planes[0],
        1 => planes.planes[1],
        _ => planes.planes[2],
    }
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn weights(table: u32) -> &'static Weights {
    match table {
        0 => &WEIGHTS[0],
        1 => &WEIGHTS[1],
        _ => &WEIGHTS[2],
    }
}

/// The sum of `v` over the thread block, given to every thread; `partials` is free again
/// when it returns.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn tile_total(mut v: f64, partials: SharedArray<f64, WARPS>) -> f64 {
    let mut delta = 16;
    while delta > 0 {
        v += unsafe { dev::shfl_down(dev::FULL_MASK, v, delta) };
        delta /= 2;
    }
    if dev::lane_id() == 0 {
        unsafe { partials.write((dev::thread_idx_x() / 32) as usize, v) };
    }
    unsafe { dev::sync_threads() };
    let mut total = 0.0;
    for w in 0..WARPS {
        total += unsafe { partials.read(w) };
    }
    unsafe { dev::sync_threads() };
    total
}

/// The body of the `psnr_hvs_terms` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn terms(planes: HvsPlanes) {
    gpumetrics_device::shared!(static PHVS_TERM_PARTIALS: [f64; WARPS]);
    let c = dev::block_idx_z();
    if c >= planes.count {
        return;
    }
    let p = plane(&planes, c);
    let tile = dev::block_idx_x();
    if tile >= tiles(p.blocks) {
        return; // the whole thread block: no barrier is skipped by part of it
    }
    let w = weights(p.table);
    let b = tile * TILE + dev::thread_idx_x();
    let mut sum = 0.0f64;
    if b < p.blocks {
        let out = p.terms as *mut f32;
        let n = p.blocks as usize;
        // SAFETY: the launcher validated the planes; `terms` holds 64 values per block.
        unsafe {
            block_terms(&p, b, w, |k, t| {
                *out.add(k * n + b as usize) = t;
                sum += t as f64;
            })
        };
    }
    let total = unsafe { tile_total(sum, PHVS_TERM_PARTIALS) };
    if dev::thread_idx_x() == 0 {
        unsafe { *(p.tile_sums as *mut f64).add(tile as usize) = total };
    }
}

/// The body of the `psnr_hvs_scan` kernel (declared above): each thread sums a run of
/// consecutive tiles, the runs' totals are scanned through warp shuffles, then each thread
/// writes its run's prefixes.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn scan(planes: HvsPlanes) {
    gpumetrics_device::shared!(static PHVS_SCAN_WARPS: [f64; SCAN_WARPS]);
    let c = dev::block_idx_z();
    if c >= planes.count {
        return;
    }
    let p = plane(&planes, c);
    let sums = p.tile_sums as *mut f64;
    let n = tiles(p.blocks);
    let t = dev::thread_idx_x();
    let run = n.div_ceil(SCAN_THREADS);
    let start = (t * run).min(n);
    let end = (start + run).min(n);
    let mut own = 0.0f64;
    for i in start..end {
        own += unsafe { *sums.add(i as usize) };
    }
    let lane = dev::lane_id();
    // Inclusive scan of the runs' totals within the warp.
    let mut inclusive = own;
    let mut delta = 1;
    while delta < 32 {
        let v = unsafe { dev::shfl_up(dev::FULL_MASK, inclusive, delta) };
        if lane >= delta {
            inclusive += v;
        }
        delta *= 2;
    }
    let warp = (t / 32) as usize;
    if lane == 31 {
        unsafe { PHVS_SCAN_WARPS.write(warp, inclusive) };
    }
    unsafe { dev::sync_threads() };
    if warp == 0 {
        // The warps' totals, scanned the same way by the first warp, made exclusive.
        let total = unsafe { PHVS_SCAN_WARPS.read(lane as usize) };
        let mut inc = total;
        let mut delta = 1;
        while delta < 32 {
            let v = unsafe { dev::shfl_up(dev::FULL_MASK, inc, delta) };
            if lane >= delta {
                inc += v;
            }
            delta *= 2;
        }
        unsafe { PHVS_SCAN_WARPS.write(lane as usize, inc - total) };
    }
    unsafe { dev::sync_threads() };
    let mut before = unsafe { PHVS_SCAN_WARPS.read(warp) } + (inclusive - own);
    for i in start..end {
        let slot = unsafe { sums.add(i as usize) };
        let v = unsafe { *slot };
        unsafe { *slot = before };
        before += v;
    }
}

/// The body of the `psnr_hvs_sums` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn sums(planes: HvsPlanes, out: *mut f64, clear: *mut f64) {
    gpumetrics_device::shared!(static PHVS_SUM_PARTIALS: [f64; WARPS]);
    gpumetrics_device::shared!(static PHVS_BLOCK_SUMS: [f64; 32 * WARPS]);
    let c = dev::block_idx_z();
    if c >= planes.count {
        return;
    }
    let t = dev::thread_idx_x();
    if c == 0 && dev::block_idx_x() == 0 && (t as usize) < MAX_CHANNELS {
        unsafe { *clear.add(t as usize) = 0.0 };
    }
    let p = plane(&planes, c);
    let tile = dev::block_idx_x();
    if tile >= tiles(p.blocks) {
        return; // the whole thread block
    }
    let b = tile * TILE + t;
    // The block's terms, all loaded at once into registers (one by one, each load would
    // wait for the one before).
    let mut terms = [0.0f32; COEFFS];
    let mut own = 0.0f64;
    if b < p.blocks {
        let (at, n) = (p.terms as *const f32, p.blocks as usize);
        each_coeff!(k {
            terms[k] = unsafe { *at.add(k * n + b as usize) };
        });
        each_coeff!(k {
            own += terms[k] as f64;
        });
    }
    unsafe { PHVS_BLOCK_SUMS.write(t as usize, own) };
    unsafe { dev::sync_threads() };
    // The exact sum of every term before this block: the tiles before (pass 2), then the
    // blocks before it in this tile, in order.
    let mut before = unsafe { *(p.tile_sums as *const f64).add(tile as usize) };
    for j in 0..t as usize {
        before += unsafe { PHVS_BLOCK_SUMS.read(j) };
    }
    let gained = if b < p.blocks {
        block_contribution(before, |k| terms[k])
    } else {
        0.0
    };
    let total = unsafe { tile_total(gained, PHVS_SUM_PARTIALS) };
    if t == 0 {
        unsafe { dev::atomic_add_f64(out.add(c as usize), total) };
    }
}
