//! The XPSNR kernels: thin `kernel!` declarations over their device-only bodies.
//!
//! * `xpsnr_blocks`: one block of [`super::BLOCK`] threads per XPSNR block; every thread runs
//!   [`super::block_part`], the block adds the five integer sums through warp shuffles and
//!   shared memory, and its first thread writes the block's SSEs and weight
//!   ([`super::weight`]). The reference luma of the block goes to the history on the way.
//!   Plain stores of whole values: no atomics, nothing to clear between pairs.
//! * `xpsnr_finish`: one block of [`super::FINISH`] threads smooths the weights (one thread,
//!   [`super::smooth`], in shared memory when they fit) and adds each plane's weighted SSEs
//!   ([`super::weighted_part`], then the tree of [`super::tree_sum`]), writing the
//!   distortions: the order of the host's [`super::finish`], so both give the same values.

#[cfg(target_arch = "nvptx64")]
use super::{
    BLOCK, FINISH, FINISH_THREADS, Grid, History, SMOOTH_SHARED, SUMS, Sums, WARPS, XpsnrPlanes,
    block_part, distortion, smooth, weight, weighted_part,
};
#[cfg(target_arch = "nvptx64")]
use gpumetrics_device as dev;

gpumetrics_device::kernel! {
    /// The sums of every XPSNR block of a pair: block (i, j) writes its SSE of plane c to
    /// `sse[c · n + j · cols + i]` (n = `grid.blocks()`) and its weight to
    /// `weights[j · cols + i]`, and the reference luma of its activity region's block to
    /// the history's write buffer (`history.write`). Launch `BLOCK` threads on grid
    /// (`grid.cols`, `grid.rows`); for an unweighted frame one block on grid (1, 1), which
    /// writes each plane's SSE and touches no history. `sse` holds `grid.planes · n`
    /// values, `weights` n.
    pub unsafe fn xpsnr_blocks(
        grid: Grid,
        planes: XpsnrPlanes,
        history: History,
        sse: *mut u64,
        weights: *mut f64,
    ) => blocks;

    /// Each plane's distortion from the sums of `xpsnr_blocks` (after it, on the same
    /// stream): `out[c]` for the `grid.planes` planes. The weights are smoothed in place
    /// (in `weights` itself when there are more than `SMOOTH_SHARED`). Launch `FINISH`
    /// threads on one block.
    pub unsafe fn xpsnr_finish(
        grid: Grid,
        sse: *const u64,
        weights: *mut f64,
        out: *mut u64,
    ) => finish;
}

/// The sum of `v` over the warp, in lane 0.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn warp_sum(mut v: u64) -> u64 {
    let mut delta = 16;
    while delta > 0 {
        v += unsafe { dev::shfl_down(dev::FULL_MASK, v, delta) };
        delta /= 2;
    }
    v
}

/// The body of the `xpsnr_blocks` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn blocks(
    grid: Grid,
    planes: XpsnrPlanes,
    history: History,
    sse: *mut u64,
    weights: *mut f64,
) {
    gpumetrics_device::shared!(static XPSNR_BLOCK_SUMS: [u64; SUMS * WARPS]);
    let (i, j, t) = (dev::block_idx_x(), dev::block_idx_y(), dev::thread_idx_x());
    let part = unsafe { block_part(&grid, &planes, &history, i, j, t, BLOCK) }.to_array();
    let warp = (t / 32) as usize;
    unroll!(k in [0 1 2 3 4] {
        let v = unsafe { warp_sum(part[k]) };
        if dev::lane_id() == 0 {
            unsafe { XPSNR_BLOCK_SUMS.write(k * WARPS + warp, v) };
        }
    });
    unsafe { dev::sync_threads() };
    if t != 0 {
        return;
    }
    let mut total = [0u64; SUMS];
    unroll!(k in [0 1 2 3 4] {
        let mut w = 0;
        while w < WARPS {
            total[k] += unsafe { XPSNR_BLOCK_SUMS.read(k * WARPS + w) };
            w += 1;
        }
    });
    let s = Sums::from_array(total);
    let n = grid.blocks() as usize;
    let at = (j * grid.cols + i) as usize;
    let w = if grid.weighted() {
        weight(&grid, &grid.span(i, j), s.spatial, s.temporal)
    } else {
        1.0
    };
    // SAFETY: the launch's contract: `sse` holds `planes · n` values, `weights` n, and
    // block (i, j) alone writes index `at`.
    unsafe {
        *sse.add(at) = s.sse[0];
        if grid.planes > 1 {
            *sse.add(n + at) = s.sse[1];
            *sse.add(2 * n + at) = s.sse[2];
        }
        *weights.add(at) = w;
    }
}

/// The body of the `xpsnr_finish` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn finish(grid: Grid, sse: *const u64, weights: *mut f64, out: *mut u64) {
    gpumetrics_device::shared!(static XPSNR_WEIGHTS: [f64; SMOOTH_SHARED]);
    gpumetrics_device::shared!(static XPSNR_PARTIALS: [f64; FINISH_THREADS]);
    let t = dev::thread_idx_x();
    if !grid.weighted() {
        if t < grid.planes {
            unsafe { *out.add(t as usize) = *sse.add(t as usize) };
        }
        return;
    }
    let n = grid.blocks();
    let mut w = weights;
    if grid.smooth != 0 {
        if n as usize <= SMOOTH_SHARED {
            let mut k = t;
            while k < n {
                unsafe { XPSNR_WEIGHTS.write(k as usize, *weights.add(k as usize)) };
                k += FINISH;
            }
            w = XPSNR_WEIGHTS.as_mut_ptr();
        }
        unsafe { dev::sync_threads() };
        if t == 0 {
            // SAFETY: `w` holds n weights, which the other threads wait for below.
            unsafe { smooth(w, n, grid.cols) };
        }
        unsafe { dev::sync_threads() };
    }
    let mut c = 0;
    while c < grid.planes {
        let plane = unsafe { sse.add(c as usize * n as usize) };
        let part = unsafe { weighted_part(plane, w, n, t, FINISH) };
        unsafe { XPSNR_PARTIALS.write(t as usize, part) };
        unsafe { dev::sync_threads() };
        let mut half = FINISH / 2;
        while half > 0 {
            if t < half {
                let (a, b) = unsafe {
                    (
                        XPSNR_PARTIALS.read(t as usize),
                        XPSNR_PARTIALS.read((t + half) as usize),
                    )
                };
                unsafe { XPSNR_PARTIALS.write(t as usize, a + b) };
            }
            unsafe { dev::sync_threads() };
            half /= 2;
        }
        if t == 0 {
            let total = unsafe { XPSNR_PARTIALS.read(0) };
            unsafe { *out.add(c as usize) = distortion(total, grid.scale) };
        }
        unsafe { dev::sync_threads() };
        c += 1;
    }
}
