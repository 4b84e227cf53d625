//! libjxl's Malta filters: sixteen line patterns through a pixel, each summed and squared,
//! over a plane with a zero border of 4 ([`super::MALTA_PAD`]). `malta_hf` takes nine
//! (or seven, on the diagonals) neighbours per line and filters the UHF band; `malta_lf`
//! takes five, spread over the same reach, and filters HF and MF. The lines are listed
//! once (`hf_list!`, `lf_list!`); the per-pixel filters sum them from those lists, and the
//! GPU's group filters' code is generated from them (`malta_sweep.rs`).
//!
//! The GPU filters [`GROUP`] horizontally adjacent pixels per thread ([`malta_hf_group`],
//! [`malta_lf_group`]): one pixel at a time, `ba_ac_error` was bound by its loads (132 +
//! 80 + 80 scalar loads of the three bands, and the pixel's HF and MF values: 296 per
//! pixel and channel). A group reads each band's 9 rows × 12 columns as aligned 16-byte
//! vectors, 3 per row. Loading the whole window first and summing from it took 255
//! registers per thread (the 108 samples and the 4 pixels' sums live at once: 11.5 % of
//! the warp slots active, slower than one pixel per thread), so the group filters sweep
//! the window a row at a time instead (`sweep`): 16 running line sums per pixel, each
//! row loaded just before its samples are added to the lines through them. Every line's
//! sum takes its samples in its listed order, so the values are the per-pixel filters'
//! bit for bit.
//!
//! The sweeps are straight-line code holding only the additions that happen, generated
//! by this module's test `generated_malta_sweeps_are_current` from the line tables
//! ([`Line`]) and committed: 848 additions (4 pixels × hf's 132 samples and lf's 80).
//! Spelling them out instead with `unroll!` over every line, sample and pixel and
//! `if const` tests on the tables, for each of the 18 row visits of each filter, gave the
//! compiler 2 × 18 × 16 × 9 × 4 = 20,736 blocks to build, check and optimise, nearly all
//! of them dead: the crate's host test binary took 6.5 minutes to compile (ca4b061,
//! reverted in 187ceb6 for that).

use gpumetrics_device::hint::{opaque_ptr, settle_f32};

/// Sum of the listed `(dx, dy)` samples, squared.
macro_rules! line {
    ($at:ident; $(($dx:literal, $dy:literal))+) => {{
        let s = 0.0f32 $(+ $at($dx, $dy))+;
        s * s
    }};
}

/// The sum of the squared lines, `r += line` from 0 in the listed order, of the samples
/// `$at(dx, dy)`.
macro_rules! sum_lines {
    ($at:ident; $([$(($dx:literal, $dy:literal))+])+) => {{
        let mut r = 0.0f32;
        $(r += line!($at; $(($dx, $dy))+);)+
        r
    }};
}

/// The lines as a table ([`Line`]s in the listed order).
macro_rules! line_table {
    ($([$(($dx:literal, $dy:literal))+])+) => {
        [$(Line::new(&[$(($dx, $dy)),+])),+]
    };
}

/// `$then!($args [line 0] [line 1] …)` with the 16 lines of [`malta_hf`], each the
/// `(dx, dy)` of its samples in the order they are summed.
macro_rules! hf_list {
    ($then:ident!($($args:tt)*)) => {
        $then!($($args)*
            [(-4, 0) (-3, 0) (-2, 0) (-1, 0) (0, 0) (1, 0) (2, 0) (3, 0) (4, 0)]
            [(0, -4) (0, -3) (0, -2) (0, -1) (0, 0) (0, 1) (0, 2) (0, 3) (0, 4)]
            [(-3, -3) (-2, -2) (-1, -1) (0, 0) (1, 1) (2, 2) (3, 3)]
            [(3, -3) (2, -2) (1, -1) (0, 0) (-1, 1) (-2, 2) (-3, 3)]
            [(1, -4) (1, -3) (1, -2) (0, -1) (0, 0) (0, 1) (-1, 2) (-1, 3) (-1, 4)]
            [(-1, -4) (-1, -3) (-1, -2) (0, -1) (0, 0) (0, 1) (1, 2) (1, 3) (1, 4)]
            [(-4, -1) (-3, -1) (-2, -1) (-1, 0) (0, 0) (1, 0) (2, 1) (3, 1) (4, 1)]
            [(-4, 1) (-3, 1) (-2, 1) (-1, 0) (0, 0) (1, 0) (2, -1) (3, -1) (4, -1)]
            [(-2, -3) (-1, -2) (-1, -1) (0, 0) (1, 1) (1, 2) (2, 3)]
            [(2, -3) (1, -2) (1, -1) (0, 0) (-1, 1) (-1, 2) (-2, 3)]
            [(-3, -2) (-2, -1) (-1, -1) (0, 0) (1, 1) (2, 1) (3, 2)]
            [(3, -2) (2, -1) (1, -1) (0, 0) (-1, 1) (-2, 1) (-3, 2)]
            // libjxl's last four lines repeat the 8th, 7th, 6th and 5th.
            [(-4, 1) (-3, 1) (-2, 1) (-1, 0) (0, 0) (1, 0) (2, -1) (3, -1) (4, -1)]
            [(-4, -1) (-3, -1) (-2, -1) (-1, 0) (0, 0) (1, 0) (2, 1) (3, 1) (4, 1)]
            [(-1, -4) (-1, -3) (-1, -2) (0, -1) (0, 0) (0, 1) (1, 2) (1, 3) (1, 4)]
            [(1, -4) (1, -3) (1, -2) (0, -1) (0, 0) (0, 1) (-1, 2) (-1, 3) (-1, 4)]
        )
    };
}

/// As [`hf_list!`], the 16 lines of [`malta_lf`].
macro_rules! lf_list {
    ($then:ident!($($args:tt)*)) => {
        $then!($($args)*
            [(-4, 0) (-2, 0) (0, 0) (2, 0) (4, 0)]
            [(0, -4) (0, -2) (0, 0) (0, 2) (0, 4)]
            [(-3, -3) (-2, -2) (0, 0) (2, 2) (3, 3)]
            [(3, -3) (2, -2) (0, 0) (-2, 2) (-3, 3)]
            [(1, -4) (1, -2) (0, 0) (-1, 2) (-1, 4)]
            [(-1, -4) (-1, -2) (0, 0) (1, 2) (1, 4)]
            [(-4, -1) (-2, -1) (0, 0) (2, 1) (4, 1)]
            [(-4, 1) (-2, 1) (0, 0) (2, -1) (4, -1)]
            [(-2, -3) (-1, -2) (0, 0) (1, 2) (2, 3)]
            [(2, -3) (1, -2) (0, 0) (-1, 2) (-2, 3)]
            [(-3, -2) (-2, -1) (0, 0) (2, 1) (3, 2)]
            [(3, -2) (2, -1) (0, 0) (-2, 1) (-3, 2)]
            [(-4, 2) (-2, 1) (0, 0) (2, -1) (4, -2)]
            [(-4, -2) (-2, -1) (0, 0) (2, 1) (4, 2)]
            [(-2, -4) (-1, -2) (0, 0) (1, 2) (2, 4)]
            [(2, -4) (1, -2) (0, 0) (-1, 2) (-2, 4)]
        )
    };
}

/// Reads sample `(x + dx, y + dy)` of a plane whose pixel `(x, y)` is at `centre`.
#[inline(always)]
unsafe fn reader(centre: *const f32, stride: u32) -> impl Fn(i32, i32) -> f32 {
    move |dx: i32, dy: i32| {
        // SAFETY: the caller keeps every pattern inside the padded plane.
        unsafe { *centre.offset((dy * stride as i32 + dx) as isize) }
    }
}

/// The nine-sample Malta filter (`MaltaUnit`).
///
/// # Safety
/// `centre` must have 4 readable samples (rows `stride` apart) on each side.
#[inline(always)]
pub unsafe fn malta_hf(centre: *const f32, stride: u32) -> f32 {
    // SAFETY: the caller's contract.
    hf_lines(unsafe { reader(centre, stride) })
}

/// [`malta_hf`] of the samples `at(dx, dy)` around the pixel.
#[inline(always)]
fn hf_lines(at: impl Fn(i32, i32) -> f32) -> f32 {
    hf_list!(sum_lines!(at;))
}

/// The five-sample Malta filter (`MaltaUnitLF`).
///
/// # Safety
/// As [`malta_hf`].
#[inline(always)]
pub unsafe fn malta_lf(centre: *const f32, stride: u32) -> f32 {
    // SAFETY: the caller's contract.
    lf_lines(unsafe { reader(centre, stride) })
}

/// [`malta_lf`] of the samples `at(dx, dy)` around the pixel.
#[inline(always)]
fn lf_lines(at: impl Fn(i32, i32) -> f32) -> f32 {
    lf_list!(sum_lines!(at;))
}

/// Horizontally adjacent pixels a GPU thread of `ba_ac_error` filters.
pub const GROUP: usize = 4;
/// Reach of the filters on each side of a pixel ([`super::MALTA_PAD`]).
const REACH: usize = 4;
/// Lines of each filter.
const LINES: usize = 16;
/// Most samples of a line.
const MAX_SAMPLES: usize = 2 * REACH + 1;
const _: () = assert!(
    GROUP == 4 && REACH == super::MALTA_PAD as usize && LINES == 16 && MAX_SAMPLES == 9,
    "the unroll! lists below and the generated sweeps (malta_sweep.rs)"
);

/// One Malta line: its `len` samples `(dx, dy)` in the order they are summed.
#[derive(Clone, Copy, Debug)]
struct Line {
    len: usize,
    at: [(i32, i32); MAX_SAMPLES],
}

impl Line {
    const fn new(samples: &[(i32, i32)]) -> Line {
        assert!(samples.len() <= MAX_SAMPLES);
        let mut at = [(0, 0); MAX_SAMPLES];
        let mut k = 0;
        while k < samples.len() {
            let (dx, dy) = samples[k];
            assert!(dx.unsigned_abs() as usize <= REACH && dy.unsigned_abs() as usize <= REACH);
            at[k] = samples[k];
            k += 1;
        }
        Line {
            len: samples.len(),
            at,
        }
    }

    /// Whether the samples' rows never go up (`dy` non-decreasing): summed by the
    /// top-to-bottom sweep, else by the bottom-to-top one.
    const fn down(&self) -> bool {
        let mut k = 1;
        while k < self.len {
            if self.at[k].1 < self.at[k - 1].1 {
                return false;
            }
            k += 1;
        }
        true
    }

    /// Whether the samples' rows never go down (`dy` non-increasing).
    const fn up(&self) -> bool {
        let mut k = 1;
        while k < self.len {
            if self.at[k].1 > self.at[k - 1].1 {
                return false;
            }
            k += 1;
        }
        true
    }
}

/// The lines of [`malta_hf`].
struct Hf;
/// The lines of [`malta_lf`].
struct Lf;

impl Hf {
    /// The lines in the order their squares are added.
    const LINES: [Line; LINES] = hf_list!(line_table!());
}

impl Lf {
    /// The lines in the order their squares are added.
    const LINES: [Line; LINES] = lf_list!(line_table!());
}

/// A group's running line sums: `[j][l]` is line `l`'s sum so far for pixel `j`.
type Sums = [[f32; LINES]; GROUP];

/// The two sweeps of one Malta filter's lines over a group's window, for [`sweep`]:
/// implemented for [`Hf`] and [`Lf`] by the generated `malta_sweep.rs`.
trait Sweeps {
    /// Adds to `acc` the window's samples on the lines whose rows go down
    /// ([`Line::down`]), from the top row to the bottom one: for each row with such
    /// samples, the row loaded ([`load_row`]), then for each of those lines in the listed
    /// order its samples in that row in the listed order, each for the [`GROUP`] pixels.
    ///
    /// # Safety
    /// As [`load_row`] for every row `0 ..= 8` of the window of `first`.
    unsafe fn down(acc: &mut Sums, first: *const f32, stride: u32);

    /// As [`Sweeps::down`], the other lines (rows going up), from the bottom row to the
    /// top one.
    ///
    /// # Safety
    /// As [`Sweeps::down`].
    unsafe fn up(acc: &mut Sums, first: *const f32, stride: u32);
}

/// The generated sweeps: `impl Sweeps for Hf` and `for Lf`.
#[path = "malta_sweep.rs"]
mod malta_sweep;

/// Every line is summed by one of the two sweeps: its rows in one direction.
const fn monotone(lines: &[Line; LINES]) -> bool {
    let mut l = 0;
    while l < LINES {
        if !lines[l].down() && !lines[l].up() {
            return false;
        }
        l += 1;
    }
    true
}
const _: () = assert!(monotone(&Hf::LINES) && monotone(&Lf::LINES));

/// Four consecutive samples of a padded plane, as one aligned 16-byte load.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default)]
pub struct F4(pub [f32; 4]);

/// Chunks of 4 samples of a window row: [`GROUP`] columns and the reach on each side.
const ROW_CHUNKS: usize = (GROUP + 2 * REACH) / 4;
const _: () = assert!(ROW_CHUNKS == 3 && ROW_CHUNKS * 4 == GROUP + 2 * REACH);

/// Columns `x0 − 4 .. x0 + 8` of row `y − 4 + r` (row `r` of the group's window), the
/// group's first pixel `(x0, y)` at `first`, as [`ROW_CHUNKS`] 16-byte loads.
///
/// # Safety
/// `first − 4 − 4·stride` must be 16-byte aligned, `stride` a multiple of 4 and the row's
/// 12 samples readable: in the padded planes, the group's first pixel a multiple of 4 and
/// the planes laid out by [`super::padded_stride`] on a 16-byte aligned base.
#[inline(always)]
unsafe fn load_row(first: *const f32, stride: u32, r: usize) -> [F4; ROW_CHUNKS] {
    let offset = (r as i32 - REACH as i32) * stride as i32 - REACH as i32;
    // SAFETY: the caller's contract (aligned, readable).
    unsafe {
        let row = first.offset(offset as isize) as *const F4;
        [*row, *row.add(1), *row.add(2)]
    }
}

/// The filter of lines `L` ([`malta_hf`] or [`malta_lf`]) of the [`GROUP`] pixels from
/// `first`, pixel `j` at `[j]`: the same additions in the same order, so the same values
/// bit for bit.
///
/// A row at a time: holding the whole window (108 samples) and the pixels' sums took 255
/// registers per thread. Each of the 64 (pixel, line) sums starts at 0 and takes its
/// samples in its listed order: the lines whose rows go down (or stay in one row) during
/// a sweep from the top row to the bottom one ([`Sweeps::down`]), the others (rows going
/// up, such as hf's `(-4, 1) … (4, -1)`) during a second sweep from the bottom row back
/// to the top ([`Sweeps::up`]), which loads their rows again. The squares are then added
/// in the lines' order.
///
/// # Safety
/// As [`load_row`] for every row `0 ..= 8`.
#[inline(always)]
unsafe fn sweep<L: Sweeps>(first: *const f32, stride: u32) -> [f32; GROUP] {
    let mut acc: Sums = [[0.0f32; LINES]; GROUP];
    // SAFETY: the caller's contract.
    unsafe { L::down(&mut acc, first, stride) };
    // The compiler would otherwise reuse the first sweep's loads, keeping their samples
    // live until here: an address it cannot match to them makes it load them again.
    let again = opaque_ptr(first);
    // SAFETY: the caller's contract; `again` is `first`.
    unsafe { L::up(&mut acc, again, stride) };
    let mut out = [0.0f32; GROUP];
    unroll!(j in [0 1 2 3] {
        let mut r = 0.0f32;
        unroll!(l in [0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15] {
            r += acc[j][l] * acc[j][l];
        });
        // Finished here: the compiler would otherwise move the last additions of pixels
        // 1 to 3 into their `x < width` branches after all three bands, keeping their
        // line sums live until then.
        out[j] = settle_f32(r);
    });
    out
}

/// [`malta_hf`] of the [`GROUP`] pixels from `first` (the group's first pixel), pixel `j`
/// at `[j]`, bit for bit (`sweep`).
///
/// # Safety
/// As `load_row` for the 9 rows of the group's window, `y − 4 ..= y + 4`.
#[inline(always)]
pub unsafe fn malta_hf_group(first: *const f32, stride: u32) -> [f32; GROUP] {
    // SAFETY: the caller's contract.
    unsafe { sweep::<Hf>(first, stride) }
}

/// [`malta_lf`] of the [`GROUP`] pixels from `first`, as [`malta_hf_group`].
///
/// # Safety
/// As [`malta_hf_group`].
#[inline(always)]
pub unsafe fn malta_lf_group(first: *const f32, stride: u32) -> [f32; GROUP] {
    // SAFETY: the caller's contract.
    unsafe { sweep::<Lf>(first, stride) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::fmt::Write;
    use std::string::String;
    use std::vec;
    use std::vec::Vec;

    /// A 9×9 plane with one non-zero sample, read at its centre.
    fn single(dx: i32, dy: i32, f: unsafe fn(*const f32, u32) -> f32) -> f32 {
        let mut p = vec![0.0f32; 81];
        p[((4 + dy) * 9 + 4 + dx) as usize] = 1.0;
        unsafe { f(p.as_ptr().add(40), 9) }
    }

    #[test]
    fn centre_counts_every_line_and_corners_none() {
        assert_eq!(single(0, 0, malta_hf), 16.0);
        assert_eq!(single(0, 0, malta_lf), 16.0);
        assert_eq!(single(4, 4, malta_hf), 0.0);
        // (4, 0) lies on the horizontal line only; (4, 1) on lines 7 and 14.
        assert_eq!(single(4, 0, malta_hf), 1.0);
        assert_eq!(single(4, 1, malta_hf), 2.0);
        // The LF filter skips odd offsets on the axes.
        assert_eq!(single(1, 0, malta_lf), 0.0);
        assert_eq!(single(4, 2, malta_lf), 1.0);
    }

    /// The group filters give each pixel's [`malta_hf`] and [`malta_lf`] bit for bit, on
    /// windows of random values of mixed signs and magnitudes (where summing a line's
    /// samples in another order changes the result).
    #[test]
    fn group_filters_match_per_pixel() {
        // A window (stride 12) with a column of chunks on each side, first pixel at (8, 4).
        const STRIDE: u32 = 20;
        let mut state = 0x853c_49e6_748f_ea9bu64;
        let mut value = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let exp = (state >> 40) % 24;
            let v = (1.0 + (state & 0xff_ffff) as f32 / (1u32 << 24) as f32) * (1 << exp) as f32;
            if state & 1 == 0 { v } else { -v }
        };
        for _ in 0..200 {
            let mut plane = vec![F4::default(); (STRIDE * 9 / 4) as usize];
            for chunk in plane.iter_mut() {
                chunk.0 = [value(), value(), value(), value()];
            }
            // SAFETY: every pattern and window row is inside the plane, aligned.
            unsafe {
                let first = (plane.as_ptr() as *const f32).add((4 * STRIDE + 8) as usize);
                let (hf, lf) = (malta_hf_group(first, STRIDE), malta_lf_group(first, STRIDE));
                for j in 0..GROUP {
                    let centre = first.add(j);
                    assert_eq!(
                        hf[j].to_bits(),
                        malta_hf(centre, STRIDE).to_bits(),
                        "hf {j}"
                    );
                    assert_eq!(
                        lf[j].to_bits(),
                        malta_lf(centre, STRIDE).to_bits(),
                        "lf {j}"
                    );
                }
            }
        }
    }

    /// Exactly hf's and lf's 8th and 13th lines (hf's are the same line) have rows going up,
    /// summed by the second sweep.
    #[test]
    fn lines_going_up() {
        let up = |lines: &[Line; LINES]| -> Vec<usize> {
            (0..LINES).filter(|&l| !lines[l].down()).collect()
        };
        assert_eq!(up(&Hf::LINES), [7, 12]);
        assert_eq!(up(&Lf::LINES), [7, 12]);
    }

    /// Where `generated_malta_sweeps_are_current` writes the sweeps it renders.
    const SWEEPS_PATH: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src/butteraugli/malta_sweep.rs"
    );

    /// The environment variable that makes `generated_malta_sweeps_are_current` rewrite
    /// [`SWEEPS_PATH`].
    const REGENERATE: &str = "GPUMETRICS_REGENERATE";

    /// Rows of a group's window.
    const WINDOW_ROWS: usize = 2 * REACH + 1;

    /// `0, 1 and 2`.
    fn listing(items: &[usize]) -> String {
        let mut s = String::new();
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                s.push_str(if i + 1 == items.len() { " and " } else { ", " });
            }
            let _ = write!(s, "{item}");
        }
        s
    }

    /// The lines of `lines` that the sweep `down` ([`Sweeps::down`] or, if false,
    /// [`Sweeps::up`]) sums.
    fn swept(lines: &[Line; LINES], down: bool) -> Vec<usize> {
        (0..LINES).filter(|&l| lines[l].down() == down).collect()
    }

    /// The additions of row `r` of the window in the sweep `down`, in order: `(l, dx)` for
    /// each of the sweep's lines `l` in the listed order, its samples in row `r` in the
    /// listed order (each to be added for the [`GROUP`] pixels).
    fn row_additions(lines: &[Line; LINES], down: bool, r: usize) -> Vec<(usize, i32)> {
        let dy = r as i32 - REACH as i32;
        let mut adds = Vec::new();
        for l in swept(lines, down) {
            let line = &lines[l];
            for &(dx, _) in line.at[..line.len].iter().filter(|s| s.1 == dy) {
                adds.push((l, dx));
            }
        }
        adds
    }

    /// One sweep of one filter as the body of [`Sweeps::down`] or [`Sweeps::up`].
    fn render_sweep(out: &mut String, lines: &[Line; LINES], down: bool) {
        let (name, order, rows): (_, _, Vec<usize>) = if down {
            ("down", "top to bottom", (0..WINDOW_ROWS).collect())
        } else {
            ("up", "bottom to top", (0..WINDOW_ROWS).rev().collect())
        };
        let _ = writeln!(
            out,
            "    /// Lines {}, rows {order}.",
            listing(&swept(lines, down))
        );
        out.push_str("    #[inline(always)]\n");
        let _ = writeln!(
            out,
            "    unsafe fn {name}(acc: &mut Sums, first: *const f32, stride: u32) {{"
        );
        let mut first_row = true;
        for r in rows {
            let adds = row_additions(lines, down, r);
            if adds.is_empty() {
                continue;
            }
            if !first_row {
                out.push('\n');
            }
            first_row = false;
            let mut on_row: Vec<usize> = adds.iter().map(|&(l, _)| l).collect();
            on_row.dedup();
            let dy = r as i32 - REACH as i32;
            let lines_word = if on_row.len() == 1 { "line" } else { "lines" };
            let _ = writeln!(
                out,
                "        // Row {r} (dy {dy}): {lines_word} {}.",
                listing(&on_row)
            );
            out.push_str("        // SAFETY: the caller's contract.\n");
            let _ = writeln!(
                out,
                "        let row = unsafe {{ load_row(first, stride, {r}) }};"
            );
            for (l, dx) in adds {
                for j in 0..GROUP {
                    let c = (j as i32 + REACH as i32 + dx) as usize;
                    let _ = writeln!(out, "        acc[{j}][{l}] += row[{}].0[{}];", c / 4, c % 4);
                }
            }
        }
        out.push_str("    }\n");
    }

    /// The text of malta_sweep.rs for the current line tables: both sweeps of [`Hf`] and
    /// [`Lf`], each addition in the order `sweep` needs for the per-pixel filters' values.
    fn render_sweeps() -> String {
        let mut out = String::from(concat!(
            "//! The group filters' sweeps ([`super::Sweeps`]) as straight-line code, generated from\n",
            "//! the line tables (`hf_list!`, `lf_list!`) by malta.rs's test\n",
            "//! `generated_malta_sweeps_are_current`: do not edit. After a change to the lines or to\n",
            "//! the generator, regenerate with\n",
            "//! `GPUMETRICS_REGENERATE=1 cargo test -p gpumetrics-kernels generated_malta_sweeps`\n",
            "//! (the test rewrites this file and fails; run the tests again to build and check it).\n",
            "//!\n",
            "//! Each row visit loads the window's row ([`super::load_row`]) and adds only the\n",
            "//! samples on it: `acc[j][l] += row[c / 4].0[c % 4]` for pixel `j`, line `l` and window\n",
            "//! column `c` (`j + 4 + dx`), the sweep's lines in their listed order, each line's\n",
            "//! samples on the row in their listed order, the pixels innermost. Rows holding none\n",
            "//! of a sweep's samples are skipped.\n",
            "\n",
            "use super::{Hf, Lf, Sums, Sweeps, load_row};\n",
        ));
        for (name, lines) in [("Hf", &Hf::LINES), ("Lf", &Lf::LINES)] {
            let _ = writeln!(out, "\nimpl Sweeps for {name} {{");
            render_sweep(&mut out, lines, true);
            out.push('\n');
            render_sweep(&mut out, lines, false);
            out.push_str("}\n");
        }
        out
    }

    /// The committed sweeps (malta_sweep.rs, what this build compiled) are those the line
    /// tables give now: fails on a stale or hand-edited file, naming the first line that
    /// differs; with `GPUMETRICS_REGENERATE` set it rewrites the file (and still fails, as
    /// this build ran the old one).
    #[test]
    fn generated_malta_sweeps_are_current() {
        let committed = include_str!("malta_sweep.rs");
        let rendered = render_sweeps();
        if committed == rendered {
            return;
        }
        if std::env::var_os(REGENERATE).is_some() {
            std::fs::write(SWEEPS_PATH, &rendered).expect(SWEEPS_PATH);
            panic!("rewrote {SWEEPS_PATH}: run the tests again to build and check it");
        }
        let (have, want): (Vec<&str>, Vec<&str>) =
            (committed.lines().collect(), rendered.lines().collect());
        let n = (0..have.len().max(want.len()))
            .find(|&i| have.get(i) != want.get(i))
            .unwrap_or(have.len());
        let end = "<end of file>";
        let (have, want) = (have.get(n).unwrap_or(&end), want.get(n).unwrap_or(&end));
        panic!(
            "{SWEEPS_PATH} is not what the line tables give: line {} is\n  {have}\n\
             where the generator renders\n  {want}\nRegenerate it with {REGENERATE}=1 \
             cargo test -p gpumetrics-kernels generated_malta_sweeps",
            n + 1
        );
    }

    /// The sweeps add every sample of every line once: 4 pixels × hf's 132 samples and
    /// lf's 80.
    #[test]
    fn sweeps_add_every_sample_once() {
        let additions = |lines: &[Line; LINES]| -> usize {
            let row =
                |r| row_additions(lines, true, r).len() + row_additions(lines, false, r).len();
            (0..WINDOW_ROWS).map(row).sum()
        };
        let samples = |lines: &[Line; LINES]| lines.iter().map(|l| l.len).sum::<usize>();
        assert_eq!(additions(&Hf::LINES), samples(&Hf::LINES));
        assert_eq!(additions(&Lf::LINES), samples(&Lf::LINES));
        assert_eq!((samples(&Hf::LINES), samples(&Lf::LINES)), (132, 80));
        let rendered = render_sweeps();
        let statements = rendered
            .lines()
            .filter(|l| l.trim_start().starts_with("acc["));
        assert_eq!(statements.count(), GROUP * (132 + 80));
    }
}
