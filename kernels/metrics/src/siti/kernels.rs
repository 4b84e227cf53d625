//! The SI/TI kernels: thin `kernel!` declarations over device-only bodies. Both run on
//! grid.x = [`super::blocks`] blocks of [`super::BLOCK`] threads; block b takes the tiles
//! b, b + grid.x, .. ([`super::TILE_W`]×[`super::TILE_H`] pixels each): the block converts
//! the tile's samples and their one-sample halo once into shared memory, then every
//! thread runs [`super::thread_sums`] over its column of [`super::ROWS`] rows. The thread
//! sums are reduced through warp shuffles and shared memory in a fixed order into one
//! (gradient, motion) pair of f64 partials per block: no atomics, so the sums are the same
//! on every run.

#[cfg(target_arch = "nvptx64")]
use super::{
    BLOCK, Luma, TILE_LEN, TILE_LOADS, WARPS, counts, thread_sums, tile_origin, tile_sample_as,
    tiles,
};
#[cfg(target_arch = "nvptx64")]
use gpumetrics_device as dev;

gpumetrics_device::kernel! {
    /// First pass: `out[2b]` and `out[2b + 1]` become block b's sums of the gradient
    /// magnitudes (inner pixels) and of the motion against `prev` (the previous frame's
    /// full-range luma, `width · height` values; all 0 when `first` ≠ 0). Launch `BLOCK`
    /// threads on grid.x = `blocks(width, height)`; `out` holds 2·grid.x values.
    pub unsafe fn siti_sums(l: Luma, prev: *const u16, first: u32, out: *mut f64) => sums;

    /// Second pass, after `siti_sums` wrote `sums` (2·grid.x values) on the same grid:
    /// warp 0 of every block adds the partials into the means (in one fixed order, so every
    /// block uses the same means), then `out[2b]`, `out[2b + 1]` become block b's sums of
    /// the squared deviations (`sq_dev`) of the gradient and of the motion, and `prev` this
    /// frame's full-range luma.
    pub unsafe fn siti_deviations(
        l: Luma,
        prev: *mut u16,
        first: u32,
        sums: *const f64,
        out: *mut f64,
    ) => deviations;
}

/// The body of the `siti_sums` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn sums(l: Luma, prev: *const u16, first: u32, out: *mut f64) {
    let (g, m) = unsafe { block_tiles(&l, prev as *mut u16, first != 0, None) };
    unsafe { block_partials(g, m, out) };
}

/// The body of the `siti_deviations` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn deviations(l: Luma, prev: *mut u16, first: u32, sums: *const f64, out: *mut f64) {
    gpumetrics_device::shared!(static SITI_MEANS: [f64; 2]);
    if dev::thread_idx_x() < 32 {
        // Lane i adds partials i, i + 32, ..; the butterfly then gives every lane the same
        // totals (each step adds a pair in both orders: equal).
        let blocks = dev::grid_dim_x();
        let (mut g, mut m) = (0.0f64, 0.0f64);
        let mut b = dev::lane_id();
        // Eight partials of the lane per round, in straight-line code (the same order as
        // one at a time): the scheduler issues the eight loads before the adds.
        while b + 7 * 32 < blocks {
            let p = unsafe { sums.add(2 * b as usize) };
            let mut k = 0;
            while k < 8 {
                g += unsafe { *p.add(64 * k) };
                m += unsafe { *p.add(64 * k + 1) };
                k += 1;
            }
            b += 8 * 32;
        }
        while b < blocks {
            g += unsafe { *sums.add(2 * b as usize) };
            m += unsafe { *sums.add(2 * b as usize + 1) };
            b += 32;
        }
        let mut mask = 16;
        while mask > 0 {
            g += unsafe { dev::shfl_xor(dev::FULL_MASK, g, mask) };
            m += unsafe { dev::shfl_xor(dev::FULL_MASK, m, mask) };
            mask /= 2;
        }
        // Lane 0 stores the gradient's mean, lane 1 the motion's (all lanes hold both
        // totals).
        let lane = dev::lane_id();
        if lane < 2 {
            let (ng, nm) = counts(l.width, l.height);
            let mean = if lane == 0 {
                g / ng as f64
            } else {
                m / nm as f64
            };
            unsafe { SITI_MEANS.write(lane as usize, mean) };
        }
    }
    // Published by the barrier after the block's first tile fill, which the other warps
    // do meanwhile.
    let (g, m) = unsafe { block_tiles(&l, prev, first != 0, Some(SITI_MEANS)) };
    unsafe { block_partials(g, m, out) };
}

/// This thread's sums over the block's tiles (b, b + grid.x, ..): per tile the block fills
/// the shared sample buffer ([`tile_sample`]), then every thread adds its pixels
/// ([`thread_sums`]); with `means` (the second pass), their squared deviations from the
/// means in that shared array, read after the first tile's barrier.
///
/// # Safety
/// As [`thread_sums`]; every thread of the block must call it (it synchronises); `means`
/// must have been written before the call and not be written during it.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn block_tiles(
    l: &Luma,
    prev: *mut u16,
    first: bool,
    means: Option<dev::SharedArray<f64, 2>>,
) -> (f64, f64) {
    gpumetrics_device::shared!(static SITI_TILE: [u32; TILE_LEN]);
    let t = dev::thread_idx_x();
    let (tx, ty) = tiles(l.width, l.height);
    let count = tx * ty;
    let mut acc = (0.0f64, 0.0f64);
    // Block-uniform loop: every thread reaches the same barriers.
    let mut tile = dev::block_idx_x();
    while tile < count {
        let origin = tile_origin(tile, l.width);
        if tile != dev::block_idx_x() {
            // The previous tile's reads are done before its buffer is overwritten.
            unsafe { dev::sync_threads() };
        }
        // Block-uniform: one straight-line fill per sample size and range.
        match (l.chan.sample_bytes == 2, l.full_range != 0) {
            (false, false) => unsafe { fill::<false, false>(l, origin, t, SITI_TILE) },
            (false, true) => unsafe { fill::<false, true>(l, origin, t, SITI_TILE) },
            (true, false) => unsafe { fill::<true, false>(l, origin, t, SITI_TILE) },
            (true, true) => unsafe { fill::<true, true>(l, origin, t, SITI_TILE) },
        }
        unsafe { dev::sync_threads() };
        let means = means.map(|s| unsafe { (s.read(0), s.read(1)) });
        let read = |i: u32| unsafe { SITI_TILE.read(i as usize) };
        acc = unsafe { thread_sums(l, read, origin, prev, first, means, t, acc) };
        tile += dev::grid_dim_x();
    }
    acc
}

/// Thread `t`'s entries t, t + BLOCK, .. of the buffer of the tile at `origin`
/// ([`tile_sample_as`]): all loads first (unrolled, independent, no branch; a round past
/// the buffer loads its last entry again), then the stores.
///
/// # Safety
/// As [`tile_sample_as`]; `tile` is the block's buffer, not read by any thread until the
/// block synchronises.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn fill<const WIDE: bool, const FULL: bool>(
    l: &Luma,
    origin: (u32, u32),
    t: u32,
    tile: dev::SharedArray<u32, TILE_LEN>,
) {
    // Unrolled by hand (LLVM keeps the loop, and the array in local memory); the array's
    // type fails to compile if `TILE_LOADS` changes without this list.
    macro_rules! loads {
        ($($k:literal)*) => {
            [$({
                let i = (t + $k * BLOCK).min(TILE_LEN as u32 - 1);
                unsafe { tile_sample_as::<WIDE, FULL>(l, origin, i) }
            }),*]
        };
    }
    let v: [u32; TILE_LOADS as usize] = loads!(0 1 2 3 4 5 6 7 8 9);
    for (k, v) in v.iter().enumerate() {
        let i = t + k as u32 * BLOCK;
        if i < TILE_LEN as u32 {
            unsafe { tile.write(i as usize, *v) };
        }
    }
}

/// Reduces the block's thread sums (shuffles down each warp, then thread 0 adds the warps
/// in order) and writes them to `out[2b]`, `out[2b + 1]`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn block_partials(mut g: f64, mut m: f64, out: *mut f64) {
    gpumetrics_device::shared!(static SITI_WARP_SUMS: [f64; 2 * WARPS]);
    let mut delta = 16;
    while delta > 0 {
        g += unsafe { dev::shfl_down(dev::FULL_MASK, g, delta) };
        m += unsafe { dev::shfl_down(dev::FULL_MASK, m, delta) };
        delta /= 2;
    }
    let t = dev::thread_idx_x();
    if dev::lane_id() == 0 {
        let w = (t / 32) as usize;
        unsafe {
            SITI_WARP_SUMS.write(2 * w, g);
            SITI_WARP_SUMS.write(2 * w + 1, m);
        }
    }
    unsafe { dev::sync_threads() };
    if t == 0 {
        let (mut tg, mut tm) = (0.0f64, 0.0f64);
        for w in 0..WARPS {
            tg += unsafe { SITI_WARP_SUMS.read(2 * w) };
            tm += unsafe { SITI_WARP_SUMS.read(2 * w + 1) };
        }
        let b = dev::block_idx_x() as usize;
        unsafe {
            *out.add(2 * b) = tg;
            *out.add(2 * b + 1) = tm;
        }
    }
}
