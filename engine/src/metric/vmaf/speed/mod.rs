//! SpEED chroma (libvmaf v3.2.0's float `speed_chroma` extractor), the chroma feature of the
//! vmaf_v1.0.16 models: `Speed_chroma_feature_speed_chroma_uv_score`, the mean of the U and
//! V planes' SpEED scores, capped at `speed_max_val`.
//!
//! The per-sample, per-entry and per-block steps are `gpumetrics_kernels::speed` (shared with
//! a future GPU path); this module holds the options with libvmaf's defaults, the size check
//! libvmaf's init makes (so that caps can be refused before any frame), and the filter taps,
//! which need `exp` and are computed once per stream. [`cpu::SpeedChroma`] runs the steps on
//! the CPU, [`cuda::SpeedChromaCuda`] the per-element ones on the GPU; both finish with
//! [`solve`] on the host.
//!
//! The feature keeps no state across frames (libvmaf's chroma extractor has none; only its
//! temporal sibling does), so a pair's score depends on that pair alone.
//!
//! Not yet read by the VMAF metric (the v1 models' wiring comes separately): until then only
//! the tests call it.
#![allow(dead_code)]

mod cpu;
mod cuda;
#[cfg(test)]
mod reference_tests;
mod solve;

#[allow(unused_imports)]
pub(crate) use cpu::SpeedChroma;
#[allow(unused_imports)]
pub(crate) use cuda::SpeedChromaCuda;
#[allow(unused_imports)]
pub(crate) use solve::ChromaScores;

use crate::format::{ChannelSpec, ColorFamily};
use crate::plan::Plan;
use gpumetrics_kernels::speed::{self as k, BLOCK, Dims, DimsError, Resample};

/// `speed_prescale_method`: how the plane is resampled before filtering.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum PrescaleMethod {
    /// libvmaf's default.
    #[default]
    Nearest,
    Bilinear,
    Bicubic,
    /// Accepted by libvmaf; refused here (its kernel needs `sin`, which the kernels do not
    /// have, and no VMAF model uses it).
    Lanczos4,
}

impl PrescaleMethod {
    /// The method of libvmaf's option string.
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        match name {
            "nearest" => Some(Self::Nearest),
            "bilinear" => Some(Self::Bilinear),
            "bicubic" => Some(Self::Bicubic),
            "lanczos4" => Some(Self::Lanczos4),
            _ => None,
        }
    }

    fn kernel(self) -> Option<Resample> {
        match self {
            Self::Nearest => Some(Resample::Nearest),
            Self::Bilinear => Some(Resample::Bilinear),
            Self::Bicubic => Some(Resample::Bicubic),
            Self::Lanczos4 => None,
        }
    }
}

/// The options of libvmaf's `speed_chroma`, named as there without the `speed_` prefix;
/// [`Default`] is libvmaf's defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct SpeedOptions {
    /// `speed_kernelscale` (0.1..=4, one of libvmaf's listed scales): widens the Gaussian
    /// filters. Default 1.
    pub kernelscale: f64,
    /// `speed_prescale` (0.1..=4): resampling factor applied to each chroma plane first.
    /// Default 1 (none).
    pub prescale: f64,
    /// `speed_prescale_method`. Default nearest.
    pub prescale_method: PrescaleMethod,
    /// `speed_sigma_nn` (0.1..=2): the neural noise's standard deviation (added as is to
    /// the variances, as libvmaf does). Default 0.29.
    pub sigma_nn: f64,
    /// `speed_nn_floor` (0..=1): the noise floor as a fraction of `sigma_nn`; blocks whose
    /// entropies are both below it do not count. Default 0.
    pub nn_floor: f64,
    /// `speed_weight_var_mode` (0..=6): which variances weight the entropies. Default 0.
    pub weight_var_mode: u32,
    /// `speed_max_val` (0..=1000): the cap of the score. Default 1000.
    pub max_val: f64,
}

impl Default for SpeedOptions {
    fn default() -> Self {
        SpeedOptions {
            kernelscale: 1.0,
            prescale: 1.0,
            prescale_method: PrescaleMethod::Nearest,
            sigma_nn: 0.29,
            nn_floor: 0.0,
            weight_var_mode: 0,
            max_val: 1000.0,
        }
    }
}

impl SpeedOptions {
    /// Sets one option from a model's feature options (libvmaf's names; ranges are
    /// [`check`]'s); an unknown name is an error.
    pub(crate) fn set(&mut self, key: &str, value: &serde_json::Value) -> Result<(), String> {
        let number = || {
            value
                .as_f64()
                .ok_or_else(|| format!("{key} is not a number"))
        };
        match key {
            "speed_kernelscale" => self.kernelscale = number()?,
            "speed_prescale" => self.prescale = number()?,
            "speed_prescale_method" => {
                self.prescale_method = value
                    .as_str()
                    .and_then(PrescaleMethod::from_name)
                    .ok_or_else(|| format!("{key} {value} is not a resampling method"))?
            }
            "speed_sigma_nn" => self.sigma_nn = number()?,
            "speed_nn_floor" => self.nn_floor = number()?,
            "speed_max_val" => self.max_val = number()?,
            "speed_weight_var_mode" => {
                let v = number()?;
                if v.fract() != 0.0 || !(0.0..=6.0).contains(&v) {
                    return Err(format!("{key} = {v} is not a whole number from 0 to 6"));
                }
                self.weight_var_mode = v as u32
            }
            _ => {
                return Err(format!(
                    "feature option {key} of speed_chroma is not supported"
                ));
            }
        }
        Ok(())
    }

    /// vmaf_v1.0.16 `3d0h` (and `1d5h_2160`, which leaves kernelscale at its default 1).
    pub(crate) fn v1_3d0h() -> Self {
        SpeedOptions {
            kernelscale: 1.0,
            sigma_nn: 0.19,
            nn_floor: 0.1,
            weight_var_mode: 5,
            max_val: 45.0,
            ..Default::default()
        }
    }

    /// vmaf_v1.0.16 `1d5h_2160`.
    pub(crate) fn v1_1d5h_2160() -> Self {
        Self::v1_3d0h()
    }

    /// vmaf_v1.0.16 `3d0h_2160`: planes halved (bilinear) first.
    pub(crate) fn v1_3d0h_2160() -> Self {
        SpeedOptions {
            prescale: 0.5,
            prescale_method: PrescaleMethod::Bilinear,
            ..Self::v1_3d0h()
        }
    }

    /// vmaf_v1.0.16_hfr `5d0h`: planes scaled by 0.6 (bilinear) first.
    pub(crate) fn v1_5d0h() -> Self {
        SpeedOptions {
            prescale: 0.6,
            prescale_method: PrescaleMethod::Bilinear,
            ..Self::v1_3d0h()
        }
    }
}

/// What both backends derive from the plan and the options, checked as libvmaf checks them
/// (see [`check`]), refusing inputs without chroma planes.
struct Setup {
    opts: SpeedOptions,
    dims: Dims,
    resample: Resample,
    /// U and V: (reference, distorted) channel specs.
    channels: [(ChannelSpec, ChannelSpec); 2],
    /// Peaks of the reference and distorted formats (the distorted is rescaled to the
    /// reference's depth before conversion, as VMAF's luma is).
    peaks: (u32, u32),
    /// The anti-alias and local-mean filters' taps ([`filters`]).
    antialias: Vec<f32>,
    local: Vec<f32>,
}

impl Setup {
    fn new(plan: &Plan, opts: SpeedOptions) -> Result<Self, String> {
        let (rf, df) = (plan.reference.format, plan.distorted.format);
        if rf.family() != ColorFamily::Yuv || df.family() != ColorFamily::Yuv {
            return Err(format!(
                "speed_chroma: needs YUV inputs with chroma planes, not {} and {}",
                rf.name(),
                df.name()
            ));
        }
        let find = |name: &str| {
            plan.channels
                .iter()
                .find(|(r, _)| r.name == name)
                .copied()
                .ok_or_else(|| format!("speed_chroma: {} has no {name} channel", rf.name()))
        };
        let channels = [find("u")?, find("v")?];
        let (w, h) = (plan.reference.width, plan.reference.height);
        let dims = dims(w, h, rf.subsampling(), &opts)?;
        let resample = opts
            .prescale_method
            .kernel()
            .ok_or("speed_chroma: unsupported speed_prescale_method")?;
        // The channels must hold the measured region (libvmaf's rounded-down chroma size).
        for (rc, _) in &channels {
            let (cw, ch) = plan.reference.channel_size(rc);
            if (cw as usize) < dims.width || (ch as usize) < dims.height {
                return Err("speed_chroma: chroma planes smaller than expected".into());
            }
        }
        let (antialias, local) = filters(opts.kernelscale);
        Ok(Setup {
            opts,
            dims,
            resample,
            channels,
            peaks: (rf.peak(), df.peak()),
            antialias,
            local,
        })
    }
}

/// libvmaf's accepted `speed_kernelscale` values (it compares as `float` within 1e-3).
const KERNELSCALES: [f32; 21] = [
    1.0,
    1.0 / 2.0,
    3.0 / 2.0,
    2.0,
    2.0 / 3.0,
    24.0 / 10.0,
    360.0 / 97.0,
    4.0 / 3.0,
    3.5 / 3.0,
    3.75 / 3.0,
    4.25 / 3.0,
    5.0 / 3.0,
    3.0,
    1.0 / 2.25,
    1.4746,
    1.54,
    1.6,
    1.06667,
    0.711111,
    0.740740,
    1.111111,
];

fn in_range(name: &str, v: f64, lo: f64, hi: f64) -> Result<(), String> {
    if (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(format!("speed_chroma: {name} {v} is outside {lo}..={hi}"))
    }
}

/// The options' own check (ranges as libvmaf's option table, its kernelscale list).
fn check_options(o: &SpeedOptions) -> Result<(), String> {
    in_range("speed_kernelscale", o.kernelscale, 0.1, 4.0)?;
    in_range("speed_prescale", o.prescale, 0.1, 4.0)?;
    in_range("speed_sigma_nn", o.sigma_nn, 0.1, 2.0)?;
    in_range("speed_nn_floor", o.nn_floor, 0.0, 1.0)?;
    in_range("speed_max_val", o.max_val, 0.0, 1000.0)?;
    if o.weight_var_mode > k::stats::MAX_WEIGHT_MODE {
        return Err(format!(
            "speed_chroma: speed_weight_var_mode {} is outside 0..=6",
            o.weight_var_mode
        ));
    }
    let ks = o.kernelscale as f32;
    if !KERNELSCALES
        .iter()
        .any(|v| (((ks - v).abs()) as f64) < 1e-3)
    {
        return Err(format!(
            "speed_chroma: invalid speed_kernelscale {} (libvmaf accepts 1, 1/2, 3/2, 2, 2/3, \
             2.4, 360/97, 4/3, 3.5/3, 3.75/3, 4.25/3, 5/3, 3, 1/2.25, 1.4746, 1.54, 1.6, \
             1.06667, 0.711111, 0.74074, 1.111111)",
            o.kernelscale
        ));
    }
    if o.prescale_method.kernel().is_none() {
        return Err(
            "speed_chroma: speed_prescale_method lanczos4 is not supported (nearest, \
                    bilinear and bicubic are)"
                .into(),
        );
    }
    Ok(())
}

/// The chroma planes' sizes as libvmaf measures them: the luma size shifted down by the
/// subsampling (rounded down, so an odd 4:2:0 frame loses its last chroma column and row).
fn chroma_size(width: u32, height: u32, (sub_x, sub_y): (u32, u32)) -> (usize, usize) {
    ((width >> sub_x) as usize, (height >> sub_y) as usize)
}

fn dims(
    width: u32,
    height: u32,
    subsampling: (u32, u32),
    o: &SpeedOptions,
) -> Result<Dims, String> {
    check_options(o)?;
    let (cw, ch) = chroma_size(width, height, subsampling);
    let d = Dims::new(cw, ch, o.prescale, BLOCK).map_err(|e| match e {
        DimsError::TooSmall => format!(
            "speed_chroma: image too small, operating width or height is 0 (libvmaf's \
             refusal): {width}x{height} has {cw}x{ch} chroma samples, {} after \
             speed_prescale {}, and SpEED needs at least {} per side (5 after its 16x \
             reduction)",
            format_args!(
                "{}x{}",
                (cw as f64 * o.prescale + 0.5) as usize,
                (ch as f64 * o.prescale + 0.5) as usize
            ),
            o.prescale,
            BLOCK << k::SCALES,
        ),
        DimsError::PrescaleNearOne => format!(
            "speed_chroma: speed_prescale {} is within 1e-3 of 1, so libvmaf does not \
             resample, yet it changes the {cw}x{ch} chroma size (libvmaf would read \
             unwritten samples); use 1",
            o.prescale
        ),
    })?;
    // Enlarging multiplies the buffers: keep them within the engine's frame-size bound.
    if d.scaled_width as u64 * d.scaled_height as u64 > crate::plan::MAX_PIXELS {
        return Err(format!(
            "speed_chroma: speed_prescale {} makes the {cw}x{ch} chroma planes {}x{}, larger \
             than supported ({} samples)",
            o.prescale,
            d.scaled_width,
            d.scaled_height,
            crate::plan::MAX_PIXELS
        ));
    }
    Ok(d)
}

/// Whether libvmaf's `speed_chroma` accepts a `width`×`height` frame with this chroma
/// subsampling (log2 per axis, as `PixelFormat::subsampling`) and these options; the error
/// is the reason, libvmaf's words first where it has them.
pub(crate) fn check(
    width: u32,
    height: u32,
    subsampling: (u32, u32),
    opts: &SpeedOptions,
) -> Result<(), String> {
    dims(width, height, subsampling, opts).map(|_| ())
}

/// libvmaf's normalised Gaussian of `len` taps and deviation `stdev`, in its precision
/// (each weight `exp` in f64 over an f64 normaliser, stored as f32, then divided by the f32
/// sum).
fn gaussian(len: usize, stdev: f32) -> Vec<f32> {
    let half = (len as i32 - 1) / 2;
    let den = (1.0 / (stdev as f64 * (2.0 * std::f64::consts::PI).sqrt())) as f32;
    let mut taps: Vec<f32> = (0..len as i32)
        .map(|i| {
            let x = (i - half) as f32 as f64;
            let s = stdev as f64;
            let num = (-0.5 * x / s * x / s).exp() as f32;
            num / den
        })
        .collect();
    let mut sum = 0.0f32;
    for &t in &taps {
        sum += t;
    }
    for t in &mut taps {
        *t /= sum;
    }
    taps
}

/// The anti-alias filter (scale 1's length, 2× its deviation: libvmaf's "sigma trick") and
/// the local-mean filter (scale 4's) at `kernelscale`.
fn filters(kernelscale: f64) -> (Vec<f32>, Vec<f32>) {
    let ks = kernelscale as f32;
    let aa = k::filter_len(1, ks);
    let local = k::filter_len(k::SCALES, ks);
    let aa_dev = ((k::SCALES as f64).sqrt() * aa as f64 / 5.0) as f32;
    (gaussian(aa, aa_dev), gaussian(local, local as f32 / 5.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_libvmafs() {
        let d = SpeedOptions::default();
        assert_eq!(
            (
                d.kernelscale,
                d.prescale,
                d.sigma_nn,
                d.nn_floor,
                d.weight_var_mode,
                d.max_val
            ),
            (1.0, 1.0, 0.29, 0.0, 0, 1000.0)
        );
        assert_eq!(d.prescale_method, PrescaleMethod::Nearest);
        let v = SpeedOptions::v1_5d0h();
        assert_eq!(
            (v.prescale, v.prescale_method),
            (0.6, PrescaleMethod::Bilinear)
        );
        assert_eq!(
            (v.sigma_nn, v.nn_floor, v.weight_var_mode, v.max_val),
            (0.19, 0.1, 5, 45.0)
        );
        assert_eq!(SpeedOptions::v1_3d0h_2160().prescale, 0.5);
        assert_eq!(
            PrescaleMethod::from_name("bilinear"),
            Some(PrescaleMethod::Bilinear)
        );
        assert_eq!(PrescaleMethod::from_name("area"), None);
    }

    #[test]
    fn small_frames_are_refused_as_libvmaf_refuses_them() {
        let o = SpeedOptions::v1_3d0h();
        // 4:2:0 needs 160x160 (80 chroma samples per side), 4:4:4 80x80, 4:2:2 160x80.
        assert!(check(160, 160, (1, 1), &o).is_ok());
        let e = check(158, 160, (1, 1), &o).unwrap_err();
        assert!(e.contains("image too small"), "{e}");
        assert!(check(160, 158, (1, 1), &o).is_err());
        assert!(check(80, 80, (0, 0), &o).is_ok());
        assert!(check(79, 80, (0, 0), &o).is_err());
        assert!(check(160, 80, (1, 0), &o).is_ok());
        assert!(check(158, 80, (1, 0), &o).is_err());
        // Odd sizes round the chroma down: 161 columns are 80 chroma samples, 159 are 79.
        assert!(check(161, 161, (1, 1), &o).is_ok());
        assert!(check(159, 161, (1, 1), &o).is_err());
        // Halving first needs twice the size.
        let half = SpeedOptions::v1_3d0h_2160();
        assert!(check(318, 318, (1, 1), &half).is_ok());
        let e = check(316, 320, (1, 1), &half).unwrap_err();
        assert!(e.contains("image too small") && e.contains("79x80"), "{e}");
        assert!(check(1920, 1080, (1, 1), &half).is_ok());
    }

    #[test]
    fn bad_options_are_refused() {
        let o = SpeedOptions::default;
        for bad in [
            SpeedOptions {
                kernelscale: 1.2,
                ..o()
            },
            SpeedOptions {
                kernelscale: 5.0,
                ..o()
            },
            SpeedOptions {
                prescale: 0.05,
                ..o()
            },
            SpeedOptions {
                sigma_nn: 0.0,
                ..o()
            },
            SpeedOptions {
                nn_floor: 1.5,
                ..o()
            },
            SpeedOptions {
                max_val: -1.0,
                ..o()
            },
            SpeedOptions {
                weight_var_mode: 7,
                ..o()
            },
            SpeedOptions {
                prescale: 1.0004,
                ..o()
            },
            SpeedOptions {
                prescale_method: PrescaleMethod::Lanczos4,
                ..o()
            },
        ] {
            assert!(check(3840, 2160, (1, 1), &bad).is_err(), "{bad:?}");
        }
        assert!(
            check(
                640,
                480,
                (1, 1),
                &SpeedOptions {
                    kernelscale: 0.5,
                    ..o()
                }
            )
            .is_ok()
        );
        assert!(
            check(
                640,
                480,
                (1, 1),
                &SpeedOptions {
                    prescale: 1.0004,
                    ..o()
                }
            )
            .is_ok()
        );
    }

    #[test]
    fn filters_are_normalised_gaussians_of_libvmafs_lengths() {
        let (aa, local) = filters(1.0);
        assert_eq!((aa.len(), local.len()), (9, 3));
        for f in [&aa, &local] {
            let s: f32 = f.iter().sum();
            assert!((s - 1.0).abs() < 1e-6, "{s}");
            for i in 0..f.len() / 2 {
                assert_eq!(f[i], f[f.len() - 1 - i]);
            }
        }
        // Deviation 3.6 over 9 taps: the edge tap is exp(-16/(2*3.6^2)) of the centre one.
        let ratio = aa[0] / aa[4];
        assert!((ratio as f64 - (-16.0f64 / (2.0 * 3.6 * 3.6)).exp()).abs() < 1e-6);
        assert_eq!(filters(2.0).0.len(), 19);
    }
}
