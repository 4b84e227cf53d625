//! Integer motion (libvmaf 3.2.0 `integer_motion.c`): the 5-tap blur of the difference
//! between the reference luma and an earlier reference frame (the previous one, or the one
//! before it for the five-frame window), and the sum of its absolute values. The vertical
//! pass keeps 16 − bpc fractional bits (the difference is signed, so it is kept in `i32`),
//! the horizontal pass rounds back by 16 bits; SAD / 256 / (w·h) is the motion score, from
//! which the engine derives motion2 and motion3.
//!
//! 3.1.0 blurred each frame on its own and took the SAD of the blurred frames; 3.2.0 blurs
//! the difference and reflects at the bottom and right edges without repeating the edge
//! sample ([`reflect`]), so its scores differ slightly from 3.1.0's.

use super::{Plane, reflect};

/// The 5-tap blur, Q16 (sums to 65536).
pub const FILTER: [i32; 5] = [3571, 16004, 26386, 16004, 3571];

/// Vertical pass at (x, y) of `previous − current` (`bpc`-bit `u16` planes of one size),
/// rounded to 16 − `bpc` fractional bits.
///
/// # Safety
/// Both planes must be readable.
#[inline(always)]
pub unsafe fn diff_y(previous: &Plane, current: &Plane, x: u32, y: u32, bpc: u32) -> i32 {
    let h = current.height as i32;
    let mut acc = 0i64;
    for (k, &f) in FILTER.iter().enumerate() {
        let yy = reflect(y as i32 - 2 + k as i32, h) as u32;
        let d = unsafe { previous.get::<u16>(x, yy) as i32 - current.get::<u16>(x, yy) as i32 };
        acc += f as i64 * d as i64;
    }
    ((acc + (1 << (bpc - 1))) >> bpc) as i32
}

/// |horizontal pass| at (x, y) of the vertical pass's `i32` plane.
///
/// # Safety
/// `tmp` must be readable.
#[inline(always)]
pub unsafe fn abs_x(tmp: &Plane, x: u32, y: u32) -> u32 {
    let w = tmp.width as i32;
    let mut acc = 0i64;
    for (k, &f) in FILTER.iter().enumerate() {
        let xx = reflect(x as i32 - 2 + k as i32, w) as u32;
        acc += f as i64 * unsafe { tmp.get::<i32>(xx, y) } as i64;
    }
    (((acc + 32768) >> 16) as i32).unsigned_abs()
}

/// The SAD of row `y` of the vertical pass's plane (libvmaf sums a row in 32 bits).
///
/// # Safety
/// `tmp` must be readable.
#[inline(always)]
pub unsafe fn sad_row(tmp: &Plane, y: u32) -> u64 {
    let mut s = 0u32;
    for x in 0..tmp.width {
        s = s.wrapping_add(unsafe { abs_x(tmp, x, y) });
    }
    s as u64
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    fn plane<T>(v: &[T], w: u32, h: u32) -> Plane {
        Plane {
            ptr: v.as_ptr() as u64,
            stride: w,
            width: w,
            height: h,
            _pad: 0,
        }
    }

    /// Pass 1 then pass 2 over w×h frames, summed as libvmaf sums them.
    fn sad(prev: &[u16], cur: &[u16], w: u32, h: u32, bpc: u32) -> u64 {
        let (p, c) = (plane(prev, w, h), plane(cur, w, h));
        let tmp: Vec<i32> = (0..w * h)
            .map(|i| unsafe { diff_y(&p, &c, i % w, i / w, bpc) })
            .collect();
        let t = plane(&tmp, w, h);
        (0..h).map(|y| unsafe { sad_row(&t, y) }).sum()
    }

    #[test]
    fn a_uniform_step_scores_its_size_in_both_directions() {
        // A level change of d: the blur keeps it, so motion = SAD / 256 / (w·h) = d at
        // 8 bits and d / 4 at 10 bits (SAD in 16 − bpc fractional bits).
        let (w, h) = (23u32, 17u32);
        for (bpc, d) in [(8u32, 9u16), (10, 40), (12, 7), (16, 1000)] {
            let a: Vec<u16> = (0..w * h).map(|_| 100).collect();
            let b: Vec<u16> = a.iter().map(|v| v + d).collect();
            let want = (w * h) as u64 * ((d as u64) << (16 - bpc));
            assert_eq!(sad(&a, &b, w, h, bpc), want, "bpc {bpc}");
            assert_eq!(sad(&b, &a, w, h, bpc), want, "bpc {bpc}");
        }
    }

    #[test]
    fn edges_reflect_without_repeating_the_last_sample() {
        // One bright bottom row differs: the rows above see it through the filter's taps,
        // and the bottom row reads row h−2 (not itself) below it.
        let (w, h) = (8u32, 6u32);
        let a = std::vec![0u16; (w * h) as usize];
        let mut b = a.clone();
        b[((h - 1) * w) as usize..].fill(100);
        let (p, c) = (plane(&a, w, h), plane(&b, w, h));
        let bottom = unsafe { diff_y(&p, &c, 3, h - 1, 8) };
        // Taps on rows h−3, h−2, h−1, h−2 (reflected), h−3: only the centre one differs.
        assert_eq!(bottom, (-(FILTER[2] * 100) + 128) >> 8);
        let above = unsafe { diff_y(&p, &c, 3, h - 2, 8) };
        // Rows h−4..h: h−1 at tap 3 and reflected h (= h−2, which is 0) at tap 4.
        assert_eq!(above, (-(FILTER[3] * 100) + 128) >> 8);
    }
}
