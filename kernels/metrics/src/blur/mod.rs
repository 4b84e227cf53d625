//! Blur: FFmpeg 5.1's `blurdetect` (Marziliano et al. 2002) on one frame's luma, as its code
//! computes it (`libavfilter/vf_blurdetect.c`, `edge_common.c`):
//!
//! 1. a 5×5 Gaussian (σ ≈ 1.4, integer weights summing to 159, the sum divided and
//!    truncated); the two outer rows and columns are copied ([`gauss`]);
//! 2. on the blurred plane, the Sobel gradient `|gx| + |gy|` of the inner pixels (0 on the
//!    one-pixel border) and its direction rounded to 0°, 45°, 90° or 135° with the 16.16
//!    tangents of π/8 and 3π/8 ([`sobel`]);
//! 3. non-maximum suppression: a pixel keeps its gradient (clipped to 255) when it is above
//!    both neighbours along its direction, else 0 ([`suppressed`]);
//! 4. double threshold: an edge pixel is one above `high`, or above `low` with a neighbour
//!    above `high` (inner pixels only) ([`is_edge`]);
//! 5. per edge pixel, the edge width: from the pixel, along its direction on the *blurred*
//!    plane, the steps to the nearest extremum on each side (at most `radius` each), times
//!    0.7 for the diagonals; 0 when a side's search would leave the frame ([`edge_width`]);
//! 6. per block of `block_w`×`block_h` (whole blocks only), the widths above 0.001 summed
//!    and counted; a block whose sum is at least 2 gives its mean width; the means sorted
//!    ascending, the first ⌈n·pct/100⌉ averaged (the engine's `blur` module).
//!
//! A width is an integer or the f32 of an integer times 0.7, so every value is a multiple of
//! 2^−24 below 2^8, and a block's f64 sum of up to 2^29 of them is exact in any order: the
//! GPU's block partials and the CPU's row sums are equal, bit for bit.
//!
//! One code path for the host and the GPU (raw pointers): the CPU backend fills the
//! blurred and suppressed planes row by row ([`gauss_row`], [`suppressed_row`]) and sums
//! [`pixel_width`] per block; the GPU kernels (`kernels.rs`) compute the same planes per
//! pixel and the same sums per CUDA block.

mod kernels;

use crate::luma8::{self, Luma8};

/// Threads per block of the width kernel (and of the 2-D plane kernels, as 32×8).
pub const BLOCK: u32 = 256;
/// Warps per block.
pub const WARPS: usize = BLOCK as usize / 32;
/// Rows of one CUDA block's tile in the width kernel: a block takes `TILE_W` columns by
/// `WIDTH_ROWS` rows of one metric block, each thread `WIDTH_ROWS / (BLOCK / TILE_W)` pixels
/// of one column (4 with 256 threads). Neighbouring pixels run in the same CUDA block, so
/// the planes' rows around them are read through one SM's L1.
pub const WIDTH_ROWS: u32 = 32;
const _: () = assert!(BLOCK.is_multiple_of(TILE_W) && WIDTH_ROWS.is_multiple_of(BLOCK / TILE_W));

/// The rounded gradient directions, named (as FFmpeg) by the direction the width search
/// steps in.
pub const DIR_HORIZONTAL: u32 = 0;
pub const DIR_VERTICAL: u32 = 1;
/// Steps (+1, −1): up and to the right.
pub const DIR_45UP: u32 = 2;
/// Steps (+1, +1): down and to the right.
pub const DIR_45DOWN: u32 = 3;

/// Everything the kernels need about one frame and the options. Crosses the kernel
/// boundary by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Params {
    pub luma: Luma8,
    /// Thresholds as 8-bit values (FFmpeg's `x·255 + 0.5`, truncated).
    pub low: u32,
    pub high: u32,
    /// Most steps of the width search on each side.
    pub radius: u32,
    /// Block size in pixels, and whole blocks across and down.
    pub block_w: u32,
    pub block_h: u32,
    pub cols: u32,
    pub rows: u32,
    /// Tiles (CUDA blocks of the width kernel) per metric block ([`chunks`]).
    pub chunks: u32,
}

/// Blocks of `block_w`×`block_h` in a `w`×`h` frame as FFmpeg lays them out: a size below
/// 1 on either side makes one block of the whole frame; only whole blocks count. Returns
/// (block width, block height, blocks across, blocks down).
pub fn layout(w: u32, h: u32, block_w: i64, block_h: i64) -> (u32, u32, u32, u32) {
    let (bw, bh) = if block_w < 1 || block_h < 1 {
        (w.max(1), h.max(1))
    } else {
        (
            block_w.min(u32::MAX as i64) as u32,
            block_h.min(u32::MAX as i64) as u32,
        )
    };
    (bw, bh, w / bw, h / bh)
}

/// Tiles per metric block of `block_w`×`block_h` for the width kernel: `TILE_W` columns
/// by [`WIDTH_ROWS`] rows each (the last ones cut at the block's edge), row-major; at least 1.
pub const fn chunks(block_w: u32, block_h: u32) -> u32 {
    let across = block_w.div_ceil(TILE_W);
    let down = block_h.div_ceil(WIDTH_ROWS);
    let c = across.saturating_mul(down);
    if c < 1 { 1 } else { c }
}

/// FFmpeg's 5×5 Gaussian weights (σ ≈ 1.4), summing to 159.
pub const GAUSS: [[u32; 5]; 5] = [
    [2, 4, 5, 4, 2],
    [4, 9, 12, 9, 4],
    [5, 12, 15, 12, 5],
    [4, 9, 12, 9, 4],
    [2, 4, 5, 4, 2],
];

/// The blurred value at (x, y): the Gaussian inside the two-pixel border, the sample on it.
///
/// # Safety
/// `l` must describe a readable plane and (x, y) lie inside it.
#[inline(always)]
pub unsafe fn gauss(l: &Luma8, x: u32, y: u32) -> u8 {
    let (w, h) = (l.width, l.height);
    if x < 2 || y < 2 || x + 2 >= w || y + 2 >= h {
        return unsafe { luma8::sample(l, x, y) } as u8;
    }
    let mut s = 0u32;
    let mut dy = 0;
    while dy < 5 {
        let mut dx = 0;
        while dx < 5 {
            s += GAUSS[dy][dx] * unsafe { luma8::sample(l, x + dx as u32 - 2, y + dy as u32 - 2) };
            dx += 1;
        }
        dy += 1;
    }
    (s / 159) as u8
}

/// The 2-D plane kernels' tile: `TILE_W`×`TILE_H` pixels, taken by `TILE_W`×`THREADS_Y`
/// threads, each `TILE_H / THREADS_Y` pixels of one column (rows ty, ty + `THREADS_Y`, ..):
/// 4 pixels per thread, the halo staged for 32 rows instead of 8.
pub const TILE_W: u32 = 32;
pub const TILE_H: u32 = 32;
pub const THREADS_Y: u32 = 8;
const _: () = assert!(TILE_W * THREADS_Y == BLOCK && TILE_H.is_multiple_of(THREADS_Y));
/// The Gaussian's staged tile: the block's pixels and two on each side.
pub const STAGE_W: u32 = TILE_W + 4;
pub const STAGE_H: u32 = TILE_H + 4;
pub const STAGE_LEN: usize = 36 * 36;
/// Staged values per thread loaded before any is stored (with `BLOCK` threads, all).
const STAGE_PER: usize = 6;
const _: () =
    assert!(STAGE_LEN == (STAGE_W * STAGE_H) as usize && STAGE_LEN <= STAGE_PER * BLOCK as usize);

/// Thread `thread` of `threads` stages `one(i)` into `s[i]` for every `threads`-th `i`
/// below [`STAGE_LEN`]: its first [`STAGE_PER`] values all loaded before any is stored (a
/// generic store could alias the next load; and the loads overlap), the rest (only with
/// fewer threads than `BLOCK`) one by one.
///
/// # Safety
/// `s` holds [`STAGE_LEN`] values; `one` is safe to call for every `i < STAGE_LEN`.
#[inline(always)]
unsafe fn stage(one: &impl Fn(u32) -> u32, s: *mut u32, thread: u32, threads: u32) {
    let total = STAGE_LEN as u32;
    let mut v = [0u32; STAGE_PER];
    let mut k = 0;
    while k < STAGE_PER {
        let i = thread + k as u32 * threads;
        if i < total {
            v[k] = one(i);
        }
        k += 1;
    }
    let mut k = 0;
    while k < STAGE_PER {
        let i = thread + k as u32 * threads;
        if i < total {
            unsafe { *s.add(i as usize) = v[k] };
        }
        k += 1;
    }
    let mut i = thread + STAGE_PER as u32 * threads;
    while i < total {
        unsafe { *s.add(i as usize) = one(i) };
        i += threads;
    }
}

/// Stages the 8-bit samples around the block at (x0, y0) in `s`, `s[r · STAGE_W + c]` =
/// sample (x0 − 2 + c, y0 − 2 + r), 0 outside the frame (thread `thread` of `threads`
/// takes every `threads`-th one): each sample is read and converted once per block.
///
/// # Safety
/// `l` readable; `s` holds [`STAGE_LEN`] values.
#[inline(always)]
pub unsafe fn gauss_stage(l: &Luma8, x0: u32, y0: u32, s: *mut u32, thread: u32, threads: u32) {
    // Block-uniform: 8-bit frames read their bytes without the general conversion.
    if luma8::is_plain(l) {
        unsafe { gauss_stage_as::<true>(l, x0, y0, s, thread, threads) }
    } else {
        unsafe { gauss_stage_as::<false>(l, x0, y0, s, thread, threads) }
    }
}

/// [`gauss_stage`] with `PLAIN` = [`luma8::is_plain`]`(l)`.
///
/// # Safety
/// As [`gauss_stage`].
#[inline(always)]
unsafe fn gauss_stage_as<const PLAIN: bool>(
    l: &Luma8,
    x0: u32,
    y0: u32,
    s: *mut u32,
    thread: u32,
    threads: u32,
) {
    let one = |i: u32| {
        let (r, c) = (i / STAGE_W, i % STAGE_W);
        let (x, y) = ((x0 + c).wrapping_sub(2), (y0 + r).wrapping_sub(2));
        if x < l.width && y < l.height {
            unsafe { luma8::sample_as::<PLAIN>(l, x, y) }
        } else {
            0
        }
    };
    unsafe { stage(&one, s, thread, threads) };
}

/// Rows of one column a thread of the plane kernels computes: consecutive, so that the
/// rows of their windows are loaded once for all of them (the Gaussian's 5×5 windows of 4
/// pixels share 5×8 samples: 40 shared-memory loads instead of 100).
pub const COLUMN_ROWS: u32 = TILE_H / THREADS_Y;

/// [`gauss`] at (x0 + tx, y0 + r0 + i), i < [`COLUMN_ROWS`], from the tile
/// [`gauss_stage`] staged: the same sums. Values of pixels outside the frame are
/// meaningless (the caller does not write them).
///
/// # Safety
/// `s` holds the staged tile; tx < `TILE_W`, r0 + [`COLUMN_ROWS`] ≤ `TILE_H`.
#[inline(always)]
pub unsafe fn gauss_column(
    l: &Luma8,
    s: *const u32,
    x0: u32,
    y0: u32,
    tx: u32,
    r0: u32,
) -> [u8; COLUMN_ROWS as usize] {
    const N: usize = COLUMN_ROWS as usize;
    // Stage rows r0 .. r0 + N + 4 (frame rows y0 + r0 − 2 ..), stage columns tx .. tx + 5.
    let mut win = [[0u32; 5]; N + 4];
    let mut k = 0;
    while k < N + 4 {
        let mut dx = 0;
        while dx < 5 {
            win[k][dx] = unsafe { *s.add(((r0 + k as u32) * STAGE_W + tx + dx as u32) as usize) };
            dx += 1;
        }
        k += 1;
    }
    let x = x0 + tx;
    let mut out = [0u8; N];
    let mut i = 0;
    while i < N {
        let y = y0 + r0 + i as u32;
        out[i] = if x < 2 || y < 2 || x + 2 >= l.width || y + 2 >= l.height {
            win[i + 2][2] as u8
        } else {
            let mut sum = 0u32;
            let mut dy = 0;
            while dy < 5 {
                let mut dx = 0;
                while dx < 5 {
                    sum += GAUSS[dy][dx] * win[i + dy][dx];
                    dx += 1;
                }
                dy += 1;
            }
            (sum / 159) as u8
        };
        i += 1;
    }
    out
}

/// Row `y` of the blurred plane into `out[0..w]`.
///
/// # Safety
/// As [`gauss`]; `out` holds `w` bytes.
#[inline]
pub unsafe fn gauss_row(l: &Luma8, y: u32, out: *mut u8) {
    for x in 0..l.width {
        unsafe { *out.add(x as usize) = gauss(l, x, y) };
    }
}

/// A plane of bytes, `w` per row (the blurred and the suppressed planes).
#[derive(Clone, Copy)]
pub struct Plane {
    pub ptr: *const u8,
    pub w: u32,
    pub h: u32,
}

impl Plane {
    /// The value at (x, y).
    ///
    /// # Safety
    /// (x, y) must lie inside the plane.
    #[inline(always)]
    pub unsafe fn at(&self, x: u32, y: u32) -> i32 {
        unsafe { *self.ptr.add(y as usize * self.w as usize + x as usize) as i32 }
    }
}

/// The direction of the gradient (gx, gy) rounded to the nearest 45°, with FFmpeg's
/// strict comparisons against 16.16 fixed-point tangents (a tie is vertical).
#[inline(always)]
pub fn direction(gx: i32, gy: i32) -> u32 {
    if gx == 0 {
        return DIR_VERTICAL;
    }
    let (gx, gy) = if gx < 0 { (-gx, -gy) } else { (gx, gy) };
    let gy = gy * 65536;
    let t1 = 27146 * gx;
    let t3 = 158218 * gx;
    if gy > -t3 && gy < -t1 {
        DIR_45UP
    } else if gy > -t1 && gy < t1 {
        DIR_HORIZONTAL
    } else if gy > t1 && gy < t3 {
        DIR_45DOWN
    } else {
        DIR_VERTICAL
    }
}

/// The gradient magnitude `|gx| + |gy|` and rounded direction at (x, y) of the blurred
/// plane; (0, vertical) on the one-pixel border, where FFmpeg computes none.
///
/// # Safety
/// (x, y) must lie inside `b`.
#[inline(always)]
pub unsafe fn sobel(b: &Plane, x: u32, y: u32) -> (i32, u32) {
    sobel_with(&|x, y| unsafe { b.at(x, y) }, b.w, b.h, x, y)
}

/// [`sobel`] of a `w`×`h` blurred plane read through `at` (the plane, or a staged tile).
#[inline(always)]
pub fn sobel_with(at: &impl Fn(u32, u32) -> i32, w: u32, h: u32, x: u32, y: u32) -> (i32, u32) {
    if x < 1 || y < 1 || x + 1 >= w || y + 1 >= h {
        return (0, DIR_VERTICAL);
    }
    let p = |dx: u32, dy: u32| at(x + dx - 1, y + dy - 1);
    sobel3(&[
        [p(0, 0), p(1, 0), p(2, 0)],
        [p(0, 1), p(1, 1), p(2, 1)],
        [p(0, 2), p(1, 2), p(2, 2)],
    ])
}

/// The Sobel magnitude and rounded direction of an inner pixel from its 3×3 neighbourhood
/// `n[row][column]`.
#[inline(always)]
pub fn sobel3(n: &[[i32; 3]; 3]) -> (i32, u32) {
    let gx = (n[0][2] - n[0][0]) + 2 * (n[1][2] - n[1][0]) + (n[2][2] - n[2][0]);
    let gy = (n[2][0] - n[0][0]) + 2 * (n[2][1] - n[0][1]) + (n[2][2] - n[0][2]);
    (gx.abs() + gy.abs(), direction(gx, gy))
}

/// The unit step (dx, dy) of a direction.
#[inline(always)]
pub fn step(dir: u32) -> (i32, i32) {
    match dir {
        DIR_HORIZONTAL => (1, 0),
        DIR_VERTICAL => (0, 1),
        DIR_45UP => (1, -1),
        _ => (1, 1),
    }
}

/// The suppressed gradient at (x, y): its magnitude clipped to 255 when it is above both
/// neighbours across its direction (FFmpeg's pairs: left/right, up/down, the diagonals),
/// else 0; 0 on the border.
///
/// # Safety
/// (x, y) must lie inside `b`.
#[inline(always)]
pub unsafe fn suppressed(b: &Plane, x: u32, y: u32) -> u8 {
    suppressed_with(&|x, y| unsafe { b.at(x, y) }, b.w, b.h, x, y)
}

/// [`suppressed`] of a `w`×`h` blurred plane read through `at`.
#[inline(always)]
pub fn suppressed_with(at: &impl Fn(u32, u32) -> i32, w: u32, h: u32, x: u32, y: u32) -> u8 {
    if x < 1 || y < 1 || x + 1 >= w || y + 1 >= h {
        return 0;
    }
    let (g, dir) = sobel_with(at, w, h, x, y);
    let n =
        |sx: i32, sy: i32| sobel_with(at, w, h, (x as i32 + sx) as u32, (y as i32 + sy) as u32).0;
    suppress(g, dir, &n)
}

/// The suppression of an inner pixel of gradient `g` and direction `dir`, `n(sx, sy)` the
/// gradient magnitude of its neighbour at (x + sx, y + sy).
#[inline(always)]
fn suppress(g: i32, dir: u32, n: &impl Fn(i32, i32) -> i32) -> u8 {
    let (dx, dy) = match dir {
        DIR_HORIZONTAL => (1, 0),
        DIR_VERTICAL => (0, 1),
        // Compared with below-left and above-right.
        DIR_45UP => (-1, 1),
        _ => (1, 1),
    };
    if g > n(dx, dy) && g > n(-dx, -dy) {
        if g > 255 { 255 } else { g as u8 }
    } else {
        0
    }
}

/// Stages the blurred values around the block at (x0, y0) in `s`, as [`gauss_stage`]
/// stages samples (0 outside the frame).
///
/// # Safety
/// `b` readable; `s` holds [`STAGE_LEN`] values.
#[inline(always)]
pub unsafe fn suppress_stage(b: &Plane, x0: u32, y0: u32, s: *mut u32, thread: u32, threads: u32) {
    let one = |i: u32| {
        let (r, c) = (i / STAGE_W, i % STAGE_W);
        let (x, y) = ((x0 + c).wrapping_sub(2), (y0 + r).wrapping_sub(2));
        if x < b.w && y < b.h {
            unsafe { b.at(x, y) as u32 }
        } else {
            0
        }
    };
    unsafe { stage(&one, s, thread, threads) };
}

/// The gradients of the suppression kernel's block: the block's pixels and one on each
/// side, `MAG_W`×`MAG_H`.
pub const MAG_W: u32 = TILE_W + 2;
pub const MAG_H: u32 = TILE_H + 2;
pub const MAG_LEN: usize = 34 * 34;
const _: () = assert!(MAG_LEN == (MAG_W * MAG_H) as usize);

/// From the tile [`suppress_stage`] staged, the [`sobel`] gradients around the block at
/// (x0, y0) in `m`: `m[r · MAG_W + c]` = the magnitude of (x0 − 1 + c, y0 − 1 + r) plus its
/// direction times 2^16 (a magnitude is at most 2040), 0 outside the frame (thread
/// `thread` of `threads` takes every `threads`-th run of [`COLUMN_ROWS`] rows of one
/// column): each gradient computed once per block, a run's four from one 3 × 6 window of
/// the staged tile.
///
/// # Safety
/// `s` holds the staged tile, `m` [`MAG_LEN`] values.
#[inline(always)]
pub unsafe fn suppress_grads(
    s: *const u32,
    m: *mut u32,
    (w, h): (u32, u32),
    (x0, y0): (u32, u32),
    thread: u32,
    threads: u32,
) {
    const N: usize = COLUMN_ROWS as usize;
    let runs = MAG_H.div_ceil(COLUMN_ROWS);
    let mut i = thread;
    while i < MAG_W * runs {
        let (c, r0) = (i % MAG_W, i / MAG_W * COLUMN_ROWS);
        // Staged rows r0 .. r0 + N + 2 (frame rows y0 − 2 + r0 ..), columns c .. c + 3 (the
        // gradient at mag (c, r) is centred on stage (c + 1, r + 1)). Rows past the stage
        // (the last run) read its last row and are not stored.
        let mut win = [[0i32; 3]; N + 2];
        let mut k = 0;
        while k < N + 2 {
            let row = (r0 + k as u32).min(STAGE_H - 1);
            let at = |dc: u32| unsafe { *s.add((row * STAGE_W + c + dc) as usize) as i32 };
            win[k] = [at(0), at(1), at(2)];
            k += 1;
        }
        let x = (x0 + c).wrapping_sub(1);
        let mut k = 0;
        while k < N {
            let r = r0 + k as u32;
            let y = (y0 + r).wrapping_sub(1);
            if r < MAG_H {
                let v = if x < w && y < h {
                    if x < 1 || y < 1 || x + 1 >= w || y + 1 >= h {
                        DIR_VERTICAL << 16
                    } else {
                        let (g, dir) = sobel3(&[win[k], win[k + 1], win[k + 2]]);
                        g as u32 | dir << 16
                    }
                } else {
                    0
                };
                unsafe { *m.add((r * MAG_W + c) as usize) = v };
            }
            k += 1;
        }
        i += threads;
    }
}

/// [`suppressed`] at (x0 + tx, y0 + ty) from the gradients [`suppress_grads`] wrote.
///
/// # Safety
/// `m` holds the block's gradients; tx < `TILE_W`, ty < `TILE_H`, the pixel inside the
/// frame.
#[inline(always)]
pub unsafe fn suppressed_tile(
    m: *const u32,
    w: u32,
    h: u32,
    x0: u32,
    y0: u32,
    tx: u32,
    ty: u32,
) -> u8 {
    let (x, y) = (x0 + tx, y0 + ty);
    if x < 1 || y < 1 || x + 1 >= w || y + 1 >= h {
        return 0;
    }
    let at = |c: i32, r: i32| unsafe { *m.add((r as u32 * MAG_W + c as u32) as usize) };
    let (c, r) = (tx as i32 + 1, ty as i32 + 1);
    let v = at(c, r);
    let n = |sx: i32, sy: i32| (at(c + sx, r + sy) & 0xffff) as i32;
    suppress((v & 0xffff) as i32, v >> 16, &n)
}

/// Row `y` of the suppressed plane into `out[0..w]`.
///
/// # Safety
/// `b` must be readable; `out` holds `w` bytes.
#[inline]
pub unsafe fn suppressed_row(b: &Plane, y: u32, out: *mut u8) {
    for x in 0..b.w {
        unsafe { *out.add(x as usize) = suppressed(b, x, y) };
    }
}

/// Whether (x, y) of the suppressed plane `n` is an edge pixel after the double threshold:
/// above `high`, or (inner pixels) above `low` with one of its eight neighbours above
/// `high`.
///
/// # Safety
/// (x, y) must lie inside `n`.
#[inline(always)]
pub unsafe fn is_edge(n: &Plane, x: u32, y: u32, low: u32, high: u32) -> bool {
    let (low, high) = (low as i32, high as i32);
    let v = unsafe { n.at(x, y) };
    if v > high {
        return true;
    }
    if x < 1 || y < 1 || x + 1 >= n.w || y + 1 >= n.h || v <= low {
        return false;
    }
    // The largest of the eight neighbours (all loaded, then compared).
    let mut top = 0;
    let mut dy = 0;
    while dy < 3 {
        let mut dx = 0;
        while dx < 3 {
            if dx != 1 || dy != 1 {
                top = top.max(unsafe { n.at(x + dx - 1, y + dy - 1) });
            }
            dx += 1;
        }
        dy += 1;
    }
    top > high
}

/// The edge width at the inner pixel (x, y) of the blurred plane `b` in direction `dir`:
/// the steps from the pixel to the nearest extremum backwards and forwards (at most
/// `radius` each; the pixel's difference with its backward neighbour says whether they are
/// maxima or minima), times 0.7 (in f64, rounded to f32) on the diagonals; 0 when a search
/// would step outside the frame.
///
/// # Safety
/// (x, y) must be an inner pixel of `b`.
#[inline(always)]
pub unsafe fn edge_width(b: &Plane, x: u32, y: u32, dir: u32, radius: u32) -> f32 {
    let (dx, dy) = step(dir);
    let (w, h) = (b.w as i32, b.h as i32);
    let (x, y) = (x as i32, y as i32);
    let at = |x: i32, y: i32| unsafe { b.at(x as u32, y as u32) };
    let here = at(x, y);
    let sign = if here > at(x - dx, y - dy) { 1 } else { -1 };
    let radius = radius as i32;
    // Backwards while (current − next)·sign > 0, forwards while (current − next)·sign < 0.
    // Both sides' first samples loaded before either is compared.
    let (bs, fs) = ((-dx, -dy), (dx, dy));
    let b0 = batch(&at, (w, h), (x, y), bs, 0, radius);
    let f0 = batch(&at, (w, h), (x, y), fs, 0, radius);
    let Some(back) = walk(&at, (w, h), (x, y), bs, here, radius, sign, b0) else {
        return 0.0;
    };
    let Some(fwd) = walk(&at, (w, h), (x, y), fs, here, radius, -sign, f0) else {
        return 0.0;
    };
    let width = (back + fwd) as f32;
    if dir == DIR_45UP || dir == DIR_45DOWN {
        (width as f64 * 0.7) as f32
    } else {
        width
    }
}

/// Samples of a width search loaded at once, before any is compared.
pub const WALK: usize = 4;

/// The [`WALK`] samples after step `n` of a width search from (x, y) in steps of (sx, sy)
/// on a `w`×`h` plane read through `at`: `v[k]` = the sample of step j = n + k + 1, loaded
/// when j ≤ `radius` and it lies inside the frame (else 0, never read).
#[inline(always)]
fn batch(
    at: &impl Fn(i32, i32) -> i32,
    (w, h): (i32, i32),
    (x, y): (i32, i32),
    (sx, sy): (i32, i32),
    n: i32,
    radius: i32,
) -> [i32; WALK] {
    let mut v = [0i32; WALK];
    let mut k = 0;
    while k < WALK {
        let j = n + k as i32 + 1;
        let (px, py) = (x + j * sx, y + j * sy);
        if j <= radius && px >= 0 && px < w && py >= 0 && py < h {
            v[k] = at(px, py);
        }
        k += 1;
    }
    v
}

/// One side of [`edge_width`]'s search from (x, y) (of value `here`) in steps of (sx, sy)
/// on a `w`×`h` plane read through `at`: the steps taken while `(current − next)·s > 0`,
/// at most `radius`; `None` when a step would leave the frame. `first` is the [`batch`]
/// after step 0; each batch's samples are loaded at once (their loads overlap), then
/// compared in order: the same steps as one sample at a time.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn walk(
    at: &impl Fn(i32, i32) -> i32,
    (w, h): (i32, i32),
    (x, y): (i32, i32),
    (sx, sy): (i32, i32),
    here: i32,
    radius: i32,
    s: i32,
    first: [i32; WALK],
) -> Option<i32> {
    let inside = |x: i32, y: i32| x >= 0 && x < w && y >= 0 && y < h;
    let (mut n, mut cur, mut v) = (0i32, here, first);
    loop {
        // Step j = n + 1 reads v[k]: loaded exactly when j <= radius and inside.
        let mut k = 0;
        while k < WALK {
            if n >= radius {
                return Some(n);
            }
            let j = n + 1;
            if !inside(x + j * sx, y + j * sy) {
                return None;
            }
            if (cur - v[k]) * s <= 0 {
                return Some(n);
            }
            cur = v[k];
            n = j;
            k += 1;
        }
        v = batch(at, (w, h), (x, y), (sx, sy), n, radius);
    }
}

/// The width (x, y) adds to its block: the edge width of an edge pixel, 0 otherwise (and
/// FFmpeg counts only widths above 0.001).
///
/// # Safety
/// (x, y) must lie inside both planes (of the same size).
#[inline(always)]
pub unsafe fn pixel_width(p: &Params, b: &Plane, n: &Plane, x: u32, y: u32) -> f32 {
    if !unsafe { is_edge(n, x, y, p.low, p.high) } {
        return 0.0;
    }
    let (_, dir) = unsafe { sobel(b, x, y) };
    unsafe { edge_width(b, x, y, dir, p.radius) }
}

/// Whether a width counts (FFmpeg drops zeros with `width > 0.001`).
#[inline(always)]
pub fn counts(width: f32) -> bool {
    width > 0.001
}

/// Pixels of one column a width-kernel thread tests for edges: `WIDTH_ROWS` rows shared by
/// the `BLOCK / TILE_W` threads of a column.
pub const WIDTH_PIXELS: u32 = WIDTH_ROWS / (BLOCK / TILE_W);
const _: () = assert!(WIDTH_PIXELS <= 32 && TILE_W * WIDTH_ROWS <= 1 << 16);

/// Where tile `chunk` of block `block` (row-major over the blocks; the tiles of [`chunks`],
/// row-major in the block) lies: its first pixel (x, y) and its columns and rows (`TILE_W`
/// by [`WIDTH_ROWS`], cut at the block's edge).
#[inline(always)]
pub fn width_tile(p: &Params, block: u32, chunk: u32) -> (u32, u32, u32, u32) {
    let (bx, by) = (block % p.cols, block / p.cols);
    let across = p.block_w.div_ceil(TILE_W);
    let (cx, cy) = (chunk % across, chunk / across);
    let (c0, r0) = (cx * TILE_W, cy * WIDTH_ROWS);
    (
        bx * p.block_w + c0,
        by * p.block_h + r0,
        TILE_W.min(p.block_w - c0),
        WIDTH_ROWS.min(p.block_h - r0),
    )
}

/// Which of thread `thread`'s pixels of the tile at (x0, y0) of `cols`×`rows`
/// ([`width_tile`]) are edge pixels ([`is_edge`]'s answer): bit k for column
/// `thread % TILE_W`, row `(thread / TILE_W) · WIDTH_PIXELS + k` (k < [`WIDTH_PIXELS`]);
/// pixels outside the tile are not. The pixels are consecutive rows of one column, so
/// their 3×3 neighbourhoods share one 3 × (`WIDTH_PIXELS` + 2) window, all loaded (the
/// coordinates clamped into the plane) before any comparison.
///
/// # Safety
/// `n` must be readable and the tile inside it; `thread < BLOCK`.
#[inline(always)]
pub unsafe fn thread_edges(
    p: &Params,
    n: &Plane,
    (x0, y0, cols, rows): (u32, u32, u32, u32),
    thread: u32,
) -> u32 {
    const K: usize = WIDTH_PIXELS as usize;
    let (c, r0) = (thread % TILE_W, (thread / TILE_W) * WIDTH_PIXELS);
    if c >= cols || r0 >= rows {
        return 0;
    }
    let x = x0 + c;
    let (xl, xr) = (x.saturating_sub(1), (x + 1).min(n.w - 1));
    // Window rows y − 1 .. y + K of the column's first pixel y, clamped into the plane.
    let y = y0 + r0;
    let mut win = [[0i32; 3]; K + 2];
    let mut k = 0;
    while k < K + 2 {
        let wy = (y + k as u32).saturating_sub(1).min(n.h - 1);
        win[k] = unsafe { [n.at(xl, wy), n.at(x, wy), n.at(xr, wy)] };
        k += 1;
    }
    let (low, high) = (p.low as i32, p.high as i32);
    let mut mask = 0;
    let mut k = 0;
    while k < K {
        let py = y + k as u32;
        let v = win[k + 1][1];
        let inner = x >= 1 && py >= 1 && x + 1 < n.w && py + 1 < n.h;
        let mut top = win[k][0].max(win[k][1]).max(win[k][2]);
        top = top.max(win[k + 1][0]).max(win[k + 1][2]);
        top = top.max(win[k + 2][0]).max(win[k + 2][1]).max(win[k + 2][2]);
        let edge = v > high || (inner && v > low && top > high);
        if edge && r0 + (k as u32) < rows {
            mask |= 1 << k;
        }
        k += 1;
    }
    mask
}

/// The width an edge pixel at (x, y) adds ([`thread_edges`] found it): its [`edge_width`]
/// in its gradient's direction.
///
/// # Safety
/// (x, y) must be an edge pixel of the frame (an inner pixel); `b` readable.
#[inline(always)]
pub unsafe fn edge_pixel_width(p: &Params, b: &Plane, x: u32, y: u32) -> f32 {
    let (_, dir) = unsafe { sobel(b, x, y) };
    unsafe { edge_width(b, x, y, dir, p.radius) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::Channel;
    use std::vec;
    use std::vec::Vec;

    fn luma(d: &[u8], w: u32, h: u32) -> Luma8 {
        Luma8 {
            chan: Channel {
                ptr: d.as_ptr() as u64,
                pitch: w,
                step: 1,
                sample_bytes: 1,
                shift: 0,
                max: 255,
                _pad: 0,
            },
            width: w,
            height: h,
            shift: 0,
            range: 0,
        }
    }

    #[test]
    fn directions_follow_the_rounded_tangents() {
        assert_eq!(direction(0, 5), DIR_VERTICAL);
        assert_eq!(direction(10, 0), DIR_HORIZONTAL);
        assert_eq!(direction(-10, 1), DIR_HORIZONTAL);
        assert_eq!(direction(10, 10), DIR_45DOWN);
        assert_eq!(direction(-10, -10), DIR_45DOWN);
        assert_eq!(direction(10, -10), DIR_45UP);
        assert_eq!(direction(1, 100), DIR_VERTICAL);
        // gy/gx just below tan(π/8) ≈ 0.41421: horizontal; just above: diagonal.
        assert_eq!(direction(100, 41), DIR_HORIZONTAL);
        assert_eq!(direction(100, 42), DIR_45DOWN);
    }

    #[test]
    fn gauss_keeps_the_border_and_averages_inside() {
        let (w, h) = (6u32, 5u32);
        let d: Vec<u8> = (0..w * h).map(|i| (i * 7 % 256) as u8).collect();
        let l = luma(&d, w, h);
        let mut row = vec![0u8; w as usize];
        unsafe { gauss_row(&l, 0, row.as_mut_ptr()) };
        assert_eq!(row, d[..w as usize]);
        unsafe { gauss_row(&l, 2, row.as_mut_ptr()) };
        assert_eq!(
            (row[0], row[1], row[4], row[5]),
            (d[12], d[13], d[16], d[17])
        );
        // A flat 5×5 neighbourhood of 100 stays 100 (159·100/159).
        let flat = vec![100u8; 25];
        assert_eq!(unsafe { gauss(&luma(&flat, 5, 5), 2, 2) }, 100);
    }

    #[test]
    fn a_ramp_edge_has_its_width() {
        // Columns 0 0 0 0 50 100 150 200 200 200 200 (blurred plane given directly): the
        // edge pixel at x = 5 climbs 1 step back... to x = 3 (2 steps) and to x = 7 (2).
        let row = [0u8, 0, 0, 0, 50, 100, 150, 200, 200, 200, 200];
        let d: Vec<u8> = row.repeat(5);
        let b = Plane {
            ptr: d.as_ptr(),
            w: 11,
            h: 5,
        };
        let (g, dir) = unsafe { sobel(&b, 5, 2) };
        assert_eq!((g, dir), (400, DIR_HORIZONTAL));
        assert_eq!(unsafe { edge_width(&b, 5, 2, dir, 50) }, 4.0);
        assert_eq!(unsafe { edge_width(&b, 5, 2, dir, 1) }, 2.0);
        // The diagonal factor, in f64 then f32.
        assert_eq!(unsafe { edge_width(&b, 5, 2, DIR_45DOWN, 50) }, 0.0);
        // Next to the border the search leaves the frame: 0.
        let edge = [0u8, 100, 200].repeat(3);
        let b = Plane {
            ptr: edge.as_ptr(),
            w: 3,
            h: 3,
        };
        assert_eq!(unsafe { edge_width(&b, 1, 1, DIR_HORIZONTAL, 50) }, 0.0);
    }

    /// The one-sample-at-a-time search [`edge_width`] replaced.
    /// The edge width at the inner pixel (x, y) of the blurred plane `b` in direction `dir`:
    /// the steps from the pixel to the nearest extremum backwards and forwards (at most
    /// `radius` each; the pixel's difference with its backward neighbour says whether they are
    /// maxima or minima), times 0.7 (in f64, rounded to f32) on the diagonals; 0 when a search
    /// would step outside the frame.
    ///
    /// # Safety
    /// (x, y) must be an inner pixel of `b`.
    unsafe fn edge_width_ref(b: &Plane, x: u32, y: u32, dir: u32, radius: u32) -> f32 {
        let (dx, dy) = step(dir);
        let (w, h) = (b.w as i32, b.h as i32);
        let (x, y) = (x as i32, y as i32);
        let at = |x: i32, y: i32| unsafe { b.at(x as u32, y as u32) };
        let here = at(x, y);
        let sign = if here > at(x - dx, y - dy) { 1 } else { -1 };
        let inside = |x: i32, y: i32| x >= 0 && x < w && y >= 0 && y < h;
        let mut back = 0;
        while back < radius as i32 {
            let (x1, y1) = (x - back * dx, y - back * dy);
            let (x2, y2) = (x1 - dx, y1 - dy);
            if !inside(x2, y2) {
                return 0.0;
            }
            if (at(x1, y1) - at(x2, y2)) * sign <= 0 {
                break;
            }
            back += 1;
        }
        let mut fwd = 0;
        while fwd < radius as i32 {
            let (x1, y1) = (x + fwd * dx, y + fwd * dy);
            let (x2, y2) = (x1 + dx, y1 + dy);
            if !inside(x2, y2) {
                return 0.0;
            }
            if (at(x1, y1) - at(x2, y2)) * sign >= 0 {
                break;
            }
            fwd += 1;
        }
        let width = (back + fwd) as f32;
        if dir == DIR_45UP || dir == DIR_45DOWN {
            (width as f64 * 0.7) as f32
        } else {
            width
        }
    }

    #[test]
    fn the_batched_width_search_is_the_sample_by_sample_one() {
        let mut seed = 0x5eedu64;
        let mut longest = 0.0f32;
        for &(w, h) in &[(3u32, 3u32), (9, 7), (40, 23), (70, 61)] {
            let d: Vec<u8> = (0..w * h)
                .map(|i| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    // Long monotonic runs (ramps) with noise, so searches go far.
                    let (x, y) = ((i % w) as u64, (i / w) as u64);
                    ((x * 3 + y * 2) % 256 + seed % 3) as u8
                })
                .collect();
            let b = Plane {
                ptr: d.as_ptr(),
                w,
                h,
            };
            for radius in [1u32, 2, 7, 8, 9, 16, 17, 50, 100] {
                for y in 1..h - 1 {
                    for x in 1..w - 1 {
                        for dir in 0..4 {
                            let got = unsafe { edge_width(&b, x, y, dir, radius) };
                            let want = unsafe { edge_width_ref(&b, x, y, dir, radius) };
                            assert_eq!(
                                got.to_bits(),
                                want.to_bits(),
                                "{w}x{h} ({x}, {y}) {dir} {radius}"
                            );
                            longest = longest.max(got);
                        }
                    }
                }
            }
        }
        // Some searches go beyond two batches on a side.
        assert!(longest > (4 * WALK) as f32, "{longest}");
    }

    #[test]
    fn thresholds_keep_strong_pixels_and_their_weak_neighbours() {
        #[rustfmt::skip]
        let n = [
            0, 0, 0, 0,
            0, 40, 20, 0,
            0, 10, 0, 0,
            0, 0, 0, 0u8,
        ];
        let p = Plane {
            ptr: n.as_ptr(),
            w: 4,
            h: 4,
        };
        assert!(unsafe { is_edge(&p, 1, 1, 15, 30) });
        assert!(unsafe { is_edge(&p, 2, 1, 15, 30) }); // 20 > low beside 40 > high
        assert!(!unsafe { is_edge(&p, 1, 2, 15, 30) }); // 10 ≤ low
        assert!(!unsafe { is_edge(&p, 0, 0, 15, 30) });
    }

    #[test]
    fn thread_edges_is_is_edge() {
        let mut seed = 0x1234_5678u64;
        for &(w, h) in &[
            (1u32, 1u32),
            (2, 2),
            (3, 1),
            (1, 4),
            (5, 5),
            (17, 9),
            (40, 45),
        ] {
            for _ in 0..8 {
                let n: Vec<u8> = (0..w * h)
                    .map(|_| {
                        seed = seed
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        // Mostly small values, some above the thresholds.
                        let v = (seed >> 33) as u8;
                        if v & 3 == 0 { v } else { v / 8 }
                    })
                    .collect();
                let plane = Plane {
                    ptr: n.as_ptr(),
                    w,
                    h,
                };
                for (low, high) in [(0u32, 0u32), (5, 20), (15, 30), (30, 31)] {
                    let p = Params {
                        low,
                        high,
                        ..Default::default()
                    };
                    let mut seen = vec![0u32; (w * h) as usize];
                    for (x0, y0) in [
                        (0u32, 0u32),
                        (TILE_W, 0),
                        (0, WIDTH_ROWS),
                        (TILE_W, WIDTH_ROWS),
                    ] {
                        if x0 >= w || y0 >= h {
                            continue;
                        }
                        let tile = (x0, y0, TILE_W.min(w - x0), WIDTH_ROWS.min(h - y0));
                        for t in 0..BLOCK {
                            let mask = unsafe { thread_edges(&p, &plane, tile, t) };
                            let (c, r0) = (t % TILE_W, t / TILE_W * WIDTH_PIXELS);
                            for k in 0..WIDTH_PIXELS {
                                let (x, y) = (x0 + c, y0 + r0 + k);
                                let inside = c < tile.2 && r0 + k < tile.3;
                                if inside {
                                    seen[(y * w + x) as usize] += 1;
                                }
                                let want = inside && unsafe { is_edge(&plane, x, y, low, high) };
                                assert_eq!(
                                    mask & 1 << k != 0,
                                    want,
                                    "{w}x{h} at ({x}, {y}), {low}/{high}"
                                );
                            }
                        }
                    }
                    assert!(seen.iter().all(|&s| s == 1), "{w}x{h}: every pixel once");
                }
            }
        }
    }

    #[test]
    fn layout_and_chunks() {
        assert_eq!(layout(1920, 1080, -1, -1), (1920, 1080, 1, 1));
        assert_eq!(layout(1920, 1080, 64, -1), (1920, 1080, 1, 1));
        assert_eq!(layout(100, 50, 32, 16), (32, 16, 3, 3));
        assert_eq!(layout(10, 10, 32, 32), (32, 32, 0, 0));
        assert_eq!(chunks(1920, 1080), 60 * 34);
        assert_eq!(chunks(32, 32), 1);
        assert_eq!(chunks(33, 61), 4);
        assert_eq!(chunks(1, 1), 1);
        assert_eq!(chunks(0, 0), 1);
        assert_eq!(chunks(u32::MAX, u32::MAX), u32::MAX);
    }

    #[test]
    fn the_width_tiles_cover_each_block_once() {
        // Each pixel's width is its own position code: the threads' sums over all tiles of
        // a block must be the block's sum, each pixel counted once.
        for &(w, h, bw, bh) in &[
            (70u32, 45u32, -1i64, -1i64),
            (70, 45, 16, 12),
            (70, 45, 33, 40),
            (64, 37, 1, 1),
            (100, 70, 64, 64),
        ] {
            let d = vec![0u8; (w * h) as usize];
            let (block_w, block_h, cols, rows) = layout(w, h, bw, bh);
            let p = Params {
                luma: luma(&d, w, h),
                low: 15,
                high: 30,
                radius: 50,
                block_w,
                block_h,
                cols,
                rows,
                chunks: chunks(block_w, block_h),
            };
            let mut seen = vec![0u32; (w * h) as usize];
            for block in 0..cols * rows {
                let (bx, by) = (block % cols, block / cols);
                for chunk in 0..p.chunks {
                    let across = block_w.div_ceil(TILE_W);
                    let (cx, cy) = (chunk % across, chunk / across);
                    for t in 0..BLOCK {
                        let c = cx * TILE_W + t % TILE_W;
                        if c >= block_w {
                            continue;
                        }
                        let r0 = cy * WIDTH_ROWS + t / TILE_W * WIDTH_PIXELS;
                        for r in r0..r0 + WIDTH_PIXELS {
                            if r < ((cy + 1) * WIDTH_ROWS).min(block_h) {
                                seen[((by * block_h + r) * w + bx * block_w + c) as usize] += 1;
                            }
                        }
                    }
                }
            }
            for y in 0..h {
                for x in 0..w {
                    let inside = x < cols * block_w && y < rows * block_h;
                    assert_eq!(
                        seen[(y * w + x) as usize],
                        inside as u32,
                        "{w}x{h} ({x}, {y})"
                    );
                }
            }
            // And on a frame with edges, the tiles' sums add up to the blocks' sums.
            let img: Vec<u8> = (0..w * h)
                .map(|i| {
                    if (i % w / 7 + i / w / 5) % 2 == 0 {
                        30
                    } else {
                        220
                    }
                })
                .collect();
            let lm = luma(&img, w, h);
            let mut bl = vec![0u8; (w * h) as usize];
            for y in 0..h {
                unsafe { gauss_row(&lm, y, bl[(y * w) as usize..].as_mut_ptr()) };
            }
            let b = Plane {
                ptr: bl.as_ptr(),
                w,
                h,
            };
            let mut sup = vec![0u8; (w * h) as usize];
            for y in 0..h {
                unsafe { suppressed_row(&b, y, sup[(y * w) as usize..].as_mut_ptr()) };
            }
            let n = Plane {
                ptr: sup.as_ptr(),
                w,
                h,
            };
            let p = Params { luma: lm, ..p };
            for block in 0..cols * rows {
                let (bx, by) = (block % cols, block / cols);
                let mut want = (0.0f64, 0u32);
                for y in by * block_h..(by + 1) * block_h {
                    for x in bx * block_w..(bx + 1) * block_w {
                        let v = unsafe { pixel_width(&p, &b, &n, x, y) };
                        if counts(v) {
                            want.0 += v as f64;
                            want.1 += 1;
                        }
                    }
                }
                let mut got = (0.0f64, 0u32);
                for chunk in 0..p.chunks {
                    let tile = width_tile(&p, block, chunk);
                    for t in 0..BLOCK {
                        let mask = unsafe { thread_edges(&p, &n, tile, t) };
                        for k in 0..WIDTH_PIXELS {
                            if mask & 1 << k == 0 {
                                continue;
                            }
                            let (x, y) =
                                (tile.0 + t % TILE_W, tile.1 + t / TILE_W * WIDTH_PIXELS + k);
                            assert!(unsafe { is_edge(&n, x, y, p.low, p.high) });
                            let v = unsafe { edge_pixel_width(&p, &b, x, y) };
                            if counts(v) {
                                got.0 += v as f64;
                                got.1 += 1;
                            }
                        }
                    }
                }
                assert_eq!(
                    (got.0.to_bits(), got.1),
                    (want.0.to_bits(), want.1),
                    "{w}x{h}"
                );
            }
        }
    }

    #[test]
    fn the_staged_gaussian_is_the_gaussian() {
        let mut seed = 0x5eedu64;
        for &(w, h, wide) in &[
            (1u32, 1u32, false),
            (5, 7, true),
            (33, 9, false),
            (70, 19, true),
            (70, 45, false),
            (37, 70, true),
        ] {
            let (bytes, max) = if wide { (2u32, 1023u64) } else { (1, 255) };
            let pitch = w * bytes + 1;
            let d: Vec<u8> = (0..pitch * h)
                .map(|i| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    if wide && i % 2 == 1 {
                        (seed % 4) as u8
                    } else {
                        (seed % (max + 1).min(256)) as u8
                    }
                })
                .collect();
            let mut l = luma(&d, w, h);
            l.chan.pitch = pitch;
            l.chan.step = bytes;
            l.chan.sample_bytes = bytes;
            l.shift = if wide { 2 } else { 0 };
            let mut tile = vec![0u32; STAGE_LEN];
            for y0 in (0..h).step_by(TILE_H as usize) {
                for x0 in (0..w).step_by(TILE_W as usize) {
                    let threads = if x0 == 0 { BLOCK } else { 100 };
                    for t in 0..threads {
                        unsafe { gauss_stage(&l, x0, y0, tile.as_mut_ptr(), t, threads) };
                    }
                    for r0 in (0..TILE_H).step_by(COLUMN_ROWS as usize) {
                        for tx in 0..TILE_W.min(w - x0) {
                            let got = unsafe { gauss_column(&l, tile.as_ptr(), x0, y0, tx, r0) };
                            for (i, got) in got.into_iter().enumerate() {
                                let y = y0 + r0 + i as u32;
                                if y >= h {
                                    continue;
                                }
                                let want = unsafe { gauss(&l, x0 + tx, y) };
                                assert_eq!(got, want, "{w}x{h} at ({}, {y})", x0 + tx);
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_staged_suppression_is_the_suppression() {
        let mut seed = 0x5eedu64;
        for &(w, h) in &[(1u32, 1u32), (3, 3), (33, 9), (70, 19), (100, 41), (45, 70)] {
            let d: Vec<u8> = (0..w * h)
                .map(|i| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    ((i % w / 5 * 60) as u64 + seed % 40) as u8
                })
                .collect();
            let b = Plane {
                ptr: d.as_ptr(),
                w,
                h,
            };
            let mut tile = vec![0u32; STAGE_LEN];
            let mut mags = vec![u32::MAX; MAG_LEN];
            for y0 in (0..h).step_by(TILE_H as usize) {
                for x0 in (0..w).step_by(TILE_W as usize) {
                    let threads = if x0 == 0 { BLOCK } else { 100 };
                    for t in 0..threads {
                        unsafe { suppress_stage(&b, x0, y0, tile.as_mut_ptr(), t, threads) };
                    }
                    for t in 0..threads {
                        unsafe {
                            suppress_grads(
                                tile.as_ptr(),
                                mags.as_mut_ptr(),
                                (w, h),
                                (x0, y0),
                                t,
                                threads,
                            )
                        };
                    }
                    for ty in 0..TILE_H.min(h - y0) {
                        for tx in 0..TILE_W.min(w - x0) {
                            let got =
                                unsafe { suppressed_tile(mags.as_ptr(), w, h, x0, y0, tx, ty) };
                            let want = unsafe { suppressed(&b, x0 + tx, y0 + ty) };
                            assert_eq!(got, want, "{w}x{h} at ({}, {})", x0 + tx, y0 + ty);
                        }
                    }
                }
            }
        }
    }
}
