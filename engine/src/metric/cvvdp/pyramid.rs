//! ColorVideoVDP's decimated Laplacian pyramid (`lpyr_dec`): how many bands a frame of a
//! size and pixels-per-degree has and their frequencies, and the Gaussian reduce and expand
//! with the 5-tap kernel (a = 0.4), as the reference computes them: a reduce sums the
//! kernel over the samples inside the frame and then adds the mirrored ones at both ends;
//! an expand upsamples with zeros, repeats the edge samples and filters with twice the
//! kernel. Both as the reference writes them, including its one quirk: the horizontal
//! reduce picks its right-edge terms by the parity of the frame's *rows*.
//!
//! [`weber_contrast`] turns the pyramids of the eight channels of a pair of frames into
//! Weber contrast per band (`weber_contrast_pyr` with contrast `weber_g1`).

use gpumetrics_kernels::cvvdp::{expand_at, reduce_at};

/// A single-channel plane of f32 samples, row by row.
#[derive(Clone, Debug, PartialEq)]
pub struct Plane {
    pub width: usize,
    pub height: usize,
    pub data: Vec<f32>,
}

impl Plane {
    pub fn new(width: usize, height: usize, data: Vec<f32>) -> Plane {
        assert_eq!(data.len(), width * height);
        Plane {
            width,
            height,
            data,
        }
    }

    fn at(&self, x: usize, y: usize) -> f32 {
        self.data[y * self.width + x]
    }
}

/// The bands of a `width`×`height` frame seen at `ppd` pixels per degree: the number of
/// levels (the Laplacian bands; the pyramid has one more, the base band) and the peak
/// frequency of each band (cycles per degree), as `lpyr_dec` sets them.
pub fn bands(width: usize, height: usize, ppd: f64) -> (usize, Vec<f64>) {
    let max_levels = (width.min(height) as f64).log2().floor() as i64 - 1;
    let freqs = |n: usize| -> Vec<f64> {
        std::iter::once(1.0)
            .chain((0..n).map(|f| 0.3228 * 2f64.powi(-(f as i32))))
            .map(|b| b * ppd / 2.0)
            .collect()
    };
    let candidates = freqs(14);
    let max_band = candidates
        .iter()
        .position(|&b| b <= 0.2)
        .map_or(max_levels, |i| i as i64);
    let levels = (max_band + 1).clamp(0, max_levels.max(0)) as usize;
    (levels, freqs(levels))
}

/// One reduce step: filter and decimate rows, then columns (`gausspyr_reduce`; the
/// kernels' [`reduce_at`] per sample).
pub fn reduce(x: &Plane) -> Plane {
    use rayon::prelude::*;
    let (w, h) = (x.width, x.height);
    let (wo, ho) = (w.div_ceil(2), h.div_ceil(2));
    let mut ya = vec![0f32; ho * w];
    ya.par_chunks_mut(w).enumerate().for_each(|(i, row)| {
        for (c, v) in row.iter_mut().enumerate() {
            *v = reduce_at(
                |r| x.at(c, r as usize),
                h as u32,
                ho as u32,
                h as u32,
                i as u32,
            );
        }
    });
    let ya = Plane::new(w, ho, ya);
    let mut y = vec![0f32; ho * wo];
    y.par_chunks_mut(wo).enumerate().for_each(|(r, row)| {
        for (j, v) in row.iter_mut().enumerate() {
            // The reference tests the parity of the input's rows here, not of its columns.
            *v = reduce_at(
                |c| ya.at(c as usize, r),
                w as u32,
                wo as u32,
                h as u32,
                j as u32,
            );
        }
    });
    Plane::new(wo, ho, y)
}

/// One expand step to `width`×`height` (`gausspyr_expand`; the kernels' [`expand_at`] per
/// sample): columns first, then rows.
pub fn expand(x: &Plane, width: usize, height: usize) -> Plane {
    use rayon::prelude::*;
    let mut ya = vec![0f32; height * x.width];
    ya.par_chunks_mut(x.width).enumerate().for_each(|(r, row)| {
        for (c, v) in row.iter_mut().enumerate() {
            *v = expand_at(
                |i| x.at(c, i as usize),
                x.height as u32,
                height as u32,
                r as u32,
            );
        }
    });
    let ya = Plane::new(x.width, height, ya);
    let mut y = vec![0f32; height * width];
    y.par_chunks_mut(width).enumerate().for_each(|(r, row)| {
        for (c, v) in row.iter_mut().enumerate() {
            *v = expand_at(
                |i| ya.at(i as usize, r),
                x.width as u32,
                width as u32,
                c as u32,
            );
        }
    });
    Plane::new(width, height, y)
}

/// The Laplacian pyramid of `image` with `levels` levels (the last one the Gaussian base
/// band), and its Gaussian pyramid (`laplacian_pyramid_dec`).
pub fn laplacian(image: &Plane, levels: usize) -> (Vec<Plane>, Vec<Plane>) {
    let mut gauss = vec![image.clone()];
    for i in 1..levels {
        let next = reduce(&gauss[i - 1]);
        gauss.push(next);
    }
    let mut lap = Vec::with_capacity(levels);
    for i in 0..gauss.len() {
        if i + 1 == gauss.len() {
            lap.push(gauss[i].clone());
        } else {
            let ex = expand(&gauss[i + 1], gauss[i].width, gauss[i].height);
            let data = gauss[i]
                .data
                .iter()
                .zip(&ex.data)
                .map(|(a, b)| a - b)
                .collect();
            lap.push(Plane::new(gauss[i].width, gauss[i].height, data));
        }
    }
    (lap, gauss)
}

/// The channels of a pair of frames the metric decomposes, in the reference's order: test
/// and reference interleaved, for sustained Y, sustained RG, sustained VY and transient Y.
pub const CHANNELS: usize = 8;

/// One band of the contrast pyramid: the contrast of each channel and the log10 background
/// luminance of the test (0) and the reference (1) (on the base band one value each, the
/// frame's mean).
#[derive(Clone, Debug, PartialEq)]
pub struct ContrastBand {
    pub contrast: Vec<Plane>,
    pub log_background: [Plane; 2],
}

/// Weber contrast per band (`weber_contrast_pyr.decompose`, contrast `weber_g1`): each
/// channel's Laplacian band divided by the background of its side, the sustained Y of the
/// next coarser Gaussian level expanded to the band (clamped at 0.01 cd/m²), the quotient
/// clamped at 1000; the base band divided by the side's mean sustained Y. `levels`
/// Laplacian bands and the base band.
pub fn weber_contrast(channels: &[Plane], levels: usize) -> Vec<ContrastBand> {
    assert_eq!(channels.len(), CHANNELS);
    use rayon::prelude::*;
    // The channels' pyramids side by side (a frame pair has eight).
    let pyramids: Vec<(Vec<Plane>, Vec<Plane>)> = channels
        .par_iter()
        .map(|c| laplacian(c, levels + 1))
        .collect();
    let height = pyramids[0].0.len();
    (0..height)
        .map(|i| {
            let base = i + 1 == height;
            let background: [Plane; 2] = std::array::from_fn(|side| {
                let g = &pyramids[side].1;
                if base {
                    let b = &g[i];
                    let sum: f32 = b.data.iter().map(|v| v.max(0.01)).sum();
                    Plane::new(1, 1, vec![sum / b.data.len() as f32])
                } else {
                    let ex = expand(&g[i + 1], g[i].width, g[i].height);
                    Plane::new(
                        ex.width,
                        ex.height,
                        ex.data.iter().map(|v| v.max(0.01)).collect(),
                    )
                }
            });
            let contrast = pyramids
                .iter()
                .enumerate()
                .map(|(c, (lap, _))| {
                    let l = &lap[i];
                    let bkg = &background[c % 2];
                    let data = l
                        .data
                        .iter()
                        .enumerate()
                        .map(|(k, v)| (v / bkg.data[if base { 0 } else { k }]).min(1000.0))
                        .collect();
                    Plane::new(l.width, l.height, data)
                })
                .collect();
            let log_background = background.map(|b| {
                Plane::new(
                    b.width,
                    b.height,
                    b.data.iter().map(|v| v.log10()).collect(),
                )
            });
            ContrastBand {
                contrast,
                log_background,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpumetrics_kernels::cvvdp::{Planes, expand_2d, reduce_2d};

    fn noise(w: usize, h: usize, seed: u64) -> Plane {
        let mut x = seed;
        let data = (0..w * h)
            .map(|_| {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                (x >> 40) as f32 / (1u64 << 24) as f32 * 100.0
            })
            .collect();
        Plane::new(w, h, data)
    }

    fn planes(p: &Plane) -> Planes {
        Planes {
            base: p.data.as_ptr() as u64,
            stride: (p.width * p.height) as u64,
            width: p.width as u32,
            height: p.height as u32,
        }
    }

    /// The GPU's per-sample 2D reduce and expand (`reduce_2d`, `expand_2d`: no separable
    /// scratch) give the separable passes' values bit for bit, on every parity.
    #[test]
    fn the_per_sample_2d_passes_equal_the_separable_ones() {
        for (w, h) in [(2usize, 2usize), (7, 5), (8, 9), (33, 18), (64, 31)] {
            let x = noise(w, h, (w * 131 + h) as u64);
            let src = planes(&x);
            let r = reduce(&x);
            for y in 0..r.height {
                for i in 0..r.width {
                    // SAFETY: `src` points at `x`'s samples, of its size.
                    let v = unsafe {
                        reduce_2d(&src, 0, r.width as u32, r.height as u32, i as u32, y as u32)
                    };
                    assert_eq!(
                        v.to_bits(),
                        r.data[y * r.width + i].to_bits(),
                        "{w}x{h} reduce ({i}, {y})"
                    );
                }
            }
            let coarse = planes(&r);
            let e = expand(&r, w, h);
            for y in 0..h {
                for i in 0..w {
                    // SAFETY: `coarse` points at `r`'s samples, of its size.
                    let v =
                        unsafe { expand_2d(&coarse, 0, w as u32, h as u32, i as u32, y as u32) };
                    assert_eq!(
                        v.to_bits(),
                        e.data[y * w + i].to_bits(),
                        "{w}x{h} expand ({i}, {y})"
                    );
                }
            }
        }
    }
}
