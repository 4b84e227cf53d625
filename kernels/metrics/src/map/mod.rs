//! The distortion maps made from a pair's frames (`squared-error`, `ssim`), per sample, for
//! the host (engine/src/map) and the GPU (`kernels.rs`) alike: the samples of one channel
//! on the reference's scale ([`MapChannel::samples`]), the squared error of a sample
//! ([`squared_error`]), SciPy's `reflect` index ([`reflect`]), the five moments SSIM blurs
//! ([`moments`]) and Wang et al.'s formula on their blurred values ([`ssim_of`]), in f64 as
//! scikit-image computes the map. The GPU runs the same operations in the same order, so
//! the maps agree bit for bit.

mod kernels;

use crate::channel::{Channel, load, rescale};

/// Threads of the map kernels: `BLOCK_X`×`BLOCK_Y`, a thread per pixel.
pub const BLOCK_X: u32 = 32;
pub const BLOCK_Y: u32 = 8;
/// Half the SSIM filter's taps: `int(3.5 · 1.5 + 0.5)`.
pub const SSIM_RADIUS: i32 = 5;
/// The SSIM filter's taps.
pub const SSIM_TAPS: usize = 2 * SSIM_RADIUS as usize + 1;
/// The moments SSIM blurs: x, y, x², y², xy.
pub const MOMENTS: usize = 5;

/// One channel of a pair (both sides of one size), and the depths to bring the distorted
/// side's samples to the reference's (as PSNR compares them). Crosses the kernel boundary
/// by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MapChannel {
    pub reference: Channel,
    pub distorted: Channel,
    pub width: u32,
    pub height: u32,
    /// 2^depth − 1 of each side.
    pub reference_max: u32,
    pub distorted_max: u32,
}

impl MapChannel {
    /// Sample (x, y) of both sides, the distorted one rescaled to the reference's depth.
    ///
    /// # Safety
    /// Both channels must be readable at their size; (x, y) inside it.
    #[inline(always)]
    pub unsafe fn samples(&self, x: u32, y: u32) -> (u32, u32) {
        let at = |c: &Channel| {
            let row = (c.ptr + y as u64 * c.pitch as u64) as *const u8;
            unsafe { load(row, x, c) }
        };
        let r = at(&self.reference);
        let d = rescale(at(&self.distorted), self.distorted_max, self.reference_max);
        (r, d)
    }
}

/// The squared error of one sample pair.
#[inline(always)]
pub fn squared_error(r: u32, d: u32) -> f32 {
    let e = r as i64 - d as i64;
    (e * e) as f32
}

/// SciPy's `reflect` index of `i` into `n` samples (`d c b a | a b c d | d c b a`): the
/// reflections repeat with period 2n, so any `i` maps inside.
#[inline(always)]
pub fn reflect(i: i32, n: u32) -> u32 {
    let period = 2 * n as i32;
    let i = i.rem_euclid(period);
    (if i < n as i32 { i } else { period - 1 - i }) as u32
}

/// The five moments of a sample pair: x, y, x², y², xy.
#[inline(always)]
pub fn moments(r: u32, d: u32) -> [f64; MOMENTS] {
    let (x, y) = (r as f64, d as f64);
    [x, y, x * x, y * y, x * y]
}

/// SSIM from the blurred moments `m` (x, y, x², y², xy) and the constants
/// `c1 = (0.01 · peak)²`, `c2 = (0.03 · peak)²`; stored as f32.
#[inline(always)]
pub fn ssim_of(m: [f64; MOMENTS], c1: f64, c2: f64) -> f32 {
    let (mx, my) = (m[0], m[1]);
    let vx = m[2] - mx * mx;
    let vy = m[3] - my * my;
    let vxy = m[4] - mx * my;
    let a1 = 2.0 * mx * my + c1;
    let a2 = 2.0 * vxy + c2;
    let b1 = mx * mx + my * my + c1;
    let b2 = vx + vy + c2;
    ((a1 * a2) / (b1 * b2)) as f32
}

/// Where a map kernel writes: `out` (`width`×`height` f32), and how its channel joins the
/// others (RGB maps are the mean of the three channels' maps, added in channel order).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MapOut {
    pub out: u64,
    /// Not 0: this channel's map is added to what `out` holds (the second and third of
    /// RGB); else it is stored.
    pub add: u32,
    /// Not 0: after this channel, `out` is divided by it (the last of RGB: 3).
    pub divide: u32,
}

impl MapOut {
    /// Joins `v` to sample `i` of the map: as the host sums the channels' maps in f32 and
    /// divides by their count.
    ///
    /// # Safety
    /// Sample `i` of `out` must be writable, and no other thread touch it.
    #[inline(always)]
    pub unsafe fn put(&self, i: usize, v: f32) {
        let p = unsafe { (self.out as *mut f32).add(i) };
        let mut v = if self.add != 0 {
            (unsafe { *p }) + v
        } else {
            v
        };
        if self.divide != 0 {
            v /= self.divide as f32;
        }
        unsafe { *p = v };
    }
}

/// The SSIM map's filter (`map_ssim_down`, `map_ssim_across`): its taps, the constants, and
/// the scratch of five f64 moment planes of the channel's size.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SsimFilter {
    pub taps: [f64; SSIM_TAPS],
    pub c1: f64,
    pub c2: f64,
    pub down: u64,
    pub width: u32,
    pub height: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reflection_is_scipys() {
        // n = 3, i = −4..6: c c b a | a b c | c b a | a
        let got: [u32; 10] = core::array::from_fn(|i| reflect(i as i32 - 4, 3));
        assert_eq!(got, [2, 2, 1, 0, 0, 1, 2, 2, 1, 0]);
        assert_eq!(reflect(-1, 1), 0);
        assert_eq!(reflect(7, 1), 0);
    }

    #[test]
    fn identical_moments_give_an_ssim_of_one() {
        let m = moments(100, 100);
        assert_eq!(ssim_of(m, 6.5, 58.5), 1.0);
        assert!(ssim_of(moments(100, 10), 6.5, 58.5) < 1.0);
    }
}
