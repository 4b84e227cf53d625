//! Y'CbCr to display-encoded RGB as ColorVideoVDP's readers make it: limited range
//! normalised and clipped (luma to 0..1, chroma to −0.5..0.5), 4:2:0 and 4:2:2 chroma
//! upsampled ×2 bilinearly with centred samples (torch's `interpolate`, `align_corners`
//! false: source position `(x + ½)/2 − ½`, clamped at 0, the next sample clamped at the
//! edge), a matrix, and RGB clipped to 0..1. In float32, as the reference computes.
//!
//! The reference has two readers with different matrices: its `.yuv` reader applies
//! BT.601's to files it names BT.709 ([`Planes`]), its reader of encoded video (FFmpeg to
//! planar Y'CbCr) BT.709's ([`BT709`]). The metric follows the colorimetry of its input
//! ([`Ycbcr`]), which for BT.709 video is the second.

/// Chroma subsampling of the planes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subsampling {
    S420,
    S422,
    S444,
}

/// A planar Y'CbCr frame: samples as integers at `bits` (8..16).
#[derive(Clone, Copy, Debug)]
pub struct Planes<'a> {
    pub y: &'a [u16],
    pub cb: &'a [u16],
    pub cr: &'a [u16],
    pub width: usize,
    pub height: usize,
    pub bits: u32,
    pub subsampling: Subsampling,
    /// BT.2020's matrix, else BT.709's.
    pub bt2020: bool,
}

/// BT.709's Y'CbCr to R'G'B' as the reference's video-file reader writes it (FFmpeg decodes
/// to planar Y'CbCr, the reference converts).
pub const BT709: [[f32; 3]; 3] = [
    [1.0, 0.0, 1.5748],
    [1.0, -0.1873, -0.4681],
    [1.0, 1.8556, 0.0],
];
/// BT.2020 (non-constant luminance), as both of the reference's readers write it.
pub const BT2020: [[f32; 3]; 3] = [
    [1.0, 0.0, 1.4746],
    [1.0, -0.16455, -0.57135],
    [1.0, 1.8814, 0.0],
];
/// BT.601, which the reference's `.yuv` reader also applies to files it reads as BT.709.
pub const BT601: [[f32; 3]; 3] = [
    [1.0, 0.0, 1.402],
    [1.0, -0.344136, -0.714136],
    [1.0, 1.772, 0.0],
];

/// The Y'CbCr to R'G'B' matrix of luma coefficients `kr`, `kb`.
pub fn matrix(kr: f64, kb: f64) -> [[f32; 3]; 3] {
    let kg = 1.0 - kr - kb;
    [
        [1.0, 0.0, 2.0 * (1.0 - kr)],
        [
            1.0,
            -2.0 * kb * (1.0 - kb) / kg,
            -2.0 * kr * (1.0 - kr) / kg,
        ],
        [1.0, 2.0 * (1.0 - kb), 0.0],
    ]
    .map(|row| row.map(|v| v as f32))
}

/// How Y'CbCr samples become display-encoded R'G'B'.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ycbcr {
    /// Sample depth, 8..16.
    pub bits: u32,
    /// Full ("PC") range instead of limited ("TV") range.
    pub full_range: bool,
    pub matrix: [[f32; 3]; 3],
    /// Chroma subsampling factors (1 or 2) and the chroma planes' size.
    pub sub_x: usize,
    pub sub_y: usize,
    pub chroma_width: usize,
    pub chroma_height: usize,
}

impl Ycbcr {
    /// Display-encoded RGB (0..1) of a `width`×`height` frame whose samples `y`, `cb` and
    /// `cr` give at (x, y) of their planes, row by row.
    pub fn rgb(
        &self,
        width: usize,
        height: usize,
        luma: impl Fn(usize, usize) -> u32 + Sync,
        cb: impl Fn(usize, usize) -> u32 + Sync,
        cr: impl Fn(usize, usize) -> u32 + Sync,
    ) -> Vec<[f32; 3]> {
        use rayon::prelude::*;
        let (yw, yo, cw, co) = if self.full_range {
            let peak = ((1u64 << self.bits) - 1) as f32;
            let half = (1u32 << (self.bits - 1)) as f32;
            (1.0 / peak, 0.0, 1.0 / peak, half / peak)
        } else {
            let scale = (1u32 << (self.bits - 8)) as f32;
            (
                1.0 / (scale * 219.0),
                16.0f32 / 219.0,
                1.0 / (scale * 224.0),
                128.0f32 / 224.0,
            )
        };
        let (chw, chh) = (self.chroma_width, self.chroma_height);
        let chroma = |p: &(dyn Fn(usize, usize) -> u32 + Sync)| -> Vec<f32> {
            (0..chw * chh)
                .map(|i| (cw * p(i % chw, i / chw) as f32 - co).clamp(-0.5, 0.5))
                .collect()
        };
        let (cb, cr) = (chroma(&cb), chroma(&cr));
        // torch's bilinear source index along one axis of `n` samples, factor `s`.
        let source = |out: usize, s: usize, n: usize| -> (usize, usize, f32) {
            if s == 1 {
                return (out.min(n - 1), out.min(n - 1), 0.0);
            }
            let src = ((out as f32 + 0.5) / s as f32 - 0.5).max(0.0);
            let i0 = (src as usize).min(n - 1);
            let i1 = (i0 + 1).min(n - 1);
            (i0, i1, src - i0 as f32)
        };
        let m = self.matrix;
        let mut out = vec![[0f32; 3]; width * height];
        out.par_chunks_mut(width).enumerate().for_each(|(yy, row)| {
            let (y0, y1, fy) = source(yy, self.sub_y, chh);
            for (xx, px) in row.iter_mut().enumerate() {
                let (x0, x1, fx) = source(xx, self.sub_x, chw);
                let at = |p: &[f32]| {
                    let top = p[y0 * chw + x0] * (1.0 - fx) + p[y0 * chw + x1] * fx;
                    let bottom = p[y1 * chw + x0] * (1.0 - fx) + p[y1 * chw + x1] * fx;
                    top * (1.0 - fy) + bottom * fy
                };
                let l = (yw * luma(xx, yy) as f32 - yo).clamp(0.0, 1.0);
                let ycc = [l, at(&cb), at(&cr)];
                *px = m.map(|row| {
                    (ycc[0] * row[0] + ycc[1] * row[1] + ycc[2] * row[2]).clamp(0.0, 1.0)
                });
            }
        });
        out
    }
}

impl Planes<'_> {
    /// Chroma plane size (halved downwards, as the reference's reader does).
    pub fn chroma_size(&self) -> (usize, usize) {
        match self.subsampling {
            Subsampling::S420 => (self.width / 2, self.height / 2),
            Subsampling::S422 => (self.width / 2, self.height),
            Subsampling::S444 => (self.width, self.height),
        }
    }

    /// Display-encoded RGB (0..1) of every pixel, row by row, as the reference's `.yuv`
    /// reader makes it (BT.2020's matrix, else BT.601's).
    pub fn rgb(&self) -> Vec<[f32; 3]> {
        let (chw, chh) = self.chroma_size();
        let (sub_x, sub_y) = match self.subsampling {
            Subsampling::S420 => (2, 2),
            Subsampling::S422 => (2, 1),
            Subsampling::S444 => (1, 1),
        };
        let conversion = Ycbcr {
            bits: self.bits,
            full_range: false,
            matrix: if self.bt2020 { BT2020 } else { BT601 },
            sub_x,
            sub_y,
            chroma_width: chw,
            chroma_height: chh,
        };
        let w = self.width;
        conversion.rgb(
            self.width,
            self.height,
            |x, y| self.y[y * w + x] as u32,
            |x, y| self.cb[y * chw + x] as u32,
            |x, y| self.cr[y * chw + x] as u32,
        )
    }
}
