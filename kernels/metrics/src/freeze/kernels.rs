//! The freeze kernels: thin `kernel!` declarations over their device-only bodies.
//!
//! * `freeze_sad`: every thread runs [`super::thread_sad`] ([`super::BLOCK`] threads per
//!   block, grid.x = [`super::blocks`] of the rows of all channels), the block adds its
//!   threads' sums through warp shuffles and shared memory and writes one partial sum:
//!   integer sums, no atomics, nothing to clear between frames.
//! * `freeze_decide`: one warp adds the partials and decides on the device whether the
//!   frame is frozen ([`super::is_frozen`]), which says which of the two frame buffers is
//!   the reference for the next frame. The host never has to answer before the next frame
//!   is queued, so frames can be in flight one after the other.

#[cfg(target_arch = "nvptx64")]
use super::{FreezeFrame, WARPS, frozen, thread_sad};
#[cfg(target_arch = "nvptx64")]
use gpumetrics_device as dev;

gpumetrics_device::kernel! {
    /// `buffers` holds two frames of `f.buffer_len()` values (8-byte aligned): the
    /// reference frame is the one `*state` (0 or 1) names, the other is the spare.
    /// `out[b]` becomes the sum of `|frame − reference|` over the rows block b visits (0
    /// when `first` ≠ 0: the reference is not read), and the spare the frame's samples
    /// (the layout of `FreezeFrame::offset`). Launch `BLOCK` threads on grid.x =
    /// `blocks(f.rows)`; `out` holds grid.x values.
    pub unsafe fn freeze_sad(
        f: FreezeFrame,
        buffers: *mut u16,
        state: *const u32,
        first: u32,
        out: *mut u64,
    ) => sad;

    /// `total[0]` becomes the sum of the `blocks` partials of `freeze_sad`; when the frame
    /// is not frozen ([`super::frozen`] of that sum) `*state` names the other buffer, so
    /// the frame just written to the spare is the next frame's reference. Launch one warp
    /// (32 threads) on one block, after `freeze_sad` on the same stream.
    pub unsafe fn freeze_decide(
        partials: *const u64,
        blocks: u32,
        count: u64,
        depth: u32,
        noise: f64,
        first: u32,
        state: *mut u32,
        total: *mut u64,
    ) => decide;
}

/// The body of the `freeze_sad` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn sad(f: FreezeFrame, buffers: *mut u16, state: *const u32, first: u32, out: *mut u64) {
    gpumetrics_device::shared!(static FREEZE_WARP_SUMS: [u64; WARPS]);
    let count = f.buffer_len() as usize;
    let sel = (unsafe { *state } & 1) as usize;
    let reference = unsafe { buffers.add(sel * count) } as *const u16;
    let spare = unsafe { buffers.add((1 - sel) * count) };
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

/// The body of the `freeze_decide` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn decide(
    partials: *const u64,
    blocks: u32,
    count: u64,
    depth: u32,
    noise: f64,
    first: u32,
    state: *mut u32,
    total: *mut u64,
) {
    let lane = dev::lane_id();
    let mut s = 0u64;
    let mut b = lane;
    while b < blocks {
        s += unsafe { *partials.add(b as usize) };
        b += 32;
    }
    let mut delta = 16;
    while delta > 0 {
        s += unsafe { dev::shfl_down(dev::FULL_MASK, s, delta) };
        delta /= 2;
    }
    if lane == 0 {
        unsafe { *total = s };
        if !frozen(s, count, depth, noise, first != 0) {
            unsafe { *state = (*state & 1) ^ 1 };
        }
    }
}
