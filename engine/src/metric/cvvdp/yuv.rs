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

use gpumetrics_kernels::channel::Channel;
use gpumetrics_kernels::cvvdp::{self, Source};

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
    /// Code value to normalised value, `(y_scale, y_offset, c_scale, c_offset)`: luma to
    /// 0..1 and chroma to −0.5..0.5 (`scale · code − offset`).
    pub fn scales(&self) -> (f32, f32, f32, f32) {
        if self.full_range {
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
        }
    }

    /// How the kernels read a `width`×`height` frame of channels Y', Cb, Cr (`c`).
    pub fn source(&self, width: usize, height: usize, c: [Channel; 3]) -> Source {
        let (y_scale, y_offset, c_scale, c_offset) = self.scales();
        Source {
            c,
            width: width as u32,
            height: height as u32,
            family: cvvdp::FAMILY_YCBCR,
            sub_x: self.sub_x as u32,
            sub_y: self.sub_y as u32,
            chroma_width: self.chroma_width as u32,
            chroma_height: self.chroma_height as u32,
            y_scale,
            y_offset,
            c_scale,
            c_offset,
            matrix: std::array::from_fn(|i| self.matrix[i / 3][i % 3]),
            _pad: 0,
        }
    }
}

/// Display-encoded RGB (0..1) of every pixel of `source`, row by row (the kernels'
/// [`display_rgb`](cvvdp::display_rgb)).
///
/// # Safety
/// `source`'s channels must be readable at their sizes.
pub unsafe fn rgb(source: &Source) -> Vec<[f32; 3]> {
    use rayon::prelude::*;
    let (w, h) = (source.width as usize, source.height as usize);
    let mut out = vec![[0f32; 3]; w * h];
    out.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
        for (x, px) in row.iter_mut().enumerate() {
            // SAFETY: (x, y) lies inside the frame, whose channels the caller vouches for.
            *px = unsafe { cvvdp::display_rgb(source, x as u32, y as u32) };
        }
    });
    out
}

/// A plane of 16-bit samples, `width` a row, as a channel the kernels read.
fn channel(samples: &[u16], width: usize, bits: u32) -> Channel {
    Channel {
        ptr: samples.as_ptr() as u64,
        pitch: (2 * width) as u32,
        step: 2,
        sample_bytes: 2,
        shift: 0,
        max: (1u32 << bits) - 1,
        _pad: 0,
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
        assert!(
            self.y.len() >= self.width * self.height,
            "a luma plane too short"
        );
        assert!(
            self.cb.len() >= chw * chh && self.cr.len() >= chw * chh,
            "a chroma plane too short"
        );
        let c = [
            channel(self.y, self.width, self.bits),
            channel(self.cb, chw, self.bits),
            channel(self.cr, chw, self.bits),
        ];
        // SAFETY: the planes hold their sizes (checked above) and outlive the call.
        unsafe { rgb(&conversion.source(self.width, self.height, c)) }
    }
}
