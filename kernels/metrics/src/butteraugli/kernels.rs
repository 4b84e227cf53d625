//! The Butteraugli kernels: thin `kernel!` declarations over device-only bodies, one thread
//! per pixel of [`super::pixel`]'s functions (block (32, `BLOCK_ROWS`), grid over the
//! level's width and height; `z` picks the plane or image where a stage has several), and
//! the reduction of the final diffmap.

#[cfg(target_arch = "nvptx64")]
use super::{Level, Params, Taps};
#[cfg(target_arch = "nvptx64")]
use super::{RED_LEN, REDUCE_THREADS, REDUCE_VALUES, REDUCE_WARPS, pixel};
#[cfg(target_arch = "nvptx64")]
use crate::color::ColorSource;
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
    /// Linear RGB of both frames (z = image).
    pub unsafe fn ba_linearize(reference: ColorSource, distorted: ColorSource, lv: Level) => linearize;

    /// Linear RGB of the half-resolution level (grid over `to`; z = plane, 6).
    pub unsafe fn ba_downsample(from: Level, to: Level) => downsample;

    /// Row pass of the opsin blur (z = plane, 6).
    pub unsafe fn ba_blur5_row(lv: Level, prm: Params) => blur5_row;

    /// Column pass of the opsin blur and opsin dynamics (z = image).
    pub unsafe fn ba_opsin(lv: Level, prm: Params) => opsin;

    /// Row pass of Gaussian `filter` from planes `from + z` into planes `to + z`.
    pub unsafe fn ba_gauss_row(lv: Level, taps: *const Taps, filter: u32, from: u32, to: u32) => gauss_row;

    /// LF and MF (z = image).
    pub unsafe fn ba_lf_col(lv: Level, taps: *const Taps) => lf_col;

    /// MF and HF (z = image).
    pub unsafe fn ba_mf_col(lv: Level, taps: *const Taps) => mf_col;

    /// HF, UHF and the masking activity (z = image).
    pub unsafe fn ba_uhf_col(lv: Level, taps: *const Taps) => uhf_col;

    /// Column pass of the masking blur.
    pub unsafe fn ba_mask_col(lv: Level, taps: *const Taps) => mask_col;

    /// The six scaled differences the Malta filters read.
    pub unsafe fn ba_malta_inputs(lv: Level, prm: Params) => malta_inputs;

    /// The AC error of X and Y (z = channel).
    pub unsafe fn ba_ac_error(lv: Level, prm: Params) => ac_error;

    /// The level's diffmap.
    pub unsafe fn ba_diffmap(lv: Level, prm: Params) => diffmap;

    /// Maximum and power sums of the final diffmap (`half` used when `has_half` ≠ 0): each
    /// block of `REDUCE_THREADS` strides over the pixels and writes its
    /// `REDUCE_VALUES` at `out + block · REDUCE_VALUES`.
    pub unsafe fn ba_reduce(full: Level, half: Level, has_half: u32, out: *mut f64) => reduce;
}

/// The body of `ba_linearize`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn linearize(reference: ColorSource, distorted: ColorSource, lv: Level) {
    let img = dev::block_idx_z();
    let src = if img == 0 { reference } else { distorted };
    if let Some((x, y)) = pixel_of(&lv) {
        unsafe { pixel::linearize(&src, &lv, img, x, y) };
    }
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

/// The body of `ba_gauss_row`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn gauss_row(lv: Level, taps: *const Taps, filter: u32, from: u32, to: u32) {
    if let Some((x, y)) = pixel_of(&lv) {
        let z = dev::block_idx_z();
        unsafe { pixel::gauss_row(&lv, taps.add(filter as usize), from + z, to + z, x, y) };
    }
}

/// The body of `ba_lf_col`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn lf_col(lv: Level, taps: *const Taps) {
    if let Some((x, y)) = pixel_of(&lv) {
        unsafe { pixel::lf_col(&lv, taps, dev::block_idx_z(), x, y) };
    }
}

/// The body of `ba_mf_col`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn mf_col(lv: Level, taps: *const Taps) {
    if let Some((x, y)) = pixel_of(&lv) {
        unsafe { pixel::mf_col(&lv, taps, dev::block_idx_z(), x, y) };
    }
}

/// The body of `ba_uhf_col`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn uhf_col(lv: Level, taps: *const Taps) {
    if let Some((x, y)) = pixel_of(&lv) {
        unsafe { pixel::uhf_col(&lv, taps, dev::block_idx_z(), x, y) };
    }
}

/// The body of `ba_mask_col`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn mask_col(lv: Level, taps: *const Taps) {
    if let Some((x, y)) = pixel_of(&lv) {
        unsafe { pixel::mask_col(&lv, taps, x, y) };
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

/// The body of `ba_ac_error`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn ac_error(lv: Level, prm: Params) {
    if let Some((x, y)) = pixel_of(&lv) {
        unsafe { pixel::ac_error(&lv, &prm, dev::block_idx_z(), x, y) };
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
unsafe fn reduce(full: Level, half: Level, has_half: u32, out: *mut f64) {
    gpumetrics_device::shared!(static BA_RED: [f64; RED_LEN]);
    let t = dev::thread_idx_x();
    let n = full.width * full.height;
    let mut acc = [0.0f64; REDUCE_VALUES];
    let mut i = dev::block_idx_x() * REDUCE_THREADS + t;
    let stride = dev::grid_dim_x() * REDUCE_THREADS;
    let sub = if has_half != 0 { Some(&half) } else { None };
    while i < n {
        let v = unsafe { pixel::final_value(&full, sub, i % full.width, i / full.width) };
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
