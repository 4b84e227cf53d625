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
