//! ColorVideoVDP's per-sample stages, for the CPU backend and the GPU alike
//! (engine/src/metric/cvvdp drives them): a frame's display-encoded RGB from its channels
//! ([`display_rgb`]), the display model's light ([`light`]) in DKL ([`to_dkl`]), the
//! temporal filters' sum over the frames held, the decimated Laplacian pyramid's reduce and
//! expand of one sample ([`reduce_at`], [`expand_at`]), the contrast sensitivity of a
//! background ([`sensitivity`]), the masking of one sample ([`difference`]) and the
//! reference's `safe_pow` ([`safe_pow`]). Each says which step of the reference it is; the
//! sums run in the reference's order, so that the host gives ColorVideoVDP 0.5.7's float32
//! values and the GPU the same up to its approximate `pow`, `exp` and `log`.

mod kernels;

use crate::channel::{Channel, load};
use gpumetrics_device::math::{div_full, expf, fmaf, half_bits, half_value, powf, trunc_i32};

/// Threads of the per-pixel kernels: `BLOCK_X`×`BLOCK_Y` (a warp reads 128 bytes of a row).
pub const BLOCK_X: u32 = 32;
pub const BLOCK_Y: u32 = 8;
/// Consecutive rows of a column that a `cvvdp_mask` thread takes.
pub const MASK_ROWS: u32 = 4;
/// Threads of the kernels that pool a band's samples (a grid-stride loop, f64 sums).
pub const SUM_THREADS: u32 = 256;
/// Channels of a band: sustained Y, RG, VY and transient Y.
pub const BAND_CHANNELS: usize = 4;
/// Channels a pair decomposes: test and reference interleaved per band channel.
pub const CHANNELS: usize = 8;
/// Points of the CSF table along each axis.
pub const GRID: usize = 32;
/// Bands of a pyramid at most (the Laplacian levels and the base band).
pub const MAX_BANDS: usize = 16;
/// The pooling sums of one pass: `[band][channel]`.
pub const PASS_SUMS: usize = MAX_BANDS * BAND_CHANNELS;
/// Half the phase-uncertainty blur's taps (torchvision's `GaussianBlur(13, ·)`).
pub const BLUR_RADIUS: i32 = 6;
/// The blur's taps.
pub const BLUR_TAPS: usize = 2 * BLUR_RADIUS as usize + 1;

/// `Source::family`: planar or packed Y'CbCr.
pub const FAMILY_YCBCR: u32 = 0;
/// `Source::family`: R'G'B' (or gray, one channel three times) in the order r, g, b.
pub const FAMILY_RGB: u32 = 1;

/// How one side's frame is read as display-encoded RGB, as the reference's readers make it.
/// Crosses the kernel boundary by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Source {
    /// Y', Cb, Cr, or R', G', B'.
    pub c: [Channel; 3],
    pub width: u32,
    pub height: u32,
    /// `FAMILY_YCBCR` or `FAMILY_RGB`.
    pub family: u32,
    /// Chroma subsampling factors (1 or 2) and the chroma planes' size.
    pub sub_x: u32,
    pub sub_y: u32,
    pub chroma_width: u32,
    pub chroma_height: u32,
    /// Code value to normalised value, `scale · code − offset`: Y' to 0..1, Cb and Cr to
    /// −0.5..0.5 (then clipped there), R'G'B' (`y_scale`, no offset) to 0..1.
    pub y_scale: f32,
    pub y_offset: f32,
    pub c_scale: f32,
    pub c_offset: f32,
    /// Y'CbCr → R'G'B', row-major.
    pub matrix: [f32; 9],
    pub _pad: u32,
}

/// Sample (x, y) of channel `c`.
///
/// # Safety
/// (x, y) must lie inside the channel.
#[inline(always)]
pub unsafe fn sample(c: &Channel, x: u32, y: u32) -> u32 {
    let row = (c.ptr + y as u64 * c.pitch as u64) as *const u8;
    unsafe { load(row, x, c) }
}

/// torch's bilinear source samples along one axis (`interpolate`, `align_corners` false):
/// output `out` of a `sub`-times upsampling of `n` samples reads samples `i0` and `i1` with
/// weight `f` on the second. The position `(out + ½)/sub − ½`, clamped at 0; the next
/// sample clamped at the edge.
#[inline(always)]
pub fn source_index(out: u32, sub: u32, n: u32) -> (u32, u32, f32) {
    if sub == 1 {
        let i = if out < n { out } else { n - 1 };
        return (i, i, 0.0);
    }
    // Halving by a multiplication: the same value (a power of two), without the IEEE
    // division's subroutine on the GPU (two per pixel in `cvvdp_dkl`).
    let half = out as f32 + 0.5;
    let scaled = if sub == 2 {
        half * 0.5
    } else {
        half / sub as f32
    };
    let src = (scaled - 0.5).max(0.0);
    let i0 = (trunc_i32(src) as u32).min(n - 1);
    let i1 = (i0 + 1).min(n - 1);
    (i0, i1, src - i0 as f32)
}

/// Display-encoded RGB (0..1) of pixel (x, y): Y'CbCr normalised and clipped, chroma
/// upsampled bilinearly ([`source_index`]), the matrix, clipped; R'G'B' scaled.
///
/// # Safety
/// Every channel of `s` must be readable at its size (the luma's `width`×`height`, the
/// chroma's `chroma_width`×`chroma_height`), (x, y) inside the frame.
#[inline(always)]
pub unsafe fn display_rgb(s: &Source, x: u32, y: u32) -> [f32; 3] {
    unsafe { display_rgb_with(s, x, y, |k, xx, yy| chroma_value(s, k, xx, yy)) }
}

/// Chroma sample (x, y) of Cb (`k` = 0) or Cr (1) normalised and clipped to −0.5..0.5.
///
/// # Safety
/// (x, y) inside the chroma planes of `s`.
#[inline(always)]
pub unsafe fn chroma_value(s: &Source, k: usize, x: u32, y: u32) -> f32 {
    (s.c_scale * unsafe { sample(&s.c[1 + k], x, y) } as f32 - s.c_offset).clamp(-0.5, 0.5)
}

/// [`display_rgb`] with the chroma samples ([`chroma_value`]'s) from `chroma(k, x, y)`:
/// the GPU reads them from a block's tile, made once per block.
///
/// # Safety
/// As [`display_rgb`] (`chroma` is called at chroma samples inside the planes only).
#[inline(always)]
pub unsafe fn display_rgb_with(
    s: &Source,
    x: u32,
    y: u32,
    chroma: impl Fn(usize, u32, u32) -> f32,
) -> [f32; 3] {
    if s.family != FAMILY_YCBCR {
        return [0, 1, 2].map(|k| unsafe { sample(&s.c[k], x, y) } as f32 * s.y_scale);
    }
    let l = (s.y_scale * unsafe { sample(&s.c[0], x, y) } as f32 - s.y_offset).clamp(0.0, 1.0);
    let (x0, x1, fx) = source_index(x, s.sub_x, s.chroma_width);
    let (y0, y1, fy) = source_index(y, s.sub_y, s.chroma_height);
    let upsampled = |k: usize| {
        let v = |xx: u32, yy: u32| chroma(k, xx, yy);
        let top = v(x0, y0) * (1.0 - fx) + v(x1, y0) * fx;
        let bottom = v(x0, y1) * (1.0 - fx) + v(x1, y1) * fx;
        top * (1.0 - fy) + bottom * fy
    };
    let ycc = [l, upsampled(0), upsampled(1)];
    let m = &s.matrix;
    [0, 1, 2].map(|r| {
        (ycc[0] * m[3 * r] + ycc[1] * m[3 * r + 1] + ycc[2] * m[3 * r + 2]).clamp(0.0, 1.0)
    })
}

/// `Display::eotf`: sRGB.
pub const EOTF_SRGB: u32 = 0;
/// `Display::eotf`: PQ (SMPTE ST 2084).
pub const EOTF_PQ: u32 = 1;
/// `Display::eotf`: HLG (ARIB STD-B67) with its OOTF.
pub const EOTF_HLG: u32 = 2;
/// `Display::eotf`: linear (cd/m² as given).
pub const EOTF_LINEAR: u32 = 3;
/// `Display::eotf`: a power law (`Display::gamma`).
pub const EOTF_GAMMA: u32 = 4;

/// A display model's photometry (`vvdp_display_photo_eotf`) and its linear RGB → DKL
/// matrix, in float32 as the reference applies them per sample.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Display {
    pub eotf: u32,
    /// cd/m².
    pub peak: f32,
    pub black: f32,
    pub reflection: f32,
    pub exposure: f32,
    /// The power law's exponent (`EOTF_GAMMA`) or HLG's system gamma (`EOTF_HLG`).
    pub gamma: f32,
    /// HLG's `c = 0.5 − a · ln(4a)`.
    pub hlg_c: f32,
    /// Linear RGB → DKL (D65), row-major.
    pub rgb_to_dkl: [f32; 9],
}

/// Whether `cvvdp_dkl_sdr420` reads this side as `cvvdp_dkl` does: 4:2:0 Y'CbCr on an sRGB
/// display, the parameters that kernel takes as constants. The one place both the kernel
/// and the engine, which picks it, name them.
#[inline(always)]
pub fn sdr420(src: &Source, display: &Display) -> bool {
    src.family == FAMILY_YCBCR && (src.sub_x, src.sub_y) == (2, 2) && display.eotf == EOTF_SRGB
}

/// sRGB's EOTF.
#[inline(always)]
pub fn srgb_to_linear(p: f32) -> f32 {
    // Products by the reciprocals, not the reference's quotients (an IEEE division is a
    // subroutine on the GPU, three a pixel here): within an ulp of them, below what the
    // approximate power resolves.
    if p > 0.04045 {
        powf((p + 0.055) * (1.0 / 1.055), 2.4)
    } else {
        p * (1.0 / 12.92)
    }
}

/// PQ (SMPTE ST 2084) to cd/m².
#[inline(always)]
pub fn pq_to_linear(v: f32) -> f32 {
    const N: f32 = 0.159_301_76;
    const M: f32 = 78.843_75;
    const C1: f32 = 0.835_937_5;
    const C2: f32 = 18.851_563;
    const C3: f32 = 18.6875;
    let t = powf(v, 1.0 / M);
    10000.0 * powf((t - C1).max(0.0) / (C2 - C3 * t), 1.0 / N)
}

/// HLG's `a`.
pub const HLG_A: f32 = 0.178_832_77;

/// HLG's inverse OETF and the OOTF of system gamma `gamma` (relative, 0..1); `c` is
/// [`Display::hlg_c`].
#[inline(always)]
pub fn hlg_to_linear(rgb: [f32; 3], gamma: f32, c: f32) -> [f32; 3] {
    let b = 1.0 - 4.0 * HLG_A;
    let s = rgb.map(|v| {
        if v <= 0.5 {
            v * v / 3.0
        } else {
            (expf((v - c) / HLG_A) + b) / 12.0
        }
    });
    let y = 0.2627 * s[0] + 0.6780 * s[1] + 0.0593 * s[2];
    let k = powf(y, gamma - 1.0);
    s.map(|v| k * v)
}

/// The light (cd/m²) the display emits for display-encoded RGB `v` (clamped to 0..1 but
/// for a linear display), with its black level and the ambient light it reflects.
#[inline(always)]
pub fn light(d: &Display, v: [f32; 3]) -> [f32; 3] {
    let (peak, black, refl, exposure) = (d.peak, d.black, d.reflection, d.exposure);
    let v = if d.eotf == EOTF_LINEAR {
        v
    } else {
        v.map(|c| c.clamp(0.0, 1.0))
    };
    let scaled = |lin: f32| {
        let lin = if exposure == 1.0 {
            lin
        } else {
            (lin * exposure).clamp(0.0, 1.0)
        };
        (peak - black) * lin + black + refl
    };
    match d.eotf {
        EOTF_PQ => v.map(|c| (pq_to_linear(c) * exposure).clamp(0.005, peak) + black + refl),
        EOTF_LINEAR => {
            let lo = if black > 0.005 { black } else { 0.005 };
            v.map(|c| (c * exposure).clamp(lo, peak) + refl)
        }
        EOTF_GAMMA => {
            v.map(|c| (peak - black) * (powf(c, d.gamma) * exposure).clamp(0.0, 1.0) + black + refl)
        }
        EOTF_HLG => hlg_to_linear(v, d.gamma, d.hlg_c).map(scaled),
        _ => v.map(|c| scaled(srgb_to_linear(c))),
    }
}

/// The history's layouts (`Temporal::halves`, `cvvdp_dkl`'s `halves`): three f32 planes a
/// slot; the chromatic planes (RG, YV) as half floats; every plane as half floats. A slot
/// spans 12 bytes a pixel in each: the achromatic plane from its start, the chromatic ones
/// from its second f32 plane's start ([`history_layout`] picks one).
pub const HISTORY_F32: u32 = 0;
pub const HISTORY_CHROMA_HALVES: u32 = 1;
pub const HISTORY_HALVES: u32 = 2;

/// The history's layout for a display and whether a heat map is made, the one place the
/// GPU (its history) and the CPU ([`history_value`]) pick it. Half floats, a third less of
/// the temporal filters' reads for the chromatic planes and half for the achromatic one,
/// bound the video pass's memory traffic. Against the reference on its clips, JOD at most:
/// the chromatic planes in halves 4.6e-5 (PQ), 2e-6 (SDR); every plane 1.1e-4 on SDR, but
/// 1.0e-3 on PQ, so halves for the achromatic plane are for the sRGB display models only.
/// The per-pixel heat maps move by up to 1 % with halves (3e-5 on values of 0.004), so a
/// history for a map keeps every channel in f32.
#[inline(always)]
pub fn history_layout(display: &Display, map: bool) -> u32 {
    if map {
        HISTORY_F32
    } else if display.eotf == EOTF_SRGB {
        HISTORY_HALVES
    } else {
        HISTORY_CHROMA_HALVES
    }
}

/// Whether DKL channel `c` (0 achromatic, 1 RG, 2 YV) is held in half floats in `layout`.
#[inline(always)]
pub fn history_in_halves(layout: u32, c: usize) -> bool {
    match layout {
        HISTORY_HALVES => true,
        HISTORY_CHROMA_HALVES => c != 0,
        _ => false,
    }
}

/// Whether `layout` is one of [`HISTORY_F32`], [`HISTORY_CHROMA_HALVES`] and
/// [`HISTORY_HALVES`]: the kernels write and read nothing for any other value (a plane's
/// width would be a guess).
#[inline(always)]
pub fn is_history_layout(layout: u32) -> bool {
    matches!(layout, HISTORY_F32 | HISTORY_CHROMA_HALVES | HISTORY_HALVES)
}

/// DKL channel `c` of a frame as the temporal filters read it from a history of `layout`
/// ([`history_layout`]): rounded to a half float ([`half_bits`]) where it is held as one.
#[inline(always)]
pub fn history_value(layout: u32, c: usize, v: f32) -> f32 {
    if history_in_halves(layout, c) {
        half_value(half_bits(v))
    } else {
        v
    }
}

/// A pixel's DKL from its linear RGB (the reference's per-channel dot products).
#[inline(always)]
pub fn to_dkl(m: &[f32; 9], rgb: [f32; 3]) -> [f32; 3] {
    [0, 1, 2].map(|r| rgb[0] * m[3 * r] + rgb[1] * m[3 * r + 1] + rgb[2] * m[3 * r + 2])
}

/// The pyramid's 5-tap kernel (a = 0.4), the reference's float64 values in float32.
pub const KERNEL: [f32; 5] = [
    (0.25 - 0.4 / 2.0) as f32,
    0.25,
    0.4,
    0.25,
    (0.25 - 0.4 / 2.0) as f32,
];

/// One output sample `i` of a reduce along one axis (`gausspyr_reduce`): the kernel over
/// the `n` input samples `read` gives, centred on sample 2i, zero outside; then the
/// mirrored terms at the first output and at the last (`n_out − 1`), which the reference
/// picks by the parity of `parity` (the input's rows, on both axes).
#[inline(always)]
pub fn reduce_at(read: impl Fn(u32) -> f32, n: u32, n_out: u32, parity: u32, i: u32) -> f32 {
    let k = KERNEL;
    let mut s = 0f32;
    for (t, kt) in k.iter().enumerate() {
        let r = 2 * i as i32 + t as i32 - 2;
        if r >= 0 && (r as u32) < n {
            s += kt * read(r as u32);
        }
    }
    if i == 0 {
        s += read(0) * k[1] + read(1.min(n - 1)) * k[0];
    }
    if i + 1 == n_out {
        if parity % 2 == 1 {
            s += read(n - 1) * k[3] + read(n.saturating_sub(2)) * k[4];
        } else {
            s += read(n - 1) * k[4];
        }
    }
    s
}

/// Whether output `i` of a reduce along one axis (from `n` samples to `n_out`) is inside:
/// every tap reads a sample and neither mirrored term applies, so [`reduce_interior`] gives
/// [`reduce_at`]'s value.
#[inline(always)]
pub fn reduce_is_interior(n: u32, n_out: u32, i: u32) -> bool {
    i >= 1 && i + 1 < n_out && 2 * i + 2 < n
}

/// [`reduce_at`] at an output inside ([`reduce_is_interior`]): the same five terms in the
/// same order, without the bounds and edge tests (most of the reduce kernel's instructions).
#[inline(always)]
pub fn reduce_interior(read: impl Fn(u32) -> f32, i: u32) -> f32 {
    let k = KERNEL;
    let r = 2 * i - 2;
    let mut s = 0f32;
    s += k[0] * read(r);
    s += k[1] * read(r + 1);
    s += k[2] * read(r + 2);
    s += k[3] * read(r + 3);
    s += k[4] * read(r + 4);
    s
}

/// Whether output `i` of an expand along one axis (from `m` samples to `n`) is inside: its
/// five taps lie in the zero-interleaved line's body (past the repeated first sample,
/// before the repeated last one), so [`expand_interior`] gives [`expand_at`]'s value.
#[inline(always)]
pub fn expand_is_interior(m: u32, n: u32, i: u32) -> bool {
    i >= 1 && i + 4 <= n + 1 && (i + 2) / 2 < m
}

/// [`expand_at`] at an output inside ([`expand_is_interior`]): the taps on zeros add +0.0
/// as there, the others read inputs (i − 1)/2 + 0, 1 and (even `i`) 2, the same terms in the
/// same order, without `expand_source`'s tests per tap (most of the band kernel's
/// instructions). `read` is called with those three indices only (the third is the second
/// again for odd `i`, so a tile that holds what the taps reach is never read past).
#[inline(always)]
pub fn expand_interior(read: impl Fn(u32) -> f32, i: u32) -> f32 {
    let k = KERNEL;
    let even = i.is_multiple_of(2);
    let b = (i - 1) / 2;
    let (z0, z1, z2) = (read(b), read(b + 1), read(b + 1 + even as u32));
    let mut s = 0f32;
    s += if even { k[0] * 2.0 * z0 } else { 0.0 };
    s += if even { 0.0 } else { k[1] * 2.0 * z0 };
    s += if even { k[2] * 2.0 * z1 } else { 0.0 };
    s += if even { 0.0 } else { k[3] * 2.0 * z1 };
    s += if even { k[4] * 2.0 * z2 } else { 0.0 };
    s
}

/// One output sample `i` of an expand along one axis from `m` samples to `n`
/// (`interleave_zeros_and_pad`, then the kernel ×2 without padding): the zero-interleaved
/// line `z` has the input at 2 + 2j, the first sample repeated at 0 and the last at `n + 3`
/// (odd `n`) or `n + 2`.
#[inline(always)]
pub fn expand_at(read: impl Fn(u32) -> f32, m: u32, n: u32, i: u32) -> f32 {
    let mut s = 0f32;
    for (t, kt) in KERNEL.iter().enumerate() {
        let z = match expand_source(m, n, i + t as u32) {
            Some(j) => read(j),
            None => 0.0,
        };
        s += kt * 2.0 * z;
    }
    s
}

/// Which input sample position `j` of [`expand_at`]'s zero-interleaved line holds (`None`:
/// a zero).
#[inline(always)]
pub fn expand_source(m: u32, n: u32, j: u32) -> Option<u32> {
    let last = if n % 2 == 1 { n + 3 } else { n + 2 };
    if j == last {
        Some(m - 1)
    } else if j == 0 {
        Some(0)
    } else if j.is_multiple_of(2) && j < n + 2 && (j - 2) / 2 < m {
        Some((j - 2) / 2)
    } else {
        None
    }
}

/// Sample (x, y) of a reduce of plane `p` (`src`, `parity` its rows) to `n_out_x`×`n_out_y`:
/// [`reduce_at`] along columns for each column the row's reduce reads, in the order of the
/// separable passes (columns, then rows), so that each value is the same.
///
/// # Safety
/// Plane `p` of `src` must be readable at its size; (x, y) inside the output.
#[inline(always)]
pub unsafe fn reduce_2d(src: &Planes, p: u32, n_out_x: u32, n_out_y: u32, x: u32, y: u32) -> f32 {
    if reduce_is_interior(src.width, n_out_x, x) && reduce_is_interior(src.height, n_out_y, y) {
        let column = |c: u32| reduce_interior(|r| unsafe { src.at(p, c, r) }, y);
        return reduce_interior(column, x);
    }
    let column = |c: u32| {
        let read = |r: u32| unsafe { src.at(p, c, r) };
        reduce_at(read, src.height, n_out_y, src.height, y)
    };
    reduce_at(column, src.width, n_out_x, src.height, x)
}

/// Sample (x, y) of plane `p` of `src` expanded to `n_x`×`n_y`: [`expand_at`] along columns
/// for each column the row's expand reads, then along the row (the separable passes' order).
///
/// # Safety
/// Plane `p` of `src` must be readable at its size; (x, y) inside the output.
#[inline(always)]
pub unsafe fn expand_2d(src: &Planes, p: u32, n_x: u32, n_y: u32, x: u32, y: u32) -> f32 {
    let column = |c: u32| {
        let read = |r: u32| unsafe { src.at(p, c, r) };
        expand_at(read, src.height, n_y, y)
    };
    expand_at(column, src.width, n_x, x)
}

/// The contrast sensitivity at background luminance 10^`log_l` cd/m² of one channel at
/// one band's frequency: its log sensitivities `log_s` along the CSF table's uniform log
/// luminance axis (from `l0` to `l_last`), interpolated linearly (clamped to the ends),
/// and 10 to that power.
#[inline(always)]
pub fn sensitivity(log_s: impl Fn(usize) -> f32, l0: f32, l_last: f32, log_l: f32) -> f32 {
    CsfPosition::new(l0, l_last, log_l).sensitivity(log_s)
}

/// Where a background luminance falls on the CSF table's axis ([`sensitivity`]'s first
/// half): the same for every channel of a band, so a kernel finds it once per sample.
#[derive(Clone, Copy, Debug)]
pub struct CsfPosition {
    lo: usize,
    hi: usize,
    f: f32,
}

impl CsfPosition {
    /// Log luminance `log_l` on the axis from `l0` to `l_last`, clamped to its ends.
    #[inline(always)]
    pub fn new(l0: f32, l_last: f32, log_l: f32) -> CsfPosition {
        let top = (GRID - 1) as f32;
        let ind = (div_full(log_l - l0, l_last - l0) * top).clamp(0.0, top);
        let lo = trunc_i32(ind) as usize;
        let hi = if lo + 1 < GRID { lo + 1 } else { GRID - 1 };
        CsfPosition {
            lo,
            hi,
            f: ind - lo as f32,
        }
    }

    /// The sensitivity of the channel whose log sensitivities are `log_s` there.
    #[inline(always)]
    pub fn sensitivity(&self, log_s: impl Fn(usize) -> f32) -> f32 {
        let f = self.f;
        powf(10.0, log_s(self.lo) * (1.0 - f) + log_s(self.hi) * f)
    }
}

/// The reference's `safe_pow`'s ε.
pub const EPS: f32 = 1e-5;

/// The reference's `safe_pow`: `(x + ε)^p − ε^p`, with `eps_p` = ε^p.
#[inline(always)]
pub fn safe_pow(x: f32, p: f32, eps_p: f32) -> f32 {
    powf(x + EPS, p) - eps_p
}

/// The masking model's constants (`mult-mutual`), in float32 as the reference has them.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Masking {
    /// `mask_p` and ε^`mask_p`.
    pub p: f32,
    pub p_eps: f32,
    /// `mask_q` per channel and ε^q.
    pub q: [f32; BAND_CHANNELS],
    pub q_eps: [f32; BAND_CHANNELS],
    /// 10^`mask_c`, 10^`d_max`.
    pub mask_c: f32,
    pub d_max: f32,
    /// The cross-channel weights 2^`xcm_weights`, a 4×4 matrix, row-major.
    pub xcm: [f32; BAND_CHANNELS * BAND_CHANNELS],
    /// The spatial pooling's β and ε^β.
    pub beta: f32,
    pub beta_eps: f32,
}

/// The sensitivity-weighted contrast's per-channel gains.
pub const CHANNEL_GAIN: [f32; BAND_CHANNELS] = [1.0, 1.45, 1.0, 1.0];

/// A channel's masker to the power q: its blurred common contrast `m`.
#[inline(always)]
pub fn masker(k: &Masking, c: usize, m: f32) -> f32 {
    safe_pow((m * k.mask_c).abs(), k.q[c], k.q_eps[c])
}

/// The visible difference of channel `c` at one sample: the difference `d` of the weighted
/// contrasts (test minus reference), and the maskers of the first `channels` channels ([`masker`]) pooled across channels
/// with column `c` of the cross-channel weights; the difference to the power p over one
/// plus the masker, softly clamped at d_max.
#[inline(always)]
pub fn difference(
    k: &Masking,
    c: usize,
    d: f32,
    mq: &[f32; BAND_CHANNELS],
    channels: usize,
) -> f32 {
    let mut m = 0f32;
    // A loop of constant length: with `c` constant too (the kernels unroll their channels)
    // every index is, and nothing goes through local memory.
    #[allow(clippy::needless_range_loop)]
    for i in 0..BAND_CHANNELS {
        if i < channels {
            m += mq[i] * k.xcm[i * BAND_CHANNELS + c];
        }
    }
    // `div_full`: eight quotients a sample in `cvvdp_mask`, each an IEEE division there.
    let du = div_full(safe_pow(d.abs(), k.p, k.p_eps), 1.0 + m);
    div_full(k.d_max * du, k.d_max + du)
}

/// Where the planes of one pyramid level lie in device memory: `count` planes of
/// `width`×`height` f32 samples, `stride` samples apart.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Planes {
    pub base: u64,
    pub stride: u64,
    pub width: u32,
    pub height: u32,
}

impl Planes {
    /// Plane `i`.
    #[inline(always)]
    pub fn plane(&self, i: u32) -> *mut f32 {
        (self.base + 4 * i as u64 * self.stride) as *mut f32
    }

    /// Sample (x, y) of plane `i`.
    ///
    /// # Safety
    /// Plane `i` and (x, y) must lie inside the memory the planes were given.
    #[inline(always)]
    pub unsafe fn at(&self, i: u32, x: u32, y: u32) -> f32 {
        unsafe { *self.plane(i).add((y * self.width + x) as usize) }
    }

    /// Writes sample (x, y) of plane `i`.
    ///
    /// # Safety
    /// As [`Planes::at`], and nothing else may access the sample meanwhile.
    #[inline(always)]
    pub unsafe fn set(&self, i: u32, x: u32, y: u32, v: f32) {
        unsafe { *self.plane(i).add((y * self.width + x) as usize) = v };
    }
}

/// The temporal filters of one pass (`cvvdp_temporal`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Temporal {
    /// The frames held, DKL: `[side][slot]` of `12 · plane_len` bytes each, laid out as
    /// `halves` says ([`HISTORY_F32`]: three f32 planes; with halves, the achromatic plane
    /// from the slot's start, in f32 or halves, and the two chromatic planes as half floats
    /// from where the second f32 plane would start).
    pub history: u64,
    pub plane_len: u64,
    /// The filters' taps, `[4][len]`, the newest frame's last.
    pub taps: u64,
    /// Where this pass's pooling sums lie (`PASS_SUMS` f64 values), zeroed by the launch.
    pub sums: u64,
    /// The filters' length; the ring's slots (at least `len`: pairs in flight on other
    /// lanes may still read the slots a pair does not); the slot of the oldest frame the
    /// filters read, and how many frames they read (1 ..= `len`; the frames before the
    /// oldest are taken as it).
    pub len: u32,
    pub slots: u32,
    pub oldest: u32,
    pub held: u32,
    /// Not 0: the image pass (the newest frame's three channels unfiltered, no transient
    /// channel).
    pub image: u32,
    /// Not 0: every plane (history and output) starts 16-byte aligned and `plane_len` is a
    /// multiple of [`TEMPORAL_VEC`]: a thread takes that many samples at once.
    pub vec: u32,
    /// The history's layout: [`HISTORY_F32`], [`HISTORY_CHROMA_HALVES`] or
    /// [`HISTORY_HALVES`] (`cvvdp_dkl`'s `halves`).
    pub halves: u32,
    pub _pad: u32,
}

impl Temporal {
    /// The slot of the history that tap `k` (0 the oldest, `len − 1` the newest frame)
    /// reads.
    #[inline(always)]
    pub fn slot(&self, k: u32) -> u32 {
        // `oldest` < `slots` and k − missing < `len` ≤ `slots`: one subtraction wraps the
        // ring.
        let s = self.oldest + k.saturating_sub(self.len - self.held);
        if s >= self.slots { s - self.slots } else { s }
    }

    /// The newest frame's slot.
    #[inline(always)]
    pub fn newest(&self) -> u32 {
        self.slot(self.len - 1)
    }

    /// Whether the ring's fields agree (1 ..= `len` frames held, `len` ≤ `slots`, the
    /// oldest slot inside the ring) and `halves` names a layout: [`Temporal::slot`] then
    /// names a slot of the ring for every tap, and every plane's width is known. The kernels
    /// read nothing otherwise.
    #[inline(always)]
    pub fn is_consistent(&self) -> bool {
        self.held != 0
            && self.held <= self.len
            && self.len <= self.slots
            && self.oldest < self.slots
            && is_history_layout(self.halves)
    }
}

/// Samples a `cvvdp_temporal` thread takes where the planes allow it (`Temporal::vec`).
pub const TEMPORAL_VEC: u32 = 4;

/// Pixels of a row a `cvvdp_dkl_temporal` thread takes, loaded and stored at once (two a
/// thread, measured on the branch, took 34 registers to four's 72, but half again the
/// instructions, and 171 µs a 1080p launch to 166 on an H100; docs/BENCHMARKS.md ~09:17).
pub const DKL_TEMPORAL_VEC: u32 = 4;

/// Whether `cvvdp_dkl_temporal` takes a pair of `width`×`height` frames (the video pass past
/// a sequence's first pair): both sides [`sdr420`] at that size, and rows of whole runs of
/// [`DKL_TEMPORAL_VEC`] pixels (every plane then starts aligned for a run). The one place
/// the kernel, which checks it, and the engine, which picks the kernel, name it.
#[inline(always)]
pub fn dkl_temporal_takes(
    test: &Source,
    reference: &Source,
    display: &Display,
    width: u32,
    height: u32,
) -> bool {
    let fits = |s: &Source| s.width == width && s.height == height && sdr420(s, display);
    width.is_multiple_of(DKL_TEMPORAL_VEC) && fits(test) && fits(reference)
}

/// One band's inputs to `cvvdp_band`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Band {
    /// The level's Gaussian planes and the next level's (expanded to this size per sample:
    /// [`expand_2d`]).
    pub g: Planes,
    pub next: Planes,
    /// Outputs: the difference of the weighted contrasts, test minus reference (planes
    /// 0..4), and their common part (4..8), of this level's size.
    pub out: Planes,
    /// The log sensitivities of the band's channels, `[channel][GRID]`.
    pub csf: u64,
    /// The CSF table's log luminance axis ends, and 10^(sensitivity_correction / 20).
    pub l0: f32,
    pub l_last: f32,
    pub gain: f32,
    /// 2 for the bands between the finest and the base band (`lpyr_dec.get_band`), else 1.
    pub mul: f32,
    /// Band channels used (4 for video, 3 for an image).
    pub channels: u32,
    /// Not 0: blur the common contrast (the band is larger than 6×6).
    pub blur: u32,
    /// The blur's taps.
    pub blur_taps: [f32; BLUR_TAPS],
    pub _pad: u32,
    pub masking: Masking,
    /// Where the band's pooling sums go (`BAND_CHANNELS` f64 values).
    pub sums: u64,
    /// The heat map's part (`map=cvvdp`; `heat.plane` 0 without one).
    pub heat: Heat,
}

// `Band`s are copied to the device as bytes (`Levels::bands`): no padding between fields
// (the size is the sum of the fields'; those of `Planes`, `Masking` and `Heat` have none).
const _: () = assert!(
    size_of::<Band>()
        == 3 * size_of::<Planes>()
            + 8
            + 6 * 4
            + 4 * BLUR_TAPS
            + 4
            + size_of::<Masking>()
            + 8
            + size_of::<Heat>()
);
const _: () = assert!(size_of::<Planes>() == 24 && size_of::<Heat>() == 40);
const _: () = assert!(
    size_of::<Masking>() == 4 * (2 + 2 * BAND_CHANNELS + 2 + BAND_CHANNELS * BAND_CHANNELS + 2)
);

/// The bands of one pass in one launch of `cvvdp_band` or `cvvdp_mask`: grid.x is every
/// level's blocks in turn, level `i`'s from `first[i]` to `first[i + 1]` (a row of
/// `width.div_ceil(BLOCK_X)` blocks after another). The coarse levels' blocks fill the
/// waves of the fine ones: launched alone, each took a whole kernel's latency (about 15 µs
/// on an H100 for a few blocks; eight such launches a pass).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Levels {
    /// The levels' [`Band`]s in device memory, `count` of them (at most `MAX_BANDS` − 1).
    pub bands: u64,
    pub count: u32,
    /// The first block of each level, and past the last level the grid's size.
    pub first: [u32; MAX_BANDS + 1],
    pub _pad: [u32; 2],
}

impl Levels {
    /// The table's blocks for `count` levels of the given sizes, `rows` sample rows a block:
    /// `first` and the grid's size.
    pub fn new(bands: u64, sizes: &[(u32, u32)], rows: u32) -> Levels {
        assert!(
            sizes.len() < MAX_BANDS,
            "cvvdp: {} levels in one launch",
            sizes.len()
        );
        let mut first = [0u32; MAX_BANDS + 1];
        for (i, &(w, h)) in sizes.iter().enumerate() {
            first[i + 1] = first[i] + w.div_ceil(BLOCK_X) * h.div_ceil(rows);
        }
        Levels {
            bands,
            count: sizes.len() as u32,
            first,
            _pad: [0; 2],
        }
    }

    /// Blocks of the launch (grid.x).
    pub fn blocks(&self) -> u32 {
        self.first[self.count as usize]
    }

    /// Block `i`'s level and place in it, (column, row) of blocks, in a level of `width`.
    /// Constant indices only: a run-time index into the parameter copies it to local memory.
    #[inline(always)]
    pub fn level_of(&self, i: u32) -> (usize, u32) {
        let mut level = 0;
        let mut first = 0;
        unroll!(k in [1 2 3 4 5 6 7 8 9 10 11 12 13 14 15] {
            if (k as u32) < self.count && i >= self.first[k] {
                level = k;
                first = self.first[k];
            }
        });
        (level, i - first)
    }
}

/// One band's part of ColorVideoVDP's `raw` heat map (`map=cvvdp`): where its heat plane
/// lies (of the band's size; 0: no map) and the constants of the reference's pooling
/// across channels at each sample (`set_lband` of `safe_pow(Σ_c safe_pow(D_c·w_c, β_tch),
/// 1/β_tch)` over the band's `get_band` factor).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Heat {
    pub plane: u64,
    /// The channels' weights (1, `ch_chrom_w`, `ch_chrom_w`, `ch_trans_w`), the base band's
    /// times `baseband_weight`.
    pub w: [f32; BAND_CHANNELS],
    /// β_tch and ε^β_tch; 1/β_tch and ε^(1/β_tch) (`safe_pow`'s offsets).
    pub beta: f32,
    pub beta_eps: f32,
    pub inv: f32,
    pub inv_eps: f32,
}

impl Heat {
    /// The band's heat at one sample from its channels' masked differences `d` (the first
    /// `channels`), divided by `mul` (the band's `get_band` factor).
    #[inline(always)]
    pub fn value(&self, d: [f32; BAND_CHANNELS], channels: usize, mul: f32) -> f32 {
        let mut sum = 0f32;
        unroll!(c in [0 1 2 3] {
            if c < channels {
                sum += safe_pow(d[c] * self.w[c], self.beta, self.beta_eps);
            }
        });
        safe_pow(sum, self.inv, self.inv_eps) / mul
    }

    /// Writes [`Heat::value`] at sample (x, y) of the heat plane, a plane of `band`'s
    /// size; nothing without a heat map (`plane` 0).
    ///
    /// # Safety
    /// With a heat map, `plane` holds `band.width · band.height` f32 values and (x, y) lies
    /// inside; nothing else accesses the sample meanwhile.
    #[inline(always)]
    pub unsafe fn store(
        &self,
        band: &Planes,
        x: u32,
        y: u32,
        d: [f32; BAND_CHANNELS],
        channels: usize,
        mul: f32,
    ) {
        if self.plane == 0 {
            return;
        }
        let heat = Planes {
            base: self.plane,
            ..*band
        };
        unsafe { heat.set(0, x, y, self.value(d, channels, mul)) };
    }
}

/// The reference's `met2jod`: JOD from a pooled difference `q` (`jod_a`, `jod_exp`),
/// linear below 0.1.
#[inline(always)]
pub fn met2jod(q: f32, a: f32, e: f32) -> f32 {
    const Q_T: f32 = 0.1;
    if q <= Q_T {
        10.0 - a * powf(Q_T, e - 1.0) * q
    } else {
        10.0 - a * powf(q, e)
    }
}

/// The masker blur's sum of the [`BLUR_TAPS`] samples `v(0..BLUR_TAPS)` under the Gaussian's
/// `taps`, which are symmetric (`engine::metric::cvvdp::masking::blur_taps`): the two
/// samples at each distance added first, then weighted once with a fused multiply-add,
/// centre first. 13 adds and 7 multiplies where the plain sum took 13 of each; the blur's
/// two passes over four channels were most of `cvvdp_mask`'s instructions. Float32
/// rounding apart it is the plain sum (and the reference's 2-D convolution).
#[inline(always)]
pub fn blur_sum(taps: &[f32; BLUR_TAPS], v: impl Fn(usize) -> f32) -> f32 {
    const R: usize = BLUR_RADIUS as usize;
    let mut s = taps[R] * v(R);
    unroll!(t in [5 4 3 2 1 0] {
        s = fmaf(taps[t], v(t) + v(BLUR_TAPS - 1 - t), s);
    });
    s
}

/// The planes of `Band::out`.
pub const OUT_DIFF: u32 = 0;
pub const OUT_COMMON: u32 = 4;
/// Planes of `Band::out`.
pub const OUT_PLANES: u32 = 8;

/// Reflects index `i` into 0..n without repeating the edge (torch's `reflect` padding).
#[inline(always)]
pub fn reflect(i: i32, n: u32) -> u32 {
    let n = n as i32;
    let i = if i < 0 { -i } else { i };
    (if i >= n { 2 * (n - 1) - i } else { i }) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pass's `Temporal` over a ring of `slots` whose filters read `held` frames from
    /// slot `oldest`.
    fn ring(len: u32, slots: u32, oldest: u32, held: u32) -> Temporal {
        Temporal {
            len,
            slots,
            oldest,
            held,
            ..Default::default()
        }
    }

    #[test]
    fn the_filters_taps_read_the_newest_frames_of_the_ring() {
        // A full filter on a ring of 11 slots (9 taps, 3 lanes) that wraps: taps 0..9 read
        // slots 7, 8, 9, 10, 0, 1, 2, 3, 4 (the newest).
        let t = ring(9, 11, 7, 9);
        let slots: [u32; 9] = core::array::from_fn(|k| t.slot(k as u32));
        assert_eq!(slots, [7, 8, 9, 10, 0, 1, 2, 3, 4]);
        assert_eq!(t.newest(), 4);
        // Three frames held from slot 9: the six taps before them read the oldest (the
        // reference's replicate padding), then 9, 10, 0.
        let t = ring(9, 11, 9, 3);
        let slots: [u32; 9] = core::array::from_fn(|k| t.slot(k as u32));
        assert_eq!(slots, [9, 9, 9, 9, 9, 9, 9, 10, 0]);
        assert_eq!(t.newest(), 0);
        // One frame: every tap reads it; one lane: the ring is the filter.
        assert!((0..9).all(|k| ring(9, 9, 5, 1).slot(k) == 5));
        let t = ring(9, 9, 3, 9);
        assert_eq!((t.slot(0), t.slot(5), t.slot(6), t.newest()), (3, 8, 0, 2));
    }

    #[test]
    fn the_history_is_in_halves_without_a_map_the_achromatic_plane_on_srgb_only() {
        let srgb = Display::default();
        let pq = Display {
            eotf: EOTF_PQ,
            ..srgb
        };
        assert_eq!(history_layout(&srgb, false), HISTORY_HALVES);
        assert_eq!(history_layout(&pq, false), HISTORY_CHROMA_HALVES);
        assert_eq!(history_layout(&srgb, true), HISTORY_F32);
        assert_eq!(history_layout(&pq, true), HISTORY_F32);
        // 1 + 2^-12 is not a half float: rounded where the layout holds halves.
        let v = 1.0 + 1.0 / 4096.0;
        let held = |layout| [0, 1, 2].map(|c| history_value(layout, c, v));
        assert_eq!(held(HISTORY_F32), [v; 3]);
        assert_eq!(held(HISTORY_CHROMA_HALVES), [v, 1.0, 1.0]);
        assert_eq!(held(HISTORY_HALVES), [1.0; 3]);
    }

    #[test]
    fn the_kernels_read_only_a_consistent_ring() {
        // 9 taps on 12 slots (four lanes), full or one frame held, the oldest at either end.
        for (oldest, held) in [(0, 9), (11, 9), (11, 1), (5, 4)] {
            let t = ring(9, 12, oldest, held);
            assert!(t.is_consistent(), "{oldest} {held}");
            assert!((0..9).all(|k| t.slot(k) < 12));
        }
        // Nothing held, more held than taps, fewer slots than taps, the oldest past the ring.
        for (len, slots, oldest, held) in
            [(9, 12, 0, 0), (9, 12, 0, 10), (9, 8, 0, 8), (9, 12, 12, 9)]
        {
            assert!(!ring(len, slots, oldest, held).is_consistent());
        }
        // Each layout, and a value that names none.
        for (halves, named) in [
            (HISTORY_F32, true),
            (HISTORY_CHROMA_HALVES, true),
            (HISTORY_HALVES, true),
            (HISTORY_HALVES + 1, false),
        ] {
            let t = Temporal {
                halves,
                ..ring(9, 12, 0, 9)
            };
            assert_eq!(t.is_consistent(), named, "{halves}");
            assert_eq!(is_history_layout(halves), named);
        }
    }

    #[test]
    fn the_fused_kernel_takes_4_2_0_srgb_pairs_of_whole_runs() {
        let side = |width, height| Source {
            width,
            height,
            family: FAMILY_YCBCR,
            sub_x: 2,
            sub_y: 2,
            ..Default::default()
        };
        let srgb = Display::default();
        let (a, b) = (side(1920, 1080), side(1920, 1080));
        assert!(dkl_temporal_takes(&a, &b, &srgb, 1920, 1080));
        // A width that is not whole runs of `DKL_TEMPORAL_VEC` pixels.
        let w = 1920 - DKL_TEMPORAL_VEC / 2;
        assert!(!dkl_temporal_takes(
            &side(w, 1080),
            &side(w, 1080),
            &srgb,
            w,
            1080
        ));
        // Another size, another subsampling, another EOTF.
        assert!(!dkl_temporal_takes(
            &a,
            &side(1920, 1078),
            &srgb,
            1920,
            1080
        ));
        let full = Source { sub_x: 1, ..b };
        assert!(!dkl_temporal_takes(&a, &full, &srgb, 1920, 1080));
        let pq = Display {
            eotf: EOTF_PQ,
            ..srgb
        };
        assert!(!dkl_temporal_takes(&a, &b, &pq, 1920, 1080));
    }

    #[test]
    fn levels_give_each_block_its_level_and_place() {
        // 1080p's seven bands (mask rows), an odd size's, one band, and fifteen (the most).
        let fifteen: [(u32, u32); 15] = core::array::from_fn(|i| (4000 >> i, 9 + i as u32));
        let cases: [&[(u32, u32)]; 4] = [
            &[
                (1920, 1080),
                (960, 540),
                (480, 270),
                (240, 135),
                (120, 68),
                (60, 34),
                (30, 17),
            ],
            &[(173, 97), (87, 49), (44, 25)],
            &[(5, 3)],
            &fifteen,
        ];
        for sizes in cases {
            for rows in [BLOCK_Y, BLOCK_Y * MASK_ROWS] {
                let l = Levels::new(0, sizes, rows);
                let mut i = 0;
                for (level, &(w, h)) in sizes.iter().enumerate() {
                    for block in 0..w.div_ceil(BLOCK_X) * h.div_ceil(rows) {
                        assert_eq!(
                            l.level_of(i),
                            (level, block),
                            "{sizes:?} rows {rows} block {i}"
                        );
                        i += 1;
                    }
                }
                assert_eq!(l.blocks(), i, "{sizes:?} rows {rows}");
            }
        }
    }

    #[test]
    fn reduce_and_expand_keep_a_constant() {
        // A constant line stays constant through a reduce (both parities) and an expand.
        for n in [2u32, 3, 7, 8] {
            let out = n.div_ceil(2);
            for i in 0..out {
                let v = reduce_at(|_| 3.0, n, out, n, i);
                assert!((v - 3.0).abs() < 1e-6, "reduce n={n} i={i}: {v}");
            }
            for i in 0..n {
                let v = expand_at(|_| 3.0, out, n, i);
                assert!((v - 3.0).abs() < 1e-6, "expand n={n} i={i}: {v}");
            }
        }
    }

    #[test]
    fn bilinear_source_index_is_torch_s() {
        // ×2, align_corners false: output 0 → sample 0; output 1 → 0.25 past sample 0;
        // output 2 → 0.75 past sample 0; the last clamps at the edge.
        assert_eq!(source_index(0, 2, 4), (0, 1, 0.0));
        assert_eq!(source_index(1, 2, 4), (0, 1, 0.25));
        assert_eq!(source_index(2, 2, 4), (0, 1, 0.75));
        assert_eq!(source_index(7, 2, 4), (3, 3, 0.25));
        assert_eq!(source_index(5, 1, 4), (3, 3, 0.0));
    }

    /// Values with negative zeros, negatives and magnitudes far apart: the fast paths must
    /// give every bit of the general sums, the sign of a zero included.
    fn line(n: u32, seed: u32) -> std::vec::Vec<f32> {
        let mut v = seed.wrapping_mul(2_654_435_761) | 1;
        (0..n)
            .map(|i| {
                v ^= v << 13;
                v ^= v >> 17;
                v ^= v << 5;
                match (v >> 8) % 7 {
                    0 => -0.0,
                    1 => 0.0,
                    2 => -((v >> 9) as f32) * 1e-3,
                    3 => (i as f32) * 1e6,
                    _ => ((v >> 9) as f32) * 1e-7,
                }
            })
            .collect()
    }

    #[test]
    fn the_interior_sums_equal_the_general_ones_bit_for_bit() {
        let (mut reduced, mut expanded) = (0, 0);
        for n in 1..70u32 {
            let a = line(n, n);
            let read = |i: u32| a[i as usize];
            let n_out = n.div_ceil(2);
            for i in 0..n_out {
                if reduce_is_interior(n, n_out, i) {
                    let (fast, general) =
                        (reduce_interior(read, i), reduce_at(read, n, n_out, n, i));
                    assert_eq!(fast.to_bits(), general.to_bits(), "reduce n {n} i {i}");
                    reduced += 1;
                }
            }
            // Expand the n samples to a line of 2n − 1 and 2n (the finer level's sizes).
            for out in [2 * n - 1, 2 * n] {
                for i in 0..out {
                    if expand_is_interior(n, out, i) {
                        let fast = expand_interior(read, i);
                        let general = expand_at(read, n, out, i);
                        assert_eq!(fast.to_bits(), general.to_bits(), "expand {n}→{out} i {i}");
                        expanded += 1;
                    }
                }
            }
        }
        // Most outputs of a long line are inside.
        assert!(reduced > 1000 && expanded > 4000, "{reduced} {expanded}");
    }

    #[test]
    fn the_folded_blur_is_the_plain_sum_within_rounding() {
        let sigma = 3.0f32;
        let pdf: [f32; BLUR_TAPS] = core::array::from_fn(|i| {
            let x = (i as i32 - BLUR_RADIUS) as f32 / sigma;
            libm_exp(-0.5 * x * x)
        });
        let sum: f32 = pdf.iter().sum();
        let taps = pdf.map(|v| v / sum);
        for seed in 1..50 {
            let v = line(BLUR_TAPS as u32, seed);
            let plain: f32 = taps.iter().zip(&v).map(|(k, x)| k * x).sum();
            let folded = blur_sum(&taps, |t| v[t]);
            let scale: f32 = v.iter().map(|x| x.abs()).sum::<f32>().max(1e-30);
            assert!(
                (folded - plain).abs() <= 4.0 * f32::EPSILON * scale,
                "{folded} {plain}"
            );
        }
    }

    /// `exp` without std's (this crate is `no_std` outside tests, which have std).
    fn libm_exp(x: f32) -> f32 {
        std::primitive::f32::exp(x)
    }

    #[test]
    fn reflection_does_not_repeat_the_edge() {
        assert_eq!(reflect(-1, 5), 1);
        assert_eq!(reflect(5, 5), 3);
        assert_eq!(reflect(2, 5), 2);
    }
}
