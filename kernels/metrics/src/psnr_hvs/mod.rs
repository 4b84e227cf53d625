//! PSNR-HVS (Xiph's, as libvmaf 3.2.0's `psnr_hvs` feature computes it): per plane, 8×8
//! blocks every 7 samples, each compared in the frequency domain of Daala's integer DCT,
//! with the differences below a contrast-masking threshold dropped and the rest weighted by
//! a contrast sensitivity table. The per-block math here is the only copy: the CPU backend
//! calls [`block_terms`] and [`block_contribution`] on host pointers, the kernels
//! (`kernels.rs`) call them on device pointers.
//!
//! Precision is libvmaf's: the block statistics, the masking and each block's 64 error
//! terms are single-precision operations in the order libvmaf does them, so each term is
//! the same `f32`. libvmaf then adds every term of a plane, one after the other, into one
//! `f32` sum; at 1080p that sum drifts from the exact one by about 2e-4 (1e-3 dB). A
//! sequential sum cannot be split across threads, but its drift can be reproduced: while
//! the running sum stays within one binade, adding `t` to it adds `t` rounded to that
//! binade's spacing, whatever the sum's exact value. So each term is rounded to the spacing
//! at the exact (f64) running sum after it ([`f32_increment`]), which needs only that sum:
//! a prefix over the blocks (on the GPU, a scan between two passes). The result differs from libvmaf's
//! sum only where the two sums straddle a power of two, by a few spacings (1e-6 dB on the
//! reference clips, against 1e-3 dB for an exact sum).

use crate::channel::{Channel, ChannelPair, MAX_CHANNELS, load, rescale};
use gpumetrics_device::math::sqrt;

/// Samples on each side of a block.
pub const SIDE: u32 = 8;
/// Samples between the origins of neighbouring blocks: blocks overlap by one row and one
/// column.
pub const STEP: u32 = 7;
/// Coefficients (and error terms) of a block.
pub const COEFFS: usize = 64;
/// Blocks per thread block of the kernels: one thread per block.
pub const TILE: u32 = 64;
/// Warps per thread block: one partial sum each in the reductions.
pub const WARPS: usize = 2;
/// Threads of `psnr_hvs_scan`'s one thread block per plane, each summing a run of tiles.
pub const SCAN_THREADS: u32 = 1024;
/// Warps of that thread block.
pub const SCAN_WARPS: usize = 32;
const _: () = assert!(TILE as usize == 32 * WARPS && SCAN_THREADS as usize == 32 * SCAN_WARPS);

/// `$body` once per coefficient index `$k` (0..64), as straight-line code with `$k` a
/// constant: the block's arrays then stay in registers on the GPU (a rolled loop over them
/// puts them in local memory).
macro_rules! each_coeff {
    ($k:ident $body:block) => {
        unroll!($k in [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63] $body)
    };
}

/// `$body` once per row or column index `$i` (0..8), as [`each_coeff`] does.
macro_rules! each_of_8 {
    ($i:ident $body:block) => {
        unroll!($i in [0 1 2 3 4 5 6 7] $body)
    };
}

mod kernels;

/// Blocks along a side of `len` samples: one at every multiple of [`STEP`] that leaves room
/// for [`SIDE`] samples (none below 8).
pub const fn blocks_along(len: u32) -> u32 {
    if len < SIDE {
        0
    } else {
        (len - SIDE) / STEP + 1
    }
}

/// Thread blocks of the kernels for a plane of `blocks` blocks.
pub const fn tiles(blocks: u32) -> u32 {
    blocks.div_ceil(TILE)
}

/// One plane of a pair and where its intermediate values go on the device.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HvsPlane {
    /// The plane's samples; `width` and `height` are the plane's size as libvmaf has it
    /// (chroma sides rounded down).
    pub pair: ChannelPair,
    /// Blocks per row of blocks, and in all.
    pub blocks_x: u32,
    pub blocks: u32,
    /// Address of the plane's error terms: term `k` of block `b` at `k · blocks + b`.
    pub terms: u64,
    /// Address of the sums of the terms per thread block ([`tiles`] values, f64).
    pub tile_sums: u64,
    /// Which table weighs the plane: 0 luma, 1 Cb, 2 Cr ([`WEIGHTS`]).
    pub table: u32,
    pub _pad: u32,
}

/// The planes of a pair, measured in one launch (grid.z = plane).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HvsPlanes {
    pub planes: [HvsPlane; MAX_CHANNELS],
    pub count: u32,
    pub _pad: u32,
}

/// A plane's weights per coefficient (row-major: vertical frequency, then horizontal).
pub struct Weights {
    /// The contrast sensitivity function: the error of a coefficient is multiplied by it.
    pub csf: [f32; COEFFS],
    /// The masking weights: (0.3885746225901003 · csf)², rounded to f32 (Ponomarenko et
    /// al.'s table, as Xiph derived it from the CSF).
    pub mask: [f32; COEFFS],
}

/// The tables as decimals (libvmaf keeps them as C `float`s initialised from these
/// doubles: rounding through f64 to f32 gives its values, which a direct decimal-to-f32
/// parse could miss by an ulp).
#[rustfmt::skip]
const CSF_Y: [[f64; 8]; 8] = [
    [1.6193873005, 2.2901594831, 2.08509755623, 1.48366094411, 1.00227514334, 0.678296995242, 0.466224900598, 0.3265091542],
    [2.2901594831, 1.94321815382, 2.04793073064, 1.68731108984, 1.2305666963, 0.868920337363, 0.61280991668, 0.436405793551],
    [2.08509755623, 2.04793073064, 1.34329019223, 1.09205635862, 0.875748795257, 0.670882927016, 0.501731932449, 0.372504254596],
    [1.48366094411, 1.68731108984, 1.09205635862, 0.772819797575, 0.605636379554, 0.48309405692, 0.380429446972, 0.295774038565],
    [1.00227514334, 1.2305666963, 0.875748795257, 0.605636379554, 0.448996256676, 0.352889268808, 0.283006984131, 0.226951348204],
    [0.678296995242, 0.868920337363, 0.670882927016, 0.48309405692, 0.352889268808, 0.27032073436, 0.215017739696, 0.17408067321],
    [0.466224900598, 0.61280991668, 0.501731932449, 0.380429446972, 0.283006984131, 0.215017739696, 0.168869545842, 0.136153931001],
    [0.3265091542, 0.436405793551, 0.372504254596, 0.295774038565, 0.226951348204, 0.17408067321, 0.136153931001, 0.109083846276],
];
#[rustfmt::skip]
const CSF_CB: [[f64; 8]; 8] = [
    [1.91113096927, 2.46074210438, 1.18284184739, 1.14982565193, 1.05017074788, 0.898018824055, 0.74725392039, 0.615105596242],
    [2.46074210438, 1.58529308355, 1.21363250036, 1.38190029285, 1.33100189972, 1.17428548929, 0.996404342439, 0.830890433625],
    [1.18284184739, 1.21363250036, 0.978712413627, 1.02624506078, 1.03145147362, 0.960060382087, 0.849823426169, 0.731221236837],
    [1.14982565193, 1.38190029285, 1.02624506078, 0.861317501629, 0.801821139099, 0.751437590932, 0.685398513368, 0.608694761374],
    [1.05017074788, 1.33100189972, 1.03145147362, 0.801821139099, 0.676555426187, 0.605503172737, 0.55002013668, 0.495804539034],
    [0.898018824055, 1.17428548929, 0.960060382087, 0.751437590932, 0.605503172737, 0.514674450957, 0.454353482512, 0.407050308965],
    [0.74725392039, 0.996404342439, 0.849823426169, 0.685398513368, 0.55002013668, 0.454353482512, 0.389234902883, 0.342353999733],
    [0.615105596242, 0.830890433625, 0.731221236837, 0.608694761374, 0.495804539034, 0.407050308965, 0.342353999733, 0.295530605237],
];
#[rustfmt::skip]
const CSF_CR: [[f64; 8]; 8] = [
    [2.03871978502, 2.62502345193, 1.26180942886, 1.11019789803, 1.01397751469, 0.867069376285, 0.721500455585, 0.593906509971],
    [2.62502345193, 1.69112867013, 1.17180569821, 1.3342742857, 1.28513006198, 1.13381474809, 0.962064122248, 0.802254508198],
    [1.26180942886, 1.17180569821, 0.944981930573, 0.990876405848, 0.995903384143, 0.926972725286, 0.820534991409, 0.706020324706],
    [1.11019789803, 1.3342742857, 0.990876405848, 0.831632933426, 0.77418706195, 0.725539939514, 0.661776842059, 0.587716619023],
    [1.01397751469, 1.28513006198, 0.995903384143, 0.77418706195, 0.653238524286, 0.584635025748, 0.531064164893, 0.478717061273],
    [0.867069376285, 1.13381474809, 0.926972725286, 0.725539939514, 0.584635025748, 0.496936637883, 0.438694579826, 0.393021669543],
    [0.721500455585, 0.962064122248, 0.820534991409, 0.661776842059, 0.531064164893, 0.438694579826, 0.375820256136, 0.330555063063],
    [0.593906509971, 0.802254508198, 0.706020324706, 0.587716619023, 0.478717061273, 0.393021669543, 0.330555063063, 0.285345396658],
];

/// The factor from the CSF to the masking weights.
const MASK_SCALE: f64 = 0.3885746225901003;

const fn weights(csf: &[[f64; 8]; 8]) -> Weights {
    let mut w = Weights {
        csf: [0.0; COEFFS],
        mask: [0.0; COEFFS],
    };
    let mut k = 0;
    while k < COEFFS {
        let c = csf[k / 8][k % 8] as f32;
        // The product is formed in f64 from the f32 value, then rounded once.
        let m = c as f64 * MASK_SCALE;
        w.csf[k] = c;
        w.mask[k] = (m * m) as f32;
        k += 1;
    }
    w
}

/// The weights of the luma, Cb and Cr planes (libvmaf weighs 4:4:4 chroma with its 4:2:0
/// tables too).
pub const WEIGHTS: [Weights; MAX_CHANNELS] = [weights(&CSF_Y), weights(&CSF_CB), weights(&CSF_CR)];

/// `a / 2` rounded toward zero: the DCT's halving butterflies, which keep it symmetric
/// around zero.
#[inline(always)]
fn half(a: i32) -> i32 {
    a.wrapping_add((a as u32 >> 31) as i32) >> 1
}

/// `a · num / 2^shift`, rounded half up: one lifting step's rotation.
#[inline(always)]
fn lift(a: i32, num: i32, shift: u32) -> i32 {
    a.wrapping_mul(num).wrapping_add(1 << (shift - 1)) >> shift
}

/// Daala's 8-point integer DCT-II (`od_bin_fdct8`, orthonormal up to rounding): butterflies
/// and lifting rotations, in 32-bit integers with Daala's roundings, so that every
/// coefficient is libvmaf's.
#[inline(always)]
pub fn fdct8(x: [i32; 8]) -> [i32; 8] {
    // Inputs paired end to end (0 with 7, 1 with 6, ...): sums stay in the even half,
    // differences go to the odd half.
    let (mut s0, mut d0) = (x[0], x[7]);
    let (mut s1, mut d1) = (x[1], x[6]);
    let (mut s2, mut d2) = (x[2], x[5]);
    let (mut s3, mut d3) = (x[3], x[4]);
    d0 = s0.wrapping_sub(d0);
    let d0_half = half(d0);
    s0 = s0.wrapping_sub(d0_half);
    s1 = s1.wrapping_add(d1);
    let s1_half = half(s1);
    d1 = d1.wrapping_sub(s1_half);
    d2 = s2.wrapping_sub(d2);
    s2 = s2.wrapping_sub(half(d2));
    s3 = s3.wrapping_add(d3);
    let s3_half = half(s3);
    d3 = s3_half.wrapping_sub(d3);
    // The even half: a 4-point DCT of s0..s3.
    s0 = s0.wrapping_add(s3_half);
    s3 = s0.wrapping_sub(s3);
    s2 = s1_half.wrapping_sub(s2);
    s1 = s2.wrapping_sub(s1);
    // Its 2-point DCT (a rotation by π/4 in three lifts) ...
    s0 = s0.wrapping_sub(lift(s1, 13573, 15));
    s1 = s1.wrapping_add(lift(s0, 11585, 14));
    s0 = s0.wrapping_sub(lift(s1, 13573, 15));
    // ... and its 2-point DST-IV (a rotation by 3π/8).
    s3 = s3.wrapping_sub(lift(s2, 21895, 15));
    s2 = s2.wrapping_add(lift(s3, 15137, 14));
    s3 = s3.wrapping_sub(lift(s2, 21895, 15));
    // The odd half: a 4-point DST-IV of the differences.
    d2 = d2.wrapping_add(lift(d1, 19195, 15));
    d1 = d1.wrapping_add(lift(d2, 11585, 14));
    d2 = d2.wrapping_sub(lift(d1, 7489, 13));
    d3 = half(d1).wrapping_sub(d3);
    d1 = d1.wrapping_sub(d3);
    d2 = d0_half.wrapping_sub(d2);
    d0 = d0.wrapping_sub(d2);
    // Rotations by π/16 and 3π/16.
    d3 = d3.wrapping_add(lift(d0, 3227, 15));
    d0 = d0.wrapping_sub(lift(d3, 6393, 15));
    d3 = d3.wrapping_add(lift(d0, 3227, 15));
    d1 = d1.wrapping_add(lift(d2, 2485, 13));
    d2 = d2.wrapping_sub(lift(d1, 18205, 15));
    d1 = d1.wrapping_add(lift(d2, 2485, 13));
    [s0, d0, s2, d2, s1, d1, s3, d3]
}

/// The 8×8 DCT of a row-major block, in place: columns first, then rows, as libvmaf's
/// `od_bin_fdct8x8` (the integer roundings make the order matter). Coefficient `8·v + u`
/// has vertical frequency `v` and horizontal frequency `u`.
#[inline(always)]
pub fn fdct8x8(x: &mut [i32; COEFFS]) {
    each_of_8!(c {
        let col = fdct8([
            x[c],
            x[8 + c],
            x[16 + c],
            x[24 + c],
            x[32 + c],
            x[40 + c],
            x[48 + c],
            x[56 + c],
        ]);
        each_of_8!(f {
            x[8 * f + c] = col[f];
        });
    });
    each_of_8!(r {
        let row = fdct8([
            x[8 * r],
            x[8 * r + 1],
            x[8 * r + 2],
            x[8 * r + 3],
            x[8 * r + 4],
            x[8 * r + 5],
            x[8 * r + 6],
            x[8 * r + 7],
        ]);
        each_of_8!(f {
            x[8 * r + f] = row[f];
        });
    });
}

/// The 4×4 quadrant (0..4) that sample `k` of a block lies in.
#[inline(always)]
const fn quadrant(k: usize) -> usize {
    (k / 8 >= 4) as usize + 2 * (k % 8 >= 4) as usize
}

/// How much of a block's variance is local: the sum of its four quadrants' variances over
/// the whole block's (unbiased variances, single precision, libvmaf's order); 0 for a flat
/// block. A block of edges or texture between flat areas (a low ratio) masks less than
/// one textured throughout.
#[inline(always)]
pub fn local_variance_ratio(x: &[i32; COEFFS]) -> f32 {
    let mut mean = 0.0f32;
    let mut quad_mean = [0.0f32; 4];
    each_coeff!(k {
        mean += x[k] as f32;
        quad_mean[quadrant(k)] += x[k] as f32;
    });
    mean /= 64.0;
    unroll!(q in [0 1 2 3] {
        quad_mean[q] /= 16.0;
    });
    let mut var = 0.0f32;
    let mut quad_var = [0.0f32; 4];
    each_coeff!(k {
        let d = x[k] as f32 - mean;
        var += d * d;
        let e = x[k] as f32 - quad_mean[quadrant(k)];
        quad_var[quadrant(k)] += e * e;
    });
    var *= 1.0 / 63.0 * 64.0;
    unroll!(q in [0 1 2 3] {
        quad_var[q] *= 1.0 / 15.0 * 16.0;
    });
    if var > 0.0 {
        (quad_var[0] + quad_var[1] + quad_var[2] + quad_var[3]) / var
    } else {
        var
    }
}

/// The masking strength of a block: its AC energy weighted by `w.mask`, scaled by its
/// [`local_variance_ratio`] (from the samples), square-rooted, over 32. Turns `x` from
/// samples into DCT coefficients.
#[inline(always)]
pub fn masking(x: &mut [i32; COEFFS], w: &Weights) -> f32 {
    let ratio = local_variance_ratio(x);
    fdct8x8(x);
    let mut energy = 0.0f32;
    each_coeff!(k {
        // AC only. An integer square (exact: coefficients stay below 2^16 up to 12 bits),
        // then f32.
        if k != 0 {
            energy += x[k].wrapping_mul(x[k]) as f32 * w.mask[k];
        }
    });
    // libvmaf takes the root in f64 and rounds it to f32: the correctly rounded f32 root.
    (sqrt((energy * ratio) as f64) / 32.0) as f32
}

/// Error term `k` of a block from the two DCTs and the block's masking strength (the
/// larger of the two blocks'): the coefficients' absolute difference, less the masking
/// threshold `strength / mask[k]` (not below 0) except for DC, times the CSF, squared.
#[inline(always)]
pub fn error_term(k: usize, reference: i32, distorted: i32, strength: f32, w: &Weights) -> f32 {
    let mut err = reference.wrapping_sub(distorted).unsigned_abs() as f32;
    if k != 0 {
        let threshold = strength / w.mask[k];
        err = if err < threshold {
            0.0
        } else {
            err - threshold
        };
    }
    let weighted = err * w.csf[k];
    weighted * weighted
}

/// The 8×8 samples at (`x0`, `y0`) of a channel, row-major, at the scale of samples up to
/// `to_max`.
///
/// # Safety
/// The channel must hold readable rows `y0..y0 + 8` of at least `x0 + 8` samples.
#[inline(always)]
pub unsafe fn block_samples(c: &Channel, x0: u32, y0: u32, to_max: u32) -> [i32; COEFFS] {
    let mut out = [0i32; COEFFS];
    each_of_8!(r {
        let row = (c.ptr + (y0 + r as u32) as u64 * c.pitch as u64) as *const u8;
        each_of_8!(s {
            let v = unsafe { load(row, x0 + s as u32, c) };
            out[8 * r + s] = rescale(v, c.max, to_max) as i32;
        });
    });
    out
}

/// The 64 error terms of block `b` (row-major among the plane's blocks) of `plane`, each
/// given to `emit(k, term)` in coefficient order; the distorted samples are compared at the
/// reference's scale.
///
/// # Safety
/// The plane's pair must describe readable memory of `width`×`height` samples, and `b` be
/// one of its blocks.
#[inline(always)]
pub unsafe fn block_terms(plane: &HvsPlane, b: u32, w: &Weights, mut emit: impl FnMut(usize, f32)) {
    let p = &plane.pair;
    let (x0, y0) = ((b % plane.blocks_x) * STEP, (b / plane.blocks_x) * STEP);
    let max = p.reference.max;
    let mut r = unsafe { block_samples(&p.reference, x0, y0, max) };
    let r_mask = masking(&mut r, w);
    let mut d = unsafe { block_samples(&p.distorted, x0, y0, max) };
    let d_mask = masking(&mut d, w);
    let strength = if d_mask > r_mask { d_mask } else { r_mask };
    each_coeff!(k {
        emit(k, error_term(k, r[k], d[k], strength, w));
    });
}

/// What adding `t` to a single-precision running sum adds to it, when the exact sum after
/// the addition is `after`: `t` rounded to the spacing of `f32`s at `after` (ties to even).
/// Exact while the running sum and `after` share a binade, since the sum is then a
/// multiple of that spacing.
#[inline(always)]
pub fn f32_increment(t: f32, after: f64) -> f64 {
    let exponent = ((after as f32).to_bits() >> 23) & 0xff;
    if exponent == 0 {
        // Zero or subnormal: the spacing is below every normal term, nothing is rounded.
        return t as f64;
    }
    // The spacing, 2^(exponent − 127 − 23), and its inverse, as f64s: powers of two, so
    // that scaling by them is exact (and needs no division).
    let spacing = f64::from_bits((exponent as u64 + 1023 - 150) << 52);
    let per_spacing = f64::from_bits((1023 + 150 - exponent as u64) << 52);
    // t / spacing is below 2^25; adding and taking away 2^52 rounds it to an integer, ties
    // to even (neither rustc nor the PTX backend reassociates the two).
    const ROUND: f64 = (1u64 << 52) as f64;
    let steps = t as f64 * per_spacing;
    (steps + ROUND - ROUND) * spacing
}

/// The single-precision running sum's increase over one block's terms (`term(k)`, in
/// order), from the exact sum of every term before them (`before`), as [`f32_increment`].
#[inline(always)]
pub fn block_contribution(before: f64, mut term: impl FnMut(usize) -> f32) -> f64 {
    let mut exact = before;
    let mut sum = 0.0f64;
    each_coeff!(k {
        let t = term(k);
        exact += t as f64;
        sum += f32_increment(t, exact);
    });
    sum
}

#[cfg(test)]
mod tests;
