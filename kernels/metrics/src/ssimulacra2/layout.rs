//! What the SSIMULACRA2 kernels share with the engine: the buffers of one scale ([`Scale`],
//! [`Level`]), the kernels' launch shapes, and their tiles and shared-memory sizes.

use super::math::{IIR_N, SUMS_PER_PLANE};

/// One scale of both images' linear RGB planes: plane `image * 3 + channel` starts at
/// `base + (image * 3 + channel) * plane_len` (`f32`s), rows are `width` values apart.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scale {
    pub base: u64,
    pub width: u32,
    pub height: u32,
    pub plane_len: u32,
    pub _pad: u32,
}

impl Scale {
    #[inline(always)]
    pub fn plane(&self, index: u32) -> *mut f32 {
        (self.base + index as u64 * self.plane_len as u64 * 4) as *mut f32
    }
}

/// Block size of the downsample kernel (16×16).
pub const PIXEL_BLOCK: u32 = 16;
/// Warps per block of `ssimu2_linearize` (the colour stage's blocks, see
/// `crate::color_tile`: each warp covers `LIN_COLS`×2 pixels).
pub const LIN_WARPS: u32 = crate::color_tile::WARPS;
/// Pixel columns of one `ssimu2_linearize` block.
pub const LIN_COLS: u32 = crate::color_tile::COLS;
/// Rows of one `ssimu2_hblur` block and columns of one `ssimu2_vblur` block: one lane each.
pub const LANES: u32 = 32;
/// Threads of the blur kernels: one warp per moment.
pub const BLUR_THREADS: u32 = 5 * LANES;
/// Distance between the two inputs of the recursion (steps n − 6 and n + 4): an input is
/// loaded once and used again, as the left/upper one, this many steps later.
pub const RING: u32 = (2 * IIR_N) as u32;
/// Inputs per tile of `ssimu2_hblur`: four groups of `RING` steps, so a tile of
/// columns [40k, 40k + 40) yields outputs 40k − 4 .. 40k + 36.
pub const HCHUNK: u32 = 4 * RING;
pub(super) const HTILE_STRIDE: u32 = HCHUNK + 1;
/// Input tile elements (a and b planes) and how many each thread loads.
#[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
pub(super) const HTILE_ELEMS: u32 = 2 * LANES * HCHUNK;
#[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
pub(super) const HLOADS: usize = HTILE_ELEMS.div_ceil(BLUR_THREADS) as usize;
/// Rows per round of `ssimu2_vblur` (two rings; five 4-row vector loads per lane).
pub const VCHUNK: u32 = 2 * RING;
const _: () = assert!(
    HLOADS == 16 && HCHUNK == 40 && RING == 10 && VCHUNK == 20,
    "the unroll! lists of ssimu2_hblur and ssimu2_vblur (kernels.rs)"
);
/// Threads of `ssimu2_finish`.
pub const FINISH_THREADS: u32 = 256;
/// Shared-memory sizes: the tiles of the blur kernels (padded against bank conflicts) and
/// the `f64` reduction slots.
pub const HIN_LEN: usize = (2 * LANES * HTILE_STRIDE) as usize;
pub const VM_LEN: usize = (2 * 5 * VCHUNK * (LANES + 1)) as usize;
pub const RED_LEN: usize = 5 * SUMS_PER_PLANE;
pub const FIN_LEN: usize = (FINISH_THREADS / 32) as usize;
/// `ssimu2_map_terms`' terms: (w1, k4) of nine terms per scale.
pub const MAP_TERMS_PER_SCALE: usize = 18;
pub const MAP_TERMS_LEN: usize = MAP_TERMS_PER_SCALE * super::math::MAX_SCALES;

/// One scored scale as the blur kernels see it: six XYB planes (reference X, Y, B,
/// distorted X, Y, B), `width`×`height` row-major; fifteen moment planes (plane·5 +
/// moment) in strips of 32 rows, each strip column-major (pixel (x, y) at
/// `(y / 32 · width + x) · 32 + y % 32`, see [`Level::moment_len`]) so that the row pass
/// writes and the column pass reads whole 128-byte lines; and where its per-block sums go:
/// sum `k` (plane·6 + map·2 + norm) of column block `t` at
/// `partials + k * v_blocks_per_plane + t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Level {
    pub xyb: u64,
    pub moments: u64,
    pub partials: u64,
    /// With a distortion map (`map=ssimulacra2`), where the column pass stores each
    /// pixel's SSIM error and edge difference d1 as `f32`: plane `2·c + which` (c = X, Y,
    /// B; which 0 = SSIM error, 1 = d1) of `width`×`height` values, row-major (see
    /// [`Level::value_plane`]); 0 without a map.
    pub values: u64,
    pub width: u32,
    pub height: u32,
    /// First block of this scale in the grids of `ssimu2_hblur` and `ssimu2_vblur`
    /// (scales follow each other, largest first).
    pub h_first: u32,
    pub v_first: u32,
}

impl Level {
    /// Row groups per plane (`ssimu2_hblur` blocks = 3 × this).
    pub const fn h_blocks_per_plane(&self) -> u32 {
        self.height.div_ceil(LANES)
    }
    /// Column groups per plane (`ssimu2_vblur` blocks = 3 × this).
    pub const fn v_blocks_per_plane(&self) -> u32 {
        self.width.div_ceil(LANES)
    }
    /// Plane `i` of the planes starting at `base`.
    #[inline(always)]
    pub fn plane(&self, base: u64, i: u32) -> *mut f32 {
        (base + i as u64 * self.width as u64 * self.height as u64 * 4) as *mut f32
    }
    /// Values per moment plane: whole strips of 32 rows.
    #[inline(always)]
    pub const fn moment_len(&self) -> u64 {
        self.width as u64 * (self.height.div_ceil(LANES) * LANES) as u64
    }
    /// Moment plane `i`.
    #[inline(always)]
    pub fn moment_plane(&self, i: u32) -> *mut f32 {
        (self.moments + i as u64 * self.moment_len() * 4) as *mut f32
    }
    /// Value plane `i` (`2·c + which`) of a map's [`Level::values`].
    #[inline(always)]
    pub fn value_plane(&self, i: u32) -> *mut f32 {
        self.plane(self.values, i)
    }
}

/// Block size of `ssimu2_map_scale` and `ssimu2_map_sum` (16×16 pixels).
pub const MAP_BLOCK: u32 = 16;

/// The scale that block `b` of a blur grid belongs to (`first` gives a level's first block).
///
/// # Safety
/// `levels` must hold `n` ≥ 1 levels.
#[inline(always)]
pub unsafe fn level_of(
    levels: *const Level,
    n: u32,
    b: u32,
    first: impl Fn(&Level) -> u32,
) -> Level {
    let mut lv = unsafe { *levels };
    for i in 1..n as usize {
        let next = unsafe { *levels.add(i) };
        if b >= first(&next) {
            lv = next;
        }
    }
    lv
}
