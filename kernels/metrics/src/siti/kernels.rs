//! The SI/TI kernel: a thin `kernel!` declaration over a device-only body. It runs on
//! grid.x = [`super::blocks`] blocks of [`super::BLOCK`] threads; block b takes the tiles
//! b, b + grid.x, .. ([`super::TILE_W`]×[`super::TILE_H`] pixels each): the block converts
//! the tile's samples and their one-sample halo once into shared memory, then every
//! thread runs [`super::thread_sums`] over its column of [`super::ROWS`] rows. The thread
//! sums are reduced through warp shuffles and shared memory in a fixed order into four
//! f64 partials per block (gradient, its square, motion, its square): no atomics, so the sums are the same
//! on every run.

#[cfg(target_arch = "nvptx64")]
use super::{
    BLOCK, Luma, Sums, TILE_LEN, TILE_LOADS, ThreadSums, WARPS, thread_sums, tile_origin,
    tile_sample_as, tiles,
};
#[cfg(target_arch = "nvptx64")]
use gpumetrics_device as dev;

gpumetrics_device::kernel! {
    /// `out[4b..4b + 4]` become block b's [`super::Sums`]: the sums of the gradient
    /// magnitudes (inner pixels) and of their squares, of the motion against `prev` (the
    /// previous frame's full-range luma, `width · height` values; all 0 when `first` ≠ 0)
    /// and of its squares; `prev` becomes this frame's full-range luma. Launch `BLOCK`
    /// threads on grid.x = `blocks(width, height)`; `out` holds 4·grid.x values.
    pub unsafe fn siti_sums(l: Luma, prev: *mut u16, first: u32, out: *mut f64) => sums;
}

/// The body of the `siti_sums` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn sums(l: Luma, prev: *mut u16, first: u32, out: *mut f64) {
    let s = unsafe { block_tiles(&l, prev, first != 0) };
    unsafe { block_partials(s, out) };
}

/// This thread's sums over the block's tiles (b, b + grid.x, ..): per tile the block fills
/// the shared sample buffer ([`tile_sample`]), then every thread adds its pixels
/// ([`thread_sums`]).
///
/// # Safety
/// As [`thread_sums`]; every thread of the block must call it (it synchronises).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn block_tiles(l: &Luma, prev: *mut u16, first: bool) -> Sums {
    gpumetrics_device::shared!(static SITI_TILE: [u32; TILE_LEN]);
    let t = dev::thread_idx_x();
    let (tx, ty) = tiles(l.width, l.height);
    let count = tx * ty;
    let mut acc = ThreadSums::default();
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
        // Every index `thread_sums` reads is below TILE_LEN (buffer rows up to TILE_H + 1,
        // columns up to TILE_W + 1): the host test `gpu_order_agrees_with_the_cpu_order`
        // runs every thread of every tile against a TILE_LEN-long, bounds-checked buffer,
        // so the three reads per pixel skip the check here.
        let read = |i: u32| unsafe { SITI_TILE.read_unchecked(i as usize) };
        acc = unsafe { thread_sums(l, read, origin, prev, first, t, acc) };
        tile += dev::grid_dim_x();
    }
    acc.to_sums()
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
/// in order) and writes them to `out[4b..4b + 4]`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn block_partials(mut s: Sums, out: *mut f64) {
    gpumetrics_device::shared!(static SITI_WARP_SUMS: [f64; 4 * WARPS]);
    let mut delta = 16;
    while delta > 0 {
        for v in s.iter_mut() {
            *v += unsafe { dev::shfl_down(dev::FULL_MASK, *v, delta) };
        }
        delta /= 2;
    }
    let t = dev::thread_idx_x();
    if dev::lane_id() == 0 {
        let w = (t / 32) as usize;
        for (k, v) in s.iter().enumerate() {
            unsafe { SITI_WARP_SUMS.write(4 * w + k, *v) };
        }
    }
    unsafe { dev::sync_threads() };
    if t == 0 {
        let mut total = [0.0f64; 4];
        for w in 0..WARPS {
            for (k, v) in total.iter_mut().enumerate() {
                *v += unsafe { SITI_WARP_SUMS.read(4 * w + k) };
            }
        }
        let b = dev::block_idx_x() as usize;
        for (k, v) in total.iter().enumerate() {
            unsafe { *out.add(4 * b + k) = *v };
        }
    }
}
