//! The colour stage of a block of 16 × 8 pixels on the GPU: subsampled chroma read once per
//! block into shared memory, then each pixel's taps read from there. The kernels that start
//! from linear light (`ssimu2_linearize`, `linear_light`) share it; read per pixel from
//! memory, the sixteen taps of both chroma channels (each a clamped, format-dispatched
//! load and a conversion) were most of the linear-light stage's 935 instructions per pixel
//! (then Butteraugli's `ba_linearize`). The
//! values are [`color::nonlinear_rgb`]'s, bit for bit.

#[cfg(target_arch = "nvptx64")]
use crate::color::{self, ColorSource};
#[cfg(target_arch = "nvptx64")]
use gpumetrics_device as dev;

/// Warps per block (each covers `COLS` × 2 pixels: lanes 0–15 one row, 16–31 the next).
pub const WARPS: u32 = 4;
/// Pixel columns of a block.
pub const COLS: u32 = 16;
/// Pixel rows of a block.
pub const ROWS: u32 = 2 * WARPS;
/// Chroma tile per channel: enough for the taps of 16 × 8 pixels at any siting with at
/// most 2:1 subsampling (12 × 8 at 4:2:0, 12 × 12 at 4:2:2, 20 × 8 at 4:4:0).
const CHROMA_W: u32 = 20;
const CHROMA_H: u32 = 12;
/// Shared values of the tile (both chroma channels).
pub const CHROMA_LEN: usize = (2 * CHROMA_W * CHROMA_H) as usize;

/// The pixel of this thread in its block's grid: (x, y), unclamped.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn pixel() -> (u32, u32) {
    let lane = dev::thread_idx_x();
    (
        dev::block_idx_x() * COLS + (lane & (COLS - 1)),
        (dev::block_idx_y() * WARPS + dev::thread_idx_y()) * 2 + (lane >> 4),
    )
}

/// Non-linear R'G'B' of pixel (`cx`, `cy`) of `src` (inside the frame: the caller clamps
/// the pixels of [`pixel`] that fall outside). Every thread of the block (32 × [`WARPS`],
/// grid over 16 × 8 pixels) calls it with the same `src`: subsampled Y'CbCr synchronises
/// the block.
///
/// # Safety
/// `src` describes a validated frame.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn nonlinear_rgb(src: &ColorSource, cx: u32, cy: u32) -> [f32; 3] {
    let sub = src.family == color::FAMILY_YUV && (src.sub_x | src.sub_y) != 0;
    if !sub {
        return unsafe { color::nonlinear_rgb(src, cx, cy) };
    }
    gpumetrics_device::shared!(static COLOR_CHROMA_TILE: [f32; CHROMA_LEN]);
    let tile = COLOR_CHROMA_TILE.as_mut_ptr();
    let (x0, y0) = (dev::block_idx_x() * COLS, dev::block_idx_y() * ROWS);
    let origin = color::chroma_taps(src, x0, y0);
    // Only the samples the block's taps reach: 12 × 8 per channel at 4:2:0 (two loads per
    // thread for both channels), where the whole 20 × 12 tile took four.
    unsafe {
        // Subsampled by 2 or more: at most 12 columns (8 rows); not subsampled: 20 (12).
        match (src.sub_x, src.sub_y) {
            (0, _) => fill::<CHROMA_W, 8>(src, tile, origin.x0, origin.y0),
            (_, 0) => fill::<12, CHROMA_H>(src, tile, origin.x0, origin.y0),
            _ => fill::<12, 8>(src, tile, origin.x0, origin.y0),
        }
        dev::sync_threads();
    }
    let taps = color::chroma_taps(src, cx, cy);
    // The pixel's first tap in the tile; the sixteen taps are constant offsets from it.
    let first = (taps.y0 - origin.y0) as u32 * CHROMA_W + (taps.x0 - origin.x0) as u32;
    let from = |plane: u32| {
        let base = unsafe { tile.add((plane * CHROMA_W * CHROMA_H + first) as usize) };
        move |i: usize, j: usize| unsafe { *base.add(j * CHROMA_W as usize + i) }
    };
    let cb = color::upsample(&taps, from(0));
    let cr = color::upsample(&taps, from(1));
    color::yuv_to_rgb(src, unsafe { color::code(&src.c[0], cx, cy) }, cb, cr)
}

/// Fills the block's chroma tile: samples [`ox`, `ox` + `W`) × [`oy`, `oy` + `H`) of Cb and
/// Cr (edge clamped), at row stride [`CHROMA_W`]. `W` and `H` are constants so that the
/// index arithmetic is a multiply and shift, and each channel's fields are read without a
/// select between the two.
///
/// # Safety
/// `src` describes a validated subsampled frame; `tile` holds [`CHROMA_LEN`] values.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn fill<const W: u32, const H: u32>(src: &ColorSource, tile: *mut f32, ox: i32, oy: i32) {
    const THREADS: u32 = 32 * WARPS;
    let (cw, ch) = color::chroma_size(src);
    let t = dev::thread_idx_y() * 32 + dev::thread_idx_x();
    unroll!(plane in [0 1] {
        let mut e = t;
        while e < W * H {
            let (r, c) = (e / W, e % W);
            let at = (
                color::clamp_i(ox + c as i32, cw),
                color::clamp_i(oy + r as i32, ch),
            );
            let v = unsafe { color::code(&src.c[1 + plane], at.0, at.1) };
            unsafe { *tile.add((plane as u32 * CHROMA_H * CHROMA_W + r * CHROMA_W + c) as usize) = v };
            e += THREADS;
        }
    });
}
