//! ColorVideoVDP's display models (the reference's `display_models.json`, by name): how
//! display-encoded values become the light the display emits (photometry: the EOTF of the
//! model's colour space, peak luminance, black level from the contrast, and the ambient light
//! the screen reflects) and how many pixels a degree of visual angle holds (geometry: from
//! the resolution, the diagonal and the viewing distance). As the reference's
//! `vvdp_display_photo_eotf` and `vvdp_display_geometry`, in f64 for the per-model
//! constants and f32 per sample (the reference computes in torch's float32).

use std::sync::LazyLock;

use gpumetrics_kernels::cvvdp;
use serde_json::Value;

/// The reference's display models.
static MODELS: LazyLock<serde_json::Map<String, Value>> = LazyLock::new(|| {
    serde_json::from_str(include_str!("display_models.json"))
        .expect("the reference's display_models.json is a JSON object")
});

/// The reference's colour spaces (the EOTF of each).
static COLOUR_SPACES: LazyLock<serde_json::Map<String, Value>> = LazyLock::new(|| {
    serde_json::from_str(include_str!("color_spaces.json"))
        .expect("the reference's color_spaces.json is a JSON object")
});

/// How a display decodes its input.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Eotf {
    Srgb,
    Pq,
    Hlg,
    Linear,
    /// A power law with this exponent.
    Gamma(f32),
}

/// A display model of the reference.
#[derive(Clone, Debug, PartialEq)]
pub struct Display {
    pub name: String,
    pub eotf: Eotf,
    /// cd/m².
    pub peak: f64,
    pub contrast: f64,
    /// Ambient illuminance (lux) and the screen's reflectivity.
    pub ambient: f64,
    pub reflectivity: f64,
    pub exposure: f64,
    /// Pixels per degree at the centre of the screen.
    pub ppd: f64,
}

impl Display {
    /// The model named `name` (`standard_fhd`, `standard_4k`, `standard_hdr_pq`, ...), or
    /// the names there are.
    pub fn named(name: &str) -> Result<Display, String> {
        let model = MODELS
            .get(name)
            .ok_or_else(|| format!("no display model '{name}' (models: {})", names().join(", ")))?;
        let num = |k: &str| model.get(k).and_then(Value::as_f64);
        let peak = num("max_luminance").ok_or("max_luminance")?;
        let contrast = num("min_luminance")
            .map(|min| peak / min)
            .or_else(|| num("contrast"))
            .unwrap_or(500.0);
        let space = model
            .get("colorspace")
            .and_then(Value::as_str)
            .unwrap_or("sRGB");
        let eotf = COLOUR_SPACES
            .get(space)
            .and_then(|s| s.get("EOTF"))
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{name}: colour space '{space}' has no EOTF"))?;
        let eotf = match eotf {
            "sRGB" => Eotf::Srgb,
            "PQ" => Eotf::Pq,
            "HLG" => Eotf::Hlg,
            "linear" => Eotf::Linear,
            g => Eotf::Gamma(g.parse().map_err(|_| format!("{name}: EOTF '{g}'"))?),
        };
        Ok(Display {
            name: name.to_string(),
            eotf,
            peak,
            contrast,
            ambient: num("E_ambient").unwrap_or(0.0),
            reflectivity: num("k_refl").unwrap_or(0.005),
            exposure: num("exposure").unwrap_or(1.0),
            ppd: ppd(model).map_err(|e| format!("{name}: {e}"))?,
        })
    }

    /// Black level and reflected ambient light (cd/m²).
    pub fn black_and_reflection(&self) -> (f64, f64) {
        (
            self.peak / self.contrast,
            self.ambient / std::f64::consts::PI * self.reflectivity,
        )
    }

    /// The light (cd/m²) of display-encoded RGB `v` (0..1, clamped as the reference does):
    /// the kernels' [`light`](gpumetrics_kernels::cvvdp::light) of [`Display::photometry`].
    pub fn forward(&self, v: [f32; 3]) -> [f32; 3] {
        cvvdp::light(&self.photometry([0.0; 9]), v)
    }

    /// The model's photometry as the kernels take it, with the linear RGB → DKL matrix
    /// `rgb_to_dkl` (row-major), in float32 as the reference applies it per sample.
    pub fn photometry(&self, rgb_to_dkl: [f32; 9]) -> cvvdp::Display {
        let (black, refl) = self.black_and_reflection();
        let (eotf, gamma) = match self.eotf {
            Eotf::Srgb => (cvvdp::EOTF_SRGB, 1.0),
            Eotf::Pq => (cvvdp::EOTF_PQ, 1.0),
            Eotf::Linear => (cvvdp::EOTF_LINEAR, 1.0),
            Eotf::Gamma(g) => (cvvdp::EOTF_GAMMA, g),
            Eotf::Hlg => {
                let mut gamma = 1.2f64;
                if self.peak > 1000.0 {
                    gamma = 1.2 + 0.42 * (self.peak / 1000.0).log10()
                        - 0.076_23 * (self.ambient / 5.0).log10();
                }
                (cvvdp::EOTF_HLG, gamma as f32)
            }
        };
        let a = cvvdp::HLG_A;
        cvvdp::Display {
            eotf,
            peak: self.peak as f32,
            black: black as f32,
            reflection: refl as f32,
            exposure: self.exposure as f32,
            gamma,
            hlg_c: 0.5 - a * (4.0 * a).ln(),
            rgb_to_dkl,
        }
    }
}

/// XYZ to LMS (CIE 2006) and LMS to DKL (D65), the reference's matrices.
const XYZ_TO_LMS2006: [[f32; 3]; 3] = f32s([
    [0.187596268556126, 0.585168649077728, -0.026384263306304],
    [-0.133397430663221, 0.405505777260049, 0.034502127690364],
    [0.000244379021663, -0.000542995890619, 0.019406849066323],
]);
const LMS2006_TO_DKLD65: [[f32; 3]; 3] = f32s([
    [1.0, 1.0, 0.0],
    [1.0, -2.311130179947035, 0.0],
    [-1.0, -1.0, 50.97757132871878],
]);

/// The reference's float64 constants as torch makes them float32 (rounded to nearest).
const fn f32s(m: [[f64; 3]; 3]) -> [[f32; 3]; 3] {
    let mut out = [[0f32; 3]; 3];
    let mut i = 0;
    while i < 9 {
        out[i / 3][i % 3] = m[i / 3][i % 3] as f32;
        i += 1;
    }
    out
}

fn matmul(a: &[[f32; 3]; 3], b: &[[f32; 3]; 3]) -> [[f32; 3]; 3] {
    std::array::from_fn(|i| std::array::from_fn(|j| (0..3).map(|k| a[i][k] * b[k][j]).sum()))
}

impl Display {
    /// The matrix from the display's linear RGB to DKL (D65), as the reference multiplies
    /// it out in float32: LMS→DKL · XYZ→LMS · RGB→XYZ (the colour space's rows).
    pub fn rgb_to_dkl(&self) -> Result<[[f32; 3]; 3], String> {
        let space = MODELS[&self.name]
            .get("colorspace")
            .and_then(Value::as_str)
            .unwrap_or("sRGB");
        let cs = &COLOUR_SPACES[space];
        let row = |k: &str| -> Result<[f32; 3], String> {
            let a = cs
                .get(k)
                .and_then(Value::as_array)
                .ok_or(format!("{space}: {k}"))?;
            Ok(std::array::from_fn(|i| a[i].as_f64().unwrap_or(0.0) as f32))
        };
        let rgb2xyz = [row("RGB2X")?, row("RGB2Y")?, row("RGB2Z")?];
        Ok(matmul(
            &matmul(&LMS2006_TO_DKLD65, &XYZ_TO_LMS2006),
            &rgb2xyz,
        ))
    }
}

/// A pixel's DKL from its linear RGB (the reference's per-channel dot products).
pub fn to_dkl(m: &[[f32; 3]; 3], rgb: [f32; 3]) -> [f32; 3] {
    cvvdp::to_dkl(&flat(m), rgb)
}

/// A 3×3 matrix row-major, as the kernels take it.
pub fn flat(m: &[[f32; 3]; 3]) -> [f32; 9] {
    std::array::from_fn(|i| m[i / 3][i % 3])
}

/// The reference's display model names, in its file's order.
pub fn names() -> Vec<&'static str> {
    MODELS.keys().map(String::as_str).collect()
}

/// Pixels per degree at the centre, from the model's geometry.
fn ppd(model: &Value) -> Result<f64, String> {
    let num = |k: &str| model.get(k).and_then(Value::as_f64);
    let res = model
        .get("resolution")
        .and_then(Value::as_array)
        .filter(|r| r.len() == 2)
        .and_then(|r| Some((r[0].as_f64()?, r[1].as_f64()?)))
        .ok_or("no resolution")?;
    if let Some(ppd) = num("pixels_per_degree") {
        return Ok(ppd);
    }
    const INCH: f64 = 0.0254;
    let ar = res.0 / res.1;
    let diagonal = num("diagonal_size_meters")
        .map(|m| m / INCH)
        .or_else(|| num("diagonal_size_inches"));
    let mut size = diagonal.map(|d| {
        let h = ((d * 25.4).powi(2) / (1.0 + ar * ar)).sqrt();
        (ar * h / 1000.0, h / 1000.0)
    });
    // The reference's loader passes a diagonal field of view only.
    let fov = [None, None, num("fov_diagonal")];
    let distance = match num("viewing_distance_meters")
        .or_else(|| num("viewing_distance_inches").map(|i| i * INCH))
    {
        Some(m) => m,
        None if fov.iter().any(Option::is_some) => 3.0,
        None => return Err("no viewing distance".into()),
    };
    let tan_half = |deg: f64| (deg / 2.0).to_radians().tan();
    if let Some(h) = fov[0] {
        let w = 2.0 * tan_half(h) * distance;
        size = Some((w, w / ar));
    } else if let Some(v) = fov[1] {
        let h = 2.0 * tan_half(v) * distance;
        size = Some((h * ar, h));
    } else if let Some(d) = fov[2] {
        let distance_px = (res.0 * res.0 + res.1 * res.1).sqrt() / (2.0 * tan_half(d));
        let height_deg = (res.1 / 2.0 / distance_px).atan().to_degrees() * 2.0;
        let h = 2.0 * tan_half(height_deg) * distance;
        size = Some((h * ar, h));
    }
    let width = size.ok_or("no display size")?.0;
    let pix_deg = 2.0 * (0.5 * width / res.0 / distance).atan().to_degrees();
    Ok(1.0 / pix_deg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_model_of_the_reference_loads() {
        for name in names() {
            let d = Display::named(name).unwrap();
            assert!(d.ppd > 10.0 && d.peak > 0.0, "{d:?}");
        }
        assert!(Display::named("nope").unwrap_err().contains("standard_fhd"));
    }
}
