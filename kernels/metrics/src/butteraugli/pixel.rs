//! One pixel of each Butteraugli stage, reading and writing the planes of a [`Level`]. The
//! GPU runs one thread per pixel (`kernels.rs`; the runs of the Gaussians and the AC
//! error's 4-pixel groups compute the same values), the CPU backend loops over rows; both
//! call these functions. Constants are libjxl's; the operation order is the `butteraugli`
//! crate's.

// libjxl's f64 digits, rounded to f32 where the reference rounds them.
#![allow(clippy::excessive_precision)]

use super::blur::{RUN, RUN_SAMPLES, blur5, gauss, gauss_run, run_inside, run_table};
use super::malta::{GROUP, malta_hf, malta_hf_group, malta_lf, malta_lf_group};
use super::{Level, Params, Taps, filter, plane};
use crate::color::{ColorSource, linear_rgb};
use gpumetrics_device::math::{fmaf, sqrtf};

// Opsin absorbance mix: rows of the matrix and the bias of each row (libjxl's f64
// constants, rounded to f32 as the reference does).
const MIX: [[f32; 4]; 3] = [
    [
        0.299_565_503_400_583_19,
        0.633_730_878_338_259_36,
        0.077_705_617_820_981_968,
        1.755_748_364_328_735_3,
    ],
    [
        0.221_586_911_045_747_74,
        0.693_913_880_441_161_42,
        0.098_731_358_842_2,
        1.755_748_364_328_735_3,
    ],
    [0.02, 0.02, 0.204_801_290_410_261_29, 12.226_454_707_163_354],
];
const MIN_01: f32 = 1.755_748_364_328_735_3;
const MIN_2: f32 = 12.226_454_707_163_354;

// Frequency separation.
const REMOVE_MF_RANGE: f32 = 0.29;
const ADD_MF_RANGE: f32 = 0.1;
const REMOVE_HF_RANGE: f32 = 1.5;
const ADD_HF_RANGE: f32 = 0.132;
const REMOVE_UHF_RANGE: f32 = 0.04;
const MAXCLAMP_HF: f32 = 28.469_180_692_2;
const MAXCLAMP_UHF: f32 = 5.191_752_946_47;
const MAXCLAMP_MUL: f32 = 0.724_216_146;
const MUL_Y_HF: f32 = 2.155;
const MUL_Y_UHF: f32 = 2.693_137_637_94;
const XMUL_LF_TO_VALS: f32 = 33.832_837_186_260;
const YMUL_LF_TO_VALS: f32 = 14.458_268_100_570;
const BMUL_LF_TO_VALS: f32 = 49.879_846_514_40;
const Y_TO_B_MUL_LF_TO_VALS: f32 = -0.362_267_051_518;
const SUPPRESS_XY: f32 = 46.0;
const SUPPRESS_S: f32 = 0.653_020_556_257;

// Difference weights: HF X, Y, B; MF X, Y, B; LF X, Y, B.
const WMUL: [f32; 9] = [
    400.0,
    1.508_157_031_18,
    0.0,
    2150.0,
    10.619_543_323_9,
    16.217_604_315_2,
    29.235_379_799_4,
    0.844_626_970_982,
    0.703_646_627_719,
];

// Masking.
const MASK_MUL: f32 = 6.194_240_804_39;
const MASK_BIAS: f32 = 12.610_505_941_97;
const MASK_TO_ERROR_MUL: f32 = 10.0;
const COMBINE_MULS: [f32; 3] = [2.5, 0.4, 0.4];
const GLOBAL_SCALE: f32 = 1.0 / (17.83 * 0.790_799_17);
/// mul, scaler, offset of the AC and DC masking curves.
const MASK_Y: [f32; 3] = [2.548_594_479_3, 0.451_936_922_203, 0.829_591_754_942];
const MASK_DC_Y: [f32; 3] = [0.505_054_525_019, 3.874_494_188_04, 0.200_255_785_22];

/// Weight of the half-resolution diffmap and libjxl's mixing value.
pub const SUBLEVEL_WEIGHT: f32 = 0.5;
const SUBLEVEL_MIXING: f32 = 0.3;

/// libjxl's `FastLog2f`: a (2,2) rational polynomial after reducing to [2/3, 4/3).
#[inline(always)]
pub fn fast_log2f(x: f32) -> f32 {
    let bits = x.to_bits() as i32;
    let exp = bits.wrapping_sub(0x3f2a_aaab) >> 23;
    let m = f32::from_bits((bits - (exp << 23)) as u32) - 1.0;
    let p =
        (7.424_587_332_782_056_6e-1 * m + 1.428_716_047_008_375_5) * m + -1.850_383_340_051_831e-6;
    let q =
        (1.740_934_300_336_685_3e-1 * m + 1.009_671_857_224_114_8) * m + 9.903_281_427_759_071_9e-1;
    p / q + exp as f32
}

/// Butteraugli's response to an opsin mix: a biased logarithm.
#[inline(always)]
pub fn gamma(v: f32) -> f32 {
    const MUL: f32 = 19.245_013_259_874_995 * (1.0 / core::f32::consts::LOG2_E);
    let v = if v > 0.0 { v } else { 0.0 };
    MUL * fast_log2f(v + 9.971_063_576_929_914_5) + -23.160_462_398_057_55
}

#[inline(always)]
fn mix(c: usize, r: f32, g: f32, b: f32) -> f32 {
    MIX[c][0] * r + MIX[c][1] * g + MIX[c][2] * b + MIX[c][3]
}

#[inline(always)]
fn max(a: f32, b: f32) -> f32 {
    if a > b { a } else { b }
}

#[inline(always)]
fn copysign(v: f32, sign: f32) -> f32 {
    f32::from_bits((v.to_bits() & 0x7fff_ffff) | (sign.to_bits() & 0x8000_0000))
}

#[inline(always)]
fn abs(v: f32) -> f32 {
    f32::from_bits(v.to_bits() & 0x7fff_ffff)
}

/// `|v| − range` towards zero, 0 inside the range.
#[inline(always)]
fn remove_range(v: f32, range: f32) -> f32 {
    copysign(max(abs(v) - range, 0.0), v)
}

/// `v` pushed away from zero by up to `range` (doubled inside the range).
#[inline(always)]
fn amplify_range(v: f32, range: f32) -> f32 {
    let a = abs(v);
    v + copysign(if a < range { a } else { range }, v)
}

/// Values beyond ±`limit` compressed by libjxl's factor.
#[inline(always)]
fn maximum_clamp(v: f32, limit: f32) -> f32 {
    let c = if v > limit {
        limit
    } else if v < -limit {
        -limit
    } else {
        v
    };
    fmaf(v - c, MAXCLAMP_MUL, c)
}

#[inline(always)]
unsafe fn at(lv: &Level, p: u32, x: u32, y: u32) -> *mut f32 {
    // SAFETY: callers pass a pixel of the level.
    unsafe { lv.plane(p).add((y * lv.width + x) as usize) }
}

/// Pixel (x, y) of linear RGB plane `p` ([`Level::rgb_plane`]).
#[inline(always)]
unsafe fn rgb_at(lv: &Level, p: u32, x: u32, y: u32) -> *mut f32 {
    // SAFETY: callers pass a pixel of the level.
    unsafe { lv.rgb_plane(p).add((y * lv.width + x) as usize) }
}

#[inline(always)]
unsafe fn get(lv: &Level, p: u32, x: u32, y: u32) -> f32 {
    // SAFETY: as `at`.
    unsafe { *at(lv, p, x, y) }
}

#[inline(always)]
unsafe fn put(lv: &Level, p: u32, x: u32, y: u32, v: f32) {
    // SAFETY: as `at`; every pixel is written by one thread.
    unsafe { *at(lv, p, x, y) = v }
}

/// Linear RGB of frame `img` at full resolution.
///
/// # Safety
/// `src` must describe a validated frame of the level's size; (x, y) inside the level.
#[inline(always)]
pub unsafe fn linearize(src: &ColorSource, lv: &Level, img: u32, x: u32, y: u32) {
    // SAFETY: the caller's contract.
    unsafe { put_rgb(lv, img, x, y, linear_rgb(src, x, y)) }
}

/// Stores the linear RGB of pixel (x, y) of frame `img` (the GPU's `linear_light`
/// computes it through `color_tile`).
///
/// # Safety
/// (x, y) inside the level.
#[inline(always)]
pub unsafe fn put_rgb(lv: &Level, img: u32, x: u32, y: u32, rgb: [f32; 3]) {
    // Unrolled: an iterator loop left `rgb` in local memory on the GPU.
    unroll!(c in [0 1 2] {
        // SAFETY: the caller's contract.
        unsafe { *rgb_at(lv, plane::rgb(img, c as u32), x, y) = rgb[c] };
    });
}

/// Linear RGB plane `p` of the half-resolution level `to` at (x, y): the mean of the 2×2
/// block of `from`'s linear RGB (of the pixels that exist, at odd sizes).
///
/// # Safety
/// `to` must be `from` halved (rounded up); (x, y) inside `to`.
#[inline(always)]
pub unsafe fn downsample(from: &Level, to: &Level, p: u32, x: u32, y: u32) {
    let (fx, fy) = (2 * x, 2 * y);
    let right = fx + 1 < from.width;
    let below = fy + 1 < from.height;
    // SAFETY: every read is inside `from`.
    let v = unsafe {
        let g = |x, y| *rgb_at(from, p, x, y);
        match (right, below) {
            (true, true) => (g(fx, fy) + g(fx + 1, fy) + g(fx, fy + 1) + g(fx + 1, fy + 1)) * 0.25,
            (false, true) => (g(fx, fy) + g(fx, fy + 1)) * 0.5,
            (true, false) => (g(fx, fy) + g(fx + 1, fy)) * 0.5,
            (false, false) => g(fx, fy),
        }
    };
    // SAFETY: (x, y) is inside `to`.
    unsafe { *rgb_at(to, p, x, y) = v }
}

/// Row pass of the opsin blur: plane `p` of linear RGB into scratch plane `p`.
///
/// # Safety
/// (x, y) inside the level; `p` < 6.
#[inline(always)]
pub unsafe fn blur5_row(lv: &Level, prm: &Params, p: u32, x: u32, y: u32) {
    // SAFETY: reads stay in row y of plane p.
    unsafe {
        let v = blur5(prm.blur5, x, lv.width, |i| {
            *rgb_at(lv, plane::rgb(0, p), i, y)
        });
        put(lv, plane::tmp(p), x, y, v);
    }
}

/// Column pass of the opsin blur, then opsin dynamics: XYB of image `img`.
///
/// # Safety
/// (x, y) inside the level; `img` < 2.
#[inline(always)]
pub unsafe fn opsin(lv: &Level, prm: &Params, img: u32, x: u32, y: u32) {
    let it = prm.intensity;
    let (mut blurred, mut rgb, mut cur) = ([0.0f32; 3], [0.0f32; 3], [0.0f32; 3]);
    // Unrolled: the arrays stay in registers on the GPU.
    unroll!(c in [0 1 2] {
        // SAFETY: reads stay in column x of the image's planes.
        unsafe {
            let tmp = plane::tmp(img * 3 + c as u32);
            blurred[c] = blur5(prm.blur5, y, lv.height, |j| get(lv, tmp, x, j)) * it;
            rgb[c] = *rgb_at(lv, plane::rgb(img, c as u32), x, y) * it;
        }
    });
    unroll!(c in [0 1 2] {
        let floor = if c == 2 { MIN_2 } else { MIN_01 };
        let pre = max(max(mix(c, blurred[0], blurred[1], blurred[2]), floor), 1e-4);
        let sensitivity = max(gamma(pre) / pre, 1e-4);
        cur[c] = max(mix(c, rgb[0], rgb[1], rgb[2]) * sensitivity, floor);
    });
    // SAFETY: (x, y) inside the level.
    unsafe {
        put(lv, plane::xyb(img, 0), x, y, cur[0] - cur[1]);
        put(lv, plane::xyb(img, 1), x, y, cur[0] + cur[1]);
        put(lv, plane::xyb(img, 2), x, y, cur[2]);
    }
}

/// Row pass of a Gaussian: plane `from` into plane `to`.
///
/// # Safety
/// `taps` valid; (x, y) inside the level.
#[inline(always)]
pub unsafe fn gauss_row(lv: &Level, taps: *const Taps, from: u32, to: u32, x: u32, y: u32) {
    // SAFETY: reads stay in row y of plane `from`.
    unsafe {
        let v = gauss(taps, x, lv.width, false, |i| get(lv, from, i, y));
        put(lv, to, x, y, v);
    }
}

/// Column pass of a Gaussian over scratch plane `k`.
///
/// # Safety
/// `taps` valid; (x, y) inside the level.
#[inline(always)]
pub unsafe fn gauss_col(lv: &Level, taps: *const Taps, k: u32, x: u32, y: u32) -> f32 {
    // SAFETY: reads stay in column x of the scratch plane.
    unsafe { gauss(taps, y, lv.height, true, |j| get(lv, plane::tmp(k), x, j)) }
}

/// [`gauss_col`] of the [`RUN`] rows from `y` of column x, for the GPU's run kernels: one
/// load per sample of the run and the weights as constants ([`gauss_run`], the same values
/// bit for bit) where the run is interior ([`run_inside`]) and `taps` has `half` = `H`,
/// else [`gauss_col`] per row (rows at or past the level's height give 0). The runs
/// within `H` of the top or bottom are whole warps here (a warp is 32 columns of the same
/// rows), so their per-row loops cost no divergence; a straight-line edge path
/// ([`gauss_run_edge`], as the row pass takes) made the kernels larger and LF's column pass
/// slower (115 → 155 µs at 1080p).
///
/// # Safety
/// `taps` valid; x inside the level, y below its height.
#[inline(always)]
pub unsafe fn gauss_col_run<const H: usize>(
    lv: &Level,
    taps: *const Taps,
    k: u32,
    x: u32,
    y: u32,
) -> [f32; RUN] {
    // SAFETY: the caller's contract; an interior run reads rows y − H .. y + RUN + H,
    // all inside the level.
    unsafe {
        if (*taps).half as usize == H && run_inside(y, lv.height, H as u32) {
            let col = at(lv, plane::tmp(k), x, y - H as u32) as *const f32;
            let mut v = [0.0f32; RUN_SAMPLES];
            // An index loop of constant length: unrolled, `v` in registers.
            #[allow(clippy::needless_range_loop)]
            for m in 0..RUN + 2 * H {
                v[m] = *col.add(m * lv.width as usize);
            }
            gauss_run::<H, true>(&v, &const { run_table::<H>(true) })
        } else {
            const _: () = assert!(RUN == 4, "the unroll! list below");
            let mut out = [0.0f32; RUN];
            unroll!(j in [0 1 2 3] {
                if y + (j as u32) < lv.height {
                    out[j] = gauss_col(lv, taps, k, x, y + j as u32);
                }
            });
            out
        }
    }
}

/// LF = the σ-7.16 blur of XYB (column pass of scratch planes 3·img..), converted to
/// "vals"; MF = XYB − LF.
///
/// # Safety
/// `taps` points to the [`filter::COUNT`] filters; (x, y) inside the level.
#[inline(always)]
pub unsafe fn lf_col(lv: &Level, taps: *const Taps, img: u32, x: u32, y: u32) {
    // SAFETY: the caller's contract.
    unsafe {
        let t = taps.add(filter::LF as usize);
        let lf = core::array::from_fn(|c| gauss_col(lv, t, img * 3 + c as u32, x, y));
        lf_out(lv, img, x, y, lf);
    }
}

/// [`lf_col`] after its column blurs: `lf` the blurred XYB of (x, y).
///
/// # Safety
/// (x, y) inside the level.
#[inline(always)]
pub unsafe fn lf_out(lv: &Level, img: u32, x: u32, y: u32, lf: [f32; 3]) {
    // SAFETY: the caller's contract.
    unsafe {
        for (c, lf) in lf.iter().enumerate() {
            let c = c as u32;
            put(
                lv,
                plane::mf(img, c),
                x,
                y,
                get(lv, plane::xyb(img, c), x, y) - *lf,
            );
        }
        let b = fmaf(Y_TO_B_MUL_LF_TO_VALS, lf[1], lf[2]) * BMUL_LF_TO_VALS;
        put(lv, plane::lf(img, 0), x, y, lf[0] * XMUL_LF_TO_VALS);
        put(lv, plane::lf(img, 1), x, y, lf[1] * YMUL_LF_TO_VALS);
        put(lv, plane::lf(img, 2), x, y, b);
    }
}

/// HF = MF − its σ-3.22 blur (X suppressed where Y is strong); MF becomes the blur, with
/// X's small values removed and Y's amplified (B unshaped).
///
/// # Safety
/// As [`lf_col`].
#[inline(always)]
pub unsafe fn mf_col(lv: &Level, taps: *const Taps, img: u32, x: u32, y: u32) {
    // SAFETY: the caller's contract.
    unsafe {
        let t = taps.add(filter::HF as usize);
        let blurred = core::array::from_fn(|c| gauss_col(lv, t, img * 3 + c as u32, x, y));
        mf_out(lv, img, x, y, blurred);
    }
}

/// [`mf_col`] after its column blurs: `blurred` the blurred MF of (x, y).
///
/// # Safety
/// (x, y) inside the level.
#[inline(always)]
pub unsafe fn mf_out(lv: &Level, img: u32, x: u32, y: u32, blurred: [f32; 3]) {
    // SAFETY: the caller's contract.
    unsafe {
        let hf_x = get(lv, plane::mf(img, 0), x, y) - blurred[0];
        let hf_y = get(lv, plane::mf(img, 1), x, y) - blurred[1];
        let suppress = fmaf(
            SUPPRESS_XY / fmaf(hf_y, hf_y, SUPPRESS_XY),
            1.0 - SUPPRESS_S,
            SUPPRESS_S,
        );
        put(lv, plane::hf(img, 0), x, y, hf_x * suppress);
        put(lv, plane::hf(img, 1), x, y, hf_y);
        put(
            lv,
            plane::mf(img, 0),
            x,
            y,
            remove_range(blurred[0], REMOVE_MF_RANGE),
        );
        put(
            lv,
            plane::mf(img, 1),
            x,
            y,
            amplify_range(blurred[1], ADD_MF_RANGE),
        );
        put(lv, plane::mf(img, 2), x, y, blurred[2]);
    }
}

/// UHF = HF − its σ-1.56 blur, HF becomes the blur (both shaped per channel); then the
/// image's HF+UHF activity, the input of the masking blur.
///
/// # Safety
/// As [`lf_col`].
#[inline(always)]
pub unsafe fn uhf_col(lv: &Level, taps: *const Taps, img: u32, x: u32, y: u32) {
    // SAFETY: the caller's contract.
    unsafe {
        let t = taps.add(filter::UHF as usize);
        let bx = gauss_col(lv, t, img * 2, x, y);
        let by = gauss_col(lv, t, img * 2 + 1, x, y);
        uhf_out(lv, img, x, y, [bx, by]);
    }
}

/// [`uhf_col`] after its column blurs: the blurred HF of X and Y at (x, y).
///
/// # Safety
/// (x, y) inside the level.
#[inline(always)]
pub unsafe fn uhf_out(lv: &Level, img: u32, x: u32, y: u32, [bx, by]: [f32; 2]) {
    // SAFETY: the caller's contract.
    unsafe {
        let uhf_x = remove_range(get(lv, plane::hf(img, 0), x, y) - bx, REMOVE_UHF_RANGE);
        let hf_x = remove_range(bx, REMOVE_HF_RANGE);
        let hf_clamped = maximum_clamp(by, MAXCLAMP_HF);
        let uhf_y =
            maximum_clamp(get(lv, plane::hf(img, 1), x, y) - hf_clamped, MAXCLAMP_UHF) * MUL_Y_UHF;
        let hf_y = amplify_range(hf_clamped * MUL_Y_HF, ADD_HF_RANGE);
        put(lv, plane::uhf(img, 0), x, y, uhf_x);
        put(lv, plane::uhf(img, 1), x, y, uhf_y);
        put(lv, plane::hf(img, 0), x, y, hf_x);
        put(lv, plane::hf(img, 1), x, y, hf_y);
        let xdiff = (uhf_x + hf_x) * COMBINE_MULS[0];
        let ydiff = fmaf(uhf_y, COMBINE_MULS[1], hf_y * COMBINE_MULS[2]);
        let combined = sqrtf(fmaf(xdiff, xdiff, ydiff * ydiff));
        let bias = MASK_MUL * MASK_BIAS;
        put(
            lv,
            plane::mask_in(img),
            x,
            y,
            sqrtf(fmaf(MASK_MUL, combined, bias)) - sqrtf(bias),
        );
    }
}

/// Column pass of the masking blur of both activities: the reference's (to erode) and the
/// difference of the two.
///
/// # Safety
/// As [`lf_col`].
#[inline(always)]
pub unsafe fn mask_col(lv: &Level, taps: *const Taps, x: u32, y: u32) {
    // SAFETY: the caller's contract.
    unsafe {
        let t = taps.add(filter::MASK as usize);
        let b0 = gauss_col(lv, t, 0, x, y);
        let b1 = gauss_col(lv, t, 1, x, y);
        mask_out(lv, x, y, [b0, b1]);
    }
}

/// [`mask_col`] after its column blurs: the blurred activities of (x, y).
///
/// # Safety
/// (x, y) inside the level.
#[inline(always)]
pub unsafe fn mask_out(lv: &Level, x: u32, y: u32, [b0, b1]: [f32; 2]) {
    // SAFETY: the caller's contract.
    unsafe {
        put(lv, plane::MASK_BLURRED, x, y, b0);
        put(lv, plane::MASK_DIFF, x, y, b0 - b1);
    }
}

/// The Malta inputs at (x, y): for each band and channel, the difference scaled by the
/// local amplitude, with an extra penalty when the distorted value leaves
/// [0.55, 1.05]× the reference's.
///
/// # Safety
/// (x, y) inside the level, whose padded planes exist.
#[inline(always)]
pub unsafe fn malta_inputs(lv: &Level, prm: &Params, x: u32, y: u32) {
    let stride = lv.padded_stride();
    for b in 0..3u32 {
        for c in 0..2u32 {
            let (p0, p1) = match b {
                0 => (plane::uhf(0, c), plane::uhf(1, c)),
                1 => (plane::hf(0, c), plane::hf(1, c)),
                _ => (plane::mf(0, c), plane::mf(1, c)),
            };
            let [gt, lt, norm1] = prm.malta[plane::malta(b, c) as usize];
            // SAFETY: the caller's contract.
            unsafe {
                let (v0, v1) = (get(lv, p0, x, y), get(lv, p1, x, y));
                let inv_norm = 1.0 / (norm1 + 0.5 * (abs(v0) + abs(v1)));
                let scaled = gt * inv_norm * (v0 - v1);
                let fabs0 = abs(v0);
                let sign = copysign(1.0, v0);
                let sv1 = v1 * sign;
                let below = max(0.55 * fabs0 - sv1, 0.0);
                let above = max(sv1 - 1.05 * fabs0, 0.0);
                let impact = lt * inv_norm * (below - above);
                let out = lv.padded_origin(plane::malta(b, c));
                *out.add((y * stride + x) as usize) = scaled + sign * impact;
            }
        }
    }
}

/// The unmasked AC error of channel `c` (X or Y): the three Malta filters, asymmetric L2
/// of HF and L2 of MF. The CPU backend's; the GPU computes [`ac_error_group`].
///
/// # Safety
/// As [`malta_inputs`], after it ran for every pixel.
#[inline(always)]
pub unsafe fn ac_error(lv: &Level, prm: &Params, c: u32, x: u32, y: u32) {
    let stride = lv.padded_stride();
    // SAFETY: the caller's contract; the padding keeps the filters inside the planes.
    unsafe {
        let centre = |b: u32| {
            lv.padded_origin(plane::malta(b, c))
                .add((y * stride + x) as usize) as *const f32
        };
        let uhf = malta_hf(centre(0), stride);
        let hf = malta_lf(centre(1), stride);
        let mf = malta_lf(centre(2), stride);
        ac_error_out(lv, prm, c, x, y, [uhf, hf, mf]);
    }
}

/// [`ac_error`] of the [`GROUP`] pixels `x0 .. x0 + 4` of row `y` (those inside the level):
/// the GPU's, one group per thread. One pixel at a time the kernel was bound by its loads
/// (296 scalar loads per pixel and channel, 292 of them the Malta filters' samples); a
/// group reads each band's window as aligned 16-byte vectors and filters its pixels with
/// the per-pixel sums, so the values are [`ac_error`]'s bit for bit. One band at a time,
/// each swept a row at a time ([`malta_hf_group`]): a whole window in registers took 255
/// registers per thread.
///
/// # Safety
/// As [`ac_error`], with `x0` a multiple of [`GROUP`] below the level's width and the
/// padded planes 16-byte aligned (`Level::padded`): the window of the last group of a
/// row, up to 7 columns past `x0`, stays in its padded row ([`super::padded_stride`]).
#[inline(always)]
pub unsafe fn ac_error_group(lv: &Level, prm: &Params, c: u32, x0: u32, y: u32) {
    let stride = lv.padded_stride();
    // SAFETY: the caller's contract; the padding keeps the windows inside the planes.
    unsafe {
        let first = |b: u32| {
            lv.padded_origin(plane::malta(b, c))
                .add((y * stride + x0) as usize) as *const f32
        };
        let uhf = malta_hf_group(first(0), stride);
        let hf = malta_lf_group(first(1), stride);
        let mf = malta_lf_group(first(2), stride);
        const _: () = assert!(GROUP == 4, "the unroll! list below");
        unroll!(j in [0 1 2 3] {
            let x = x0 + j as u32;
            if x < lv.width {
                ac_error_out(lv, prm, c, x, y, [uhf[j], hf[j], mf[j]]);
            }
        });
    }
}

/// The rest of [`ac_error`] from the pixel's three Malta values (UHF, HF, MF).
///
/// # Safety
/// (x, y) inside the level.
#[inline(always)]
unsafe fn ac_error_out(lv: &Level, prm: &Params, c: u32, x: u32, y: u32, [uhf, hf, mf]: [f32; 3]) {
    // SAFETY: the caller's contract.
    unsafe {
        let mut d = uhf + (hf + mf);
        // Asymmetric L2 of HF: blur (reference larger) weighs w·hf_asymmetry, ringing w/….
        let w = WMUL[c as usize];
        let (w_gt, w_lt) = (w * prm.hf_asymmetry * 0.8, w / prm.hf_asymmetry * 0.8);
        let (v0, v1) = (
            get(lv, plane::hf(0, c), x, y),
            get(lv, plane::hf(1, c), x, y),
        );
        let diff = v0 - v1;
        let total = fmaf(diff * diff, w_gt, d);
        let fabs0 = abs(v0);
        let sv1 = v1 * copysign(1.0, v0);
        let v = max(0.4 * fabs0 - sv1, 0.0) + max(sv1 - fabs0, 0.0);
        d = fmaf(v * v, w_lt, total);
        let diff = get(lv, plane::mf(0, c), x, y) - get(lv, plane::mf(1, c), x, y);
        d = fmaf(diff * diff, WMUL[3 + c as usize], d);
        put(lv, plane::ac(c), x, y, d);
    }
}

/// libjxl's `FuzzyErosion` at (x, y): 0.45, 0.3 and 0.25 of the three smallest of the
/// pixel, twice the pixel (twice), and its neighbours 3 pixels away (8 directions).
#[inline(always)]
unsafe fn erode(lv: &Level, x: u32, y: u32) -> f32 {
    const K: u32 = 3;
    let p = plane::MASK_BLURRED;
    // SAFETY: every read is inside the level.
    let g = |x, y| unsafe { get(lv, p, x, y) };
    let c = g(x, y);
    let mut m = [c, 2.0 * c, 2.0 * c];
    let mut store = |v: f32| {
        if v < m[2] {
            if v < m[0] {
                m = [v, m[0], m[1]];
            } else if v < m[1] {
                m = [m[0], v, m[1]];
            } else {
                m[2] = v;
            }
        }
    };
    let (up, down) = (y >= K, y + K < lv.height);
    if x >= K {
        store(g(x - K, y));
        if up {
            store(g(x - K, y - K));
        }
        if down {
            store(g(x - K, y + K));
        }
    }
    if x + K < lv.width {
        store(g(x + K, y));
        if up {
            store(g(x + K, y - K));
        }
        if down {
            store(g(x + K, y + K));
        }
    }
    if up {
        store(g(x, y - K));
    }
    if down {
        store(g(x, y + K));
    }
    0.45 * m[0] + 0.3 * m[1] + 0.25 * m[2]
}

/// The level's diffmap at (x, y): √(masked DC error + masked AC error).
///
/// # Safety
/// (x, y) inside the level, after [`mask_col`] and [`ac_error`] ran for every pixel.
#[inline(always)]
pub unsafe fn diffmap(lv: &Level, prm: &Params, x: u32, y: u32) {
    // SAFETY: the caller's contract.
    unsafe {
        let mask = erode(lv, x, y);
        let masking = |k: [f32; 3]| {
            let r = fmaf(GLOBAL_SCALE, k[0] / fmaf(k[1], mask, k[2]), GLOBAL_SCALE);
            r * r
        };
        let (ac_mask, dc_mask) = (masking(MASK_Y), masking(MASK_DC_Y));
        let d = |c| get(lv, plane::lf(0, c), x, y) - get(lv, plane::lf(1, c), x, y);
        let (d0, d1, d2) = (d(0), d(1), d(2));
        let xmul = prm.xmul;
        let dc = fmaf(
            d0 * d0 * WMUL[6] * xmul,
            dc_mask,
            fmaf(d1 * d1 * WMUL[7], dc_mask, d2 * d2 * WMUL[8] * dc_mask),
        );
        let md = get(lv, plane::MASK_DIFF, x, y);
        let ac_y = fmaf(md * md, MASK_TO_ERROR_MUL, get(lv, plane::ac(1), x, y));
        let db = get(lv, plane::mf(0, 2), x, y) - get(lv, plane::mf(1, 2), x, y);
        let ac_b = db * db * WMUL[5];
        let ac = fmaf(
            get(lv, plane::ac(0), x, y) * xmul,
            ac_mask,
            fmaf(ac_y, ac_mask, ac_b * ac_mask),
        );
        put(lv, plane::DIFFMAP, x, y, sqrtf(dc + ac));
    }
}

/// The final diffmap at (x, y) of the full-resolution level: its own value, mixed with the
/// half-resolution level's (when there is one) as libjxl's `AddSupersampled2x`.
///
/// # Safety
/// (x, y) inside `full`; `half` (if not null) is its half-resolution level.
#[inline(always)]
pub unsafe fn final_value(full: &Level, half: Option<&Level>, x: u32, y: u32) -> f32 {
    // SAFETY: the caller's contract.
    unsafe {
        let v = get(full, plane::DIFFMAP, x, y);
        match half {
            Some(h) => {
                let blend = 1.0 - SUBLEVEL_MIXING * SUBLEVEL_WEIGHT;
                fmaf(
                    v,
                    blend,
                    SUBLEVEL_WEIGHT * get(h, plane::DIFFMAP, x / 2, y / 2),
                )
            }
            None => v,
        }
    }
}

/// Adds a diffmap value to the running maximum and the sums of its 3rd, 6th and 12th
/// powers (in f64, as libjxl sums large images).
#[inline(always)]
pub fn accumulate(acc: &mut [f64; 4], v: f32) {
    if v as f64 > acc[0] {
        acc[0] = v as f64;
    }
    let d = v as f64;
    let d3 = d * d * d;
    let d6 = d3 * d3;
    acc[1] += d3;
    acc[2] += d6;
    acc[3] += d6 * d6;
}

#[cfg(test)]
mod tests {
    use super::super::{padded_len, padded_stride};
    use super::*;
    use std::vec;
    use std::vec::Vec;

    /// 16-byte aligned storage, as the engine's level buffers are on the GPU.
    #[repr(C, align(16))]
    #[derive(Clone, Copy)]
    struct Chunk([f32; 4]);

    /// xorshift64*: values of either sign, magnitudes 2⁻¹⁰..2¹⁰ and a few zeros of both
    /// signs, so that any other order of additions shows in the bits.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        fn value(&mut self) -> f32 {
            let r = self.next();
            let sign = if r & 1 == 0 { 1.0 } else { -1.0 };
            if (r >> 4).is_multiple_of(16) {
                return sign * 0.0;
            }
            let mantissa = 1.0 + ((r >> 8) & 0xff_ffff) as f32 / (1u32 << 24) as f32;
            let exp = ((r >> 40) % 21) as i32 - 10;
            sign * mantissa * 2.0f32.powi(exp)
        }
    }

    fn bits(base: u64, len: usize) -> Vec<u32> {
        // SAFETY: the callers' buffers hold `len` values from `base`.
        let all = unsafe { core::slice::from_raw_parts(base as *const f32, len) };
        all.iter().map(|v| v.to_bits()).collect()
    }

    /// The GPU's 4-pixel groups give the per-pixel AC error bit for bit on random Malta
    /// inputs (from several seeds: the group filters' sums must take every line's samples
    /// in the same order), write only their pixels inside the level (and nothing else),
    /// and read only inside the padded planes.
    #[test]
    fn ac_error_group_matches_per_pixel() {
        for seed in [
            0x9e37_79b9_7f4a_7c15,
            0x2545_f491_4f6c_dd1d,
            0xd1b5_4a32_d192_ed03,
        ] {
            ac_error_group_matches_per_pixel_from(Rng(seed));
        }
    }

    fn ac_error_group_matches_per_pixel_from(mut rng: Rng) {
        let prm = Params {
            hf_asymmetry: 0.8,
            ..Params::default()
        };
        for w in [1u32, 2, 3, 4, 5, 8, 31, 33, 64 + 3] {
            // The last group's window, padded columns x0 .. x0 + 12, lies in its row.
            assert!((w - 1) / 4 * 4 + 12 <= padded_stride(w), "{w}");
            assert!(padded_stride(w).is_multiple_of(4));
            for h in [1u32, 2, 9, 10] {
                let plane_len = (w * h).next_multiple_of(64);
                let pad_len = padded_len(w, h);
                let planes = (plane::COUNT * plane_len) as usize;
                let total = planes + (plane::PADDED_COUNT * pad_len) as usize;
                let mut buf = vec![Chunk([0.0; 4]); total.div_ceil(4)];
                let base = buf.as_mut_ptr() as u64;
                let lv = Level {
                    base,
                    padded: base + planes as u64 * 4,
                    width: w,
                    height: h,
                    plane_len,
                    padded_len: pad_len,
                    ..Level::default()
                };
                let stride = lv.padded_stride();
                // SAFETY (every `unsafe` below): the buffer holds the level's planes.
                for i in 0..planes {
                    unsafe { *(base as *mut f32).add(i) = rng.value() };
                }
                for p in 0..plane::PADDED_COUNT {
                    for y in 0..h {
                        for x in 0..w {
                            let at = unsafe { lv.padded_origin(p).add((y * stride + x) as usize) };
                            unsafe { *at = rng.value() };
                        }
                    }
                }
                for c in 0..2 {
                    for y in 0..h {
                        for x in 0..w {
                            unsafe { ac_error(&lv, &prm, c, x, y) };
                        }
                    }
                    let out = (plane::ac(c) * plane_len) as usize;
                    let expected = bits(base + out as u64 * 4, (w * h) as usize);
                    for i in 0..plane_len as usize {
                        unsafe { *(base as *mut f32).add(out + i) = f32::from_bits(0x7fc0_dead) };
                    }
                    let before = bits(base, total);
                    // Last row and group first: a write past a row's end would land on
                    // pixels not yet written, or past the plane's pixels.
                    for y in (0..h).rev() {
                        for x0 in (0..w).step_by(GROUP).rev() {
                            unsafe { ac_error_group(&lv, &prm, c, x0, y) };
                        }
                    }
                    let after = bits(base, total);
                    for (i, (&a, &b)) in after.iter().zip(&before).enumerate() {
                        let want = if (out..out + (w * h) as usize).contains(&i) {
                            expected[i - out]
                        } else {
                            b
                        };
                        assert_eq!(
                            a, want,
                            "{w}×{h}, channel {c}, value {i} ({out} is pixel 0)"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn fast_log2_is_close() {
        for x in [0.5f32, 1.0, 2.0, 9.97, 100.0, 12345.0] {
            assert!((fast_log2f(x) - x.log2()).abs() < 1e-5, "{x}");
        }
    }

    #[test]
    fn range_shaping() {
        assert_eq!(remove_range(1.0, 0.29), 1.0 - 0.29);
        assert_eq!(remove_range(-0.2, 0.29), -0.0);
        assert_eq!(amplify_range(0.05, 0.1), 0.1);
        assert_eq!(amplify_range(-1.0, 0.1), -1.1);
        assert_eq!(maximum_clamp(3.0, 5.0), 3.0);
        assert!((maximum_clamp(15.0, 5.0) - (5.0 + 10.0 * MAXCLAMP_MUL)).abs() < 1e-6);
        assert!((maximum_clamp(-15.0, 5.0) + (5.0 + 10.0 * MAXCLAMP_MUL)).abs() < 1e-6);
    }
}
