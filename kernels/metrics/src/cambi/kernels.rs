//! The CAMBI kernels, one frame per launch sequence (the engine's `metric::cambi::cuda`
//! queues them): `cambi_prepare` (the working plane), `cambi_flat` and `cambi_mask` (the
//! spatial mask), then per scale `cambi_mode` (the mode-filtered plane, decimated on the
//! fly, and each pixel's key), `cambi_cvalues` (the c-values and the first histogram of
//! [`super::topk`]), two `cambi_radix` passes, `cambi_topk_sum` and `cambi_topk_mean` (the
//! scale's score).
//!
//! The plane kernels run one thread per output pixel (`PLANE_W`×`PLANE_H` blocks).
//! `cambi_cvalues` runs one block of [`STRIP`] threads (two warps) per strip of `STRIP`
//! columns and `rows` rows:
//! it slides per-column counts (one byte per band row, in dynamic shared memory, for the
//! strip's columns and `half` more on each side) down the rows, and sums the window's
//! columns for each count a c-value asks for. Every lane owns its columns' counts, so no
//! update is atomic; the counts, hence the c-values, are the host's exactly.

#[cfg(target_arch = "nvptx64")]
use super::topk::{self, BINS, Selection};
#[cfg(target_arch = "nvptx64")]
use super::{
    COLUMN_PAD, ContrastArgs, HIST_BINS, NO_KEY, Plane16, RECIP_LEN, SELECT_GROUPS, STRIP, Source,
    TOPK_WARPS, c_value, columns_count, count_of, first_word, flat, flat_sum_h, key,
    mask_from_sums, mode_with, window_counts12, working_sample,
};
#[cfg(target_arch = "nvptx64")]
use gpumetrics_device as dev;

gpumetrics_device::kernel! {
    /// `out[y·w + x]` = working-plane sample (x, y) of the `w`×`h` encoding size
    /// ([`super::working_sample`]). `PLANE_W`×`PLANE_H` threads, grid covering w × h.
    pub unsafe fn cambi_prepare(
        src: Source,
        rows: *const u32,
        cols: *const u32,
        w: u32,
        h: u32,
        anti: u32,
        out: *mut u16,
    ) => prepare_body;

    /// `out[y·w + x]` = flatness of `p` at (x, y) (rows of `out` are `p.width` apart). Same
    /// grid over `p`.
    pub unsafe fn cambi_flat(p: Plane16, out: *mut u8) => flat_body;

    /// `out[y·w + x]` = the sum of the flatness values of row y within 3 columns of x
    /// ([`super::flat_sum_h`]), of the `w`×`h` flatness map. Same grid.
    pub unsafe fn cambi_mask_rows(flats: *const u8, w: u32, h: u32, out: *mut u8) => mask_rows_body;

    /// `out[y·w + x]` = the mask at (x, y) from the row sums ([`super::mask_from_sums`]).
    /// Same grid.
    pub unsafe fn cambi_mask(sums: *const u8, w: u32, h: u32, index: u32, out: *mut u16) => mask_body;

    /// One scale's plane: `out[y·w + x]` = the mode filter at (x, y) of `src` read every
    /// `step`-th sample (1, or 2 for a new scale), `keys[y·w + x]` = its key ([`super::key`])
    /// with the mask read at (x, y)·2^`mask_shift` of the encoding-size `mask`. Same grid
    /// over w × h.
    pub unsafe fn cambi_mode(
        src: Plane16,
        step: u32,
        mask: Plane16,
        mask_shift: u32,
        w: u32,
        h: u32,
        c: ContrastArgs,
        out: *mut u16,
        keys: *mut u16,
    ) => mode_body;

    /// `out[y·w + x]` = the c-value at (x, y) of the keys, for a `2·half + 1` window; adds
    /// the positive values to pass 0's histogram `hist` ([`super::topk`]). `STRIP` threads
    /// per block; grid (⌈w/STRIP⌉, ⌈h/rows⌉); dynamic shared memory of
    /// `(STRIP + 2·half)·col_bytes` bytes ([`super::column_bytes`]).
    pub unsafe fn cambi_cvalues(
        keys: Plane16,
        half: u32,
        rows: u32,
        c: ContrastArgs,
        recip: *const f32,
        col_bytes: u32,
        out: *mut f32,
        hist: *mut u32,
    ) => cvalues_body;

    /// Radix pass `pass` (1 or 2) over the `n` c-values: chooses the bin of pass `pass − 1`
    /// (from `hist`'s histograms and `state[pass − 2]`, or the start for `kept`), writes it
    /// to `state[pass − 1]` and counts the values in it into pass `pass`'s histogram.
    /// `TOPK_THREADS` threads per block, any grid.
    pub unsafe fn cambi_radix(
        values: *const f32,
        n: u32,
        kept: u32,
        pass: u32,
        hist: *mut u32,
        state: *mut Selection,
    ) => radix_body;

    /// The final selection (into `state[2]`) and, per block, the sum of the values above
    /// its threshold into `partials[block]`. `TOPK_THREADS` threads per block, any grid.
    pub unsafe fn cambi_topk_sum(
        values: *const f32,
        n: u32,
        hist: *const u32,
        state: *mut Selection,
        partials: *mut f64,
    ) => topk_sum_body;

    /// `*score` = the mean of the `kept` largest values, from the `blocks` partial sums and
    /// `state[2]`. One warp.
    pub unsafe fn cambi_topk_mean(
        partials: *const f64,
        blocks: u32,
        kept: u32,
        state: *const Selection,
        score: *mut f64,
    ) => topk_mean_body;
}

/// This thread's pixel of a 2-D plane grid.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn pixel() -> (u32, u32) {
    (dev::global_idx_x(), dev::global_idx_y())
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn prepare_body(
    src: Source,
    rows: *const u32,
    cols: *const u32,
    w: u32,
    h: u32,
    anti: u32,
    out: *mut u16,
) {
    let (x, y) = pixel();
    if x < w && y < h {
        let v = unsafe { working_sample(&src, rows, cols, (w, h), anti != 0, x, y) };
        unsafe { *out.add((y * w + x) as usize) = v };
    }
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn flat_body(p: Plane16, out: *mut u8) {
    let (x, y) = pixel();
    if x < p.width && y < p.height {
        unsafe { *out.add((y * p.width + x) as usize) = flat(&p, x, y) };
    }
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn mask_rows_body(flats: *const u8, w: u32, h: u32, out: *mut u8) {
    let (x, y) = pixel();
    if x < w && y < h {
        unsafe { *out.add((y * w + x) as usize) = flat_sum_h(flats, w, x, y) };
    }
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn mask_body(sums: *const u8, w: u32, h: u32, index: u32, out: *mut u16) {
    let (x, y) = pixel();
    if x < w && y < h {
        unsafe { *out.add((y * w + x) as usize) = mask_from_sums(sums, w, h, x, y, index) };
    }
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn mode_body(
    src: Plane16,
    step: u32,
    mask: Plane16,
    mask_shift: u32,
    w: u32,
    h: u32,
    c: ContrastArgs,
    out: *mut u16,
    keys: *mut u16,
) {
    let (x, y) = pixel();
    if x >= w || y >= h {
        return;
    }
    let at = |x: u32, y: u32| unsafe { src.at(step * x, step * y) };
    let v = mode_with(at, w, h, x, y);
    let masked = unsafe { mask.at(x << mask_shift, y << mask_shift) } != 0;
    let contrast = c.with(&[]);
    let i = (y * w + x) as usize;
    unsafe {
        *out.add(i) = v as u16;
        *keys.add(i) = key(v, masked, &contrast);
    }
}

/// Columns a thread owns in `cambi_cvalues`: `lane` and `lane + STRIP` (the strip and
/// `half ≤ 32` columns on each side).
#[cfg(target_arch = "nvptx64")]
const LANE_COLUMNS: usize = 2;

/// Rows whose keys `cambi_cvalues` loads at once while it counts the rows above its first.
#[cfg(target_arch = "nvptx64")]
const BATCH: usize = 8;

/// Rows whose keys `cambi_cvalues` loads at once before it measures them.
#[cfg(target_arch = "nvptx64")]
const GROUP_ROWS: usize = 4;

/// The keys of row `y` at the lane's columns (column `c` is plane column `first + c`),
/// [`NO_KEY`] outside the plane or for a row that is not counted (`y` None). Loaded for
/// several rows before any is used, so that the loads' latencies overlap.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn row_keys(
    keys: &Plane16,
    (first, columns): (i32, u32),
    lane: u32,
    y: Option<u32>,
) -> [u32; LANE_COLUMNS] {
    let mut k = [NO_KEY as u32; LANE_COLUMNS];
    if let Some(y) = y {
        unroll!(i in [0 1] {
            let c = lane + i as u32 * STRIP;
            let x = first + c as i32;
            if c < columns && x >= 0 && (x as u32) < keys.width {
                k[i] = unsafe { keys.at(x as u32, y) };
            }
        });
    }
    k
}

/// Adds (`delta` 1) or removes (`delta` 255, i.e. −1 in a byte) a row's keys
/// ([`row_keys`]) to the counts of the lane's columns.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn apply_keys(
    counts: *mut u8,
    col_bytes: u32,
    lane: u32,
    k: [u32; LANE_COLUMNS],
    delta: u8,
) {
    unroll!(i in [0 1] {
        if k[i] != NO_KEY as u32 {
            let c = lane + i as u32 * STRIP;
            let cell = unsafe { counts.add((c * col_bytes + COLUMN_PAD + k[i]) as usize) };
            unsafe { *cell = (*cell).wrapping_add(delta) };
        }
    });
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn cvalues_body(
    keys: Plane16,
    half: u32,
    rows: u32,
    c: ContrastArgs,
    recip: *const f32,
    col_bytes: u32,
    out: *mut f32,
    hist: *mut u32,
) {
    gpumetrics_device::shared!(static CAMBI_HIST: [u32; HIST_BINS]);
    let counts = dev::dynamic_shared::<u8>();
    let lane = dev::thread_idx_x();
    let (w, h) = (keys.width, keys.height);
    let x0 = dev::block_idx_x() * STRIP;
    let y0 = dev::block_idx_y() * rows;
    let y1 = (y0 + rows).min(h);
    let columns = STRIP + 2 * half;
    let first = x0 as i32 - half as i32;
    // SAFETY: the table has RECIP_LEN entries (the engine uploads libvmaf's).
    let recip = unsafe { core::slice::from_raw_parts(recip, RECIP_LEN) };
    let contrast = c.with(recip);
    let words = (columns * col_bytes / 4) as usize;
    let counts32 = counts.cast::<u32>();
    let mut i = lane as usize;
    while i < words {
        unsafe { *counts32.add(i) = 0 };
        i += STRIP as usize;
    }
    let mut b = lane as usize;
    while b < HIST_BINS {
        unsafe { CAMBI_HIST.write(b, 0) };
        b += STRIP as usize;
    }
    unsafe { dev::sync_threads() };
    let span = (first, columns);
    // The rows above the first one's window, `BATCH` rows' keys loaded at once (the loads'
    // latency, not the counting, is what a row costs).
    let (top, end) = (y0.saturating_sub(half), (y0 + half).min(h));
    let mut y = top;
    while y < end {
        let mut ks = [[NO_KEY as u32; LANE_COLUMNS]; BATCH];
        unroll!(j in [0 1 2 3 4 5 6 7] {
            let yy = y + j as u32;
            ks[j] = unsafe { row_keys(&keys, span, lane, (yy < end).then_some(yy)) };
        });
        unroll!(j in [0 1 2 3 4 5 6 7] {
            unsafe { apply_keys(counts, col_bytes, lane, ks[j], 1) };
        });
        y += BATCH as u32;
    }
    let x = x0 + lane;
    let window = (2 * half + 1) as usize;
    // Row y's window loses row y − half − 1 (not for the block's first row) and gains row
    // y + half.
    let leaving = |y: u32| (y > y0 && y > half).then(|| y - half - 1);
    let entering = |y: u32| (y + half < h).then_some(y + half);
    let centre = |y: u32| {
        if x < w && y < y1 {
            unsafe { keys.at(x, y) }
        } else {
            NO_KEY as u32
        }
    };
    // The c-value of this thread's pixel in row y, from the counts of row y's window.
    let measure = |y: u32, k: u32| {
        if x >= w {
            return;
        }
        let v = if k == NO_KEY as u32 {
            0.0
        } else {
            // The window's columns are lane..lane + window of the counts.
            let base = unsafe { counts.add((lane * col_bytes) as usize) };
            let stride = col_bytes as usize;
            let v = contrast.band_base + k;
            if contrast.diffs <= 4 {
                // Every count the c-value asks for, from three words per column.
                let word = first_word(k, contrast.diffs);
                let n = unsafe { window_counts12(base, stride, window, word) };
                let first = 4 * word as i32 - COLUMN_PAD as i32;
                c_value(v, &contrast, |r| count_of(&n, (r - first) as u32))
            } else {
                c_value(v, &contrast, |r| {
                    if r < 0 {
                        0
                    } else {
                        unsafe { columns_count(base, stride, window, r as usize) }
                    }
                })
            }
        };
        unsafe { *out.add((y * w + x) as usize) = v };
        if v > 0.0 {
            let bin = topk::bin(v.to_bits(), 0) as usize;
            unsafe { dev::atomic_add_u32(CAMBI_HIST.as_mut_ptr().add(bin), 1) };
        }
    };
    // Groups of `GROUP_ROWS` rows: every key the group needs is loaded first, then each
    // row's counts are updated and its c-values computed in turn.
    let mut y = y0;
    while y < y1 {
        let mut leave = [[NO_KEY as u32; LANE_COLUMNS]; GROUP_ROWS];
        let mut enter = [[NO_KEY as u32; LANE_COLUMNS]; GROUP_ROWS];
        let mut own = [NO_KEY as u32; GROUP_ROWS];
        unroll!(j in [0 1 2 3] {
            let yy = y + j as u32;
            if yy < y1 {
                leave[j] = unsafe { row_keys(&keys, span, lane, leaving(yy)) };
                enter[j] = unsafe { row_keys(&keys, span, lane, entering(yy)) };
                own[j] = centre(yy);
            }
        });
        unroll!(j in [0 1 2 3] {
            // The same for every thread of the block (its barriers are reached by all).
            if y + (j as u32) < y1 {
                unsafe {
                    apply_keys(counts, col_bytes, lane, leave[j], 255);
                    apply_keys(counts, col_bytes, lane, enter[j], 1);
                    dev::sync_threads();
                }
                measure(y + j as u32, own[j]);
                unsafe { dev::sync_threads() };
            }
        });
        y += GROUP_ROWS as u32;
    }
    let mut b = lane as usize;
    while b < HIST_BINS {
        let n = unsafe { CAMBI_HIST.read(b) };
        if n != 0 {
            unsafe { dev::atomic_add_u32(hist.add(b), n) };
        }
        b += STRIP as usize;
    }
}

/// Bins per group of [`block_select`]: the block adds each group's counts first, so that
/// one thread's scan is short.
#[cfg(target_arch = "nvptx64")]
const GROUP: usize = HIST_BINS / SELECT_GROUPS;

/// The selection after pass `pass` from its histogram at `hist` (`BINS[pass]` counts), by
/// the whole block: the counts are staged in shared memory with each group's sum, and
/// thread 0 scans the groups, then the bins of its group ([`topk::select`] twice, the same
/// bin as one scan). Every thread returns the result.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn block_select(s: Selection, pass: usize, hist: *const u32) -> Selection {
    gpumetrics_device::shared!(static CAMBI_SEL_BINS: [u32; HIST_BINS]);
    gpumetrics_device::shared!(static CAMBI_SEL_GROUPS: [u32; SELECT_GROUPS]);
    let t = dev::thread_idx_x() as usize;
    let threads = dev::block_dim_x() as usize;
    let bins = BINS[pass];
    let groups = bins / GROUP;
    let mut i = t;
    while i < bins {
        unsafe { CAMBI_SEL_BINS.write(i, *hist.add(i)) };
        i += threads;
    }
    unsafe { dev::sync_threads() };
    if t < groups {
        let mut sum = 0;
        for j in 0..GROUP {
            sum += unsafe { CAMBI_SEL_BINS.read(t * GROUP + j) };
        }
        unsafe { CAMBI_SEL_GROUPS.write(t, sum) };
    }
    unsafe { dev::sync_threads() };
    if t == 0 {
        let found = if s.zero != 0 {
            (None, 0)
        } else {
            let (g, above) = topk::select(|g| unsafe { CAMBI_SEL_GROUPS.read(g) }, groups, s.k);
            match g {
                None => (None, above),
                Some(g) => {
                    let (b, more) = topk::select(
                        |j| unsafe { CAMBI_SEL_BINS.read(g * GROUP + j) },
                        GROUP,
                        s.k - above,
                    );
                    (b.map(|b| g * GROUP + b), above + more)
                }
            }
        };
        let n = s.advance(pass, found);
        // The groups' sums are read: their first four cells carry the result (one array
        // whose cells are indexed by variables stays one array in the PTX).
        unsafe {
            CAMBI_SEL_GROUPS.write(0, n.prefix);
            CAMBI_SEL_GROUPS.write(1, n.k);
            CAMBI_SEL_GROUPS.write(2, n.above);
            CAMBI_SEL_GROUPS.write(3, n.zero);
        }
    }
    unsafe { dev::sync_threads() };
    unsafe {
        Selection {
            prefix: CAMBI_SEL_GROUPS.read(0),
            k: CAMBI_SEL_GROUPS.read(1),
            above: CAMBI_SEL_GROUPS.read(2),
            zero: CAMBI_SEL_GROUPS.read(3),
        }
    }
}

/// Offset of pass `pass`'s histogram among a scale's counters.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn hist_offset(pass: usize) -> usize {
    match pass {
        0 => 0,
        1 => BINS[0],
        _ => BINS[0] + BINS[1],
    }
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn radix_body(
    values: *const f32,
    n: u32,
    kept: u32,
    pass: u32,
    hist: *mut u32,
    state: *mut Selection,
) {
    gpumetrics_device::shared!(static CAMBI_HIST: [u32; HIST_BINS]);
    let pass = pass as usize;
    let before = if pass == 1 {
        Selection::start(kept)
    } else {
        unsafe { *state.add(pass - 2) }
    };
    let s = unsafe { block_select(before, pass - 1, hist.add(hist_offset(pass - 1))) };
    let t = dev::thread_idx_x() as usize;
    if dev::block_idx_x() == 0 && t == 0 {
        unsafe { *state.add(pass - 1) = s };
    }
    if s.zero != 0 {
        return;
    }
    let threads = dev::block_dim_x() as usize;
    let mut b = t;
    while b < BINS[pass] {
        unsafe { CAMBI_HIST.write(b, 0) };
        b += threads;
    }
    unsafe { dev::sync_threads() };
    let total = (dev::grid_dim_x() as usize) * threads;
    let mut i = dev::block_idx_x() as usize * threads + t;
    while i < n as usize {
        let bits = unsafe { *values.add(i) }.to_bits();
        if bits != 0 && topk::in_prefix(bits, pass, s.prefix) {
            let bin = topk::bin(bits, pass) as usize;
            unsafe { dev::atomic_add_u32(CAMBI_HIST.as_mut_ptr().add(bin), 1) };
        }
        i += total;
    }
    unsafe { dev::sync_threads() };
    let out = unsafe { hist.add(hist_offset(pass)) };
    let mut b = t;
    while b < BINS[pass] {
        let c = unsafe { CAMBI_HIST.read(b) };
        if c != 0 {
            unsafe { dev::atomic_add_u32(out.add(b), c) };
        }
        b += threads;
    }
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn topk_sum_body(
    values: *const f32,
    n: u32,
    hist: *const u32,
    state: *mut Selection,
    partials: *mut f64,
) {
    gpumetrics_device::shared!(static CAMBI_WARP_SUMS: [f64; TOPK_WARPS]);
    let before = unsafe { *state.add(1) };
    let s = unsafe { block_select(before, 2, hist.add(hist_offset(2))) };
    let t = dev::thread_idx_x() as usize;
    if dev::block_idx_x() == 0 && t == 0 {
        unsafe { *state.add(2) = s };
    }
    let threshold = s.threshold();
    let threads = dev::block_dim_x() as usize;
    let total = (dev::grid_dim_x() as usize) * threads;
    let mut i = dev::block_idx_x() as usize * threads + t;
    let mut sum = 0.0f64;
    while i < n as usize {
        let v = unsafe { *values.add(i) };
        if v.to_bits() > threshold {
            sum += v as f64;
        }
        i += total;
    }
    let mut offset = 16;
    while offset > 0 {
        sum += unsafe { dev::shfl_down(u32::MAX, sum, offset) };
        offset /= 2;
    }
    if dev::lane_id() == 0 {
        unsafe { CAMBI_WARP_SUMS.write(t / 32, sum) };
    }
    unsafe { dev::sync_threads() };
    if t == 0 {
        let mut block = 0.0;
        for wi in 0..threads / 32 {
            block += unsafe { CAMBI_WARP_SUMS.read(wi) };
        }
        unsafe { *partials.add(dev::block_idx_x() as usize) = block };
    }
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn topk_mean_body(
    partials: *const f64,
    blocks: u32,
    kept: u32,
    state: *const Selection,
    score: *mut f64,
) {
    // Lane l adds partials l, l + 32, ..; then a fixed shuffle tree: the same order for
    // every run.
    let lane = dev::thread_idx_x() as usize;
    let mut sum = 0.0f64;
    let mut b = lane;
    while b < blocks as usize {
        sum += unsafe { *partials.add(b) };
        b += 32;
    }
    let mut offset = 16;
    while offset > 0 {
        sum += unsafe { dev::shfl_down(u32::MAX, sum, offset) };
        offset /= 2;
    }
    if lane == 0 {
        let s = unsafe { *state.add(2) };
        unsafe { *score = topk::mean(&s, sum, kept) };
    }
}
