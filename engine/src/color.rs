//! Colorimetry of an input: what turns its code values into linear RGB (for metrics defined
//! on linear light, such as SSIMULACRA2). The per-pixel conversion is
//! `gpumetrics_kernels::color`, shared by both backends.

use crate::error::EngineError;
use crate::format::{ColorFamily, FrameLayout};
use crate::frame::PlanePtrs;
use gpumetrics_kernels::color::{self as k, ColorSource};

/// Y'CbCr → R'G'B' matrix (ignored for RGB and gray input).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Matrix {
    /// BT.601 (Kr 0.299, Kb 0.114).
    Bt601,
    /// BT.709 (Kr 0.2126, Kb 0.0722).
    #[default]
    Bt709,
    /// BT.2020 non-constant luminance (Kr 0.2627, Kb 0.0593).
    Bt2020,
}

/// Code-value range.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Range {
    /// "TV" range: Y' 16–235, chroma 16–240 (scaled by 2^(depth−8)).
    #[default]
    Limited,
    /// "PC" range: 0 to 2^depth − 1.
    Full,
}

/// Transfer function of the non-linear values (inverted to get linear light).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Transfer {
    /// IEC 61966-2-1.
    Srgb,
    /// BT.709 OETF (also BT.601 and BT.2020 10-bit).
    #[default]
    Bt709,
    /// BT.2020 12-bit OETF.
    Bt2020_12,
    /// Already linear.
    Linear,
    /// SMPTE ST 2084 (PQ): HDR, not supported yet.
    Pq,
    /// ARIB STD-B67 (HLG): HDR, not supported yet.
    Hlg,
    /// Any other transfer: not supported yet.
    Other,
}

/// Where chroma samples sit relative to luma (4:2:0 / 4:2:2 only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ChromaSiting {
    /// Horizontally co-sited with the left luma sample (else centred between two).
    pub h_cosited: bool,
    /// Vertically co-sited with the top luma sample (else centred).
    pub v_cosited: bool,
}

impl Default for ChromaSiting {
    /// MPEG-2 / H.264 / HEVC default: left co-sited, vertically centred.
    fn default() -> Self {
        ChromaSiting {
            h_cosited: true,
            v_cosited: false,
        }
    }
}

/// Colorimetry of one input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Colorimetry {
    pub matrix: Matrix,
    pub range: Range,
    pub transfer: Transfer,
    pub siting: ChromaSiting,
}

impl Default for Colorimetry {
    /// BT.709 limited range with left-sited chroma: what YUV video without colorimetry
    /// caps most likely is.
    fn default() -> Self {
        Colorimetry {
            matrix: Matrix::Bt709,
            range: Range::Limited,
            transfer: Transfer::Bt709,
            siting: ChromaSiting::default(),
        }
    }
}

impl Colorimetry {
    /// What to assume when the caps say nothing: BT.709 limited for YUV, sRGB full range
    /// for RGB and gray.
    pub fn default_for(family: ColorFamily) -> Colorimetry {
        match family {
            ColorFamily::Yuv => Colorimetry::default(),
            ColorFamily::Rgb | ColorFamily::Gray => Colorimetry {
                range: Range::Full,
                transfer: Transfer::Srgb,
                ..Colorimetry::default()
            },
        }
    }

    /// Fails for transfers that cannot be linearised yet (PQ, HLG, others).
    pub fn check_linearizable(&self, what: &str) -> Result<(), EngineError> {
        let name = match self.transfer {
            Transfer::Pq => "PQ (SMPTE ST 2084)",
            Transfer::Hlg => "HLG (ARIB STD-B67)",
            Transfer::Other => "this transfer function",
            _ => return Ok(()),
        };
        Err(EngineError::Unsupported(format!(
            "the {what} input uses {name}, which ssimulacra2 does not support yet (only sRGB, \
             BT.709, BT.2020 and linear transfers); convert it to SDR first or leave \
             ssimulacra2 out of `metrics`"
        )))
    }

    /// Kernel-side description of a frame with this colorimetry at the given planes.
    pub(crate) fn source(&self, layout: &FrameLayout, planes: &PlanePtrs) -> ColorSource {
        let f = layout.format;
        let chans = f.channels();
        let channel =
            |i: usize| crate::plan::channel(&chans[i.min(chans.len() - 1)], planes, f.peak());
        let unit = (1u32 << f.depth()) as f32 / 256.0;
        let (y_offset, y_scale, c_offset, c_scale) = match self.range {
            Range::Limited => (16.0 * unit, 219.0 * unit, 128.0 * unit, 224.0 * unit),
            Range::Full => (0.0, f.peak() as f32, 128.0 * unit, f.peak() as f32),
        };
        let (kr, kb) = match self.matrix {
            Matrix::Bt601 => (0.299f64, 0.114f64),
            Matrix::Bt709 => (0.2126, 0.0722),
            Matrix::Bt2020 => (0.2627, 0.0593),
        };
        let kg = 1.0 - kr - kb;
        let (sub_x, sub_y) = f.subsampling();
        let site = |cosited: bool, sub: u32| {
            if cosited || sub == 0 {
                0.0
            } else {
                ((1u32 << sub) - 1) as f32 / 2.0
            }
        };
        ColorSource {
            c: [channel(0), channel(1), channel(2)],
            width: layout.width,
            height: layout.height,
            sub_x,
            sub_y,
            family: match f.family() {
                ColorFamily::Gray => k::FAMILY_GRAY,
                ColorFamily::Yuv => k::FAMILY_YUV,
                ColorFamily::Rgb => k::FAMILY_RGB,
            },
            transfer: match self.transfer {
                Transfer::Srgb => k::TRANSFER_SRGB,
                Transfer::Bt709 => k::TRANSFER_BT709,
                Transfer::Bt2020_12 => k::TRANSFER_BT2020_12,
                _ => k::TRANSFER_LINEAR,
            },
            y_offset,
            y_scale,
            c_offset,
            c_scale,
            cr_r: (2.0 * (1.0 - kr)) as f32,
            cb_g: (-2.0 * kb * (1.0 - kb) / kg) as f32,
            cr_g: (-2.0 * kr * (1.0 - kr) / kg) as f32,
            cb_b: (2.0 * (1.0 - kb)) as f32,
            site_x: site(self.siting.h_cosited, sub_x),
            site_y: site(self.siting.v_cosited, sub_y),
        }
    }
}

/// Linear RGB (interleaved, row-major) of a host frame: the documented conversion, e.g. to
/// feed a reference implementation the same pixels the engine measures.
pub fn host_linear_rgb(
    layout: &FrameLayout,
    colorimetry: &Colorimetry,
    frame: &crate::HostFrame,
) -> Result<Vec<[f32; 3]>, EngineError> {
    let planes = frame.validate(layout, "input")?;
    let src = colorimetry.source(layout, &planes);
    let mut out = Vec::with_capacity(layout.width as usize * layout.height as usize);
    for y in 0..layout.height {
        for x in 0..layout.width {
            // SAFETY: validate() checked that the planes hold the whole frame.
            out.push(unsafe { k::linear_rgb(&src, x, y) });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::PixelFormat;
    use crate::frame::{HostFrame, Plane};

    /// One 2x2 I420 frame of constant Y', Cb, Cr, converted with `c`.
    fn i420(y: u8, cb: u8, cr: u8, c: Colorimetry) -> [f32; 3] {
        let l = FrameLayout {
            format: PixelFormat::I420,
            width: 2,
            height: 2,
        };
        let (yp, u, v) = ([y; 4], [cb], [cr]);
        let f = HostFrame::new(&[
            Plane {
                data: &yp,
                stride: 2,
            },
            Plane {
                data: &u,
                stride: 1,
            },
            Plane {
                data: &v,
                stride: 1,
            },
        ]);
        host_linear_rgb(&l, &c, &f).unwrap()[3]
    }

    fn close(a: [f32; 3], b: [f64; 3], tol: f64) -> bool {
        a.iter().zip(b).all(|(a, b)| (*a as f64 - b).abs() < tol)
    }

    #[test]
    fn limited_range_black_white_and_primaries() {
        let c = Colorimetry::default();
        assert_eq!(i420(16, 128, 128, c), [0.0; 3]);
        assert!(close(i420(235, 128, 128, c), [1.0; 3], 1e-6));
        // BT.709 red R'=1, G'=B'=0: Y' = 0.2126, Cb = -0.2126/1.8556 / 2, Cr = 0.5.
        let y = 16.0f64 + 219.0 * 0.2126;
        let cb = 128.0f64 + 224.0 * (-0.2126 / 1.8556);
        let cr = 128.0f64 + 224.0 * 0.5;
        let rgb = i420(y.round() as u8, cb.round() as u8, cr.round() as u8, c);
        assert!(rgb[0] > 0.97 && rgb[1] < 0.01 && rgb[2] < 0.01, "{rgb:?}");
        // mid grey, full range sRGB
        let full = Colorimetry {
            range: Range::Full,
            transfer: Transfer::Srgb,
            ..c
        };
        let g = ((128.0f64 / 255.0 + 0.055) / 1.055).powf(2.4);
        assert!(close(i420(128, 128, 128, full), [g; 3], 1e-5));
    }

    #[test]
    fn matrices_differ_in_green() {
        let base = Colorimetry {
            transfer: Transfer::Linear,
            ..Colorimetry::default()
        };
        // Y'=0.5, Cb=+0.1, Cr=-0.1 in limited range codes.
        let (y, cb, cr) = (
            (16.0 + 219.0 * 0.5f64).round() as u8,
            (128.0 + 224.0 * 0.1f64).round() as u8,
            (128.0 - 224.0 * 0.1f64).round() as u8,
        );
        for (m, kr, kb) in [
            (Matrix::Bt601, 0.299, 0.114),
            (Matrix::Bt709, 0.2126, 0.0722),
            (Matrix::Bt2020, 0.2627, 0.0593),
        ] {
            let c = Colorimetry { matrix: m, ..base };
            let (yv, cbv, crv) = (
                (y as f64 - 16.0) / 219.0,
                (cb as f64 - 128.0) / 224.0,
                (cr as f64 - 128.0) / 224.0,
            );
            let r = yv + 2.0 * (1.0 - kr) * crv;
            let b = yv + 2.0 * (1.0 - kb) * cbv;
            let g = (yv - kr * r - kb * b) / (1.0 - kr - kb);
            assert!(close(i420(y, cb, cr, c), [r, g, b], 1e-5), "{m:?}");
        }
    }

    #[test]
    fn hdr_transfers_are_refused_with_a_reason() {
        let pq = Colorimetry {
            transfer: Transfer::Pq,
            ..Colorimetry::default()
        };
        let e = pq.check_linearizable("reference").unwrap_err();
        assert!(e.to_string().contains("PQ") && e.to_string().contains("not support yet"));
        assert!(Colorimetry::default().check_linearizable("x").is_ok());
    }
}
