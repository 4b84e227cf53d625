//! The group filters' sweeps ([`super::Sweeps`]) as straight-line code, generated from
//! the line tables (`hf_list!`, `lf_list!`) by malta.rs's test
//! `generated_malta_sweeps_are_current`: do not edit. After a change to the lines or to
//! the generator, regenerate with
//! `GPUMETRICS_REGENERATE=1 cargo test -p gpumetrics-kernels generated_malta_sweeps`
//! (the test rewrites this file and fails; run the tests again to build and check it).
//!
//! Each row visit loads the window's row ([`super::load_row`]) and adds only the
//! samples on it: `acc[j][l] += row[c / 4].0[c % 4]` for pixel `j`, line `l` and window
//! column `c` (`j + 4 + dx`), the sweep's lines in their listed order, each line's
//! samples on the row in their listed order, the pixels innermost. Rows holding none
//! of a sweep's samples are skipped.

use super::{Hf, Lf, Sums, Sweeps, load_row};

impl Sweeps for Hf {
    /// Lines 0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 13, 14 and 15, rows top to bottom.
    #[inline(always)]
    unsafe fn down(acc: &mut Sums, first: *const f32, stride: u32) {
        // Row 0 (dy -4): lines 1, 4, 5, 14 and 15.
        // SAFETY: the caller's contract.
        let row = unsafe { load_row(first, stride, 0) };
        acc[0][1] += row[1].0[0];
        acc[1][1] += row[1].0[1];
        acc[2][1] += row[1].0[2];
        acc[3][1] += row[1].0[3];
        acc[0][4] += row[1].0[1];
        acc[1][4] += row[1].0[2];
        acc[2][4] += row[1].0[3];
        acc[3][4] += row[2].0[0];
        acc[0][5] += row[0].0[3];
        acc[1][5] += row[1].0[0];
        acc[2][5] += row[1].0[1];
        acc[3][5] += row[1].0[2];
        acc[0][14] += row[0].0[3];
        acc[1][14] += row[1].0[0];
        acc[2][14] += row[1].0[1];
        acc[3][14] += row[1].0[2];
        acc[0][15] += row[1].0[1];
        acc[1][15] += row[1].0[2];
        acc[2][15] += row[1].0[3];
        acc[3][15] += row[2].0[0];

        // Row 1 (dy -3): lines 1, 2, 3, 4, 5, 8, 9, 14 and 15.
        // SAFETY: the caller's contract.
        let row = unsafe { load_row(first, stride, 1) };
        acc[0][1] += row[1].0[0];
        acc[1][1] += row[1].0[1];
        acc[2][1] += row[1].0[2];
        acc[3][1] += row[1].0[3];
        acc[0][2] += row[0].0[1];
        acc[1][2] += row[0].0[2];
        acc[2][2] += row[0].0[3];
        acc[3][2] += row[1].0[0];
        acc[0][3] += row[1].0[3];
        acc[1][3] += row[2].0[0];
        acc[2][3] += row[2].0[1];
        acc[3][3] += row[2].0[2];
        acc[0][4] += row[1].0[1];
        acc[1][4] += row[1].0[2];
        acc[2][4] += row[1].0[3];
        acc[3][4] += row[2].0[0];
        acc[0][5] += row[0].0[3];
        acc[1][5] += row[1].0[0];
        acc[2][5] += row[1].0[1];
        acc[3][5] += row[1].0[2];
        acc[0][8] += row[0].0[2];
        acc[1][8] += row[0].0[3];
        acc[2][8] += row[1].0[0];
        acc[3][8] += row[1].0[1];
        acc[0][9] += row[1].0[2];
        acc[1][9] += row[1].0[3];
        acc[2][9] += row[2].0[0];
        acc[3][9] += row[2].0[1];
        acc[0][14] += row[0].0[3];
        acc[1][14] += row[1].0[0];
        acc[2][14] += row[1].0[1];
        acc[3][14] += row[1].0[2];
        acc[0][15] += row[1].0[1];
        acc[1][15] += row[1].0[2];
        acc[2][15] += row[1].0[3];
        acc[3][15] += row[2].0[0];

        // Row 2 (dy -2): lines 1, 2, 3, 4, 5, 8, 9, 10, 11, 14 and 15.
        // SAFETY: the caller's contract.
        let row = unsafe { load_row(first, stride, 2) };
        acc[0][1] += row[1].0[0];
        acc[1][1] += row[1].0[1];
        acc[2][1] += row[1].0[2];
        acc[3][1] += row[1].0[3];
        acc[0][2] += row[0].0[2];
        acc[1][2] += row[0].0[3];
        acc[2][2] += row[1].0[0];
        acc[3][2] += row[1].0[1];
        acc[0][3] += row[1].0[2];
        acc[1][3] += row[1].0[3];
        acc[2][3] += row[2].0[0];
        acc[3][3] += row[2].0[1];
        acc[0][4] += row[1].0[1];
        acc[1][4] += row[1].0[2];
        acc[2][4] += row[1].0[3];
        acc[3][4] += row[2].0[0];
        acc[0][5] += row[0].0[3];
        acc[1][5] += row[1].0[0];
        acc[2][5] += row[1].0[1];
        acc[3][5] += row[1].0[2];
        acc[0][8] += row[0].0[3];
        acc[1][8] += row[1].0[0];
        acc[2][8] += row[1].0[1];
        acc[3][8] += row[1].0[2];
        acc[0][9] += row[1].0[1];
        acc[1][9] += row[1].0[2];
        acc[2][9] += row[1].0[3];
        acc[3][9] += row[2].0[0];
        acc[0][10] += row[0].0[1];
        acc[1][10] += row[0].0[2];
        acc[2][10] += row[0].0[3];
        acc[3][10] += row[1].0[0];
        acc[0][11] += row[1].0[3];
        acc[1][11] += row[2].0[0];
        acc[2][11] += row[2].0[1];
        acc[3][11] += row[2].0[2];
        acc[0][14] += row[0].0[3];
        acc[1][14] += row[1].0[0];
        acc[2][14] += row[1].0[1];
        acc[3][14] += row[1].0[2];
        acc[0][15] += row[1].0[1];
        acc[1][15] += row[1].0[2];
        acc[2][15] += row[1].0[3];
        acc[3][15] += row[2].0[0];

        // Row 3 (dy -1): lines 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 13, 14 and 15.
        // SAFETY: the caller's contract.
        let row = unsafe { load_row(first, stride, 3) };
        acc[0][1] += row[1].0[0];
        acc[1][1] += row[1].0[1];
        acc[2][1] += row[1].0[2];
        acc[3][1] += row[1].0[3];
        acc[0][2] += row[0].0[3];
        acc[1][2] += row[1].0[0];
        acc[2][2] += row[1].0[1];
        acc[3][2] += row[1].0[2];
        acc[0][3] += row[1].0[1];
        acc[1][3] += row[1].0[2];
        acc[2][3] += row[1].0[3];
        acc[3][3] += row[2].0[0];
        acc[0][4] += row[1].0[0];
        acc[1][4] += row[1].0[1];
        acc[2][4] += row[1].0[2];
        acc[3][4] += row[1].0[3];
        acc[0][5] += row[1].0[0];
        acc[1][5] += row[1].0[1];
        acc[2][5] += row[1].0[2];
        acc[3][5] += row[1].0[3];
        acc[0][6] += row[0].0[0];
        acc[1][6] += row[0].0[1];
        acc[2][6] += row[0].0[2];
        acc[3][6] += row[0].0[3];
        acc[0][6] += row[0].0[1];
        acc[1][6] += row[0].0[2];
        acc[2][6] += row[0].0[3];
        acc[3][6] += row[1].0[0];
        acc[0][6] += row[0].0[2];
        acc[1][6] += row[0].0[3];
        acc[2][6] += row[1].0[0];
        acc[3][6] += row[1].0[1];
        acc[0][8] += row[0].0[3];
        acc[1][8] += row[1].0[0];
        acc[2][8] += row[1].0[1];
        acc[3][8] += row[1].0[2];
        acc[0][9] += row[1].0[1];
        acc[1][9] += row[1].0[2];
        acc[2][9] += row[1].0[3];
        acc[3][9] += row[2].0[0];
        acc[0][10] += row[0].0[2];
        acc[1][10] += row[0].0[3];
        acc[2][10] += row[1].0[0];
        acc[3][10] += row[1].0[1];
        acc[0][10] += row[0].0[3];
        acc[1][10] += row[1].0[0];
        acc[2][10] += row[1].0[1];
        acc[3][10] += row[1].0[2];
        acc[0][11] += row[1].0[2];
        acc[1][11] += row[1].0[3];
        acc[2][11] += row[2].0[0];
        acc[3][11] += row[2].0[1];
        acc[0][11] += row[1].0[1];
        acc[1][11] += row[1].0[2];
        acc[2][11] += row[1].0[3];
        acc[3][11] += row[2].0[0];
        acc[0][13] += row[0].0[0];
        acc[1][13] += row[0].0[1];
        acc[2][13] += row[0].0[2];
        acc[3][13] += row[0].0[3];
        acc[0][13] += row[0].0[1];
        acc[1][13] += row[0].0[2];
        acc[2][13] += row[0].0[3];
        acc[3][13] += row[1].0[0];
        acc[0][13] += row[0].0[2];
        acc[1][13] += row[0].0[3];
        acc[2][13] += row[1].0[0];
        acc[3][13] += row[1].0[1];
        acc[0][14] += row[1].0[0];
        acc[1][14] += row[1].0[1];
        acc[2][14] += row[1].0[2];
        acc[3][14] += row[1].0[3];
        acc[0][15] += row[1].0[0];
        acc[1][15] += row[1].0[1];
        acc[2][15] += row[1].0[2];
        acc[3][15] += row[1].0[3];

        // Row 4 (dy 0): lines 0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 13, 14 and 15.
        // SAFETY: the caller's contract.
        let row = unsafe { load_row(first, stride, 4) };
        acc[0][0] += row[0].0[0];
        acc[1][0] += row[0].0[1];
        acc[2][0] += row[0].0[2];
        acc[3][0] += row[0].0[3];
        acc[0][0] += row[0].0[1];
        acc[1][0] += row[0].0[2];
        acc[2][0] += row[0].0[3];
        acc[3][0] += row[1].0[0];
        acc[0][0] += row[0].0[2];
        acc[1][0] += row[0].0[3];
        acc[2][0] += row[1].0[0];
        acc[3][0] += row[1].0[1];
        acc[0][0] += row[0].0[3];
        acc[1][0] += row[1].0[0];
        acc[2][0] += row[1].0[1];
        acc[3][0] += row[1].0[2];
        acc[0][0] += row[1].0[0];
        acc[1][0] += row[1].0[1];
        acc[2][0] += row[1].0[2];
        acc[3][0] += row[1].0[3];
        acc[0][0] += row[1].0[1];
        acc[1][0] += row[1].0[2];
        acc[2][0] += row[1].0[3];
        acc[3][0] += row[2].0[0];
        acc[0][0] += row[1].0[2];
        acc[1][0] += row[1].0[3];
        acc[2][0] += row[2].0[0];
        acc[3][0] += row[2].0[1];
        acc[0][0] += row[1].0[3];
        acc[1][0] += row[2].0[0];
        acc[2][0] += row[2].0[1];
        acc[3][0] += row[2].0[2];
        acc[0][0] += row[2].0[0];
        acc[1][0] += row[2].0[1];
        acc[2][0] += row[2].0[2];
        acc[3][0] += row[2].0[3];
        acc[0][1] += row[1].0[0];
        acc[1][1] += row[1].0[1];
        acc[2][1] += row[1].0[2];
        acc[3][1] += row[1].0[3];
        acc[0][2] += row[1].0[0];
        acc[1][2] += row[1].0[1];
        acc[2][2] += row[1].0[2];
        acc[3][2] += row[1].0[3];
        acc[0][3] += row[1].0[0];
        acc[1][3] += row[1].0[1];
        acc[2][3] += row[1].0[2];
        acc[3][3] += row[1].0[3];
        acc[0][4] += row[1].0[0];
        acc[1][4] += row[1].0[1];
        acc[2][4] += row[1].0[2];
        acc[3][4] += row[1].0[3];
        acc[0][5] += row[1].0[0];
        acc[1][5] += row[1].0[1];
        acc[2][5] += row[1].0[2];
        acc[3][5] += row[1].0[3];
        acc[0][6] += row[0].0[3];
        acc[1][6] += row[1].0[0];
        acc[2][6] += row[1].0[1];
        acc[3][6] += row[1].0[2];
        acc[0][6] += row[1].0[0];
        acc[1][6] += row[1].0[1];
        acc[2][6] += row[1].0[2];
        acc[3][6] += row[1].0[3];
        acc[0][6] += row[1].0[1];
        acc[1][6] += row[1].0[2];
        acc[2][6] += row[1].0[3];
        acc[3][6] += row[2].0[0];
        acc[0][8] += row[1].0[0];
        acc[1][8] += row[1].0[1];
        acc[2][8] += row[1].0[2];
        acc[3][8] += row[1].0[3];
        acc[0][9] += row[1].0[0];
        acc[1][9] += row[1].0[1];
        acc[2][9] += row[1].0[2];
        acc[3][9] += row[1].0[3];
        acc[0][10] += row[1].0[0];
        acc[1][10] += row[1].0[1];
        acc[2][10] += row[1].0[2];
        acc[3][10] += row[1].0[3];
        acc[0][11] += row[1].0[0];
        acc[1][11] += row[1].0[1];
        acc[2][11] += row[1].0[2];
        acc[3][11] += row[1].0[3];
        acc[0][13] += row[0].0[3];
        acc[1][13] += row[1].0[0];
        acc[2][13] += row[1].0[1];
        acc[3][13] += row[1].0[2];
        acc[0][13] += row[1].0[0];
        acc[1][13] += row[1].0[1];
        acc[2][13] += row[1].0[2];
        acc[3][13] += row[1].0[3];
        acc[0][13] += row[1].0[1];
        acc[1][13] += row[1].0[2];
        acc[2][13] += row[1].0[3];
        acc[3][13] += row[2].0[0];
        acc[0][14] += row[1].0[0];
        acc[1][14] += row[1].0[1];
        acc[2][14] += row[1].0[2];
        acc[3][14] += row[1].0[3];
        acc[0][15] += row[1].0[0];
        acc[1][15] += row[1].0[1];
        acc[2][15] += row[1].0[2];
        acc[3][15] += row[1].0[3];

        // Row 5 (dy 1): lines 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 13, 14 and 15.
        // SAFETY: the caller's contract.
        let row = unsafe { load_row(first, stride, 5) };
        acc[0][1] += row[1].0[0];
        acc[1][1] += row[1].0[1];
        acc[2][1] += row[1].0[2];
        acc[3][1] += row[1].0[3];
        acc[0][2] += row[1].0[1];
        acc[1][2] += row[1].0[2];
        acc[2][2] += row[1].0[3];
        acc[3][2] += row[2].0[0];
        acc[0][3] += row[0].0[3];
        acc[1][3] += row[1].0[0];
        acc[2][3] += row[1].0[1];
        acc[3][3] += row[1].0[2];
        acc[0][4] += row[1].0[0];
        acc[1][4] += row[1].0[1];
        acc[2][4] += row[1].0[2];
        acc[3][4] += row[1].0[3];
        acc[0][5] += row[1].0[0];
        acc[1][5] += row[1].0[1];
        acc[2][5] += row[1].0[2];
        acc[3][5] += row[1].0[3];
        acc[0][6] += row[1].0[2];
        acc[1][6] += row[1].0[3];
        acc[2][6] += row[2].0[0];
        acc[3][6] += row[2].0[1];
        acc[0][6] += row[1].0[3];
        acc[1][6] += row[2].0[0];
        acc[2][6] += row[2].0[1];
        acc[3][6] += row[2].0[2];
        acc[0][6] += row[2].0[0];
        acc[1][6] += row[2].0[1];
        acc[2][6] += row[2].0[2];
        acc[3][6] += row[2].0[3];
        acc[0][8] += row[1].0[1];
        acc[1][8] += row[1].0[2];
        acc[2][8] += row[1].0[3];
        acc[3][8] += row[2].0[0];
        acc[0][9] += row[0].0[3];
        acc[1][9] += row[1].0[0];
        acc[2][9] += row[1].0[1];
        acc[3][9] += row[1].0[2];
        acc[0][10] += row[1].0[1];
        acc[1][10] += row[1].0[2];
        acc[2][10] += row[1].0[3];
        acc[3][10] += row[2].0[0];
        acc[0][10] += row[1].0[2];
        acc[1][10] += row[1].0[3];
        acc[2][10] += row[2].0[0];
        acc[3][10] += row[2].0[1];
        acc[0][11] += row[0].0[3];
        acc[1][11] += row[1].0[0];
        acc[2][11] += row[1].0[1];
        acc[3][11] += row[1].0[2];
        acc[0][11] += row[0].0[2];
        acc[1][11] += row[0].0[3];
        acc[2][11] += row[1].0[0];
        acc[3][11] += row[1].0[1];
        acc[0][13] += row[1].0[2];
        acc[1][13] += row[1].0[3];
        acc[2][13] += row[2].0[0];
        acc[3][13] += row[2].0[1];
        acc[0][13] += row[1].0[3];
        acc[1][13] += row[2].0[0];
        acc[2][13] += row[2].0[1];
        acc[3][13] += row[2].0[2];
        acc[0][13] += row[2].0[0];
        acc[1][13] += row[2].0[1];
        acc[2][13] += row[2].0[2];
        acc[3][13] += row[2].0[3];
        acc[0][14] += row[1].0[0];
        acc[1][14] += row[1].0[1];
        acc[2][14] += row[1].0[2];
        acc[3][14] += row[1].0[3];
        acc[0][15] += row[1].0[0];
        acc[1][15] += row[1].0[1];
        acc[2][15] += row[1].0[2];
        acc[3][15] += row[1].0[3];

        // Row 6 (dy 2): lines 1, 2, 3, 4, 5, 8, 9, 10, 11, 14 and 15.
        // SAFETY: the caller's contract.
        let row = unsafe { load_row(first, stride, 6) };
        acc[0][1] += row[1].0[0];
        acc[1][1] += row[1].0[1];
        acc[2][1] += row[1].0[2];
        acc[3][1] += row[1].0[3];
        acc[0][2] += row[1].0[2];
        acc[1][2] += row[1].0[3];
        acc[2][2] += row[2].0[0];
        acc[3][2] += row[2].0[1];
        acc[0][3] += row[0].0[2];
        acc[1][3] += row[0].0[3];
        acc[2][3] += row[1].0[0];
        acc[3][3] += row[1].0[1];
        acc[0][4] += row[0].0[3];
        acc[1][4] += row[1].0[0];
        acc[2][4] += row[1].0[1];
        acc[3][4] += row[1].0[2];
        acc[0][5] += row[1].0[1];
        acc[1][5] += row[1].0[2];
        acc[2][5] += row[1].0[3];
        acc[3][5] += row[2].0[0];
        acc[0][8] += row[1].0[1];
        acc[1][8] += row[1].0[2];
        acc[2][8] += row[1].0[3];
        acc[3][8] += row[2].0[0];
        acc[0][9] += row[0].0[3];
        acc[1][9] += row[1].0[0];
        acc[2][9] += row[1].0[1];
        acc[3][9] += row[1].0[2];
        acc[0][10] += row[1].0[3];
        acc[1][10] += row[2].0[0];
        acc[2][10] += row[2].0[1];
        acc[3][10] += row[2].0[2];
        acc[0][11] += row[0].0[1];
        acc[1][11] += row[0].0[2];
        acc[2][11] += row[0].0[3];
        acc[3][11] += row[1].0[0];
        acc[0][14] += row[1].0[1];
        acc[1][14] += row[1].0[2];
        acc[2][14] += row[1].0[3];
        acc[3][14] += row[2].0[0];
        acc[0][15] += row[0].0[3];
        acc[1][15] += row[1].0[0];
        acc[2][15] += row[1].0[1];
        acc[3][15] += row[1].0[2];

        // Row 7 (dy 3): lines 1, 2, 3, 4, 5, 8, 9, 14 and 15.
        // SAFETY: the caller's contract.
        let row = unsafe { load_row(first, stride, 7) };
        acc[0][1] += row[1].0[0];
        acc[1][1] += row[1].0[1];
        acc[2][1] += row[1].0[2];
        acc[3][1] += row[1].0[3];
        acc[0][2] += row[1].0[3];
        acc[1][2] += row[2].0[0];
        acc[2][2] += row[2].0[1];
        acc[3][2] += row[2].0[2];
        acc[0][3] += row[0].0[1];
        acc[1][3] += row[0].0[2];
        acc[2][3] += row[0].0[3];
        acc[3][3] += row[1].0[0];
        acc[0][4] += row[0].0[3];
        acc[1][4] += row[1].0[0];
        acc[2][4] += row[1].0[1];
        acc[3][4] += row[1].0[2];
        acc[0][5] += row[1].0[1];
        acc[1][5] += row[1].0[2];
        acc[2][5] += row[1].0[3];
        acc[3][5] += row[2].0[0];
        acc[0][8] += row[1].0[2];
        acc[1][8] += row[1].0[3];
        acc[2][8] += row[2].0[0];
        acc[3][8] += row[2].0[1];
        acc[0][9] += row[0].0[2];
        acc[1][9] += row[0].0[3];
        acc[2][9] += row[1].0[0];
        acc[3][9] += row[1].0[1];
        acc[0][14] += row[1].0[1];
        acc[1][14] += row[1].0[2];
        acc[2][14] += row[1].0[3];
        acc[3][14] += row[2].0[0];
        acc[0][15] += row[0].0[3];
        acc[1][15] += row[1].0[0];
        acc[2][15] += row[1].0[1];
        acc[3][15] += row[1].0[2];

        // Row 8 (dy 4): lines 1, 4, 5, 14 and 15.
        // SAFETY: the caller's contract.
        let row = unsafe { load_row(first, stride, 8) };
        acc[0][1] += row[1].0[0];
        acc[1][1] += row[1].0[1];
        acc[2][1] += row[1].0[2];
        acc[3][1] += row[1].0[3];
        acc[0][4] += row[0].0[3];
        acc[1][4] += row[1].0[0];
        acc[2][4] += row[1].0[1];
        acc[3][4] += row[1].0[2];
        acc[0][5] += row[1].0[1];
        acc[1][5] += row[1].0[2];
        acc[2][5] += row[1].0[3];
        acc[3][5] += row[2].0[0];
        acc[0][14] += row[1].0[1];
        acc[1][14] += row[1].0[2];
        acc[2][14] += row[1].0[3];
        acc[3][14] += row[2].0[0];
        acc[0][15] += row[0].0[3];
        acc[1][15] += row[1].0[0];
        acc[2][15] += row[1].0[1];
        acc[3][15] += row[1].0[2];
    }

    /// Lines 7 and 12, rows bottom to top.
    #[inline(always)]
    unsafe fn up(acc: &mut Sums, first: *const f32, stride: u32) {
        // Row 5 (dy 1): lines 7 and 12.
        // SAFETY: the caller's contract.
        let row = unsafe { load_row(first, stride, 5) };
        acc[0][7] += row[0].0[0];
        acc[1][7] += row[0].0[1];
        acc[2][7] += row[0].0[2];
        acc[3][7] += row[0].0[3];
        acc[0][7] += row[0].0[1];
        acc[1][7] += row[0].0[2];
        acc[2][7] += row[0].0[3];
        acc[3][7] += row[1].0[0];
        acc[0][7] += row[0].0[2];
        acc[1][7] += row[0].0[3];
        acc[2][7] += row[1].0[0];
        acc[3][7] += row[1].0[1];
        acc[0][12] += row[0].0[0];
        acc[1][12] += row[0].0[1];
        acc[2][12] += row[0].0[2];
        acc[3][12] += row[0].0[3];
        acc[0][12] += row[0].0[1];
        acc[1][12] += row[0].0[2];
        acc[2][12] += row[0].0[3];
        acc[3][12] += row[1].0[0];
        acc[0][12] += row[0].0[2];
        acc[1][12] += row[0].0[3];
        acc[2][12] += row[1].0[0];
        acc[3][12] += row[1].0[1];

        // Row 4 (dy 0): lines 7 and 12.
        // SAFETY: the caller's contract.
        let row = unsafe { load_row(first, stride, 4) };
        acc[0][7] += row[0].0[3];
        acc[1][7] += row[1].0[0];
        acc[2][7] += row[1].0[1];
        acc[3][7] += row[1].0[2];
        acc[0][7] += row[1].0[0];
        acc[1][7] += row[1].0[1];
        acc[2][7] += row[1].0[2];
        acc[3][7] += row[1].0[3];
        acc[0][7] += row[1].0[1];
        acc[1][7] += row[1].0[2];
        acc[2][7] += row[1].0[3];
        acc[3][7] += row[2].0[0];
        acc[0][12] += row[0].0[3];
        acc[1][12] += row[1].0[0];
        acc[2][12] += row[1].0[1];
        acc[3][12] += row[1].0[2];
        acc[0][12] += row[1].0[0];
        acc[1][12] += row[1].0[1];
        acc[2][12] += row[1].0[2];
        acc[3][12] += row[1].0[3];
        acc[0][12] += row[1].0[1];
        acc[1][12] += row[1].0[2];
        acc[2][12] += row[1].0[3];
        acc[3][12] += row[2].0[0];

        // Row 3 (dy -1): lines 7 and 12.
        // SAFETY: the caller's contract.
        let row = unsafe { load_row(first, stride, 3) };
        acc[0][7] += row[1].0[2];
        acc[1][7] += row[1].0[3];
        acc[2][7] += row[2].0[0];
        acc[3][7] += row[2].0[1];
        acc[0][7] += row[1].0[3];
        acc[1][7] += row[2].0[0];
        acc[2][7] += row[2].0[1];
        acc[3][7] += row[2].0[2];
        acc[0][7] += row[2].0[0];
        acc[1][7] += row[2].0[1];
        acc[2][7] += row[2].0[2];
        acc[3][7] += row[2].0[3];
        acc[0][12] += row[1].0[2];
        acc[1][12] += row[1].0[3];
        acc[2][12] += row[2].0[0];
        acc[3][12] += row[2].0[1];
        acc[0][12] += row[1].0[3];
        acc[1][12] += row[2].0[0];
        acc[2][12] += row[2].0[1];
        acc[3][12] += row[2].0[2];
        acc[0][12] += row[2].0[0];
        acc[1][12] += row[2].0[1];
        acc[2][12] += row[2].0[2];
        acc[3][12] += row[2].0[3];
    }
}

impl Sweeps for Lf {
    /// Lines 0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 13, 14 and 15, rows top to bottom.
    #[inline(always)]
    unsafe fn down(acc: &mut Sums, first: *const f32, stride: u32) {
        // Row 0 (dy -4): lines 1, 4, 5, 14 and 15.
        // SAFETY: the caller's contract.
        let row = unsafe { load_row(first, stride, 0) };
        acc[0][1] += row[1].0[0];
        acc[1][1] += row[1].0[1];
        acc[2][1] += row[1].0[2];
        acc[3][1] += row[1].0[3];
        acc[0][4] += row[1].0[1];
        acc[1][4] += row[1].0[2];
        acc[2][4] += row[1].0[3];
        acc[3][4] += row[2].0[0];
        acc[0][5] += row[0].0[3];
        acc[1][5] += row[1].0[0];
        acc[2][5] += row[1].0[1];
        acc[3][5] += row[1].0[2];
        acc[0][14] += row[0].0[2];
        acc[1][14] += row[0].0[3];
        acc[2][14] += row[1].0[0];
        acc[3][14] += row[1].0[1];
        acc[0][15] += row[1].0[2];
        acc[1][15] += row[1].0[3];
        acc[2][15] += row[2].0[0];
        acc[3][15] += row[2].0[1];

        // Row 1 (dy -3): lines 2, 3, 8 and 9.
        // SAFETY: the caller's contract.
        let row = unsafe { load_row(first, stride, 1) };
        acc[0][2] += row[0].0[1];
        acc[1][2] += row[0].0[2];
        acc[2][2] += row[0].0[3];
        acc[3][2] += row[1].0[0];
        acc[0][3] += row[1].0[3];
        acc[1][3] += row[2].0[0];
        acc[2][3] += row[2].0[1];
        acc[3][3] += row[2].0[2];
        acc[0][8] += row[0].0[2];
        acc[1][8] += row[0].0[3];
        acc[2][8] += row[1].0[0];
        acc[3][8] += row[1].0[1];
        acc[0][9] += row[1].0[2];
        acc[1][9] += row[1].0[3];
        acc[2][9] += row[2].0[0];
        acc[3][9] += row[2].0[1];

        // Row 2 (dy -2): lines 1, 2, 3, 4, 5, 8, 9, 10, 11, 13, 14 and 15.
        // SAFETY: the caller's contract.
        let row = unsafe { load_row(first, stride, 2) };
        acc[0][1] += row[1].0[0];
        acc[1][1] += row[1].0[1];
        acc[2][1] += row[1].0[2];
        acc[3][1] += row[1].0[3];
        acc[0][2] += row[0].0[2];
        acc[1][2] += row[0].0[3];
        acc[2][2] += row[1].0[0];
        acc[3][2] += row[1].0[1];
        acc[0][3] += row[1].0[2];
        acc[1][3] += row[1].0[3];
        acc[2][3] += row[2].0[0];
        acc[3][3] += row[2].0[1];
        acc[0][4] += row[1].0[1];
        acc[1][4] += row[1].0[2];
        acc[2][4] += row[1].0[3];
        acc[3][4] += row[2].0[0];
        acc[0][5] += row[0].0[3];
        acc[1][5] += row[1].0[0];
        acc[2][5] += row[1].0[1];
        acc[3][5] += row[1].0[2];
        acc[0][8] += row[0].0[3];
        acc[1][8] += row[1].0[0];
        acc[2][8] += row[1].0[1];
        acc[3][8] += row[1].0[2];
        acc[0][9] += row[1].0[1];
        acc[1][9] += row[1].0[2];
        acc[2][9] += row[1].0[3];
        acc[3][9] += row[2].0[0];
        acc[0][10] += row[0].0[1];
        acc[1][10] += row[0].0[2];
        acc[2][10] += row[0].0[3];
        acc[3][10] += row[1].0[0];
        acc[0][11] += row[1].0[3];
        acc[1][11] += row[2].0[0];
        acc[2][11] += row[2].0[1];
        acc[3][11] += row[2].0[2];
        acc[0][13] += row[0].0[0];
        acc[1][13] += row[0].0[1];
        acc[2][13] += row[0].0[2];
        acc[3][13] += row[0].0[3];
        acc[0][14] += row[0].0[3];
        acc[1][14] += row[1].0[0];
        acc[2][14] += row[1].0[1];
        acc[3][14] += row[1].0[2];
        acc[0][15] += row[1].0[1];
        acc[1][15] += row[1].0[2];
        acc[2][15] += row[1].0[3];
        acc[3][15] += row[2].0[0];

        // Row 3 (dy -1): lines 6, 10, 11 and 13.
        // SAFETY: the caller's contract.
        let row = unsafe { load_row(first, stride, 3) };
        acc[0][6] += row[0].0[0];
        acc[1][6] += row[0].0[1];
        acc[2][6] += row[0].0[2];
        acc[3][6] += row[0].0[3];
        acc[0][6] += row[0].0[2];
        acc[1][6] += row[0].0[3];
        acc[2][6] += row[1].0[0];
        acc[3][6] += row[1].0[1];
        acc[0][10] += row[0].0[2];
        acc[1][10] += row[0].0[3];
        acc[2][10] += row[1].0[0];
        acc[3][10] += row[1].0[1];
        acc[0][11] += row[1].0[2];
        acc[1][11] += row[1].0[3];
        acc[2][11] += row[2].0[0];
        acc[3][11] += row[2].0[1];
        acc[0][13] += row[0].0[2];
        acc[1][13] += row[0].0[3];
        acc[2][13] += row[1].0[0];
        acc[3][13] += row[1].0[1];

        // Row 4 (dy 0): lines 0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 13, 14 and 15.
        // SAFETY: the caller's contract.
        let row = unsafe { load_row(first, stride, 4) };
        acc[0][0] += row[0].0[0];
        acc[1][0] += row[0].0[1];
        acc[2][0] += row[0].0[2];
        acc[3][0] += row[0].0[3];
        acc[0][0] += row[0].0[2];
        acc[1][0] += row[0].0[3];
        acc[2][0] += row[1].0[0];
        acc[3][0] += row[1].0[1];
        acc[0][0] += row[1].0[0];
        acc[1][0] += row[1].0[1];
        acc[2][0] += row[1].0[2];
        acc[3][0] += row[1].0[3];
        acc[0][0] += row[1].0[2];
        acc[1][0] += row[1].0[3];
        acc[2][0] += row[2].0[0];
        acc[3][0] += row[2].0[1];
        acc[0][0] += row[2].0[0];
        acc[1][0] += row[2].0[1];
        acc[2][0] += row[2].0[2];
        acc[3][0] += row[2].0[3];
        acc[0][1] += row[1].0[0];
        acc[1][1] += row[1].0[1];
        acc[2][1] += row[1].0[2];
        acc[3][1] += row[1].0[3];
        acc[0][2] += row[1].0[0];
        acc[1][2] += row[1].0[1];
        acc[2][2] += row[1].0[2];
        acc[3][2] += row[1].0[3];
        acc[0][3] += row[1].0[0];
        acc[1][3] += row[1].0[1];
        acc[2][3] += row[1].0[2];
        acc[3][3] += row[1].0[3];
        acc[0][4] += row[1].0[0];
        acc[1][4] += row[1].0[1];
        acc[2][4] += row[1].0[2];
        acc[3][4] += row[1].0[3];
        acc[0][5] += row[1].0[0];
        acc[1][5] += row[1].0[1];
        acc[2][5] += row[1].0[2];
        acc[3][5] += row[1].0[3];
        acc[0][6] += row[1].0[0];
        acc[1][6] += row[1].0[1];
        acc[2][6] += row[1].0[2];
        acc[3][6] += row[1].0[3];
        acc[0][8] += row[1].0[0];
        acc[1][8] += row[1].0[1];
        acc[2][8] += row[1].0[2];
        acc[3][8] += row[1].0[3];
        acc[0][9] += row[1].0[0];
        acc[1][9] += row[1].0[1];
        acc[2][9] += row[1].0[2];
        acc[3][9] += row[1].0[3];
        acc[0][10] += row[1].0[0];
        acc[1][10] += row[1].0[1];
        acc[2][10] += row[1].0[2];
        acc[3][10] += row[1].0[3];
        acc[0][11] += row[1].0[0];
        acc[1][11] += row[1].0[1];
        acc[2][11] += row[1].0[2];
        acc[3][11] += row[1].0[3];
        acc[0][13] += row[1].0[0];
        acc[1][13] += row[1].0[1];
        acc[2][13] += row[1].0[2];
        acc[3][13] += row[1].0[3];
        acc[0][14] += row[1].0[0];
        acc[1][14] += row[1].0[1];
        acc[2][14] += row[1].0[2];
        acc[3][14] += row[1].0[3];
        acc[0][15] += row[1].0[0];
        acc[1][15] += row[1].0[1];
        acc[2][15] += row[1].0[2];
        acc[3][15] += row[1].0[3];

        // Row 5 (dy 1): lines 6, 10, 11 and 13.
        // SAFETY: the caller's contract.
        let row = unsafe { load_row(first, stride, 5) };
        acc[0][6] += row[1].0[2];
        acc[1][6] += row[1].0[3];
        acc[2][6] += row[2].0[0];
        acc[3][6] += row[2].0[1];
        acc[0][6] += row[2].0[0];
        acc[1][6] += row[2].0[1];
        acc[2][6] += row[2].0[2];
        acc[3][6] += row[2].0[3];
        acc[0][10] += row[1].0[2];
        acc[1][10] += row[1].0[3];
        acc[2][10] += row[2].0[0];
        acc[3][10] += row[2].0[1];
        acc[0][11] += row[0].0[2];
        acc[1][11] += row[0].0[3];
        acc[2][11] += row[1].0[0];
        acc[3][11] += row[1].0[1];
        acc[0][13] += row[1].0[2];
        acc[1][13] += row[1].0[3];
        acc[2][13] += row[2].0[0];
        acc[3][13] += row[2].0[1];

        // Row 6 (dy 2): lines 1, 2, 3, 4, 5, 8, 9, 10, 11, 13, 14 and 15.
        // SAFETY: the caller's contract.
        let row = unsafe { load_row(first, stride, 6) };
        acc[0][1] += row[1].0[0];
        acc[1][1] += row[1].0[1];
        acc[2][1] += row[1].0[2];
        acc[3][1] += row[1].0[3];
        acc[0][2] += row[1].0[2];
        acc[1][2] += row[1].0[3];
        acc[2][2] += row[2].0[0];
        acc[3][2] += row[2].0[1];
        acc[0][3] += row[0].0[2];
        acc[1][3] += row[0].0[3];
        acc[2][3] += row[1].0[0];
        acc[3][3] += row[1].0[1];
        acc[0][4] += row[0].0[3];
        acc[1][4] += row[1].0[0];
        acc[2][4] += row[1].0[1];
        acc[3][4] += row[1].0[2];
        acc[0][5] += row[1].0[1];
        acc[1][5] += row[1].0[2];
        acc[2][5] += row[1].0[3];
        acc[3][5] += row[2].0[0];
        acc[0][8] += row[1].0[1];
        acc[1][8] += row[1].0[2];
        acc[2][8] += row[1].0[3];
        acc[3][8] += row[2].0[0];
        acc[0][9] += row[0].0[3];
        acc[1][9] += row[1].0[0];
        acc[2][9] += row[1].0[1];
        acc[3][9] += row[1].0[2];
        acc[0][10] += row[1].0[3];
        acc[1][10] += row[2].0[0];
        acc[2][10] += row[2].0[1];
        acc[3][10] += row[2].0[2];
        acc[0][11] += row[0].0[1];
        acc[1][11] += row[0].0[2];
        acc[2][11] += row[0].0[3];
        acc[3][11] += row[1].0[0];
        acc[0][13] += row[2].0[0];
        acc[1][13] += row[2].0[1];
        acc[2][13] += row[2].0[2];
        acc[3][13] += row[2].0[3];
        acc[0][14] += row[1].0[1];
        acc[1][14] += row[1].0[2];
        acc[2][14] += row[1].0[3];
        acc[3][14] += row[2].0[0];
        acc[0][15] += row[0].0[3];
        acc[1][15] += row[1].0[0];
        acc[2][15] += row[1].0[1];
        acc[3][15] += row[1].0[2];

        // Row 7 (dy 3): lines 2, 3, 8 and 9.
        // SAFETY: the caller's contract.
        let row = unsafe { load_row(first, stride, 7) };
        acc[0][2] += row[1].0[3];
        acc[1][2] += row[2].0[0];
        acc[2][2] += row[2].0[1];
        acc[3][2] += row[2].0[2];
        acc[0][3] += row[0].0[1];
        acc[1][3] += row[0].0[2];
        acc[2][3] += row[0].0[3];
        acc[3][3] += row[1].0[0];
        acc[0][8] += row[1].0[2];
        acc[1][8] += row[1].0[3];
        acc[2][8] += row[2].0[0];
        acc[3][8] += row[2].0[1];
        acc[0][9] += row[0].0[2];
        acc[1][9] += row[0].0[3];
        acc[2][9] += row[1].0[0];
        acc[3][9] += row[1].0[1];

        // Row 8 (dy 4): lines 1, 4, 5, 14 and 15.
        // SAFETY: the caller's contract.
        let row = unsafe { load_row(first, stride, 8) };
        acc[0][1] += row[1].0[0];
        acc[1][1] += row[1].0[1];
        acc[2][1] += row[1].0[2];
        acc[3][1] += row[1].0[3];
        acc[0][4] += row[0].0[3];
        acc[1][4] += row[1].0[0];
        acc[2][4] += row[1].0[1];
        acc[3][4] += row[1].0[2];
        acc[0][5] += row[1].0[1];
        acc[1][5] += row[1].0[2];
        acc[2][5] += row[1].0[3];
        acc[3][5] += row[2].0[0];
        acc[0][14] += row[1].0[2];
        acc[1][14] += row[1].0[3];
        acc[2][14] += row[2].0[0];
        acc[3][14] += row[2].0[1];
        acc[0][15] += row[0].0[2];
        acc[1][15] += row[0].0[3];
        acc[2][15] += row[1].0[0];
        acc[3][15] += row[1].0[1];
    }

    /// Lines 7 and 12, rows bottom to top.
    #[inline(always)]
    unsafe fn up(acc: &mut Sums, first: *const f32, stride: u32) {
        // Row 6 (dy 2): line 12.
        // SAFETY: the caller's contract.
        let row = unsafe { load_row(first, stride, 6) };
        acc[0][12] += row[0].0[0];
        acc[1][12] += row[0].0[1];
        acc[2][12] += row[0].0[2];
        acc[3][12] += row[0].0[3];

        // Row 5 (dy 1): lines 7 and 12.
        // SAFETY: the caller's contract.
        let row = unsafe { load_row(first, stride, 5) };
        acc[0][7] += row[0].0[0];
        acc[1][7] += row[0].0[1];
        acc[2][7] += row[0].0[2];
        acc[3][7] += row[0].0[3];
        acc[0][7] += row[0].0[2];
        acc[1][7] += row[0].0[3];
        acc[2][7] += row[1].0[0];
        acc[3][7] += row[1].0[1];
        acc[0][12] += row[0].0[2];
        acc[1][12] += row[0].0[3];
        acc[2][12] += row[1].0[0];
        acc[3][12] += row[1].0[1];

        // Row 4 (dy 0): lines 7 and 12.
        // SAFETY: the caller's contract.
        let row = unsafe { load_row(first, stride, 4) };
        acc[0][7] += row[1].0[0];
        acc[1][7] += row[1].0[1];
        acc[2][7] += row[1].0[2];
        acc[3][7] += row[1].0[3];
        acc[0][12] += row[1].0[0];
        acc[1][12] += row[1].0[1];
        acc[2][12] += row[1].0[2];
        acc[3][12] += row[1].0[3];

        // Row 3 (dy -1): lines 7 and 12.
        // SAFETY: the caller's contract.
        let row = unsafe { load_row(first, stride, 3) };
        acc[0][7] += row[1].0[2];
        acc[1][7] += row[1].0[3];
        acc[2][7] += row[2].0[0];
        acc[3][7] += row[2].0[1];
        acc[0][7] += row[2].0[0];
        acc[1][7] += row[2].0[1];
        acc[2][7] += row[2].0[2];
        acc[3][7] += row[2].0[3];
        acc[0][12] += row[1].0[2];
        acc[1][12] += row[1].0[3];
        acc[2][12] += row[2].0[0];
        acc[3][12] += row[2].0[1];

        // Row 2 (dy -2): line 12.
        // SAFETY: the caller's contract.
        let row = unsafe { load_row(first, stride, 2) };
        acc[0][12] += row[2].0[0];
        acc[1][12] += row[2].0[1];
        acc[2][12] += row[2].0[2];
        acc[3][12] += row[2].0[3];
    }
}
