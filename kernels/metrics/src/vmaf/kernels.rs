//! The VMAF kernels: thin `kernel!` declarations over device-only bodies. The per-pixel
//! kernels run one thread per output pixel of [`super::load`], [`super::vif`]'s,
//! [`super::adm`]'s and [`super::motion`]'s functions (`TILE`×`TILE` blocks, a grid over the
//! output plane); the per-row kernels run one block of `ROW_BLOCK` threads per row (grid.x =
//! rows), reduce the row through warp shuffles and shared memory, and add it to the scale's
//! sums with one atomic per value.

#[cfg(target_arch = "nvptx64")]
use super::adm::{self, Dwt, Scale};
#[cfg(target_arch = "nvptx64")]
use super::vif::{self, VifScale};
#[cfg(target_arch = "nvptx64")]
use super::{Plane, ROW_BLOCK, ROW_WARPS, TILE, motion};
#[cfg(target_arch = "nvptx64")]
use crate::channel::Channel;
#[cfg(target_arch = "nvptx64")]
use gpumetrics_device as dev;

gpumetrics_device::kernel! {
    /// Copies the luma channels of a pair into `u16` planes. Launch `TILE`×`TILE` threads on
    /// a grid covering the frame.
    pub unsafe fn vmaf_load(
        reference: Channel,
        distorted: Channel,
        ref_out: Plane,
        dis_out: Plane,
    ) => load;

    /// The vertical pass of one scale into `s.tmp`. `TILE`×`TILE` threads, grid covering
    /// the scale.
    pub unsafe fn vmaf_vif_vertical(s: VifScale) => vif_vertical;

    /// Adds one scale's four sums to `out[0..4]` (two's complement in `u64`). One block of
    /// `ROW_BLOCK` threads per row (grid.x = rows).
    pub unsafe fn vmaf_vif_stat(s: VifScale, out: *mut u64) => vif_stat;

    /// The next scale's images (`next_ref`, `next_dis`, half this scale's size rounded
    /// down). `TILE`×`TILE` threads, grid covering the next scale.
    pub unsafe fn vmaf_vif_down(
        s: VifScale,
        next_ref: Plane,
        next_dis: Plane,
    ) => vif_down;

    /// One wavelet level of both images. `TILE`×`TILE` threads, grid covering the bands.
    pub unsafe fn vmaf_adm_dwt(d: Dwt) => adm_dwt;

    /// Decoupling of one scale (r and a). `TILE`×`TILE` threads, grid
    /// covering the bands.
    pub unsafe fn vmaf_adm_decouple(s: Scale) => adm_decouple;

    /// Adds one scale's row-shifted DLM numerator (h, v, d) to `out[0..3]`, denominator
    /// (h, v, d) to `out[3..6]` and AIM numerator (h, v, d; zeros unless `s.aim`) to
    /// `aim[0..3]` (two's complement in `u64`). One block of `ROW_BLOCK` threads per band
    /// row (grid.x = rows).
    pub unsafe fn vmaf_adm_rows(s: Scale, out: *mut u64, aim: *mut u64) => adm_rows;

    /// The vertical blur pass of `previous − current` (`bpc`-bit) into the `i32` plane
    /// `tmp`. `TILE`×`TILE` threads, grid covering the frame.
    pub unsafe fn vmaf_motion_diff_y(
        previous: Plane,
        current: Plane,
        tmp: Plane,
        bpc: u32,
    ) => motion_diff_y;

    /// Adds the SAD of the horizontal pass over `tmp` to `*out`. One block of `ROW_BLOCK`
    /// threads per row (grid.x = rows): each thread sums a strided share of the row in 32
    /// bits, which adds up to libvmaf's row sum modulo 2^32 as well.
    pub unsafe fn vmaf_motion_sad(tmp: Plane, out: *mut u64) => motion_sad;
}

/// The body of `vmaf_load`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn load(reference: Channel, distorted: Channel, ref_out: Plane, dis_out: Plane) {
    let x = dev::block_idx_x() * TILE + dev::thread_idx_x();
    let y = dev::block_idx_y() * TILE + dev::thread_idx_y();
    if x < ref_out.width && y < ref_out.height {
        unsafe {
            super::load(&reference, &ref_out, x, y, reference.max);
            super::load(&distorted, &dis_out, x, y, reference.max);
        }
    }
}

/// The body of `vmaf_vif_vertical`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn vif_vertical(s: VifScale) {
    let x = dev::block_idx_x() * TILE + dev::thread_idx_x();
    let y = dev::block_idx_y() * TILE + dev::thread_idx_y();
    if x < s.reference.width && y < s.reference.height {
        unsafe { vif::vertical_store(&s, x, y) };
    }
}

/// The body of `vmaf_vif_stat`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn vif_stat(s: VifScale, out: *mut u64) {
    gpumetrics_device::shared!(static VMAF_VIF_WARPS: [i64; 4 * ROW_WARPS]);
    let y = dev::block_idx_x();
    let t = dev::thread_idx_x();
    let mut acc = vif::Sums::default();
    let mut x = t;
    while x < s.reference.width {
        acc.add(&unsafe { vif::pixel(&s, x, y) });
        x += ROW_BLOCK;
    }
    let mut v = acc.to_array();
    let mut delta = 16;
    while delta > 0 {
        for k in 0..4 {
            v[k] = v[k].wrapping_add(unsafe { dev::shfl_down(dev::FULL_MASK, v[k], delta) });
        }
        delta /= 2;
    }
    if dev::lane_id() == 0 {
        for k in 0..4 {
            unsafe { VMAF_VIF_WARPS.write(k * ROW_WARPS + (t / 32) as usize, v[k]) };
        }
    }
    unsafe { dev::sync_threads() };
    if t < 4 {
        let mut total = 0i64;
        for w in 0..ROW_WARPS {
            total = total.wrapping_add(unsafe { VMAF_VIF_WARPS.read(t as usize * ROW_WARPS + w) });
        }
        unsafe { dev::atomic_add_u64(out.add(t as usize), total as u64) };
    }
}

/// The body of `vmaf_vif_down`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn vif_down(s: VifScale, next_ref: Plane, next_dis: Plane) {
    let x = dev::block_idx_x() * TILE + dev::thread_idx_x();
    let y = dev::block_idx_y() * TILE + dev::thread_idx_y();
    if x < next_ref.width && y < next_ref.height {
        let (a, b) = unsafe { vif::down(&s, x, y) };
        unsafe {
            next_ref.set::<u16>(x, y, a);
            next_dis.set::<u16>(x, y, b);
        }
    }
}

/// The body of `vmaf_adm_dwt`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn adm_dwt(d: Dwt) {
    let x = dev::block_idx_x() * TILE + dev::thread_idx_x();
    let y = dev::block_idx_y() * TILE + dev::thread_idx_y();
    if x < d.bands.width && y < d.bands.height {
        unsafe { adm::dwt_store(&d, x, y) };
    }
}

/// The body of `vmaf_adm_decouple`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn adm_decouple(s: Scale) {
    let x = dev::block_idx_x() * TILE + dev::thread_idx_x();
    let y = dev::block_idx_y() * TILE + dev::thread_idx_y();
    if x < s.bands.width && y < s.bands.height {
        unsafe { adm::decouple_store(&s, x, y) };
    }
}

/// The body of `vmaf_adm_rows`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn adm_rows(s: Scale, out: *mut u64, aim: *mut u64) {
    gpumetrics_device::shared!(static VMAF_ADM_WARPS: [u64; 9 * ROW_WARPS]);
    let y = dev::block_idx_x();
    let t = dev::thread_idx_x();
    let (left, top, right, bottom) = adm::region(s.bands.width, s.bands.height);
    if y < top || y >= bottom {
        return;
    }
    let mut v = [0u64; 9];
    let mut x = left + t;
    while x < right {
        let c = unsafe { adm::cm_pixel(&s, x, y, false) };
        let d = unsafe { adm::den_pixel(&s, x, y) };
        let a = if s.aim != 0 {
            unsafe { adm::cm_pixel(&s, x, y, true) }
        } else {
            [0; 3]
        };
        for k in 0..3 {
            v[k] = v[k].wrapping_add(c[k] as u64);
            v[3 + k] = v[3 + k].wrapping_add(d[k]);
            v[6 + k] = v[6 + k].wrapping_add(a[k] as u64);
        }
        x += ROW_BLOCK;
    }
    let mut delta = 16;
    while delta > 0 {
        for k in 0..9 {
            v[k] = v[k].wrapping_add(unsafe { dev::shfl_down(dev::FULL_MASK, v[k], delta) });
        }
        delta /= 2;
    }
    if dev::lane_id() == 0 {
        for k in 0..9 {
            unsafe { VMAF_ADM_WARPS.write(k * ROW_WARPS + (t / 32) as usize, v[k]) };
        }
    }
    unsafe { dev::sync_threads() };
    if t == 0 {
        let mut raw = adm::RowSums::default();
        for w in 0..ROW_WARPS {
            let at = |k: usize| unsafe { VMAF_ADM_WARPS.read(k * ROW_WARPS + w) };
            for k in 0..3 {
                raw.num[k] = raw.num[k].wrapping_add(at(k) as i64);
                raw.den[k] = raw.den[k].wrapping_add(at(3 + k));
                raw.aim[k] = raw.aim[k].wrapping_add(at(6 + k) as i64);
            }
        }
        let sums = adm::row_finish(&s, &raw);
        for k in 0..3 {
            unsafe {
                dev::atomic_add_u64(out.add(k), sums.num[k] as u64);
                dev::atomic_add_u64(out.add(3 + k), sums.den[k]);
                dev::atomic_add_u64(aim.add(k), sums.aim[k] as u64);
            }
        }
    }
}

/// The body of `vmaf_motion_diff_y`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn motion_diff_y(previous: Plane, current: Plane, tmp: Plane, bpc: u32) {
    let x = dev::block_idx_x() * TILE + dev::thread_idx_x();
    let y = dev::block_idx_y() * TILE + dev::thread_idx_y();
    if x < current.width && y < current.height {
        unsafe { tmp.set::<i32>(x, y, motion::diff_y(&previous, &current, x, y, bpc)) };
    }
}

/// The body of `vmaf_motion_sad`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn motion_sad(tmp: Plane, out: *mut u64) {
    gpumetrics_device::shared!(static VMAF_SAD_WARPS: [u32; ROW_WARPS]);
    let y = dev::block_idx_x();
    let t = dev::thread_idx_x();
    let mut s = 0u32;
    let mut x = t;
    while x < tmp.width {
        s = s.wrapping_add(unsafe { motion::abs_x(&tmp, x, y) });
        x += ROW_BLOCK;
    }
    let mut delta = 16;
    while delta > 0 {
        s = s.wrapping_add(unsafe { dev::shfl_down(dev::FULL_MASK, s, delta) });
        delta /= 2;
    }
    if dev::lane_id() == 0 {
        unsafe { VMAF_SAD_WARPS.write((t / 32) as usize, s) };
    }
    unsafe { dev::sync_threads() };
    if t == 0 {
        let mut total = 0u32;
        for w in 0..ROW_WARPS {
            total = total.wrapping_add(unsafe { VMAF_SAD_WARPS.read(w) });
        }
        unsafe { dev::atomic_add_u64(out, total as u64) };
    }
}
