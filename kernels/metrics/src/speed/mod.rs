//! SpEED (spatial efficient entropic differencing) as libvmaf v3.2.0's float `speed_chroma`
//! feature computes it for one chroma plane: the plane as float around 0, optionally
//! resampled (`prescale`), a Gaussian anti-alias filter sampled every 16th pixel, the local
//! mean of that small image subtracted, then a Gaussian scale mixture model over 5×5 blocks:
//! the covariance of all 5×5 patches, its eigenvalues, and per block the variance estimate
//! `s = yᵀK⁻¹y / 25` and the entropy `Σ log2(2πe(λ s + σ²ₙ))`; the score is the mean over
//! blocks of `|h_ref·log2(1+v_ref) − h_dis·log2(1+v')|` (variance weighting by mode).
//!
//! Every function here is one output element (a sample, a covariance entry, a block) or a
//! fixed 25×25 problem, over slices, so the CPU backend calls them row-parallel and a GPU
//! kernel can call the same ones per thread. The arithmetic follows libvmaf's C step for
//! step, including where C promotes to `double` (its `sqrt`, `log2` and `double` literals)
//! and where it stays in `float`: the eigenvalue iteration and the QR solve amplify any
//! other rounding, and the reference's identical-input score (about 4e-6, from mode 5's
//! mixed precision) is only reproduced this way.
//!
//! - this module: sizes ([`Dims`]), sample loading, resampling and the separable filters;
//! - [`linalg`]: symmetric eigenvalues (Householder tridiagonalisation + implicit QR) and the
//!   Householder QR factorisation with the per-column back substitution;
//! - [`stats`]: patch means and covariances, block variances and entropies, score terms.

mod kernels;
pub mod linalg;
pub mod stats;

use crate::channel::{Channel, load as load_sample, rescale};

/// Side of the blocks (and patches) of the model.
pub const BLOCK: usize = 5;
/// Elements of a block: the covariance matrix is `ELEMS`×`ELEMS`.
pub const ELEMS: usize = BLOCK * BLOCK;
/// The anti-alias filter is sampled every `1 << SCALES` pixels.
pub const SCALES: u32 = 4;
/// Room for the longest filter SpEED uses (scale 1 at kernelscale 4: 37 taps).
pub const MAX_TAPS: usize = 64;

/// Resampling methods of `speed_prescale_method`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resample {
    Nearest = 0,
    Bilinear = 1,
    Bicubic = 2,
}

/// Sizes of one plane through the steps, fixed per stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dims {
    /// The plane as measured.
    pub width: usize,
    pub height: usize,
    /// After prescaling (equal to the plane's when not prescaled).
    pub scaled_width: usize,
    pub scaled_height: usize,
    /// Whether the plane is resampled at all (libvmaf skips it for a prescale within 1e-3 of 1).
    pub resampled: bool,
    /// After sampling every 16th pixel.
    pub op_width: usize,
    pub op_height: usize,
    /// Side of the blocks.
    pub block: usize,
    /// Whole blocks across and down.
    pub blocks_x: usize,
    pub blocks_y: usize,
}

/// Why [`Dims::new`] refuses a plane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DimsError {
    /// Fewer than one block is left after the 16× reduction.
    TooSmall,
    /// The prescale is within libvmaf's 1e-3 of 1 (so libvmaf does not resample) but still
    /// changes the rounded size: libvmaf would then read samples it never wrote.
    PrescaleNearOne,
}

impl Dims {
    /// The sizes of a `width`×`height` plane at `prescale` with blocks of `block` (libvmaf:
    /// sizes rounded as `(int)(side * prescale + 0.5)`, then `>> 4`, then whole blocks).
    pub fn new(
        width: usize,
        height: usize,
        prescale: f64,
        block: usize,
    ) -> Result<Dims, DimsError> {
        let scaled = |side: usize| (side as f64 * prescale + 0.5) as usize;
        let (scaled_width, scaled_height) = (scaled(width), scaled(height));
        let near_one = (prescale - 1.0).abs() < 1.0e-3;
        let resampled = !near_one;
        if !resampled && (scaled_width, scaled_height) != (width, height) {
            return Err(DimsError::PrescaleNearOne);
        }
        let (op_width, op_height) = (scaled_width >> SCALES, scaled_height >> SCALES);
        let (blocks_x, blocks_y) = (op_width / block.max(1), op_height / block.max(1));
        if block == 0 || blocks_x == 0 || blocks_y == 0 {
            return Err(DimsError::TooSmall);
        }
        Ok(Dims {
            width,
            height,
            scaled_width,
            scaled_height,
            resampled,
            op_width,
            op_height,
            block,
            blocks_x,
            blocks_y,
        })
    }

    /// Blocks in all.
    pub fn blocks(&self) -> usize {
        self.blocks_x * self.blocks_y
    }

    /// Size of the region the patches' top-left corners range over (the whole blocks' area
    /// less a block, plus one).
    pub fn patch_span(&self) -> (usize, usize) {
        (
            self.blocks_x * self.block - self.block + 1,
            self.blocks_y * self.block - self.block + 1,
        )
    }
}

/// Sample `x` of row `y` of a chroma channel as libvmaf's float copy makes it: rescaled to
/// the reference's depth `max` (a distorted input of another depth), divided by
/// 2^(depth − 8) and offset by −128. (libvmaf does this for 8, 10, 12 and 16 bits; other
/// depths follow the same rule here.)
///
/// # Safety
/// The channel must be readable at (x, y).
#[inline(always)]
pub unsafe fn load(c: &Channel, x: u32, y: u32, max: u32) -> f32 {
    let row = (c.ptr + y as u64 * c.pitch as u64) as *const u8;
    let v = rescale(unsafe { load_sample(row, x, c) }, c.max, max);
    to_float(v, max)
}

/// A sample of depth `max` (2^depth − 1) on libvmaf's float scale.
#[inline(always)]
pub fn to_float(v: u32, max: u32) -> f32 {
    let scale = ((max as u64 + 1) >> 8).max(1) as f32;
    v as f32 / scale + -128.0
}

/// Reflection about the edge sample (… 2 1 | 0 … n−1 | n−2 …), the filters' padding, kept
/// inside the plane even for filters longer than it (which valid sizes never have).
#[inline(always)]
pub fn reflect(i: isize, n: usize) -> usize {
    let n = n as isize;
    let r = if i < 0 {
        -i
    } else if i >= n {
        2 * n - i - 2
    } else {
        i
    };
    r.clamp(0, n - 1) as usize
}

#[inline(always)]
fn floor(x: f32) -> f32 {
    // |x| stays far below 2^23 here (positions inside a plane).
    let t = x as i32 as f32;
    if t > x { t - 1.0 } else { t }
}

#[inline(always)]
fn ceil(x: f32) -> f32 {
    let t = x as i32 as f32;
    if t < x { t + 1.0 } else { t }
}

/// libvmaf's mirror of the resamplers, on float positions.
#[inline(always)]
fn mirror_pos(i: f32, right: f32) -> f32 {
    if i < 0.0 {
        -i
    } else if i > right {
        2.0 * right - i
    } else {
        i
    }
}

/// Index from a mirrored float position, kept inside the plane.
#[inline(always)]
fn index(pos: f32, n: usize) -> usize {
    (pos as i32).clamp(0, n as i32 - 1) as usize
}

/// The resampler's source position of output `i` for a ratio `src / dst` (pixel centres
/// aligned, as libvmaf computes it in `double` and stores as `float`).
#[inline(always)]
fn centre(i: usize, ratio: f32) -> f32 {
    ((i as f64 + 0.5) * ratio as f64 - 0.5) as f32
}

#[inline(always)]
fn cubic(t: f32) -> f32 {
    let a = -0.75f32;
    let t = if t < 0.0 { -t } else { t };
    if t < 1.0 {
        ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0
    } else if t < 2.0 {
        (((t - 5.0) * t + 8.0) * t - 4.0) * a
    } else {
        0.0
    }
}

/// Output sample (x, y) of the `dw`×`dh` resampling of the `sw`×`sh` plane `src` (rows
/// `stride` apart).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn resample(
    method: Resample,
    src: &[f32],
    stride: usize,
    (sw, sh): (usize, usize),
    (dw, dh): (usize, usize),
    x: usize,
    y: usize,
) -> f32 {
    let (rx, ry) = (sw as f32 / dw as f32, sh as f32 / dh as f32);
    let at = |xi: usize, yi: usize| src[yi * stride + xi];
    match method {
        Resample::Nearest => {
            let (xi, yi) = ((x as f32 * rx) as usize, (y as f32 * ry) as usize);
            at(xi.min(sw - 1), yi.min(sh - 1))
        }
        Resample::Bilinear => {
            let (px, py) = (centre(x, rx), centre(y, ry));
            let (right, bottom) = ((sw - 1) as f32, (sh - 1) as f32);
            let x1 = mirror_pos(floor(px), right) as i32;
            let x2 = mirror_pos(ceil(px), right) as i32;
            let y1 = mirror_pos(floor(py), bottom) as i32;
            let y2 = mirror_pos(ceil(py), bottom) as i32;
            let dx = px - x1 as f32;
            let dy = py - y1 as f32;
            let (x1u, x2u) = (index(x1 as f32, sw), index(x2 as f32, sw));
            let (y1u, y2u) = (index(y1 as f32, sh), index(y2 as f32, sh));
            (1.0 - dy) * (1.0 - dx) * at(x1u, y1u)
                + (1.0 - dy) * dx * at(x2u, y1u)
                + dy * (1.0 - dx) * at(x1u, y2u)
                + dy * dx * at(x2u, y2u)
        }
        Resample::Bicubic => {
            let (px, py) = (centre(x, rx), centre(y, ry));
            let (x0, y0) = (floor(px) as i32, floor(py) as i32);
            let (fx, fy) = (px - x0 as f32, py - y0 as f32);
            let mut wx = [0.0f32; 4];
            let mut wy = [0.0f32; 4];
            for i in 0..4 {
                wx[i] = cubic((i as i32 - 1) as f32 - fx);
                wy[i] = cubic((i as i32 - 1) as f32 - fy);
            }
            let (right, bottom) = ((sw - 1) as f32, (sh - 1) as f32);
            let mut v = 0.0f32;
            for (j, wyj) in wy.iter().enumerate() {
                let yi = index(mirror_pos((y0 + j as i32 - 1) as f32, bottom), sh);
                for (i, wxi) in wx.iter().enumerate() {
                    let xi = index(mirror_pos((x0 + i as i32 - 1) as f32, right), sw);
                    v += at(xi, yi) * (wxi * wyj);
                }
            }
            v
        }
    }
}

/// Vertical pass of the separable filter `taps` at (x, y) of a `w`×`h` plane (rows `stride`
/// apart), reflected at the edges; f32 accumulation in tap order, as libvmaf.
#[inline(always)]
pub fn filter_vertical(
    taps: &[f32],
    src: &[f32],
    stride: usize,
    h: usize,
    x: usize,
    y: usize,
) -> f32 {
    let half = (taps.len() / 2) as isize;
    let mut acc = 0.0f32;
    for (i, &t) in taps.iter().enumerate() {
        let yy = reflect(y as isize - half + i as isize, h);
        acc += t * src[yy * stride + x];
    }
    acc
}

/// Horizontal pass at `x` over a row of `w` vertical-pass results.
#[inline(always)]
pub fn filter_horizontal(taps: &[f32], row: &[f32], w: usize, x: usize) -> f32 {
    let half = (taps.len() / 2) as isize;
    let mut acc = 0.0f32;
    for (i, &t) in taps.iter().enumerate() {
        acc += t * row[reflect(x as isize - half + i as isize, w)];
    }
    acc
}

/// libvmaf's filter length for `scale` (0..=4) at `kernelscale`: `2^(4−scale) + 1` taps
/// scaled and rounded up to odd, at least 3.
pub fn filter_len(scale: u32, kernelscale: f32) -> usize {
    let n = ((1u32 << (4 - scale.min(4))) + 1) as f32;
    let c = ceil(n * kernelscale) as i32;
    let odd = if c % 2 == 0 { c + 1 } else { c };
    odd.max(3) as usize
}

/// Planes measured per pair on the GPU: U and V of the reference and the distorted, job
/// `2 · plane + side` (side 0 the reference).
pub const JOBS: usize = 4;

/// Threads of the `kernels` per-job block (`speed_stats`): at least one per covariance
/// entry ([`stats::PAIRS`]), whole warps.
pub const STATS_THREADS: u32 = (stats::PAIRS as u32).div_ceil(32) * 32;

/// Threads of `speed_qr`'s per-job block: one per entry of the 25×25 matrices.
pub const QR_THREADS: u32 = ((ELEMS * ELEMS) as u32).div_ceil(32) * 32;
/// Threads per block of `speed_solve` (one thread per SpEED block).
pub const SOLVE_THREADS: u32 = 64;

/// The 2D kernels' block: `TILE_X`×`TILE_Y` threads.
pub const TILE_X: u32 = 32;
pub const TILE_Y: u32 = 8;

/// One pair's SpEED on the GPU: the four jobs' channels, the sizes ([`Dims`] as `u32`) and
/// the device buffers, each holding [`JOBS`] regions of one job's length, job `j` at
/// `j · len` ([`Frames::plane_len`] and the others). Crosses the kernel boundary by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Frames {
    /// Per job, the chroma channel to read (the distorted's with its own `max`).
    pub channels: [Channel; JOBS],
    /// The reference's peak, 2^depth − 1: both sides are converted at its depth.
    pub max: u32,
    /// [`Resample`] as `u32`.
    pub method: u32,
    /// [`Dims`]' sizes.
    pub width: u32,
    pub height: u32,
    pub scaled_width: u32,
    pub scaled_height: u32,
    /// 1 when the plane is resampled ([`Dims::resampled`]).
    pub resampled: u32,
    pub op_width: u32,
    pub op_height: u32,
    pub block: u32,
    pub blocks_x: u32,
    pub blocks_y: u32,
    /// Taps of the anti-alias and the local-mean filters (at most [`MAX_TAPS`] each).
    pub aa_len: u32,
    pub local_len: u32,
    /// `f32` device buffers: the filter taps (`aa_len` anti-alias taps, then `local_len`),
    /// the loaded planes, the resampled planes (unused when not resampled), the anti-alias
    /// filter's vertical pass at every 16th row, the local filter's vertical pass, and the
    /// output: per job the covariance entries, QR factors, block variances and the reduced,
    /// mean-subtracted plane (`op_width`×`op_height`), laid out as [`Frames::out_len`] says.
    pub taps: u64,
    pub plane: u64,
    pub scaled: u64,
    pub rows: u64,
    pub vertical: u64,
    pub out: u64,
}

impl Frames {
    /// The sizes as [`Dims`].
    #[inline(always)]
    pub fn dims(&self) -> Dims {
        Dims {
            width: self.width as usize,
            height: self.height as usize,
            scaled_width: self.scaled_width as usize,
            scaled_height: self.scaled_height as usize,
            resampled: self.resampled != 0,
            op_width: self.op_width as usize,
            op_height: self.op_height as usize,
            block: self.block as usize,
            blocks_x: self.blocks_x as usize,
            blocks_y: self.blocks_y as usize,
        }
    }

    /// The resampling method ([`Resample::Nearest`] for an unknown value).
    #[inline(always)]
    pub fn resample(&self) -> Resample {
        match self.method {
            1 => Resample::Bilinear,
            2 => Resample::Bicubic,
            _ => Resample::Nearest,
        }
    }

    /// Values of one job's region of each buffer.
    #[inline(always)]
    pub fn plane_len(&self) -> usize {
        self.width as usize * self.height as usize
    }

    /// 0 when the plane is not resampled.
    #[inline(always)]
    pub fn scaled_len(&self) -> usize {
        if self.resampled != 0 {
            self.scaled_width as usize * self.scaled_height as usize
        } else {
            0
        }
    }

    #[inline(always)]
    pub fn rows_len(&self) -> usize {
        self.op_height as usize * self.scaled_width as usize
    }

    #[inline(always)]
    pub fn op_len(&self) -> usize {
        self.op_width as usize * self.op_height as usize
    }

    /// Blocks of the plane.
    #[inline(always)]
    pub fn blocks(&self) -> usize {
        self.blocks_x as usize * self.blocks_y as usize
    }

    /// Offsets in one job's output region: the covariance entries ([`stats::pair`] order),
    /// the QR factors `p` and `r` (`ELEMS`×`ELEMS` each, [`linalg::qr`]'s), each block's
    /// variance estimate from them (`blocks`), then the reduced, mean-subtracted plane.
    #[inline(always)]
    pub fn out_p(&self) -> usize {
        stats::PAIRS
    }

    #[inline(always)]
    pub fn out_r(&self) -> usize {
        self.out_p() + ELEMS * ELEMS
    }

    #[inline(always)]
    pub fn out_s(&self) -> usize {
        self.out_r() + ELEMS * ELEMS
    }

    #[inline(always)]
    pub fn out_op(&self) -> usize {
        self.out_s() + self.blocks()
    }

    /// One job's output ([`Self::out_p`] and the others).
    #[inline(always)]
    pub fn out_len(&self) -> usize {
        self.out_op() + self.op_len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;
    use std::vec::Vec;

    #[test]
    fn sizes_follow_libvmaf_and_refuse_small_planes() {
        let d = Dims::new(320, 240, 1.0, BLOCK).unwrap();
        assert_eq!(
            (d.op_width, d.op_height, d.blocks_x, d.blocks_y),
            (20, 15, 4, 3)
        );
        assert_eq!(d.patch_span(), (16, 11));
        assert!(!d.resampled);
        let d = Dims::new(960, 540, 0.5, BLOCK).unwrap();
        assert_eq!(
            (d.scaled_width, d.scaled_height, d.op_width, d.op_height),
            (480, 270, 30, 16)
        );
        assert!(d.resampled);
        assert_eq!(Dims::new(321, 241, 0.6, BLOCK).unwrap().scaled_width, 193);
        // 79 columns leave 4 after the reduction: less than a block.
        assert_eq!(Dims::new(79, 500, 1.0, BLOCK), Err(DimsError::TooSmall));
        assert_eq!(Dims::new(500, 80, 1.0, BLOCK).map(|d| d.blocks_y), Ok(1));
        assert_eq!(Dims::new(150, 150, 0.5, BLOCK), Err(DimsError::TooSmall));
        assert_eq!(Dims::new(0, 0, 1.0, BLOCK), Err(DimsError::TooSmall));
        assert_eq!(
            Dims::new(4000, 4000, 1.0004, BLOCK),
            Err(DimsError::PrescaleNearOne)
        );
        assert!(Dims::new(400, 400, 1.0004, BLOCK).is_ok());
    }

    #[test]
    fn samples_are_centred_on_libvmafs_scale() {
        assert_eq!(to_float(0, 255), -128.0);
        assert_eq!(to_float(128, 255), 0.0);
        assert_eq!(to_float(1023, 1023), 127.75);
        assert_eq!(to_float(4095, 4095), 4095.0 / 16.0 - 128.0);
        assert_eq!(to_float(65535, 65535), 65535.0 / 256.0 - 128.0);
        assert_eq!(to_float(511, 511), 511.0 / 2.0 - 128.0);
    }

    #[test]
    fn filter_lengths() {
        assert_eq!(filter_len(1, 1.0), 9);
        assert_eq!(filter_len(4, 1.0), 3);
        assert_eq!(filter_len(1, 0.5), 5);
        assert_eq!(filter_len(4, 4.0), 9);
        assert_eq!(filter_len(1, 4.0), 37);
        assert!(filter_len(1, 4.0) <= MAX_TAPS && filter_len(4, 4.0) <= MAX_TAPS);
    }

    #[test]
    fn reflection_never_leaves_the_plane() {
        assert_eq!(reflect(-2, 10), 2);
        assert_eq!(reflect(10, 10), 8);
        assert_eq!(reflect(11, 10), 7);
        for i in -40..40 {
            assert!(reflect(i, 3) < 3);
        }
    }

    #[test]
    fn flat_planes_stay_flat_through_filters_and_resampling() {
        let (w, h) = (37, 23);
        let src = vec![3.25f32; w * h];
        let taps = [0.25f32, 0.5, 0.25];
        for y in 0..h {
            for x in 0..w {
                assert_eq!(filter_vertical(&taps, &src, w, h, x, y), 3.25);
            }
        }
        let row: Vec<f32> = (0..w)
            .map(|x| filter_vertical(&taps, &src, w, h, x, 0))
            .collect();
        assert_eq!(filter_horizontal(&taps, &row, w, 0), 3.25);
        for m in [Resample::Nearest, Resample::Bilinear, Resample::Bicubic] {
            for (dw, dh) in [(18, 11), (22, 14), (74, 46)] {
                for y in 0..dh {
                    for x in 0..dw {
                        let v = resample(m, &src, w, (w, h), (dw, dh), x, y);
                        assert!((v - 3.25).abs() < 1e-5, "{m:?} {x} {y} {v}");
                    }
                }
            }
        }
    }

    #[test]
    fn bilinear_halving_averages_pixel_pairs() {
        // A ramp: at ratio 2 each output sits between two inputs.
        let (w, h) = (8, 4);
        let src: Vec<f32> = (0..w * h).map(|i| (i % w) as f32).collect();
        for x in 0..4 {
            let v = resample(Resample::Bilinear, &src, w, (w, h), (4, 2), x, 0);
            assert_eq!(v, 2.0 * x as f32 + 0.5);
        }
        assert_eq!(
            resample(Resample::Nearest, &src, w, (w, h), (4, 2), 3, 1),
            6.0
        );
    }
}
