//! The black kernel: a thin `kernel!` declaration over its device-only body. Every thread
//! runs [`super::thread_count`] ([`super::BLOCK`] threads per block, grid.x =
//! [`super::blocks`] of the height), the block adds its threads' counts through warp
//! shuffles and shared memory and writes one partial count: no atomics and no buffer to
//! clear between frames.

#[cfg(target_arch = "nvptx64")]
use super::{BlackLuma, WARPS, thread_count};
#[cfg(target_arch = "nvptx64")]
use gpumetrics_device as dev;

gpumetrics_device::kernel! {
    /// `out[b]` becomes the number of black luma samples (`<= l.threshold`) in the rows
    /// block b visits (`b, b + grid.x, ..`). Launch `BLOCK` threads on grid.x =
    /// `blocks(height)`; `out` holds grid.x values.
    pub unsafe fn black_count(l: BlackLuma, out: *mut u32) => count;
}

/// The body of the `black_count` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn count(l: BlackLuma, out: *mut u32) {
    gpumetrics_device::shared!(static BLACK_WARP_COUNTS: [u32; WARPS]);
    let mut n = unsafe {
        thread_count(
            &l,
            dev::block_idx_x(),
            dev::grid_dim_x(),
            dev::thread_idx_x(),
        )
    };
    let mut delta = 16;
    while delta > 0 {
        n += unsafe { dev::shfl_down(dev::FULL_MASK, n, delta) };
        delta /= 2;
    }
    let t = dev::thread_idx_x();
    if dev::lane_id() == 0 {
        unsafe { BLACK_WARP_COUNTS.write((t / 32) as usize, n) };
    }
    unsafe { dev::sync_threads() };
    if t == 0 {
        let mut total = 0u32;
        for w in 0..WARPS {
            total += unsafe { BLACK_WARP_COUNTS.read(w) };
        }
        unsafe { *out.add(dev::block_idx_x() as usize) = total };
    }
}
