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

/// The SSIM map's filter (`map_ssim`): its taps, the constants, and the channel's size.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SsimFilter {
    pub taps: [f64; SSIM_TAPS],
    pub c1: f64,
    pub c2: f64,
    pub width: u32,
    pub height: u32,
}

/// `map_ssim`'s tile in shared memory: the block's rows, and its columns with
/// [`SSIM_RADIUS`] more either side.
pub const SSIM_TILE_ROWS: usize = 8;
pub const SSIM_TILE_COLS: usize = 42;
const _: () = assert!(
    SSIM_TILE_ROWS == BLOCK_Y as usize
        && SSIM_TILE_COLS == BLOCK_X as usize + 2 * SSIM_RADIUS as usize
);

/// Threads of a `map_stats` block (its shared arrays hold one partial per thread).
pub const STATS_THREADS: usize = 256;
/// [`STATS_THREADS`] as a launch dimension.
pub const STATS_BLOCK: u32 = STATS_THREADS as u32;
/// Blocks of a `map_stats` launch, each writing one [`Partial`]: eight per SM of the
/// largest GPUs, enough loads in flight to read a map near the memory's rate (264 blocks
/// took 16 µs for a 1080p map on an H100), few enough for the host to join.
pub const STATS_BLOCKS: u32 = 1056;
/// The 32-bit words of one block's partial in `map_stats`' output: the largest `sign · v`
/// (its bits), its index, the count past the threshold.
pub const PARTIAL_WORDS: usize = 3;

/// A map's statistics over some of its samples, as `map_stats` and the host build them:
/// the largest `sign · v` and the first index holding it (`u32::MAX`: none, every sample
/// NaN or −∞), and how many samples have `sign · v` past `sign · threshold`. The same
/// comparisons as the host's statistics of a map on the host, so both agree exactly.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Partial {
    pub largest: f32,
    pub at: u32,
    pub past: u32,
}

impl Partial {
    /// Nothing seen.
    pub const NONE: Partial = Partial {
        largest: f32::NEG_INFINITY,
        at: u32::MAX,
        past: 0,
    };

    /// Sample `i` whose signed value is `x`, `t` the signed threshold; samples seen in
    /// increasing order keep the first of equal largest values. NaN is never largest nor
    /// past.
    #[inline(always)]
    pub fn see(&mut self, x: f32, i: u32, t: f32) {
        if x > self.largest {
            self.largest = x;
            self.at = i;
        }
        self.past += (x > t) as u32;
    }

    /// Both partials' statistics: the larger value, on a tie the lower index.
    #[inline(always)]
    pub fn join(self, o: Partial) -> Partial {
        let other = o.largest > self.largest || (o.largest == self.largest && o.at < self.at);
        Partial {
            largest: if other { o.largest } else { self.largest },
            at: if other { o.at } else { self.at },
            past: self.past + o.past,
        }
    }

    /// As `map_stats` stores it ([`PARTIAL_WORDS`]).
    #[inline(always)]
    pub fn words(self) -> [u32; PARTIAL_WORDS] {
        [self.largest.to_bits(), self.at, self.past]
    }

    /// Read back from [`Partial::words`].
    #[inline(always)]
    pub fn from_words(w: [u32; PARTIAL_WORDS]) -> Partial {
        Partial {
            largest: f32::from_bits(w[0]),
            at: w[1],
            past: w[2],
        }
    }
}

/// Which map's scale [`gray16`] and [`heat_position`] apply (the engine's map kinds).
pub const SCALE_SQUARED_ERROR: u32 = 0;
pub const SCALE_SSIM: u32 = 1;
pub const SCALE_BUTTERAUGLI: u32 = 2;
pub const SCALE_CVVDP: u32 = 3;
pub const SCALE_SSIMULACRA2: u32 = 4;

/// `x` rounded to the nearest integer, halves up, for `x` ≥ 0 below 2³² (as `f64::round`
/// gives there; NaN gives 0), without `std`.
#[inline(always)]
pub fn round_nonnegative(x: f64) -> u32 {
    let i = x as u32;
    if x - i as f64 >= 0.5 { i + 1 } else { i }
}

/// The GRAY16_LE value of map value `v` of scale `kind` (`peak`: the reference's largest
/// sample value): squared error `min(v / peak², 1) · 65535`; SSIM
/// `clamp((1 − v) / 2, 0, 1) · 65535` (0 = identical, 65535 = SSIM −1); Butteraugli
/// `min(v / 8, 1) · 65535`;
/// ColorVideoVDP `min(v, 1) · 65535` (its heat map 1 − JOD/10 as it is: 6,554 per JOD
/// lost); SSIMULACRA2 `min(v / 20, 1) · 65535` (20: a frame of that value everywhere would
/// score about 2); rounded.
#[inline(always)]
pub fn gray16(kind: u32, v: f32, peak: f64) -> u16 {
    let v = v as f64;
    let t = match kind {
        SCALE_SQUARED_ERROR => v / (peak * peak),
        SCALE_SSIM => (1.0 - v) / 2.0,
        SCALE_BUTTERAUGLI => v / 8.0,
        SCALE_CVVDP => v,
        _ => v / 20.0,
    };
    round_nonnegative(t.clamp(0.0, 1.0) * 65535.0) as u16
}

/// Where map value `v` of scale `kind` lies on the heat scale, 0..1: squared error
/// `min(4·√v / peak, 1)` (a difference of a quarter of the range saturates); SSIM
/// `clamp(1 − v, 0, 1)`; Butteraugli `min(v / 4, 1)` (1, just visible, is a quarter of the
/// scale); ColorVideoVDP `min(5·v, 1)` (the heat map's 1 − JOD/10: 2 JOD lost saturate);
/// SSIMULACRA2 `min(v / 11, 1)` (11 everywhere would score 30, the scale's "low quality").
#[inline(always)]
pub fn heat_position(kind: u32, v: f32, peak: f64) -> f64 {
    let t = match kind {
        SCALE_SQUARED_ERROR => 4.0 * gpumetrics_device::math::sqrt(v.max(0.0) as f64) / peak,
        SCALE_SSIM => 1.0 - v as f64,
        SCALE_BUTTERAUGLI => v as f64 / 4.0,
        SCALE_CVVDP => 5.0 * v as f64,
        _ => v as f64 / 11.0,
    };
    t.clamp(0.0, 1.0)
}

/// The colour scale's stops: (position, R, G, B): blue, cyan, green, yellow, red.
pub const HEAT_STOPS: [(f64, [f64; 3]); 5] = [
    (0.0, [0.0, 0.0, 255.0]),
    (0.25, [0.0, 255.0, 255.0]),
    (0.5, [0.0, 255.0, 0.0]),
    (0.75, [255.0, 255.0, 0.0]),
    (1.0, [255.0, 0.0, 0.0]),
];

/// The RGBA of position `t` (0..1): the colour interpolated linearly between the stops,
/// alpha `255·t` (rounded): transparent where nothing differs.
#[inline(always)]
pub fn heat_rgba(t: f64) -> [u8; 4] {
    let t = t.clamp(0.0, 1.0);
    // The first stop at or past t (a NaN takes the last interval), as a search would; by
    // comparisons, so that no stop is indexed at run time (local memory on the GPU).
    let ((t0, c0), (t1, c1)) = if t <= HEAT_STOPS[1].0 {
        (HEAT_STOPS[0], HEAT_STOPS[1])
    } else if t <= HEAT_STOPS[2].0 {
        (HEAT_STOPS[1], HEAT_STOPS[2])
    } else if t <= HEAT_STOPS[3].0 {
        (HEAT_STOPS[2], HEAT_STOPS[3])
    } else {
        (HEAT_STOPS[3], HEAT_STOPS[4])
    };
    let f = (t - t0) / (t1 - t0);
    let c = |k: usize| round_nonnegative(c0[k] + (c1[k] - c0[k]) * f) as u8;
    [c(0), c(1), c(2), round_nonnegative(255.0 * t) as u8]
}

/// A map rendered as a frame (`map_gray16`, `map_heat`): the map's `width`×`height` f32
/// values at `values`, rows of the frame `pitch` bytes apart at `out`, the scale `kind`
/// with the reference's largest sample value `peak`. Crosses the kernel boundary by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MapFrame {
    pub values: u64,
    pub out: u64,
    pub width: u32,
    pub height: u32,
    pub pitch: u32,
    pub kind: u32,
    pub peak: f64,
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

    /// Rounding without `std` is `f64::round` for the values the scales give.
    #[test]
    fn rounding_is_std_s() {
        for i in 0..=2_000_000u32 {
            let x = i as f64 * 0.03276750001;
            assert_eq!(round_nonnegative(x), x.round() as u32, "{x}");
        }
        for x in [
            0.0,
            0.5,
            1.5,
            2.4999999999999996,
            65534.5,
            0.49999999999999994,
        ] {
            assert_eq!(round_nonnegative(x), x.round() as u32, "{x}");
        }
        assert_eq!(round_nonnegative(f64::NAN), 0);
    }

    /// Joining partials in any grouping gives one pass's statistics.
    #[test]
    fn partials_join_as_one_pass() {
        let values = [3.0f32, f32::NAN, 7.0, 1.0, 7.0, -2.0, 7.0, f32::NAN];
        for sign in [1.0f32, -1.0] {
            let t = sign * 2.0;
            let mut one = Partial::NONE;
            for (i, &v) in values.iter().enumerate() {
                one.see(sign * v, i as u32, t);
            }
            for split in 0..values.len() {
                let (mut a, mut b) = (Partial::NONE, Partial::NONE);
                for (i, &v) in values.iter().enumerate() {
                    let p = if i < split { &mut a } else { &mut b };
                    p.see(sign * v, i as u32, t);
                }
                assert_eq!(a.join(b), one);
                assert_eq!(b.join(a), one);
            }
            assert_eq!(Partial::from_words(one.words()), one);
        }
        let mut none = Partial::NONE;
        none.see(f32::NAN, 0, 0.0);
        assert_eq!(none.join(Partial::NONE), Partial::NONE);
    }

    #[test]
    fn identical_moments_give_an_ssim_of_one() {
        let m = moments(100, 100);
        assert_eq!(ssim_of(m, 6.5, 58.5), 1.0);
        assert!(ssim_of(moments(100, 10), 6.5, 58.5) < 1.0);
    }
}
