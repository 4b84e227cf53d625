//! Blockiness: FFmpeg 5.1's `blockdetect` (Muijs and Kirenko 2005) on one frame's luma, as
//! its code computes it (`libavfilter/vf_blockdetect.c`):
//!
//! * per pixel, a normalised gradient across columns: `|s(x) − s(x+1)|` over the sum of
//!   the six neighbouring absolute differences of the row (at least 1), in f32
//!   ([`col_grad`]), for 3 ≤ x < w − 4 and rows 1 ≤ y < h; the same down the columns
//!   ([`row_grad`]) for 3 ≤ y < h − 4 and columns 1 ≤ x < w;
//! * a column profile, each column's gradients added in f32 row by row, and a row profile,
//!   each row's added in f32 column by column. FFmpeg never clears them between frames:
//!   the profiles add up over the whole sequence (a flat frame repeats the previous value).
//!   FFmpeg adds a frame's gradients one after the other; here, on both backends, each
//!   band of [`TILE`] rows (columns) is added in order from 0, then the band sums in band
//!   order to the running value ([`add_col_bands`], [`row_sum`], [`add_bands`]): the
//!   bands run in parallel on the GPU. The profiles differ from FFmpeg's by f32 rounding
//!   only (about 1e-7 relative) and the backends' are the same bit for bit however long
//!   the sequence;
//! * per period p of `period_min..=period_max` and direction, the mean over the grid
//!   positions (`i % p == p − 1`) of the largest of three neighbouring profile values,
//!   over the mean of the other positions' values, in f32 ([`period_ratio`]). FFmpeg adds
//!   each sum position by position; here 32 lanes add every 32nd position and a fixed tree
//!   adds the lanes ([`period_sums`], the same on both backends): the sums differ from
//!   FFmpeg's by f32 rounding only (about 1e-7 relative);
//! * the largest ratio, horizontal periods then vertical ones, with FFmpeg's `a > b ? a :
//!   b` ([`keep_larger`]): a 0/0 ratio (a flat profile) is NaN and replaces the running
//!   value, a later number replaces a NaN. Frames too small for any period give 0.
//!
//! One code path for the host and the GPU: the CPU backend runs [`add_col_bands`] and
//! [`row_sum`] (and [`ratio`] for the result), the kernels (`kernels.rs`) the same
//! per-pixel functions and the same sequential additions: one CUDA block per ([`LANES`]
//! columns or rows, band), one thread per column or row summing its band, then one thread per
//! profile value adding the bands ([`add_bands`]).

mod kernels;

use crate::luma8::{self, Luma8};

/// Threads per block of the profile kernel.
pub const BLOCK: u32 = 512;
/// Staged samples per thread of the profile kernel (`SAMPLES_LEN / BLOCK`, rounded up).
pub const STAGE_PER_THREAD: usize = 6;
const _: () = assert!(STAGE_PER_THREAD * BLOCK as usize >= SAMPLES_LEN && TILE.is_multiple_of(16));
/// Profile columns (or rows) per block of the profile kernel: one sequential f32 sum each.
pub const LANES: u32 = 64;
/// Rows (or columns) per tile of the profile kernel.
pub const TILE: u32 = 32;
/// Samples a tile reads on each side of a gradient: 3 before, 4 after.
pub const HALO: u32 = 7;
/// Row stride of the column part's sample tile (`LANES + HALO`, rounded up).
pub const COL_STRIDE: u32 = 72;
/// Row stride of the row part's gradient tile (one more than [`TILE`]: the summing lanes,
/// one per row, hit distinct banks).
pub const ROW_STRIDE: u32 = TILE + 1;
/// Shared values of the profile kernel: the staged 8-bit samples (`TILE · COL_STRIDE` in
/// the column part, `(LANES + HALO) · TILE` in the row part) and the gradients
/// (`TILE · LANES`, `LANES · ROW_STRIDE`).
pub const SAMPLES_LEN: usize = 32 * 72;
pub const GRADS_LEN: usize = 64 * 33;
const _: () = assert!(
    SAMPLES_LEN == (TILE * COL_STRIDE) as usize
        && SAMPLES_LEN >= ((LANES + HALO) * TILE) as usize
        && COL_STRIDE >= LANES + HALO
);
const _: () =
    assert!(GRADS_LEN == (LANES * ROW_STRIDE) as usize && GRADS_LEN >= (TILE * LANES) as usize);

/// One frame and the options, as the kernels take them. Crosses the kernel boundary by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Params {
    pub luma: Luma8,
    pub period_min: u32,
    pub period_max: u32,
    /// 1: the first frame of a sequence (the profiles start from 0).
    pub first: u32,
    pub _pad: u32,
}

/// The columns of the column profile (3..w − 4) and the rows of the row profile
/// (3..h − 4), as (first, end).
#[inline(always)]
pub fn span(n: u32) -> (u32, u32) {
    (3, n.saturating_sub(4))
}

/// Profile columns (or rows) of a side of `n`.
#[inline(always)]
pub fn span_len(n: u32) -> u32 {
    let (a, b) = span(n);
    b.saturating_sub(a)
}

/// Groups of [`LANES`] profile columns and of profile rows of the profile kernel.
pub fn profile_blocks(w: u32, h: u32) -> (u32, u32) {
    (span_len(w).div_ceil(LANES), span_len(h).div_ceil(LANES))
}

/// CUDA blocks of the profile kernel: one per (group, band), the column part's first.
pub fn profile_grid(w: u32, h: u32) -> u32 {
    let (c, r) = profile_blocks(w, h);
    c * bands(h) + r * bands(w)
}

/// Block `b`'s part and band (its tile of [`tile`]) in the profile kernel: the column
/// groups' bands first (group-major), then the row groups'.
#[inline(always)]
pub fn part_band(w: u32, h: u32, b: u32) -> (Part, u32) {
    let (cb, _) = profile_blocks(w, h);
    let (ct, rt) = (bands(h), bands(w));
    let (group, k) = if b < cb * ct {
        (b / ct, b % ct)
    } else {
        let r = b - cb * ct;
        (cb + r / rt, r % rt)
    };
    (part(w, h, group), k)
}

/// The band-sum kernel's threads: one per profile value, the columns' then the rows'.
pub const BANDS_BLOCK: u32 = 256;

/// `|a − b|` of two samples.
#[inline(always)]
fn diff(a: u32, b: u32) -> u32 {
    a.abs_diff(b)
}

/// The normalised gradient between columns x and x + 1 of row y (3 ≤ x < w − 4).
///
/// # Safety
/// (x − 3 ..= x + 4, y) must lie in the plane.
#[inline(always)]
pub unsafe fn col_grad(l: &Luma8, x: u32, y: u32) -> f32 {
    let s = |x: u32| unsafe { luma8::sample(l, x, y) };
    let v: [u32; 8] = [
        s(x - 3),
        s(x - 2),
        s(x - 1),
        s(x),
        s(x + 1),
        s(x + 2),
        s(x + 3),
        s(x + 4),
    ];
    normalised(&v)
}

/// The normalised gradient between rows y and y + 1 of column x (3 ≤ y < h − 4).
///
/// # Safety
/// (x, y − 3 ..= y + 4) must lie in the plane.
#[inline(always)]
pub unsafe fn row_grad(l: &Luma8, x: u32, y: u32) -> f32 {
    let s = |y: u32| unsafe { luma8::sample(l, x, y) };
    let v: [u32; 8] = [
        s(y - 3),
        s(y - 2),
        s(y - 1),
        s(y),
        s(y + 1),
        s(y + 2),
        s(y + 3),
        s(y + 4),
    ];
    normalised(&v)
}

/// `|v3 − v4|` over the sum of the other six neighbouring differences (at least 1), in
/// f32 (the integer sum is exact in f32).
#[inline(always)]
fn normalised(v: &[u32; 8]) -> f32 {
    let g = diff(v[3], v[4]) as f32;
    let others = diff(v[4], v[5])
        + diff(v[5], v[6])
        + diff(v[6], v[7])
        + diff(v[3], v[2])
        + diff(v[2], v[1])
        + diff(v[1], v[0]);
    let t = others as f32;
    g / if t > 1.0 { t } else { 1.0 }
}

/// Adds row y's column gradients of columns `from..to` to the column profile, whose
/// column `from` is `cols[0]` (columns outside [`span`] untouched), one f32 addition per
/// column, as FFmpeg's row loop.
///
/// # Safety
/// `cols` holds `to − from` values; row y is readable.
#[inline]
pub unsafe fn add_col_row(l: &Luma8, y: u32, from: u32, to: u32, cols: *mut f32) {
    let (a, b) = span(l.width);
    for x in from.max(a)..to.min(b) {
        unsafe { *cols.add((x - from) as usize) += col_grad(l, x, y) };
    }
}

/// Row y's row-profile value: `start` plus its row gradients in the kernels' order: per
/// band of [`TILE`] columns from column 1 ([`bands`]), the band's gradients added in f32
/// column by column from 0, then the band's sum added to the running value, band by band.
///
/// # Safety
/// 3 ≤ y < h − 4; the rows are readable.
#[inline]
pub unsafe fn row_sum(l: &Luma8, y: u32, start: f32) -> f32 {
    let mut acc = start;
    let mut x0 = 1;
    while x0 < l.width {
        let end = (x0 + TILE).min(l.width);
        let mut band = 0f32;
        for x in x0..end {
            band += unsafe { row_grad(l, x, y) };
        }
        acc += band;
        x0 = end;
    }
    acc
}

/// Adds one frame's column gradients of columns `from..to` to the column profile (column
/// `from` at `cols[0]`; columns outside [`span`] untouched) in the kernels' order: per band
/// of [`TILE`] rows from row 1 ([`bands`]), the band's gradients added in f32 row by row
/// from 0 ([`add_col_row`] into `band`), then each column's band sum added to its value,
/// band by band.
///
/// # Safety
/// `cols` and `band` hold `to − from` values; the frame is readable.
#[inline]
pub unsafe fn add_col_bands(l: &Luma8, from: u32, to: u32, cols: *mut f32, band: *mut f32) {
    let (a, b) = span(l.width);
    let (lo, hi) = (from.max(a), to.min(b));
    if lo >= hi {
        return;
    }
    let mut y0 = 1;
    while y0 < l.height {
        let end = (y0 + TILE).min(l.height);
        for x in lo..hi {
            unsafe { *band.add((x - from) as usize) = 0.0 };
        }
        for y in y0..end {
            unsafe { add_col_row(l, y, from, to, band) };
        }
        for x in lo..hi {
            let i = (x - from) as usize;
            unsafe { *cols.add(i) += *band.add(i) };
        }
        y0 = end;
    }
}

/// Bands of a profile's sums: tiles of [`TILE`] rows (for the columns) or columns (for the
/// rows) of the `n` from index 1.
#[inline(always)]
pub fn bands(n: u32) -> u32 {
    n.saturating_sub(1).div_ceil(TILE)
}

/// One profile value after a frame: `start` (0 on a sequence's first frame) plus its band
/// sums in band order, band `k` at `band_sums[k · n + i]` (as `blockiness_profiles` writes
/// them).
///
/// # Safety
/// `band_sums` holds `count · n` values, `i < n`.
#[inline(always)]
pub unsafe fn add_bands(start: f32, band_sums: *const f32, n: u32, i: u32, count: u32) -> f32 {
    let at = |k: u32| unsafe { *band_sums.add(k as usize * n as usize + i as usize) };
    let mut acc = start;
    let mut k = 0;
    // Eight bands loaded at once, then added in order (the same sums as one at a time):
    // on the GPU the loads overlap instead of waiting one by one.
    while k + 8 <= count {
        let v = [
            at(k),
            at(k + 1),
            at(k + 2),
            at(k + 3),
            at(k + 4),
            at(k + 5),
            at(k + 6),
            at(k + 7),
        ];
        for v in v {
            acc += v;
        }
        k += 8;
    }
    while k < count {
        acc += at(k);
        k += 1;
    }
    acc
}

/// Lanes of one period's sums: position i of the profile is added by lane `(i − 3) % 32`.
pub const PERIOD_LANES: u32 = 32;

/// One period's sums over a profile: the grid positions' values (the largest of three
/// neighbours), the others', and their counts.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PeriodSums {
    pub grid: f32,
    pub other: f32,
    pub grid_n: u32,
    pub other_n: u32,
}

/// Lane `lane`'s share of period `period` over the profile `prof` (positions [`span`] of
/// `n`): positions `3 + lane, 3 + lane + 32, ..`, each added to its sum in f32 in order.
/// The phase `i % period` is kept by additions: no division per position.
///
/// # Safety
/// `prof` holds `n` values.
#[inline(always)]
pub unsafe fn lane_sums(prof: *const f32, n: u32, period: u32, lane: u32) -> PeriodSums {
    let (a, b) = span(n);
    let at = |i: u32| unsafe { *prof.add(i as usize) };
    let mut s = PeriodSums::default();
    let mut i = a + lane;
    let mut phase = i % period;
    let step = PERIOD_LANES % period;
    while i < b {
        if phase == period - 1 {
            s.grid += max(max(at(i), at(i + 1)), at(i - 1));
            s.grid_n += 1;
        } else {
            s.other += at(i);
            s.other_n += 1;
        }
        i += PERIOD_LANES;
        phase += step;
        if phase >= period {
            phase -= period;
        }
    }
    s
}

/// The 32 lanes' sums added as the GPU's shuffle-down tree adds them: at each step
/// (16, 8, 4, 2, 1) lane j < step adds lane j + step.
#[inline(always)]
pub fn tree(lanes: &mut [PeriodSums; PERIOD_LANES as usize]) -> PeriodSums {
    let mut step = PERIOD_LANES as usize / 2;
    while step > 0 {
        for j in 0..step {
            let o = lanes[j + step];
            let l = &mut lanes[j];
            l.grid += o.grid;
            l.other += o.other;
            l.grid_n += o.grid_n;
            l.other_n += o.other_n;
        }
        step /= 2;
    }
    lanes[0]
}

/// One period's sums as both backends compute them ([`lane_sums`], then [`tree`]).
///
/// # Safety
/// `prof` holds `n` values.
pub unsafe fn period_sums(prof: *const f32, n: u32, period: u32) -> PeriodSums {
    let mut lanes = [PeriodSums::default(); PERIOD_LANES as usize];
    for (l, s) in lanes.iter_mut().enumerate() {
        *s = unsafe { lane_sums(prof, n, period, l as u32) };
    }
    tree(&mut lanes)
}

/// The ratio of one period: `None` when it has no grid position or no other position
/// there (FFmpeg skips it), else the f32 ratio of the means (NaN for 0/0).
#[inline(always)]
pub fn period_ratio(s: &PeriodSums) -> Option<f32> {
    if s.grid_n == 0 || s.other_n == 0 {
        return None;
    }
    Some((s.grid / s.grid_n as f32) / (s.other / s.other_n as f32))
}

/// FFmpeg's `FFMAX(a, b)`: `a > b ? a : b` (so a NaN `b` wins, and so does any `b` over a
/// NaN `a`).
#[inline(always)]
pub fn max(a: f32, b: f32) -> f32 {
    if a > b { a } else { b }
}

/// The running result after one more period's ratio (FFmpeg's `FFMAX(ret, temp)`).
#[inline(always)]
pub fn keep_larger(ret: f32, ratio: f32) -> f32 {
    max(ret, ratio)
}

/// The periods searched: `period_min..=period_max` (none when min > max).
#[inline(always)]
pub fn periods(p: &Params) -> u32 {
    if p.period_max >= p.period_min {
        p.period_max - p.period_min + 1
    } else {
        0
    }
}

/// The (direction, period) pairs searched: the horizontal periods, then the vertical ones.
/// Pair j's profile is the columns' for j < periods, and its period `period_min + j %
/// periods`.
#[inline(always)]
pub fn pair(p: &Params, j: u32) -> (bool, u32) {
    let np = periods(p);
    (j < np, p.period_min + j % np)
}

/// Pair sums as `blockiness_periods` writes them: four f32 (the counts exact).
pub fn decode(v: &[f32]) -> PeriodSums {
    PeriodSums {
        grid: v[0],
        other: v[1],
        grid_n: v[2] as u32,
        other_n: v[3] as u32,
    }
}

/// The frame's blockiness from every pair's sums, in pair order, kept with
/// [`keep_larger`] from 0.
pub fn combine(sums: impl Iterator<Item = PeriodSums>) -> f32 {
    let mut ret = 0.0f32;
    for s in sums {
        if let Some(r) = period_ratio(&s) {
            ret = keep_larger(ret, r);
        }
    }
    ret
}

/// The frame's blockiness from the two profiles (the CPU backend's way; the GPU computes
/// the same [`period_sums`] per pair and the host [`combine`]s them).
///
/// # Safety
/// `cols` holds `w`, `rows` `h` values.
pub unsafe fn ratio(p: &Params, cols: *const f32, rows: *const f32) -> f32 {
    combine((0..2 * periods(p)).map(|j| {
        let (columns, period) = pair(p, j);
        let (prof, n) = if columns {
            (cols, p.luma.width)
        } else {
            (rows, p.luma.height)
        };
        unsafe { period_sums(prof, n, period) }
    }))
}

/// The profile kernel's share of block `b` (see `kernels.rs`): the column part for the first
/// `profile_blocks(w, h).0` blocks, the row part for the others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    /// Columns (true) or rows.
    pub columns: bool,
    /// First profile column (row) of the block, and how many (≤ [`LANES`]).
    pub first: u32,
    pub lanes: u32,
}

/// Block `b`'s part of the profile kernel.
#[inline(always)]
pub fn part(w: u32, h: u32, b: u32) -> Part {
    let (col_blocks, _) = profile_blocks(w, h);
    let (columns, n, k) = if b < col_blocks {
        (true, w, b)
    } else {
        (false, h, b - col_blocks)
    };
    let first = 3 + k * LANES;
    let (_, end) = span(n);
    let lanes = if end > first {
        (end - first).min(LANES)
    } else {
        0
    };
    Part {
        columns,
        first,
        lanes,
    }
}

/// The tiles of a part: (first row, rows) for columns, from row 1; (first column, columns)
/// for rows, from column 1; each at most [`TILE`].
#[inline(always)]
pub fn tile(p: &Luma8, part: &Part, k: u32) -> Option<(u32, u32)> {
    let n = if part.columns { p.height } else { p.width };
    let start = 1 + k * TILE;
    (start < n).then(|| (start, (n - start).min(TILE)))
}

/// Stages the 8-bit samples of one tile in `s` (thread `thread` of `threads` takes every
/// `threads`-th one): for columns, rows `start..start + len`, columns `first − 3 ..
/// first + lanes + 4` at `s[r · COL_STRIDE + c]`; for rows, rows `first − 3 .. first +
/// lanes + 4`, columns `start..start + len` at `s[r · TILE + c]`. Outside the part, 0.
///
/// # Safety
/// `l` readable; `s` holds [`SAMPLES_LEN`] values.
#[inline(always)]
pub unsafe fn stage(
    l: &Luma8,
    part: &Part,
    tile: (u32, u32),
    s: *mut u32,
    thread: u32,
    threads: u32,
) {
    // Block-uniform: each part's copy has its tile's shape as constants, so the sample
    // index splits into row and column by a multiplication, not a division.
    // And 8-bit frames read their bytes without the general conversion.
    match (part.columns, luma8::is_plain(l)) {
        (true, true) => unsafe { stage_part::<true, true>(l, part, tile, s, thread, threads) },
        (true, false) => unsafe { stage_part::<true, false>(l, part, tile, s, thread, threads) },
        (false, true) => unsafe { stage_part::<false, true>(l, part, tile, s, thread, threads) },
        (false, false) => unsafe { stage_part::<false, false>(l, part, tile, s, thread, threads) },
    }
}

/// [`stage`] for the column part (`COLUMNS`) or the row part, with `PLAIN` =
/// [`luma8::is_plain`]`(l)`.
///
/// # Safety
/// As [`stage`]; `part.columns == COLUMNS`.
#[inline(always)]
unsafe fn stage_part<const COLUMNS: bool, const PLAIN: bool>(
    l: &Luma8,
    part: &Part,
    (start, len): (u32, u32),
    s: *mut u32,
    thread: u32,
    threads: u32,
) {
    let (rows, cols, stride) = if COLUMNS {
        (TILE, LANES + HALO, COL_STRIDE)
    } else {
        (LANES + HALO, TILE, TILE)
    };
    let total = rows * cols;
    // Sample i of the tile: where it goes, and its value.
    let one = |i: u32| {
        let (r, c) = (i / cols, i % cols);
        let (x, y, inside) = if COLUMNS {
            let x = part.first - 3 + c;
            (x, start + r, r < len && c < part.lanes + HALO)
        } else {
            let y = part.first - 3 + r;
            (start + c, y, c < len && r < part.lanes + HALO)
        };
        let v = if inside && x < l.width && y < l.height {
            unsafe { luma8::sample_as::<PLAIN>(l, x, y) }
        } else {
            0
        };
        (r * stride + c, v)
    };
    // Every load first, then every store: a store to shared memory through a generic
    // pointer could alias the next load, so interleaved they would wait one by one.
    let mut v = [(0u32, 0u32); STAGE_PER_THREAD];
    unroll!(k in [0 1 2 3 4 5] {
        let i = thread + k as u32 * threads;
        if i < total {
            v[k] = one(i);
        }
    });
    unroll!(k in [0 1 2 3 4 5] {
        let i = thread + k as u32 * threads;
        if i < total {
            unsafe { *s.add(v[k].0 as usize) = v[k].1 };
        }
    });
    // More samples than STAGE_PER_THREAD per thread only with fewer threads than BLOCK.
    let mut i = thread + STAGE_PER_THREAD as u32 * threads;
    while i < total {
        let (at, v) = one(i);
        unsafe { *s.add(at as usize) = v };
        i += threads;
    }
}

/// The gradients of one staged tile into `g`: for columns, lane `c` of row `r` at
/// `g[r · LANES + c]`; for rows, lane `r` at column `c` at `g[r · ROW_STRIDE + c]` (the
/// same `normalised` values as [`col_grad`] and [`row_grad`]); 0 outside the part.
///
/// # Safety
/// `s` holds a staged tile, `g` [`GRADS_LEN`] values.
#[inline(always)]
pub unsafe fn tile_grads(
    part: &Part,
    tile: (u32, u32),
    s: *const u32,
    g: *mut f32,
    thread: u32,
    threads: u32,
) {
    // Block-uniform, as in `stage`: one straight loop per part.
    if part.columns {
        unsafe { part_grads::<true>(part, tile, s, g, thread, threads) }
    } else {
        unsafe { part_grads::<false>(part, tile, s, g, thread, threads) }
    }
}

/// [`tile_grads`] for the column part (`COLUMNS`) or the row part.
///
/// # Safety
/// As [`tile_grads`]; `part.columns == COLUMNS`.
#[inline(always)]
unsafe fn part_grads<const COLUMNS: bool>(
    part: &Part,
    (_, len): (u32, u32),
    s: *const u32,
    g: *mut f32,
    thread: u32,
    threads: u32,
) {
    let mut i = thread;
    while i < TILE * LANES {
        let (at, lane, pos, v) = if COLUMNS {
            let (r, c) = (i / LANES, i % LANES);
            let base = r * COL_STRIDE + c;
            (r * LANES + c, c, r, unsafe { window(s, base, 1) })
        } else {
            let (r, c) = (i / TILE, i % TILE);
            (r * ROW_STRIDE + c, r, c, unsafe {
                window(s, r * TILE + c, TILE)
            })
        };
        let v = if lane < part.lanes && pos < len {
            normalised(&v)
        } else {
            0.0
        };
        unsafe { *g.add(at as usize) = v };
        i += threads;
    }
}

/// Eight staged samples from `base`, `step` apart.
///
/// # Safety
/// They lie in `s`.
#[inline(always)]
unsafe fn window(s: *const u32, base: u32, step: u32) -> [u32; 8] {
    let at = |k: u32| unsafe { *s.add((base + k * step) as usize) };
    [at(0), at(1), at(2), at(3), at(4), at(5), at(6), at(7)]
}

/// Lane `lane`'s running sum plus its tile's gradients, in order (rows for a column,
/// columns for a row).
///
/// # Safety
/// `g` holds the tile's gradients; `lane < part.lanes`.
#[inline(always)]
pub unsafe fn tile_sum(part: &Part, tile: (u32, u32), g: *const f32, lane: u32, acc: f32) -> f32 {
    if part.columns {
        unsafe { part_sum::<true>(tile, g, lane, acc) }
    } else {
        unsafe { part_sum::<false>(tile, g, lane, acc) }
    }
}

/// [`tile_sum`] for the column part (`COLUMNS`) or the row part.
///
/// # Safety
/// As [`tile_sum`].
#[inline(always)]
unsafe fn part_sum<const COLUMNS: bool>(
    (_, len): (u32, u32),
    g: *const f32,
    lane: u32,
    acc: f32,
) -> f32 {
    let at = |k: u32| {
        let i = if COLUMNS {
            k * LANES + lane
        } else {
            lane * ROW_STRIDE + k
        };
        unsafe { *g.add(i as usize) }
    };
    // Sixteen loads, then sixteen additions in order: the loads overlap. Past `len` the
    // tile holds zeros (`tile_grads`), which leave the sum as it is.
    let mut acc = acc;
    let mut k = 0;
    while k < len {
        let mut v = [0f32; 16];
        unroll!(j in [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15] {
            v[j] = at(k + j as u32);
        });
        unroll!(j in [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15] {
            acc += v[j];
        });
        k += 16;
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::Channel;
    use std::vec;
    use std::vec::Vec;

    fn luma(d: &[u8], w: u32, h: u32) -> Luma8 {
        Luma8 {
            chan: Channel {
                ptr: d.as_ptr() as u64,
                pitch: w,
                step: 1,
                sample_bytes: 1,
                shift: 0,
                max: 255,
                _pad: 0,
            },
            width: w,
            height: h,
            shift: 0,
            range: 0,
        }
    }

    fn params(w: u32, h: u32) -> Params {
        Params {
            luma: luma(&[], w, h),
            period_min: 3,
            period_max: 24,
            first: 1,
            _pad: 0,
        }
    }

    #[test]
    fn the_gradient_is_normalised_by_its_neighbours() {
        let row = [10u8, 10, 10, 10, 50, 50, 50, 50];
        let l = luma(&row, 8, 1);
        assert_eq!(unsafe { col_grad(&l, 3, 0) }, 40.0); // no other differences: / 1
        let row = [0u8, 2, 4, 6, 26, 28, 30, 32];
        let l = luma(&row, 8, 1);
        assert_eq!(unsafe { col_grad(&l, 3, 0) }, 20.0 / 12.0);
    }

    #[test]
    fn flat_profiles_are_nan_and_numbers_replace_nan() {
        let zeros = [0f32; 40];
        let r = period_ratio(&unsafe { period_sums(zeros.as_ptr(), 40, 8) });
        assert!(r.unwrap().is_nan());
        assert!(keep_larger(0.0, f32::NAN).is_nan());
        assert_eq!(keep_larger(f32::NAN, 2.0), 2.0);
        // A flat frame: both profiles 0, the result NaN.
        let p = params(40, 40);
        assert!(unsafe { ratio(&p, zeros.as_ptr(), zeros.as_ptr()) }.is_nan());
        // Too small for any period (w, h ≤ 8): 0.
        let p = params(8, 8);
        assert_eq!(unsafe { ratio(&p, zeros.as_ptr(), zeros.as_ptr()) }, 0.0);
    }

    #[test]
    fn a_grid_of_period_8_stands_out() {
        // Column profile: 1 at the grid (x % 8 == 7), 0.25 elsewhere.
        let n = 64u32;
        let prof: Vec<f32> = (0..n)
            .map(|x| if x % 8 == 7 { 1.0 } else { 0.25 })
            .collect();
        let r8 = period_ratio(&unsafe { period_sums(prof.as_ptr(), n, 8) }).unwrap();
        assert_eq!(r8, 4.0);
        let r5 = period_ratio(&unsafe { period_sums(prof.as_ptr(), n, 5) }).unwrap();
        assert!(r5 < 2.0, "{r5}");
        let flat = vec![0f32; 64];
        let mut p = params(n, n);
        p.period_max = 8;
        // The row profile is flat (NaN ratios): NaN comes last and stays.
        assert!(unsafe { ratio(&p, prof.as_ptr(), flat.as_ptr()) }.is_nan());
        // The other way round, the vertical numbers replace the horizontal NaN.
        assert_eq!(unsafe { ratio(&p, flat.as_ptr(), prof.as_ptr()) }, 4.0);
    }

    #[test]
    fn profiles_add_up_in_row_and_column_order() {
        let (w, h) = (12u32, 10u32);
        let d: Vec<u8> = (0..w * h).map(|i| ((i * 37) % 251) as u8).collect();
        let l = luma(&d, w, h);
        let mut cols = vec![0f32; w as usize];
        for y in 1..h {
            unsafe { add_col_row(&l, y, 0, w, cols.as_mut_ptr()) };
        }
        let mut want = 0f32;
        for y in 1..h {
            want += unsafe { col_grad(&l, 5, y) };
        }
        assert_eq!(cols[5], want);
        assert_eq!((cols[2], cols[8]), (0.0, 0.0));
        let mut want = 0f32;
        for x in 1..w {
            want += unsafe { row_grad(&l, x, 4) };
        }
        assert_eq!(unsafe { row_sum(&l, 4, 0.0) }, want);
        // One band (w, h ≤ TILE + 1): the band order is the sequential order.
        let mut banded = vec![0f32; w as usize];
        let mut scratch = vec![0f32; w as usize];
        unsafe { add_col_bands(&l, 0, w, banded.as_mut_ptr(), scratch.as_mut_ptr()) };
        assert_eq!(banded, cols);
        // Several bands: each band from 0, then the bands in order.
        let (w, h) = (300u32, 270u32);
        let d: Vec<u8> = (0..w * h).map(|i| ((i * 37 + i / 7) % 251) as u8).collect();
        let l = luma(&d, w, h);
        let mut want = 0.5f32;
        let mut x0 = 1;
        while x0 < w {
            let mut band = 0f32;
            for x in x0..(x0 + TILE).min(w) {
                band += unsafe { row_grad(&l, x, 7) };
            }
            want += band;
            x0 += TILE;
        }
        assert_eq!(unsafe { row_sum(&l, 7, 0.5) }, want);
        let mut want = 0.25f32;
        let mut y0 = 1;
        while y0 < h {
            let mut band = 0f32;
            for y in y0..(y0 + TILE).min(h) {
                band += unsafe { col_grad(&l, 11, y) };
            }
            want += band;
            y0 += TILE;
        }
        let mut cols = vec![0.25f32; w as usize];
        let mut scratch = vec![0f32; w as usize];
        unsafe { add_col_bands(&l, 0, w, cols.as_mut_ptr(), scratch.as_mut_ptr()) };
        assert_eq!(cols[11], want);
        assert_eq!((cols[2], cols[w as usize - 4]), (0.25, 0.25));
        assert_eq!(bands(h), 269u32.div_ceil(TILE));
        assert!(bands(h) > 1);
    }

    /// The profile kernels' steps on the host, thread by thread between their barriers:
    /// every (group, band) block's band sums, then every profile value's band additions.
    fn emulate(p: &Params, cols: &mut [f32], rows: &mut [f32], threads: u32) {
        let l = p.luma;
        let (w, h) = (l.width, l.height);
        let mut s = vec![0u32; SAMPLES_LEN];
        let mut g = vec![0f32; GRADS_LEN];
        let mut cband = vec![f32::NAN; (bands(h) * w).max(1) as usize];
        let mut rband = vec![f32::NAN; (bands(w) * h).max(1) as usize];
        for b in 0..profile_grid(w, h) {
            let (part, k) = part_band(w, h, b);
            let t = tile(&l, &part, k).unwrap();
            for th in 0..threads {
                unsafe { stage(&l, &part, t, s.as_mut_ptr(), th, threads) };
            }
            for th in 0..threads {
                unsafe { tile_grads(&part, t, s.as_ptr(), g.as_mut_ptr(), th, threads) };
            }
            let (out, n) = if part.columns {
                (&mut cband, w)
            } else {
                (&mut rband, h)
            };
            for lane in 0..part.lanes {
                let v = unsafe { tile_sum(&part, t, g.as_ptr(), lane, 0.0) };
                out[(k * n + part.first + lane) as usize] = v;
            }
        }
        for (prof, band, n, count) in [(cols, &cband, w, bands(h)), (rows, &rband, h, bands(w))] {
            let (a, b) = span(n);
            for i in a..b {
                let start = if p.first != 0 { 0.0 } else { prof[i as usize] };
                prof[i as usize] = unsafe { add_bands(start, band.as_ptr(), n, i, count) };
            }
        }
    }

    #[test]
    fn the_kernels_tiles_add_as_the_cpu_backend() {
        let mut seed = 0x5eedu64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for &(w, h, wide) in &[
            (1u32, 1u32, false),
            (8, 8, false),
            (9, 40, true),
            (12, 10, false),
            (97, 61, false),
            (300, 140, true),
            (130, 131, false),
            (261, 300, false),
        ] {
            let (bytes, max) = if wide { (2u32, 1023u32) } else { (1, 255) };
            let pitch = w * bytes + 3;
            let mut cols_k = vec![0f32; w as usize];
            let mut rows_k = vec![0f32; h as usize];
            let mut cols_c = cols_k.clone();
            let mut rows_c = rows_k.clone();
            for f in 0..3 {
                let mut d = vec![0u8; (pitch * h) as usize];
                for y in 0..h {
                    for x in 0..w {
                        let v =
                            ((x / 8 * 37 + y / 8 * 91) as u64 * 13 + rnd() % 16) % (max as u64 + 1);
                        let at = (y * pitch + x * bytes) as usize;
                        d[at] = v as u8;
                        if wide {
                            d[at + 1] = (v >> 8) as u8;
                        }
                    }
                }
                let p = Params {
                    luma: Luma8 {
                        chan: Channel {
                            ptr: d.as_ptr() as u64,
                            pitch,
                            step: bytes,
                            sample_bytes: bytes,
                            shift: 0,
                            max,
                            _pad: 0,
                        },
                        width: w,
                        height: h,
                        shift: if wide { 2 } else { 0 },
                        range: 0,
                    },
                    period_min: 3,
                    period_max: 24,
                    first: (f == 0) as u32,
                    _pad: 0,
                };
                // The launch's threads, and fewer (the leftover loop of `stage`).
                let threads = if f == 1 { 100 } else { BLOCK };
                emulate(&p, &mut cols_k, &mut rows_k, threads);
                let mut scratch = vec![0f32; w as usize];
                unsafe { add_col_bands(&p.luma, 0, w, cols_c.as_mut_ptr(), scratch.as_mut_ptr()) };
                let (a, b) = span(h);
                for y in a..b {
                    rows_c[y as usize] = unsafe { row_sum(&p.luma, y, rows_c[y as usize]) };
                }
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&cols_k), bits(&cols_c), "{w}x{h} frame {f} columns");
                assert_eq!(bits(&rows_k), bits(&rows_c), "{w}x{h} frame {f} rows");
            }
        }
    }

    #[test]
    fn lane_sums_count_every_position_once_and_agree_with_the_sequential_sums() {
        let mut seed = 7u64;
        for n in [0u32, 8, 9, 40, 97, 1920] {
            let prof: Vec<f32> = (0..n)
                .map(|_| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                    (seed >> 40) as f32 / 65536.0
                })
                .collect();
            for period in 2..=64u32 {
                let s = unsafe { period_sums(prof.as_ptr(), n, period) };
                // FFmpeg's order: one position after the other.
                let (a, b) = span(n);
                let (mut g, mut o, mut gn, mut on) = (0f32, 0f32, 0u32, 0u32);
                for i in a..b {
                    if i % period == period - 1 {
                        g += prof[i as usize]
                            .max(prof[i as usize + 1])
                            .max(prof[i as usize - 1]);
                        gn += 1;
                    } else {
                        o += prof[i as usize];
                        on += 1;
                    }
                }
                assert_eq!((s.grid_n, s.other_n), (gn, on), "n {n} period {period}");
                let close = |x: f32, y: f32| (x - y).abs() <= 1e-5 * y.abs().max(1e-30);
                assert!(
                    close(s.grid, g) && close(s.other, o),
                    "n {n} period {period}"
                );
            }
        }
    }
}
