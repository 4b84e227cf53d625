//! SSIMULACRA2 (version 2.1): per-pixel math shared by the CPU backend and the GPU kernels.
//!
//! The blur is the recursive Gaussian of the reference (Charalampidis 2016, σ = 1.5, as in
//! libjxl and the `ssimulacra2` crate) with the reference's f32 operations in the same
//! order: its rounding noise measurably raises the SSIM error sums of high-quality images
//! (an exact FIR Gaussian scores up to 0.25 higher at JPEG q3), so matching the reference
//! within 0.05 needs the same recursion. Rows (horizontal pass) and columns (vertical pass,
//! fused with the maps and their sums) are therefore sequential per thread.

use crate::color::cbrtf;
use gpumetrics_device::math::fmaf;

/// Half-width N of the recursive filter: output n reads inputs n − N − 1 and n + N − 1.
pub const S2_IIR_N: i32 = 5;
/// Input gains of the three resonators (k = 1, 3, 5).
const IIR_IN: [f32; 3] = [0.055_295_236, -0.058_836_687, 0.012_955_819];
/// −d1 = 2·cos(ω_k) of the three resonators.
const IIR_PREV: [f32; 3] = [1.902_113_1, 1.175_570_5, 0.000_000_000_000_000_122_464_69];

/// State of one recursive Gaussian (three resonators).
#[derive(Clone, Copy, Debug, Default)]
pub struct Iir {
    prev: [f32; 3],
    prev2: [f32; 3],
}

impl Iir {
    /// One step of the horizontal pass; `sum` = input[n − N − 1] + input[n + N − 1].
    #[inline(always)]
    pub fn horizontal(&mut self, sum: f32) -> f32 {
        let mut o = [0.0f32; 3];
        for (i, o) in o.iter_mut().enumerate() {
            let v = fmaf(-1.0, self.prev2[i], sum * IIR_IN[i]);
            let v = fmaf(IIR_PREV[i], self.prev[i], v);
            self.prev2[i] = self.prev[i];
            self.prev[i] = v;
            *o = v;
        }
        o[0] + o[1] + o[2]
    }

    /// One step of the vertical pass (the reference groups its terms differently here).
    #[inline(always)]
    pub fn vertical(&mut self, sum: f32) -> f32 {
        let mut o = [0.0f32; 3];
        for (i, o) in o.iter_mut().enumerate() {
            let t = fmaf(self.prev[i], -IIR_PREV[i], self.prev2[i]);
            let v = fmaf(sum, IIR_IN[i], -t);
            self.prev2[i] = self.prev[i];
            self.prev[i] = v;
            *o = v;
        }
        o[0] + o[1] + o[2]
    }
}

/// Steps whose inputs the sequential passes load before computing them: the loads of a
/// batch are in flight together (the GPU threads would otherwise wait for every load).
pub const S2_BATCH: usize = 8;

/// `$body` for `$j` = 0..S2_BATCH as straight-line code: with constant indices the per-step
/// arrays of a batch stay in registers on the GPU (a loop left rolled puts them in local
/// memory, and then every store of a loaded value waits for its load).
macro_rules! unroll_batch {
    ($j:ident => $body:block) => {
        unroll_batch!(@ $j $body 0 1 2 3 4 5 6 7)
    };
    (@ $j:ident $body:block $($i:literal)*) => {
        $({
            const $j: usize = $i;
            $body
        })*
    };
}
const _: () = assert!(S2_BATCH == 8, "unroll_batch! expands eight steps");

/// Moment `m` (a², b², ab, a, b) of a pixel (a, b).
#[inline(always)]
pub fn moment(m: u32, v: (f32, f32)) -> f32 {
    match m {
        0 => v.0 * v.0,
        1 => v.1 * v.1,
        2 => v.0 * v.1,
        3 => v.0,
        _ => v.1,
    }
}

/// Horizontal pass of moment `m` over a row of `w` pixels: `load(x)` gives (a, b),
/// `store(x, v)` receives the blurred moment of pixel x.
#[inline(always)]
pub fn blur_row(w: u32, m: u32, load: impl Fn(u32) -> (f32, f32), mut store: impl FnMut(u32, f32)) {
    let mut st = Iir::default();
    let w = w as i32;
    let mut n = 1 - S2_IIR_N;
    while n < w {
        let mut sums = [0.0f32; S2_BATCH];
        unroll_batch!(J => {
            let l = n + J as i32 - S2_IIR_N - 1;
            let r = n + J as i32 + S2_IIR_N - 1;
            let lv = if l >= 0 && l < w {
                moment(m, load(l as u32))
            } else {
                0.0
            };
            let rv = if r < w {
                moment(m, load(r as u32))
            } else {
                0.0
            };
            sums[J] = lv + rv;
        });
        unroll_batch!(J => {
            let nn = n + J as i32;
            if nn < w {
                let v = st.horizontal(sums[J]);
                if nn >= 0 {
                    store(nn as u32, v);
                }
            }
        });
        n += S2_BATCH as i32;
    }
}

/// Vertical pass over a column of `h` pixels, fused with the maps: `load(y)` gives the five
/// horizontally blurred moments at row y, `ab(y)` the pixel's (a, b). Returns the six sums.
#[inline(always)]
pub fn column_sums(
    h: u32,
    load: impl Fn(u32) -> [f32; 5],
    ab: impl Fn(u32) -> (f32, f32),
) -> [f64; S2_SUMS_PER_PLANE] {
    let mut st = [Iir::default(); 5];
    let mut acc = [0.0f64; S2_SUMS_PER_PLANE];
    let h = h as i32;
    let mut n = 1 - S2_IIR_N;
    while n < h {
        let mut sums = [[0.0f32; 5]; S2_BATCH];
        unroll_batch!(J => {
            let t = n + J as i32 - S2_IIR_N - 1;
            let b = n + J as i32 + S2_IIR_N - 1;
            let tv = if t >= 0 && t < h {
                load(t as u32)
            } else {
                [0.0; 5]
            };
            let bv = if b < h { load(b as u32) } else { [0.0; 5] };
            sums[J] = [
                tv[0] + bv[0],
                tv[1] + bv[1],
                tv[2] + bv[2],
                tv[3] + bv[3],
                tv[4] + bv[4],
            ];
        });
        unroll_batch!(J => {
            let nn = n + J as i32;
            if nn < h {
                let s = sums[J];
                let m = [
                    st[0].vertical(s[0]),
                    st[1].vertical(s[1]),
                    st[2].vertical(s[2]),
                    st[3].vertical(s[3]),
                    st[4].vertical(s[4]),
                ];
                if nn >= 0 {
                    let [s11, s22, s12, mu1, mu2] = m;
                    let (a, b) = ab(nn as u32);
                    accumulate(
                        &mut acc,
                        ssim_d(mu1, mu2, s11, s22, s12),
                        edge_d1(a, mu1, b, mu2),
                    );
                }
            }
        });
        n += S2_BATCH as i32;
    }
    acc
}

/// Sums per plane and scale: L1 and L4 sums of the three maps (ssim, artifact, detail lost).
pub const S2_SUMS_PER_PLANE: usize = 6;
/// Sums per scale (three planes).
pub const S2_SUMS_PER_SCALE: usize = 3 * S2_SUMS_PER_PLANE;
/// At most six scales (1:1 to 1:32).
pub const S2_MAX_SCALES: usize = 6;
/// Images below this size in either dimension are not scored (and end the scale loop).
pub const S2_MIN_SIZE: u32 = 8;

const S2_OPSIN_BIAS: f32 = 0.003_793_073_4;

/// Linear RGB to the positive XYB of SSIMULACRA2: X' = 14·X + 0.42, Y' = Y + 0.01,
/// B' = (B − Y) + 0.55. Same f32 operations (fused where the reference fuses) as the
/// reference's `yuvxyb`.
#[inline(always)]
pub fn xyb(rgb: [f32; 3]) -> [f32; 3] {
    let [r, g, b] = rgb;
    let cbrt_bias = cbrtf(S2_OPSIN_BIAS);
    let mix = |m0: f32, m1: f32, m2: f32| {
        let v = fmaf(m0, r, fmaf(m1, g, fmaf(m2, b, S2_OPSIN_BIAS)));
        cbrtf(if v < 0.0 { 0.0 } else { v }) - cbrt_bias
    };
    const S0: f32 = 0.243_422_69;
    const S1: f32 = 0.204_767_45;
    let l = mix(0.30, 1.0 - 0.078 - 0.30, 0.078);
    let m = mix(0.23, 1.0 - 0.078 - 0.23, 0.078);
    let s = mix(S0, S1, 1.0 - S0 - S1);
    let x = 0.5 * (l - m);
    let y = 0.5 * (l + m);
    [fmaf(x, 14.0, 0.42), y + 0.01, (s - y) + 0.55]
}

/// The SSIM error map: 1 − SSIM' without the luminance denominator, clamped at 0 (NaN
/// from degenerate input counts as 0). The ratio in f32, the difference in f64, as the
/// reference computes it.
#[inline(always)]
pub fn ssim_d(mu1: f32, mu2: f32, s11: f32, s22: f32, s12: f32) -> f64 {
    const C2: f32 = 0.0009;
    let diff = mu1 - mu2;
    let num_m = fmaf(diff, -diff, 1.0);
    let num_s = fmaf(2.0, s12 - mu1 * mu2, C2);
    let den_s = (s11 - mu1 * mu1) + (s22 - mu2 * mu2) + C2;
    let d = 1.0 - ((num_m * num_s) / den_s) as f64;
    if d > 0.0 { d } else { 0.0 }
}

/// Edge difference d1 = (1 + |b − μ2|) / (1 + |a − μ1|) − 1 (in f64): artifact =
/// max(d1, 0), detail lost = max(−d1, 0).
#[inline(always)]
pub fn edge_d1(a: f32, mu1: f32, b: f32, mu2: f32) -> f64 {
    (1.0 + (b - mu2).abs() as f64) / (1.0 + (a - mu1).abs() as f64) - 1.0
}

/// Adds one pixel's map values to `acc` (d, d⁴, artifact, artifact⁴, detail, detail⁴).
#[inline(always)]
pub fn accumulate(acc: &mut [f64; S2_SUMS_PER_PLANE], d: f64, d1: f64) {
    let pow4 = |v: f64| {
        let v2 = v * v;
        v2 * v2
    };
    let art = if d1 > 0.0 { d1 } else { 0.0 };
    let det = if d1 < 0.0 { -d1 } else { 0.0 };
    acc[0] += d;
    acc[1] += pow4(d);
    acc[2] += art;
    acc[3] += pow4(art);
    acc[4] += det;
    acc[5] += pow4(det);
}

/// Size of the next scale (rounded up).
#[inline(always)]
pub const fn half(n: u32) -> u32 {
    n.div_ceil(2)
}

/// The 2×2 box average at (ox, oy) of a `w`×`h` plane (edge clamped).
///
/// # Safety
/// `src` must hold `w * h` values.
#[inline(always)]
pub unsafe fn downsample_at(src: *const f32, w: u32, h: u32, ox: u32, oy: u32) -> f32 {
    let x0 = 2 * ox;
    let y0 = 2 * oy;
    let x1 = if x0 + 1 < w { x0 + 1 } else { w - 1 };
    let y1 = if y0 + 1 < h { y0 + 1 } else { h - 1 };
    let at = |x: u32, y: u32| unsafe { *src.add((y * w + x) as usize) };
    (at(x0, y0) + at(x1, y0) + at(x0, y1) + at(x1, y1)) * 0.25
}

/// One scale of both images' linear RGB planes: plane `image * 3 + channel` starts at
/// `base + (image * 3 + channel) * plane_len` (`f32`s), rows are `width` values apart.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scale {
    pub base: u64,
    pub width: u32,
    pub height: u32,
    pub plane_len: u32,
    pub _pad: u32,
}

impl Scale {
    #[inline(always)]
    pub fn plane(&self, index: u32) -> *mut f32 {
        (self.base + index as u64 * self.plane_len as u64 * 4) as *mut f32
    }
}

/// Block size of the linearize / downsample / XYB kernels (16×16).
pub const S2_PIXEL_BLOCK: u32 = 16;
/// Threads per block of the row and column kernels.
pub const S2_LINE_THREADS: u32 = 64;
/// Threads of [`ssimu2_finish`].
pub const S2_FINISH_THREADS: u32 = 256;
/// Shared-memory sizes (`f64` reduction slots).
pub const S2_RED_LEN: usize = (S2_LINE_THREADS / 32 * 6) as usize;
pub const S2_FIN_LEN: usize = (S2_FINISH_THREADS / 32) as usize;
/// Three 32×33 tiles (padded against bank conflicts) of [`ssimu2_xyb`].
pub const S2_TILE_LEN: usize = 3 * 32 * 33;

/// One scale's blur and maps: the XYB planes (`Scale` layout: reference X, Y, B, distorted
/// X, Y, B), the moments (plane·5 + moment, same plane size) and where the per-block sums
/// go: sum `k` (plane·6 + map·2 + norm) of column block `t` at `partials + k * n_tiles + t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlurParams {
    pub xyb: Scale,
    pub moments: u64,
    pub partials: u64,
    pub n_tiles: u32,
    pub _pad: u32,
}

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
    /// Linear RGB of both frames at scale 0 (`s0`) and their 2×2 average at scale 1 (`s1`).
    /// Block `S2_PIXEL_BLOCK`×`S2_PIXEL_BLOCK`, one thread per scale-1 pixel, grid.z = 2
    /// (0: reference, 1: distorted).
    pub unsafe fn ssimu2_linearize(
        reference: crate::color::ColorSource,
        distorted: crate::color::ColorSource,
        s0: crate::ssimulacra2::Scale,
        s1: crate::ssimulacra2::Scale,
    ) {
        let ox = dev::global_idx_x();
        let oy = dev::global_idx_y();
        let img = dev::block_idx_z();
        if ox >= s1.width || oy >= s1.height || img > 1 {
            return;
        }
        // By value: a reference to a kernel parameter would copy it to local memory.
        let src = if img == 0 { reference } else { distorted };
        let src = &src;
        let mut sum = [0.0f32; 3];
        for dy in 0..2 {
            for dx in 0..2 {
                let x = 2 * ox + dx;
                let y = 2 * oy + dy;
                let cx = if x < s0.width { x } else { s0.width - 1 };
                let cy = if y < s0.height { y } else { s0.height - 1 };
                let rgb = unsafe { crate::color::linear_rgb(src, cx, cy) };
                for c in 0..3 {
                    sum[c] += rgb[c];
                    if x < s0.width && y < s0.height {
                        unsafe { *s0.plane(img * 3 + c as u32).add((y * s0.width + x) as usize) = rgb[c] };
                    }
                }
            }
        }
        for c in 0..3 {
            unsafe { *s1.plane(img * 3 + c as u32).add((oy * s1.width + ox) as usize) = sum[c] * 0.25 };
        }
    }

    /// `dst` = 2×2 box average of `src`, all six planes. Block `S2_PIXEL_BLOCK`×`S2_PIXEL_BLOCK`,
    /// grid.z = 6.
    pub unsafe fn ssimu2_downsample(src: crate::ssimulacra2::Scale, dst: crate::ssimulacra2::Scale) {
        let ox = dev::global_idx_x();
        let oy = dev::global_idx_y();
        let p = dev::block_idx_z();
        if ox >= dst.width || oy >= dst.height || p >= 6 {
            return;
        }
        let v = unsafe { downsample_at(src.plane(p), src.width, src.height, ox, oy) };
        unsafe { *dst.plane(p).add((oy * dst.width + ox) as usize) = v };
    }

    /// XYB (made positive) of all six planes of a scale into `dst`, transposed (element
    /// (x, y) of a plane at `x * height + y`, so that the row and column passes read
    /// consecutive addresses). Tiles of 32×32 through shared memory: block (32, 8), grid
    /// (width / 32, height / 32, 2 images).
    pub unsafe fn ssimu2_xyb(src: crate::ssimulacra2::Scale, dst: crate::ssimulacra2::Scale) {
        gpumetrics_device::shared!(static S2_TILE: [f32; S2_TILE_LEN]);
        let tile = S2_TILE.as_mut_ptr();
        let (tx, ty) = (dev::thread_idx_x(), dev::thread_idx_y());
        let x0 = dev::block_idx_x() * 32;
        let y0 = dev::block_idx_y() * 32;
        let img = dev::block_idx_z();
        let (w, h) = (src.width, src.height);
        if img > 1 {
            return;
        }
        for k in 0..4 {
            let (x, y) = (x0 + tx, y0 + ty + 8 * k);
            if x < w && y < h {
                let o = (y * w + x) as usize;
                let rgb = unsafe {
                    [
                        *src.plane(img * 3).add(o),
                        *src.plane(img * 3 + 1).add(o),
                        *src.plane(img * 3 + 2).add(o),
                    ]
                };
                let v = xyb(rgb);
                for c in 0..3 {
                    unsafe { *tile.add(c * 32 * 33 + ((ty + 8 * k) * 33 + tx) as usize) = v[c] };
                }
            }
        }
        unsafe { dev::sync_threads() };
        for k in 0..4 {
            let (x, y) = (x0 + ty + 8 * k, y0 + tx);
            if x < w && y < h {
                for c in 0..3u32 {
                    let v = unsafe { *tile.add(c as usize * 32 * 33 + (tx * 33 + ty + 8 * k) as usize) };
                    unsafe { *dst.plane(img * 3 + c).add((x * h + y) as usize) = v };
                }
            }
        }
    }

    /// Horizontal recursive blur, one thread per (row, plane, moment) on the transposed
    /// planes: `S2_LINE_THREADS` threads, grid (rows / threads, 3, 5). Writes the moment
    /// planes (plane·5 + moment), transposed.
    pub unsafe fn ssimu2_hblur(p: crate::ssimulacra2::BlurParams) {
        let y = dev::global_idx_x();
        let c = dev::block_idx_y();
        let m = dev::block_idx_z();
        let (w, h) = (p.xyb.width, p.xyb.height);
        if y >= h || c > 2 || m > 4 {
            return;
        }
        let a = unsafe { p.xyb.plane(c).add(y as usize) };
        let b = unsafe { p.xyb.plane(3 + c).add(y as usize) };
        let len = p.xyb.plane_len as usize;
        let out = unsafe { (p.moments as *mut f32).add((c * 5 + m) as usize * len + y as usize) };
        blur_row(
            w,
            m,
            |x| unsafe { (*a.add((x * h) as usize), *b.add((x * h) as usize)) },
            |x, v| unsafe { *out.add((x * h) as usize) = v },
        );
    }

    /// Vertical recursive blur fused with the three maps and their sums, one thread per
    /// (column, plane) on the transposed planes (each thread reads consecutive addresses):
    /// `S2_LINE_THREADS` threads, grid (columns / threads = `n_tiles`, 3). Writes six `f64`
    /// partial sums per block.
    pub unsafe fn ssimu2_vblur(p: crate::ssimulacra2::BlurParams) {
        gpumetrics_device::shared!(static S2_RED: [f64; S2_RED_LEN]);
        let x = dev::global_idx_x();
        let c = dev::block_idx_y();
        let t = dev::thread_idx_x();
        let (w, h) = (p.xyb.width, p.xyb.height);
        let len = p.xyb.plane_len as usize;
        let mut acc = [0.0f64; S2_SUMS_PER_PLANE];
        if x < w && c <= 2 {
            let col = (x * h) as usize;
            let a = unsafe { p.xyb.plane(c).add(col) };
            let b = unsafe { p.xyb.plane(3 + c).add(col) };
            let m = unsafe { (p.moments as *const f32).add(c as usize * 5 * len + col) };
            acc = column_sums(
                h,
                |y| {
                    let o = y as usize;
                    unsafe {
                        [
                            *m.add(o),
                            *m.add(len + o),
                            *m.add(2 * len + o),
                            *m.add(3 * len + o),
                            *m.add(4 * len + o),
                        ]
                    }
                },
                |y| unsafe { (*a.add(y as usize), *b.add(y as usize)) },
            );
        }
        let warp = (t / 32) as usize;
        for (k, v) in acc.into_iter().enumerate() {
            let s = unsafe { warp_sum(v) };
            if dev::lane_id() == 0 {
                unsafe { S2_RED.write(warp * 6 + k, s) };
            }
        }
        unsafe { dev::sync_threads() };
        if t < 6 && c <= 2 {
            let mut s = 0.0f64;
            for w in 0..(S2_LINE_THREADS / 32) as usize {
                s += unsafe { S2_RED.read(w * 6 + t as usize) };
            }
            let out = p.partials as *mut f64;
            let k = c * 6 + t;
            unsafe { *out.add((k * p.n_tiles + dev::block_idx_x()) as usize) = s };
        }
    }

    /// Sums the per-tile partials: block (k, s) adds the `meta[2s + 1]` values of sum `k`
    /// of scale `s` (starting at `partials + meta[2s] + k * meta[2s + 1]`) into
    /// `out[s * 18 + k]`. Grid (18, scales), `S2_FINISH_THREADS` threads.
    pub unsafe fn ssimu2_finish(partials: *const f64, meta: *const u32, out: *mut f64) {
        gpumetrics_device::shared!(static S2_FIN: [f64; S2_FIN_LEN]);
        let k = dev::block_idx_x();
        let s = dev::block_idx_y();
        let t = dev::thread_idx_x();
        let (off, n) = unsafe { (*meta.add(2 * s as usize), *meta.add(2 * s as usize + 1)) };
        let base = unsafe { partials.add(off as usize + (k * n) as usize) };
        let mut v = 0.0f64;
        let mut i = t;
        while i < n {
            v += unsafe { *base.add(i as usize) };
            i += S2_FINISH_THREADS;
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
            unsafe { *out.add((s * 18 + k) as usize) = total };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recursive_blur_is_the_nine_tap_gaussian() {
        // Impulse response (exact arithmetic: nine taps, sum 1).
        let mut out = [0.0f32; 21];
        let impulse = |x| if x == 10 { (1.0, 0.0) } else { (0.0, 0.0) };
        blur_row(21, 3, impulse, |x, v| out[x as usize] = v);
        let sum: f32 = out.iter().sum();
        assert!((sum - 1.0).abs() < 1e-5, "{sum}");
        assert!((out[10] - 0.264_621_1).abs() < 1e-6 && (out[14] - 0.009_414_368).abs() < 1e-6);
        assert!(
            out[16].abs() < 1e-6 && (out[9] - out[11]).abs() < 1e-6,
            "{out:?}"
        );
    }

    #[test]
    fn xyb_of_black_and_white() {
        let k = xyb([0.0; 3]);
        assert!((k[0] - 0.42).abs() < 1e-6 && (k[1] - 0.01).abs() < 1e-6);
        assert!((k[2] - 0.55).abs() < 1e-6);
        let w = xyb([1.0; 3]);
        assert!((w[0] - 0.42).abs() < 1e-3, "{w:?}");
        assert!(w[1] > 0.8 && w[1] < 0.9, "{w:?}");
    }

    #[test]
    fn identical_moments_give_zero_error() {
        assert_eq!(ssim_d(0.3, 0.3, 0.1, 0.1, 0.1), 0.0);
        assert!(ssim_d(0.3, 0.3, 0.1, 0.2, 0.09) > 0.0);
        assert_eq!(edge_d1(0.5, 0.4, 0.5, 0.4), 0.0);
        assert!(edge_d1(0.5, 0.5, 0.7, 0.5) > 0.0);
        let mut acc = [0.0; 6];
        accumulate(&mut acc, 0.5, -0.5);
        assert_eq!(acc, [0.5, 0.0625, 0.0, 0.0, 0.5, 0.0625]);
    }

    #[test]
    fn downsample_clamps_edges() {
        let p = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]; // 3x2
        assert_eq!(unsafe { downsample_at(p.as_ptr(), 3, 2, 0, 0) }, 3.0);
        assert_eq!(unsafe { downsample_at(p.as_ptr(), 3, 2, 1, 0) }, 4.5);
        assert_eq!(half(3), 2);
    }
}
