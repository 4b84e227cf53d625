//! The ColorVideoVDP GPU kernels: thin `kernel!` declarations over device-only bodies that
//! call the per-sample functions of the module (which the CPU backend calls too). A pair
//! is, per pass (the video pass; the first pair of a sequence also an image pass): each
//! side to DKL into the history (`cvvdp_dkl`), the temporal filters (`cvvdp_temporal`;
//! both in one launch, `cvvdp_dkl_temporal`, for the common case past a sequence's first
//! pair), the Gaussian pyramid (`cvvdp_reduce`), per band the contrasts against the next
//! level expanded as they are read (`cvvdp_band`), the masker's blur and the masked
//! differences pooled (`cvvdp_mask`), and the base band (`cvvdp_base`).
//!
//! Per-channel values are indexed by constants (`unroll!` over the channels): an index
//! known only at run time into a by-value parameter struct makes the compiler copy the
//! whole struct to local memory per thread (it did: 288 bytes in the column blur, 352 in
//! the pooling, which took half of a pair's time).

#[cfg(target_arch = "nvptx64")]
use super::*;
#[cfg(target_arch = "nvptx64")]
use gpumetrics_device as dev;
#[cfg(target_arch = "nvptx64")]
use gpumetrics_device::math::{div_full, fmaf, half_bits, half_value, log10f};

gpumetrics_device::kernel! {
    /// One side's frame to DKL: `out` planes 0..3 (the side's history slot, in the layout
    /// `halves` names: `HISTORY_F32` and the others, `Temporal::history`). Block
    /// (`BLOCK_X`, `BLOCK_Y`), a thread per pixel.
    pub unsafe fn cvvdp_dkl(src: Source, display: Display, out: Planes, halves: u32) => dkl;

    /// `cvvdp_dkl` for the common case, 4:2:0 Y'CbCr on an sRGB display (`src.family`,
    /// `sub_x`, `sub_y` and `display.eotf` taken as such): the same code with those
    /// parameters constant, so that the other formats' and EOTFs' tests and the general
    /// subsampling's arithmetic drop out of every pixel's path.
    pub unsafe fn cvvdp_dkl_sdr420(src: Source, display: Display, out: Planes, halves: u32)
        => dkl_sdr420;

    /// `cvvdp_dkl_sdr420` on both sides (`test`, `reference`) and the video pass's
    /// `cvvdp_temporal` in one launch: each thread's `DKL_TEMPORAL_VEC` pixels of a row to
    /// DKL, into the newest slot of each side's history, then filtered with the older
    /// frames. For the pairs [`dkl_temporal_takes`] accepts, past a sequence's first (whose
    /// image pass reads the history). Block (`BLOCK_X`, `BLOCK_Y`), a thread per
    /// `DKL_TEMPORAL_VEC` pixels. Capped at 64 registers (ptxas gave it 80, 3 blocks an SM;
    /// at 64 it spills nothing and 4 fit: 160.6 → 153.2 µs a 1080p launch, H100, ~11:30).
    /// No L2 prefetches of the older frames' samples: issued before the arithmetic, they
    /// took an eighth of its instructions, and it was 118.3 µs a 1080p launch with them,
    /// 104.2 without (H100, 2026-12-06 ~15:15).
    pub unsafe fn cvvdp_dkl_temporal(
        test: Source,
        reference: Source,
        display: Display,
        t: Temporal,
        out: Planes,
    ) => dkl_temporal, max_registers = 64;

    /// The temporal filters of one pass into the eight channels of pyramid level 0 (`out`,
    /// test and reference interleaved per band channel), and this pass's pooling sums
    /// zeroed. One-dimensional blocks of `SUM_THREADS` (at least `PASS_SUMS`), a thread per
    /// `TEMPORAL_VEC` samples (`Temporal::vec`) or per sample. Capped at 64 registers: with
    /// a path per history layout ptxas gave it 72 (3 blocks an SM); at 64 it spills nothing
    /// and 4 fit.
    pub unsafe fn cvvdp_temporal(t: Temporal, out: Planes) => temporal, max_registers = 64;

    /// A reduce: `dst` (half the size, rounded up) from `src` ([`reduce_2d`]'s values, its
    /// column reduces made once per block into shared memory). Block (`BLOCK_X`,
    /// `BLOCK_Y`), grid.z = planes. (The block's input loaded once into shared memory, the
    /// column reduces made from there, was slower: 44.7 → 83.5 µs a 1080p launch, each
    /// thread's loads one after another; H100, ~15:15.)
    pub unsafe fn cvvdp_reduce(src: Planes, dst: Planes) => reduce;

    /// Each band's weighted contrasts against the next level expanded (per sample, nothing
    /// stored), their difference and their common part (`Band::out`), the coarser levels of
    /// a pass in one launch (`Levels`, rows of `BLOCK_Y`). Block (`BLOCK_X`, `BLOCK_Y`), a
    /// thread per pixel.
    pub unsafe fn cvvdp_band(l: Levels) => band_levels;

    /// `cvvdp_band` for one band (levels 0 and 1 of a pass): its parameters in the parameter
    /// space, the grid (`BLOCK_X`, `BLOCK_Y`) blocks over the band. Read from the levels' table
    /// the band's planes took 16 more registers (64: 4 blocks an SM instead of 5). (Capped at
    /// 40 registers, 6 blocks an SM with 12 bytes spilled, it was no faster: H100, ~11:30.)
    pub unsafe fn cvvdp_band_one(b: Band) => band_one;

    /// The masker's blur (reflected edges; none for a band of 6 samples or fewer a side):
    /// the block's common contrasts and the blur's reach either side in shared memory, along
    /// rows, then along columns; its power q per channel, the masked differences, and their
    /// `safe_pow(d, β)` summed per channel into `b.sums` (one atomic add per block and
    /// channel). Every level of a pass in one launch (`Levels`, rows of `BLOCK_Y ·
    /// MASK_ROWS`). Block (`BLOCK_X`, `BLOCK_Y`), a thread per `MASK_ROWS` pixels of a
    /// column. Capped at 40 registers (ptxas gave it 48, 5 blocks an SM; at 40 it spills
    /// nothing and 6 fit: 118.6 → 116.1 µs a 1080p launch, H100, ~11:30). (Its tile filled
    /// by columns and rows, each reflected once, took 56 registers, spilled at 40, and was
    /// slower: 121 µs, ~12:00. Filled by rows, each row and the thread's two columns
    /// reflected once, it spilled 16 bytes at 40 registers and was no faster: 116.5 → 118.2
    /// µs, ~15:15.)
    pub unsafe fn cvvdp_mask(l: Levels) => mask_levels, max_registers = 40;

    /// The base band: contrast against each side's mean, the sensitivity at the
    /// reference's mean, and the pooled differences into `b.sums`. One block of
    /// `SUM_THREADS`.
    pub unsafe fn cvvdp_base(b: Band) => base;

    /// The heat map's collapse (`map=cvvdp`), one band up: `fine` += `coarse` expanded to
    /// `fine`'s size ([`expand_2d`]), plane 0 of each. Block (`BLOCK_X`, `BLOCK_Y`), a
    /// thread per sample of `fine`.
    pub unsafe fn cvvdp_heat_up(coarse: Planes, fine: Planes) => heat_up;

    /// The collapsed heat to the reference's `raw` heat map, in place: `1 − met2jod(v) / 10`
    /// (`jod_a`, `jod_exp`). Block (`BLOCK_X`, `BLOCK_Y`), a thread per pixel.
    pub unsafe fn cvvdp_heat_jod(heat: Planes, jod_a: f32, jod_exp: f32) => heat_jod;
}

/// The body of the `cvvdp_heat_up` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn heat_up(coarse: Planes, fine: Planes) {
    let (x, y) = (dev::global_idx_x(), dev::global_idx_y());
    if x >= fine.width || y >= fine.height {
        return;
    }
    unsafe {
        let up = expand_2d(&coarse, 0, fine.width, fine.height, x, y);
        fine.set(0, x, y, up + fine.at(0, x, y));
    }
}

/// The body of the `cvvdp_heat_jod` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn heat_jod(heat: Planes, jod_a: f32, jod_exp: f32) {
    let (x, y) = (dev::global_idx_x(), dev::global_idx_y());
    if x >= heat.width || y >= heat.height {
        return;
    }
    unsafe {
        let v = heat.at(0, x, y);
        heat.set(0, x, y, 1.0 - met2jod(v, jod_a, jod_exp) / 10.0);
    }
}

/// Block-wide sum of each of the four f64 values, valid in thread (0, 0) (a block of
/// `SUM_THREADS` threads, any shape).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn block_sums(mut v: [f64; BAND_CHANNELS]) -> [f64; BAND_CHANNELS] {
    const WARPS: usize = (SUM_THREADS / 32) as usize;
    gpumetrics_device::shared!(static CVVDP_SUMS: [f64; BAND_CHANNELS * (SUM_THREADS as usize / 32)]);
    for x in v.iter_mut() {
        let mut delta = 16;
        while delta > 0 {
            *x += unsafe { dev::shfl_down(dev::FULL_MASK, *x, delta) };
            delta /= 2;
        }
    }
    let t = dev::thread_idx_y() * dev::block_dim_x() + dev::thread_idx_x();
    let warp = (t / 32) as usize;
    if dev::lane_id() == 0 {
        for (c, x) in v.iter().enumerate() {
            unsafe { CVVDP_SUMS.write(c * WARPS + warp, *x) };
        }
    }
    unsafe { dev::sync_threads() };
    let mut out = [0f64; BAND_CHANNELS];
    if t == 0 {
        for (c, o) in out.iter_mut().enumerate() {
            for w in 0..WARPS {
                *o += unsafe { CVVDP_SUMS.read(c * WARPS + w) };
            }
        }
    }
    out
}

/// Columns and rows of `cvvdp_dkl`'s chroma tile: what a block's pixels read of subsampled
/// chroma (18 × 6 at 4:2:0), with room for chroma at full resolution along an axis.
#[cfg(target_arch = "nvptx64")]
const DKL_CW: u32 = BLOCK_X + 2;
#[cfg(target_arch = "nvptx64")]
const DKL_CH: u32 = BLOCK_Y + 2;

/// The body of the `cvvdp_dkl` kernel (declared above). Subsampled Y'CbCr: the chroma
/// samples the block's pixels read, normalised ([`chroma_value`]), once per block into
/// shared memory (a pixel's eight bilinear taps were eight byte loads, each normalised, and
/// most of the kernel's work); each pixel then reads its taps there, the same values.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn dkl(src: Source, display: Display, out: Planes, halves: u32) {
    gpumetrics_device::shared!(static CVVDP_CHROMA: [f32; (2 * DKL_CW * DKL_CH) as usize]);
    // The same for every thread of the launch: none reaches the barrier below.
    if !is_history_layout(halves) {
        return;
    }
    let (x, y) = (dev::global_idx_x(), dev::global_idx_y());
    let inside = x < src.width && y < src.height && x < out.width && y < out.height;
    let subsampled = src.family == FAMILY_YCBCR && (src.sub_x != 1 || src.sub_y != 1);
    // The chroma the block reads: from its first pixel's first taps to its last pixel's
    // second (`source_index` is monotonic), the same for every thread of the block.
    let (bx, by) = (dev::block_idx_x() * BLOCK_X, dev::block_idx_y() * BLOCK_Y);
    // Along one axis: the first chroma sample and how many, for the block's `block`
    // pixels from `first` (of `n`).
    let span = |first: u32, block: u32, n: u32, sub: u32, chroma: u32| {
        let last = (first + block - 1).min(n - 1);
        let c0 = source_index(first, sub, chroma).0;
        (c0, source_index(last, sub, chroma).1 + 1 - c0)
    };
    let ((cx0, w), (cy0, h)) = if subsampled && bx < src.width && by < src.height {
        (
            span(bx, BLOCK_X, src.width, src.sub_x, src.chroma_width),
            span(by, BLOCK_Y, src.height, src.sub_y, src.chroma_height),
        )
    } else {
        ((0, u32::MAX), (0, u32::MAX))
    };
    let rgb = if w <= DKL_CW && h <= DKL_CH {
        // Every thread of the block takes part (the barrier), inside the frame or not: a
        // thread per column (two passes past 32), rows `BLOCK_Y` apart; no divisions.
        let (tx, ty) = (dev::thread_idx_x(), dev::thread_idx_y());
        let mut r = ty;
        while r < h {
            let mut c = tx;
            while c < w {
                let at = r * DKL_CW + c;
                // A constant channel index: one known only at run time copied `src` to
                // local memory.
                let (cb, cr) = unsafe {
                    (
                        chroma_value(&src, 0, cx0 + c, cy0 + r),
                        chroma_value(&src, 1, cx0 + c, cy0 + r),
                    )
                };
                unsafe {
                    CVVDP_CHROMA.write(at as usize, cb);
                    CVVDP_CHROMA.write((DKL_CW * DKL_CH + at) as usize, cr);
                }
                c += BLOCK_X;
            }
            r += BLOCK_Y;
        }
        unsafe { dev::sync_threads() };
        if !inside {
            return;
        }
        // In bounds: the taps of the block's pixels lie in cx0 .. cx0 + w, cy0 .. cy0 + h.
        let tap = |k: usize, xx: u32, yy: u32| unsafe {
            CVVDP_CHROMA.read_unchecked(
                (k as u32 * DKL_CW * DKL_CH + (yy - cy0) * DKL_CW + (xx - cx0)) as usize,
            )
        };
        unsafe { display_rgb_with(&src, x, y, tap) }
    } else {
        if !inside {
            return;
        }
        unsafe { display_rgb(&src, x, y) }
    };
    let v = to_dkl(&display.rgb_to_dkl, light(&display, rgb));
    // The history slot's layout (`Temporal::history`), as the filters read it
    // (`history_in_halves`); the kernel returned above for a value that names none.
    if history_in_halves(halves, 0) {
        let i = (y * out.width + x) as usize;
        unsafe { *(out.plane(0) as *mut u16).add(i) = half_bits(v[0]) };
    } else {
        unsafe { out.set(0, x, y, v[0]) };
    }
    if history_in_halves(halves, 1) {
        let i = (y * out.width + x) as usize;
        let h = out.plane(1) as *mut u16;
        unsafe {
            *h.add(i) = half_bits(v[1]);
            *h.add(out.stride as usize + i) = half_bits(v[2]);
        }
    } else {
        unsafe {
            out.set(1, x, y, v[1]);
            out.set(2, x, y, v[2]);
        }
    }
}

/// The body of the `cvvdp_dkl_sdr420` kernel (declared above): for the sides that
/// [`sdr420`] accepts, whose parameters it sets here as constants.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn dkl_sdr420(src: Source, display: Display, out: Planes, halves: u32) {
    let src = Source {
        family: FAMILY_YCBCR,
        sub_x: 2,
        sub_y: 2,
        ..src
    };
    let display = Display {
        eotf: EOTF_SRGB,
        ..display
    };
    unsafe { dkl(src, display, out, halves) }
}

/// Four f32 values that load and store as one 128-bit access.
#[cfg(target_arch = "nvptx64")]
#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct F4([f32; 4]);

/// The body of the `cvvdp_temporal` kernel (declared above). The filters are per pixel, so
/// the planes are read as one line of `plane_len` samples: each thread takes `TEMPORAL_VEC`
/// consecutive samples with 128-bit accesses when the planes allow it (`t.vec`), else one.
/// The kernel moves `6 · len + 8` planes and computes little: wide accesses keep more bytes
/// in flight per instruction (the scalar kernel reached 64 % of the DRAM's bandwidth).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn temporal(t: Temporal, out: Planes) {
    if dev::block_idx_x() == 0 {
        let i = dev::thread_idx_x() as usize;
        if i < PASS_SUMS {
            unsafe { *(t.sums as *mut f64).add(i) = 0.0 };
        }
    }
    if !t.is_consistent() {
        return;
    }
    let n = t.plane_len;
    let i = dev::global_idx_x() as u64;
    if t.vec != 0 {
        let first = i * TEMPORAL_VEC as u64;
        if first + TEMPORAL_VEC as u64 <= n {
            unsafe { temporal_at::<F4>(&t, &out, first) };
        }
    } else if i < n {
        unsafe { temporal_at::<f32>(&t, &out, i) };
    }
}

/// A sample or a run of [`TEMPORAL_VEC`] of them, loaded and stored at once.
#[cfg(target_arch = "nvptx64")]
trait Lanes: Copy {
    const N: usize;
    fn zero() -> Self;
    fn get(&self, i: usize) -> f32;
    fn set(&mut self, i: usize, v: f32);
    /// `N` half floats from `p` (aligned to `2 · N` bytes), as values.
    ///
    /// # Safety
    /// `N` halves readable at `p`.
    unsafe fn halves(p: *const u16) -> Self;
    /// The values as `N` half floats at `p` (aligned to `2 · N` bytes).
    ///
    /// # Safety
    /// `N` halves writable at `p`.
    unsafe fn store_halves(self, p: *mut u16);
}

/// Four half floats that load as one 64-bit access.
#[cfg(target_arch = "nvptx64")]
#[repr(C, align(8))]
#[derive(Clone, Copy)]
struct H4([u16; 4]);

#[cfg(target_arch = "nvptx64")]
impl Lanes for f32 {
    const N: usize = 1;
    #[inline(always)]
    fn zero() -> Self {
        0.0
    }
    #[inline(always)]
    fn get(&self, _: usize) -> f32 {
        *self
    }
    #[inline(always)]
    fn set(&mut self, _: usize, v: f32) {
        *self = v;
    }
    #[inline(always)]
    unsafe fn halves(p: *const u16) -> Self {
        half_value(unsafe { *p })
    }
    #[inline(always)]
    unsafe fn store_halves(self, p: *mut u16) {
        unsafe { *p = half_bits(self) };
    }
}

#[cfg(target_arch = "nvptx64")]
impl Lanes for F4 {
    const N: usize = TEMPORAL_VEC as usize;
    #[inline(always)]
    fn zero() -> Self {
        F4([0.0; 4])
    }
    #[inline(always)]
    fn get(&self, i: usize) -> f32 {
        self.0[i]
    }
    #[inline(always)]
    fn set(&mut self, i: usize, v: f32) {
        self.0[i] = v;
    }
    #[inline(always)]
    unsafe fn halves(p: *const u16) -> Self {
        let h = unsafe { *(p as *const H4) };
        F4(h.0.map(half_value))
    }
    #[inline(always)]
    unsafe fn store_halves(self, p: *mut u16) {
        unsafe { *(p as *mut H4) = H4(self.0.map(half_bits)) };
    }
}

/// Where history plane `colour` of `side`'s `slot` holds sample `pixel`, in the layout
/// `t.halves` says (`Temporal::history`).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn history_at(t: &Temporal, side: u32, slot: u32, colour: u32, pixel: u64) -> u64 {
    let base = t.history + 12 * (side * t.slots + slot) as u64 * t.plane_len;
    if colour == 0 {
        let bytes = if history_in_halves(t.halves, 0) { 2 } else { 4 };
        base + bytes * pixel
    } else if !history_in_halves(t.halves, 1) {
        base + 4 * (colour as u64 * t.plane_len + pixel)
    } else {
        base + 4 * t.plane_len + 2 * ((colour as u64 - 1) * t.plane_len + pixel)
    }
}

/// History plane `colour` of `side`'s `slot` at samples `pixel ..` (`L::N` of them).
///
/// # Safety
/// As [`temporal_at`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn history_load<L: Lanes>(t: &Temporal, side: u32, slot: u32, colour: u32, pixel: u64) -> L {
    let p = history_at(t, side, slot, colour, pixel);
    if history_in_halves(t.halves, colour as usize) {
        unsafe { L::halves(p as *const u16) }
    } else {
        unsafe { *(p as *const L) }
    }
}

/// [`temporal`] at samples `pixel ..` (`L::N` of them) of every plane.
///
/// # Safety
/// The samples lie inside the planes (and are aligned for `L`: `t.vec`).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn temporal_at<L: Lanes>(t: &Temporal, out: &Planes, pixel: u64) {
    for side in 0..2 {
        if t.image != 0 {
            let newest = t.newest();
            for cc in 0..3 {
                let v = unsafe { history_load::<L>(t, side, newest, cc, pixel) };
                unsafe { put(out, 2 * cc + side, pixel, v) };
            }
            unsafe { put(out, 6 + side, pixel, L::zero()) };
            continue;
        }
        match t.halves {
            HISTORY_HALVES => unsafe { filter_side::<L, HISTORY_HALVES>(t, out, side, pixel) },
            HISTORY_CHROMA_HALVES => unsafe {
                filter_side::<L, HISTORY_CHROMA_HALVES>(t, out, side, pixel)
            },
            _ => unsafe { filter_side::<L, HISTORY_F32>(t, out, side, pixel) },
        }
    }
}

/// Samples `pixel ..` of level-0 plane `p`.
///
/// # Safety
/// As [`temporal_at`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn put<L: Lanes>(out: &Planes, p: u32, pixel: u64, v: L) {
    unsafe { *(out.plane(p).add(pixel as usize) as *mut L) = v };
}

/// Where `side`'s history planes hold samples `pixel ..` in slot 0, as byte addresses
/// (achromatic, RG, YV; `history_at`'s in layout `LAYOUT`), and the bytes from one slot to
/// the next: a tap's samples are these plus its slot's offset.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn side_planes<const LAYOUT: u32>(t: &Temporal, side: u32, pixel: u64) -> ([u64; 3], u64) {
    let slot = 12 * t.plane_len;
    let base = t.history + side as u64 * t.slots as u64 * slot;
    if LAYOUT == HISTORY_F32 {
        let y = base + 4 * pixel;
        ([y, y + 4 * t.plane_len, y + 8 * t.plane_len], slot)
    } else {
        let y = base + if LAYOUT == HISTORY_HALVES { 2 } else { 4 } * pixel;
        let rg = base + 4 * t.plane_len + 2 * pixel;
        ([y, rg, rg + 2 * t.plane_len], slot)
    }
}

/// Samples `pixel ..` (`L::N` of them) of history plane `colour` at `p`, in layout `LAYOUT`.
///
/// # Safety
/// As [`temporal_at`]; `p` is [`side_planes`]' address plus a slot's offset.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn plane_load<L: Lanes, const LAYOUT: u32>(colour: usize, p: u64) -> L {
    if history_in_halves(LAYOUT, colour) {
        unsafe { L::halves(p as *const u16) }
    } else {
        unsafe { *(p as *const L) }
    }
}

/// Stores samples `v` of history plane `colour` at `p`, in layout `LAYOUT`.
///
/// # Safety
/// As [`plane_load`], and nothing else may access the samples meanwhile.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn plane_store<L: Lanes, const LAYOUT: u32>(colour: usize, p: u64, v: L) {
    if history_in_halves(LAYOUT, colour) {
        unsafe { v.store_halves(p as *mut u16) }
    } else {
        unsafe { *(p as *mut L) = v }
    }
}

/// The video pass's filters of `side` at samples `pixel ..` into its four channels of
/// level 0; `LAYOUT`: `t.halves`, a constant, so that no load picks its width at run time.
/// Each tap's sample addresses are the side's plus the tap's slot offset ([`side_planes`]),
/// and each product is fused into its sum (`fma.rn`; the CPU rounds the product and the sum
/// apart: the two differ by an ulp or so of each sum).
///
/// # Safety
/// As [`temporal_at`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn filter_side<L: Lanes, const LAYOUT: u32>(
    t: &Temporal,
    out: &Planes,
    side: u32,
    pixel: u64,
) {
    let taps = t.taps as *const f32;
    let mut sum = [L::zero(); BAND_CHANNELS];
    let ([py, prg, pyv], slot_bytes) = side_planes::<LAYOUT>(t, side, pixel);
    // Frames before the first are the first (replicate padding).
    let frame = |k: u32| {
        let at = t.slot(k) as u64 * slot_bytes;
        unsafe {
            [
                plane_load::<L, LAYOUT>(0, py + at),
                plane_load::<L, LAYOUT>(1, prg + at),
                plane_load::<L, LAYOUT>(2, pyv + at),
            ]
        }
    };
    let add = |sum: &mut [L; BAND_CHANNELS], k: u32, v: [L; 3]| {
        let tap = (t.len - 1 - k) as usize;
        unroll!(cc in [0 1 2 3] {
            let w = unsafe { *taps.add(cc * t.len as usize + tap) };
            let src = &v[if cc == 3 { 0 } else { cc }];
            for j in 0..L::N {
                sum[cc].set(j, fmaf(src.get(j), w, sum[cc].get(j)));
            }
        });
    };
    // Three frames' loads issued before their sums (the kernel waits on memory), the
    // sums in the same order.
    let mut k = 0;
    while k + 3 <= t.len {
        let (a, b, c) = (frame(k), frame(k + 1), frame(k + 2));
        add(&mut sum, k, a);
        add(&mut sum, k + 1, b);
        add(&mut sum, k + 2, c);
        k += 3;
    }
    while k < t.len {
        let v = frame(k);
        add(&mut sum, k, v);
        k += 1;
    }
    for (cc, s) in sum.iter().enumerate() {
        unsafe { put(out, 2 * cc as u32 + side, pixel, *s) };
    }
}

/// The body of the `cvvdp_dkl_temporal` kernel (declared above). A thread's N pixels read
/// N/2 + 2 columns of chroma (the bilinear taps of pixels Nj ..= Nj + N − 1 lie in columns
/// Nj/2 − 1 ..= Nj/2 + N/2) on two rows, each sample loaded and normalised once into
/// registers; each pixel picks its taps there ([`display_rgb_with`], the same values as
/// `cvvdp_dkl_sdr420`'s tile).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn dkl_temporal(
    test: Source,
    reference: Source,
    display: Display,
    t: Temporal,
    out: Planes,
) {
    type L = Fused;
    const N: u32 = DKL_TEMPORAL_VEC;
    const _: () = assert!(<L as Lanes>::N == N as usize && N <= 4);
    if dev::block_idx_x() == 0 && dev::block_idx_y() == 0 {
        let i = (dev::thread_idx_y() * dev::block_dim_x() + dev::thread_idx_x()) as usize;
        if i < PASS_SUMS {
            unsafe { *(t.sums as *mut f64).add(i) = 0.0 };
        }
    }
    let (w, h) = (out.width, out.height);
    // The launch's conditions, checked: anything else reads nothing.
    if !t.is_consistent()
        || t.image != 0
        || t.plane_len != w as u64 * h as u64
        || !dkl_temporal_takes(&test, &reference, &display, w, h)
    {
        return;
    }
    let (x, y) = (dev::global_idx_x() * N, dev::global_idx_y());
    if x >= w || y >= h {
        return;
    }
    // The history's layout a constant on each path (`filter_side`'s `LAYOUT`).
    match t.halves {
        HISTORY_HALVES => unsafe {
            dkl_temporal_at::<HISTORY_HALVES>(test, reference, display, &t, &out, x, y)
        },
        HISTORY_CHROMA_HALVES => unsafe {
            dkl_temporal_at::<HISTORY_CHROMA_HALVES>(test, reference, display, &t, &out, x, y)
        },
        _ => unsafe { dkl_temporal_at::<HISTORY_F32>(test, reference, display, &t, &out, x, y) },
    }
}

/// `cvvdp_dkl_temporal` at pixels (x, y) ..= (x + N − 1, y), inside the frame, of a launch
/// whose conditions hold; `LAYOUT`: `t.halves`.
///
/// # Safety
/// As the kernel's declaration; the launch's conditions checked.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn dkl_temporal_at<const LAYOUT: u32>(
    test: Source,
    reference: Source,
    display: Display,
    t: &Temporal,
    out: &Planes,
    x: u32,
    y: u32,
) {
    type L = Fused;
    const N: u32 = DKL_TEMPORAL_VEC;
    let pixel = (y * out.width + x) as u64;
    let newest = t.newest();
    let display = Display {
        eotf: EOTF_SRGB,
        ..display
    };
    for side in 0..2 {
        let src = Source {
            family: FAMILY_YCBCR,
            sub_x: 2,
            sub_y: 2,
            ..if side == 0 { test } else { reference }
        };
        let (planes, slot_bytes) = side_planes::<LAYOUT>(t, side, pixel);
        // Four chroma columns from Nj/2 − 1, clamped into the plane as `source_index` clamps
        // its taps, and the two rows. Pixel Nj + i reads columns (i + 1)/2 and the next of
        // these: where `source_index` clamps at the left edge, the first two are the same
        // column.
        let first = (x / 2) as i32 - 1;
        let last = src.chroma_width as i32 - 1;
        let cols = [0, 1, 2, 3].map(|i| (first + i).clamp(0, last) as u32);
        let (y0, y1, _) = source_index(y, 2, src.chroma_height);
        // In bounds: the columns and rows are clamped into the chroma planes.
        let load = |k: usize, row: u32| cols.map(|col| unsafe { chroma_value(&src, k, col, row) });
        let (cb0, cb1, cr0, cr1) = (load(0, y0), load(0, y1), load(1, y0), load(1, y1));
        let mut v = [L::zero(); 3];
        unroll!(j in [0 1 2 3] {
            if j < N as usize {
            let (a, b) = ((j + 1) / 2, (j + 1) / 2 + 1);
            let (x0, _, _) = source_index(x + j as u32, 2, src.chroma_width);
            // Scalars picked by selects: an array picked, then indexed, went through local
            // memory.
            let tap = |k: usize, xx: u32, yy: u32| {
                let (p, q) = if k == 0 { (&cb0, &cb1) } else { (&cr0, &cr1) };
                let pick = |r: &[f32; 4]| if xx == x0 { r[a] } else { r[b] };
                if yy == y0 { pick(p) } else { pick(q) }
            };
            let rgb = unsafe { display_rgb_with(&src, x + j as u32, y, tap) };
            let d = to_dkl(&display.rgb_to_dkl, light(&display, rgb));
            unroll!(cc in [0 1 2] {
                v[cc].set(j, d[cc]);
            });
            }
        });
        // The newest slot, as `cvvdp_dkl` writes it.
        let at = newest as u64 * slot_bytes;
        unroll!(cc in [0 1 2] {
            unsafe { plane_store::<L, LAYOUT>(cc, planes[cc] + at, v[cc]) };
        });
        // Read back with the older frames (by this thread: its own stores, from the L2
        // cache): kept in registers through the filters' loads instead, they took 95
        // registers a thread, 2 blocks an SM.
        unsafe { filter_side::<L, LAYOUT>(t, out, side, pixel) };
    }
}

/// `cvvdp_dkl_temporal`'s pixels a thread ([`DKL_TEMPORAL_VEC`] of them).
#[cfg(target_arch = "nvptx64")]
type Fused = F4;

/// The body of the `cvvdp_reduce` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn reduce(src: Planes, dst: Planes) {
    gpumetrics_device::shared!(static CVVDP_REDUCE: [f32; REDUCE_TILE]);
    const BX: usize = BLOCK_X as usize;
    let (x, y, p) = (dev::global_idx_x(), dev::global_idx_y(), dev::block_idx_z());
    let (tx, ty) = (dev::thread_idx_x() as usize, dev::thread_idx_y() as usize);
    let y0 = dev::block_idx_y() * BLOCK_Y;
    // The block's outputs read input columns 2·x0 − 2 ..= 2·(x0 + BLOCK_X − 1) + 2 (the
    // mirrored terms of the first and last outputs too): their column reduces for the
    // block's rows, once each, into shared memory. Every thread takes part (the barrier).
    let first = (2 * dev::block_idx_x() * BLOCK_X) as i32 - 2;
    let mut i = ty * BX + tx;
    while i < REDUCE_TILE {
        let (r, j) = ((i / REDUCE_W) as u32, (i % REDUCE_W) as i32);
        let (c, row) = (first + j, y0 + r);
        if c >= 0 && (c as u32) < src.width && row < dst.height {
            let col = c as u32;
            let read = |r: u32| unsafe { src.at(p, col, r) };
            let v = if reduce_is_interior(src.height, dst.height, row) {
                reduce_interior(read, row)
            } else {
                reduce_at(read, src.height, dst.height, src.height, row)
            };
            unsafe { CVVDP_REDUCE.write(i, v) };
        }
        i += BX * BLOCK_Y as usize;
    }
    unsafe { dev::sync_threads() };
    if x >= dst.width || y >= dst.height {
        return;
    }
    // `reduce_2d`'s row reduce over those values: the same sums bit for bit.
    let row = ty * REDUCE_W;
    // In bounds: the columns read lie in first ..= first + REDUCE_W − 1 (above).
    let read = |c: u32| unsafe { CVVDP_REDUCE.read_unchecked(row + (c as i32 - first) as usize) };
    let v = if reduce_is_interior(src.width, dst.width, x) {
        reduce_interior(read, x)
    } else {
        reduce_at(read, src.width, dst.width, src.height, x)
    };
    unsafe { dst.set(p, x, y, v) };
}

/// Input columns of a `cvvdp_reduce` block's tile: the `BLOCK_X` outputs' taps, 2·x − 2 ..=
/// 2·x + 2.
#[cfg(target_arch = "nvptx64")]
const REDUCE_W: usize = 2 * BLOCK_X as usize + 3;
/// Values of that tile: `REDUCE_W` columns × the block's `BLOCK_Y` rows.
#[cfg(target_arch = "nvptx64")]
const REDUCE_TILE: usize = REDUCE_W * BLOCK_Y as usize;

/// Columns of the next level that a block's row of `BLOCK_X` samples expands from: its
/// half, one before and one past (`expand_at` reads (i − 2)/2 ..= (i + 2)/2).
#[cfg(target_arch = "nvptx64")]
const EXPAND_W: usize = BLOCK_X as usize / 2 + 2;

/// The body of the `cvvdp_band` kernel (declared above). The next level is expanded in two
/// steps through shared memory: the column expands of the block's rows, once per column
/// of the next level they read (`EXPAND_W` × `BLOCK_Y` per channel, instead of three
/// per sample), then each sample's row expand from them. Both are [`expand_at`]'s sums on
/// the same values in [`expand_2d`]'s order, so each value is the host's, bit for bit.
/// No closures: ones the compiler did not inline kept their captures in local memory.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn band_levels(l: Levels) {
    let (b, (bx, by)) = unsafe { level_block(&l) };
    // Each sample's expands one at a time, its CSF position per channel: with
    // `band_one`'s paths this kernel took 72 registers (ptxas 12.9), 3 blocks an SM; so,
    // 62 and 4, as before.
    unsafe { band(b, bx, by, false) }
}

/// The body of the `cvvdp_band_one` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn band_one(b: Band) {
    unsafe { band(&b, dev::block_idx_x(), dev::block_idx_y(), true) }
}

/// A `Levels` launch's block: its level's [`Band`] and its place in the level, (column,
/// row) of blocks.
///
/// # Safety
/// `l.bands` holds `l.count` `Band`s; the grid is `l.blocks()` blocks.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn level_block(l: &Levels) -> (&'static Band, (u32, u32)) {
    let (level, i) = l.level_of(dev::block_idx_x());
    // A reference, not a copy: the fields are read where used (a copy indexed at run time
    // would go to local memory).
    let b = unsafe { &*(l.bands as *const Band).add(level) };
    let row = b.g.width.div_ceil(BLOCK_X);
    (b, (i % row, i / row))
}

/// One block (`bx`, `by`) of a band's `cvvdp_band`; with `hoist` (a constant at each call),
/// the samples whose row expands are inside take them on a path of their own.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn band(b: &Band, bx: u32, by: u32, hoist: bool) {
    const BX: usize = BLOCK_X as usize;
    gpumetrics_device::shared!(static CVVDP_EXPAND: [f32; 2 * BAND_CHANNELS * EXPAND_PLANE]);
    let (tx, ty) = (dev::thread_idx_x() as usize, dev::thread_idx_y() as usize);
    let (x, y) = (bx * BLOCK_X + tx as u32, by * BLOCK_Y + ty as u32);
    let (g, next) = (&b.g, &b.next);
    let channels = b.channels.min(BAND_CHANNELS as u32);
    // The first column of the next level in the tile, and the block's first row.
    let c0 = (bx * BLOCK_X / 2).saturating_sub(1);
    let y0 = by * BLOCK_Y;
    // The sample's own values, read after the tile's fill, asked of the L2 cache before it
    // (`cvvdp_band_one`'s: `cvvdp_band` took 4 more registers, 3 blocks an SM instead of 4).
    if hoist && x < g.width && y < g.height {
        for k in 0..2 * channels {
            unsafe { dev::prefetch_l2(g.plane(k).add((y * g.width + x) as usize)) };
        }
    }
    // Every thread takes part (the barrier), inside the level or not.
    // Each thread fills row `ty` of the tile (its own row of the block): places j = tx,
    // tx + BLOCK_X, ... of the row's 2 · channels · EXPAND_W (plane j / EXPAND_W, column
    // c0 + j % EXPAND_W), the rows of the next level it reads found once for all of them;
    // where they are interior (most rows), every place's three loads are issued before any
    // sum ([`expand_interior`]'s terms on the same values: the same bits). Places by index
    // over the whole tile, each found anew, took a third of the kernel's instructions
    // (`cvvdp_band_one` at 1080p: 92.7 → 82.0 µs a launch at level 0, 34.8 → 32.3 at level 1;
    // H100, ~15:15).
    const ITEMS: usize = (2 * BAND_CHANNELS * EXPAND_W).div_ceil(BX);
    const _: () = assert!(ITEMS == 5);
    let places = 2 * channels as usize * EXPAND_W;
    let yr = y0 + ty as u32;
    let place = |j: usize| (j / EXPAND_W, c0 + (j % EXPAND_W) as u32);
    let slot = |j: usize| (j / EXPAND_W) * EXPAND_PLANE + ty * EXPAND_W + j % EXPAND_W;
    if yr < g.height && expand_is_interior(next.height, g.height, yr) {
        // The three rows `expand_interior` reads: (y − 1)/2, +1 and (even y) +2.
        let r0 = (yr - 1) / 2;
        let (r1, r2) = (r0 + 1, r0 + 1 + yr.is_multiple_of(2) as u32);
        let mut z = [[0f32; 3]; ITEMS];
        unroll!(m in [0 1 2 3 4] {
            let j = tx + m * BX;
            let (k, col) = place(j);
            if j < places && col < next.width {
                // In bounds: interior rows read inside the next level; the column is checked.
                z[m] = unsafe {
                    [
                        next.at(k as u32, col, r0),
                        next.at(k as u32, col, r1),
                        next.at(k as u32, col, r2),
                    ]
                };
            }
        });
        unroll!(m in [0 1 2 3 4] {
            let j = tx + m * BX;
            if j < places && place(j).1 < next.width {
                let zm = z[m];
                let v = expand_interior(
                    |row| {
                        if row == r0 {
                            zm[0]
                        } else if row == r1 {
                            zm[1]
                        } else {
                            zm[2]
                        }
                    },
                    yr,
                );
                unsafe { CVVDP_EXPAND.write(slot(j), v) };
            }
        });
    } else if yr < g.height {
        let mut j = tx;
        while j < places {
            let (k, col) = place(j);
            if col < next.width {
                let v = unsafe { column_expand(next, k as u32, col, g.height, yr) };
                unsafe { CVVDP_EXPAND.write(slot(j), v) };
            }
            j += BX;
        }
    }
    unsafe { dev::sync_threads() };
    if x >= g.width || y >= g.height {
        return;
    }
    // Whether this sample's row expands are inside (the same for every plane): tested once,
    // so that the eight expands run without a branch between them and share their
    // indices; the same sums as `row_expand`'s.
    if hoist && expand_is_interior(next.width, g.width, x) {
        let row = ty * EXPAND_W;
        unsafe {
            band_sample(b, x, y, channels, true, |k| {
                // In bounds: the three columns read are in the tile (`row_expand`).
                expand_interior(
                    |col| {
                        CVVDP_EXPAND.read_unchecked(
                            k as usize * EXPAND_PLANE + row + col.wrapping_sub(c0) as usize,
                        )
                    },
                    x,
                )
            })
        }
    } else {
        unsafe {
            band_sample(b, x, y, channels, hoist, |k| {
                row_expand(&CVVDP_EXPAND, b, k, c0, ty, x, y)
            })
        }
    }
}

/// `cvvdp_band` at sample (x, y) inside the band, plane `k` of the next level expanded to it
/// by `expand(k)`: the weighted contrasts of each channel against the expanded background,
/// their difference and their common part into `b.out`.
///
/// # Safety
/// (x, y) inside `b.g` and `b.out`; `expand` reads only what the block's tile holds.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn band_sample(
    b: &Band,
    x: u32,
    y: u32,
    channels: u32,
    once: bool,
    expand: impl Fn(u32) -> f32,
) {
    let (g, csf) = (&b.g, b.csf as *const f32);
    let (e0, e1) = (expand(0), expand(1));
    let (bkg_t, bkg_r) = (e0.max(0.01), e1.max(0.01));
    // Two reciprocals for the eight contrasts, `div_full`'s (an IEEE division is a
    // subroutine on the GPU); the products differ from the quotients by a few ulp.
    let (inv_t, inv_r) = (div_full(1.0, bkg_t), div_full(1.0, bkg_r));
    let log_bkg = log10f(bkg_r);
    // The CSF table's position, once for the four channels ([`sensitivity`]'s values)
    // where `once` (found per channel, it holds fewer registers).
    let at = once.then(|| CsfPosition::new(b.l0, b.l_last, log_bkg));
    unroll!(c in [0 1 2 3] {
        if (c as u32) < channels {
            let row = |i| unsafe { *csf.add(c * GRID + i) };
            let s = match at {
                Some(at) => at.sensitivity(row),
                None => sensitivity(row, b.l0, b.l_last, log_bkg),
            } * b.gain;
            let (et, er) = if c == 0 {
                (e0, e1)
            } else {
                (expand(2 * c as u32), expand(2 * c as u32 + 1))
            };
            let lt = unsafe { g.at(2 * c as u32, x, y) } - et;
            let lr = unsafe { g.at(2 * c as u32 + 1, x, y) } - er;
            let gain = CHANNEL_GAIN[c];
            let tp = (lt * inv_t).min(1000.0) * b.mul * s * gain;
            let rp = (lr * inv_r).min(1000.0) * b.mul * s * gain;
            unsafe {
                b.out.set(OUT_DIFF + c as u32, x, y, tp - rp);
                b.out.set(OUT_COMMON + c as u32, x, y, tp.abs().min(rp.abs()));
            }
        }
    });
}

/// `cvvdp_band`'s shared tile.
#[cfg(target_arch = "nvptx64")]
type ExpandTile = dev::SharedArray<f32, { 2 * BAND_CHANNELS * EXPAND_PLANE }>;

/// Values per channel in `cvvdp_band`'s shared tile: `EXPAND_W` columns × `BLOCK_Y` rows.
#[cfg(target_arch = "nvptx64")]
const EXPAND_PLANE: usize = EXPAND_W * BLOCK_Y as usize;

/// Plane `k` of `next` at column `col` expanded along the column to row `y` of `n_y`
/// ([`expand_at`]'s sum).
///
/// # Safety
/// `col` inside `next`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn column_expand(next: &Planes, k: u32, col: u32, n_y: u32, y: u32) -> f32 {
    if expand_is_interior(next.height, n_y, y) {
        return expand_interior(|row| unsafe { next.at(k, col, row) }, y);
    }
    let mut s = 0f32;
    for (t, kt) in KERNEL.iter().enumerate() {
        let z = match expand_source(next.height, n_y, y + t as u32) {
            Some(row) => unsafe { next.at(k, col, row) },
            None => 0.0,
        };
        s += kt * 2.0 * z;
    }
    s
}

/// Sample (x, y) of plane `k` of `b.next` expanded to `b.g`'s size ([`expand_2d`]), the
/// column expands read from `cvvdp_band`'s `tile` (rows of the block: `ty`; first column
/// `c0`).
///
/// # Safety
/// Called after the tile is filled; (x, y) inside `b.g`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn row_expand(
    tile: &ExpandTile,
    b: &Band,
    k: u32,
    c0: u32,
    ty: usize,
    x: u32,
    y: u32,
) -> f32 {
    if expand_is_interior(b.next.width, b.g.width, x) {
        // The three columns it reads are in the tile: x / 2 − 1 ..= x / 2 + 1 of the next
        // level, from c0 = the block's first x / 2 − 1.
        let row = k as usize * EXPAND_PLANE + ty * EXPAND_W;
        return expand_interior(
            |col| unsafe { tile.read_unchecked(row + col.wrapping_sub(c0) as usize) },
            x,
        );
    }
    let mut s = 0f32;
    for (t, kt) in KERNEL.iter().enumerate() {
        let z = match expand_source(b.next.width, b.g.width, x + t as u32) {
            Some(col) => {
                let i = col.wrapping_sub(c0) as usize;
                if i < EXPAND_W {
                    // In bounds: k < 2 · BAND_CHANNELS, ty < BLOCK_Y, i < EXPAND_W (checked).
                    unsafe { tile.read_unchecked(k as usize * EXPAND_PLANE + ty * EXPAND_W + i) }
                } else {
                    // Not reached (the tile covers every column a row reads); the
                    // direct expand keeps the value right if it were.
                    unsafe { column_expand(&b.next, k, col, b.g.height, y) }
                }
            }
            None => 0.0,
        };
        s += kt * 2.0 * z;
    }
    s
}

/// The mask kernel's tile: the block's samples (`BLOCK_X` × `BLOCK_Y · MASK_ROWS`) and the
/// blur's reach either side, of two channels at a time.
#[cfg(target_arch = "nvptx64")]
const TILE_W: usize = BLOCK_X as usize + 2 * BLUR_RADIUS as usize;
#[cfg(target_arch = "nvptx64")]
const TILE_H: usize = (BLOCK_Y * MASK_ROWS) as usize + 2 * BLUR_RADIUS as usize;
/// Channels in the mask kernel's tile at once.
#[cfg(target_arch = "nvptx64")]
const TILE_CHANNELS: usize = 2;

/// [`reflect`], then clamped into 0..n: the tile of a block at the frame's edge reaches
/// past the reflection's range; those samples feed no output.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn reflect_clamped(i: i32, n: u32) -> u32 {
    let n = n as i32;
    let i = if i < 0 { -i } else { i };
    let i = if i >= n { 2 * (n - 1) - i } else { i };
    i.clamp(0, n - 1) as u32
}

/// The body of the `cvvdp_mask` kernel (declared above). Each thread takes `MASK_ROWS`
/// consecutive samples of a column: the tile's margins and the row pass over them are
/// shared by `MASK_ROWS` times the samples of a one-row block, and the column blurs of a
/// thread's rows read one window of `BLUR_TAPS + MASK_ROWS − 1` values. The blur takes the
/// channels two at a time (`TILE_CHANNELS`), so that a block's shared memory stays under
/// the 48 KiB of a static allocation.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn mask_levels(l: Levels) {
    let (b, (bx, by)) = unsafe { level_block(&l) };
    unsafe { mask(b, bx, by) }
}

/// One block (`bx`, `by`) of a band's `cvvdp_mask`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn mask(b: &Band, bx: u32, by: u32) {
    gpumetrics_device::shared!(static CVVDP_TILE: [f32; TILE_CHANNELS * TILE_H * TILE_W]);
    gpumetrics_device::shared!(static CVVDP_ROWS: [f32; TILE_CHANNELS * TILE_H * BLOCK_X as usize]);
    const BX: usize = BLOCK_X as usize;
    const ROWS: usize = MASK_ROWS as usize;
    // The rows are unrolled by hand below (`unroll!` over 0 ..= 3): an index known only at
    // run time into `m` put it in local memory.
    const _: () = assert!(ROWS == 4);
    const WINDOW: usize = BLUR_TAPS + ROWS - 1;
    const PLANE: usize = TILE_H * TILE_W;
    let (tx, ty) = (dev::thread_idx_x() as usize, dev::thread_idx_y() as usize);
    let x = bx * BLOCK_X + tx as u32;
    let block_y = by * BLOCK_Y * MASK_ROWS;
    let y_first = block_y + ty as u32 * MASK_ROWS;
    let o = &b.out;
    let k = &b.masking;
    let channels = (b.channels as usize).min(BAND_CHANNELS);
    let mut m = [[0f32; BAND_CHANNELS]; ROWS];
    if b.blur != 0 {
        // Every thread of the block takes part (the barriers), inside the frame or not.
        let x0 = (bx * BLOCK_X) as i32 - BLUR_RADIUS;
        let y0 = block_y as i32 - BLUR_RADIUS;
        // Two places a step, their loads issued before any store.
        const STEP: usize = (BLOCK_X * BLOCK_Y) as usize;
        let place = |i: usize| {
            let i = i.min(PLANE - 1);
            (
                reflect_clamped(x0 + (i % TILE_W) as i32, o.width),
                reflect_clamped(y0 + (i / TILE_W) as i32, o.height),
            )
        };
        unroll!(h in [0 1] {
            if 2 * h < channels {
                if h > 0 {
                    // The first pair's column blurs have read the rows.
                    unsafe { dev::sync_threads() };
                }
                let mut i = ty * BX + tx;
                while i < PLANE {
                    let (second, more) = (i + STEP, i + STEP < PLANE);
                    let ((xa, ya), (xb, yb)) = (place(i), place(second));
                    let mut v = [[0f32; TILE_CHANNELS]; 2];
                    unroll!(cc in [0 1] {
                        let c = 2 * h + cc;
                        if c < channels {
                            // In bounds: `place` clamps into the tile, `reflect_clamped` into
                            // the band.
                            v[0][cc] = unsafe { o.at(OUT_COMMON + c as u32, xa, ya) };
                            v[1][cc] = unsafe { o.at(OUT_COMMON + c as u32, xb, yb) };
                        }
                    });
                    unroll!(cc in [0 1] {
                        if 2 * h + cc < channels {
                            unsafe { CVVDP_TILE.write(cc * PLANE + i, v[0][cc]) };
                            if more {
                                unsafe { CVVDP_TILE.write(cc * PLANE + second, v[1][cc]) };
                            }
                        }
                    });
                    i += 2 * STEP;
                }
                unsafe { dev::sync_threads() };
                let mut r = ty;
                while r < TILE_H {
                    unroll!(cc in [0 1] {
                        if 2 * h + cc < channels {
                            let row = cc * PLANE + r * TILE_W + tx;
                            // In bounds: r < TILE_H, tx + t < BLOCK_X + BLUR_TAPS − 1 = TILE_W.
                            let s = blur_sum(&b.blur_taps, |t| unsafe {
                                CVVDP_TILE.read_unchecked(row + t)
                            });
                            unsafe { CVVDP_ROWS.write(cc * TILE_H * BX + r * BX + tx, s) };
                        }
                    });
                    r += BLOCK_Y as usize;
                }
                unsafe { dev::sync_threads() };
                unroll!(cc in [0 1] {
                    let c = 2 * h + cc;
                    if c < channels {
                        // In bounds: ROWS · ty + t < ROWS · BLOCK_Y + BLUR_TAPS − 1 = TILE_H.
                        let first = cc * TILE_H * BX + ROWS * ty * BX + tx;
                        let v: [f32; WINDOW] = core::array::from_fn(|t| unsafe {
                            CVVDP_ROWS.read_unchecked(first + t * BX)
                        });
                        unroll!(j in [0 1 2 3] {
                            m[j][c] = blur_sum(&b.blur_taps, |t| v[j + t]);
                        });
                    }
                });
            }
        });
    } else {
        unroll!(j in [0 1 2 3] {
            let y = y_first + j as u32;
            if x < o.width && y < o.height {
                unroll!(c in [0 1 2 3] {
                    if c < channels {
                        m[j][c] = unsafe { o.at(OUT_COMMON + c as u32, x, y) };
                    }
                });
            }
        });
    }
    let mut acc = [0f64; BAND_CHANNELS];
    unroll!(j in [0 1 2 3] {
        let y = y_first + j as u32;
        let mj = &m[j];
        if x < o.width && y < o.height {
            let mut mq = [0f32; BAND_CHANNELS];
            unroll!(c in [0 1 2 3] {
                if c < channels {
                    mq[c] = masker(k, c, mj[c]);
                }
            });
            let mut dd = [0f32; BAND_CHANNELS];
            unroll!(c in [0 1 2 3] {
                if c < channels {
                    let d = unsafe { o.at(OUT_DIFF + c as u32, x, y) };
                    let d = difference(k, c, d, &mq, channels);
                    dd[c] = d;
                    acc[c] += safe_pow(d, k.beta, k.beta_eps) as f64;
                }
            });
            unsafe { b.heat.store(o, x, y, dd, channels, b.mul) };
        }
    });
    let total = unsafe { block_sums(acc) };
    if dev::thread_idx_x() == 0 && dev::thread_idx_y() == 0 {
        unroll!(c in [0 1 2 3] {
            if c < channels {
                unsafe { dev::atomic_add_f64((b.sums as *mut f64).add(c), total[c]) };
            }
        });
    }
}

/// The body of the `cvvdp_base` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn base(b: Band) {
    gpumetrics_device::shared!(static CVVDP_MEANS: [f32; 2]);
    gpumetrics_device::shared!(static CVVDP_CHUNK: [f32; 2 * SUM_THREADS as usize]);
    const CHUNK: u32 = SUM_THREADS;
    let g = &b.g;
    let n = g.width * g.height;
    let t = dev::thread_idx_x();
    let channels = (b.channels as usize).min(BAND_CHANNELS);
    // The reference's sum in float32, in order, by threads 0 (test) and 1 (reference), over
    // chunks that every thread loads at once into shared memory (one thread's loads one
    // after another took most of the kernel's time).
    let mut sum = 0f32;
    let mut start = 0;
    while start < n {
        let i = start + t;
        if i < n {
            let (x, y) = (i % g.width, i / g.width);
            unsafe {
                CVVDP_CHUNK.write(t as usize, g.at(0, x, y).max(0.01));
                CVVDP_CHUNK.write((CHUNK + t) as usize, g.at(1, x, y).max(0.01));
            }
        }
        unsafe { dev::sync_threads() };
        if t < 2 {
            let end = (n - start).min(CHUNK);
            for j in 0..end {
                // In bounds: t < 2, j < CHUNK.
                sum += unsafe { CVVDP_CHUNK.read_unchecked((t * CHUNK + j) as usize) };
            }
        }
        unsafe { dev::sync_threads() };
        start += CHUNK;
    }
    if t < 2 {
        unsafe { CVVDP_MEANS.write(t as usize, sum / n as f32) };
    }
    unsafe { dev::sync_threads() };
    let (mean_t, mean_r) = unsafe { (CVVDP_MEANS.read(0), CVVDP_MEANS.read(1)) };
    let log_bkg = log10f(mean_r);
    let csf = b.csf as *const f32;
    let mut s = [0f32; BAND_CHANNELS];
    unroll!(c in [0 1 2 3] {
        if c < channels {
            let row = |i: usize| unsafe { *csf.add(c * GRID + i) };
            s[c] = sensitivity(row, b.l0, b.l_last, log_bkg) * b.gain;
        }
    });
    let k = &b.masking;
    let mut acc = [0f64; BAND_CHANNELS];
    let mut i = t;
    while i < n {
        let (x, y) = (i % g.width, i / g.width);
        let mut dd = [0f32; BAND_CHANNELS];
        unroll!(c in [0 1 2 3] {
            if c < channels {
                let contrast = |side: u32, mean: f32| {
                    let v = unsafe { g.at(2 * c as u32 + side, x, y) };
                    (v / mean).min(1000.0)
                };
                let d = (contrast(0, mean_t) - contrast(1, mean_r)).abs() * s[c];
                dd[c] = d;
                acc[c] += safe_pow(d, k.beta, k.beta_eps) as f64;
            }
        });
        unsafe { b.heat.store(g, x, y, dd, channels, b.mul) };
        i += SUM_THREADS;
    }
    let total = unsafe { block_sums(acc) };
    if t == 0 {
        unroll!(c in [0 1 2 3] {
            if c < channels {
                unsafe { *(b.sums as *mut f64).add(c) = total[c] };
            }
        });
    }
}
