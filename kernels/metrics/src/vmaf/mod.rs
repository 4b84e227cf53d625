//! VMAF's elementary features as libvmaf v3.1.0 computes them in fixed point
//! (`integer_vif.c`, `integer_adm.c`, `integer_motion.c`): VIF at four scales, ADM at four
//! scales, and motion. Everything here is integer arithmetic (plus the few f64 steps libvmaf
//! takes inside VIF and ADM, which are IEEE operations the GPU rounds alike), so the CPU and
//! the GPU produce the same integers bit for bit; the float formulas that turn these sums
//! into features live in the engine (`engine/src/metric/vmaf/`), once, on the host.
//!
//! Layout: the luma planes are first copied into `u16` planes ([`load`]); every stage then
//! reads and writes plain planes (`u16`, `u32` or `i32` elements, row stride in elements)
//! whose addresses cross the kernel boundary as `u64` in `#[repr(C)]` parameter structs.
//! The functions compute one output pixel or one row; the CPU backend loops over them, the
//! kernels run one thread per pixel or one block per row.
//!
//! - this module: [`Plane`], the edge rules, [`load`] and the kernels' block sizes;
//! - [`vif`], [`adm`], [`motion`]: each feature's per-pixel and per-row functions and the
//!   parameter structs of its kernels (host and GPU);
//! - `kernels`: the GPU kernels (`vmaf_*`), device-only.

pub mod adm;
mod kernels;
pub mod motion;
pub mod vif;

use crate::channel::{Channel, load as load_sample, rescale};

/// libvmaf refuses frames whose width or height is at most this (ADM's four DWT levels).
pub const MIN_SIDE_EXCLUSIVE: u32 = 32;

/// A plane of `width`×`height` elements at `ptr` (host or device address), rows `stride`
/// elements apart.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Plane {
    pub ptr: u64,
    pub stride: u32,
    pub width: u32,
    pub height: u32,
    pub _pad: u32,
}

impl Plane {
    /// Element (x, y) of a plane of `T`.
    ///
    /// # Safety
    /// The plane must be readable as `T` at (x, y).
    #[inline(always)]
    pub unsafe fn get<T: Copy>(&self, x: u32, y: u32) -> T {
        unsafe { *(self.ptr as *const T).add(y as usize * self.stride as usize + x as usize) }
    }

    /// Writes element (x, y) of a plane of `T`.
    ///
    /// # Safety
    /// The plane must be writable as `T` at (x, y), and no one else may access it.
    #[inline(always)]
    pub unsafe fn set<T: Copy>(&self, x: u32, y: u32, v: T) {
        unsafe { *(self.ptr as *mut T).add(y as usize * self.stride as usize + x as usize) = v }
    }

    /// The same plane `k` planes of this one's size further on (consecutive planes of one
    /// buffer).
    #[inline(always)]
    pub fn nth<T>(&self, k: u32) -> Plane {
        Plane {
            ptr: self.ptr
                + k as u64
                    * self.stride as u64
                    * self.height as u64
                    * core::mem::size_of::<T>() as u64,
            ..*self
        }
    }
}

/// Reflection about the edge sample, without repeating it (…2 1 | 0 1 2 … n−2 n−1 | n−2…):
/// VIF's padding.
#[inline(always)]
pub fn reflect(i: i32, n: i32) -> i32 {
    if i < 0 {
        -i
    } else if i >= n {
        2 * (n - 1) - i
    } else {
        i
    }
}

/// libvmaf's mirror of the ADM wavelet and ADM's masking (and of 3.1.0's motion): reflection without
/// repeating the edge at the start, with repeating it at the end (…2 1 | 0 … n−1 | n−1 n−2…).
#[inline(always)]
pub fn mirror(i: i32, n: i32) -> i32 {
    if i < 0 {
        -i
    } else if i >= n {
        2 * n - 1 - i
    } else {
        i
    }
}

/// Copies sample (x, y) of the luma channel into a `u16` plane, rescaled to `max` (the
/// reference's peak) when the distorted channel has another depth.
///
/// # Safety
/// The channel must be readable at (x, y) and `out` writable there.
#[inline(always)]
pub unsafe fn load(c: &Channel, out: &Plane, x: u32, y: u32, max: u32) {
    let row = (c.ptr + y as u64 * c.pitch as u64) as *const u8;
    let v = rescale(unsafe { load_sample(row, x, c) }, c.max, max);
    unsafe { out.set::<u16>(x, y, v as u16) };
}

/// Threads per block of the per-pixel kernels (16×16 tiles).
pub const TILE: u32 = 16;
/// Threads per block of the per-row kernels.
pub const ROW_BLOCK: u32 = 256;
/// Warps per row block.
pub const ROW_WARPS: usize = 8;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirrors_match_libvmaf_index_tables() {
        // integer_adm.c dwt2_src_indices_filt for h = 7: row 0 reads 1 0 1 2, the last
        // band row (3) reads 5 6 6 5.
        assert_eq!([-1, 0, 1, 2].map(|i| mirror(i, 7)), [1, 0, 1, 2]);
        assert_eq!([5, 6, 7, 8].map(|i| mirror(i, 7)), [5, 6, 6, 5]);
        // integer_vif.h PADDING_SQ_DATA: tmp[w-1+f] = tmp[w-1-f].
        assert_eq!([-2, -1, 7, 8].map(|i| reflect(i, 7)), [2, 1, 5, 4]);
    }
}

#[cfg(test)]
mod stage_tests {
    extern crate std;
    use super::*;
    use std::vec;
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

    #[test]
    fn ceil_log2_is_libvmafs_double_ceil_log2() {
        for n in 1..70000u32 {
            assert_eq!(adm::ceil_log2(n), (n as f64).log2().ceil() as u32, "{n}");
        }
    }

    #[test]
    fn flat_frames_have_no_detail_and_keep_their_level() {
        let (w, h) = (40u32, 36u32);
        for (bpc, v) in [(8u32, 100u16), (10, 700)] {
            let img = vec![v; (w * h) as usize];
            let src = plane(&img, w, h);
            // Motion: a frame against itself has no difference.
            let tmp: Vec<i32> = (0..w * h)
                .map(|i| unsafe { motion::diff_y(&src, &src, i % w, i / w, bpc) })
                .collect();
            assert!(tmp.iter().all(|&v| v == 0));
            let t = plane(&tmp, w, h);
            assert!((0..h).all(|y| unsafe { motion::sad_row(&t, y) } == 0));
            // Wavelet: no detail bands.
            for (x, y) in [(0, 0), (5, 7), (19, 17)] {
                let b = unsafe { adm::dwt0(&src, x, y, bpc) };
                assert_eq!(&b[1..], &[0, 0, 0], "{bpc} {x} {y}");
            }
            // VIF's next scale: the level in 16-bit units.
            let s = vif::VifScale {
                reference: src,
                distorted: src,
                scale: 0,
                bpc,
                ..Default::default()
            };
            let (a, b) = unsafe { vif::down(&s, 3, 4) };
            assert_eq!((a, b), (v << (16 - bpc), v << (16 - bpc)));
        }
    }

    #[test]
    fn log2_lookups_follow_the_table() {
        let table: Vec<u16> = (0..vif::LOG2_LEN as u32)
            .map(|i| (((i + vif::LOG2_BASE) as f64).log2() as f32 * 2048.0).round() as u16)
            .collect();
        let t = table.as_ptr();
        // 2^17 → 17 · 2048; 3·2^20 → 20 · 2048 + round(2048·log2 3).
        assert_eq!(unsafe { vif::log2_32(t, 1 << 17) }, 17 * 2048);
        let l3 = (3f64.log2() as f32 * 2048.0).round() as i32;
        assert_eq!(unsafe { vif::log2_64(t, 3 << 20) }, 2048 * 20 + l3);
    }
}
