//! Butteraugli as in libjxl's current `lib/jxl/butteraugli/butteraugli.cc` (the version the
//! `butteraugli` crate ports), per pixel: the same functions run on the CPU backend (host
//! build) and in the GPU kernels.
//!
//! Both images go through the same stages at full resolution and, when the frame is at least
//! 15×15, again at half resolution (linear RGB averaged 2×2):
//!
//! 1. opsin dynamics: the linear RGB (× intensity target) blurred by a mirrored 5-tap
//!    Gaussian (σ 1.2) sets a per-pixel sensitivity, applied to the unblurred mix → XYB;
//! 2. frequency separation with clamped, renormalised Gaussians: LF (σ 7.16, converted to
//!    "vals"), MF (σ 3.22), HF and UHF (σ 1.56), with libjxl's range and clamp shaping;
//! 3. per pair: Malta line filters (16 orientations) over the scaled UHF/HF/MF differences,
//!    asymmetric L2 on HF and L2 on MF (the AC error of X and Y; B takes MF only);
//! 4. masking: HF+UHF activity of each image, blurred (σ 2.7); the reference's is eroded
//!    (the mean of the three smallest values 3 pixels apart) into the mask, and the squared
//!    difference of the two blurred activities joins the Y error;
//! 5. the diffmap: √(masked DC error of LF + masked AC error); the half-resolution diffmap
//!    is added in upsampled (weight 0.5, mixing 0.3); the scores are its maximum and
//!    libjxl's 3-norm (mean of the 3-, 6- and 12-norms).
//!
//! Planes of one level live in one buffer ([`Level`]); [`plane`] names them.

pub mod blur;
mod kernels;
pub mod malta;
pub mod pixel;

/// The smallest frame side Butteraugli scores (libjxl refuses smaller images).
pub const MIN_SIZE: u32 = 8;
/// Frames at least this large on both sides are also compared at half resolution.
pub const MIN_SIZE_FOR_SUBLEVEL: u32 = 15;
/// Zero border around the Malta input planes: the filters reach 4 pixels.
pub const MALTA_PAD: u32 = 4;

/// Row stride of the padded planes of a level `width` wide: the row and a [`MALTA_PAD`]
/// border on each side, rounded up to a multiple of 4 (the extra columns are more zero
/// border). `ba_ac_error` reads each row of its 4-pixel groups' windows
/// ([`malta::GROUP`] pixels and the border's reach on each side) as aligned 16-byte
/// vectors: with this stride every window row starts 16-byte aligned, and the last
/// group's window (12 columns from the multiple of 4 at or below `width − 1`, in padded
/// columns) ends inside its row.
#[inline(always)]
pub const fn padded_stride(width: u32) -> u32 {
    (width + 2 * MALTA_PAD).next_multiple_of(4)
}

/// Values between the padded planes of a `width`×`height` level: its rows of
/// [`padded_stride`] with [`MALTA_PAD`] rows of zeroes above and below, rounded up to a
/// multiple of 64 (every padded plane starts 256-byte aligned).
#[inline(always)]
pub const fn padded_len(width: u32, height: u32) -> u32 {
    (padded_stride(width) * (height + 2 * MALTA_PAD)).next_multiple_of(64)
}

/// Largest Gaussian half-width (σ 7.16 · 2.25 → 16), with room to spare.
pub const MAX_TAPS: usize = 64;
/// Threads per block of the per-pixel kernels: 32 × [`BLOCK_ROWS`].
pub const BLOCK_ROWS: u32 = 8;
/// Columns of a block of the row-pass kernel (`ba_gauss_row`): 32 threads of
/// [`blur::RUN`] consecutive outputs.
pub const ROW_SPAN: u32 = 32 * blur::RUN as u32;
/// Staged samples per row of a row-pass block: its columns and [`blur::MAX_HALF`] on each
/// side (a multiple of 4, so that every row's runs are read as aligned 16-byte vectors).
pub const ROW_STAGE_W: u32 = ROW_SPAN + 2 * blur::MAX_HALF as u32;
/// Staged samples of a row-pass block: [`BLOCK_ROWS`] rows of [`ROW_STAGE_W`].
pub const ROW_STAGE_LEN: usize = 1280;
const _: () =
    assert!(ROW_STAGE_LEN == (BLOCK_ROWS * ROW_STAGE_W) as usize && ROW_STAGE_W.is_multiple_of(4));
/// `half` of each Gaussian ([`filter`] order) for σ 7.156, 3.225, 1.564 and 2.7: the GPU's
/// run kernels are compiled for these widths (a table whose widths differ would take
/// their per-output path: correct, only slower; the engine's filters are tested to match).
pub const HALVES: [usize; filter::COUNT] = [16, 7, 3, 6];
const _: () = assert!(
    HALVES[0] <= blur::MAX_HALF
        && HALVES[1] <= blur::MAX_HALF
        && HALVES[2] <= blur::MAX_HALF
        && HALVES[3] <= blur::MAX_HALF
);
/// Threads of the reduction kernel's blocks.
pub const REDUCE_THREADS: u32 = 256;
/// Warps of a reduction block.
pub const REDUCE_WARPS: usize = 8;
const _: () = assert!(REDUCE_WARPS * 32 == REDUCE_THREADS as usize);
/// Values each reduction block writes: max, Σd³, Σd⁶, Σd¹².
pub const REDUCE_VALUES: usize = 4;
/// Shared slots of the reduction: every value of every warp.
pub const RED_LEN: usize = REDUCE_VALUES * REDUCE_WARPS;

/// Plane indices of a [`Level`]. Planes that are dead after a stage are reused by later
/// ones (linear RGB → masking planes, XYB → diffmap), which keeps a level at 38 planes.
pub mod plane {
    /// Linear RGB of image `i` (0 reference, 1 distorted), channel `c`.
    pub const fn rgb(i: u32, c: u32) -> u32 {
        i * 3 + c
    }
    /// Scratch of the horizontal blur passes, six planes.
    pub const fn tmp(k: u32) -> u32 {
        6 + k
    }
    /// XYB of image `i` after opsin dynamics.
    pub const fn xyb(i: u32, c: u32) -> u32 {
        12 + i * 3 + c
    }
    /// LF (in "vals" space) of image `i`.
    pub const fn lf(i: u32, c: u32) -> u32 {
        18 + i * 3 + c
    }
    /// MF of image `i` (X, Y shaped; B blurred).
    pub const fn mf(i: u32, c: u32) -> u32 {
        24 + i * 3 + c
    }
    /// HF of image `i`, channels X and Y.
    pub const fn hf(i: u32, c: u32) -> u32 {
        30 + i * 2 + c
    }
    /// UHF of image `i`, channels X and Y.
    pub const fn uhf(i: u32, c: u32) -> u32 {
        34 + i * 2 + c
    }
    /// HF+UHF activity of image `i` before the masking blur (reuses linear RGB).
    pub const fn mask_in(i: u32) -> u32 {
        i
    }
    /// The reference's blurred activity, input of the erosion (reuses linear RGB).
    pub const MASK_BLURRED: u32 = 2;
    /// Difference of the two blurred activities (reuses linear RGB).
    pub const MASK_DIFF: u32 = 3;
    /// AC error of channel `c` (X, Y) before masking (reuses linear RGB).
    pub const fn ac(c: u32) -> u32 {
        4 + c
    }
    /// The level's diffmap (reuses XYB).
    pub const DIFFMAP: u32 = 12;
    /// Planes per level.
    pub const COUNT: u32 = 38;
    /// Malta inputs (padded planes): band `b` (0 UHF, 1 HF, 2 MF), channel `c` (X, Y).
    pub const fn malta(b: u32, c: u32) -> u32 {
        b * 2 + c
    }
    /// Padded planes per level.
    pub const PADDED_COUNT: u32 = 6;
}

/// One resolution level: [`plane::COUNT`] planes of `width`×`height` at
/// `base + index · plane_len` (`f32`s, rows `width` apart), and [`plane::PADDED_COUNT`]
/// planes with a [`MALTA_PAD`] zero border at `padded + index · padded_len` (rows
/// [`padded_stride`] apart, [`padded_len`] values; the border is zeroed once and never
/// written). For the GPU's `ba_ac_error`, `padded` must be 16-byte aligned (device
/// allocations are 256-byte aligned; the CPU backend's per-pixel path needs no more than
/// `f32` alignment).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Level {
    pub base: u64,
    pub padded: u64,
    pub width: u32,
    pub height: u32,
    pub plane_len: u32,
    pub padded_len: u32,
    /// Where the level's linear RGB ([`plane::rgb`]) lies when not in its own planes: the
    /// planes of the engine's shared linear-light stage (`crate::linear_light::Planes`,
    /// plane stride `rgb_len` values), read by the full level when Butteraugli and
    /// SSIMULACRA2 both run. 0: the level's own planes.
    pub rgb: u64,
    pub rgb_len: u32,
    pub _pad: u32,
}

impl Level {
    /// Plane `index`.
    #[inline(always)]
    pub fn plane(&self, index: u32) -> *mut f32 {
        (self.base + index as u64 * self.plane_len as u64 * 4) as *mut f32
    }

    /// Linear RGB plane `index` ([`plane::rgb`]): the level's own, or the shared stage's
    /// (`rgb`).
    #[inline(always)]
    pub fn rgb_plane(&self, index: u32) -> *mut f32 {
        match self.rgb {
            0 => self.plane(index),
            at => (at + index as u64 * self.rgb_len as u64 * 4) as *mut f32,
        }
    }

    /// Row stride of the padded planes ([`padded_stride`]).
    #[inline(always)]
    pub fn padded_stride(&self) -> u32 {
        padded_stride(self.width)
    }

    /// Pixel (0, 0) of padded plane `index`.
    #[inline(always)]
    pub fn padded_origin(&self, index: u32) -> *mut f32 {
        let origin = MALTA_PAD * self.padded_stride() + MALTA_PAD;
        (self.padded + (index as u64 * self.padded_len as u64 + origin as u64) * 4) as *mut f32
    }
}

/// A Gaussian of the frequency separation: its `2·half + 1` raw weights (for the clamped
/// borders, renormalised per pixel) and the same divided by their sum (the interior).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Taps {
    pub half: u32,
    pub _pad: [u32; 3],
    pub kernel: [f32; MAX_TAPS],
    pub scaled: [f32; MAX_TAPS],
}

impl Default for Taps {
    fn default() -> Self {
        Taps {
            half: 0,
            _pad: [0; 3],
            kernel: [0.0; MAX_TAPS],
            scaled: [0.0; MAX_TAPS],
        }
    }
}

/// The Gaussians, in the order of the taps table the blur kernels read.
pub mod filter {
    /// σ 7.156: LF from XYB.
    pub const LF: u32 = 0;
    /// σ 3.225: MF/HF split.
    pub const HF: u32 = 1;
    /// σ 1.564: HF/UHF split.
    pub const UHF: u32 = 2;
    /// σ 2.7: the masking blur.
    pub const MASK: u32 = 3;
    pub const COUNT: usize = 4;
}

/// Per-pair constants derived on the host from the parameters (intensity target,
/// hf_asymmetry, xmul).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Params {
    /// Nits of linear 1.0.
    pub intensity: f32,
    pub hf_asymmetry: f32,
    pub xmul: f32,
    /// Weights of the mirrored 5-tap opsin blur: centre, ±1, ±2.
    pub blur5: [f32; 3],
    /// Per Malta input ([`plane::malta`] order): scale of the difference when the
    /// reference is larger, scale of the asymmetric penalty, and the normaliser.
    pub malta: [[f32; 3]; 6],
}
