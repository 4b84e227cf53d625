//! The thumbnail kernel: a thin `kernel!` declaration over its device-only body.

#[cfg(target_arch = "nvptx64")]
use super::{BLOCK, ThumbFrame, WARPS, thread_sum};
#[cfg(target_arch = "nvptx64")]
use gpumetrics_device as dev;

gpumetrics_device::kernel! {
    /// `out[cy·COLS + cx]` becomes the sum of cell `(cx, cy)` of `f`. Launch `BLOCK`
    /// threads on a `COLS`×`ROWS` grid (one block per cell); `out` holds `CELLS` values.
    pub unsafe fn thumb_cells(f: ThumbFrame, out: *mut u64) => cells;
}

/// The body of the `thumb_cells` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn cells(f: ThumbFrame, out: *mut u64) {
    gpumetrics_device::shared!(static THUMB_WARP_SUMS: [u64; WARPS]);
    let (cx, cy) = (dev::block_idx_x(), dev::block_idx_y());
    let t = dev::thread_idx_x();
    let mut sum = unsafe { thread_sum(&f, cx, cy, t, BLOCK) };
    let mut delta = 16;
    while delta > 0 {
        sum += unsafe { dev::shfl_down(dev::FULL_MASK, sum, delta) };
        delta /= 2;
    }
    if dev::lane_id() == 0 {
        unsafe { THUMB_WARP_SUMS.write((t / 32) as usize, sum) };
    }
    unsafe { dev::sync_threads() };
    if t == 0 {
        let mut total = 0u64;
        for w in 0..THUMB_WARP_SUMS.len() {
            total += unsafe { THUMB_WARP_SUMS.read(w) };
        }
        unsafe { *out.add((cy * super::COLS + cx) as usize) = total };
    }
}
