//! Integer ADM (libvmaf v3.2.0 `integer_adm.c`) at four scales. Per scale: a Daubechies-2
//! wavelet level of the reference and distorted images (scale 0 from the `u16` samples in
//! 16-bit precision, scales 1–3 from the previous approximation band in 32 bits); per band
//! pixel the decoupling of the distorted detail bands into restored (r) and additive (a)
//! parts (libvmaf's reciprocal table and 1° angle test); then per row, over the central
//! region, three sums per band orientation: the detail loss measure's numerator (cubes of
//! the contrast-weighted r above a threshold from the contrast-weighted a of the 3×3
//! neighbourhood), the additive impairment measure's numerator (the same with the roles of
//! r and a swapped; only when [`Scale::aim`] is set) and the denominator (cubes of the
//! reference bands), each row sum rounded and shifted as libvmaf does. The contrast
//! sensitivity weighting of the masking side and its 1/30 (neighbours) and 1/15 (centre)
//! fractions are recomputed where the threshold reads them, from the stored r and a, with
//! the fixed-point steps libvmaf stores in its `csf_a`/`csf_f` buffers.
//!
//! Scale 0 follows libvmaf's 16-bit code paths (values truncated to `i16` where it stores
//! them in `int16_t`), scales 1–3 its 32-bit ones. All bands are stored as `i32`.

use super::{Plane, mirror};

/// Daubechies-2 analysis filters, Q15.
pub const LO: [i32; 4] = [15826, 27411, 7345, -4240];
pub const HI: [i32; 4] = [-4240, -7345, 27411, -15826];
const LO_SUM: i32 = 46342;

/// Band planes of a [`Dwt`]'s `bands`: reference a, v, h, d, then distorted a, v, h, d.
pub const BAND_A: u32 = 0;
pub const BAND_V: u32 = 1;
pub const BAND_H: u32 = 2;
pub const BAND_D: u32 = 3;
pub const DIS: u32 = 4;
/// Planes of a [`Scale`]'s `maps`: restored r (h, v, d), additive a (h, v, d).
pub const MAP_R: u32 = 0;
pub const MAP_A: u32 = 3;
pub const MAPS: u32 = 6;

/// cos²(1°) as libvmaf rounds it to `float`.
pub const COS_1DEG_SQ: f32 = f32::from_bits(0x3F7F_EC0A);

/// One wavelet level: `src_*` (the `u16` frame at scale 0, else the previous level's `i32`
/// approximation bands) into `bands` (8 `i32` planes of ⌈w/2⌉×⌈h/2⌉).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dwt {
    pub src_ref: Plane,
    pub src_dis: Plane,
    pub bands: Plane,
    pub scale: u32,
    pub bpc: u32,
}

/// One scale after its wavelet level.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Scale {
    /// The level's 8 band planes (see [`Dwt`]).
    pub bands: Plane,
    /// [`MAPS`] `i32` planes of the bands' size.
    pub maps: Plane,
    /// libvmaf's `adm_enhn_gain_limit` (100, or 1 for the `neg` models).
    pub gain_limit: f64,
    /// The contrast sensitivity factors of h, v, d in libvmaf's fixed point (scale 0: Q21,
    /// Q21, Q23 as `uint16_t`; scales 1–3: Q32).
    pub rfactor: [u32; 3],
    pub scale: u32,
    /// Nonzero: also measure AIM (the rows' `aim` sums); zero: those stay 0.
    pub aim: u32,
    pub _pad: u32,
}

/// One row's sums (h, v, d each): the DLM numerator, the denominator, the AIM numerator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RowSums {
    pub num: [i64; 3],
    pub den: [u64; 3],
    pub aim: [i64; 3],
}

/// `ceil(log2(n))` for n ≥ 1 (exact, as libvmaf's double `ceil(log2(n))` for integers).
#[inline(always)]
pub fn ceil_log2(n: u32) -> u32 {
    if n <= 1 {
        0
    } else {
        32 - (n - 1).leading_zeros()
    }
}

/// The central region libvmaf scores at a scale of band size w×h: (left, top, right,
/// bottom), `w·0.1 − 0.5` truncated as its `int` conversion does.
#[inline(always)]
pub fn region(w: u32, h: u32) -> (u32, u32, u32, u32) {
    let left = (w as f64 * 0.1 - 0.5) as i32;
    let top = (h as f64 * 0.1 - 0.5) as i32;
    let (left, top) = (left.max(0) as u32, top.max(0) as u32);
    (left, top, w - left, h - top)
}

#[inline(always)]
fn taps(center: i32, n: i32) -> [u32; 4] {
    [
        mirror(center - 1, n) as u32,
        mirror(center, n) as u32,
        mirror(center + 1, n) as u32,
        mirror(center + 2, n) as u32,
    ]
}

/// Scale 0's wavelet at band pixel (x, y) of one `bpc`-bit image: a, v, h, d.
///
/// # Safety
/// `src` must be readable as `u16`.
#[inline(always)]
pub unsafe fn dwt0(src: &Plane, x: u32, y: u32, bpc: u32) -> [i32; 4] {
    let rows = taps(2 * y as i32, src.height as i32);
    let cols = taps(2 * x as i32, src.width as i32);
    let round = 1i32 << (bpc - 1);
    let (mut lo, mut hi) = ([0i32; 4], [0i32; 4]);
    for c in 0..4 {
        let (mut l, mut h) = (0i32, 0i32);
        for k in 0..4 {
            let u = unsafe { src.get::<u16>(cols[c], rows[k]) } as i32;
            l = l.wrapping_add(LO[k].wrapping_mul(u));
            h = h.wrapping_add(HI[k].wrapping_mul(u));
        }
        l = l.wrapping_sub(LO_SUM.wrapping_mul(round));
        lo[c] = (l.wrapping_add(round) >> bpc) as i16 as i32;
        hi[c] = (h.wrapping_add(round) >> bpc) as i16 as i32;
    }
    let pass = |s: &[i32; 4], f: &[i32; 4]| {
        let mut a = 0i32;
        for k in 0..4 {
            a = a.wrapping_add(f[k] * s[k]);
        }
        (a.wrapping_add(32768) >> 16) as i16 as i32
    };
    [
        pass(&lo, &LO),
        pass(&lo, &HI),
        pass(&hi, &LO),
        pass(&hi, &HI),
    ]
}

/// Scales 1–3's wavelet at band pixel (x, y) of one `i32` approximation band.
///
/// # Safety
/// `src` must be readable as `i32`.
#[inline(always)]
pub unsafe fn dwt_s(src: &Plane, x: u32, y: u32, scale: u32) -> [i32; 4] {
    const VP_ROUND: [i64; 3] = [0, 32768, 32768];
    const VP_SHIFT: [u32; 3] = [0, 16, 16];
    const HP_ROUND: [i64; 3] = [16384, 32768, 16384];
    const HP_SHIFT: [u32; 3] = [15, 16, 15];
    let i = (scale - 1) as usize;
    let rows = taps(2 * y as i32, src.height as i32);
    let cols = taps(2 * x as i32, src.width as i32);
    let (mut lo, mut hi) = ([0i64; 4], [0i64; 4]);
    for c in 0..4 {
        let (mut l, mut h) = (0i64, 0i64);
        for k in 0..4 {
            let u = unsafe { src.get::<i32>(cols[c], rows[k]) } as i64;
            l += LO[k] as i64 * u;
            h += HI[k] as i64 * u;
        }
        lo[c] = ((l + VP_ROUND[i]) >> VP_SHIFT[i]) as i32 as i64;
        hi[c] = ((h + VP_ROUND[i]) >> VP_SHIFT[i]) as i32 as i64;
    }
    let pass = |s: &[i64; 4], f: &[i32; 4]| {
        let mut a = 0i64;
        for k in 0..4 {
            a += f[k] as i64 * s[k];
        }
        ((a + HP_ROUND[i]) >> HP_SHIFT[i]) as i32
    };
    [
        pass(&lo, &LO),
        pass(&lo, &HI),
        pass(&hi, &LO),
        pass(&hi, &HI),
    ]
}

/// Writes the wavelet of both images at band pixel (x, y).
///
/// # Safety
/// The sources must be readable and `bands` writable at (x, y).
#[inline(always)]
pub unsafe fn dwt_store(d: &Dwt, x: u32, y: u32) {
    let (r, s) = if d.scale == 0 {
        unsafe { (dwt0(&d.src_ref, x, y, d.bpc), dwt0(&d.src_dis, x, y, d.bpc)) }
    } else {
        unsafe {
            (
                dwt_s(&d.src_ref, x, y, d.scale),
                dwt_s(&d.src_dis, x, y, d.scale),
            )
        }
    };
    for k in 0..4 {
        unsafe {
            d.bands.nth::<i32>(k).set::<i32>(x, y, r[k as usize]);
            d.bands.nth::<i32>(DIS + k).set::<i32>(x, y, s[k as usize]);
        }
    }
}

/// libvmaf's test that (oh, ov) and (th, tv) are less than 1° apart, in its mixed
/// float/double arithmetic.
#[inline(always)]
pub fn angle_flag(oh: i32, ov: i32, th: i32, tv: i32) -> bool {
    let (oh, ov, th, tv) = (oh as i64, ov as i64, th as i64, tv as i64);
    let ot_dp = oh * th + ov * tv;
    let o_mag_sq = oh * oh + ov * ov;
    let t_mag_sq = th * th + tv * tv;
    let dp = ot_dp as f32 as f64 / 4096.0;
    dp >= 0.0
        && dp * dp
            >= COS_1DEG_SQ as f64
                * (o_mag_sq as f32 as f64 / 4096.0)
                * (t_mag_sq as f32 as f64 / 4096.0)
}

/// libvmaf's `div_lookup[i + 32768]`: 2^30 / i, negated for negative i (|i| ≤ 32768).
#[inline(always)]
fn div_lookup(i: i32) -> i64 {
    let q = (1i64 << 30) / i.unsigned_abs().max(1) as i64;
    if i < 0 { -q } else { q }
}

/// The gain clamp of a restored value (libvmaf's MIN/MAX in double, then `int` conversion).
#[inline(always)]
fn enhance(rst: i32, k: i64, o: i32, t: i32, angle: bool, gain: f64) -> i32 {
    if !angle || k <= 0 || o == 0 {
        return rst;
    }
    let e = rst as f64 * gain;
    let t = t as f64;
    if o > 0 {
        (if e < t { e } else { t }) as i32
    } else {
        (if e > t { e } else { t }) as i32
    }
}

/// Decoupling at band pixel (x, y): writes r and a.
///
/// # Safety
/// `bands` must be readable and `maps` writable at (x, y).
#[inline(always)]
pub unsafe fn decouple_store(s: &Scale, x: u32, y: u32) {
    let b = |k: u32| unsafe { s.bands.nth::<i32>(k).get::<i32>(x, y) };
    let o = [b(BAND_H), b(BAND_V), b(BAND_D)];
    let t = [b(DIS + BAND_H), b(DIS + BAND_V), b(DIS + BAND_D)];
    let angle = angle_flag(o[0], o[1], t[0], t[1]);
    for theta in 0..3u32 {
        let (o, t) = (o[theta as usize], t[theta as usize]);
        let (r, a);
        if s.scale == 0 {
            let tmp_k = if o == 0 {
                32768
            } else {
                ((div_lookup(o) * t as i64 + 16384) >> 15) as i32
            };
            let k = tmp_k.clamp(0, 32768);
            let rst = ((k * o + 16384) >> 15) as i16 as i32;
            r = enhance(rst, k as i64, o, t, angle, s.gain_limit) as i16 as i32;
            a = t.wrapping_sub(r) as i16 as i32;
        } else {
            let abs_o = o.unsigned_abs();
            let (msb, shift) = if abs_o < 32768 {
                (abs_o, 0u32)
            } else {
                let k = 17 - abs_o.leading_zeros();
                (((abs_o as u64 + (1u64 << (k - 1))) >> k) as u16 as u32, k)
            };
            let sign: i64 = if o < 0 { -1 } else { 1 };
            let tmp_k: i64 = if o == 0 {
                32768
            } else {
                let round = 1i32.wrapping_shl(14 + shift) as i64;
                ((div_lookup(msb as i32) * t as i64) * sign + round) >> (15 + shift)
            };
            let k = tmp_k.clamp(0, 32768);
            let rst = ((k * o as i64 + 16384) >> 15) as i32;
            r = enhance(rst, k, o, t, angle, s.gain_limit);
            a = t.wrapping_sub(r);
        }
        unsafe {
            s.maps.nth::<i32>(MAP_R + theta).set::<i32>(x, y, r);
            s.maps.nth::<i32>(MAP_A + theta).set::<i32>(x, y, a);
        }
    }
}

/// The contrast-sensitivity-weighted value of a decoupled value `v` of orientation `theta`
/// (libvmaf's `csf_a`: `int16_t` at scale 0).
#[inline(always)]
fn csf(s: &Scale, theta: u32, v: i32) -> i32 {
    let rf = s.rfactor[theta as usize];
    if s.scale == 0 {
        const SHIFTS: [u32; 3] = [15, 15, 17];
        const ADDS: [i32; 3] = [16384, 16384, 65535];
        let dst = (rf as i32).wrapping_mul(v);
        (dst.wrapping_add(ADDS[theta as usize]) >> SHIFTS[theta as usize]) as i16 as i32
    } else {
        ((rf as i64 * v as i64 + (1 << 27)) >> 28) as i32
    }
}

/// A thirtieth of |c| for a weighted value c (libvmaf's `csf_f`, a neighbour's share of
/// the threshold).
#[inline(always)]
fn thirtieth(s: &Scale, c: i32) -> i32 {
    if s.scale == 0 {
        ((4369 * c.abs() + 2048) >> 12) as i16 as i32
    } else {
        ((143165577i64 * c.wrapping_abs() as i64 - (1i64 << 31)) >> 32) as i32
    }
}

/// A fifteenth of |c| (the centre's share of the threshold).
#[inline(always)]
fn fifteenth(s: &Scale, c: i32) -> i32 {
    if s.scale == 0 {
        ((8738 * c.abs() + 2048) >> 12) as i16 as i32
    } else {
        ((286331153i64 * c.wrapping_abs() as i64 - (1i64 << 31)) >> 32) as i32
    }
}

/// The masking threshold at (x, y) from the decoupled planes at `mask` ([`MAP_A`] for
/// DLM, [`MAP_R`] for AIM): per band, the 3×3 sum of the weighted values' thirtieths with
/// the centre's replaced by its fifteenth, summed over the three bands.
///
/// # Safety
/// `maps` must be readable.
#[inline(always)]
unsafe fn threshold(s: &Scale, mask: u32, x: u32, y: u32) -> i32 {
    let (w, h) = (s.maps.width as i32, s.maps.height as i32);
    let rows = [mirror(y as i32 - 1, h), y as i32, mirror(y as i32 + 1, h)];
    let cols = [mirror(x as i32 - 1, w), x as i32, mirror(x as i32 + 1, w)];
    let mut thr = 0i32;
    for theta in 0..3 {
        let m = s.maps.nth::<i32>(mask + theta);
        let mut sum = 0i32;
        for (i, &r) in rows.iter().enumerate() {
            for (j, &c) in cols.iter().enumerate() {
                let v = csf(s, theta, unsafe { m.get::<i32>(c as u32, r as u32) });
                sum = sum.wrapping_add(if i == 1 && j == 1 {
                    fifteenth(s, v)
                } else {
                    thirtieth(s, v)
                });
            }
        }
        thr = thr.wrapping_add(sum);
    }
    thr
}

/// The masked cube of one restored value (libvmaf's `ADM_CM_ACCUM_ROUND`).
#[inline(always)]
fn masked_cube(x: i32, thr: i32, sub: u32, sq_shift: u32, cub_shift: u32) -> i64 {
    let x = (x.wrapping_abs().wrapping_sub(thr << sub)).max(0);
    let x_sq = ((x as i64 * x as i64 + (1i64 << (sq_shift - 1))) >> sq_shift) as i32;
    let round = if cub_shift == 0 {
        0
    } else {
        1i64 << (cub_shift - 1)
    };
    (x_sq as i64 * x as i64 + round) >> cub_shift
}

/// A numerator's masked cubes of band pixel (x, y), for h, v, d: DLM's (r masked by a)
/// or, with `aim`, AIM's (a masked by r).
///
/// # Safety
/// `maps` must be readable.
#[inline(always)]
pub unsafe fn cm_pixel(s: &Scale, x: u32, y: u32, aim: bool) -> [i64; 3] {
    let (value, mask) = if aim { (MAP_A, MAP_R) } else { (MAP_R, MAP_A) };
    let thr = unsafe { threshold(s, mask, x, y) };
    let r = |k: u32| unsafe { s.maps.nth::<i32>(value + k).get::<i32>(x, y) };
    let w = s.maps.width;
    if s.scale == 0 {
        let cub = ceil_log2(w) - 4;
        let x = |k: u32| r(k).wrapping_mul(s.rfactor[k as usize] as i32);
        [
            masked_cube(x(0), thr, 10, 29, cub),
            masked_cube(x(1), thr, 10, 29, cub),
            masked_cube(x(2), thr, 12, 30, cub + 1),
        ]
    } else {
        let cub = ceil_log2(w);
        let x = |k: u32| ((r(k) as i64 * s.rfactor[k as usize] as i64 + (1 << 27)) >> 28) as i32;
        [
            masked_cube(x(0), thr, 0, 30, cub),
            masked_cube(x(1), thr, 0, 30, cub),
            masked_cube(x(2), thr, 0, 30, cub),
        ]
    }
}

/// The denominator's cubes of reference band pixel (x, y), for h, v, d.
///
/// # Safety
/// `bands` must be readable.
#[inline(always)]
pub unsafe fn den_pixel(s: &Scale, x: u32, y: u32) -> [u64; 3] {
    let b = |k: u32| unsafe { s.bands.nth::<i32>(k).get::<i32>(x, y) };
    let v = [b(BAND_H), b(BAND_V), b(BAND_D)];
    if s.scale == 0 {
        v.map(|v| {
            let a = v.unsigned_abs() as u16 as u64;
            a * a * a
        })
    } else {
        const SQ_SHIFT: [u32; 3] = [31, 30, 31];
        let sq = SQ_SHIFT[s.scale as usize - 1];
        let (left, _, right, _) = region(s.bands.width, s.bands.height);
        let cub = ceil_log2(right - left);
        let round = if cub == 0 { 0 } else { 1u64 << (cub - 1) };
        v.map(|v| {
            let a = v.unsigned_abs() as u64;
            ((((a * a) + (1u64 << sq)) >> sq) * a + round) >> cub
        })
    }
}

/// The row shifts of a scale: (numerator shift, denominator shift).
#[inline(always)]
pub fn row_shifts(s: &Scale) -> (u32, u32) {
    let (w, h) = (s.bands.width, s.bands.height);
    let (left, top, right, bottom) = region(w, h);
    let num = ceil_log2(h);
    let den = if s.scale == 0 {
        ceil_log2((bottom - top) * (right - left)).saturating_sub(20)
    } else {
        ceil_log2(bottom - top)
    };
    (num, den)
}

#[inline(always)]
fn round_shift_i(v: i64, shift: u32) -> i64 {
    if shift == 0 {
        v
    } else {
        (v + (1i64 << (shift - 1))) >> shift
    }
}

#[inline(always)]
fn round_shift_u(v: u64, shift: u32) -> u64 {
    if shift == 0 {
        v
    } else {
        (v + (1u64 << (shift - 1))) >> shift
    }
}

/// Row `y`'s sums, rounded and shifted as libvmaf does per row; rows outside the central
/// region give zeros.
///
/// # Safety
/// `bands` and `maps` must be readable.
#[inline(always)]
pub unsafe fn row(s: &Scale, y: u32) -> RowSums {
    let (left, top, right, bottom) = region(s.bands.width, s.bands.height);
    let mut sums = RowSums::default();
    if y < top || y >= bottom {
        return sums;
    }
    for x in left..right {
        let c = unsafe { cm_pixel(s, x, y, false) };
        let d = unsafe { den_pixel(s, x, y) };
        let a = if s.aim != 0 {
            unsafe { cm_pixel(s, x, y, true) }
        } else {
            [0; 3]
        };
        for k in 0..3 {
            sums.num[k] = sums.num[k].wrapping_add(c[k]);
            sums.den[k] = sums.den[k].wrapping_add(d[k]);
            sums.aim[k] = sums.aim[k].wrapping_add(a[k]);
        }
    }
    row_finish(s, &sums)
}

/// Applies the row shifts to a row's raw sums (what [`row`] returns).
#[inline(always)]
pub fn row_finish(s: &Scale, raw: &RowSums) -> RowSums {
    let (ns, ds) = row_shifts(s);
    RowSums {
        num: raw.num.map(|v| round_shift_i(v, ns)),
        den: raw.den.map(|v| round_shift_u(v, ds)),
        aim: raw.aim.map(|v| round_shift_i(v, ns)),
    }
}
