//! The Butteraugli kernels: thin `kernel!` declarations over device-only bodies, one thread
//! per pixel of [`super::pixel`]'s functions (block (32, `BLOCK_ROWS`), grid over the
//! level's width and height; `z` picks the plane or image where a stage has several), and
//! the reduction of the final diffmap. The Gaussians' passes give each thread a run of
//! [`super::blur::RUN`] outputs, whose samples it loads once for all of them (the row
//! pass from its warp's row, staged in shared memory; the column pass straight down its
//! column), with the same sums bit for bit as one output at a time. The four column
//! kernels spell out their planes with `unroll!` rather than share a helper looping over
//! them: that loop, holding a whole column run, stayed rolled and put the runs in local
//! memory (22–30 `.local` accesses per kernel in the PTX). `ba_ac_error` likewise gives
//! each thread 4 adjacent pixels of a row, whose Malta windows it reads a row at a time.

#[cfg(target_arch = "nvptx64")]
use super::blur::{self, MAX_HALF, RUN, RUN_SAMPLES};
#[cfg(target_arch = "nvptx64")]
use super::malta::GROUP;
#[cfg(target_arch = "nvptx64")]
use super::{BLOCK_ROWS, HALVES, ROW_SPAN, ROW_STAGE_LEN, ROW_STAGE_W, filter};
#[cfg(target_arch = "nvptx64")]
use super::{Level, Params, Taps};
#[cfg(target_arch = "nvptx64")]
use super::{RED_LEN, REDUCE_THREADS, REDUCE_VALUES, REDUCE_WARPS, pixel};
#[cfg(target_arch = "nvptx64")]
use gpumetrics_device as dev;

/// The pixel of this thread, if it lies inside `lv`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn pixel_of(lv: &Level) -> Option<(u32, u32)> {
    let (x, y) = (dev::global_idx_x(), dev::global_idx_y());
    (x < lv.width && y < lv.height).then_some((x, y))
}

gpumetrics_device::kernel! {
    /// Linear RGB of the half-resolution level (grid over `to`; z = plane, 6).
    pub unsafe fn ba_downsample(from: Level, to: Level) => downsample;

    /// Row pass of the opsin blur (z = plane, 6).
    pub unsafe fn ba_blur5_row(lv: Level, prm: Params) => blur5_row;

    /// Column pass of the opsin blur and opsin dynamics (z = image).
    pub unsafe fn ba_opsin(lv: Level, prm: Params) => opsin;

    /// Row pass of Gaussian `filter` from planes `from + z` into planes `to + z`. Block (32,
    /// `BLOCK_ROWS`), each thread `RUN` consecutive columns: grid (⌈width / ROW_SPAN⌉,
    /// ⌈height / BLOCK_ROWS⌉, planes).
    pub unsafe fn ba_gauss_row(lv: Level, taps: *const Taps, filter: u32, from: u32, to: u32) => gauss_row;

    /// LF and MF (z = image). This and the other column passes: block (32, `BLOCK_ROWS`),
    /// each thread `RUN` consecutive rows of one column: grid (⌈width / 32⌉, ⌈height /
    /// (BLOCK_ROWS · RUN)⌉, z).
    pub unsafe fn ba_lf_col(lv: Level, taps: *const Taps) => lf_col;

    /// MF and HF (z = image).
    pub unsafe fn ba_mf_col(lv: Level, taps: *const Taps) => mf_col;

    /// HF, UHF and the masking activity (z = image).
    pub unsafe fn ba_uhf_col(lv: Level, taps: *const Taps) => uhf_col;

    /// Column pass of the masking blur.
    pub unsafe fn ba_mask_col(lv: Level, taps: *const Taps) => mask_col;

    /// The six scaled differences the Malta filters read.
    pub unsafe fn ba_malta_inputs(lv: Level, prm: Params) => malta_inputs;

    /// The AC error of X and Y (z = channel), each thread a group of
    /// `malta::GROUP` (4) adjacent pixels of a row (`pixel::ac_error_group`): block
    /// (32, `BLOCK_ROWS`), grid (⌈⌈width / 4⌉ / 32⌉, ⌈height / BLOCK_ROWS⌉, 2). One
    /// pixel per thread, the kernel was bound by its loads (296 scalar loads per pixel
    /// and channel); a group reads each band's 9 × 12 window as 16-byte vectors, a row
    /// at a time (`malta::sweep`: the whole window at once took 255 registers per
    /// thread).
    pub unsafe fn ba_ac_error(lv: Level, prm: Params) => ac_error;

    /// The level's diffmap.
    pub unsafe fn ba_diffmap(lv: Level, prm: Params) => diffmap;

    /// Maximum and power sums of the final diffmap (`half` used when `has_half` ≠ 0): each
    /// block of `REDUCE_THREADS` strides over the pixels and writes its
    /// `REDUCE_VALUES` at `out + block · REDUCE_VALUES`. When `map` is not null (`map=
    /// butteraugli`), each pixel's final value is also stored there, row after row of
    /// `full.width`: the distortion map costs a store, not another pass.
    pub unsafe fn ba_reduce(full: Level, half: Level, has_half: u32, out: *mut f64, map: *mut f32) => reduce;
}

/// The body of `ba_downsample`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn downsample(from: Level, to: Level) {
    if let Some((x, y)) = pixel_of(&to) {
        unsafe { pixel::downsample(&from, &to, dev::block_idx_z(), x, y) };
    }
}

/// The body of `ba_blur5_row`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn blur5_row(lv: Level, prm: Params) {
    if let Some((x, y)) = pixel_of(&lv) {
        unsafe { pixel::blur5_row(&lv, &prm, dev::block_idx_z(), x, y) };
    }
}

/// The body of `ba_opsin`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn opsin(lv: Level, prm: Params) {
    if let Some((x, y)) = pixel_of(&lv) {
        unsafe { pixel::opsin(&lv, &prm, dev::block_idx_z(), x, y) };
    }
}

/// The body of `ba_gauss_row`: one copy of the row pass per Gaussian width (the branch is
/// the same for the whole launch).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn gauss_row(lv: Level, taps: *const Taps, filter: u32, from: u32, to: u32) {
    let z = dev::block_idx_z();
    let (t, from, to) = (unsafe { taps.add(filter as usize) }, from + z, to + z);
    unsafe {
        match filter {
            filter::LF => row_run::<{ HALVES[filter::LF as usize] }>(&lv, t, from, to),
            filter::HF => row_run::<{ HALVES[filter::HF as usize] }>(&lv, t, from, to),
            filter::UHF => row_run::<{ HALVES[filter::UHF as usize] }>(&lv, t, from, to),
            _ => row_run::<{ HALVES[filter::MASK as usize] }>(&lv, t, from, to),
        }
    }
}

/// The row pass of a Gaussian of `half` = `H` over [`ROW_SPAN`] columns × [`BLOCK_ROWS`]
/// rows, one warp per row: the warp stages its row with [`blur::MAX_HALF`] samples on each
/// side in shared memory (0 outside the plane), then each lane takes [`RUN`] consecutive
/// outputs. A run reads its samples as aligned 16-byte vectors and sums them with the
/// weights as constants: [`blur::gauss_run`] inside, [`blur::gauss_run_edge`] near the
/// left or right edge (a table of another width takes [`blur::gauss`] per output over the
/// same staged samples). Either way the values are
/// those of [`pixel::gauss_row`], bit for bit.
///
/// # Safety
/// `taps` valid; launched with blocks of (32, [`BLOCK_ROWS`]) threads, so that each warp is
/// one row (it synchronises the warp, not the block).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn row_run<const H: usize>(lv: &Level, taps: *const Taps, from: u32, to: u32) {
    gpumetrics_device::shared!(static BA_ROW_STAGE: [f32; ROW_STAGE_LEN]);
    #[repr(C, align(16))]
    #[derive(Clone, Copy)]
    struct F4([f32; 4]);
    let (lane, ty) = (dev::thread_idx_x(), dev::thread_idx_y());
    let (w, h) = (lv.width, lv.height);
    let (x0, y) = (
        dev::block_idx_x() * ROW_SPAN,
        dev::block_idx_y() * BLOCK_ROWS + ty,
    );
    if y >= h {
        // The whole warp: its row is past the plane.
        return;
    }
    let src = unsafe { (lv.plane(from) as *const f32).add((y * w) as usize) };
    // Staged entry `row + c` holds column x0 − MAX_HALF + c of row y.
    let row = ty * ROW_STAGE_W;
    // All five loads first, then the stores: a loop of load-then-store waited for each
    // load in turn (the kernel's main stall).
    const STAGE_LOADS: usize = 5;
    const _: () = assert!(
        ROW_STAGE_W == 32 * STAGE_LOADS as u32,
        "the unroll! lists below"
    );
    let mut staged = [0.0f32; STAGE_LOADS];
    unroll!(i in [0 1 2 3 4] {
        let x = (x0 + lane + 32 * i as u32).wrapping_sub(MAX_HALF as u32);
        if x < w {
            staged[i] = unsafe { *src.add(x as usize) };
        }
    });
    unroll!(i in [0 1 2 3 4] {
        unsafe { BA_ROW_STAGE.write((row + lane + 32 * i as u32) as usize, staged[i]) };
    });
    unsafe { dev::sync_warp() };
    let x = x0 + RUN as u32 * lane;
    if x >= w {
        return;
    }
    let dst = unsafe { lv.plane(to).add((y * w + x) as usize) };
    if unsafe { (*taps).half } as usize == H {
        // Sample m of the run (x − H + m) is staged column RUN·lane + MAX_HALF − H + m: the
        // 16-byte chunks q0..=q1 of the lane's stretch hold them all, from `o`.
        let (q0, q1) = ((MAX_HALF - H) / 4, (MAX_HALF + H + RUN - 1) / 4);
        let o = MAX_HALF - H - 4 * q0;
        let chunks = BA_ROW_STAGE.as_mut_ptr() as *const F4;
        let first = ((row + RUN as u32 * lane) / 4) as usize;
        // Spelled out (`unroll!`): as loops they were unrolled or not depending on the
        // kernel's size, and when not, `s` and `v` went to local memory.
        const _: () = assert!(RUN_SAMPLES == 36, "the unroll! lists below");
        let mut s = [0.0f32; RUN_SAMPLES];
        unroll!(q in [0 1 2 3 4 5 6 7 8] {
            if q >= q0 && q <= q1 {
                // SAFETY: the chunk lies in the warp's staged row (RUN·lane + 4·q1 + 3 <
                // ROW_STAGE_W); the stage is 16-byte aligned and rows are multiples of 4.
                let c = unsafe { *chunks.add(first + q) };
                let at = 4 * (q - q0);
                s[at] = c.0[0];
                s[at + 1] = c.0[1];
                s[at + 2] = c.0[2];
                s[at + 3] = c.0[3];
            }
        });
        let mut v = [0.0f32; RUN_SAMPLES];
        unroll!(m in [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27
                      28 29 30 31 32 33 34 35] {
            if m < RUN + 2 * H {
                v[m] = s[o + m];
            }
        });
        if blur::run_inside(x, w, H as u32) {
            let out = blur::gauss_run::<H, false>(&v, &const { blur::run_table::<H>(true) });
            for (j, v) in out.iter().enumerate() {
                unsafe { *dst.add(j) = *v };
            }
        } else {
            let out = blur::gauss_run_edge::<H, false>(&v, x, w);
            unroll!(j in [0 1 2 3] {
                if x + (j as u32) < w {
                    unsafe { *dst.add(j) = out[j] };
                }
            });
        }
    } else if unsafe { (*taps).half } as usize <= MAX_HALF {
        // Every tap of these outputs (columns x − half .. x + RUN − 1 + half inside the
        // plane) lies in the staged stretch x0 − MAX_HALF .. x0 + ROW_SPAN + MAX_HALF.
        let at = |i: u32| unsafe {
            BA_ROW_STAGE.read_unchecked((row + i + MAX_HALF as u32 - x0) as usize)
        };
        for j in 0..RUN as u32 {
            if x + j < w {
                unsafe { *dst.add(j as usize) = blur::gauss(taps, x + j, w, false, at) };
            }
        }
    } else {
        // A Gaussian wider than the staged stretch: from the plane.
        for j in 0..RUN as u32 {
            if x + j < w {
                unsafe { pixel::gauss_row(lv, taps, from, to, x + j, y) };
            }
        }
    }
}

/// The first pixel of this thread's column run ([`RUN`] rows from there), if it lies
/// inside `lv`: block (32, [`BLOCK_ROWS`]) covers 32 columns × `BLOCK_ROWS · RUN` rows.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn run_of(lv: &Level) -> Option<(u32, u32)> {
    let (x, y) = (dev::global_idx_x(), dev::global_idx_y() * RUN as u32);
    (x < lv.width && y < lv.height).then_some((x, y))
}

/// `out(j, y)` for each row y of this thread's column run (from `y0`) inside the level,
/// `j` its index in the run (a constant: straight-line code, arrays in registers).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn run_rows(lv: &Level, y0: u32, mut out: impl FnMut(usize, u32)) {
    const _: () = assert!(RUN == 4, "the unroll! list below");
    unroll!(j in [0 1 2 3] {
        if y0 + (j as u32) < lv.height {
            out(j, y0 + j as u32);
        }
    });
}

/// The body of `ba_lf_col`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn lf_col(lv: Level, taps: *const Taps) {
    const H: usize = HALVES[filter::LF as usize];
    if let Some((x, y)) = run_of(&lv) {
        let img = dev::block_idx_z();
        let t = unsafe { taps.add(filter::LF as usize) };
        let mut b = [[0.0f32; RUN]; 3];
        unroll!(c in [0 1 2] {
            b[c] = unsafe { pixel::gauss_col_run::<H>(&lv, t, img * 3 + c as u32, x, y) };
        });
        run_rows(&lv, y, |j, y| unsafe {
            pixel::lf_out(&lv, img, x, y, [b[0][j], b[1][j], b[2][j]])
        });
    }
}

/// The body of `ba_mf_col`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn mf_col(lv: Level, taps: *const Taps) {
    const H: usize = HALVES[filter::HF as usize];
    if let Some((x, y)) = run_of(&lv) {
        let img = dev::block_idx_z();
        let t = unsafe { taps.add(filter::HF as usize) };
        let mut b = [[0.0f32; RUN]; 3];
        unroll!(c in [0 1 2] {
            b[c] = unsafe { pixel::gauss_col_run::<H>(&lv, t, img * 3 + c as u32, x, y) };
        });
        run_rows(&lv, y, |j, y| unsafe {
            pixel::mf_out(&lv, img, x, y, [b[0][j], b[1][j], b[2][j]])
        });
    }
}

/// The body of `ba_uhf_col`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn uhf_col(lv: Level, taps: *const Taps) {
    const H: usize = HALVES[filter::UHF as usize];
    if let Some((x, y)) = run_of(&lv) {
        let img = dev::block_idx_z();
        let t = unsafe { taps.add(filter::UHF as usize) };
        let mut b = [[0.0f32; RUN]; 2];
        unroll!(c in [0 1] {
            b[c] = unsafe { pixel::gauss_col_run::<H>(&lv, t, img * 2 + c as u32, x, y) };
        });
        run_rows(&lv, y, |j, y| unsafe {
            pixel::uhf_out(&lv, img, x, y, [b[0][j], b[1][j]])
        });
    }
}

/// The body of `ba_mask_col`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn mask_col(lv: Level, taps: *const Taps) {
    const H: usize = HALVES[filter::MASK as usize];
    if let Some((x, y)) = run_of(&lv) {
        let t = unsafe { taps.add(filter::MASK as usize) };
        let mut b = [[0.0f32; RUN]; 2];
        unroll!(c in [0 1] {
            b[c] = unsafe { pixel::gauss_col_run::<H>(&lv, t, c as u32, x, y) };
        });
        run_rows(&lv, y, |j, y| unsafe {
            pixel::mask_out(&lv, x, y, [b[0][j], b[1][j]])
        });
    }
}

/// The body of `ba_malta_inputs`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn malta_inputs(lv: Level, prm: Params) {
    if let Some((x, y)) = pixel_of(&lv) {
        unsafe { pixel::malta_inputs(&lv, &prm, x, y) };
    }
}

/// The body of `ba_ac_error`: the group of `GROUP` pixels from column `GROUP · x` of
/// this thread, if it starts inside `lv` (its pixels past the width are not written).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn ac_error(lv: Level, prm: Params) {
    let (x0, y) = (dev::global_idx_x() * GROUP as u32, dev::global_idx_y());
    if x0 < lv.width && y < lv.height {
        unsafe { pixel::ac_error_group(&lv, &prm, dev::block_idx_z(), x0, y) };
    }
}

/// The body of `ba_diffmap`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn diffmap(lv: Level, prm: Params) {
    if let Some((x, y)) = pixel_of(&lv) {
        unsafe { pixel::diffmap(&lv, &prm, x, y) };
    }
}

/// The body of `ba_reduce`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn reduce(full: Level, half: Level, has_half: u32, out: *mut f64, map: *mut f32) {
    gpumetrics_device::shared!(static BA_RED: [f64; RED_LEN]);
    let t = dev::thread_idx_x();
    let n = full.width * full.height;
    let mut acc = [0.0f64; REDUCE_VALUES];
    let mut i = dev::block_idx_x() * REDUCE_THREADS + t;
    let stride = dev::grid_dim_x() * REDUCE_THREADS;
    let sub = if has_half != 0 { Some(&half) } else { None };
    while i < n {
        let v = unsafe { pixel::final_value(&full, sub, i % full.width, i / full.width) };
        if !map.is_null() {
            unsafe { *map.add(i as usize) = v };
        }
        pixel::accumulate(&mut acc, v);
        i += stride;
    }
    let mut delta = 16;
    while delta > 0 {
        let m = unsafe { dev::shfl_down(dev::FULL_MASK, acc[0], delta) };
        if m > acc[0] {
            acc[0] = m;
        }
        for k in 1..REDUCE_VALUES {
            acc[k] += unsafe { dev::shfl_down(dev::FULL_MASK, acc[k], delta) };
        }
        delta /= 2;
    }
    let warps = REDUCE_WARPS as u32;
    if dev::lane_id() == 0 {
        for k in 0..REDUCE_VALUES {
            unsafe { BA_RED.write(k * warps as usize + (t / 32) as usize, acc[k]) };
        }
    }
    unsafe { dev::sync_threads() };
    if t == 0 {
        let block = dev::block_idx_x() as usize;
        for k in 0..REDUCE_VALUES {
            let mut v = unsafe { BA_RED.read(k * warps as usize) };
            for w in 1..warps as usize {
                let o = unsafe { BA_RED.read(k * warps as usize + w) };
                if k == 0 {
                    if o > v {
                        v = o;
                    }
                } else {
                    v += o;
                }
            }
            unsafe { *out.add(block * REDUCE_VALUES + k) = v };
        }
    }
}
