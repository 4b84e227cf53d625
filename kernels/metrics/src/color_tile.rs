//! The colour stage of a block of 16 × 8 pixels on the GPU: subsampled chroma read once per
//! block into shared memory, then each pixel's taps read from there. The kernels that start
//! from linear light (`ssimu2_linearize`, `ba_linearize`) share it; read per pixel from
//! memory, the sixteen taps of both chroma channels (each a clamped, format-dispatched
//! load and a conversion) were most of `ba_linearize`'s 935 instructions per pixel. The
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
/// most 2:1 subsampling (12 × 8 at 4:2:0, 20 × 12 at most).
const CHROMA_W: u32 = 20;
const CHROMA_H: u32 = 12;
/// Shared values of the tile (both chroma channels).
pub const CHROMA_LEN: usize = (2 * CHROMA_W * CHROMA_H) as usize;
const _: () = assert!(
    WARPS == 4 && CHROMA_LEN <= 4 * 32 * WARPS as usize,
    "the unroll! list of nonlinear_rgb"
);

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
    let (cw, ch) = color::chroma_size(src);
    let t = dev::thread_idx_y() * 32 + dev::thread_idx_x();
    unroll!(i in [0 1 2 3] {
        let e = t + i as u32 * 32 * WARPS;
        if (e as usize) < CHROMA_LEN {
            let plane = e / (CHROMA_W * CHROMA_H);
            let rem = e % (CHROMA_W * CHROMA_H);
            let (r, c) = ((rem / CHROMA_W) as i32, (rem % CHROMA_W) as i32);
            let at = (
                color::clamp_i(origin.x0 + c, cw),
                color::clamp_i(origin.y0 + r, ch),
            );
            let v = unsafe { color::code(&src.c[1 + plane as usize], at.0, at.1) };
            unsafe { *tile.add(e as usize) = v };
        }
    });
    unsafe { dev::sync_threads() };
    let taps = color::chroma_taps(src, cx, cy);
    let from = |plane: u32| {
        move |i: i32, j: i32| {
            let (r, c) = ((j - origin.y0) as u32, (i - origin.x0) as u32);
            unsafe { *tile.add(((plane * CHROMA_H + r) * CHROMA_W + c) as usize) }
        }
    };
    let cb = color::upsample(&taps, from(0));
    let cr = color::upsample(&taps, from(1));
    color::yuv_to_rgb(src, unsafe { color::code(&src.c[0], cx, cy) }, cb, cr)
}
