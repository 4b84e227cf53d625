//! The SI/TI kernels: thin `kernel!` declarations over device-only bodies. Both run
//! [`super::thread_sums`] in every thread ([`super::BLOCK`] threads per block, grid.x =
//! [`super::blocks`] of the height: blocks stride over rows, threads over columns), reduce
//! the thread sums through warp shuffles and shared memory in a fixed order and write one
//! (gradient, motion) pair of f64 partials per block: no atomics, so the sums are the same
//! on every run.

#[cfg(target_arch = "nvptx64")]
use super::{Luma, WARPS, counts, thread_sums};
#[cfg(target_arch = "nvptx64")]
use gpumetrics_device as dev;

gpumetrics_device::kernel! {
    /// First pass: `out[2b]` and `out[2b + 1]` become block b's sums of the gradient
    /// magnitudes (inner pixels) and of the motion against `prev` (the previous frame's
    /// full-range luma, `width · height` values; all 0 when `first` ≠ 0). Launch `BLOCK`
    /// threads on grid.x = `blocks(height)`; `out` holds 2·grid.x values.
    pub unsafe fn siti_sums(l: Luma, prev: *const u16, first: u32, out: *mut f64) => sums;

    /// Second pass, after `siti_sums` wrote `sums` (2·grid.x values) on the same grid:
    /// every warp adds the partials into the means (in one fixed order, so every block
    /// uses the same means), then `out[2b]`, `out[2b + 1]` become block b's sums of the
    /// squared deviations (`sq_dev`) of the gradient and of the motion, and `prev` this
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
    let (g, m) = unsafe {
        thread_sums(
            &l,
            prev as *mut u16,
            first != 0,
            None,
            dev::block_idx_x(),
            dev::grid_dim_x(),
            dev::thread_idx_x(),
        )
    };
    unsafe { block_partials(g, m, out) };
}

/// The body of the `siti_deviations` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn deviations(l: Luma, prev: *mut u16, first: u32, sums: *const f64, out: *mut f64) {
    // Lane i adds partials i, i + 32, ..; the butterfly then gives every lane of every
    // warp the same totals (each step adds a pair in both orders: equal).
    let blocks = dev::grid_dim_x();
    let (mut g, mut m) = (0.0f64, 0.0f64);
    let mut b = dev::lane_id();
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
    let (ng, nm) = counts(l.width, l.height);
    let means = (g / ng as f64, m / nm as f64);
    let (g, m) = unsafe {
        thread_sums(
            &l,
            prev,
            first != 0,
            Some(means),
            dev::block_idx_x(),
            blocks,
            dev::thread_idx_x(),
        )
    };
    unsafe { block_partials(g, m, out) };
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
