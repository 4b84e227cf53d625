//! Integer VIF (libvmaf v3.1.0 `integer_vif.c`) at four scales. Per scale: a vertical pass of
//! the separable filter over the reference and distorted images gives five planes (μ₁, μ₂ in
//! 16 bits; x², y², xy in 32 bits), a horizontal pass over them gives σ₁², σ₂², σ₁₂ per
//! pixel and its contribution to four integer sums (log₂ terms through libvmaf's 2048·log₂
//! table, and the non-log terms). Between scales the images are filtered and decimated 2:1.
//! Edges are reflected without repeating the edge sample ([`reflect`]).

use super::{Plane, reflect};

/// Filter taps per scale (Q16), zero-padded.
pub const FILTERS: [[u16; 17]; 4] = [
    [
        489, 935, 1640, 2640, 3896, 5274, 6547, 7455, 7784, 7455, 6547, 5274, 3896, 2640, 1640,
        935, 489,
    ],
    [
        1244, 3663, 7925, 12590, 14692, 12590, 7925, 3663, 1244, 0, 0, 0, 0, 0, 0, 0, 0,
    ],
    [
        3571, 16004, 26386, 16004, 3571, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ],
    [
        10904, 43728, 10904, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ],
];
/// Taps per scale.
pub const WIDTHS: [u32; 4] = [17, 9, 5, 3];

/// Entries of the log₂ table: `table[i − LOG2_BASE] = round(2048·log₂ i)` (log₂ in f32, as
/// libvmaf's `log_generate`) for i in 32768..65536, the only indices libvmaf reads.
pub const LOG2_LEN: usize = 32768;
pub const LOG2_BASE: u32 = 32768;

/// σ_N² of libvmaf, in its Q16 units.
const SIGMA_NSQ: i32 = 65536 << 1;

/// Output columns of one block of `vmaf_vif_fused`.
pub const FUSED_W: u32 = 64;
/// Output rows of one block of `vmaf_vif_fused`.
pub const FUSED_H: u32 = 16;
/// Threads of one block of `vmaf_vif_fused`.
pub const FUSED_THREADS: u32 = 256;
/// Columns of the vertical pass that one block of `vmaf_vif_fused` keeps: its outputs' and
/// the widest filter's reach on either side.
pub const FUSED_COLS: u32 = FUSED_W + 16;

// A block reduces its sums through one shared slot per warp of a row block.
const _: () = assert!(FUSED_THREADS as usize == 32 * super::ROW_WARPS);
const _: () = assert!(FUSED_COLS >= FUSED_W + WIDTHS[0] - 1);

/// Source columns (and rows) of the tile that one `TILE`×`TILE` block of `vmaf_vif_down`
/// stages: twice its outputs and the next scale's widest filter's reach.
pub const DOWN_SRC: u32 = 40;
const _: () = assert!(DOWN_SRC == 2 * super::TILE + WIDTHS[1] - 1);

/// One scale of one pair.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VifScale {
    /// The `u16` images at this scale (width, height of this scale).
    pub reference: Plane,
    pub distorted: Plane,
    /// Five consecutive `u32` planes of this scale's size: μ₁, μ₂, x², y², xy after the
    /// vertical pass ([`vertical_store`], [`pixel`]: the host's passes). `vmaf_vif_fused`
    /// keeps the pass in shared memory and does not read it.
    pub tmp: Plane,
    /// The log₂ table ([`LOG2_LEN`] `u16` values).
    pub log2: u64,
    /// libvmaf's `vif_enhn_gain_limit` (100, or 1 for the `neg` models).
    pub gain_limit: f64,
    /// 0..=3.
    pub scale: u32,
    /// Bits per sample of the scale-0 images.
    pub bpc: u32,
}

/// A pixel's or a row's contribution; the engine turns the four sums of a scale into
/// libvmaf's num/den.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sums {
    pub num_log: i64,
    pub den_log: i64,
    pub num_non_log: i64,
    pub den_non_log: i64,
}

impl Sums {
    #[inline(always)]
    pub fn add(&mut self, o: &Sums) {
        self.num_log = self.num_log.wrapping_add(o.num_log);
        self.den_log = self.den_log.wrapping_add(o.den_log);
        self.num_non_log = self.num_non_log.wrapping_add(o.num_non_log);
        self.den_non_log = self.den_non_log.wrapping_add(o.den_non_log);
    }

    #[inline(always)]
    pub fn to_array(self) -> [i64; 4] {
        [
            self.num_log,
            self.den_log,
            self.num_non_log,
            self.den_non_log,
        ]
    }
}

/// libvmaf's `log2_32`: 2048·log₂(v) from the table, v ≥ 2^16.
///
/// # Safety
/// `table` must hold [`LOG2_LEN`] values.
#[inline(always)]
pub unsafe fn log2_32(table: *const u16, v: u32) -> i32 {
    let k = 16 - v.leading_zeros() as i32;
    let t = v >> k;
    unsafe { *table.add((t - LOG2_BASE) as usize) as i32 + 2048 * k }
}

/// libvmaf's `log2_64`: 2048·log₂(v) from the table, v ≥ 2^17.
///
/// # Safety
/// `table` must hold [`LOG2_LEN`] values.
#[inline(always)]
pub unsafe fn log2_64(table: *const u16, v: u64) -> i32 {
    let k = 48 - v.leading_zeros() as i32;
    let t = (v >> k) as u32;
    unsafe { *table.add((t - LOG2_BASE) as usize) as i32 + 2048 * k }
}

/// The vertical pass at (x, y): μ₁, μ₂, x², y², xy, rounded as libvmaf rounds them at this
/// scale (scale 0 normalises `bpc`-bit samples to 8-bit units).
///
/// # Safety
/// The images must be readable.
#[inline(always)]
pub unsafe fn vertical(s: &VifScale, x: u32, y: u32) -> [u32; 5] {
    let scale = s.scale as usize;
    let fw = WIDTHS[scale] as i32;
    let h = s.reference.height as i32;
    let (mut m1, mut m2) = (0u32, 0u32);
    let (mut xx, mut yy, mut xy) = (0u64, 0u64, 0u64);
    for k in 0..fw {
        let row = reflect(y as i32 - fw / 2 + k, h) as u32;
        let f = FILTERS[scale][k as usize] as u32;
        let a = unsafe { s.reference.get::<u16>(x, row) } as u32;
        let b = unsafe { s.distorted.get::<u16>(x, row) } as u32;
        let (fa, fb) = (f * a, f * b);
        m1 = m1.wrapping_add(fa);
        m2 = m2.wrapping_add(fb);
        xx += fa as u64 * a as u64;
        yy += fb as u64 * b as u64;
        xy += fa as u64 * b as u64;
    }
    let (shift, round, sq_shift, sq_round) = if scale == 0 {
        let sq = 2 * (s.bpc - 8);
        (
            s.bpc,
            1u32 << (s.bpc - 1),
            sq,
            if sq == 0 { 0 } else { 1u64 << (sq - 1) },
        )
    } else {
        (16, 32768, 16, 32768)
    };
    [
        (m1.wrapping_add(round) >> shift) as u16 as u32,
        (m2.wrapping_add(round) >> shift) as u16 as u32,
        ((xx + sq_round) >> sq_shift) as u32,
        ((yy + sq_round) >> sq_shift) as u32,
        ((xy + sq_round) >> sq_shift) as u32,
    ]
}

/// Writes [`vertical`] at (x, y) into the five `tmp` planes.
///
/// # Safety
/// As [`vertical`]; `tmp` must be writable at (x, y).
#[inline(always)]
pub unsafe fn vertical_store(s: &VifScale, x: u32, y: u32) {
    let v = unsafe { vertical(s, x, y) };
    for (k, &v) in v.iter().enumerate() {
        unsafe { s.tmp.nth::<u32>(k as u32).set::<u32>(x, y, v) };
    }
}

/// The horizontal pass at (x, y) of the vertical pass's planes, and the pixel's terms.
///
/// # Safety
/// `tmp` must hold the vertical pass of row `y`; `log2` must be the table.
#[inline(always)]
pub unsafe fn pixel(s: &VifScale, x: u32, y: u32) -> Sums {
    let fw = WIDTHS[s.scale as usize] as i32;
    let w = s.tmp.width as i32;
    let planes = [
        s.tmp,
        s.tmp.nth::<u32>(1),
        s.tmp.nth::<u32>(2),
        s.tmp.nth::<u32>(3),
        s.tmp.nth::<u32>(4),
    ];
    let m = horizontal(s.scale, |k| {
        let col = reflect(x as i32 - fw / 2 + k as i32, w) as u32;
        planes.map(|p| unsafe { p.get::<u32>(col, y) })
    });
    unsafe { stat(s, None, m).0 }
}

/// A pixel's filtered means and (co)variances: μ₁, μ₂ (wrapping `u32`), x², y², xy.
pub type Moments = (u32, u32, u64, u64, u64);

/// The horizontal pass of one pixel at `scale`: `tap(k)` gives the vertical pass's five
/// values under the filter's tap `k` (the column `x − width/2 + k`, reflected).
#[inline(always)]
pub fn horizontal(scale: u32, tap: impl Fn(u32) -> [u32; 5]) -> Moments {
    let scale = scale as usize;
    let (mut m1, mut m2) = (0u32, 0u32);
    let (mut xx, mut yy, mut xy) = (0u64, 0u64, 0u64);
    for k in 0..WIDTHS[scale] {
        let f = FILTERS[scale][k as usize] as u32;
        let v = tap(k);
        m1 = m1.wrapping_add(f * v[0]);
        m2 = m2.wrapping_add(f * v[1]);
        xx += f as u64 * v[2] as u64;
        yy += f as u64 * v[3] as u64;
        xy += f as u64 * v[4] as u64;
    }
    (m1, m2, xx, yy, xy)
}

/// A pixel's terms from its moments (libvmaf's per-pixel statistic); with `second`
/// (another model's gain limit, the only option in which it differs) also that model's
/// `num_log`, its one term that differs (0 without).
///
/// # Safety
/// `s.log2` must be the table.
#[inline(always)]
pub unsafe fn stat(s: &VifScale, second: Option<f64>, m: Moments) -> (Sums, i64) {
    let (m1, m2, xx, yy, xy) = m;
    let table = s.log2 as *const u16;
    let sq = |a: u32, b: u32| ((a as u64 * b as u64 + 2147483648) >> 32) as u32;
    let filt = |v: u64| ((v + 32768) >> 16) as u32;
    let sigma1_sq = filt(xx).wrapping_sub(sq(m1, m1)) as i32;
    let sigma2_sq = (filt(yy).wrapping_sub(sq(m2, m2)) as i32).max(0);
    let sigma12 = filt(xy).wrapping_sub(sq(m1, m2)) as i32;
    let mut out = Sums::default();
    let mut num_log2 = 0;
    if sigma1_sq >= SIGMA_NSQ {
        out.den_log = (unsafe { log2_32(table, SIGMA_NSQ.wrapping_add(sigma1_sq) as u32) }
            - 2048 * 17) as i64;
        if sigma12 > 0 && sigma2_sq > 0 {
            const EPS: f64 = 65536.0 * 1.0e-10;
            let g = sigma12 as f64 / (sigma1_sq as f64 + EPS);
            let sv_sq = ((sigma2_sq as f64 - g * sigma12 as f64) as i32).max(0);
            let numer1 = sv_sq.wrapping_add(SIGMA_NSQ) as u32;
            let log_numer1 = unsafe { log2_64(table, numer1 as u64) };
            // The gain is limited after σ_v² is computed from it.
            let num_log = |limit: f64| {
                let g = if g > limit { limit } else { g };
                let numer1_tmp = (g * g * sigma1_sq as f64) as i64 + numer1 as i64;
                (unsafe { log2_64(table, numer1_tmp as u64) } - log_numer1) as i64
            };
            out.num_log = num_log(s.gain_limit);
            if let Some(limit) = second {
                num_log2 = num_log(limit);
            }
        }
    } else {
        out.num_non_log = sigma2_sq as i64;
        out.den_non_log = 1;
    }
    (out, num_log2)
}

/// The next scale's sample (x, y) of both images: this scale filtered with the next
/// scale's filter (vertical pass rounded to 16 bits, as libvmaf's `subsample_rd`), taken at
/// (2x, 2y).
///
/// # Safety
/// The images must be readable.
#[inline(always)]
pub unsafe fn down(s: &VifScale, x: u32, y: u32) -> (u16, u16) {
    let fw = WIDTHS[s.scale as usize + 1] as i32;
    let (w, h) = (s.reference.width as i32, s.reference.height as i32);
    let (cx, cy) = (2 * x as i32, 2 * y as i32);
    down_horizontal(s.scale, |j| {
        let col = reflect(cx - fw / 2 + j as i32, w) as u32;
        down_vertical(s.scale, s.bpc, |k| {
            let row = reflect(cy - fw / 2 + k as i32, h) as u32;
            unsafe {
                (
                    s.reference.get::<u16>(col, row),
                    s.distorted.get::<u16>(col, row),
                )
            }
        })
    })
}

/// The vertical pass of [`down`] over one column of both images at `scale` (the images'
/// scale): `sample(k)` gives the samples under the next scale's filter tap `k`; the sums
/// rounded to 16 bits.
#[inline(always)]
pub fn down_vertical(scale: u32, bpc: u32, sample: impl Fn(u32) -> (u16, u16)) -> (u16, u16) {
    let next = scale as usize + 1;
    let (shift, round) = if scale == 0 {
        (bpc, 1u32 << (bpc - 1))
    } else {
        (16, 32768)
    };
    let (mut vr, mut vd) = (0u32, 0u32);
    for k in 0..WIDTHS[next] {
        let f = FILTERS[next][k as usize] as u32;
        let (a, b) = sample(k);
        vr = vr.wrapping_add(f * a as u32);
        vd = vd.wrapping_add(f * b as u32);
    }
    (
        (vr.wrapping_add(round) >> shift) as u16,
        (vd.wrapping_add(round) >> shift) as u16,
    )
}

/// The horizontal pass of [`down`]: `column(j)` gives the vertical pass under the next
/// scale's filter tap `j`.
#[inline(always)]
pub fn down_horizontal(scale: u32, column: impl Fn(u32) -> (u16, u16)) -> (u16, u16) {
    let next = scale as usize + 1;
    let (mut ar, mut ad) = (0u32, 0u32);
    for j in 0..WIDTHS[next] {
        let f = FILTERS[next][j as usize] as u32;
        let (a, b) = column(j);
        ar = ar.wrapping_add(f * a as u32);
        ad = ad.wrapping_add(f * b as u32);
    }
    (
        (ar.wrapping_add(32768) >> 16) as u16,
        (ad.wrapping_add(32768) >> 16) as u16,
    )
}
