//! The freeze kernel: a thin `kernel!` declaration over its device-only body. Every thread
//! runs [`super::thread_sad`] ([`super::BLOCK`] threads per block, grid.x =
//! [`super::blocks`] of the rows of all channels), the block adds its threads' sums
//! through warp shuffles and shared memory and writes one partial sum: integer sums, no
//! atomics, nothing to clear between frames.

#[cfg(target_arch = "nvptx64")]
use super::{FreezeFrame, WARPS, thread_sad};
#[cfg(target_arch = "nvptx64")]
use gpumetrics_device as dev;

gpumetrics_device::kernel! {
    /// `out[b]` becomes the sum of `|frame − reference|` over the rows block b visits
    /// (0 when `first` ≠ 0: `reference` is not read), and `spare` the frame's samples (the
    /// reference layout of `FreezeFrame::offset`). Launch `BLOCK` threads on grid.x =
    /// `blocks(f.rows)`; `out` holds grid.x values; `reference` and `spare` hold
    /// `f.count()` values each and do not overlap.
    pub unsafe fn freeze_sad(
        f: FreezeFrame,
        reference: *const u16,
        spare: *mut u16,
        first: u32,
        out: *mut u64,
    ) => sad;
}

/// The body of the `freeze_sad` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn sad(f: FreezeFrame, reference: *const u16, spare: *mut u16, first: u32, out: *mut u64) {
    gpumetrics_device::shared!(static FREEZE_WARP_SUMS: [u64; WARPS]);
    let mut s = unsafe {
        thread_sad(
            &f,
            reference,
            spare,
            first != 0,
            dev::block_idx_x(),
            dev::grid_dim_x(),
            dev::thread_idx_x(),
        )
    };
    let mut delta = 16;
    while delta > 0 {
        s += unsafe { dev::shfl_down(dev::FULL_MASK, s, delta) };
        delta /= 2;
    }
    let t = dev::thread_idx_x();
    if dev::lane_id() == 0 {
        unsafe { FREEZE_WARP_SUMS.write((t / 32) as usize, s) };
    }
    unsafe { dev::sync_threads() };
    if t == 0 {
        let mut total = 0u64;
        for w in 0..WARPS {
            total += unsafe { FREEZE_WARP_SUMS.read(w) };
        }
        unsafe { *out.add(dev::block_idx_x() as usize) = total };
    }
}
