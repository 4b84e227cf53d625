//! The SSIM kernel: a thin `kernel!` declaration over its device-only body, which loads a
//! tile and its halo into shared memory, pools it for the next MS-SSIM scale, runs the two
//! passes of the Gaussian window with [`super::Moments`] and reduces [`super::ssim_cs`] over
//! the block.

#[cfg(target_arch = "nvptx64")]
use super::*;
#[cfg(target_arch = "nvptx64")]
use gpumetrics_device as dev;

gpumetrics_device::kernel! {
    /// SSIM at one scale: adds each pair's sums of the ssim and cs map values over its
    /// valid region to `out[(index * SCALES + scale) * 2 ..]`, and writes the 2×2-pooled
    /// next scale where `down_*` is set. Launch with `TILE_W`×`BLOCK_ROWS` threads and the
    /// largest [`grid`] of the pairs, grid.z = `planes.count`. When `clear` is not null, its
    /// first `RESULT_LEN` values are zeroed (the other result slot, for the next frame).
    pub unsafe fn ssim_scale(planes: SsimPlanes, out: *mut f64, clear: *mut f64) => scale;
}

/// The body of the `ssim_scale` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn scale(planes: SsimPlanes, out: *mut f64, clear: *mut f64) {
    gpumetrics_device::shared!(static SSIM_X: [f32; IN_LEN]);
    gpumetrics_device::shared!(static SSIM_Y: [f32; IN_LEN]);
    gpumetrics_device::shared!(static SSIM_H: [f64; 5 * H_LEN]);
    gpumetrics_device::shared!(static SSIM_WARP_SUMS: [f64; 2 * WARPS]);
    let z = dev::block_idx_z();
    if z >= planes.count {
        return;
    }
    let t = dev::thread_idx_y() * TILE_W + dev::thread_idx_x();
    if !clear.is_null() && z == 0 && dev::block_idx_x() == 0 && dev::block_idx_y() == 0 {
        let mut i = t as usize;
        while i < RESULT_LEN {
            unsafe { *clear.add(i) = 0.0 };
            i += (TILE_W * BLOCK_ROWS) as usize;
        }
    }
    // Constant indices keep the parameter struct in registers.
    let sp = match z {
        0 => planes.pairs[0],
        1 => planes.pairs[1],
        _ => planes.pairs[2],
    };
    let p = &sp.pair;
    let (w, h) = (p.width, p.height);
    let (vw, vh) = (valid(w), valid(h));
    let (bx, by) = (dev::block_idx_x(), dev::block_idx_y());
    let x0 = (bx * TILE_W) as i64 - 1;
    let y0 = (by * TILE_H) as i64 - 1;
    let has_map = bx * TILE_W < vw && by * TILE_H < vh;
    let pool = sp.down_reference != 0;
    let has_pool = pool && bx * (TILE_W / 2) < sp.down_width && by * (TILE_H / 2) < sp.down_height;
    if !has_map && !has_pool {
        return; // the whole block: no barrier is skipped by part of it
    }
    let peak = p.reference.max;
    let mut i = t;
    while i < IN_W * IN_H {
        let (ty, tx) = (i / IN_W, i % IN_W);
        let (gx, gy) = (x0 + tx as i64, y0 + ty as i64);
        unsafe {
            SSIM_X.write(i as usize, sample_or_zero(&p.reference, w, h, gx, gy, peak));
            SSIM_Y.write(i as usize, sample_or_zero(&p.distorted, w, h, gx, gy, peak));
        }
        i += TILE_W * BLOCK_ROWS;
    }
    unsafe { dev::sync_threads() };

    if has_pool && t < (TILE_W / 2) * (TILE_H / 2) {
        let (dj, di) = (t / (TILE_W / 2), t % (TILE_W / 2));
        let (ox, oy) = (bx * (TILE_W / 2) + di, by * (TILE_H / 2) + dj);
        if ox < sp.down_width && oy < sp.down_height {
            // Tile column of the pooling window's first sample: 2·ox − (w % 2) − x0.
            let cx = (2 * di + 1 - w % 2) as usize;
            let cy = (2 * dj + 1 - h % 2) as usize;
            let a = cy * IN_W as usize + cx;
            let b = a + IN_W as usize;
            let off = oy as u64 * sp.down_width as u64 + ox as u64;
            unsafe {
                let r = pool2(
                    SSIM_X.read(a),
                    SSIM_X.read(a + 1),
                    SSIM_X.read(b),
                    SSIM_X.read(b + 1),
                );
                let d = pool2(
                    SSIM_Y.read(a),
                    SSIM_Y.read(a + 1),
                    SSIM_Y.read(b),
                    SSIM_Y.read(b + 1),
                );
                *(sp.down_reference as *mut f32).add(off as usize) = r;
                *(sp.down_distorted as *mut f32).add(off as usize) = d;
            }
        }
    }
    if !has_map {
        return; // uniform per block, after the last barrier
    }

    // Horizontal pass: input rows 1.. (row 0 is the pooling's extra row), map columns, a
    // run of H_RUN adjacent outputs per thread. Sample s of the run lies in the windows of
    // outputs j = s − k (tap k); taking the samples in order adds each window's taps in
    // order k = 0..TAPS, as one output at a time does.
    let mut i = t;
    while i < H_RUNS {
        const RUN_W: u32 = TILE_W / H_RUN as u32;
        let (r, c) = (i / RUN_W, (i % RUN_W) * H_RUN as u32);
        let base = ((r + 1) * IN_W + c + 1) as usize;
        let mut m = [Moments::default(); H_RUN];
        const _: () = assert!(H_RUN <= 4 && TAPS == 11, "the unroll! lists below");
        unroll!(s in [0 1 2 3 4 5 6 7 8 9 10 11 12 13] {
            if s < H_RUN + TAPS - 1 {
                let p = unsafe { Moments::of_sample(SSIM_X.read(base + s), SSIM_Y.read(base + s)) };
                unroll!(j in [0 1 2 3] {
                    if j < H_RUN && s >= j && s - j < TAPS {
                        m[j].add_moments(WEIGHTS[s - j], &p);
                    }
                });
            }
        });
        let o = (r * TILE_W + c) as usize;
        unroll!(j in [0 1 2 3] {
            if j < H_RUN {
                unsafe {
                    SSIM_H.write(o + j, m[j].x);
                    SSIM_H.write(H_LEN + o + j, m[j].y);
                    SSIM_H.write(2 * H_LEN + o + j, m[j].xx);
                    SSIM_H.write(3 * H_LEN + o + j, m[j].yy);
                    SSIM_H.write(4 * H_LEN + o + j, m[j].xy);
                }
            }
        });
        i += TILE_W * BLOCK_ROWS;
    }
    unsafe { dev::sync_threads() };

    // Vertical pass and map values.
    let (c1, c2) = constants(peak);
    let c = dev::thread_idx_x();
    let mut sums = (0.0f64, 0.0f64);
    let mut r = dev::thread_idx_y();
    while r < TILE_H {
        let (vx, vy) = (bx * TILE_W + c, by * TILE_H + r);
        if vx < vw && vy < vh {
            let mut m = Moments::default();
            for k in 0..TAPS {
                let o = ((r + k as u32) * TILE_W + c) as usize;
                let hm = unsafe {
                    Moments {
                        x: SSIM_H.read(o),
                        y: SSIM_H.read(H_LEN + o),
                        xx: SSIM_H.read(2 * H_LEN + o),
                        yy: SSIM_H.read(3 * H_LEN + o),
                        xy: SSIM_H.read(4 * H_LEN + o),
                    }
                };
                m.add_moments(WEIGHTS[k], &hm);
            }
            let (s, cs) = ssim_cs(&m, c1, c2);
            sums.0 += s;
            sums.1 += cs;
        }
        r += BLOCK_ROWS;
    }

    // Block reduction: warps by shuffles, then one pair of atomics per block.
    let mut delta = 16;
    while delta > 0 {
        sums.0 += unsafe { dev::shfl_down(dev::FULL_MASK, sums.0, delta) };
        sums.1 += unsafe { dev::shfl_down(dev::FULL_MASK, sums.1, delta) };
        delta /= 2;
    }
    if dev::lane_id() == 0 {
        let warp = (t / 32) as usize;
        unsafe {
            SSIM_WARP_SUMS.write(2 * warp, sums.0);
            SSIM_WARP_SUMS.write(2 * warp + 1, sums.1);
        }
    }
    unsafe { dev::sync_threads() };
    if t == 0 {
        let mut total = (0.0f64, 0.0f64);
        for wi in 0..WARPS {
            unsafe {
                total.0 += SSIM_WARP_SUMS.read(2 * wi);
                total.1 += SSIM_WARP_SUMS.read(2 * wi + 1);
            }
        }
        let o = ((sp.index as usize * SCALES) + planes.scale as usize) * 2;
        unsafe {
            dev::atomic_add_f64(out.add(o), total.0);
            dev::atomic_add_f64(out.add(o + 1), total.1);
        }
    }
}

gpumetrics_device::kernel! {
    /// libvmaf's `float_ssim`, horizontal pass ([`super::float::store_row_sums`]): the five
    /// planes of `p.rows`. Launch with [`FLOAT_BLOCK`] threads and any grid.x: blocks
    /// stride over rows, threads over the valid columns.
    pub unsafe fn vmaf_ssim_rows(p: FloatSsim) => float_rows;
}

/// The body of the `vmaf_ssim_rows` kernel (declared above). Each row is staged in shared
/// memory, [`super::float::ROW_CHUNK`] columns at a time (each sample read and converted
/// once, instead of 11 times), then each thread filters its columns from there.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn float_rows(p: FloatSsim) {
    use super::float::{ROW_CHUNK, ROW_STAGE, row_sums_staged, sample};
    gpumetrics_device::shared!(static ROW_REF: [f32; ROW_STAGE as usize]);
    gpumetrics_device::shared!(static ROW_DIST: [f32; ROW_STAGE as usize]);
    let pr = &p.pair;
    let (vw, to) = (valid(pr.width), pr.reference.max);
    let (n, out) = (p.plane_len(), p.rows as *mut f32);
    let t = dev::thread_idx_x();
    let mut y = dev::block_idx_x();
    while y < pr.height {
        let mut x0 = 0;
        while x0 < vw {
            let cols = (vw - x0).min(ROW_CHUNK);
            // Samples x0 .. x0 + cols + 10: all inside the row (valid = width − 10).
            let mut i = t;
            while i < cols + TAPS as u32 - 1 {
                unsafe {
                    ROW_REF.write(i as usize, sample(&pr.reference, x0 + i, y, to, p.divisor));
                    ROW_DIST.write(i as usize, sample(&pr.distorted, x0 + i, y, to, p.divisor));
                }
                i += FLOAT_BLOCK;
            }
            unsafe { dev::sync_threads() };
            let mut x = t;
            while x < cols {
                let v = row_sums_staged(
                    |k| unsafe { ROW_REF.read(k) },
                    |k| unsafe { ROW_DIST.read(k) },
                    x as usize,
                );
                let at = (y * vw + x0 + x) as usize;
                for (i, v) in v.into_iter().enumerate() {
                    unsafe { *out.add(i * n + at) = v };
                }
                x += FLOAT_BLOCK;
            }
            unsafe { dev::sync_threads() };
            x0 += ROW_CHUNK;
        }
        y += dev::grid_dim_x();
    }
}

gpumetrics_device::kernel! {
    /// libvmaf's float SSIM, vertical pass: adds the sums of the map values
    /// ([`super::float::map_values`]: l, c, s, l·c·s) over the valid region to
    /// `out[0..4]`, and zeroes `clear[0..4]` for the next pair (callers alternate two result
    /// slots). Launch after `vmaf_ssim_rows` on the same planes, with [`FLOAT_BLOCK`]
    /// threads and any grid.x.
    pub unsafe fn vmaf_ssim_map(p: FloatSsim, out: *mut f64, clear: *mut f64) => float_map;
}

/// The body of the `vmaf_ssim_map` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn float_map(p: FloatSsim, out: *mut f64, clear: *mut f64) {
    use super::float::SUMS;
    gpumetrics_device::shared!(static FLOAT_WARP_SUMS: [f64; SUMS * FLOAT_BLOCK as usize / 32]);
    let t = dev::thread_idx_x();
    if dev::block_idx_x() == 0 && (t as usize) < SUMS && !clear.is_null() {
        unsafe { *clear.add(t as usize) = 0.0 };
    }
    let (vw, vh) = (valid(p.pair.width), valid(p.pair.height));
    let mut sums = [0.0f64; SUMS];
    let mut y = dev::block_idx_x();
    while y < vh {
        let mut x = t;
        while x < vw {
            let v = unsafe { super::float::map_values(&p, x, y) };
            for i in 0..SUMS {
                sums[i] += v[i];
            }
            x += FLOAT_BLOCK;
        }
        y += dev::grid_dim_x();
    }
    for sum in &mut sums {
        let mut delta = 16;
        while delta > 0 {
            *sum += unsafe { dev::shfl_down(dev::FULL_MASK, *sum, delta) };
            delta /= 2;
        }
    }
    if dev::lane_id() == 0 {
        for i in 0..SUMS {
            unsafe { FLOAT_WARP_SUMS.write((t / 32) as usize * SUMS + i, sums[i]) };
        }
    }
    unsafe { dev::sync_threads() };
    if (t as usize) < SUMS {
        let mut total = 0.0f64;
        for w in 0..FLOAT_BLOCK as usize / 32 {
            total += unsafe { FLOAT_WARP_SUMS.read(w * SUMS + t as usize) };
        }
        unsafe { dev::atomic_add_f64(out.add(t as usize), total) };
    }
}

gpumetrics_device::kernel! {
    /// libvmaf's MS-SSIM, the next scale of both frames ([`super::float::decimate`]'s
    /// values): each block stages the source samples of a [`super::float::DOWN_TILE`]²
    /// tile of the next scale in shared memory (each read and converted once, instead of
    /// 81 times from global memory), then its threads sum their 9×9 windows from there.
    /// Launch with `DOWN_TILE`×`DOWN_TILE` threads and a grid covering the next scale
    /// (`ceil(down(w) / DOWN_TILE)` × `ceil(down(h) / DOWN_TILE)`).
    pub unsafe fn vmaf_ssim_down(p: Decimation) => float_down;
}

/// The body of the `vmaf_ssim_down` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn float_down(p: Decimation) {
    use super::float::{DOWN_SPAN, DOWN_TILE, decimate_staged, down, mirrored_sample};
    const STAGED: usize = (DOWN_SPAN * DOWN_SPAN) as usize;
    gpumetrics_device::shared!(static DOWN_REF: [f32; STAGED]);
    gpumetrics_device::shared!(static DOWN_DIST: [f32; STAGED]);
    let (w, h) = (p.pair.width, p.pair.height);
    let (dw, dh) = (down(w), down(h));
    let (ox0, oy0) = (
        dev::block_idx_x() * DOWN_TILE,
        dev::block_idx_y() * DOWN_TILE,
    );
    let (sx0, sy0) = (2 * ox0 as i64 - 4, 2 * oy0 as i64 - 4);
    let (tx, ty) = (dev::thread_idx_x(), dev::thread_idx_y());
    let to = p.pair.reference.max;
    let mut i = ty * DOWN_TILE + tx;
    while (i as usize) < STAGED {
        let (x, y) = (sx0 + (i % DOWN_SPAN) as i64, sy0 + (i / DOWN_SPAN) as i64);
        unsafe {
            let r = mirrored_sample(&p.pair.reference, w, h, to, p.divisor, x, y);
            let d = mirrored_sample(&p.pair.distorted, w, h, to, p.divisor, x, y);
            DOWN_REF.write(i as usize, r);
            DOWN_DIST.write(i as usize, d);
        }
        i += DOWN_TILE * DOWN_TILE;
    }
    unsafe { dev::sync_threads() };
    let (ox, oy) = (ox0 + tx, oy0 + ty);
    if ox < dw && oy < dh {
        let base = (2 * ty * DOWN_SPAN + 2 * tx) as usize;
        let stride = DOWN_SPAN as usize;
        let r = decimate_staged(|k| unsafe { DOWN_REF.read(k) }, base, stride);
        let d = decimate_staged(|k| unsafe { DOWN_DIST.read(k) }, base, stride);
        let at = (oy * dw + ox) as usize;
        unsafe {
            *(p.down_reference as *mut f32).add(at) = r;
            *(p.down_distorted as *mut f32).add(at) = d;
        }
    }
}
