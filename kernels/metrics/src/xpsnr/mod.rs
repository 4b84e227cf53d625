//! XPSNR, the extended perceptually weighted PSNR of Helmrich et al. (ICASSP 2020), as
//! FFmpeg 9.0.2's `xpsnr` filter computes it per frame, with the reference video as the
//! filter's first input (where the authors put it; the filter measures activity on that
//! input):
//!
//! * The luma plane is cut into square blocks of side [`Grid::block`], a multiple of 4 that
//!   grows with the square root of the frame area (12 at 333×199, 64 at 1920×1080, 128 at
//!   3840×2160; 0 below about 2,000 pixels, where the frame is too small to weight). Each
//!   chroma plane is cut into blocks at the same places, their sides scaled by the
//!   subsampling ([`Grid::chroma_block_w`]).
//! * Each block gets its weight from the luma of the planes' `reference` side ([`weight`]:
//!   the input FFmpeg takes first, which the engine chooses): its activity is the mean
//!   absolute high-pass of its samples ([`highpass`]; the frame's outermost samples are
//!   left out) plus 2 × the mean absolute temporal difference with that side's previous
//!   frames ([`temporal`]: the first-order difference below 32 frames per second, the
//!   second-order difference of the last three frames from 32 up; frames before the first
//!   of a sequence count as zeros), at least 2^(depth − 6); the weight is its inverse.
//!   Frames larger than 2048×1152 ([`Grid::step`] 2) measure both on 2×2 groups of samples,
//!   with a wider high-pass ([`highpass_quad`]).
//! * Frames of at most 640×480 pixels then smooth the weights ([`smooth`]): a block's weight
//!   becomes at most the largest of its left, right and upper neighbours' (in FFmpeg's
//!   order, in place).
//! * Each plane's distortion is the sum over blocks of weight × SSE, times
//!   [`Grid::scale`], rounded to an integer ([`distortion`]); the engine turns it into
//!   `10·log10(samples · peak² / distortion)` per plane (+inf when 0).
//!
//! What FFmpeg does that is part of the values, reproduced here:
//!
//! * Samples are read as `int16_t` for the activities, so 16-bit samples from 32768 up count
//!   as negative ([`activity_sample`]).
//! * SSEs come from its SSE2 code: per line of a block, each run of 32 samples is summed in
//!   four 32-bit lanes of 8 squares each, of differences taken modulo 2^16; the rest of the
//!   line exactly ([`sse_unit`]). This differs from the exact sum only for differences of
//!   more than 32767 codes, or lanes above 2^32 (16-bit video).
//! * With 2×2 groups, a block of the last column no wider than 14 samples has no spatial
//!   activity (FFmpeg computes it and drops the result).
//! * A block whose activity region is empty keeps weight 1 and leaves its previous frames
//!   as they were; a smoothed frame of one block column gets weight 0 for its first block
//!   (the smoothing's first step) and so for every block (each takes the one above): its
//!   distortions are 0, its XPSNR +inf.
//!
//! Where FFmpeg reads outside the frame (2×2 groups on a side of odd length, so frames
//! above 2048×1152 with an odd width or height: FFmpeg 9.0.2 reads past the row, or past
//! its buffers, and hung in our trials at odd heights), the samples outside repeat the
//! nearest edge sample ([`luma_clamped`]).
//!
//! One code path for the host and the GPU. [`block_part`] is one thread's share of a block's
//! integer sums (the host calls it with one thread, the GPU kernel `xpsnr_blocks` with
//! [`BLOCK`]; integers, so both agree bit for bit), [`weight`] the block's weight from them.
//! [`smooth`], [`weighted_part`] and [`tree_sum`] are the frame's reduction, which the host
//! runs through [`finish`] and the kernel `xpsnr_finish` through the same functions in the
//! same order (each of [`FINISH`] threads adds its blocks in order, then a pairwise tree):
//! both backends give the same distortions. FFmpeg adds the blocks in one pass, which
//! differs from this order by about 1e-16 relative before the rounding to an integer.

mod kernels;

use crate::channel::{Channel, ChannelPair, MAX_CHANNELS, load, rescale};
use gpumetrics_device::math::sqrt;

/// Threads per block of `xpsnr_blocks`.
pub const BLOCK: u32 = 256;
/// Warps per `xpsnr_blocks` block.
pub const WARPS: usize = BLOCK as usize / 32;
/// Sums per XPSNR block: the SSE of each plane, the spatial and the temporal activity.
pub const SUMS: usize = 5;
/// Threads of `xpsnr_finish` (one block): the partial sums of the weighted SSEs.
pub const FINISH_THREADS: usize = 256;
/// [`FINISH_THREADS`] as the launch's `u32`.
pub const FINISH: u32 = FINISH_THREADS as u32;
/// Most blocks whose weights `xpsnr_finish` smooths in shared memory (32 KiB of f64); a
/// frame with more blocks (at most 640×480 pixels in very thin strips) smooths them in
/// global memory, with the same arithmetic.
pub const SMOOTH_SHARED: usize = 4096;
/// Temporal activity counts twice (FFmpeg's `XPSNR_GAMMA`).
pub const GAMMA: u64 = 2;

/// A frame's blocks and constants, fixed per plan. Crosses the kernel boundary by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Grid {
    /// The factor from a plane's weighted SSE to its distortion: √(16 · 2^(2·depth − 9) /
    /// √ratio), ratio the frame's area over 3840×2160's (at least 1e-5).
    pub scale: f64,
    /// Luma size.
    pub width: u32,
    pub height: u32,
    /// Side of the luma blocks; below 4 the frame is not weighted ([`Grid::weighted`]).
    pub block: u32,
    /// Blocks per row and per column (1 and 1 for an unweighted frame).
    pub cols: u32,
    pub rows: u32,
    /// 1, or 2 above 2048×1152 luma samples: activities on 2×2 groups.
    pub step: u32,
    /// Planes measured: 1 (gray) or 3.
    pub planes: u32,
    /// Bits per sample of the reference.
    pub depth: u32,
    /// Size of the chroma blocks, `block · chroma size / luma size` (rounded down).
    pub chroma_block_w: u32,
    pub chroma_block_h: u32,
    /// The temporal activity is the second-order difference (32 frames per second and up).
    pub second_order: u32,
    /// The weights are smoothed (at most 640×480 luma samples).
    pub smooth: u32,
}

impl Grid {
    /// The grid of a `width`×`height` frame whose chroma planes are `chroma` (ignored for
    /// one plane), of `planes` planes of `depth` bits (8 to 16).
    pub fn new(
        width: u32,
        height: u32,
        chroma: (u32, u32),
        planes: u32,
        depth: u32,
        second_order: bool,
    ) -> Grid {
        let area = width as u64 * height as u64;
        let ratio = area as f64 / (3840.0 * 2160.0);
        let block = (4 * ((32.0 * sqrt(ratio) + 0.5) as i32)).max(0) as u32;
        let (cols, rows) = if block >= 4 {
            (width.div_ceil(block), height.div_ceil(block))
        } else {
            (1, 1)
        };
        let scaled = |chroma: u32, luma: u32| (block as u64 * chroma as u64 / luma as u64) as u32;
        Grid {
            scale: sqrt(16.0 * (1u64 << (2 * depth - 9)) as f64 / sqrt(ratio.max(0.00001))),
            width,
            height,
            block,
            cols,
            rows,
            step: if area > 2048 * 1152 { 2 } else { 1 },
            planes,
            depth,
            chroma_block_w: scaled(chroma.0, width),
            chroma_block_h: scaled(chroma.1, height),
            second_order: second_order as u32,
            smooth: (area <= 640 * 480) as u32,
        }
    }

    /// Whether blocks are weighted; if not, each plane's distortion is its plain SSE.
    #[inline(always)]
    pub fn weighted(&self) -> bool {
        self.block >= 4
    }

    /// Blocks of the frame (1 for an unweighted frame), numbered row by row.
    #[inline(always)]
    pub fn blocks(&self) -> u32 {
        self.cols * self.rows
    }

    /// The smallest activity: 2^(depth − 6), 4 at 8 bits (FFmpeg's lower limit, which it
    /// says accounts for the high-pass's gain).
    #[inline(always)]
    pub fn floor(&self) -> f64 {
        (1u32 << (self.depth - 6)) as f64
    }

    /// Luma block (`i`, `j`) (column, row).
    #[inline(always)]
    pub fn span(&self, i: u32, j: u32) -> Span {
        let (x, y) = (i * self.block, j * self.block);
        let (w, h) = (
            self.block.min(self.width - x),
            self.block.min(self.height - y),
        );
        let s = self.step;
        // The activity leaves out `step` samples on each side of the frame.
        Span {
            x,
            y,
            w,
            h,
            ax: if x > 0 { 0 } else { s },
            ay: if y > 0 { 0 } else { s },
            ax_end: if x + w < self.width {
                w
            } else {
                w.saturating_sub(s)
            },
            ay_end: if y + h < self.height {
                h
            } else {
                h.saturating_sub(s)
            },
        }
    }

    /// The chroma block of `pair` (a chroma plane) at luma block (`i`, `j`): (x, y, w, h),
    /// empty past the plane.
    #[inline(always)]
    pub fn chroma_span(&self, pair: &ChannelPair, i: u32, j: u32) -> (u32, u32, u32, u32) {
        let (x, y) = (i * self.chroma_block_w, j * self.chroma_block_h);
        if x >= pair.width || y >= pair.height {
            return (x, y, 0, 0);
        }
        (
            x,
            y,
            self.chroma_block_w.min(pair.width - x),
            self.chroma_block_h.min(pair.height - y),
        )
    }
}

/// One luma block and the region its spatial activity covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// Position and size in the frame.
    pub x: u32,
    pub y: u32,
    pub w: u32,
    pub h: u32,
    /// The activity region, relative to the block: `ax..ax_end` × `ay..ay_end`.
    pub ax: u32,
    pub ay: u32,
    pub ax_end: u32,
    pub ay_end: u32,
}

impl Span {
    /// Whether the block has an activity region; a block without one (a last column or row
    /// of `step` samples or fewer) has weight 1 and no activity is measured.
    #[inline(always)]
    pub fn active(&self) -> bool {
        self.ax_end > self.ax && self.ay_end > self.ay
    }

    /// Samples of the activity region.
    #[inline(always)]
    pub fn active_samples(&self) -> u32 {
        (self.ax_end - self.ax) * (self.ay_end - self.ay)
    }
}

/// The planes of one pair: channel `c` of the reference and of the distorted frame, with
/// the plane's size. Crosses the kernel boundary by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XpsnrPlanes {
    pub pairs: [ChannelPair; MAX_CHANNELS],
}

impl XpsnrPlanes {
    /// Plane `c`, by value (constant indices: the GPU keeps the struct's fields in
    /// registers instead of copying it to local memory).
    #[inline(always)]
    pub fn pair(&self, c: u32) -> ChannelPair {
        match c {
            0 => self.pairs[0],
            1 => self.pairs[1],
            _ => self.pairs[2],
        }
    }
}

/// The previous reference frames: two luma buffers of `width · height` samples (row pitch
/// `width`), one holding the previous frame and the other the frame before it, which the
/// frame being measured overwrites. Crosses the kernel boundary by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct History {
    /// Address of the two buffers, one after the other.
    pub ptr: u64,
    /// The buffer this frame is written to (0 or 1): the frame two back until then; the
    /// other holds the previous frame.
    pub write: u32,
    /// Previous frames of the sequence in the buffers: 0, 1, or 2 (or more); missing
    /// frames count as zeros.
    pub frames: u32,
}

/// One block's integer sums (or one thread's share of them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sums {
    /// SSE of the block in each plane (as FFmpeg's SSE2 code sums it, [`sse_unit`]).
    pub sse: [u64; 3],
    /// Σ |high-pass| over the activity region (per sample, or per 2×2 group).
    pub spatial: u64,
    /// Σ |temporal difference| over the block (per sample, or per 2×2 group), before
    /// [`GAMMA`].
    pub temporal: u64,
}

impl Sums {
    /// The five sums in the order of [`Sums::from_array`].
    #[inline(always)]
    pub fn to_array(&self) -> [u64; SUMS] {
        [
            self.sse[0],
            self.sse[1],
            self.sse[2],
            self.spatial,
            self.temporal,
        ]
    }

    /// The sums of [`Sums::to_array`]'s order.
    #[inline(always)]
    pub fn from_array(a: [u64; SUMS]) -> Sums {
        Sums {
            sse: [a[0], a[1], a[2]],
            spatial: a[3],
            temporal: a[4],
        }
    }

    /// Adds `o`, sum by sum.
    #[inline(always)]
    pub fn add(&mut self, o: &Sums) {
        self.sse[0] += o.sse[0];
        self.sse[1] += o.sse[1];
        self.sse[2] += o.sse[2];
        self.spatial += o.spatial;
        self.temporal += o.temporal;
    }
}

/// Start of row `y` of `c`.
#[inline(always)]
fn row(c: &Channel, y: u32) -> *const u8 {
    (c.ptr + y as u64 * c.pitch as u64) as *const u8
}

/// The (reference, distorted) samples at (`x`, `y`) of `pair`, the distorted one on the
/// reference's scale.
///
/// # Safety
/// The sample must lie inside both channels' readable memory.
#[inline(always)]
unsafe fn sample_pair(pair: &ChannelPair, x: u32, y: u32) -> (u32, u32) {
    let a = unsafe { load(row(&pair.reference, y), x, &pair.reference) };
    let b = unsafe { load(row(&pair.distorted, y), x, &pair.distorted) };
    (a, rescale(b, pair.distorted.max, pair.reference.max))
}

/// SSE units of a line of `n` samples: 4 lanes per run of 32 samples, then one per sample.
#[inline(always)]
pub fn line_units(n: u32) -> u32 {
    n / 32 * 4 + n % 32
}

/// Offsets within a run of 32 samples of lane 0's 8 samples (lane `k` adds `2k`): the
/// 16-bit words its `pmaddwd` pairs and `paddd` sums gather.
const LANE: [u32; 8] = [0, 1, 8, 9, 16, 17, 24, 25];

/// Unit `u` of the SSE of line `y` of `pair` from column `x0`, `n` samples long, as
/// FFmpeg's SSE2 `sse_line_16bit` adds it: for the runs of 32 samples, 4 units each, lane
/// `u % 4` of run `u / 4`: 8 squares of differences taken modulo 2^16 (`psubw`, as signed
/// 16-bit values), added modulo 2^32; past the runs, one sample's exact square.
///
/// # Safety
/// The line must lie inside both channels' readable memory; `u < line_units(n)`.
#[inline(always)]
pub unsafe fn sse_unit(pair: &ChannelPair, y: u32, x0: u32, n: u32, u: u32) -> u64 {
    let runs = n / 32;
    if u < 4 * runs {
        let base = x0 + u / 4 * 32 + u % 4 * 2;
        let mut lane = 0u32;
        // (Written out: an array iterator would live in the GPU's local memory.)
        unroll!(k in [0 1 2 3 4 5 6 7] {
            let (a, b) = unsafe { sample_pair(pair, base + LANE[k], y) };
            let d = (a as u16).wrapping_sub(b as u16) as i16 as i32;
            lane = lane.wrapping_add((d * d) as u32);
        });
        lane as u64
    } else {
        let x = x0 + runs * 32 + (u - 4 * runs);
        let (a, b) = unsafe { sample_pair(pair, x, y) };
        let d = a.abs_diff(b) as u64;
        d * d
    }
}

/// Thread `t` of `n`'s share of the SSE of the `w`×`h` rectangle of `pair` at (`x0`, `y0`):
/// units `t, t + n, ..` of its lines in turn.
///
/// # Safety
/// The rectangle must lie inside both channels' readable memory.
#[inline(always)]
pub unsafe fn rect_sse(
    pair: &ChannelPair,
    x0: u32,
    y0: u32,
    w: u32,
    h: u32,
    t: u32,
    n: u32,
) -> u64 {
    let per = line_units(w);
    let total = per * h;
    let mut s = 0u64;
    let mut k = t;
    while k < total {
        s += unsafe { sse_unit(pair, y0 + k / per, x0, w, k % per) };
        k += n;
    }
    s
}

/// A luma sample as FFmpeg's activities read it: as `int16_t` (16-bit samples from 32768 up
/// are negative).
#[inline(always)]
pub fn activity_sample(v: u32) -> i32 {
    v as u16 as i16 as i32
}

/// The reference luma sample at (`x`, `y`) for the activities.
///
/// # Safety
/// The sample must lie inside the channel's readable memory.
#[inline(always)]
unsafe fn luma(c: &Channel, x: u32, y: u32) -> i32 {
    activity_sample(unsafe { load(row(c, y), x, c) })
}

/// The reference luma sample at (`x`, `y`), coordinates outside the frame moved to its
/// nearest edge.
///
/// # Safety
/// `c` must describe a readable `g.width`×`g.height` channel.
#[inline(always)]
pub unsafe fn luma_clamped(c: &Channel, g: &Grid, x: i32, y: i32) -> i32 {
    let x = x.clamp(0, g.width as i32 - 1) as u32;
    let y = y.clamp(0, g.height as i32 - 1) as u32;
    unsafe { luma(c, x, y) }
}

/// |high-pass| at (`x`, `y`) (per-sample activity, [`Grid::step`] 1): 12 × the sample, −2 ×
/// its four direct neighbours, −1 × its four diagonal ones.
///
/// # Safety
/// The sample and its 8 neighbours must lie inside the channel.
#[inline(always)]
pub unsafe fn highpass(c: &Channel, x: u32, y: u32) -> u64 {
    let p = |dx: u32, dy: u32| unsafe { luma(c, x + dx - 1, y + dy - 1) };
    let f = 12 * p(1, 1)
        - 2 * (p(0, 1) + p(2, 1) + p(1, 0) + p(1, 2))
        - (p(0, 0) + p(2, 0) + p(0, 2) + p(2, 2));
    f.unsigned_abs() as u64
}

/// |high-pass| of the 2×2 group at (`x`, `y`) (its top left sample; [`Grid::step`] 2), on
/// the 6×6 neighbourhood without its corners: 12 × the group, −3 × the 2 samples above
/// and below and left and right of it, −2 × the 4 diagonal ones, −1 × the next 16 around
/// them. Samples outside the frame as [`luma_clamped`].
///
/// # Safety
/// `c` must describe a readable `g.width`×`g.height` channel.
#[inline(always)]
pub unsafe fn highpass_quad(c: &Channel, g: &Grid, x: u32, y: u32) -> u64 {
    let (x, y) = (x as i32, y as i32);
    let p = |dx: i32, dy: i32| unsafe { luma_clamped(c, g, x + dx, y + dy) };
    let centre = p(0, 0) + p(1, 0) + p(0, 1) + p(1, 1);
    let vertical = p(0, -1) + p(1, -1) + p(0, 2) + p(1, 2);
    let horizontal = p(-1, 0) + p(2, 0) + p(-1, 1) + p(2, 1);
    let diagonal = p(-1, -1) + p(2, -1) + p(-1, 2) + p(2, 2);
    let outer = p(-1, -2)
        + p(0, -2)
        + p(1, -2)
        + p(2, -2)
        + p(-1, 3)
        + p(0, 3)
        + p(1, 3)
        + p(2, 3)
        + p(-2, -1)
        + p(-2, 0)
        + p(-2, 1)
        + p(-2, 2)
        + p(3, -1)
        + p(3, 0)
        + p(3, 1)
        + p(3, 2);
    let f = 12 * centre - 3 * (vertical + horizontal) - 2 * diagonal - outer;
    f.unsigned_abs() as u64
}

/// The previous frames' samples at index `i` of the history: (the previous frame's, the
/// one before), 0 where the sequence has no such frame.
///
/// # Safety
/// `h` must hold two buffers of `plane` samples, `i < plane`, that no other thread writes at
/// `i`.
#[inline(always)]
unsafe fn history_read(h: &History, plane: usize, i: usize) -> (i32, i32) {
    let base = h.ptr as *const u16;
    let (write, read) = if h.write == 0 { (0, plane) } else { (plane, 0) };
    let one = if h.frames >= 1 {
        activity_sample(unsafe { *base.add(read + i) } as u32)
    } else {
        0
    };
    let two = if h.frames >= 2 {
        activity_sample(unsafe { *base.add(write + i) } as u32)
    } else {
        0
    };
    (one, two)
}

/// Writes this frame's sample at index `i` of the history, in place of the frame two back.
///
/// # Safety
/// As [`history_read`], and no other thread accesses index `i`.
#[inline(always)]
unsafe fn history_write(h: &History, plane: usize, i: usize, cur: i32) {
    let base = h.ptr as *mut u16;
    let write = if h.write == 0 { 0 } else { plane };
    unsafe { *base.add(write + i) = cur as u16 };
}

/// |temporal difference| of `cur` (one sample, or a 2×2 group's sum) with the previous
/// frames' `one` and `two` (the same sums): the first-order difference, or the second-order
/// one.
#[inline(always)]
pub fn temporal(g: &Grid, cur: i32, one: i32, two: i32) -> u64 {
    let t = if g.second_order != 0 {
        cur - 2 * one + two
    } else {
        cur - one
    };
    t.unsigned_abs() as u64
}

/// Thread `t` of `n`'s share of block `s`'s spatial activity.
///
/// # Safety
/// `c` must describe a readable `g.width`×`g.height` channel.
#[inline(always)]
unsafe fn spatial_part(c: &Channel, g: &Grid, s: &Span, t: u32, n: u32) -> u64 {
    let mut sum = 0u64;
    if g.step == 1 {
        let w = s.ax_end - s.ax;
        let mut k = t;
        while k < s.active_samples() {
            let (x, y) = (s.x + s.ax + k % w, s.y + s.ay + k / w);
            sum += unsafe { highpass(c, x, y) };
            k += n;
        }
    } else if s.ax_end > 12 {
        // (FFmpeg drops the 2×2 high-pass of a block no wider than 12 + 2 samples.)
        let w = (s.ax_end - s.ax).div_ceil(2);
        let count = w * (s.ay_end - s.ay).div_ceil(2);
        let mut k = t;
        while k < count {
            let (x, y) = (s.x + s.ax + k % w * 2, s.y + s.ay + k / w * 2);
            sum += unsafe { highpass_quad(c, g, x, y) };
            k += n;
        }
    }
    sum
}

/// Thread `t` of `n`'s share of block `s`'s temporal activity, the block's reference luma
/// written to the history.
///
/// # Safety
/// `c` must describe a readable `g.width`×`g.height` channel, `h` two buffers of
/// `g.width · g.height` samples whose block `s` no other thread accesses.
#[inline(always)]
unsafe fn temporal_part(c: &Channel, g: &Grid, h: &History, s: &Span, t: u32, n: u32) -> u64 {
    let plane = g.width as usize * g.height as usize;
    let at = |x: u32, y: u32| y as usize * g.width as usize + x as usize;
    let mut sum = 0u64;
    if g.step == 1 {
        let mut k = t;
        while k < s.w * s.h {
            let (x, y) = (s.x + k % s.w, s.y + k / s.w);
            let cur = unsafe { luma(c, x, y) };
            let i = at(x, y);
            let (one, two) = unsafe { history_read(h, plane, i) };
            unsafe { history_write(h, plane, i, cur) };
            sum += temporal(g, cur, one, two);
            k += n;
        }
    } else {
        let w = s.w.div_ceil(2);
        let mut k = t;
        while k < w * s.h.div_ceil(2) {
            let (x, y) = (s.x + k % w * 2, s.y + k / w * 2);
            // The group's samples, those outside the frame moved to its edge (which is in
            // this group): all are read before this frame's are written.
            let (x1, y1) = ((x + 1).min(g.width - 1), (y + 1).min(g.height - 1));
            let (i00, i10, i01, i11) = (at(x, y), at(x1, y), at(x, y1), at(x1, y1));
            let cur = unsafe {
                [
                    luma(c, x, y),
                    luma(c, x1, y),
                    luma(c, x, y1),
                    luma(c, x1, y1),
                ]
            };
            let (a, b, d, e) = unsafe {
                (
                    history_read(h, plane, i00),
                    history_read(h, plane, i10),
                    history_read(h, plane, i01),
                    history_read(h, plane, i11),
                )
            };
            unsafe {
                history_write(h, plane, i00, cur[0]);
                history_write(h, plane, i10, cur[1]);
                history_write(h, plane, i01, cur[2]);
                history_write(h, plane, i11, cur[3]);
            }
            let now = cur[0] + cur[1] + cur[2] + cur[3];
            sum += temporal(g, now, a.0 + b.0 + d.0 + e.0, a.1 + b.1 + d.1 + e.1);
            k += n;
        }
    }
    sum
}

/// Thread `t` of `n`'s share of the sums of luma block (`i`, `j`) and of the chroma blocks at
/// its place; for an unweighted frame (`!g.weighted()`, one block) the SSE of every plane
/// whole, and no activity. The history is read and written only where the block has an
/// activity region ([`Span::active`]).
///
/// # Safety
/// `p` must describe readable planes of the grid's sizes (chroma: the sizes its pairs
/// state), `h` (for a weighted frame) two buffers of `g.width · g.height` samples whose
/// block (`i`, `j`) no other thread accesses; `i < g.cols`, `j < g.rows`.
#[inline(always)]
pub unsafe fn block_part(
    g: &Grid,
    p: &XpsnrPlanes,
    h: &History,
    i: u32,
    j: u32,
    t: u32,
    n: u32,
) -> Sums {
    let mut s = Sums::default();
    let (y, u, v) = (&p.pair(0), &p.pair(1), &p.pair(2));
    if !g.weighted() {
        s.sse[0] = unsafe { rect_sse(y, 0, 0, y.width, y.height, t, n) };
        if g.planes > 1 {
            s.sse[1] = unsafe { rect_sse(u, 0, 0, u.width, u.height, t, n) };
            s.sse[2] = unsafe { rect_sse(v, 0, 0, v.width, v.height, t, n) };
        }
        return s;
    }
    let span = g.span(i, j);
    s.sse[0] = unsafe { rect_sse(y, span.x, span.y, span.w, span.h, t, n) };
    if g.planes > 1 {
        let (x0, y0, w, hh) = g.chroma_span(u, i, j);
        s.sse[1] = unsafe { rect_sse(u, x0, y0, w, hh, t, n) };
        let (x0, y0, w, hh) = g.chroma_span(v, i, j);
        s.sse[2] = unsafe { rect_sse(v, x0, y0, w, hh, t, n) };
    }
    if span.active() {
        s.spatial = unsafe { spatial_part(&y.reference, g, &span, t, n) };
        s.temporal = unsafe { temporal_part(&y.reference, g, h, &span, t, n) };
    }
    s
}

/// The weight of a block from its sums: 1 / max(mean spatial activity + [`GAMMA`] × mean
/// temporal activity, [`Grid::floor`]), in FFmpeg's f64 operations (1 / √(a²)); 1 for a
/// block without an activity region.
#[inline(always)]
pub fn weight(g: &Grid, s: &Span, spatial: u64, temporal: u64) -> f64 {
    if !s.active() {
        return 1.0;
    }
    let mut a = spatial as f64 / ((s.ax_end - s.ax) as f64 * (s.ay_end - s.ay) as f64);
    a += (GAMMA * temporal) as f64 / (s.w as f64 * s.h as f64);
    if a < g.floor() {
        a = g.floor();
    }
    1.0 / sqrt(a * a)
}

/// The larger of `a` and `b`, as C's `a > b ? a : b`.
#[inline(always)]
fn larger(a: f64, b: f64) -> f64 {
    if a > b { a } else { b }
}

/// FFmpeg's smoothing of the weights of `n` blocks in rows of `cols`, in place and in its
/// order: each block but the last becomes at most the largest of its left (already
/// smoothed) and right (not yet) neighbours and the one above (smoothed), where they exist;
/// a last-column block takes its left neighbour even across rows, and with one column the
/// first block takes 0. The last block becomes at most the larger of its left and upper
/// neighbours when the frame has more than one row of blocks. The only serial step of the
/// frame (a few hundred blocks: frames of at most 640×480).
///
/// # Safety
/// `w` must hold `n` values that no other thread accesses during the call; `cols >= 1`.
#[inline(always)]
pub unsafe fn smooth(w: *mut f64, n: u32, cols: u32) {
    if n < 2 {
        return;
    }
    let (n, cols) = (n as usize, cols as usize);
    let mut left = 0.0;
    let mut col = 0;
    for j in 0..n - 1 {
        let raw = unsafe { *w.add(j) };
        let mut most = if col + 1 == cols {
            left
        } else {
            let right = unsafe { *w.add(j + 1) };
            if col >= 1 { larger(left, right) } else { right }
        };
        if j >= cols {
            most = larger(most, unsafe { *w.add(j - cols) });
        }
        let s = if raw > most { most } else { raw };
        unsafe { *w.add(j) = s };
        left = s;
        col = if col + 1 == cols { 0 } else { col + 1 };
    }
    let last = n - 1;
    if last > cols {
        let most = larger(left, unsafe { *w.add(last - cols) });
        let raw = unsafe { *w.add(last) };
        if raw > most {
            unsafe { *w.add(last) = most };
        }
    }
}

/// Thread `t` of `threads`' partial sum of `sse[i] · w[i]` over blocks `t, t + threads, ..`
/// of `n`, in that order.
///
/// # Safety
/// `sse` and `w` must hold `n` values.
#[inline(always)]
pub unsafe fn weighted_part(sse: *const u64, w: *const f64, n: u32, t: u32, threads: u32) -> f64 {
    let mut sum = 0.0;
    let mut i = t;
    while i < n {
        sum += unsafe { *sse.add(i as usize) } as f64 * unsafe { *w.add(i as usize) };
        i += threads;
    }
    sum
}

/// The sum of the [`FINISH`] partials as `xpsnr_finish` adds them: pairwise, halving, each
/// `p[t] += p[t + half]` for `half` = 128, 64, .., 1.
pub fn tree_sum(p: &mut [f64; FINISH_THREADS]) -> f64 {
    let mut half = FINISH_THREADS / 2;
    while half > 0 {
        for t in 0..half {
            p[t] += p[t + half];
        }
        half /= 2;
    }
    p[0]
}

/// A plane's distortion from its weighted SSE: `weighted · scale` rounded to the nearest
/// integer (half up), 0 when nothing is weighted.
#[inline(always)]
pub fn distortion(weighted: f64, scale: f64) -> u64 {
    if weighted <= 0.0 {
        0
    } else {
        (weighted * scale + 0.5) as u64
    }
}

/// The distortion of each plane (the first `g.planes`) from the blocks' sums, on the host,
/// as `xpsnr_finish` computes it: `sse` holds each plane's SSE per block (plane after plane,
/// [`Grid::blocks`] values each), `weights` the blocks' weights ([`weight`]), smoothed here in
/// place when the grid says so. An unweighted frame's distortions are its SSEs.
pub fn finish(g: &Grid, sse: &[u64], weights: &mut [f64]) -> [u64; 3] {
    let n = g.blocks() as usize;
    let mut out = [0u64; 3];
    if !g.weighted() {
        out[..g.planes as usize].copy_from_slice(&sse[..g.planes as usize]);
        return out;
    }
    assert!(sse.len() >= n * g.planes as usize && weights.len() >= n);
    if g.smooth != 0 {
        // SAFETY: `weights` holds n values, borrowed mutably.
        unsafe { smooth(weights.as_mut_ptr(), n as u32, g.cols) };
    }
    for (c, d) in out.iter_mut().enumerate().take(g.planes as usize) {
        let mut p = [0.0; FINISH_THREADS];
        for (t, p) in p.iter_mut().enumerate() {
            // SAFETY: both hold n values from the plane's start.
            *p = unsafe {
                weighted_part(
                    sse[c * n..].as_ptr(),
                    weights.as_ptr(),
                    n as u32,
                    t as u32,
                    FINISH,
                )
            };
        }
        *d = distortion(tree_sum(&mut p), g.scale);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn chan(data: &[u8], pitch: u32, bytes: u32, max: u32) -> Channel {
        Channel {
            ptr: data.as_ptr() as u64,
            pitch,
            step: bytes,
            sample_bytes: bytes,
            shift: 0,
            max,
            _pad: 0,
        }
    }

    fn le16(v: &[u16]) -> Vec<u8> {
        v.iter().flat_map(|s| s.to_le_bytes()).collect()
    }

    #[test]
    fn block_sizes_follow_the_frame_area() {
        for (w, h, block, step, smooth) in [
            (333, 199, 12, 1, 1),
            (320, 240, 12, 1, 1),
            (640, 480, 24, 1, 1),
            (1920, 1080, 64, 1, 0),
            (2560, 1440, 84, 2, 0),
            (3840, 2160, 128, 2, 0),
            (45, 45, 4, 1, 1),
            (40, 40, 0, 1, 1),
        ] {
            let g = Grid::new(w, h, (w.div_ceil(2), h.div_ceil(2)), 3, 8, false);
            assert_eq!(
                (g.block, g.step, g.smooth),
                (block, step, smooth),
                "{w}x{h}"
            );
            if block >= 4 {
                assert_eq!((g.cols, g.rows), (w.div_ceil(block), h.div_ceil(block)));
                assert_eq!(g.chroma_block_w, block / 2, "{w}x{h}");
            } else {
                assert_eq!(g.blocks(), 1);
            }
        }
        // 1080p 8-bit: √(16 · 128 / √0.25) = 64.
        let g = Grid::new(1920, 1080, (960, 540), 3, 8, false);
        assert_eq!(g.scale, 64.0);
        assert_eq!(Grid::new(8, 8, (8, 8), 1, 10, false).floor(), 16.0);
    }

    #[test]
    fn sse_units_add_like_ffmpeg_sse2() {
        // One line of 35 16-bit samples: a run of 32 (4 lanes) and 3 exact ones.
        let mut a = [0u16; 35];
        let mut b = [0u16; 35];
        // Lane 0 gathers samples 0, 1, 8, 9, 16, 17, 24, 25: differences of 40000 are
        // -25536 modulo 2^16.
        a[0] = 40000;
        // Eight squares of 30000 overflow the 32-bit lane: 7.2e9 mod 2^32.
        for off in LANE {
            a[off as usize + 2] = 30000; // lane 1
        }
        a[33] = 65535; // exact past the run
        b[34] = 3;
        let (da, db) = (le16(&a), le16(&b));
        let pair = ChannelPair {
            reference: chan(&da, 70, 2, 65535),
            distorted: chan(&db, 70, 2, 65535),
            width: 35,
            height: 1,
        };
        assert_eq!(line_units(35), 4 + 3);
        let units: Vec<u64> = (0..7)
            .map(|u| unsafe { sse_unit(&pair, 0, 0, 35, u) })
            .collect();
        assert_eq!(units[0], 25536u64 * 25536);
        assert_eq!(units[1], (8 * 30000u64 * 30000) % (1 << 32));
        assert_eq!(units[2..4], [0, 0]);
        assert_eq!(units[4..], [0, 65535 * 65535, 9]);
        // Any split among threads gives the same total.
        let whole = unsafe { rect_sse(&pair, 0, 0, 35, 1, 0, 1) };
        let split: u64 = (0..5)
            .map(|t| unsafe { rect_sse(&pair, 0, 0, 35, 1, t, 5) })
            .sum();
        assert_eq!((whole, split), (units.iter().sum(), whole));
    }

    #[test]
    fn small_differences_add_exactly() {
        let (w, h) = (67u32, 3u32);
        let a: Vec<u8> = (0..w * h).map(|i| (i * 37 % 251) as u8).collect();
        let b: Vec<u8> = (0..w * h).map(|i| (i * 91 % 247) as u8).collect();
        let pair = ChannelPair {
            reference: chan(&a, w, 1, 255),
            distorted: chan(&b, w, 1, 255),
            width: w,
            height: h,
        };
        let exact: u64 = a
            .iter()
            .zip(&b)
            .map(|(&x, &y)| (x as i64 - y as i64).pow(2) as u64)
            .sum();
        assert_eq!(unsafe { rect_sse(&pair, 0, 0, w, h, 0, 1) }, exact);
    }

    #[test]
    fn high_passes_ignore_flat_areas_and_see_edges() {
        let w = 8u32;
        let flat = [77u8; 64];
        let c = chan(&flat, w, 1, 255);
        let g = Grid::new(8, 8, (8, 8), 1, 8, false);
        assert_eq!(unsafe { highpass(&c, 3, 3) }, 0);
        assert_eq!(unsafe { highpass_quad(&c, &g, 0, 0) }, 0);
        let mut dot = [0u8; 64];
        dot[3 * 8 + 3] = 10;
        let c = chan(&dot, w, 1, 255);
        assert_eq!(unsafe { highpass(&c, 3, 3) }, 120);
        assert_eq!(unsafe { highpass(&c, 4, 3) }, 20);
        assert_eq!(unsafe { highpass(&c, 4, 4) }, 10);
        // The dot in the group: 12 × 10; beside it: 3 × 10; at the clamped corner 0.
        assert_eq!(unsafe { highpass_quad(&c, &g, 2, 2) }, 120);
        assert_eq!(unsafe { highpass_quad(&c, &g, 4, 2) }, 30);
        assert_eq!(unsafe { highpass_quad(&c, &g, 6, 6) }, 0);
        // 16-bit samples from 32768 up read as negative numbers.
        assert_eq!(activity_sample(32768), -32768);
        assert_eq!(activity_sample(1023), 1023);
    }

    #[test]
    fn weights_have_a_floor_and_inactive_blocks_weigh_one() {
        let g = Grid::new(64, 64, (32, 32), 3, 8, false);
        let s = g.span(1, 1);
        assert!(s.active());
        assert_eq!(weight(&g, &s, 0, 0), 0.25);
        let n = (s.w * s.h) as u64;
        // Mean spatial 8 plus 2 × mean temporal 2 = 12.
        assert_eq!(weight(&g, &s, 8 * n, 2 * n), 1.0 / 12.0);
        // 333 = 27 · 12 + 9: the last column is 9 wide, active from 0 to 8.
        let g = Grid::new(333, 199, (167, 100), 3, 8, false);
        let s = g.span(27, 0);
        assert_eq!((s.w, s.ax, s.ax_end, s.ay, s.ay_end), (9, 0, 8, 1, 12));
        // A last column of one sample has no activity region.
        let g = Grid::new(325, 199, (163, 100), 3, 8, false);
        let s = g.span(27, 3);
        assert_eq!(s.w, 1);
        assert!(!s.active());
        assert_eq!(weight(&g, &s, 5, 5), 1.0);
    }

    #[test]
    fn smoothing_follows_ffmpeg_order() {
        // 2 rows of 3: raw weights.
        let raw = [0.5, 0.1, 0.3, 0.2, 0.4, 0.6];
        let mut w = raw;
        unsafe { smooth(w.as_mut_ptr(), 6, 3) };
        // Block 0: min(0.5, right 0.1) = 0.1. Block 1: min(0.1, max(0.1, 0.3)) = 0.1.
        // Block 2 (last column): min(0.3, left 0.1) = 0.1. Block 3: min(0.2, max(right
        // 0.4, above 0.1)) = 0.2. Block 4: min(0.4, max(0.2, 0.6, above 0.1)) = 0.4. Last
        // block: min(0.6, max(left 0.4, above 0.1)) = 0.4.
        assert_eq!(w, [0.1, 0.1, 0.1, 0.2, 0.4, 0.4]);
        // One column: the first block takes 0, then each takes the one above.
        let mut w = [0.5, 0.3, 0.7];
        unsafe { smooth(w.as_mut_ptr(), 3, 1) };
        assert_eq!(w, [0.0, 0.0, 0.0]);
        // One row: the last block is left as it is.
        let mut w = [0.5, 0.3, 0.7];
        unsafe { smooth(w.as_mut_ptr(), 3, 3) };
        assert_eq!(w, [0.3, 0.3, 0.7]);
    }

    #[test]
    fn finish_weights_rounds_and_leaves_small_frames_unweighted() {
        let g = Grid::new(1920, 1080, (960, 540), 3, 8, false);
        let n = g.blocks() as usize;
        let sse: Vec<u64> = (0..3 * n as u64).map(|i| i % 7).collect();
        let mut w = std::vec![0.25; n];
        let d = finish(&g, &sse, &mut w);
        for (c, &got) in d.iter().enumerate() {
            let sum: u64 = sse[c * n..(c + 1) * n].iter().sum();
            // Quarters of integers add exactly; × 64, + 0.5, truncated.
            assert_eq!(got, (sum as f64 * 0.25 * 64.0 + 0.5) as u64);
        }
        let tiny = Grid::new(40, 40, (20, 20), 3, 8, false);
        assert_eq!(finish(&tiny, &[5, 6, 7], &mut [0.0]), [5, 6, 7]);
        assert_eq!(distortion(0.0, 64.0), 0);
        assert_eq!(distortion(0.2, 2.0), 0);
        assert_eq!(distortion(0.3, 2.0), 1);
    }

    /// A 10-bit frame pair and its history, for the thread-split test.
    struct Frames {
        reference: Vec<u8>,
        distorted: Vec<u8>,
        chroma: Vec<u8>,
    }

    fn frames(w: u32, h: u32, seed: u32) -> Frames {
        let mut s = seed | 1;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s % 1024) as u16
        };
        let reference: Vec<u16> = (0..w * h).map(|_| next()).collect();
        let distorted: Vec<u16> = (0..w * h).map(|_| next()).collect();
        let chroma: Vec<u16> = (0..w.div_ceil(2) * h.div_ceil(2)).map(|_| next()).collect();
        Frames {
            reference: le16(&reference),
            distorted: le16(&distorted),
            chroma: le16(&chroma),
        }
    }

    fn planes(f: &Frames, w: u32, h: u32) -> XpsnrPlanes {
        let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
        let luma = ChannelPair {
            reference: chan(&f.reference, 2 * w, 2, 1023),
            distorted: chan(&f.distorted, 2 * w, 2, 1023),
            width: w,
            height: h,
        };
        let chroma = ChannelPair {
            reference: chan(&f.chroma, 2 * cw, 2, 1023),
            distorted: chan(&f.reference, 2 * cw, 2, 1023),
            width: cw,
            height: ch,
        };
        XpsnrPlanes {
            pairs: [luma, chroma, chroma],
        }
    }

    #[test]
    fn thread_shares_add_up_to_the_block_and_the_history_rolls() {
        // One small frame (step 1, second order) and one above 2048×1152 with odd sides
        // (step 2, clamped groups; its last column is 11 wide: no spatial activity there).
        for (w, h, second) in [(99u32, 61u32, true), (2051, 1153, false)] {
            let g = Grid::new(w, h, (w.div_ceil(2), h.div_ceil(2)), 3, 10, second);
            let plane = (w * h) as usize;
            let mut one = std::vec![0u16; 2 * plane];
            let mut split = std::vec![0u16; 2 * plane];
            for frame in 0..3u32 {
                let f = frames(w, h, w * h + (frame << 20));
                let p = planes(&f, w, h);
                let hist = |buf: &mut Vec<u16>| History {
                    ptr: buf.as_mut_ptr() as u64,
                    write: frame % 2,
                    frames: frame,
                };
                for (i, j) in [(0, 0), (g.cols - 1, g.rows - 1), (1, g.rows / 2)] {
                    let whole = unsafe { block_part(&g, &p, &hist(&mut one), i, j, 0, 1) };
                    let mut parts = Sums::default();
                    for t in 0..7 {
                        let s = unsafe { block_part(&g, &p, &hist(&mut split), i, j, t, 7) };
                        parts.add(&s);
                    }
                    assert_eq!(whole, parts, "{w}x{h} frame {frame} block ({i}, {j})");
                    let span = g.span(i, j);
                    assert!(whole.sse.iter().all(|&s| s > 0));
                    if !span.active() {
                        // (99×61's last row of blocks is one sample high.)
                        assert_eq!((whole.spatial, whole.temporal), (0, 0));
                        continue;
                    }
                    let dropped = g.step == 2 && span.ax_end <= 12;
                    assert_eq!(whole.spatial == 0, dropped, "{w}x{h} block ({i}, {j})");
                    assert!(whole.temporal > 0, "{w}x{h} frame {frame} block ({i}, {j})");
                }
                assert_eq!(one, split);
            }
            // The history holds the last frame where the blocks were measured.
            let f = frames(w, h, w * h + (2 << 20));
            let span = g.span(1, g.rows / 2);
            let at = (span.y as usize + 1) * w as usize + span.x as usize + 1;
            assert_eq!(le16(&one[at..at + 1]), f.reference[2 * at..2 * at + 2]);
        }
    }

    #[test]
    fn temporal_differences_of_first_and_second_order() {
        let first = Grid::new(64, 64, (32, 32), 1, 8, false);
        let second = Grid::new(64, 64, (32, 32), 1, 8, true);
        assert_eq!(temporal(&first, 10, 4, 100), 6);
        assert_eq!(temporal(&second, 10, 4, 100), 102);
        assert_eq!(temporal(&second, 0, 4, 1), 7);
    }
}
