//! The SSIMULACRA2 GPU kernels: thin `kernel!` declarations over device-only bodies that
//! call [`math`](super::math) and read the buffers of [`layout`](super::layout).

#[cfg(target_arch = "nvptx64")]
use super::{layout::*, math::*};
#[cfg(target_arch = "nvptx64")]
use crate::color::{self, ColorSource};
#[cfg(target_arch = "nvptx64")]
use crate::color_tile;
#[cfg(target_arch = "nvptx64")]
use gpumetrics_device as dev;

/// Warp sum of an `f64`, valid in lane 0.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn warp_sum(mut v: f64) -> f64 {
    let mut delta = 16;
    while delta > 0 {
        v += unsafe { dev::shfl_down(dev::FULL_MASK, v, delta) };
        delta /= 2;
    }
    v
}

gpumetrics_device::kernel! {
    /// Image `img` (0 reference, 1 distorted; one launch each, so that the kernel reads
    /// one source's fields as constants instead of selecting every one of them between
    /// two) to linear RGB and XYB at scale 0 (`xyb0`; the linear RGB is not kept), and its
    /// 2×2 average at scale 1 in linear RGB (`rgb1`) and XYB (`xyb1`). One thread per
    /// scale-0 pixel of the 2·`rgb1` grid (edge pixels repeated); a warp covers 16×2
    /// pixels, so each 2×2 quad is four lanes that average through shuffles and share the
    /// three cube roots of the scale-1 pixel. Block (32, `LIN_WARPS`), grid
    /// (2·w1 / 16, 2·h1 / (2·`LIN_WARPS`)).
    pub unsafe fn ssimu2_linearize(
        src: ColorSource,
        img: u32,
        xyb0: Scale,
        rgb1: Scale,
        xyb1: Scale,
    ) => linearize;

    /// `ssimu2_linearize`'s outputs for image `img` from its linear RGB already in memory
    /// (`rgb`: the engine's shared linear-light stage, planes `img · 3 ..` at scale 0's
    /// size, `crate::linear_light::Planes` as a `Scale`), when Butteraugli runs beside:
    /// the same values bit for bit, without converting the frame again. The same blocks
    /// and grid as `ssimu2_linearize`.
    pub unsafe fn ssimu2_xyb_of_linear(
        rgb: Scale,
        img: u32,
        xyb0: Scale,
        rgb1: Scale,
        xyb1: Scale,
    ) => xyb_of_linear;

    /// Scale `dst` = 2×2 box average of `src` in linear RGB, and its XYB (`xyb`). Block
    /// `PIXEL_BLOCK`×`PIXEL_BLOCK`, grid.z = 2 (image).
    pub unsafe fn ssimu2_downsample(
        src: Scale,
        dst: Scale,
        xyb_dst: Scale,
    ) => downsample;

    /// Horizontal recursive blur of the five moments of every scale in one grid. Block
    /// (`BLUR_THREADS`): 32 rows of one plane, warp = moment, lane = row. The rows are
    /// read in tiles of `HCHUNK` columns through shared memory (coalesced, the next tile
    /// loaded while the current one is blurred); each step's outputs of the 32 rows are one
    /// 128-byte line of the moment strip.
    pub unsafe fn ssimu2_hblur(levels: *const Level, n_levels: u32) => hblur;

    /// Vertical recursive blur of every scale in one grid, fused with the three maps and
    /// their sums. Block (`BLUR_THREADS`): 32 columns of one plane, warp = moment, lane =
    /// column, reading its column four rows at a time from the moment strips; per
    /// `VCHUNK` rows the warps hand the blurred moments over in shared memory and the
    /// whole block computes the maps of those rows. Writes six `f64` sums per block.
    pub unsafe fn ssimu2_vblur(levels: *const Level, n_levels: u32) => vblur;

    /// Sums the per-block partials: block (k, s) adds the column blocks' values of sum `k`
    /// of scale `s` (`levels[s].partials`, see [`Level`]) into
    /// `out[s * SUMS_PER_SCALE + k]`. Grid (`SUMS_PER_SCALE`, scales),
    /// `FINISH_THREADS` threads.
    pub unsafe fn ssimu2_finish(levels: *const Level, out: *mut f64) => finish;

    /// The distortion map's terms (`map=ssimulacra2`): thread s < `n_levels` writes
    /// scale s's nine (w1, k4) ([`map_terms`]) from the reference's 108 `weights` and the
    /// sums `ssimu2_finish` wrote (`sums`, as its `out`) at `terms[MAP_TERMS_PER_SCALE·s..]`.
    /// One block of `MAX_SCALES` threads.
    pub unsafe fn ssimu2_map_terms(
        levels: *const Level,
        n_levels: u32,
        sums: *const f64,
        weights: *const f64,
        terms: *mut f64,
    ) => map_terms_kernel;

    /// The contribution ([`map_contribution`]) of each pixel of scale `s` from the values
    /// the column pass stored ([`Level::values`]) and the scale's terms, as `f32`, at
    /// `contrib` (the scale's `width`×`height`, row-major). Block
    /// `MAP_BLOCK`×`MAP_BLOCK`, grid over the scale.
    pub unsafe fn ssimu2_map_scale(levels: *const Level, s: u32, terms: *const f64, contrib: *mut f32) => map_scale;

    /// The map: pixel (x, y) of the `width`×`height` map is the sum over the scales of
    /// the contribution of the scale's pixel covering it, (x >> s, y >> s) (clamped to the
    /// scale), added as `f32` largest scale first; the scales' contributions follow each
    /// other at `contrib`. Block `MAP_BLOCK`×`MAP_BLOCK`, grid over the map.
    pub unsafe fn ssimu2_map_sum(
        levels: *const Level,
        n_levels: u32,
        contrib: *const f32,
        out: *mut f32,
        width: u32,
        height: u32,
    ) => map_sum;
}

/// The body of the `ssimu2_linearize` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn linearize(src: ColorSource, img: u32, xyb0: Scale, rgb1: Scale, xyb1: Scale) {
    let (x, y) = color_tile::pixel();
    if img > 1 {
        return;
    }
    let (w, h) = (xyb0.width, xyb0.height);
    let cx = if x < w { x } else { w - 1 };
    let cy = if y < h { y } else { h - 1 };
    // Subsampled chroma goes through shared memory, read once per block.
    let p = unsafe { color_tile::nonlinear_rgb(&src, cx, cy) };
    let rgb = color::to_linear_rgb(&src, p);
    unsafe { scales_0_and_1(rgb, img, xyb0, rgb1, xyb1) }
}

/// The body of the `ssimu2_xyb_of_linear` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn xyb_of_linear(planes: Scale, img: u32, xyb0: Scale, rgb1: Scale, xyb1: Scale) {
    let (x, y) = color_tile::pixel();
    let (w, h) = (xyb0.width, xyb0.height);
    if img > 1 || planes.width != w || planes.height != h {
        return;
    }
    let cx = if x < w { x } else { w - 1 };
    let cy = if y < h { y } else { h - 1 };
    let at = (cy * w + cx) as usize;
    let mut rgb = [0.0f32; 3];
    unroll!(c in [0 1 2] {
        // SAFETY: (cx, cy) is inside the planes, which have scale 0's size.
        rgb[c] = unsafe { *planes.plane(img * 3 + c as u32).add(at) };
    });
    unsafe { scales_0_and_1(rgb, img, xyb0, rgb1, xyb1) }
}

/// What `ssimu2_linearize` and `ssimu2_xyb_of_linear` store from the linear RGB of this
/// thread's pixel ([`color_tile::pixel`], clamped to the frame): its XYB at scale 0, and
/// with the other three lanes of its 2×2 quad the quad's average at scale 1 in linear RGB
/// and XYB. Every lane of the warp calls it (the quads average through shuffles).
///
/// # Safety
/// The scales are sized for the frame (scale 1 its halves, rounded up).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn scales_0_and_1(rgb: [f32; 3], img: u32, xyb0: Scale, rgb1: Scale, xyb1: Scale) {
    let lane = dev::thread_idx_x();
    let (x, y) = color_tile::pixel();
    let (w, h) = (xyb0.width, xyb0.height);
    if x < w && y < h {
        let v = xyb(rgb);
        for c in 0..3 {
            unsafe { *xyb0.plane(img * 3 + c as u32).add((y * w + x) as usize) = v[c] };
        }
    }
    // Every lane of a quad gets the quad's pixels in the reference's order.
    let q = lane & 17;
    let from = |v: f32, role: u32| unsafe { dev::shfl_xor(dev::FULL_MASK, v, q ^ role) };
    let avg = rgb.map(|v| (((from(v, 0) + from(v, 1)) + from(v, 16)) + from(v, 17)) * 0.25);
    let k = (lane & 1) | ((lane >> 3) & 2);
    let part = opsin(if k < 3 { k } else { 0 }, avg);
    let m = unsafe { dev::shfl_xor(dev::FULL_MASK, part, 1) };
    let s = unsafe { dev::shfl_xor(dev::FULL_MASK, part, 16) };
    let (ox, oy) = (x / 2, y / 2);
    if q == 0 && ox < rgb1.width && oy < rgb1.height {
        let v = xyb_of_lms(part, m, s);
        let o = (oy * rgb1.width + ox) as usize;
        for c in 0..3 {
            unsafe { *rgb1.plane(img * 3 + c as u32).add(o) = avg[c] };
            unsafe { *xyb1.plane(img * 3 + c as u32).add(o) = v[c] };
        }
    }
}

/// The body of the `ssimu2_downsample` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn downsample(src: Scale, dst: Scale, xyb_dst: Scale) {
    let ox = dev::global_idx_x();
    let oy = dev::global_idx_y();
    let img = dev::block_idx_z();
    if ox >= dst.width || oy >= dst.height || img > 1 {
        return;
    }
    let o = (oy * dst.width + ox) as usize;
    let mut rgb = [0.0f32; 3];
    for c in 0..3 {
        let p = img * 3 + c as u32;
        rgb[c] = unsafe { downsample_at(src.plane(p), src.width, src.height, ox, oy) };
        unsafe { *dst.plane(p).add(o) = rgb[c] };
    }
    let v = xyb(rgb);
    for c in 0..3 {
        unsafe { *xyb_dst.plane(img * 3 + c as u32).add(o) = v[c] };
    }
}

/// The body of the `ssimu2_hblur` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn hblur(levels: *const Level, n_levels: u32) {
    gpumetrics_device::shared!(static S2_HIN: [f32; HIN_LEN]);
    const CH: u32 = HCHUNK;
    let t = dev::thread_idx_x();
    let (m, lane) = (t / 32, t % 32);
    let bid = dev::block_idx_x();
    let lv = unsafe { level_of(levels, n_levels, bid, |l| l.h_first) };
    let (w, h) = (lv.width, lv.height);
    let groups = lv.h_blocks_per_plane();
    let idx = bid - lv.h_first;
    let (c, y0) = (idx / groups, (idx % groups) * LANES);
    if c > 2 || m > 4 {
        return;
    }
    let a_pl = lv.plane(lv.xyb, c) as *const f32;
    let b_pl = lv.plane(lv.xyb, 3 + c) as *const f32;
    // This lane's row in its strip of the moment plane: column n at `out + 32·n`.
    let out = unsafe {
        lv.moment_plane(c * 5 + m)
            .add(((y0 / LANES) * w * LANES + lane) as usize)
    };
    let tin = S2_HIN.as_mut_ptr();
    // Element e of a tile: image, row, column.
    let place = |e: u32| {
        let (img, rem) = (e / (LANES * CH), e % (LANES * CH));
        (img, rem / CH, rem % CH)
    };
    let load = |k: u32, i: usize| -> f32 {
        let e = t + BLUR_THREADS * i as u32;
        let (img, row, col) = place(e);
        let (y, x) = (y0 + row, k * CH + col);
        if e < HTILE_ELEMS && y < h && x < w {
            let pl = if img == 0 { a_pl } else { b_pl };
            unsafe { *pl.add((y * w + x) as usize) }
        } else {
            0.0
        }
    };
    // Inputs 0 .. w + 3 (outputs up to w − 1; zeros past the edge).
    let chunks = (w + LAG as u32).div_ceil(CH);
    let mut pre = [0.0f32; HLOADS];
    unroll!(i in [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15] {
        pre[i] = load(0, i);
    });
    let mut st = Iir::default();
    let mut ring = [0.0f32; RING as usize];
    let ra = unsafe { tin.add((lane * HTILE_STRIDE) as usize) };
    let rb = unsafe { tin.add(((LANES + lane) * HTILE_STRIDE) as usize) };
    for k in 0..chunks {
        unsafe { dev::sync_threads() };
        unroll!(i in [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15] {
            let e = t + BLUR_THREADS * i as u32;
            if e < HTILE_ELEMS {
                let (img, row, col) = place(e);
                let at = ((img * LANES + row) * HTILE_STRIDE + col) as usize;
                unsafe { *tin.add(at) = pre[i] };
            }
        });
        unsafe { dev::sync_threads() };
        if k + 1 < chunks {
            unroll!(i in [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15] {
                pre[i] = load(k + 1, i);
            });
        }
        // Tile column j is input pixel k·CH + j and output pixel k·CH + j − 4; each
        // step's 32 lanes write one 128-byte line of the strip.
        for g in 0..CH / RING {
            let o = g * RING;
            let n0 = (k * CH + o) as i32 - LAG;
            let (ga, gb) = unsafe { (ra.add(o as usize), rb.add(o as usize)) };
            let store = |j: u32, v: f32| {
                let n = n0 + j as i32;
                if n >= 0 && (n as u32) < w {
                    unsafe { *out.add((n as u32 * LANES) as usize) = v };
                }
            };
            unsafe { hgroup_of(m, &mut st, &mut ring, ga, gb, store) };
        }
    }
}

/// The body of the `ssimu2_vblur` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn vblur(levels: *const Level, n_levels: u32) {
    gpumetrics_device::shared!(static S2_VM: [f32; VM_LEN]);
    gpumetrics_device::shared!(static S2_RED: [f64; RED_LEN]);
    const CH: usize = VCHUNK as usize;
    const STRIDE: u32 = LANES + 1;
    const PIXELS: u32 = VCHUNK * LANES;
    const PER_THREAD: usize = PIXELS.div_ceil(BLUR_THREADS) as usize;
    const _: () = assert!(PER_THREAD == 4, "the unroll! lists below");
    #[repr(C, align(16))]
    #[derive(Clone, Copy)]
    struct F4([f32; 4]);
    let t = dev::thread_idx_x();
    let (m, lane) = (t / 32, t % 32);
    let bid = dev::block_idx_x();
    let lv = unsafe { level_of(levels, n_levels, bid, |l| l.v_first) };
    let (w, h) = (lv.width, lv.height);
    let groups = lv.v_blocks_per_plane();
    let idx = bid - lv.v_first;
    let (c, g) = (idx / groups, idx % groups);
    if c > 2 || m > 4 {
        return;
    }
    let x0 = g * LANES;
    let x = x0 + lane;
    let mom = lv.moment_plane(c * 5 + m) as *const f32;
    let a_pl = lv.plane(lv.xyb, c) as *const f32;
    let b_pl = lv.plane(lv.xyb, 3 + c) as *const f32;
    // Rows r .. r + 4 (r a multiple of 4) of this lane's column; the strips' padding
    // rows past the image hold zeros.
    let rows = h.div_ceil(LANES) * LANES;
    let load4 = |r: u32| -> [f32; 4] {
        if r < rows && x < w {
            let at = ((r / LANES * w + x) * LANES + r % LANES) as usize;
            unsafe { core::ptr::read(mom.add(at) as *const F4).0 }
        } else {
            [0.0; 4]
        }
    };
    let load_chunk = |k: u32| {
        let mut v = [0.0f32; CH];
        unroll!(i in [0 1 2 3 4] {
            let q = load4(k * VCHUNK + 4 * i as u32);
            v[4 * i] = q[0];
            v[4 * i + 1] = q[1];
            v[4 * i + 2] = q[2];
            v[4 * i + 3] = q[3];
        });
        v
    };
    // Pixel q of a chunk for this thread: (row in chunk, column in block).
    let pixel = |q: usize| {
        let p = t + BLUR_THREADS * q as u32;
        (p, p / LANES, p % LANES)
    };
    let vm = S2_VM.as_mut_ptr();
    let mut st = Iir::default();
    let mut ring = [0.0f32; RING as usize];
    let mut cur = load_chunk(0);
    let mut acc = [0.0f64; SUMS_PER_PLANE];
    let chunks = (h + LAG as u32).div_ceil(VCHUNK);
    for k in 0..chunks {
        // Rows of this chunk: inputs 20k + j (lower) and 20k + j − 10 (upper),
        // outputs 20k + j − 4.
        let now = cur;
        if k + 1 < chunks {
            cur = load_chunk(k + 1);
        }
        let mut ab = [(0.0f32, 0.0f32); PER_THREAD];
        unroll!(q in [0 1 2 3] {
            let (p, jj, col) = pixel(q);
            let n = (k * VCHUNK + jj) as i32 - LAG;
            if p < PIXELS && n >= 0 && (n as u32) < h && x0 + col < w {
                let o = (n as u32 * w + x0 + col) as usize;
                ab[q] = unsafe { (*a_pl.add(o), *b_pl.add(o)) };
            }
        });
        let buf = unsafe { vm.add(((k % 2) * 5 * VCHUNK * STRIDE) as usize) };
        vchunk(&mut st, &mut ring, now, |j, v| unsafe {
            *buf.add(((m * VCHUNK + j) * STRIDE + lane) as usize) = v
        });
        unsafe { dev::sync_threads() };
        unroll!(q in [0 1 2 3] {
            let (a, b) = ab[q];
            let (p, jj, col) = pixel(q);
            let n = (k * VCHUNK + jj) as i32 - LAG;
            if p < PIXELS && n >= 0 && (n as u32) < h && x0 + col < w {
                let at = |mm: u32| unsafe { *buf.add(((mm * VCHUNK + jj) * STRIDE + col) as usize) };
                let (s11, s22, s12, mu1, mu2) = (at(0), at(1), at(2), at(3), at(4));
                let (d, d1) = (ssim_d(mu1, mu2, s11, s22, s12), edge_d1(a, mu1, b, mu2));
                if lv.values != 0 {
                    let o = (n as u32 * w + x0 + col) as usize;
                    unsafe {
                        *lv.value_plane(2 * c).add(o) = d as f32;
                        *lv.value_plane(2 * c + 1).add(o) = d1 as f32;
                    }
                }
                accumulate(&mut acc, d, d1);
            }
        });
    }
    let warp = m as usize;
    unroll!(i in [0 1 2 3 4 5] {
        let s = unsafe { warp_sum(acc[i]) };
        if lane == 0 {
            unsafe { S2_RED.write(warp * SUMS_PER_PLANE + i, s) };
        }
    });
    unsafe { dev::sync_threads() };
    if (t as usize) < SUMS_PER_PLANE {
        let mut s = 0.0f64;
        for wp in 0..5 {
            s += unsafe { S2_RED.read(wp * SUMS_PER_PLANE + t as usize) };
        }
        let k = c * SUMS_PER_PLANE as u32 + t;
        unsafe { *(lv.partials as *mut f64).add((k * groups + g) as usize) = s };
    }
}

/// The body of the `ssimu2_finish` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn finish(levels: *const Level, out: *mut f64) {
    gpumetrics_device::shared!(static S2_FIN: [f64; FIN_LEN]);
    let k = dev::block_idx_x();
    let s = dev::block_idx_y();
    let t = dev::thread_idx_x();
    let lv = unsafe { *levels.add(s as usize) };
    let n = lv.v_blocks_per_plane();
    let base = unsafe { (lv.partials as *const f64).add((k * n) as usize) };
    let mut v = 0.0f64;
    let mut i = t;
    while i < n {
        v += unsafe { *base.add(i as usize) };
        i += FINISH_THREADS;
    }
    let v = unsafe { warp_sum(v) };
    if dev::lane_id() == 0 {
        unsafe { S2_FIN.write((t / 32) as usize, v) };
    }
    unsafe { dev::sync_threads() };
    if t == 0 {
        let mut total = 0.0f64;
        for w in 0..S2_FIN.len() {
            total += unsafe { S2_FIN.read(w) };
        }
        unsafe { *out.add((s * SUMS_PER_SCALE as u32 + k) as usize) = total };
    }
}

/// The body of the `ssimu2_map_terms` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn map_terms_kernel(
    levels: *const Level,
    n_levels: u32,
    sums: *const f64,
    weights: *const f64,
    terms: *mut f64,
) {
    let n = (n_levels as usize).min(MAX_SCALES);
    let s = dev::thread_idx_x() as usize;
    if s >= n {
        return;
    }
    let lv = unsafe { *levels.add(s) };
    let w = unsafe { core::slice::from_raw_parts(weights, 108) };
    let scale_sums =
        unsafe { core::slice::from_raw_parts(sums.add(s * SUMS_PER_SCALE), SUMS_PER_SCALE) };
    let t = map_terms(w, n, s, scale_sums, lv.width as f64 * lv.height as f64);
    for (i, (w1, k4)) in t.into_iter().enumerate() {
        unsafe {
            *terms.add(s * MAP_TERMS_PER_SCALE + 2 * i) = w1;
            *terms.add(s * MAP_TERMS_PER_SCALE + 2 * i + 1) = k4;
        }
    }
}

/// The body of the `ssimu2_map_scale` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn map_scale(levels: *const Level, s: u32, terms: *const f64, contrib: *mut f32) {
    let lv = unsafe { *levels.add(s as usize) };
    let (x, y) = (dev::global_idx_x(), dev::global_idx_y());
    if x >= lv.width || y >= lv.height {
        return;
    }
    let t = unsafe { terms.add(s as usize * MAP_TERMS_PER_SCALE) };
    let o = (y * lv.width + x) as usize;
    let v = map_contribution(
        |i| unsafe { (*t.add(2 * i), *t.add(2 * i + 1)) },
        |c, which| unsafe { *lv.value_plane(2 * c as u32 + which as u32).add(o) },
    );
    unsafe { *contrib.add(o) = v as f32 };
}

/// The body of the `ssimu2_map_sum` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn map_sum(
    levels: *const Level,
    n_levels: u32,
    contrib: *const f32,
    out: *mut f32,
    width: u32,
    height: u32,
) {
    let (x, y) = (dev::global_idx_x(), dev::global_idx_y());
    if x >= width || y >= height {
        return;
    }
    let n = (n_levels as usize).min(MAX_SCALES);
    let mut acc = 0.0f32;
    let mut at = contrib;
    for s in 0..n {
        let lv = unsafe { *levels.add(s) };
        let sx = (x >> s).min(lv.width - 1);
        let sy = (y >> s).min(lv.height - 1);
        acc += unsafe { *at.add((sy * lv.width + sx) as usize) };
        at = unsafe { at.add(lv.width as usize * lv.height as usize) };
    }
    unsafe { *out.add((y * width + x) as usize) = acc };
}
