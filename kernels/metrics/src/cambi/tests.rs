use super::*;
use std::format;
use std::vec;
use std::vec::Vec;

/// libvmaf's reciprocal table: 1/n written with 9 significant digits, read back as f32.
fn recip() -> Vec<f32> {
    (0..RECIP_LEN)
        .map(|n| {
            if n == 0 {
                0.0
            } else {
                format!("{:.8e}", 1.0 / n as f64).parse().unwrap()
            }
        })
        .collect()
}

/// Contrast steps whose thresholds let every value count (no visibility limit).
fn open_contrast(recip: &[f32], diffs: u32) -> Contrast<'_> {
    let mut tvi = [0; MAX_DIFFS];
    tvi[..diffs as usize].fill(1019);
    let (band_base, band_size) = Contrast::band(0, 1019, diffs);
    Contrast {
        diffs,
        tvi,
        vlt: 0,
        band_base,
        band_size,
        recip,
    }
}

fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    }
}

#[test]
fn ten_bit_conversion_as_libvmaf() {
    assert_eq!(to_10bit(255, 8), 1020);
    assert_eq!(to_10bit(1, 8), 4);
    assert_eq!(to_10bit(1023, 10), 1023);
    assert_eq!(to_10bit(2049, 12), 512);
    assert_eq!(to_10bit(2050, 12), 513);
    assert_eq!(to_10bit(65535, 16), 1024);
    // Out-of-depth samples are clamped.
    assert_eq!(to_10bit(4000, 10), 1023);
}

#[test]
fn nearest_positions_are_the_identity_or_a_walk() {
    let mut p = [0u32; 5];
    nearest_positions(5, &mut p);
    assert_eq!(p, [0, 1, 2, 3, 4]);
    let mut p = [0u32; 4];
    nearest_positions(8, &mut p);
    assert_eq!(p, [1, 3, 5, 7]);
    // 1920 → 1280: ratio 1.5, start 0.25: 0.25, 1.75, 3.25, .. rounded half up.
    let mut p = [0u32; 1280];
    nearest_positions(1920, &mut p);
    assert_eq!(&p[..4], &[0, 2, 3, 5]);
    assert!(p.iter().all(|&i| i < 1920));
}

#[test]
fn mask_index_follows_the_frame_area() {
    // (w>>6)(h>>6) = 0 → ceil_log2 = 0: (49 − 33 − 1) / 2.
    assert_eq!(mask_index(63, 1000), 7);
    // 1920x1080: 30·16 = 480 → 9: (49 − 6 − 1) / 2.
    assert_eq!(mask_index(1920, 1080), 21);
    // 3840x2160: 60·33 = 1980 → 11.
    assert_eq!(mask_index(3840, 2160), 24);
    assert_eq!(mask_index(256, 216), 13);
}

#[test]
fn mode_of_three() {
    assert_eq!(mode3(5, 5, 1), 5);
    assert_eq!(mode3(1, 5, 5), 5);
    assert_eq!(mode3(5, 1, 5), 5);
    assert_eq!(mode3(3, 9, 2), 2);
}

/// The mode filter as libvmaf writes it: in place, row by row, with three line buffers.
fn mode_in_place(data: &mut [u16], w: usize, h: usize) {
    let mut buf = vec![0u16; 3 * w];
    let mut cur = 0;
    for i in 0..h {
        buf[cur * w] = data[i * w];
        for j in 1..w.saturating_sub(1) {
            buf[cur * w + j] = mode3(
                data[i * w + j - 1] as u32,
                data[i * w + j] as u32,
                data[i * w + j + 1] as u32,
            ) as u16;
        }
        buf[cur * w + w - 1] = data[i * w + w - 1];
        if i > 1 {
            for j in 0..w {
                data[(i - 1) * w + j] =
                    mode3(buf[j] as u32, buf[w + j] as u32, buf[2 * w + j] as u32) as u16;
            }
        }
        cur = (cur + 1) % 3;
    }
}

#[test]
fn mode_rows_equal_the_in_place_filter() {
    let mut r = rng(3);
    for (w, h) in [(1usize, 1usize), (2, 5), (7, 2), (9, 6), (16, 11)] {
        let src: Vec<u16> = (0..w * h).map(|_| (r() % 4) as u16).collect();
        let mut want = src.clone();
        mode_in_place(&mut want, w, h);
        let p = Plane16::new(src.as_ptr(), w as u32, w as u32, h as u32);
        let mut got = vec![0u16; w * h];
        for y in 0..h {
            unsafe { mode_row(&p, y as u32, got[y * w..].as_mut_ptr()) };
        }
        assert_eq!(got, want, "{w}x{h}");
    }
}

#[test]
fn anti_dithering_means_the_block_below_right() {
    let src: Vec<u16> = vec![0, 4, 8, 12, 16, 20];
    let p = Plane16::new(src.as_ptr(), 3, 3, 2);
    let mut out = [0u16; 6];
    for y in 0..2 {
        unsafe { anti_dither_row(&p, y, out[3 * y as usize..].as_mut_ptr()) };
    }
    assert_eq!(
        out,
        [
            (4 + 12 + 16) >> 2,
            (4 + 8 + 16 + 20) >> 2,
            (8 + 20) >> 1,
            14,
            18,
            20
        ]
    );
}

#[test]
fn the_mask_counts_flat_pixels_in_the_clipped_window() {
    let mut r = rng(5);
    let (w, h) = (13u32, 9u32);
    let flats: Vec<u8> = (0..w * h).map(|_| r().is_multiple_of(3) as u8).collect();
    for index in [0, 3, 7, 12] {
        for y in 0..h {
            let mut out = vec![0u16; w as usize];
            unsafe { mask_row(flats.as_ptr(), w, h, y, index, out.as_mut_ptr()) };
            for x in 0..w {
                let mut n = 0;
                for yy in y.saturating_sub(3)..(y + 4).min(h) {
                    for xx in x.saturating_sub(3)..(x + 4).min(w) {
                        n += flats[(yy * w + xx) as usize] as u32;
                    }
                }
                assert_eq!(out[x as usize], (n > index) as u16, "({x}, {y}) {index}");
            }
        }
    }
}

#[test]
fn sliding_histograms_equal_direct_window_counts() {
    let recip = recip();
    let mut r = rng(9);
    for (w, h, half, diffs) in [
        (17u32, 12u32, 2u32, 4u32),
        (9, 20, 4, 2),
        (30, 7, 3, 8),
        (5, 5, 2, 1),
    ] {
        let img: Vec<u16> = (0..w * h).map(|_| 500 + (r() % 9) as u16).collect();
        let mask: Vec<u16> = (0..w * h).map(|_| !r().is_multiple_of(5) as u16).collect();
        let ip = Plane16::new(img.as_ptr(), w, w, h);
        let mp = Plane16::new(mask.as_ptr(), w, w, h);
        let c = open_contrast(&recip, diffs);
        // Two strips of columns, as the host splits a plane.
        let cut = w / 2;
        let mut cells = vec![0u16; (c.band_size * w) as usize];
        for (x0, x1) in [(0, cut), (cut, w)] {
            let span = (x1 - x0) as usize;
            let mut out = vec![0f32; span * h as usize];
            let mut hist = Histograms {
                cells: &mut cells,
                x0,
                x1,
            };
            unsafe { hist.c_values(&ip, &mp, half, &c, &mut out) };
            for y in 0..h {
                for x in x0..x1 {
                    let want = unsafe { c_value_direct(&ip, &mp, x, y, half, &c) };
                    let got = out[y as usize * span + (x - x0) as usize];
                    assert_eq!(got.to_bits(), want.to_bits(), "({x}, {y})");
                }
            }
            assert!(out.iter().any(|&v| v > 0.0));
        }
    }
}

#[test]
fn c_value_of_two_levels() {
    let recip = recip();
    let c = open_contrast(&recip, 4);
    // 10 pixels of v, 6 of v + 1 and 3 of v − 2: step 1 gives 1·10·6/16, step 2 2·10·3/13.
    let counts = |r: i32| match r - (600 - c.band_base as i32) {
        0 => 10,
        1 => 6,
        -2 => 3,
        _ => 0,
    };
    let got = c_value(600, &c, counts);
    let want = (60.0f32 * recip[16]).max(60.0f32 * recip[13]);
    assert_eq!(got, want);
    // An invisible step does not count.
    let mut c2 = c;
    c2.tvi[1] = 599;
    assert_eq!(c_value(600, &c2, counts), 60.0 * recip[16]);
}

#[test]
fn reciprocal_table_has_libvmafs_rounding() {
    let recip = recip();
    // 1/82 as 0.0121951220 (9 digits) is one f32 above the exact reciprocal's.
    assert_eq!(recip[82].to_bits(), (1.0f32 / 82.0).to_bits() + 1);
    assert_eq!(recip[4], 0.25);
    assert_eq!(recip[0], 0.0);
}

#[test]
fn pooling_helpers() {
    assert_eq!(topk_len(0.6, 10), 6);
    assert_eq!(topk_len(0.0001, 10), 1);
    assert_eq!(topk_len(1.0, 7), 7);
    assert_eq!(combine(&[1.0, 0.0, 0.0, 0.0, 1.0], 5), 17.0 / 25.0);
}

/// The whole frame's pipeline at one scale: mode filter, then c-values; the mean of the
/// `topk` largest.
fn one_scale(img: &[u16], w: u32, h: u32, half: u32, c: &Contrast) -> f64 {
    let p = Plane16::new(img.as_ptr(), w, w, h);
    let mut flats = vec![0u8; (w * h) as usize];
    for y in 0..h {
        unsafe { flat_row(&p, y, flats[(y * w) as usize..].as_mut_ptr()) };
    }
    let mut mask = vec![0u16; (w * h) as usize];
    for y in 0..h {
        let index = mask_index(w, h);
        unsafe {
            mask_row(
                flats.as_ptr(),
                w,
                h,
                y,
                index,
                mask[(y * w) as usize..].as_mut_ptr(),
            )
        };
    }
    let mut filtered = vec![0u16; (w * h) as usize];
    for y in 0..h {
        unsafe { mode_row(&p, y, filtered[(y * w) as usize..].as_mut_ptr()) };
    }
    let fp = Plane16::new(filtered.as_ptr(), w, w, h);
    let mp = Plane16::new(mask.as_ptr(), w, w, h);
    let mut cells = vec![0u16; (c.band_size * w) as usize];
    let mut out = vec![0f32; (w * h) as usize];
    let mut hist = Histograms {
        cells: &mut cells,
        x0: 0,
        x1: w,
    };
    unsafe { hist.c_values(&fp, &mp, half, c, &mut out) };
    out.sort_by(|a, b| b.total_cmp(a));
    let k = topk_len(0.6, w * h) as usize;
    out[..k].iter().map(|&v| v as f64).sum::<f64>() / k as f64
}

#[test]
fn a_flat_frame_has_no_banding_and_a_staircase_has() {
    let recip = recip();
    let c = open_contrast(&recip, 4);
    let (w, h) = (64u32, 48u32);
    let flat = vec![512u16; (w * h) as usize];
    assert_eq!(one_scale(&flat, w, h, 4, &c), 0.0);
    // Wide steps of one code value: flat bands next to each other.
    let stairs: Vec<u16> = (0..w * h).map(|i| 500 + ((i % w) / 8) as u16).collect();
    let s = one_scale(&stairs, w, h, 4, &c);
    assert!(s > 1.0, "{s}");
    // Steps too large to be banding (beyond the largest contrast step) give nothing.
    let cliffs: Vec<u16> = (0..w * h)
        .map(|i| 300 + 20 * ((i % w) / 8) as u16)
        .collect();
    assert_eq!(one_scale(&cliffs, w, h, 4, &c), 0.0);
    // A tiny frame works too.
    let tiny: Vec<u16> = vec![500, 500, 501, 501];
    assert!(one_scale(&tiny, 2, 2, 2, &c) >= 0.0);
}

#[test]
fn column_counts_equal_direct_window_counts() {
    // The GPU's c-values: per-column counts of the keys over the window's rows, summed
    // over the window's columns.
    let recip = recip();
    let mut r = rng(21);
    for (w, h, half, diffs) in [
        (23u32, 14u32, 3u32, 4u32),
        (11, 9, 5, 2),
        (40, 6, 2, 8),
        (30, 12, 4, 1),
    ] {
        let img: Vec<u16> = (0..w * h).map(|_| 600 + (r() % 11) as u16).collect();
        let mask: Vec<u16> = (0..w * h).map(|_| !r().is_multiple_of(4) as u16).collect();
        let ip = Plane16::new(img.as_ptr(), w, w, h);
        let mp = Plane16::new(mask.as_ptr(), w, w, h);
        let c = open_contrast(&recip, diffs);
        let stride = column_bytes(c.band_size, diffs) as usize;
        assert_eq!(stride % 4, 0);
        assert_eq!((stride / 4) % 2, 1);
        // Columns -half..w + half, as a strip covering the whole plane.
        let columns = (w + 2 * half) as usize;
        for y in 0..h {
            // Words, as the GPU's shared memory: window_counts12 reads aligned u32s.
            let mut words = vec![0u32; columns * stride / 4];
            let counts = unsafe {
                std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), columns * stride)
            };
            for yy in y.saturating_sub(half)..(y + half + 1).min(h) {
                for x in 0..w {
                    let k = key(
                        img[(yy * w + x) as usize] as u32,
                        mask[(yy * w + x) as usize] != 0,
                        &c,
                    );
                    if k != NO_KEY {
                        counts[(x + half) as usize * stride + (COLUMN_PAD + k as u32) as usize] +=
                            1;
                    }
                }
            }
            for x in 0..w {
                let want = unsafe { c_value_direct(&ip, &mp, x, y, half, &c) };
                let k = key(
                    img[(y * w + x) as usize] as u32,
                    mask[(y * w + x) as usize] != 0,
                    &c,
                );
                let got = if k == NO_KEY {
                    0.0
                } else {
                    let base = counts[x as usize * stride..].as_ptr();
                    c_value(c.band_base + k as u32, &c, |r| {
                        if r < 0 {
                            0
                        } else {
                            unsafe {
                                columns_count(base, stride, (2 * half + 1) as usize, r as usize)
                            }
                        }
                    })
                };
                assert_eq!(got.to_bits(), want.to_bits(), "({x}, {y})");
            }
        }
    }
}

#[test]
fn two_pass_mask_and_working_samples_equal_the_row_functions() {
    let mut r = rng(5);
    let (w, h) = (19u32, 13u32);
    let flats: Vec<u8> = (0..w * h)
        .map(|_| u8::from(!r().is_multiple_of(3)))
        .collect();
    for index in [5, 20, 30] {
        let mut row = vec![0u16; w as usize];
        for y in 0..h {
            unsafe { mask_row(flats.as_ptr(), w, h, y, index, row.as_mut_ptr()) };
            let sums: Vec<u8> = (0..w * h)
                .map(|i| unsafe { flat_sum_h(flats.as_ptr(), w, i % w, i / w) })
                .collect();
            for x in 0..w {
                let m = unsafe { mask_from_sums(sums.as_ptr(), w, h, x, y, index) };
                assert_eq!(m, row[x as usize], "({x}, {y})");
            }
        }
    }
    // An 8-bit source of 23×17 decimated to 19×13, anti-dithered or not.
    let (sw, sh) = (23u32, 17u32);
    let src: Vec<u8> = (0..sw * sh).map(|_| (r() % 256) as u8).collect();
    let mut rows = vec![0u32; h as usize];
    nearest_positions(sh, &mut rows);
    let mut cols = vec![0u32; w as usize];
    nearest_positions(sw, &mut cols);
    let s = Source {
        chan: crate::channel::Channel {
            ptr: src.as_ptr() as u64,
            pitch: sw,
            step: 1,
            sample_bytes: 1,
            shift: 0,
            max: 255,
            _pad: 0,
        },
        depth: 8,
        _pad: 0,
    };
    let mut plane = vec![0u16; (w * h) as usize];
    for y in 0..h {
        let row = unsafe { src.as_ptr().add((rows[y as usize] * sw) as usize) };
        unsafe {
            convert_row(
                &s,
                row,
                cols.as_ptr(),
                w,
                plane[(y * w) as usize..].as_mut_ptr(),
            )
        };
    }
    let p = Plane16::new(plane.as_ptr(), w, w, h);
    for y in 0..h {
        for x in 0..w {
            let direct = |anti| unsafe {
                working_sample(&s, rows.as_ptr(), cols.as_ptr(), (w, h), anti, x, y)
            };
            assert_eq!(direct(false), plane[(y * w + x) as usize]);
            assert_eq!(direct(true), unsafe { anti_dither(&p, x, y) });
        }
    }
}
