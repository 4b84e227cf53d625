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
    for n in 1 - S2_IIR_N..w {
        let (l, r) = (n - S2_IIR_N - 1, n + S2_IIR_N - 1);
        let lv = if l >= 0 {
            moment(m, load(l as u32))
        } else {
            0.0
        };
        let rv = if r < w {
            moment(m, load(r as u32))
        } else {
            0.0
        };
        let v = st.horizontal(lv + rv);
        if n >= 0 {
            store(n as u32, v);
        }
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
    for n in 1 - S2_IIR_N..h {
        let (t, b) = (n - S2_IIR_N - 1, n + S2_IIR_N - 1);
        let tv = if t >= 0 { load(t as u32) } else { [0.0; 5] };
        let bv = if b < h { load(b as u32) } else { [0.0; 5] };
        let m: [f32; 5] = core::array::from_fn(|i| st[i].vertical(tv[i] + bv[i]));
        if n >= 0 {
            let [s11, s22, s12, mu1, mu2] = m;
            let (a, b) = ab(n as u32);
            accumulate(
                &mut acc,
                ssim_d(mu1, mu2, s11, s22, s12),
                edge_d1(a, mu1, b, mu2),
            );
        }
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
/// `cbrt(S2_OPSIN_BIAS)` as the host rounds it (a test checks it against `std`).
const S2_CBRT_BIAS: f32 = 0.155_954_2;

/// Cone response `k` (0: L, 1: M, 2: S) of linear RGB, cube-rooted and bias-corrected:
/// the per-channel half of [`xyb`].
#[inline(always)]
pub fn opsin(k: u32, rgb: [f32; 3]) -> f32 {
    const S0: f32 = 0.243_422_69;
    const S1: f32 = 0.204_767_45;
    let (m0, m1, m2) = match k {
        0 => (0.30, 1.0 - 0.078 - 0.30, 0.078),
        1 => (0.23, 1.0 - 0.078 - 0.23, 0.078),
        _ => (S0, S1, 1.0 - S0 - S1),
    };
    let [r, g, b] = rgb;
    let v = fmaf(m0, r, fmaf(m1, g, fmaf(m2, b, S2_OPSIN_BIAS)));
    cbrtf(if v < 0.0 { 0.0 } else { v }) - S2_CBRT_BIAS
}

/// The positive XYB of the three [`opsin`] responses.
#[inline(always)]
pub fn xyb_of_lms(l: f32, m: f32, s: f32) -> [f32; 3] {
    let x = 0.5 * (l - m);
    let y = 0.5 * (l + m);
    [fmaf(x, 14.0, 0.42), y + 0.01, (s - y) + 0.55]
}

/// Linear RGB to the positive XYB of SSIMULACRA2: X' = 14·X + 0.42, Y' = Y + 0.01,
/// B' = (B − Y) + 0.55. Same f32 operations (fused where the reference fuses) as the
/// reference's `yuvxyb`.
#[inline(always)]
pub fn xyb(rgb: [f32; 3]) -> [f32; 3] {
    xyb_of_lms(opsin(0, rgb), opsin(1, rgb), opsin(2, rgb))
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

/// Block size of the downsample kernel (16×16).
pub const S2_PIXEL_BLOCK: u32 = 16;
/// Warps per block of [`ssimu2_linearize`] (each covers `S2_LIN_COLS`×2 pixels).
pub const S2_LIN_WARPS: u32 = 4;
/// Pixel columns of one [`ssimu2_linearize`] block.
pub const S2_LIN_COLS: u32 = 16;
/// Chroma tile of [`ssimu2_linearize`] per channel: enough for the taps of 16 × 8 pixels
/// at any siting with at most 2:1 subsampling (12 × 8 at 4:2:0).
const S2_CHROMA_W: u32 = 20;
const S2_CHROMA_H: u32 = 12;
pub const S2_CHROMA_LEN: usize = (2 * S2_CHROMA_W * S2_CHROMA_H) as usize;
const _: () = assert!(
    S2_LIN_WARPS == 4 && S2_CHROMA_LEN <= 4 * 32 * 4,
    "the unroll! list"
);
/// Rows of one [`ssimu2_hblur`] block and columns of one [`ssimu2_vblur`] block: one lane each.
pub const S2_LANES: u32 = 32;
/// Threads of the blur kernels: one warp per moment.
pub const S2_BLUR_THREADS: u32 = 5 * S2_LANES;
/// Distance between the two inputs of the recursion (steps n − 6 and n + 4): an input is
/// loaded once and used again, as the left/upper one, this many steps later.
pub const S2_RING: u32 = (2 * S2_IIR_N) as u32;
/// Inputs per tile of [`ssimu2_hblur`]: four groups of `S2_RING` steps, so a tile of
/// columns [40k, 40k + 40) yields outputs 40k − 4 .. 40k + 36.
pub const S2_HCHUNK: u32 = 4 * S2_RING;
const S2_HTILE_STRIDE: u32 = S2_HCHUNK + 1;
/// Input tile elements (a and b planes) and how many each thread loads.
#[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
const S2_HTILE_ELEMS: u32 = 2 * S2_LANES * S2_HCHUNK;
#[cfg_attr(not(target_arch = "nvptx64"), allow(dead_code))]
const S2_HLOADS: usize = S2_HTILE_ELEMS.div_ceil(S2_BLUR_THREADS) as usize;
/// Rows per round of [`ssimu2_vblur`] (two rings; five 4-row vector loads per lane).
pub const S2_VCHUNK: u32 = 2 * S2_RING;
const _: () = assert!(
    S2_HLOADS == 16 && S2_HCHUNK == 40 && S2_RING == 10 && S2_VCHUNK == 20,
    "the unroll! lists below"
);
/// Threads of [`ssimu2_finish`].
pub const S2_FINISH_THREADS: u32 = 256;
/// Shared-memory sizes: the tiles of the blur kernels (padded against bank conflicts) and
/// the `f64` reduction slots.
pub const S2_HIN_LEN: usize = (2 * S2_LANES * S2_HTILE_STRIDE) as usize;
pub const S2_VM_LEN: usize = (2 * 5 * S2_VCHUNK * (S2_LANES + 1)) as usize;
pub const S2_RED_LEN: usize = 5 * S2_SUMS_PER_PLANE;
pub const S2_FIN_LEN: usize = (S2_FINISH_THREADS / 32) as usize;

/// One scored scale as the blur kernels see it: six XYB planes (reference X, Y, B,
/// distorted X, Y, B), `width`×`height` row-major; fifteen moment planes (plane·5 +
/// moment) in strips of 32 rows, each strip column-major (pixel (x, y) at
/// `(y / 32 · width + x) · 32 + y % 32`, see [`Level::moment_len`]) so that the row pass
/// writes and the column pass reads whole 128-byte lines; and where its per-block sums go: sum `k` (plane·6 + map·2 + norm) of column
/// block `t` at `partials + k * v_blocks_per_plane + t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Level {
    pub xyb: u64,
    pub moments: u64,
    pub partials: u64,
    pub width: u32,
    pub height: u32,
    /// First block of this scale in the grids of [`ssimu2_hblur`] and [`ssimu2_vblur`]
    /// (scales follow each other, largest first).
    pub h_first: u32,
    pub v_first: u32,
}

impl Level {
    /// Row groups per plane ([`ssimu2_hblur`] blocks = 3 × this).
    pub const fn h_blocks_per_plane(&self) -> u32 {
        self.height.div_ceil(S2_LANES)
    }
    /// Column groups per plane ([`ssimu2_vblur`] blocks = 3 × this).
    pub const fn v_blocks_per_plane(&self) -> u32 {
        self.width.div_ceil(S2_LANES)
    }
    /// Plane `i` of the planes starting at `base`.
    #[inline(always)]
    pub fn plane(&self, base: u64, i: u32) -> *mut f32 {
        (base + i as u64 * self.width as u64 * self.height as u64 * 4) as *mut f32
    }
    /// Values per moment plane: whole strips of 32 rows.
    #[inline(always)]
    pub const fn moment_len(&self) -> u64 {
        self.width as u64 * (self.height.div_ceil(S2_LANES) * S2_LANES) as u64
    }
    /// Moment plane `i`.
    #[inline(always)]
    pub fn moment_plane(&self, i: u32) -> *mut f32 {
        (self.moments + i as u64 * self.moment_len() * 4) as *mut f32
    }
}

/// The scale that block `b` of a blur grid belongs to (`first` gives a level's first block).
///
/// # Safety
/// `levels` must hold `n` ≥ 1 levels.
#[inline(always)]
pub unsafe fn level_of(
    levels: *const Level,
    n: u32,
    b: u32,
    first: impl Fn(&Level) -> u32,
) -> Level {
    let mut lv = unsafe { *levels };
    for i in 1..n as usize {
        let next = unsafe { *levels.add(i) };
        if b >= first(&next) {
            lv = next;
        }
    }
    lv
}

/// Ten steps of the horizontal recursion of moment `M` for one row: the right inputs are
/// pixels `a[j]`, `b[j]` (j < 10), the left inputs `ring` (the previous group's right
/// inputs, replaced by these); `store(j, v)` receives the step's output. All loads come
/// before the first store, so the GPU overlaps them.
///
/// # Safety
/// `a` and `b` must hold ten values.
#[inline(always)]
pub unsafe fn hgroup<const M: u32>(
    st: &mut Iir,
    ring: &mut [f32; S2_RING as usize],
    a: *const f32,
    b: *const f32,
    mut store: impl FnMut(u32, f32),
) {
    let mut right = [0.0f32; S2_RING as usize];
    unroll!(j in [0 1 2 3 4 5 6 7 8 9] {
        right[j] = moment(M, unsafe { (*a.add(j), *b.add(j)) });
    });
    unroll!(j in [0 1 2 3 4 5 6 7 8 9] {
        store(j as u32, st.horizontal(ring[j] + right[j]));
    });
    *ring = right;
}

/// One `S2_VCHUNK` of the vertical recursion of a column: `now[j]` is input row 20k + j,
/// `ring[j]` input row 20k + j − 10 (replaced by rows 20k + 10 ..); `out(j, v)` receives
/// output row 20k + j − 4.
#[inline(always)]
pub fn vchunk(
    st: &mut Iir,
    ring: &mut [f32; S2_RING as usize],
    now: [f32; S2_VCHUNK as usize],
    mut out: impl FnMut(u32, f32),
) {
    unroll!(j in [0 1 2 3 4 5 6 7 8 9] {
        out(j as u32, st.vertical(ring[j] + now[j]));
    });
    unroll!(j in [0 1 2 3 4 5 6 7 8 9] {
        out(j as u32 + S2_RING, st.vertical(now[j] + now[j + S2_RING as usize]));
    });
    unroll!(j in [0 1 2 3 4 5 6 7 8 9] {
        ring[j] = now[j + S2_RING as usize];
    });
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
    /// Both frames to linear RGB and XYB at scale 0 (`xyb0`; the linear RGB is not kept),
    /// and their 2×2 average at scale 1 in linear RGB (`rgb1`) and XYB (`xyb1`). One thread
    /// per scale-0 pixel of the 2·`rgb1` grid (edge pixels repeated); a warp covers 16×2
    /// pixels, so each 2×2 quad is four lanes that average through shuffles and share the
    /// three cube roots of the scale-1 pixel. Block (32, `S2_LIN_WARPS`), grid
    /// (2·w1 / 16, 2·h1 / (2·`S2_LIN_WARPS`), 2 images).
    pub unsafe fn ssimu2_linearize(
        reference: crate::color::ColorSource,
        distorted: crate::color::ColorSource,
        xyb0: crate::ssimulacra2::Scale,
        rgb1: crate::ssimulacra2::Scale,
        xyb1: crate::ssimulacra2::Scale,
    ) {
        let lane = dev::thread_idx_x();
        let x = dev::block_idx_x() * S2_LIN_COLS + (lane & (S2_LIN_COLS - 1));
        let y = (dev::block_idx_y() * S2_LIN_WARPS + dev::thread_idx_y()) * 2 + (lane >> 4);
        let img = dev::block_idx_z();
        if img > 1 {
            return;
        }
        // By value: a reference to a kernel parameter would copy it to local memory.
        let src = if img == 0 { reference } else { distorted };
        let (w, h) = (xyb0.width, xyb0.height);
        let cx = if x < w { x } else { w - 1 };
        let cy = if y < h { y } else { h - 1 };
        // Subsampled chroma: the block's footprint (at most 20 × 12 samples per channel
        // for 16 × 8 pixels) goes through shared memory, read once per block instead of
        // sixteen times per pixel.
        let sub = src.family == crate::color::FAMILY_YUV && (src.sub_x | src.sub_y) != 0;
        let p = if sub {
            gpumetrics_device::shared!(static S2_CHROMA: [f32; S2_CHROMA_LEN]);
            let tile = S2_CHROMA.as_mut_ptr();
            let (x0, y0) = (
                dev::block_idx_x() * S2_LIN_COLS,
                dev::block_idx_y() * S2_LIN_WARPS * 2,
            );
            let origin = crate::color::chroma_taps(&src, x0, y0);
            let (cw, ch) = crate::color::chroma_size(&src);
            let t = dev::thread_idx_y() * 32 + lane;
            unroll!(i in [0 1 2 3] {
                let e = t + i as u32 * 32 * S2_LIN_WARPS;
                if (e as usize) < S2_CHROMA_LEN {
                    let plane = e / (S2_CHROMA_W * S2_CHROMA_H);
                    let rem = e % (S2_CHROMA_W * S2_CHROMA_H);
                    let (r, c) = ((rem / S2_CHROMA_W) as i32, (rem % S2_CHROMA_W) as i32);
                    let at = (
                        crate::color::clamp_i(origin.x0 + c, cw),
                        crate::color::clamp_i(origin.y0 + r, ch),
                    );
                    let v = unsafe { crate::color::code(&src.c[1 + plane as usize], at.0, at.1) };
                    unsafe { *tile.add(e as usize) = v };
                }
            });
            unsafe { dev::sync_threads() };
            let taps = crate::color::chroma_taps(&src, cx, cy);
            let from = |plane: u32| {
                move |i: i32, j: i32| {
                    let (r, c) = ((j - origin.y0) as u32, (i - origin.x0) as u32);
                    unsafe { *tile.add(((plane * S2_CHROMA_H + r) * S2_CHROMA_W + c) as usize) }
                }
            };
            let cb = crate::color::upsample(&taps, from(0));
            let cr = crate::color::upsample(&taps, from(1));
            crate::color::yuv_to_rgb(&src, unsafe { crate::color::code(&src.c[0], cx, cy) }, cb, cr)
        } else {
            unsafe { crate::color::nonlinear_rgb(&src, cx, cy) }
        };
        let rgb = crate::color::to_linear_rgb(&src, p);
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

    /// Scale `dst` = 2×2 box average of `src` in linear RGB, and its XYB (`xyb`). Block
    /// `S2_PIXEL_BLOCK`×`S2_PIXEL_BLOCK`, grid.z = 2 (image).
    pub unsafe fn ssimu2_downsample(
        src: crate::ssimulacra2::Scale,
        dst: crate::ssimulacra2::Scale,
        xyb_dst: crate::ssimulacra2::Scale,
    ) {
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

    /// Horizontal recursive blur of the five moments of every scale in one grid. Block
    /// (`S2_BLUR_THREADS`): 32 rows of one plane, warp = moment, lane = row. The rows are
    /// read in tiles of `S2_HCHUNK` columns through shared memory (coalesced, the next tile
    /// loaded while the current one is blurred); each step's outputs of the 32 rows are one
    /// 128-byte line of the moment strip.
    pub unsafe fn ssimu2_hblur(levels: *const crate::ssimulacra2::Level, n_levels: u32) {
        gpumetrics_device::shared!(static S2_HIN: [f32; S2_HIN_LEN]);
        const CH: u32 = S2_HCHUNK;
        let t = dev::thread_idx_x();
        let (m, lane) = (t / 32, t % 32);
        let bid = dev::block_idx_x();
        let lv = unsafe { level_of(levels, n_levels, bid, |l| l.h_first) };
        let (w, h) = (lv.width, lv.height);
        let groups = lv.h_blocks_per_plane();
        let idx = bid - lv.h_first;
        let (c, y0) = (idx / groups, (idx % groups) * S2_LANES);
        if c > 2 || m > 4 {
            return;
        }
        let a_pl = lv.plane(lv.xyb, c) as *const f32;
        let b_pl = lv.plane(lv.xyb, 3 + c) as *const f32;
        // This lane's row in its strip of the moment plane: column n at `out + 32·n`.
        let out = unsafe { lv.moment_plane(c * 5 + m).add(((y0 / S2_LANES) * w * S2_LANES + lane) as usize) };
        let tin = S2_HIN.as_mut_ptr();
        // Element e of a tile: image, row, column.
        let place = |e: u32| {
            let (img, rem) = (e / (S2_LANES * CH), e % (S2_LANES * CH));
            (img, rem / CH, rem % CH)
        };
        let load = |k: u32, i: usize| -> f32 {
            let e = t + S2_BLUR_THREADS * i as u32;
            let (img, row, col) = place(e);
            let (y, x) = (y0 + row, k * CH + col);
            if e < S2_HTILE_ELEMS && y < h && x < w {
                let pl = if img == 0 { a_pl } else { b_pl };
                unsafe { *pl.add((y * w + x) as usize) }
            } else {
                0.0
            }
        };
        // Inputs 0 .. w + 3 (outputs up to w − 1; zeros past the edge).
        let chunks = (w + S2_IIR_N as u32 - 1).div_ceil(CH);
        let mut pre = [0.0f32; S2_HLOADS];
        unroll!(i in [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15] {
            pre[i] = load(0, i);
        });
        let mut st = Iir::default();
        let mut ring = [0.0f32; S2_RING as usize];
        let ra = unsafe { tin.add((lane * S2_HTILE_STRIDE) as usize) };
        let rb = unsafe { tin.add(((S2_LANES + lane) * S2_HTILE_STRIDE) as usize) };
        for k in 0..chunks {
            unsafe { dev::sync_threads() };
            unroll!(i in [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15] {
                let e = t + S2_BLUR_THREADS * i as u32;
                if e < S2_HTILE_ELEMS {
                    let (img, row, col) = place(e);
                    let at = ((img * S2_LANES + row) * S2_HTILE_STRIDE + col) as usize;
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
            for g in 0..CH / S2_RING {
                let o = g * S2_RING;
                let n0 = (k * CH + o) as i32 - 4;
                let (ga, gb) = unsafe { (ra.add(o as usize), rb.add(o as usize)) };
                let store = |j: u32, v: f32| {
                    let n = n0 + j as i32;
                    if n >= 0 && (n as u32) < w {
                        unsafe { *out.add((n as u32 * S2_LANES) as usize) = v };
                    }
                };
                unsafe {
                    match m {
                        0 => hgroup::<0>(&mut st, &mut ring, ga, gb, store),
                        1 => hgroup::<1>(&mut st, &mut ring, ga, gb, store),
                        2 => hgroup::<2>(&mut st, &mut ring, ga, gb, store),
                        3 => hgroup::<3>(&mut st, &mut ring, ga, gb, store),
                        _ => hgroup::<4>(&mut st, &mut ring, ga, gb, store),
                    }
                }
            }
        }
    }

    /// Vertical recursive blur of every scale in one grid, fused with the three maps and
    /// their sums. Block (`S2_BLUR_THREADS`): 32 columns of one plane, warp = moment, lane =
    /// column, reading its column four rows at a time from the moment strips; per
    /// `S2_VCHUNK` rows the warps hand the blurred moments over in shared memory and the
    /// whole block computes the maps of those rows. Writes six `f64` sums per block.
    pub unsafe fn ssimu2_vblur(levels: *const crate::ssimulacra2::Level, n_levels: u32) {
        gpumetrics_device::shared!(static S2_VM: [f32; S2_VM_LEN]);
        gpumetrics_device::shared!(static S2_RED: [f64; S2_RED_LEN]);
        const CH: usize = S2_VCHUNK as usize;
        const STRIDE: u32 = S2_LANES + 1;
        const PIXELS: u32 = S2_VCHUNK * S2_LANES;
        const PER_THREAD: usize = PIXELS.div_ceil(S2_BLUR_THREADS) as usize;
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
        let x0 = g * S2_LANES;
        let x = x0 + lane;
        let mom = lv.moment_plane(c * 5 + m) as *const f32;
        let a_pl = lv.plane(lv.xyb, c) as *const f32;
        let b_pl = lv.plane(lv.xyb, 3 + c) as *const f32;
        // Rows r .. r + 4 (r a multiple of 4) of this lane's column; the strips' padding
        // rows past the image hold zeros.
        let rows = h.div_ceil(S2_LANES) * S2_LANES;
        let load4 = |r: u32| -> [f32; 4] {
            if r < rows && x < w {
                let at = ((r / S2_LANES * w + x) * S2_LANES + r % S2_LANES) as usize;
                unsafe { core::ptr::read(mom.add(at) as *const F4).0 }
            } else {
                [0.0; 4]
            }
        };
        let load_chunk = |k: u32| {
            let mut v = [0.0f32; CH];
            unroll!(i in [0 1 2 3 4] {
                let q = load4(k * S2_VCHUNK + 4 * i as u32);
                v[4 * i] = q[0];
                v[4 * i + 1] = q[1];
                v[4 * i + 2] = q[2];
                v[4 * i + 3] = q[3];
            });
            v
        };
        // Pixel q of a chunk for this thread: (row in chunk, column in block).
        let pixel = |q: usize| {
            let p = t + S2_BLUR_THREADS * q as u32;
            (p, p / S2_LANES, p % S2_LANES)
        };
        let vm = S2_VM.as_mut_ptr();
        let mut st = Iir::default();
        let mut ring = [0.0f32; S2_RING as usize];
        let mut cur = load_chunk(0);
        let mut acc = [0.0f64; S2_SUMS_PER_PLANE];
        let chunks = (h + S2_IIR_N as u32 - 1).div_ceil(S2_VCHUNK);
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
                let n = (k * S2_VCHUNK + jj) as i32 - 4;
                if p < PIXELS && n >= 0 && (n as u32) < h && x0 + col < w {
                    let o = (n as u32 * w + x0 + col) as usize;
                    ab[q] = unsafe { (*a_pl.add(o), *b_pl.add(o)) };
                }
            });
            let buf = unsafe { vm.add(((k % 2) * 5 * S2_VCHUNK * STRIDE) as usize) };
            vchunk(&mut st, &mut ring, now, |j, v| unsafe {
                *buf.add(((m * S2_VCHUNK + j) * STRIDE + lane) as usize) = v
            });
            unsafe { dev::sync_threads() };
            unroll!(q in [0 1 2 3] {
                let (a, b) = ab[q];
                let (p, jj, col) = pixel(q);
                let n = (k * S2_VCHUNK + jj) as i32 - 4;
                if p < PIXELS && n >= 0 && (n as u32) < h && x0 + col < w {
                    let at = |mm: u32| unsafe { *buf.add(((mm * S2_VCHUNK + jj) * STRIDE + col) as usize) };
                    let (s11, s22, s12, mu1, mu2) = (at(0), at(1), at(2), at(3), at(4));
                    accumulate(&mut acc, ssim_d(mu1, mu2, s11, s22, s12), edge_d1(a, mu1, b, mu2));
                }
            });
        }
        let warp = m as usize;
        unroll!(i in [0 1 2 3 4 5] {
            let s = unsafe { warp_sum(acc[i]) };
            if lane == 0 {
                unsafe { S2_RED.write(warp * S2_SUMS_PER_PLANE + i, s) };
            }
        });
        unsafe { dev::sync_threads() };
        if (t as usize) < S2_SUMS_PER_PLANE {
            let mut s = 0.0f64;
            for wp in 0..5 {
                s += unsafe { S2_RED.read(wp * S2_SUMS_PER_PLANE + t as usize) };
            }
            let k = c * S2_SUMS_PER_PLANE as u32 + t;
            unsafe { *(lv.partials as *mut f64).add((k * groups + g) as usize) = s };
        }
    }

    /// Sums the per-block partials: block (k, s) adds the column blocks' values of sum `k`
    /// of scale `s` (`levels[s].partials`, see [`Level`]) into
    /// `out[s * S2_SUMS_PER_SCALE + k]`. Grid (`S2_SUMS_PER_SCALE`, scales),
    /// `S2_FINISH_THREADS` threads.
    pub unsafe fn ssimu2_finish(levels: *const crate::ssimulacra2::Level, out: *mut f64) {
        gpumetrics_device::shared!(static S2_FIN: [f64; S2_FIN_LEN]);
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
            unsafe { *out.add((s * S2_SUMS_PER_SCALE as u32 + k) as usize) = total };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;
    use std::vec::Vec;

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

    /// Deterministic test values in [0.3, 0.7).
    fn values(n: usize, seed: u32) -> Vec<f32> {
        let mut x = seed.wrapping_mul(2_654_435_761) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                0.3 + (x % 10_000) as f32 / 25_000.0
            })
            .collect()
    }

    /// The tiling of `ssimu2_hblur` (tiles of `S2_HCHUNK` inputs, groups of ten steps with
    /// the left inputs in a ring) gives bit for bit the sequential pass, at every width and
    /// moment.
    #[test]
    fn tiled_horizontal_pass_equals_the_row_pass() {
        for w in [1u32, 3, 4, 5, 10, 31, 36, 37, 40, 41, 64, 100, 257] {
            let (a, b) = (values(w as usize, w), values(w as usize, w + 7));
            for m in 0..5u32 {
                let mut want = vec![0.0f32; w as usize];
                blur_row(
                    w,
                    m,
                    |x| (a[x as usize], b[x as usize]),
                    |x, v| want[x as usize] = v,
                );
                let mut got = vec![f32::NAN; w as usize];
                let (mut st, mut ring) = (Iir::default(), [0.0f32; S2_RING as usize]);
                for k in 0..(w + 4).div_ceil(S2_HCHUNK) {
                    let tile = |p: &[f32]| -> Vec<f32> {
                        (0..S2_HCHUNK)
                            .map(|j| p.get((k * S2_HCHUNK + j) as usize).copied().unwrap_or(0.0))
                            .collect()
                    };
                    let (ta, tb) = (tile(&a), tile(&b));
                    for g in (0..S2_HCHUNK).step_by(S2_RING as usize) {
                        let (pa, pb) = (ta[g as usize..].as_ptr(), tb[g as usize..].as_ptr());
                        let n0 = (k * S2_HCHUNK + g) as i32 - 4;
                        let store = |j: u32, v: f32| {
                            let n = n0 + j as i32;
                            if n >= 0 && (n as u32) < w {
                                got[n as usize] = v;
                            }
                        };
                        // SAFETY: ten values from each offset.
                        unsafe {
                            match m {
                                0 => hgroup::<0>(&mut st, &mut ring, pa, pb, store),
                                1 => hgroup::<1>(&mut st, &mut ring, pa, pb, store),
                                2 => hgroup::<2>(&mut st, &mut ring, pa, pb, store),
                                3 => hgroup::<3>(&mut st, &mut ring, pa, pb, store),
                                _ => hgroup::<4>(&mut st, &mut ring, pa, pb, store),
                            }
                        }
                    }
                }
                let same = want
                    .iter()
                    .zip(&got)
                    .all(|(x, y)| x.to_bits() == y.to_bits());
                assert!(same, "w {w} m {m}: {want:?} vs {got:?}");
            }
        }
    }

    /// The chunked ring of `ssimu2_vblur` gives bit for bit the sequential pass.
    #[test]
    fn chunked_vertical_pass_equals_the_column_pass() {
        for h in [1u32, 4, 5, 6, 9, 10, 11, 16, 19, 20, 21, 33, 100] {
            let col = values(h as usize, h + 3);
            let mut want = vec![0.0f32; h as usize];
            let mut st = Iir::default();
            for n in 1 - S2_IIR_N..h as i32 {
                let (t, b) = (n - S2_IIR_N - 1, n + S2_IIR_N - 1);
                let tv = if t >= 0 { col[t as usize] } else { 0.0 };
                let bv = if b < h as i32 { col[b as usize] } else { 0.0 };
                let v = st.vertical(tv + bv);
                if n >= 0 {
                    want[n as usize] = v;
                }
            }
            let mut got = vec![f32::NAN; h as usize];
            let (mut st, mut ring) = (Iir::default(), [0.0f32; S2_RING as usize]);
            for k in 0..(h + S2_IIR_N as u32 - 1).div_ceil(S2_VCHUNK) {
                let now = core::array::from_fn(|j| {
                    let r = k * S2_VCHUNK + j as u32;
                    if r < h { col[r as usize] } else { 0.0 }
                });
                vchunk(&mut st, &mut ring, now, |j, v| {
                    let n = (k * S2_VCHUNK + j) as i32 - 4;
                    if n >= 0 && (n as u32) < h {
                        got[n as usize] = v;
                    }
                });
            }
            let same = want
                .iter()
                .zip(&got)
                .all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(same, "h {h}: {want:?} vs {got:?}");
        }
    }

    #[test]
    fn cbrt_bias_is_the_hosts() {
        assert_eq!(S2_CBRT_BIAS.to_bits(), S2_OPSIN_BIAS.cbrt().to_bits());
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
