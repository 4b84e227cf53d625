//! libjxl's Malta filters: sixteen line patterns through a pixel, each summed and squared,
//! over a plane with a zero border of 4 ([`super::MALTA_PAD`]). `malta_hf` takes nine
//! (or seven, on the diagonals) neighbours per line and filters the UHF band; `malta_lf`
//! takes five, spread over the same reach, and filters HF and MF.
//!
//! The GPU filters [`GROUP`] horizontally adjacent pixels per thread ([`malta_hf_group`],
//! [`malta_lf_group`]): one pixel at a time, `ba_ac_error` was bound by its loads (132 +
//! 80 + 80 scalar loads of the three bands, and the pixel's HF and MF values: 296 per
//! pixel and channel). A group loads each band's [`Window`] (9 rows × 12 columns) once,
//! as 27 aligned 16-byte vectors (fewer where the compiler drops chunks that no line
//! reads), and sums every pixel's lines from it with the same additions in the same
//! order as the per-pixel filters, so the values are the same bit for bit.

/// Sum of the listed `(dx, dy)` samples, squared.
macro_rules! line {
    ($at:ident; $(($dx:literal, $dy:literal))+) => {{
        let s = 0.0f32 $(+ $at($dx, $dy))+;
        s * s
    }};
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
    let mut r = 0.0f32;
    r += line!(at; (-4, 0) (-3, 0) (-2, 0) (-1, 0) (0, 0) (1, 0) (2, 0) (3, 0) (4, 0));
    r += line!(at; (0, -4) (0, -3) (0, -2) (0, -1) (0, 0) (0, 1) (0, 2) (0, 3) (0, 4));
    r += line!(at; (-3, -3) (-2, -2) (-1, -1) (0, 0) (1, 1) (2, 2) (3, 3));
    r += line!(at; (3, -3) (2, -2) (1, -1) (0, 0) (-1, 1) (-2, 2) (-3, 3));
    r += line!(at; (1, -4) (1, -3) (1, -2) (0, -1) (0, 0) (0, 1) (-1, 2) (-1, 3) (-1, 4));
    r += line!(at; (-1, -4) (-1, -3) (-1, -2) (0, -1) (0, 0) (0, 1) (1, 2) (1, 3) (1, 4));
    r += line!(at; (-4, -1) (-3, -1) (-2, -1) (-1, 0) (0, 0) (1, 0) (2, 1) (3, 1) (4, 1));
    r += line!(at; (-4, 1) (-3, 1) (-2, 1) (-1, 0) (0, 0) (1, 0) (2, -1) (3, -1) (4, -1));
    r += line!(at; (-2, -3) (-1, -2) (-1, -1) (0, 0) (1, 1) (1, 2) (2, 3));
    r += line!(at; (2, -3) (1, -2) (1, -1) (0, 0) (-1, 1) (-1, 2) (-2, 3));
    r += line!(at; (-3, -2) (-2, -1) (-1, -1) (0, 0) (1, 1) (2, 1) (3, 2));
    r += line!(at; (3, -2) (2, -1) (1, -1) (0, 0) (-1, 1) (-2, 1) (-3, 2));
    // libjxl's last four lines repeat the 8th, 7th, 6th and 5th.
    r += line!(at; (-4, 1) (-3, 1) (-2, 1) (-1, 0) (0, 0) (1, 0) (2, -1) (3, -1) (4, -1));
    r += line!(at; (-4, -1) (-3, -1) (-2, -1) (-1, 0) (0, 0) (1, 0) (2, 1) (3, 1) (4, 1));
    r += line!(at; (-1, -4) (-1, -3) (-1, -2) (0, -1) (0, 0) (0, 1) (1, 2) (1, 3) (1, 4));
    r += line!(at; (1, -4) (1, -3) (1, -2) (0, -1) (0, 0) (0, 1) (-1, 2) (-1, 3) (-1, 4));
    r
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
    let mut r = 0.0f32;
    r += line!(at; (-4, 0) (-2, 0) (0, 0) (2, 0) (4, 0));
    r += line!(at; (0, -4) (0, -2) (0, 0) (0, 2) (0, 4));
    r += line!(at; (-3, -3) (-2, -2) (0, 0) (2, 2) (3, 3));
    r += line!(at; (3, -3) (2, -2) (0, 0) (-2, 2) (-3, 3));
    r += line!(at; (1, -4) (1, -2) (0, 0) (-1, 2) (-1, 4));
    r += line!(at; (-1, -4) (-1, -2) (0, 0) (1, 2) (1, 4));
    r += line!(at; (-4, -1) (-2, -1) (0, 0) (2, 1) (4, 1));
    r += line!(at; (-4, 1) (-2, 1) (0, 0) (2, -1) (4, -1));
    r += line!(at; (-2, -3) (-1, -2) (0, 0) (1, 2) (2, 3));
    r += line!(at; (2, -3) (1, -2) (0, 0) (-1, 2) (-2, 3));
    r += line!(at; (-3, -2) (-2, -1) (0, 0) (2, 1) (3, 2));
    r += line!(at; (3, -2) (2, -1) (0, 0) (-2, 1) (-3, 2));
    r += line!(at; (-4, 2) (-2, 1) (0, 0) (2, -1) (4, -2));
    r += line!(at; (-4, -2) (-2, -1) (0, 0) (2, 1) (4, 2));
    r += line!(at; (-2, -4) (-1, -2) (0, 0) (1, 2) (2, 4));
    r += line!(at; (2, -4) (1, -2) (0, 0) (-1, 2) (-2, 4));
    r
}

/// Horizontally adjacent pixels a GPU thread of `ba_ac_error` filters.
pub const GROUP: usize = 4;
/// Reach of the filters on each side of a pixel ([`super::MALTA_PAD`]).
const REACH: usize = 4;
/// Rows of a group's window: the filters' reach above and below the group's row.
pub const WINDOW_ROWS: usize = 2 * REACH + 1;
/// 16-byte chunks per window row: [`GROUP`] columns and the reach on each side (12).
pub const WINDOW_CHUNKS: usize = (GROUP + 2 * REACH) / 4;
const _: () = assert!(
    GROUP == 4 && REACH == super::MALTA_PAD as usize && WINDOW_CHUNKS * 4 == GROUP + 2 * REACH,
    "the unroll! lists below"
);

/// Four consecutive samples of a padded plane, as one aligned 16-byte load.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default)]
pub struct F4(pub [f32; 4]);

/// The samples a group's filters read: rows `y − 4 ..= y + 4` ([`WINDOW_ROWS`]), columns
/// `x0 − 4 .. x0 + 8` ([`WINDOW_CHUNKS`] chunks of 4) of the group at `(x0, y)`.
pub type Window = [[F4; WINDOW_CHUNKS]; WINDOW_ROWS];

/// The window of the group whose first pixel is at `first`.
///
/// # Safety
/// `first − 4 − 4·stride` must be 16-byte aligned, `stride` a multiple of 4 and the 9 × 12
/// samples of the window (rows `stride` apart) readable: in the padded planes, the
/// group's first pixel a multiple of 4 and the planes laid out by
/// [`super::padded_stride`] on a 16-byte aligned base.
#[inline(always)]
pub unsafe fn load_window(first: *const f32, stride: u32) -> Window {
    let mut w = [[F4::default(); WINDOW_CHUNKS]; WINDOW_ROWS];
    // Spelled out (`unroll!`, constant indices): the window stays in registers.
    unroll!(r in [0 1 2 3 4 5 6 7 8] {
        let offset = (r as i32 - REACH as i32) * stride as i32 - REACH as i32;
        // SAFETY: the caller's contract.
        let row = unsafe { first.offset(offset as isize) } as *const F4;
        unroll!(q in [0 1 2] {
            // SAFETY: the caller's contract (aligned, readable).
            w[r][q] = unsafe { *row.add(q) };
        });
    });
    w
}

/// Sample `(dx, dy)` around pixel `j` of the group, from its window (constant indices once
/// inlined: `j` comes from `unroll!`, `dx` and `dy` from the `line!` lists).
#[inline(always)]
fn window_at(w: &Window, j: usize, dx: i32, dy: i32) -> f32 {
    let (row, col) = (
        (dy + REACH as i32) as usize,
        (j as i32 + REACH as i32 + dx) as usize,
    );
    w[row][col / 4].0[col % 4]
}

/// [`malta_hf`] of the [`GROUP`] pixels of a window, pixel `j` at `[j]`: the same sums in
/// the same order, from registers.
#[inline(always)]
pub fn malta_hf_group(w: &Window) -> [f32; GROUP] {
    let mut out = [0.0f32; GROUP];
    unroll!(j in [0 1 2 3] {
        out[j] = hf_lines(|dx, dy| window_at(w, j, dx, dy));
    });
    out
}

/// [`malta_lf`] of the [`GROUP`] pixels of a window, as [`malta_hf_group`].
#[inline(always)]
pub fn malta_lf_group(w: &Window) -> [f32; GROUP] {
    let mut out = [0.0f32; GROUP];
    unroll!(j in [0 1 2 3] {
        out[j] = lf_lines(|dx, dy| window_at(w, j, dx, dy));
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;

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
}
