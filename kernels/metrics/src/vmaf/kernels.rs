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

    /// One scale's VIF: the vertical pass of a tile into shared memory, the horizontal pass
    /// and the terms from there (`s.tmp` is not read), and the tile's four sums added to
    /// `out[0..4]` (two's complement in `u64`). With a non-null `out2`, a second model's
    /// sums too (its gain limit `second_gain_limit`, all else equal) to `out2[0..4]`.
    /// `FUSED_THREADS` threads a block, a grid of `FUSED_W`×`FUSED_H` tiles covering the
    /// scale.
    pub unsafe fn vmaf_vif_fused(
        s: VifScale,
        second_gain_limit: f64,
        out: *mut u64,
        out2: *mut u64,
    ) => vif_fused;

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

/// The body of `vmaf_vif_fused`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn vif_fused(s: VifScale, second_gain_limit: f64, out: *mut u64, out2: *mut u64) {
    use vif::{FUSED_COLS, FUSED_H, FUSED_THREADS, FUSED_W};
    gpumetrics_device::shared!(static VMAF_VIF_V: [u32; (5 * FUSED_H * FUSED_COLS) as usize]);
    gpumetrics_device::shared!(static VMAF_VIF_WARPS: [i64; 5 * ROW_WARPS]);
    let fw = vif::WIDTHS[s.scale as usize];
    let (w, h) = (s.reference.width, s.reference.height);
    let (x0, y0) = (dev::block_idx_x() * FUSED_W, dev::block_idx_y() * FUSED_H);
    let t = dev::thread_idx_x();
    // The tile's outputs, and the vertical pass's columns they read.
    let (cols_out, rows) = (FUSED_W.min(w - x0), FUSED_H.min(h - y0));
    let cols = cols_out + fw - 1;
    let at = |k: u32, r: u32, j: u32| ((k * FUSED_H + r) * FUSED_COLS + j) as usize;
    let mut e = t;
    while e < cols * rows {
        let (j, r) = (e % cols, e / cols);
        let col = super::reflect(x0 as i32 - (fw / 2) as i32 + j as i32, w as i32) as u32;
        let v = unsafe { vif::vertical(&s, col, y0 + r) };
        for (k, &v) in v.iter().enumerate() {
            unsafe { VMAF_VIF_V.write(at(k as u32, r, j), v) };
        }
        e += FUSED_THREADS;
    }
    unsafe { dev::sync_threads() };
    let second = (!out2.is_null()).then_some(second_gain_limit);
    let mut acc = vif::Sums::default();
    let mut num_log2 = 0i64;
    let mut e = t;
    while e < FUSED_W * rows {
        let (c, r) = (e % FUSED_W, e / FUSED_W);
        if c < cols_out {
            let m = vif::horizontal(s.scale, |k| {
                [0, 1, 2, 3, 4].map(|p| unsafe { VMAF_VIF_V.read(at(p, r, c + k)) })
            });
            let (first, n) = unsafe { vif::stat(&s, second, m) };
            acc.add(&first);
            num_log2 = num_log2.wrapping_add(n);
        }
        e += FUSED_THREADS;
    }
    let [a, b, c, d] = acc.to_array();
    let mut v = [a, b, c, d, num_log2];
    let values = if second.is_some() { 5 } else { 4 };
    let mut delta = 16;
    while delta > 0 {
        for k in 0..values {
            v[k] = v[k].wrapping_add(unsafe { dev::shfl_down(dev::FULL_MASK, v[k], delta) });
        }
        delta /= 2;
    }
    if dev::lane_id() == 0 {
        for k in 0..values {
            unsafe { VMAF_VIF_WARPS.write(k * ROW_WARPS + (t / 32) as usize, v[k]) };
        }
    }
    unsafe { dev::sync_threads() };
    let total = |k: usize| {
        let mut total = 0i64;
        for w in 0..ROW_WARPS {
            total = total.wrapping_add(unsafe { VMAF_VIF_WARPS.read(k * ROW_WARPS + w) });
        }
        total as u64
    };
    if t < 4 {
        let sum = total(t as usize);
        unsafe { dev::atomic_add_u64(out.add(t as usize), sum) };
        if second.is_some() {
            // The second model's num_log, then the sums both share.
            let sum2 = if t == 0 { total(4) } else { sum };
            unsafe { dev::atomic_add_u64(out2.add(t as usize), sum2) };
        }
    }
}

/// The body of `vmaf_vif_down`: the tile's source samples staged in shared memory, then
/// the vertical pass of its columns at the output rows, then the horizontal pass; the same
/// sums as [`vif::down`] per output sample.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn vif_down(s: VifScale, next_ref: Plane, next_dis: Plane) {
    use vif::DOWN_SRC;
    const SRC: usize = (DOWN_SRC * DOWN_SRC) as usize;
    const V: usize = (DOWN_SRC * TILE) as usize;
    gpumetrics_device::shared!(static VMAF_VIF_DOWN_SRC: [u16; 2 * SRC]);
    gpumetrics_device::shared!(static VMAF_VIF_DOWN_V: [u16; 2 * V]);
    let fw = vif::WIDTHS[s.scale as usize + 1];
    let half = (fw / 2) as i32;
    let (w, h) = (s.reference.width as i32, s.reference.height as i32);
    let (x0, y0) = (dev::block_idx_x() * TILE, dev::block_idx_y() * TILE);
    let (tx, ty) = (dev::thread_idx_x(), dev::thread_idx_y());
    let t = ty * TILE + tx;
    // The tile's outputs, and the source columns and rows they read.
    let (ox, oy) = (
        TILE.min(next_ref.width - x0),
        TILE.min(next_ref.height - y0),
    );
    let (cols, rows) = (2 * (ox - 1) + fw, 2 * (oy - 1) + fw);
    let mut e = t;
    while e < cols * rows {
        let (j, i) = (e % cols, e / cols);
        let col = super::reflect(2 * x0 as i32 - half + j as i32, w) as u32;
        let row = super::reflect(2 * y0 as i32 - half + i as i32, h) as u32;
        let at = (i * DOWN_SRC + j) as usize;
        unsafe {
            VMAF_VIF_DOWN_SRC.write(at, s.reference.get::<u16>(col, row));
            VMAF_VIF_DOWN_SRC.write(SRC + at, s.distorted.get::<u16>(col, row));
        }
        e += TILE * TILE;
    }
    unsafe { dev::sync_threads() };
    let mut e = t;
    while e < cols * oy {
        let (j, r) = (e % cols, e / cols);
        let (a, b) = vif::down_vertical(s.scale, s.bpc, |k| {
            let at = ((2 * r + k) * DOWN_SRC + j) as usize;
            unsafe { (VMAF_VIF_DOWN_SRC.read(at), VMAF_VIF_DOWN_SRC.read(SRC + at)) }
        });
        let at = (r * DOWN_SRC + j) as usize;
        unsafe {
            VMAF_VIF_DOWN_V.write(at, a);
            VMAF_VIF_DOWN_V.write(V + at, b);
        }
        e += TILE * TILE;
    }
    unsafe { dev::sync_threads() };
    if tx < ox && ty < oy {
        let (a, b) = vif::down_horizontal(s.scale, |j| {
            let at = (ty * DOWN_SRC + 2 * tx + j) as usize;
            unsafe { (VMAF_VIF_DOWN_V.read(at), VMAF_VIF_DOWN_V.read(V + at)) }
        });
        unsafe {
            next_ref.set::<u16>(x0 + tx, y0 + ty, a);
            next_dis.set::<u16>(x0 + tx, y0 + ty, b);
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
