//! CAMBI (Netflix's contrast-aware multiscale banding index) of one frame's luma, computed
//! as libvmaf 3.2.0's `cambi` feature extractor computes it (its plain C path), step by
//! step, so that each step can run per pixel or per row on the host or on the GPU:
//!
//! 1. **Working plane** ([`convert_row`]): the luma is brought to the encoding size
//!    (`enc_width`×`enc_height`, at most the input's) by nearest-sample decimation (the
//!    source positions come from [`nearest_positions`], once per plan) and to 10 bits
//!    ([`to_10bit`]: shifted up from 8 or 9 bits, rounded down from 12 or 16).
//! 2. **Anti-dithering** ([`anti_dither_row`], only when the encoding depth is below 10):
//!    each sample becomes the truncated mean of its 2×2 block to the right and below (a
//!    1×2 or 2×1 mean on the last column and row).
//! 3. **Spatial mask** ([`flat_row`], [`mask_row`]): a pixel is *flat* when it equals its
//!    right and lower neighbours (the frame's edges count as equal); a pixel is in the mask
//!    when more than [`mask_index`] pixels of the 7×7 window around it (clipped to the
//!    frame) are flat. The mask is made once, at the encoding size.
//! 4. **Five scales**: scale 0 is the working plane (halved first with the high-resolution
//!    speed-up); each next scale keeps every second sample of every second row of the
//!    previous scale's filtered plane and of the mask ([`decimate_row`]). Every scale's
//!    plane is filtered by a 3×3 separable mode filter ([`mode_row`]: the mode of three
//!    horizontal neighbours, then of three vertical ones; the first and last rows and the
//!    side columns of the horizontal pass are kept).
//! 5. **C-values** ([`c_value`]): for every masked pixel of value `v`, with `p0` the number
//!    of masked pixels of value `v` in the `window`×`window` square around it (clipped)
//!    and, for each contrast step `d = 1..=2^max_log_contrast` whose visibility condition
//!    holds ([`Contrast`]), `p` the larger of the counts of `v + d` and `v − d`: the
//!    largest `weight(d)·p0·p / (p0 + p)` (an f32: the integer product times the f32
//!    reciprocal of libvmaf's table, [`Contrast::recip`]). Unmasked pixels have 0. The host
//!    slides one histogram per column down the rows ([`Histograms`]); a GPU can count the
//!    window directly ([`window_count`]): the counts, hence the values, are the same.
//! 6. **Pooling** ([`topk_len`], [`combine`]): each scale's score is the mean (f64) of its
//!    `topk` largest c-values; the frame's is `Σ score_s·{16, 8, 4, 2, 1}_s / window²`,
//!    capped at `cambi_max_val`.
//!
//! The setup that needs `pow` (the visibility thresholds of the EOTF, libvmaf's reciprocal
//! table) is the host's (the engine's `metric::cambi`); it arrives here as [`Contrast`].

/// Scales of the pyramid.
pub const SCALES: usize = 5;
/// Weight of each scale's score.
pub const SCALE_WEIGHTS: [u32; SCALES] = [16, 8, 4, 2, 1];
/// Weight of each contrast step `d` (index `d − 1`): the suprathreshold response.
pub const CONTRAST_WEIGHTS: [u32; MAX_DIFFS] = [
    1, 2, 3, 4, 4, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9,
];
/// Most contrast steps (`2^5`, `max_log_contrast` ≤ 5).
pub const MAX_DIFFS: usize = 32;
/// Side of the flatness window of the mask.
pub const MASK_WINDOW: u32 = 7;
/// libvmaf refuses frames whose encoding width and height are both below this.
pub const MIN_SIDE: u32 = 216;
/// Entries of libvmaf's reciprocal table: the adjusted window's area must be below it.
pub const RECIP_LEN: usize = 4226;

/// Threads of the GPU's plane kernels: `PLANE_W`×`PLANE_H` per block.
pub const PLANE_W: u32 = 32;
pub const PLANE_H: u32 = 8;
/// Columns of one strip of the GPU's c-values: a thread per column (two warps, which share
/// the strip's counts, so that the counts of the `half` columns on each side are kept for
/// 64 columns, not 32).
pub const STRIP: u32 = 64;
/// Threads per block of the GPU's top-k passes, and their warps.
pub const TOPK_THREADS: u32 = 256;
pub const TOPK_WARPS: usize = 8;
/// Bins of the largest top-k histogram ([`topk::BINS`]) and the groups the GPU's
/// selection sums them in.
pub const HIST_BINS: usize = 2048;
pub const SELECT_GROUPS: usize = 64;

/// A plane of 10-bit (or 0/1 mask) samples in 16-bit cells, `stride` cells per row.
/// Crosses the kernel boundary by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Plane16 {
    /// Address of the first cell.
    pub ptr: u64,
    /// Cells between rows (at least `width`).
    pub stride: u32,
    pub width: u32,
    pub height: u32,
    pub _pad: u32,
}

impl Plane16 {
    /// The plane of `w`×`h` samples at `ptr`, rows `stride` cells apart.
    pub fn new(ptr: *const u16, stride: u32, w: u32, h: u32) -> Plane16 {
        Plane16 {
            ptr: ptr as u64,
            stride,
            width: w,
            height: h,
            _pad: 0,
        }
    }

    /// Sample (x, y).
    ///
    /// # Safety
    /// x < width, y < height, and the plane's cells readable.
    #[inline(always)]
    pub unsafe fn at(&self, x: u32, y: u32) -> u32 {
        unsafe { *self.row(y).add(x as usize) as u32 }
    }

    /// Start of row `y`.
    #[inline(always)]
    pub fn row(&self, y: u32) -> *const u16 {
        (self.ptr as *const u16).wrapping_add(y as usize * self.stride as usize)
    }
}

/// A luma sample of `depth` bits as a 10-bit one, as libvmaf's preprocessing makes it:
/// shifted left from 8 bits or fewer, doubled from 9, `(v + 2^(s−1)) >> s` from deeper
/// (`s = depth − 10`). `v` above `2^depth − 1` is clamped to it first (libvmaf refuses such
/// frames; a frame here is never refused for its sample values).
#[inline(always)]
pub fn to_10bit(v: u32, depth: u32) -> u16 {
    let max = (1u32 << depth) - 1;
    let v = if v > max { max } else { v };
    if depth <= 10 {
        (v << (10 - depth)) as u16
    } else {
        let s = depth - 10;
        ((v + (1 << (s - 1))) >> s) as u16
    }
}

/// The source index of each of `out.len()` output positions when `in_len` samples are
/// decimated to `out.len()`: libvmaf's nearest-sample walk, whose f32 position starts at
/// `ratio/2 − 0.5` (`ratio = in/out` in f32) and steps by `ratio` in f32, each position
/// rounded as `(int)(pos + 0.5)` in f64. The identity when the sizes are equal.
pub fn nearest_positions(in_len: u32, out: &mut [u32]) {
    let n = out.len() as u32;
    if n == 0 {
        return;
    }
    let ratio = in_len as f32 / n as f32;
    let mut pos = ((ratio / 2.0) as f64 - 0.5) as f32;
    for o in out.iter_mut() {
        let i = (pos as f64 + 0.5) as i32;
        let i = if i < 0 { 0 } else { i as u32 };
        *o = if i >= in_len { in_len - 1 } else { i };
        pos += ratio;
    }
}

/// The source luma as [`convert_row`] reads it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Source {
    pub chan: crate::channel::Channel,
    /// Significant bits of the samples (8 to 16).
    pub depth: u32,
    pub _pad: u32,
}

/// Row `y` of the working plane: source row `rows_y` (from [`nearest_positions`]), the
/// samples at `cols[0..w]`, in 10 bits ([`to_10bit`]), written to `out[0..w]`.
///
/// # Safety
/// `src_row` must be source row `rows_y` of `s.chan`, readable at every index of `cols`;
/// `cols` and `out` must hold `w` values.
#[inline]
pub unsafe fn convert_row(s: &Source, src_row: *const u8, cols: *const u32, w: u32, out: *mut u16) {
    for x in 0..w as usize {
        let c = unsafe { *cols.add(x) };
        let v = unsafe { crate::channel::load(src_row, c, &s.chan) };
        unsafe { *out.add(x) = to_10bit(v, s.depth) };
    }
}

/// Anti-dithered sample (x, y) of a `w`×`h` plane whose samples `at` gives (step 2 of the
/// module's list): the host reads a converted plane, a GPU thread converts the source
/// samples it needs on the fly.
#[inline(always)]
pub fn anti_dither_with(at: impl Fn(u32, u32) -> u32, w: u32, h: u32, x: u32, y: u32) -> u16 {
    let right = x + 1 < w;
    let below = y + 1 < h;
    let a = at(x, y);
    let v = match (right, below) {
        (true, true) => (a + at(x + 1, y) + at(x, y + 1) + at(x + 1, y + 1)) >> 2,
        (false, true) => (a + at(x, y + 1)) >> 1,
        (true, false) => (a + at(x + 1, y)) >> 1,
        (false, false) => a,
    };
    v as u16
}

/// Anti-dithered sample (x, y) of `p` ([`anti_dither_with`]).
///
/// # Safety
/// x < width, y < height of a readable `p`.
#[inline(always)]
pub unsafe fn anti_dither(p: &Plane16, x: u32, y: u32) -> u16 {
    anti_dither_with(|x, y| unsafe { p.at(x, y) }, p.width, p.height, x, y)
}

/// Working-plane sample (x, y) straight from the source (steps 1 and 2 in one): the
/// converted sample, anti-dithered when `anti` is set. `rows` and `cols` are the source
/// positions of the `w`×`h` encoding size ([`nearest_positions`]).
///
/// # Safety
/// `rows` and `cols` hold `h` and `w` positions inside the source, whose rows are readable
/// at every position of `cols`; x < w, y < h.
#[inline(always)]
pub unsafe fn working_sample(
    s: &Source,
    rows: *const u32,
    cols: *const u32,
    (w, h): (u32, u32),
    anti: bool,
    x: u32,
    y: u32,
) -> u16 {
    let at = |x: u32, y: u32| unsafe {
        let sy = *rows.add(y as usize);
        let row = (s.chan.ptr + sy as u64 * s.chan.pitch as u64) as *const u8;
        to_10bit(
            crate::channel::load(row, *cols.add(x as usize), &s.chan),
            s.depth,
        ) as u32
    };
    if anti {
        anti_dither_with(at, w, h, x, y)
    } else {
        at(x, y) as u16
    }
}

/// Row `y` of the anti-dithered plane of `p`, written to `out[0..width]`.
///
/// # Safety
/// As [`anti_dither`]; `out` holds `width` values and is not `p`'s memory.
#[inline]
pub unsafe fn anti_dither_row(p: &Plane16, y: u32, out: *mut u16) {
    for x in 0..p.width {
        unsafe { *out.add(x as usize) = anti_dither(p, x, y) };
    }
}

/// The mask's threshold for a `w`×`h` plane: more flat pixels than this in a 7×7 window.
pub fn mask_index(w: u32, h: u32) -> u32 {
    let blocks = (w >> 6) * (h >> 6);
    let log = if blocks == 0 {
        0
    } else {
        32 - (blocks - 1).leading_zeros() as i32
    };
    let side = MASK_WINDOW as i32;
    ((side * side + 3 * (log - 11) - 1) >> 1) as u32
}

/// 1 when pixel (x, y) equals its right and lower neighbours (an edge counts as equal).
///
/// # Safety
/// x < width, y < height of a readable `p`.
#[inline(always)]
pub unsafe fn flat(p: &Plane16, x: u32, y: u32) -> u8 {
    let v = unsafe { p.at(x, y) };
    let h = x + 1 == p.width || v == unsafe { p.at(x + 1, y) };
    let d = y + 1 == p.height || v == unsafe { p.at(x, y + 1) };
    (h && d) as u8
}

/// Row `y` of the flatness map of `p` ([`flat`]), written to `out[0..width]`.
///
/// # Safety
/// As [`flat`]; `out` holds `width` values.
#[inline]
pub unsafe fn flat_row(p: &Plane16, y: u32, out: *mut u8) {
    for x in 0..p.width {
        unsafe { *out.add(x as usize) = flat(p, x, y) };
    }
}

/// Row `y` of the mask from the `w`×`h` flatness map `flats` (rows `w` apart): 1 where
/// the 7×7 window (clipped) holds more than `index` flat pixels, written to `out[0..w]`.
///
/// # Safety
/// `flats` must hold `w·h` values, `out` `w`.
#[inline]
pub unsafe fn mask_row(flats: *const u8, w: u32, h: u32, y: u32, index: u32, out: *mut u16) {
    let half = MASK_WINDOW / 2;
    let top = y.saturating_sub(half);
    let bottom = if y + half + 1 < h { y + half + 1 } else { h };
    let column = |x: u32| -> u32 {
        let mut s = 0;
        for r in top..bottom {
            s += unsafe { *flats.add((r * w + x) as usize) } as u32;
        }
        s
    };
    let mut sum = 0u32;
    for x in 0..half.min(w) {
        sum += column(x);
    }
    for x in 0..w {
        if x + half < w {
            sum += column(x + half);
        }
        if x > half {
            sum -= column(x - half - 1);
        }
        unsafe { *out.add(x as usize) = (sum > index) as u16 };
    }
}

/// Row `y` of the next scale: every second sample of row `2y` of `p`, `out[0..w]` (`w` =
/// ⌈width/2⌉).
///
/// # Safety
/// 2y < height of a readable `p`; `out` holds ⌈width/2⌉ values.
#[inline]
pub unsafe fn decimate_row(p: &Plane16, y: u32, out: *mut u16) {
    let row = p.row(2 * y);
    for x in 0..p.width.div_ceil(2) as usize {
        unsafe { *out.add(x) = *row.add(2 * x) };
    }
}

/// The lowest of three.
#[inline(always)]
pub fn min3(a: u32, b: u32, c: u32) -> u32 {
    let m = if a < b { a } else { b };
    if m < c { m } else { c }
}

/// The value that at least two of three share, else the lowest.
#[inline(always)]
pub fn mode3(a: u32, b: u32, c: u32) -> u32 {
    if a == b || a == c {
        a
    } else if b == c {
        b
    } else {
        min3(a, b, c)
    }
}

/// The horizontal pass of the mode filter at (x, y) of a `w`-wide plane whose samples `at`
/// gives: the mode of the three neighbours, the sample itself on the first and last
/// columns.
#[inline(always)]
pub fn mode_h_with(at: &impl Fn(u32, u32) -> u32, w: u32, x: u32, y: u32) -> u32 {
    if x == 0 || x + 1 >= w {
        at(x, y)
    } else {
        mode3(at(x - 1, y), at(x, y), at(x + 1, y))
    }
}

/// Sample (x, y) of the mode-filtered `w`×`h` plane whose samples `at` gives (step 4): the
/// first and last rows are kept. A GPU thread reads the previous scale through `at`
/// (decimating on the fly); the host reads a plane.
#[inline(always)]
pub fn mode_with(at: impl Fn(u32, u32) -> u32, w: u32, h: u32, x: u32, y: u32) -> u32 {
    if y == 0 || y + 1 >= h {
        at(x, y)
    } else {
        mode3(
            mode_h_with(&at, w, x, y - 1),
            mode_h_with(&at, w, x, y),
            mode_h_with(&at, w, x, y + 1),
        )
    }
}

/// Row `y` of the mode-filtered `p` ([`mode_with`]), written to `out[0..width]`.
///
/// # Safety
/// y < height of a readable `p`; `out` holds `width` values and is not `p`'s memory.
#[inline]
pub unsafe fn mode_row(p: &Plane16, y: u32, out: *mut u16) {
    let at = |x: u32, y: u32| unsafe { p.at(x, y) };
    for x in 0..p.width {
        let v = mode_with(at, p.width, p.height, x, y);
        unsafe { *out.add(x as usize) = v as u16 };
    }
}

/// The contrast steps and their visibility, set up once per plan by the host.
///
/// Values are 10-bit samples. Step `d` (1-based, index `d − 1`) counts for a pixel of
/// value `v` when `v ≤ tvi[d − 1]` (the largest value whose step `d` is still below the
/// threshold of visibility) and `v + d > vlt − diffs` (libvmaf compares its offset value
/// `v + diffs` with the raw `vlt`: kept as it is). Only values in
/// `band_base..band_base + band_size` can take part (libvmaf's band: the histogram's rows).
#[derive(Clone, Copy, Debug)]
pub struct Contrast<'a> {
    /// Contrast steps, `2^max_log_contrast`.
    pub diffs: u32,
    /// Per step, the largest sample value for which it counts.
    pub tvi: [u32; MAX_DIFFS],
    /// The lowest visible luma value (0: all).
    pub vlt: u32,
    pub band_base: u32,
    pub band_size: u32,
    /// libvmaf's reciprocal table: `recip[n]` ≈ 1/n, [`RECIP_LEN`] entries.
    pub recip: &'a [f32],
}

impl Contrast<'_> {
    /// The band of values that can count, from `vlt` and the last step's `tvi`, as
    /// `(base, size)`.
    pub fn band(vlt: u32, tvi_last: u32, diffs: u32) -> (u32, u32) {
        let lo = vlt as i32 - 3 * diffs as i32 + 1;
        let base = if lo > 0 { lo as u32 } else { 0 };
        (base, tvi_last + diffs + 1 - base)
    }

    /// The histogram row of value `v`, if it is in the band.
    #[inline(always)]
    pub fn row_of(&self, v: u32) -> Option<u32> {
        let r = v.wrapping_sub(self.band_base);
        (r < self.band_size).then_some(r)
    }
}

/// [`Contrast`] without its table, as it crosses the kernel boundary (by value); the
/// kernel pairs it with the table's device copy ([`ContrastArgs::with`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ContrastArgs {
    pub diffs: u32,
    pub vlt: u32,
    pub band_base: u32,
    pub band_size: u32,
    pub tvi: [u32; MAX_DIFFS],
}

impl ContrastArgs {
    /// The arguments of `c`.
    pub fn of(c: &Contrast) -> ContrastArgs {
        ContrastArgs {
            diffs: c.diffs,
            vlt: c.vlt,
            band_base: c.band_base,
            band_size: c.band_size,
            tvi: c.tvi,
        }
    }

    /// The contrast steps with `recip` ([`RECIP_LEN`] entries) as their table.
    pub fn with<'a>(&self, recip: &'a [f32]) -> Contrast<'a> {
        Contrast {
            diffs: self.diffs,
            tvi: self.tvi,
            vlt: self.vlt,
            band_base: self.band_base,
            band_size: self.band_size,
            recip,
        }
    }
}

/// The key of an unmasked or out-of-band pixel: it takes no part in any c-value.
pub const NO_KEY: u16 = u16::MAX;

/// What the GPU's c-values read of a pixel: its histogram row when it is masked and in the
/// band, else [`NO_KEY`].
#[inline(always)]
pub fn key(v: u32, masked: bool, c: &Contrast) -> u16 {
    match c.row_of(v) {
        Some(r) if masked => r as u16,
        _ => NO_KEY,
    }
}

/// Bytes before row 0 of each column's counts in the GPU's column histograms, so that the
/// word holding row `r − diffs` never starts before the column ([`window_counts12`]).
pub const COLUMN_PAD: u32 = 4;

/// Bytes of one column's counts in the GPU's column histograms: [`COLUMN_PAD`], a count
/// for every band row and for the `diffs` rows past it (always 0, so [`c_value`] reads them
/// unchecked) and at least 12 (so that [`window_counts12`]' last word lies in the column),
/// in whole words, an odd number of words so that neighbouring columns start in different
/// shared-memory banks.
pub fn column_bytes(band_size: u32, diffs: u32) -> u32 {
    let words = (COLUMN_PAD + band_size + diffs.max(12)).div_ceil(4);
    4 * (words | 1)
}

/// The masked pixels of histogram row `r` in `n` neighbouring columns' counts (`cols`,
/// one column every `stride` bytes, one byte per row after [`COLUMN_PAD`]): the window
/// count of the GPU's c-values, whose columns each count their own `window` rows.
///
/// # Safety
/// `cols` must hold `n` columns of `stride` bytes; `r + COLUMN_PAD < stride`.
#[inline(always)]
pub unsafe fn columns_count(cols: *const u8, stride: usize, n: usize, r: usize) -> u32 {
    let mut sum = 0u32;
    let mut p = unsafe { cols.add(r + COLUMN_PAD as usize) };
    for _ in 0..n {
        sum += unsafe { *p } as u32;
        p = p.wrapping_add(stride);
    }
    sum
}

/// The first word of [`window_counts12`] for a pixel of histogram row `r`: the word that
/// holds row `r − diffs` (`diffs` ≤ 4, so rows `r − diffs..=r + diffs` lie in it and the
/// next two).
#[inline(always)]
pub fn first_word(r: u32, diffs: u32) -> u32 {
    (r + COLUMN_PAD - diffs) / 4
}

/// The window counts of the 12 histogram rows from `4·word − COLUMN_PAD` on, summed over
/// `n` neighbouring columns (as [`columns_count`], 12 rows at once): three words per
/// column, each split into two pairs of 16-bit lanes (a column's count is at most 65, so
/// a lane holds 65 columns' sum).
///
/// # Safety
/// `cols` must hold `n` columns of `stride` bytes, 4-byte aligned, `stride` a multiple of
/// 4 and `4·word + 12 ≤ stride`.
#[inline(always)]
pub unsafe fn window_counts12(cols: *const u8, stride: usize, n: usize, word: u32) -> [u32; 12] {
    let (mut e, mut o) = ([0u32; 3], [0u32; 3]);
    let mut p = unsafe { cols.add(4 * word as usize) }.cast::<u32>();
    for _ in 0..n {
        unroll!(k in [0 1 2] {
            let w = unsafe { *p.add(k) };
            e[k] += w & 0x00ff_00ff;
            o[k] += (w >> 8) & 0x00ff_00ff;
        });
        p = p.wrapping_byte_add(stride);
    }
    let mut c = [0u32; 12];
    unroll!(k in [0 1 2] {
        c[4 * k] = e[k] & 0xffff;
        c[4 * k + 1] = o[k] & 0xffff;
        c[4 * k + 2] = e[k] >> 16;
        c[4 * k + 3] = o[k] >> 16;
    });
    c
}

/// Count `i` of [`window_counts12`]'s result (0 past it), by constant indices only, so
/// that a GPU keeps the counts in registers.
#[inline(always)]
pub fn count_of(c: &[u32; 12], i: u32) -> u32 {
    match i {
        0 => c[0],
        1 => c[1],
        2 => c[2],
        3 => c[3],
        4 => c[4],
        5 => c[5],
        6 => c[6],
        7 => c[7],
        8 => c[8],
        9 => c[9],
        10 => c[10],
        11 => c[11],
        _ => 0,
    }
}

/// Row `y`'s sums of 7 neighbouring flatness values (the mask's window clipped to the
/// row): the first pass of the GPU's mask. `out[x]` for x < w.
///
/// # Safety
/// `flats` must hold `w·h` values, y < h.
#[inline(always)]
pub unsafe fn flat_sum_h(flats: *const u8, w: u32, x: u32, y: u32) -> u8 {
    let half = MASK_WINDOW / 2;
    let (x0, x1) = (x.saturating_sub(half), (x + half + 1).min(w));
    let row = unsafe { flats.add((y * w) as usize) };
    let mut s = 0u8;
    for c in x0..x1 {
        s += unsafe { *row.add(c as usize) };
    }
    s
}

/// The mask at (x, y) from the row sums of [`flat_sum_h`] (the second pass): more than
/// `index` flat pixels in the clipped 7×7 window, as [`mask_row`].
///
/// # Safety
/// `sums` must hold `w·h` values; x < w, y < h.
#[inline(always)]
pub unsafe fn mask_from_sums(sums: *const u8, w: u32, h: u32, x: u32, y: u32, index: u32) -> u16 {
    let half = MASK_WINDOW / 2;
    let (y0, y1) = (y.saturating_sub(half), (y + half + 1).min(h));
    let mut s = 0u32;
    for r in y0..y1 {
        s += unsafe { *sums.add((r * w + x) as usize) } as u32;
    }
    (s > index) as u16
}

/// The c-value of a masked pixel of value `v` (step 5), given `count(r)`: the masked
/// pixels of the window whose value has histogram row `r` (`r` may be negative or past the
/// band: 0 is expected there).
#[inline(always)]
pub fn c_value(v: u32, c: &Contrast, count: impl Fn(i32) -> u32) -> f32 {
    let Some(row) = c.row_of(v) else {
        return 0.0;
    };
    let row = row as i32;
    let p0 = count(row);
    let mut best = 0.0f32;
    let steps = c.tvi.iter().zip(CONTRAST_WEIGHTS).take(c.diffs as usize);
    for (i, (&tvi, weight)) in steps.enumerate() {
        let d = i as i32 + 1;
        if v <= tvi && (v + c.diffs) as i32 + d > c.vlt as i32 {
            let up = count(row + d);
            let down = if row >= d { count(row - d) } else { 0 };
            let p = if up > down { up } else { down };
            let n = (weight * p0 * p) as i32;
            let val = n as f32 * c.recip[(p + p0) as usize];
            if val > best {
                best = val;
            }
        }
    }
    best
}

/// The masked pixels of value row `r` (value `band_base + r`) in the `window`-square
/// around (x, y), clipped to the plane: the direct count a GPU thread can make.
///
/// # Safety
/// `img` and `mask` readable, of equal size.
#[inline]
pub unsafe fn window_count(
    img: &Plane16,
    mask: &Plane16,
    x: u32,
    y: u32,
    half: u32,
    c: &Contrast,
    r: i32,
) -> u32 {
    if r < 0 || r as u32 >= c.band_size {
        return 0;
    }
    let v = c.band_base + r as u32;
    let x0 = x.saturating_sub(half);
    let x1 = (x + half + 1).min(img.width);
    let y0 = y.saturating_sub(half);
    let y1 = (y + half + 1).min(img.height);
    let mut n = 0;
    for yy in y0..y1 {
        for xx in x0..x1 {
            n += unsafe { (mask.at(xx, yy) != 0 && img.at(xx, yy) == v) as u32 };
        }
    }
    n
}

/// The c-value of pixel (x, y) by direct window counts ([`window_count`]).
///
/// # Safety
/// As [`window_count`]; x, y inside the plane.
#[inline]
pub unsafe fn c_value_direct(
    img: &Plane16,
    mask: &Plane16,
    x: u32,
    y: u32,
    half: u32,
    c: &Contrast,
) -> f32 {
    if unsafe { mask.at(x, y) } == 0 {
        return 0.0;
    }
    let v = unsafe { img.at(x, y) };
    c_value(v, c, |r| unsafe {
        window_count(img, mask, x, y, half, c, r)
    })
}

/// Sliding column histograms for the c-values of the columns `x0..x1` of a plane: for
/// each column, the count of each band value among the masked pixels of the window around
/// the current row (clipped). `cells` holds `band_size · (x1 − x0)` counters, value-major.
pub struct Histograms<'a> {
    pub cells: &'a mut [u16],
    pub x0: u32,
    pub x1: u32,
}

impl Histograms<'_> {
    /// Adds (`up`) or removes the masked in-band pixels of row `y` of `img` to the
    /// histograms of the columns whose window holds them.
    ///
    /// # Safety
    /// y < height of readable, equal-size `img` and `mask`.
    #[inline]
    pub unsafe fn apply_row(
        &mut self,
        img: &Plane16,
        mask: &Plane16,
        y: u32,
        half: u32,
        c: &Contrast,
        up: bool,
    ) {
        let span = (self.x1 - self.x0) as usize;
        let from = self.x0.saturating_sub(half);
        let to = (self.x1 + half).min(img.width);
        for x in from..to {
            if unsafe { mask.at(x, y) } == 0 {
                continue;
            }
            let Some(r) = c.row_of(unsafe { img.at(x, y) }) else {
                continue;
            };
            let lo = x.saturating_sub(half).max(self.x0) - self.x0;
            let hi = (x + half + 1).min(self.x1) - self.x0;
            let base = r as usize * span;
            let cells = &mut self.cells[base + lo as usize..base + hi as usize];
            if up {
                cells.iter_mut().for_each(|n| *n += 1);
            } else {
                cells.iter_mut().for_each(|n| *n -= 1);
            }
        }
    }

    /// The c-values of the columns `x0..x1` of every row, written row by row to `out`
    /// (`height · (x1 − x0)` values): the histograms slide down the rows (each row enters
    /// when it comes within `half` rows and leaves after).
    ///
    /// # Safety
    /// Readable, equal-size `img` and `mask`; `x0 < x1 ≤ width`.
    pub unsafe fn c_values(
        &mut self,
        img: &Plane16,
        mask: &Plane16,
        half: u32,
        c: &Contrast,
        out: &mut [f32],
    ) {
        let span = (self.x1 - self.x0) as usize;
        let h = img.height;
        self.cells[..c.band_size as usize * span].fill(0);
        for y in 0..half.min(h) {
            unsafe { self.apply_row(img, mask, y, half, c, true) };
        }
        for y in 0..h {
            if y + half < h {
                unsafe { self.apply_row(img, mask, y + half, half, c, true) };
            }
            if y > half {
                unsafe { self.apply_row(img, mask, y - half - 1, half, c, false) };
            }
            let row = &mut out[y as usize * span..(y as usize + 1) * span];
            for (i, o) in row.iter_mut().enumerate() {
                let x = self.x0 + i as u32;
                *o = if unsafe { mask.at(x, y) } == 0 {
                    0.0
                } else {
                    let cells = &*self.cells;
                    let v = unsafe { img.at(x, y) };
                    c_value(v, c, |r| {
                        if r < 0 || r as u32 >= c.band_size {
                            0
                        } else {
                            cells[r as usize * span + i] as u32
                        }
                    })
                };
            }
        }
    }
}

/// How many of `n` c-values a scale's score averages: `topk·n` truncated, within `1..=n`.
pub fn topk_len(topk: f64, n: u32) -> u32 {
    let k = (topk * n as f64) as i64;
    k.clamp(1, n.max(1) as i64) as u32
}

/// The frame's CAMBI from its scales' scores, for a `window`-sized window, before the cap.
pub fn combine(scores: &[f64; SCALES], window: u32) -> f64 {
    let mut s = 0.0;
    for (v, w) in scores.iter().zip(SCALE_WEIGHTS) {
        s += v * w as f64;
    }
    let odd = 2 * (window >> 1) + 1;
    s / (odd * odd) as f64
}

pub mod topk;

mod kernels;

#[cfg(test)]
mod tests;
