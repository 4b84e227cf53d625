//! Integer motion (libvmaf v3.1.0 `integer_motion.c`): the reference luma blurred by a
//! 5-tap filter (vertical pass to 16-bit precision, then horizontal), and the sum of absolute
//! differences between consecutive blurred frames. motion = SAD / 256 / (w·h); the engine
//! turns SADs into motion2.

use super::{Plane, mirror};

/// The 5-tap blur, Q16 (sums to 65536).
pub const FILTER: [u32; 5] = [3571, 16004, 26386, 16004, 3571];

/// Vertical pass at (x, y) of a `bpc`-bit `u16` plane: a 16-bit value.
///
/// # Safety
/// `src` must be readable.
#[inline(always)]
pub unsafe fn blur_y(src: &Plane, x: u32, y: u32, bpc: u32) -> u16 {
    let h = src.height as i32;
    let mut acc = 0u32;
    for (k, &f) in FILTER.iter().enumerate() {
        let yy = mirror(y as i32 - 2 + k as i32, h) as u32;
        acc += f * unsafe { src.get::<u16>(x, yy) } as u32;
    }
    ((acc + (1 << (bpc - 1))) >> bpc) as u16
}

/// Horizontal pass at (x, y) of the vertical pass's plane.
///
/// # Safety
/// `tmp` must be readable.
#[inline(always)]
pub unsafe fn blur_x(tmp: &Plane, x: u32, y: u32) -> u16 {
    let w = tmp.width as i32;
    let mut acc = 0u32;
    for (k, &f) in FILTER.iter().enumerate() {
        let xx = mirror(x as i32 - 2 + k as i32, w) as u32;
        acc = acc.wrapping_add(f * unsafe { tmp.get::<u16>(xx, y) } as u32);
    }
    (acc.wrapping_add(32768) >> 16) as u16
}

/// Sum of absolute differences of row `y` of two blurred planes (libvmaf sums a row in 32
/// bits).
///
/// # Safety
/// Both planes must be readable.
#[inline(always)]
pub unsafe fn sad_row(a: &Plane, b: &Plane, y: u32) -> u64 {
    let mut s = 0u32;
    for x in 0..a.width {
        let (p, q) = unsafe { (a.get::<u16>(x, y), b.get::<u16>(x, y)) };
        s = s.wrapping_add(p.abs_diff(q) as u32);
    }
    s as u64
}

#[cfg(target_arch = "nvptx64")]
use super::{ROW_BLOCK, ROW_WARPS, TILE};
#[cfg(target_arch = "nvptx64")]
use gpumetrics_device as dev;

gpumetrics_device::kernel! {
    /// The vertical blur pass of `src` (`bpc`-bit) into `tmp`. `TILE`×`TILE` threads, grid
    /// covering the frame.
    pub unsafe fn vmaf_motion_blur_y(src: Plane, tmp: Plane, bpc: u32) => vmaf_motion_blur_y_body;
}

/// The body of the `vmaf_motion_blur_y` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn vmaf_motion_blur_y_body(src: Plane, tmp: Plane, bpc: u32) {
    let x = dev::block_idx_x() * TILE + dev::thread_idx_x();
    let y = dev::block_idx_y() * TILE + dev::thread_idx_y();
    if x < src.width && y < src.height {
        unsafe { tmp.set::<u16>(x, y, blur_y(&src, x, y, bpc)) };
    }
}

gpumetrics_device::kernel! {
    /// The horizontal blur pass of `tmp` into `out`. `TILE`×`TILE` threads, grid covering
    /// the frame.
    pub unsafe fn vmaf_motion_blur_x(tmp: Plane, out: Plane) => vmaf_motion_blur_x_body;
}

/// The body of the `vmaf_motion_blur_x` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn vmaf_motion_blur_x_body(tmp: Plane, out: Plane) {
    let x = dev::block_idx_x() * TILE + dev::thread_idx_x();
    let y = dev::block_idx_y() * TILE + dev::thread_idx_y();
    if x < tmp.width && y < tmp.height {
        unsafe { out.set::<u16>(x, y, blur_x(&tmp, x, y)) };
    }
}

gpumetrics_device::kernel! {
    /// Adds the SAD of `a` and `b` to `*out`. One block of `ROW_BLOCK` threads per row
    /// (grid.x = rows): each thread sums a strided share of the row in 32 bits, which adds
    /// up to libvmaf's row sum modulo 2^32 as well.
    pub unsafe fn vmaf_motion_sad(a: Plane, b: Plane, out: *mut u64) => vmaf_motion_sad_body;
}

/// The body of the `vmaf_motion_sad` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn vmaf_motion_sad_body(a: Plane, b: Plane, out: *mut u64) {
    gpumetrics_device::shared!(static VMAF_SAD_WARPS: [u32; ROW_WARPS]);
    let y = dev::block_idx_x();
    let t = dev::thread_idx_x();
    let mut s = 0u32;
    let mut x = t;
    while x < a.width {
        let (p, q) = unsafe { (a.get::<u16>(x, y), b.get::<u16>(x, y)) };
        s = s.wrapping_add(p.abs_diff(q) as u32);
        x += ROW_BLOCK;
    }
    let mut delta = 16;
    while delta > 0 {
        s = s.wrapping_add(unsafe { dev::shfl_down(dev::FULL_MASK, s, delta) });
        delta /= 2;
    }
    if dev::lane_id() == 0 {
        unsafe { VMAF_SAD_WARPS.write((t / 32) as usize, s) };
    }
    unsafe { dev::sync_threads() };
    if t == 0 {
        let mut total = 0u32;
        for w in 0..ROW_WARPS {
            total = total.wrapping_add(unsafe { VMAF_SAD_WARPS.read(w) });
        }
        unsafe { dev::atomic_add_u64(out, total as u64) };
    }
}
