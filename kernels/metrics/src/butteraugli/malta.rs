//! libjxl's Malta filters: sixteen line patterns through a pixel, each summed and squared,
//! over a plane with a zero border of 4 ([`super::MALTA_PAD`]). `malta_hf` takes nine
//! (or seven, on the diagonals) neighbours per line and filters the UHF band; `malta_lf`
//! takes five, spread over the same reach, and filters HF and MF.

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
    let at = unsafe { reader(centre, stride) };
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
    let at = unsafe { reader(centre, stride) };
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
