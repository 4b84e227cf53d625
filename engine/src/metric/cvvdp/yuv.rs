//! Y'CbCr to display-encoded RGB as ColorVideoVDP's `.yuv` reader makes it: limited range
//! normalised and clipped (luma to 0..1, chroma to −0.5..0.5), 4:2:0 and 4:2:2 chroma
//! upsampled ×2 bilinearly with centred samples (torch's `interpolate`, `align_corners`
//! false: source position `(x + ½)/2 − ½`, clamped at 0, the next sample clamped at the
//! edge), the BT.709 or BT.2020 matrix of its file name, and RGB clipped to 0..1. In
//! float32, as the reference computes.

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

impl Planes<'_> {
    /// Chroma plane size (halved downwards, as the reference's reader does).
    pub fn chroma_size(&self) -> (usize, usize) {
        match self.subsampling {
            Subsampling::S420 => (self.width / 2, self.height / 2),
            Subsampling::S422 => (self.width / 2, self.height),
            Subsampling::S444 => (self.width, self.height),
        }
    }

    /// Display-encoded RGB (0..1) of every pixel, row by row.
    pub fn rgb(&self) -> Vec<[f32; 3]> {
        let scale = (1u32 << (self.bits - 8)) as f32;
        let (yw, yo) = (1.0 / (scale * 219.0), 16.0f32 / 219.0);
        let (cw, co) = (1.0 / (scale * 224.0), 128.0f32 / 224.0);
        let (chw, chh) = self.chroma_size();
        let chroma = |p: &[u16]| -> Vec<f32> {
            p[..chw * chh]
                .iter()
                .map(|&v| (cw * v as f32 - co).clamp(-0.5, 0.5))
                .collect()
        };
        let (cb, cr) = (chroma(self.cb), chroma(self.cr));
        let (sx, sy) = match self.subsampling {
            Subsampling::S420 => (2, 2),
            Subsampling::S422 => (2, 1),
            Subsampling::S444 => (1, 1),
        };
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
        let m: [[f32; 3]; 3] = if self.bt2020 {
            [
                [1.0, 0.0, 1.4746],
                [1.0, -0.16455, -0.57135],
                [1.0, 1.8814, 0.0],
            ]
        } else {
            [
                [1.0, 0.0, 1.402],
                [1.0, -0.344136, -0.714136],
                [1.0, 1.772, 0.0],
            ]
        };
        let mut out = Vec::with_capacity(self.width * self.height);
        for yy in 0..self.height {
            let (y0, y1, fy) = source(yy, sy, chh);
            for xx in 0..self.width {
                let (x0, x1, fx) = source(xx, sx, chw);
                let at = |p: &[f32]| {
                    let top = p[y0 * chw + x0] * (1.0 - fx) + p[y0 * chw + x1] * fx;
                    let bottom = p[y1 * chw + x0] * (1.0 - fx) + p[y1 * chw + x1] * fx;
                    top * (1.0 - fy) + bottom * fy
                };
                let luma = (yw * self.y[yy * self.width + xx] as f32 - yo).clamp(0.0, 1.0);
                let ycc = [luma, at(&cb), at(&cr)];
                out.push(m.map(|row| {
                    (ycc[0] * row[0] + ycc[1] * row[1] + ycc[2] * row[2]).clamp(0.0, 1.0)
                }));
            }
        }
        out
    }
}
