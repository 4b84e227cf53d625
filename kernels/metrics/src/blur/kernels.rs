//! The blur kernels, one frame per launch sequence: `blur_gauss` (the blurred plane),
//! `blur_suppress` (the suppressed gradient plane, from the blurred one), `blur_widths`
//! (per CUDA block, the sum and count of the edge widths of one tile of one block: `TILE_W`
//! columns by `WIDTH_ROWS` rows, the tile's edge pixels packed into a list first).
//! The plane kernels run `TILE_W`×`THREADS_Y` (32×8) threads per `TILE_W`×`TILE_H` (32×32)
//! tile, 4 pixels of one column per thread; the width kernel
//! reduces its thread sums through warp shuffles and shared memory in a fixed order and
//! writes one (sum, count) pair per CUDA block: no atomics.

#[cfg(target_arch = "nvptx64")]
use super::Params;
#[cfg(target_arch = "nvptx64")]
use super::{
    BLOCK, COLUMN_ROWS, MAG_LEN, Plane, STAGE_LEN, TILE_H, TILE_W, WARPS, WIDTH_PIXELS, WIDTH_ROWS,
    counts, edge_pixel_width, gauss_column, gauss_stage, suppress_grads, suppress_stage,
    suppressed_tile, thread_edges, width_tile,
};
#[cfg(target_arch = "nvptx64")]
use gpumetrics_device as dev;

gpumetrics_device::kernel! {
    /// `blurred[y·w + x]` = the Gaussian of the luma at (x, y), from the block's samples
    /// staged once in shared memory. Launch `TILE_W`×`THREADS_Y` threads on a grid of
    /// `TILE_W`×`TILE_H` tiles covering width × height.
    pub unsafe fn blur_gauss(p: Params, blurred: *mut u8) => gauss_body;

    /// `out[y·w + x]` = the suppressed gradient of `blurred` at (x, y), from the block's
    /// blurred values staged in shared memory and the gradients around the block computed
    /// from them once (also in shared memory). Same grid.
    pub unsafe fn blur_suppress(p: Params, blurred: *const u8, out: *mut u8) => suppress_body;

    /// `out[2b]`, `out[2b + 1]` = the sum and the count of the counted edge widths of CUDA
    /// block b's share: block `b / chunks`, its tile `b % chunks`. Launch `BLOCK` threads
    /// on grid.x = cols · rows · chunks.
    pub unsafe fn blur_widths(
        p: Params,
        blurred: *const u8,
        suppressed: *const u8,
        out: *mut f64,
    ) => widths_body;
}

/// The body of `blur_gauss`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn gauss_body(p: Params, blurred: *mut u8) {
    gpumetrics_device::shared!(static BLUR_STAGE: [u32; STAGE_LEN]);
    let l = p.luma;
    let (tx, ty) = (dev::thread_idx_x(), dev::thread_idx_y());
    let (x0, y0) = (dev::block_idx_x() * TILE_W, dev::block_idx_y() * TILE_H);
    let threads = dev::block_dim_x() * dev::block_dim_y();
    let s = BLUR_STAGE.as_mut_ptr();
    unsafe { gauss_stage(&l, x0, y0, s, ty * dev::block_dim_x() + tx, threads) };
    unsafe { dev::sync_threads() };
    // Rows COLUMN_ROWS·ty .. COLUMN_ROWS·(ty + 1) of the tile, then (with fewer rows of
    // threads than THREADS_Y) the next rows of threads' share.
    let mut r0 = ty * COLUMN_ROWS;
    let x = x0 + tx;
    while r0 < TILE_H {
        let v = unsafe { gauss_column(&l, s, x0, y0, tx, r0) };
        let mut i = 0;
        while i < COLUMN_ROWS {
            let y = y0 + r0 + i;
            if x < l.width && y < l.height {
                unsafe { *blurred.add(y as usize * l.width as usize + x as usize) = v[i as usize] };
            }
            i += 1;
        }
        r0 += dev::block_dim_y() * COLUMN_ROWS;
    }
}

/// The body of `blur_suppress`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn suppress_body(p: Params, blurred: *const u8, out: *mut u8) {
    gpumetrics_device::shared!(static BLUR_STAGE: [u32; STAGE_LEN]);
    gpumetrics_device::shared!(static BLUR_MAGS: [u32; MAG_LEN]);
    let (w, h) = (p.luma.width, p.luma.height);
    let (tx, ty) = (dev::thread_idx_x(), dev::thread_idx_y());
    let (x0, y0) = (dev::block_idx_x() * TILE_W, dev::block_idx_y() * TILE_H);
    let threads = dev::block_dim_x() * dev::block_dim_y();
    let b = Plane { ptr: blurred, w, h };
    let (s, m) = (BLUR_STAGE.as_mut_ptr(), BLUR_MAGS.as_mut_ptr());
    let thread = ty * dev::block_dim_x() + tx;
    unsafe { suppress_stage(&b, x0, y0, s, thread, threads) };
    unsafe { dev::sync_threads() };
    unsafe { suppress_grads(s, m, (w, h), (x0, y0), thread, threads) };
    unsafe { dev::sync_threads() };
    let mut r = ty;
    while r < TILE_H {
        let (x, y) = (x0 + tx, y0 + r);
        if x < w && y < h {
            let v = unsafe { suppressed_tile(m, w, h, x0, y0, tx, r) };
            unsafe { *out.add(y as usize * w as usize + x as usize) = v };
        }
        r += dev::block_dim_y();
    }
}

/// The body of `blur_widths`: every thread tests its [`WIDTH_PIXELS`] pixels of the tile
/// for edges ([`thread_edges`]), the block packs the edge pixels into one shared list (an
/// exclusive scan of the threads' counts: shuffles within each warp, then the warps' totals),
/// then thread t measures entries t, t + BLOCK, .. of the list. Edge pixels are few and
/// uneven, so a warp that walked its own pixels would wait on its slowest lane for each
/// row; packed, the warps' lanes all walk. The sum is exact in any order (see the module).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn widths_body(p: Params, blurred: *const u8, suppressed: *const u8, out: *mut f64) {
    gpumetrics_device::shared!(static BLUR_EDGES: [u32; EDGES_LEN]);
    gpumetrics_device::shared!(static BLUR_WARP_COUNTS: [u32; WARPS]);
    gpumetrics_device::shared!(static BLUR_WARP_SUMS: [f64; 2 * WARPS]);
    let (w, h) = (p.luma.width, p.luma.height);
    let b = Plane { ptr: blurred, w, h };
    let n = Plane {
        ptr: suppressed,
        w,
        h,
    };
    let id = dev::block_idx_x();
    let t = dev::thread_idx_x();
    let (lane, warp) = (dev::lane_id(), (t / 32) as usize);
    let tile = width_tile(&p, id / p.chunks, id % p.chunks);
    let mask = unsafe { thread_edges(&p, &n, tile, t) };
    // The warp's inclusive scan of the counts; its last lane holds the warp's total.
    let mine = mask.count_ones();
    let mut before = mine;
    let mut delta = 1;
    while delta < 32 {
        let v: u32 = unsafe { dev::shfl_up(dev::FULL_MASK, before, delta) };
        if lane >= delta {
            before += v;
        }
        delta *= 2;
    }
    if lane == 31 {
        unsafe { BLUR_WARP_COUNTS.write(warp, before) };
    }
    unsafe { dev::sync_threads() };
    let mut total = 0u32;
    let mut at = before - mine;
    for k in 0..WARPS {
        let c = unsafe { BLUR_WARP_COUNTS.read(k) };
        if k < warp {
            at += c;
        }
        total += c;
    }
    // Entries: the pixel's column and row in the tile (`r · TILE_W + c`).
    let (c, r0) = (t % TILE_W, t / TILE_W * WIDTH_PIXELS);
    let mut k = 0;
    while k < WIDTH_PIXELS {
        if mask & 1 << k != 0 {
            let r = r0 + k;
            unsafe { BLUR_EDGES.write(at as usize, r * TILE_W + c) };
            at += 1;
        }
        k += 1;
    }
    unsafe { dev::sync_threads() };
    let (mut sum, mut count) = (0.0f64, 0u32);
    let mut i = t;
    while i < total {
        let e = unsafe { BLUR_EDGES.read(i as usize) };
        let (x, y) = (tile.0 + e % TILE_W, tile.1 + e / TILE_W);
        let v = unsafe { edge_pixel_width(&p, &b, x, y) };
        if counts(v) {
            sum += v as f64;
            count += 1;
        }
        i += BLOCK;
    }
    let mut count = count as f64;
    let mut delta = 16;
    while delta > 0 {
        sum += unsafe { dev::shfl_down(dev::FULL_MASK, sum, delta) };
        count += unsafe { dev::shfl_down(dev::FULL_MASK, count, delta) };
        delta /= 2;
    }
    if lane == 0 {
        unsafe {
            BLUR_WARP_SUMS.write(2 * warp, sum);
            BLUR_WARP_SUMS.write(2 * warp + 1, count);
        }
    }
    unsafe { dev::sync_threads() };
    if t == 0 {
        let (mut s, mut c) = (0.0f64, 0.0f64);
        for warp in 0..WARPS {
            s += unsafe { BLUR_WARP_SUMS.read(2 * warp) };
            c += unsafe { BLUR_WARP_SUMS.read(2 * warp + 1) };
        }
        unsafe {
            *out.add(2 * id as usize) = s;
            *out.add(2 * id as usize + 1) = c;
        }
    }
}

/// Entries of the width kernel's list of edge pixels: one per pixel of a tile.
#[cfg(target_arch = "nvptx64")]
const EDGES_LEN: usize = (TILE_W * WIDTH_ROWS) as usize;
