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
    /// BT.601 / SMPTE 170M / BT.470 B/G (Kr 0.299, Kb 0.114).
    Bt601,
    /// BT.709 (Kr 0.2126, Kb 0.0722).
    #[default]
    Bt709,
    /// BT.2020 non-constant luminance (Kr 0.2627, Kb 0.0593).
    Bt2020,
    /// FCC / BT.470 System M (Kr 0.30, Kb 0.11).
    Fcc,
    /// SMPTE 240M (Kr 0.212, Kb 0.087).
    Smpte240m,
}

impl Matrix {
    /// (Kr, Kb) of the matrix.
    pub fn kr_kb(self) -> (f64, f64) {
        match self {
            Matrix::Bt601 => (0.299, 0.114),
            Matrix::Bt709 => (0.2126, 0.0722),
            Matrix::Bt2020 => (0.2627, 0.0593),
            Matrix::Fcc => (0.30, 0.11),
            Matrix::Smpte240m => (0.212, 0.087),
        }
    }

    /// Y'CbCr (Y' in [0, 1], Cb and Cr in [-0.5, 0.5]) → R'G'B', row-major: the inverse of
    /// the R'G'B' → Y'CbCr matrix, both in f32 as the reference derives them.
    fn to_rgb(self) -> [f32; 9] {
        let (kr, kb) = self.kr_kb();
        let (kr, kb) = (kr as f32, kb as f32);
        let kg = 1.0 - kr - kb;
        let u = 1.0 / 2.0f32.mul_add(-kb, 2.0);
        let v = 1.0 / 2.0f32.mul_add(-kr, 2.0);
        M3([
            kr,
            kg,
            kb,
            -kr * u,
            -kg * u,
            (1.0 - kb) * u,
            (1.0 - kr) * v,
            -kg * v,
            -kb * v,
        ])
        .inverse()
        .0
    }
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

/// Transfer function of the non-linear values: how they become linear light. Display
/// referred, as the reference (`yuvxyb`) does it: the SDR video transfers (BT.709, BT.601,
/// SMPTE 240M, BT.2020 10 and 12 bit) are shown through the BT.1886 display, L = V^2.4.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Transfer {
    /// sRGB (IEC 61966-2-1).
    Srgb,
    /// BT.1886 display EOTF (V^2.4): BT.709, BT.601, SMPTE 240M and BT.2020 video.
    #[default]
    Bt1886,
    /// Pure power laws: V^2.2 (BT.470 System M), V^2.8 (BT.470 System B/G), V^1.8, V^2.0 and
    /// Adobe RGB's V^(563/256).
    Gamma22,
    Gamma28,
    Gamma18,
    Gamma20,
    AdobeRgb,
    /// Already linear.
    Linear,
    /// SMPTE ST 2084 (PQ), to the reference's scene light (its inverse OOTF).
    Pq,
    /// ARIB STD-B67 (HLG), inverse OETF (scene light).
    Hlg,
    /// H.273 logarithmic transfers (100:1 and 316:1).
    Log100,
    Log316,
    /// Any other transfer: refused.
    Other,
}

/// Colour primaries of the linear RGB, converted to BT.709 (the reference's working space).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Primaries {
    /// BT.709 / sRGB (D65).
    #[default]
    Bt709,
    /// BT.470 System M (illuminant C).
    Bt470m,
    /// BT.470 System B/G, BT.601-625 (D65).
    Bt470bg,
    /// SMPTE 170M / 240M, BT.601-525 (D65).
    Smpte170m,
    /// Generic film (illuminant C).
    Film,
    /// BT.2020 / BT.2100 (D65).
    Bt2020,
    /// SMPTE RP 431 (DCI-P3, DCI white).
    DciP3,
    /// SMPTE EG 432 (Display P3, D65).
    DisplayP3,
    /// EBU Tech 3213 (D65).
    Ebu3213,
    /// Adobe RGB (1998) (D65).
    AdobeRgb,
    /// SMPTE ST 428 (CIE XYZ itself).
    Xyz,
}

/// CIE xy of the red, green, blue primaries and of the white point.
type Chromaticities = ([[f32; 2]; 3], [f32; 2]);

impl Primaries {
    fn chromaticities(self) -> Chromaticities {
        const D65: [f32; 2] = [0.3127, 0.3290];
        const C: [f32; 2] = [0.31, 0.316];
        const DCI: [f32; 2] = [0.314, 0.351];
        const E: [f32; 2] = [1.0 / 3.0, 1.0 / 3.0];
        match self {
            Primaries::Bt709 => ([[0.640, 0.330], [0.300, 0.600], [0.150, 0.060]], D65),
            Primaries::Bt470m => ([[0.670, 0.330], [0.210, 0.710], [0.140, 0.080]], C),
            Primaries::Bt470bg => ([[0.640, 0.330], [0.290, 0.600], [0.150, 0.060]], D65),
            Primaries::Smpte170m => ([[0.630, 0.340], [0.310, 0.595], [0.155, 0.070]], D65),
            Primaries::Film => ([[0.681, 0.319], [0.243, 0.692], [0.145, 0.049]], C),
            Primaries::Bt2020 => ([[0.708, 0.292], [0.170, 0.797], [0.131, 0.046]], D65),
            Primaries::DciP3 => ([[0.680, 0.320], [0.265, 0.690], [0.150, 0.060]], DCI),
            Primaries::DisplayP3 => ([[0.680, 0.320], [0.265, 0.690], [0.150, 0.060]], D65),
            Primaries::Ebu3213 => ([[0.630, 0.340], [0.295, 0.605], [0.155, 0.077]], D65),
            Primaries::AdobeRgb => ([[0.640, 0.330], [0.210, 0.710], [0.150, 0.060]], D65),
            Primaries::Xyz => ([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]], E),
        }
    }

    /// Linear RGB in these primaries → XYZ (white maps to the white point, Y = 1).
    fn to_xyz(self) -> M3 {
        if self == Primaries::Xyz {
            return M3::IDENTITY;
        }
        let (rgb, white) = self.chromaticities();
        let p = M3::from_columns(rgb.map(xy_to_xyz));
        let s = p.inverse().apply(xy_to_xyz(white));
        M3(core::array::from_fn(|i| p.0[i] * s[i % 3]))
    }

    /// Linear RGB in these primaries → linear RGB in BT.709, with a Bradford adaptation
    /// when the white points differ; `None` for BT.709 itself.
    pub fn to_bt709(self) -> Option<[f32; 9]> {
        if self == Primaries::Bt709 {
            return None;
        }
        let bradford = M3([
            0.8951, 0.2664, -0.1614, -0.7502, 1.7135, 0.0367, 0.0389, -0.0685, 1.0296,
        ]);
        let white_in = xy_to_xyz(self.chromaticities().1);
        let white_out = xy_to_xyz(Primaries::Bt709.chromaticities().1);
        let adapt = if white_in == white_out {
            M3::IDENTITY
        } else {
            let (a, b) = (bradford.apply(white_in), bradford.apply(white_out));
            let scale = M3([
                b[0] / a[0],
                0.0,
                0.0,
                0.0,
                b[1] / a[1],
                0.0,
                0.0,
                0.0,
                b[2] / a[2],
            ]);
            bradford.inverse().mul(&scale).mul(&bradford)
        };
        Some(
            Primaries::Bt709
                .to_xyz()
                .inverse()
                .mul(&adapt)
                .mul(&self.to_xyz())
                .0,
        )
    }
}

fn xy_to_xyz([x, y]: [f32; 2]) -> [f32; 3] {
    [x / y, 1.0, (1.0 - x - y) / y]
}

/// `a · b + c` with two roundings, as the reference's x86-64 build computes its matrix
/// products (no FMA there): so the matrices here equal its matrices bit for bit.
fn madd(a: f32, b: f32, c: f32) -> f32 {
    a * b + c
}

/// A 3×3 matrix, row-major, in f32 with the reference's (`yuvxyb`) order of operations:
/// the conversion matrices are derived exactly as the reference derives them.
#[derive(Clone, Copy, Debug, PartialEq)]
struct M3([f32; 9]);

impl M3 {
    const IDENTITY: M3 = M3([1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]);

    fn from_columns(c: [[f32; 3]; 3]) -> M3 {
        M3(core::array::from_fn(|i| c[i % 3][i / 3]))
    }

    fn at(&self, r: usize, c: usize) -> f32 {
        self.0[r * 3 + c]
    }

    /// Row · column, summed as a0·b0 + (a1·b1 + a2·b2).
    fn dot3(a: [f32; 3], b: [f32; 3]) -> f32 {
        madd(a[0], b[0], madd(a[1], b[1], a[2] * b[2]))
    }

    fn row(&self, r: usize) -> [f32; 3] {
        [self.at(r, 0), self.at(r, 1), self.at(r, 2)]
    }

    fn mul(&self, o: &M3) -> M3 {
        M3(core::array::from_fn(|i| {
            let (r, c) = (i / 3, i % 3);
            M3::dot3(self.row(r), [o.at(0, c), o.at(1, c), o.at(2, c)])
        }))
    }

    fn apply(&self, v: [f32; 3]) -> [f32; 3] {
        core::array::from_fn(|r| M3::dot3(self.row(r), v))
    }

    /// Inverse by Cramer's rule: the 2×2 minors, the determinant along the first row, the
    /// adjugate divided by it.
    fn inverse(&self) -> M3 {
        let s = |r: usize, c: usize| self.at(r - 1, c - 1);
        // minor(i, j): determinant without row i and column j.
        let minor = |i: usize, j: usize| {
            let rows: [usize; 2] = match i {
                1 => [2, 3],
                2 => [1, 3],
                _ => [1, 2],
            };
            let cols: [usize; 2] = match j {
                1 => [2, 3],
                2 => [1, 3],
                _ => [1, 2],
            };
            let (a, b) = (rows[0], rows[1]);
            let (c, d) = (cols[0], cols[1]);
            madd(s(a, c), s(b, d), -(s(b, c) * s(a, d)))
        };
        let det = madd(
            s(1, 1),
            minor(1, 1),
            -madd(s(1, 2), minor(1, 2), -(s(1, 3) * minor(1, 3))),
        );
        // Cofactor (i, j) goes to (j, i).
        M3(core::array::from_fn(|k| {
            let (r, c) = (k / 3 + 1, k % 3 + 1);
            let cof = minor(c, r);
            (if (r + c) % 2 == 0 { cof } else { -cof }) / det
        }))
    }
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

/// How subsampled chroma (4:2:0, 4:2:2) is brought to every luma pixel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ChromaUpsampling {
    /// 4-tap Catmull-Rom in each direction at the chroma siting (edges clamped).
    #[default]
    CatmullRom,
    /// The sample at x >> sub, y >> sub, ignoring the siting: what the reference
    /// (`yuvxyb`, so `ssimulacra2_rs video`) does.
    Nearest,
}

impl ChromaUpsampling {
    /// The values of the `chroma-upsampling` option (`crate::metric::option`), in its
    /// order.
    pub(crate) const ALL: [ChromaUpsampling; 2] =
        [ChromaUpsampling::CatmullRom, ChromaUpsampling::Nearest];
}

/// Colorimetry of one input (how its chroma is upsampled is the linear-light metrics'
/// `chroma-upsampling` option).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Colorimetry {
    pub matrix: Matrix,
    pub range: Range,
    pub transfer: Transfer,
    pub primaries: Primaries,
    pub siting: ChromaSiting,
}

impl Default for Colorimetry {
    /// BT.709 limited range through the BT.1886 display, left-sited chroma: what YUV video
    /// without colorimetry caps most likely is (and what the reference assumes for
    /// "unspecified").
    fn default() -> Self {
        Colorimetry {
            matrix: Matrix::Bt709,
            range: Range::Limited,
            transfer: Transfer::Bt1886,
            primaries: Primaries::Bt709,
            siting: ChromaSiting::default(),
        }
    }
}

impl Colorimetry {
    /// What to assume when the caps say nothing: BT.709 limited (BT.1886) for YUV, sRGB full
    /// range for RGB and gray.
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

    /// Fails for transfers that cannot be linearised.
    pub fn check_linearizable(&self, what: &str) -> Result<(), EngineError> {
        if self.transfer != Transfer::Other {
            return Ok(());
        }
        Err(EngineError::UnsupportedTransfer {
            input: what.to_string(),
        })
    }

    /// Kernel-side description of a frame with this colorimetry at the given planes, its
    /// chroma upsampled as `upsampling` says.
    pub(crate) fn source(
        &self,
        layout: &FrameLayout,
        planes: &PlanePtrs,
        upsampling: ChromaUpsampling,
    ) -> ColorSource {
        let f = layout.format;
        let chans = f.channels();
        let channel = |i: usize| planes.channel(&chans[i.min(chans.len() - 1)], f.peak());
        // code · scale + offset, as the reference builds it (f64, then f32).
        let depth = f.depth();
        let unit = f64::from(1u32 << depth) / 256.0;
        let peak = f64::from(f.peak());
        let (y_range, y_black) = match self.range {
            Range::Limited => (219.0 * unit, 16.0 * unit),
            Range::Full => (peak, 0.0),
        };
        let c_range = match self.range {
            Range::Limited => 224.0 * unit,
            Range::Full => peak,
        };
        let c_zero = f64::from(1u32 << (depth - 1));
        let (sub_x, sub_y) = f.subsampling();
        let site = |cosited: bool, sub: u32| {
            if cosited || sub == 0 {
                0.0
            } else {
                ((1u32 << sub) - 1) as f32 / 2.0
            }
        };
        let primaries = self.primaries.to_bt709();
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
                Transfer::Bt1886 => k::TRANSFER_BT1886,
                Transfer::Gamma22 => k::TRANSFER_GAMMA22,
                Transfer::Gamma28 => k::TRANSFER_GAMMA28,
                Transfer::Gamma18 => k::TRANSFER_GAMMA18,
                Transfer::Gamma20 => k::TRANSFER_GAMMA20,
                Transfer::AdobeRgb => k::TRANSFER_ADOBE_RGB,
                Transfer::Pq => k::TRANSFER_PQ,
                Transfer::Hlg => k::TRANSFER_HLG,
                Transfer::Log100 => k::TRANSFER_LOG100,
                Transfer::Log316 => k::TRANSFER_LOG316,
                Transfer::Linear | Transfer::Other => k::TRANSFER_LINEAR,
            },
            y_scale: (1.0 / y_range) as f32,
            y_offset: (-y_black / y_range) as f32,
            c_scale: (1.0 / c_range) as f32,
            c_offset: (-c_zero / c_range) as f32,
            black: y_black as f32,
            span: y_range as f32,
            yuv: self.matrix.to_rgb(),
            primaries: primaries.unwrap_or(M3::IDENTITY.0),
            convert_primaries: primaries.is_some() as u32,
            site_x: site(self.siting.h_cosited, sub_x),
            site_y: site(self.siting.v_cosited, sub_y),
            chroma_nearest: (upsampling == ChromaUpsampling::Nearest) as u32,
        }
    }
}

/// Linear RGB (interleaved, row-major) of a host frame: the documented conversion, e.g. to
/// feed a reference implementation the same pixels the engine measures (subsampled chroma
/// upsampled with Catmull-Rom, the `chroma-upsampling` default).
pub fn host_linear_rgb(
    layout: &FrameLayout,
    colorimetry: &Colorimetry,
    frame: &crate::HostFrame,
) -> Result<Vec<[f32; 3]>, EngineError> {
    let planes = frame.validate(layout, "input")?;
    let src = colorimetry.source(layout, &planes, ChromaUpsampling::CatmullRom);
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
        // (The reference's power function is good to about 2e-4.)
        assert!(close(i420(235, 128, 128, c), [1.0; 3], 3e-4));
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
        assert!(close(i420(128, 128, 128, full), [g; 3], 1e-4));
        // limited range mid grey through BT.1886: ((128 - 16) / 219)^2.4
        let g = (112.0f64 / 219.0).powf(2.4);
        assert!(close(i420(128, 128, 128, c), [g; 3], 1e-4));
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
            (Matrix::Fcc, 0.30, 0.11),
            (Matrix::Smpte240m, 0.212, 0.087),
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
    fn only_unknown_transfers_are_refused() {
        for t in [
            Transfer::Pq,
            Transfer::Hlg,
            Transfer::Bt1886,
            Transfer::Log100,
        ] {
            let c = Colorimetry {
                transfer: t,
                ..Colorimetry::default()
            };
            assert!(c.check_linearizable("reference").is_ok(), "{t:?}");
        }
        let other = Colorimetry {
            transfer: Transfer::Other,
            ..Colorimetry::default()
        };
        let e = other.check_linearizable("distorted").unwrap_err();
        assert_eq!(
            e,
            EngineError::UnsupportedTransfer {
                input: "distorted".into()
            }
        );
        assert!(
            e.to_string()
                .contains("the distorted input's transfer function")
        );
    }

    #[test]
    fn primaries_convert_white_to_white_and_bt2020_green_out_of_gamut() {
        for p in [
            Primaries::Bt470m,
            Primaries::Bt470bg,
            Primaries::Smpte170m,
            Primaries::Film,
            Primaries::Bt2020,
            Primaries::DciP3,
            Primaries::DisplayP3,
            Primaries::Ebu3213,
            Primaries::AdobeRgb,
        ] {
            let m = M3(p.to_bt709().unwrap());
            // White stays white: directly for D65, through the Bradford adaptation for the
            // illuminant C and DCI whites.
            let w = m.apply([1.0; 3]);
            assert!(w.iter().all(|v| (v - 1.0).abs() < 1e-6), "{p:?} {w:?}");
        }
        assert_eq!(Primaries::Bt709.to_bt709(), None);
        // BT.2020 → BT.709, the standard matrix (BT.2087): first row 1.6605, -0.5876, -0.0728.
        let m = Primaries::Bt2020.to_bt709().unwrap();
        for (got, want) in m[..3].iter().zip([1.6605f32, -0.5876, -0.0728]) {
            assert!((got - want).abs() < 2e-4, "{m:?}");
        }
        let g = M3(m).apply([0.0, 1.0, 0.0]);
        assert!(g[0] < 0.0 && g[1] > 1.0, "{g:?}");
        let i = M3(m).inverse().mul(&M3(m));
        assert!(
            i.0.iter()
                .zip(M3::IDENTITY.0)
                .all(|(a, b)| (a - b).abs() < 1e-6)
        );
    }
}
