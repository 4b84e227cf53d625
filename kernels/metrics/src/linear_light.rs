//! Linear light of a frame, as a stage of its own: the frames' display-referred linear RGB
//! (BT.709 primaries, [`color::to_linear_rgb`] of [`color_tile::nonlinear_rgb`]) in three
//! planes per image. Butteraugli and SSIMULACRA2 both start from these values, bit for bit;
//! when both run, the engine computes them once per pair (the engine's
//! `cuda::linear_light`) and each metric reads the planes instead of converting the frames
//! again (the conversion's chroma taps and power functions were 2 × 43 µs of Butteraugli's
//! pair and most of SSIMULACRA2's 2 × 66 µs colour stage at 1080p on an H200). Butteraugli
//! alone writes the same planes into its own arena with the same kernel.

#[cfg(target_arch = "nvptx64")]
use crate::color::{self, ColorSource};
#[cfg(target_arch = "nvptx64")]
use crate::color_tile;

/// Where the linear planes of both images lie: plane `img · 3 + c` (image 0 the reference,
/// 1 the distorted; channel R, G, B) starts at `base + (img · 3 + c) · plane_len · 4`,
/// rows of `width` values one after the other.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Planes {
    pub base: u64,
    pub width: u32,
    pub height: u32,
    pub plane_len: u32,
    pub _pad: u32,
}

impl Planes {
    /// Plane `index` (`img · 3 + c`).
    #[inline(always)]
    pub fn plane(&self, index: u32) -> *mut f32 {
        (self.base + index as u64 * self.plane_len as u64 * 4) as *mut f32
    }
}

/// Planes of both images: 3 channels each.
pub const PLANES: u32 = 6;

gpumetrics_device::kernel! {
    /// Linear RGB of image `img` (0 reference, 1 distorted; one launch each, so that the
    /// kernel reads one source's fields as constants instead of selecting each between
    /// two) into `out`'s planes `img · 3 ..`. The colour stage's blocks (`color_tile`):
    /// block (32, `color_tile::WARPS`), grid over `color_tile::COLS` × `color_tile::ROWS`
    /// pixels.
    pub unsafe fn linear_light(src: ColorSource, img: u32, out: Planes) => linearize;
}

/// The body of `linear_light`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn linearize(src: ColorSource, img: u32, out: Planes) {
    if img > 1 {
        return;
    }
    let (x, y) = color_tile::pixel();
    let (w, h) = (out.width, out.height);
    // Every thread of the block takes part in the chroma tile, also past the frame's edge.
    let (cx, cy) = (x.min(w - 1), y.min(h - 1));
    let rgb = color::to_linear_rgb(&src, unsafe { color_tile::nonlinear_rgb(&src, cx, cy) });
    if x < w && y < h {
        let at = (y * w + x) as usize;
        // Unrolled: an iterator loop left `rgb` in local memory on the GPU.
        unroll!(c in [0 1 2] {
            // SAFETY: (x, y) is inside the planes, which the launcher sized for `out`.
            unsafe { *out.plane(img * 3 + c as u32).add(at) = rgb[c] };
        });
    }
}
