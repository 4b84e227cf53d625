//! SSIM and MS-SSIM: Gaussian-window moments, the ssim/cs map values and the 2×2 average
//! pool between MS-SSIM scales. The per-pixel functions here are the only copy: the CPU
//! backend calls them on host memory, the `ssim_scale` kernel (`kernels.rs`) on shared-memory
//! tiles.
//!
//! Moments and maps are computed in f64: σ² = E\[x²\] − μ² cancels badly in f32 (16-bit
//! samples square to 2^32), and the references compute in float64. The samples themselves
//! are f32, which holds every integer sample and every 2×2-pooled value of MS-SSIM exactly
//! (at most 16 integer bits + 2 fractional bits per pooling, 4 poolings: 24 bits).

pub mod float;
mod kernels;

pub use float::{Decimation, FloatSsim};

/// Threads per block of the `vmaf_ssim_rows` and `vmaf_ssim_map` kernels.
pub const FLOAT_BLOCK: u32 = 256;

use crate::channel::{Channel, ChannelPair, MAX_CHANNELS, load, rescale};

/// Window radius: 11 taps.
pub const RADIUS: u32 = 5;
pub const TAPS: usize = 11;
/// MS-SSIM scales.
pub const SCALES: usize = 5;
/// MS-SSIM weights per scale (Wang et al. 2003).
pub const MS_WEIGHTS: [f64; SCALES] = [0.0448, 0.2856, 0.3001, 0.2363, 0.1333];
/// Frames whose smaller side is at most this are too small for MS-SSIM (4 halvings of an
/// 11-tap valid window).
pub const MS_MIN_SIDE: u32 = 160;

/// exp(−k²/(2·1.5²)) for k = −5..=5, normalised to sum 1.
pub const WEIGHTS: [f64; TAPS] = [
    0.00102838008447911,
    0.007598758135239185,
    0.03600077212843083,
    0.10936068950970002,
    0.2130055377112537,
    0.26601172486179436,
    0.2130055377112537,
    0.10936068950970002,
    0.03600077212843083,
    0.007598758135239185,
    0.00102838008447911,
];

/// `sample_bytes` value of a [`Channel`] that holds f32 samples (the pooled MS-SSIM scales).
pub const F32_SAMPLES: u32 = 4;

/// One channel pair at one scale, and where its 2×2-pooled next scale goes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScalePair {
    /// Input of this scale: native samples (scale 0) or f32 planes ([`F32_SAMPLES`]).
    /// `reference.max` is the peak that sets C1 and C2 at every scale.
    pub pair: ChannelPair,
    /// f32 planes (pitch = `down_width * 4`) receiving the pooled reference/distorted
    /// images; 0 at the last scale.
    pub down_reference: u64,
    pub down_distorted: u64,
    pub down_width: u32,
    pub down_height: u32,
    /// Result index: sums go to `out[(index * SCALES + scale) * 2 ..][..2]`.
    pub index: u32,
    pub _pad: u32,
}

/// Up to three channel pairs at one scale, computed in one launch (grid.z = pair).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SsimPlanes {
    pub pairs: [ScalePair; MAX_CHANNELS],
    pub count: u32,
    pub scale: u32,
}

/// f64 values per result slot: (ssim sum, cs sum) per channel and scale.
pub const RESULT_LEN: usize = MAX_CHANNELS * SCALES * 2;

/// The five Gaussian-weighted moments of a window.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Moments {
    pub x: f64,
    pub y: f64,
    pub xx: f64,
    pub yy: f64,
    pub xy: f64,
}

impl Moments {
    /// One sample pair in `f64` and its three products: its moments with weight 1.
    #[inline(always)]
    pub fn of_sample(x: f32, y: f32) -> Moments {
        let (x, y) = (x as f64, y as f64);
        Moments {
            x,
            y,
            xx: x * x,
            yy: y * y,
            xy: x * y,
        }
    }

    /// Adds one sample pair with weight `w` (horizontal pass). A thread that adds one
    /// sample to several windows forms [`Moments::of_sample`] once and adds it with
    /// [`Moments::add_moments`]: the same operations, so the same values.
    #[inline(always)]
    pub fn add_sample(&mut self, w: f64, x: f32, y: f32) {
        self.add_moments(w, &Moments::of_sample(x, y));
    }

    /// Adds moments with weight `w`: horizontally filtered ones (vertical pass), or one
    /// sample's ([`Moments::of_sample`], horizontal pass).
    #[inline(always)]
    pub fn add_moments(&mut self, w: f64, m: &Moments) {
        self.x += w * m.x;
        self.y += w * m.y;
        self.xx += w * m.xx;
        self.yy += w * m.yy;
        self.xy += w * m.xy;
    }
}

/// C1 = (0.01·peak)², C2 = (0.03·peak)².
#[inline(always)]
pub fn constants(peak: u32) -> (f64, f64) {
    let l = peak as f64;
    let (a, b) = (0.01 * l, 0.03 * l);
    (a * a, b * b)
}

/// (ssim, cs) map values of one window. Identical inputs give exactly (1, 1): numerator
/// and denominator are then the same sums of the same products.
#[inline(always)]
pub fn ssim_cs(m: &Moments, c1: f64, c2: f64) -> (f64, f64) {
    let mx2 = m.x * m.x;
    let my2 = m.y * m.y;
    let mxy = m.x * m.y;
    let vx = m.xx - mx2;
    let vy = m.yy - my2;
    let cov = m.xy - mxy;
    let cs = (2.0 * cov + c2) / (vx + vy + c2);
    let l = (2.0 * mxy + c1) / (mx2 + my2 + c1);
    (l * cs, cs)
}

/// One output of torch's `avg_pool2d(2, stride 2, padding = size % 2,
/// count_include_pad=True)`: the padding zeros count.
#[inline(always)]
pub fn pool2(a: f32, b: f32, c: f32, d: f32) -> f32 {
    ((a + b) + (c + d)) * 0.25
}

/// Size of the next MS-SSIM scale: n/2 rounded up (odd sizes get a leading zero).
#[inline(always)]
pub fn half(n: u32) -> u32 {
    n.div_ceil(2)
}

/// Sample `x` of `row` as f32 on the scale of a channel whose peak is `to_max`.
///
/// # Safety
/// `row` must hold `x + 1` samples of `c`.
#[inline(always)]
pub unsafe fn sample(row: *const u8, x: u32, c: &Channel, to_max: u32) -> f32 {
    if c.sample_bytes == F32_SAMPLES {
        unsafe { *(row.add(x as usize * 4) as *const f32) }
    } else {
        rescale(unsafe { load(row, x, c) }, c.max, to_max) as f32
    }
}

/// Sample (x, y) of `c`, or 0 outside `w`×`h` (the pooling's zero padding).
///
/// # Safety
/// `c` must describe readable memory of `w`×`h` samples.
#[inline(always)]
pub unsafe fn sample_or_zero(c: &Channel, w: u32, h: u32, x: i64, y: i64, to_max: u32) -> f32 {
    if x < 0 || y < 0 || x >= w as i64 || y >= h as i64 {
        0.0
    } else {
        let row = (c.ptr + y as u64 * c.pitch as u64) as *const u8;
        unsafe { sample(row, x as u32, c, to_max) }
    }
}

/// Pooled pixel (i, j) of the next scale of a `w`×`h` channel.
///
/// # Safety
/// As for [`sample_or_zero`].
#[inline(always)]
pub unsafe fn pooled(c: &Channel, w: u32, h: u32, i: u32, j: u32, to_max: u32) -> f32 {
    let x = 2 * i as i64 - (w % 2) as i64;
    let y = 2 * j as i64 - (h % 2) as i64;
    unsafe {
        pool2(
            sample_or_zero(c, w, h, x, y, to_max),
            sample_or_zero(c, w, h, x + 1, y, to_max),
            sample_or_zero(c, w, h, x, y + 1, to_max),
            sample_or_zero(c, w, h, x + 1, y + 1, to_max),
        )
    }
}

/// Output positions of the valid SSIM map along a side of `n` samples.
#[inline(always)]
pub fn valid(n: u32) -> u32 {
    n.saturating_sub(2 * RADIUS)
}

/// Valid SSIM map columns per `ssim_scale` block.
pub const TILE_W: u32 = 32;
/// Valid SSIM map rows per `ssim_scale` block.
pub const TILE_H: u32 = 16;
/// Threads per block: `TILE_W` × `BLOCK_ROWS` (each thread computes `TILE_H / BLOCK_ROWS`
/// map values per column).
pub const BLOCK_ROWS: u32 = 8;
/// Input tile: the map tile, its 5-sample halo, and one more column/row in front for the
/// pooling of odd sizes (whose windows start one sample before the image).
pub const IN_W: u32 = TILE_W + 2 * RADIUS + 1;
pub const IN_H: u32 = TILE_H + 2 * RADIUS + 1;
/// Horizontally filtered rows: every input row but the extra one, map columns only.
pub const HROWS: u32 = TILE_H + 2 * RADIUS;
pub const IN_LEN: usize = (IN_W * IN_H) as usize;
pub const H_LEN: usize = (HROWS * TILE_W) as usize;
pub const WARPS: usize = (TILE_W * BLOCK_ROWS / 32) as usize;
/// Adjacent outputs of a row that one thread of the horizontal pass filters: each sample
/// it reads is converted and its products formed once for all the windows it lies in
/// (`H_RUN + TAPS − 1` of them per run instead of `TAPS` per output). Two, not four: on
/// the H200 (2026-12-03 ~21:30) runs of 4 took 55 registers and 46 % of the warp slots
/// (57 % before), so SSIM alone fell 5 %; runs of 2 keep SSIM's rate and, with 5 % fewer
/// instructions, leave the other metrics more room (the six +4 %).
pub const H_RUN: usize = 2;
/// Runs of the horizontal pass per block.
pub const H_RUNS: u32 = HROWS * TILE_W / H_RUN as u32;
const _: () = assert!(TILE_W.is_multiple_of(H_RUN as u32));

/// Blocks along x and y that `ssim_scale` needs for a `w`×`h` channel: enough for the valid
/// map (`TILE_W`×`TILE_H` per block) and, when pooling, for the next scale (half that).
pub fn grid(w: u32, h: u32, pool: bool) -> (u32, u32) {
    let mut gx = valid(w).div_ceil(TILE_W);
    let mut gy = valid(h).div_ceil(TILE_H);
    if pool {
        gx = gx.max(half(w).div_ceil(TILE_W / 2));
        gy = gy.max(half(h).div_ceil(TILE_H / 2));
    }
    (gx, gy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_are_the_normalised_gaussian() {
        let g: std::vec::Vec<f64> = (0..11)
            .map(|i| {
                let k = i as f64 - 5.0;
                (-k * k / (2.0 * 1.5 * 1.5)).exp()
            })
            .collect();
        let s: f64 = g.iter().sum();
        for (w, g) in WEIGHTS.iter().zip(&g) {
            assert!((w - g / s).abs() < 1e-16, "{w} vs {}", g / s);
        }
    }

    #[test]
    fn identical_windows_give_exactly_one() {
        let mut m = Moments::default();
        for (k, w) in WEIGHTS.iter().enumerate() {
            let v = (k * 37 % 251) as f32;
            m.add_sample(*w, v, v);
        }
        let (c1, c2) = constants(255);
        assert_eq!(ssim_cs(&m, c1, c2), (1.0, 1.0));
    }

    #[test]
    fn pooling_pads_odd_sizes_in_front() {
        // 3x1 row [4, 8, 12]: outputs (0 + 4 + 0 + 0)/4 = 1 and (8 + 12)/4 = 5 (one row,
        // odd height: the zero row comes first).
        let data = [4u8, 8, 12];
        let c = Channel {
            ptr: data.as_ptr() as u64,
            pitch: 3,
            step: 1,
            sample_bytes: 1,
            shift: 0,
            max: 255,
            _pad: 0,
        };
        let got: std::vec::Vec<f32> = (0..half(3))
            .map(|i| unsafe { pooled(&c, 3, 1, i, 0, 255) })
            .collect();
        assert_eq!(got, [1.0, 5.0]);
        assert_eq!((half(3), half(1), half(4)), (2, 1, 2));
    }

    #[test]
    fn grid_covers_map_and_pooled_scale() {
        assert_eq!(grid(10, 10, false), (0, 0));
        assert_eq!(grid(43, 27, false), (2, 2));
        assert_eq!(grid(1920, 1080, true), (60, 68));
    }
}
