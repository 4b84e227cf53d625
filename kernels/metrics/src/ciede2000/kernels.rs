//! The CIEDE2000 kernel: a thin `kernel!` declaration over its device-only body, which
//! strides over the luma rows with [`super::pixel`] and reduces the fixed-point sums through
//! warp shuffles and shared memory (one atomic add per block).

#[cfg(target_arch = "nvptx64")]
use super::{BLOCK, CiedePlanes, WARPS, pixel};
#[cfg(target_arch = "nvptx64")]
use gpumetrics_device as dev;

gpumetrics_device::kernel! {
    /// Adds the frame pair's fixed-point ΔE00 sum to `out[0]` and zeroes `clear[0]` for the
    /// next pair (callers alternate two result slots). Launch with `BLOCK` threads and any
    /// grid.x: blocks stride over luma rows, threads over columns.
    pub unsafe fn ciede2000_sums(planes: CiedePlanes, out: *mut u64, clear: *mut u64) => sums;
}

/// The body of the `ciede2000_sums` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn sums(planes: CiedePlanes, out: *mut u64, clear: *mut u64) {
    gpumetrics_device::shared!(static CIEDE_WARP_SUMS: [u64; WARPS]);
    if dev::block_idx_x() == 0 && dev::thread_idx_x() == 0 {
        unsafe { *clear = 0 };
    }
    let p = &planes;
    let mut sum = 0u64;
    let mut y = dev::block_idx_x();
    while y < p.y.height {
        let mut x = dev::thread_idx_x();
        while x < p.y.width {
            sum += unsafe { pixel(p, x, y) };
            x += BLOCK;
        }
        y += dev::grid_dim_x();
    }
    let mut delta = 16;
    while delta > 0 {
        sum += unsafe { dev::shfl_down(dev::FULL_MASK, sum, delta) };
        delta /= 2;
    }
    let t = dev::thread_idx_x();
    if dev::lane_id() == 0 {
        unsafe { CIEDE_WARP_SUMS.write((t / 32) as usize, sum) };
    }
    unsafe { dev::sync_threads() };
    if t == 0 {
        let mut total = 0u64;
        for w in 0..CIEDE_WARP_SUMS.len() {
            total += unsafe { CIEDE_WARP_SUMS.read(w) };
        }
        unsafe { dev::atomic_add_u64(out, total) };
    }
}
