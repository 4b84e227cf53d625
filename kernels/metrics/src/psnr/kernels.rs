//! The PSNR kernel: a thin `kernel!` declaration over its device-only body, which strides
//! over the rows of each channel pair with [`super::pixel_sse`] and reduces the sums through
//! warp shuffles and shared memory (one atomic add per block).

#[cfg(target_arch = "nvptx64")]
use super::{BLOCK, PsnrPlanes, WARPS, pixel_sse};
#[cfg(target_arch = "nvptx64")]
use crate::channel::MAX_CHANNELS;
#[cfg(target_arch = "nvptx64")]
use gpumetrics_device as dev;

gpumetrics_device::kernel! {
    /// Adds each channel's sum of squared errors to `out[channel]`, and zeroes
    /// `clear[0..MAX_CHANNELS]` for the next pair (so no separate memset is queued per
    /// pair: callers alternate two result slots). Launch with `BLOCK` threads,
    /// grid.z = `planes.count`, any grid.x: blocks stride over rows, threads over columns,
    /// one atomic add per block.
    pub unsafe fn psnr_sse(planes: PsnrPlanes, out: *mut u64, clear: *mut u64) => sse;
}

/// The body of the `psnr_sse` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn sse(planes: PsnrPlanes, out: *mut u64, clear: *mut u64) {
    gpumetrics_device::shared!(static PSNR_WARP_SUMS: [u64; WARPS]);
    let c = dev::block_idx_z();
    if c >= planes.count {
        return;
    }
    if dev::block_idx_x() == 0 && dev::thread_idx_x() < MAX_CHANNELS as u32 && c == 0 {
        unsafe { *clear.add(dev::thread_idx_x() as usize) = 0 };
    }
    // Constant indices keep the parameter struct in registers; indexing it with `c`
    // would copy it to local memory.
    let pair = match c {
        0 => planes.pairs[0],
        1 => planes.pairs[1],
        _ => planes.pairs[2],
    };
    let pair = &pair;
    let mut sum = 0u64;
    let mut y = dev::block_idx_x();
    while y < pair.height {
        let a_row = (pair.reference.ptr + y as u64 * pair.reference.pitch as u64) as *const u8;
        let b_row = (pair.distorted.ptr + y as u64 * pair.distorted.pitch as u64) as *const u8;
        let mut x = dev::thread_idx_x();
        while x < pair.width {
            sum += unsafe { pixel_sse(a_row, b_row, x, pair) };
            x += BLOCK;
        }
        y += dev::grid_dim_x();
    }
    // Warp reduction, then one partial per warp through shared memory.
    let mut delta = 16;
    while delta > 0 {
        sum += unsafe { dev::shfl_down(dev::FULL_MASK, sum, delta) };
        delta /= 2;
    }
    let t = dev::thread_idx_x();
    if dev::lane_id() == 0 {
        unsafe { PSNR_WARP_SUMS.write((t / 32) as usize, sum) };
    }
    unsafe { dev::sync_threads() };
    if t == 0 {
        let mut total = 0u64;
        for w in 0..PSNR_WARP_SUMS.len() {
            total += unsafe { PSNR_WARP_SUMS.read(w) };
        }
        unsafe { dev::atomic_add_u64(out.add(c as usize), total) };
    }
}
