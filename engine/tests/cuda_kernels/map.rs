//! The distortion-map kernels (`map_*`): the CUDA backend's squared-error and SSIM maps
//! against the CPU backend's (the host build of the same per-sample code), pixel by pixel,
//! on RGB (the mean of three channels), I420 and gray pairs, one smaller than the SSIM
//! window (SciPy's reflection past both edges); and the Butteraugli map that `ba_reduce`
//! stores, SSIMULACRA2's that `ssimu2_map` makes and ColorVideoVDP's heat map that
//! `cvvdp_mask`, `cvvdp_base`, `cvvdp_heat_up` and `cvvdp_heat_jod` make, against the CPU
//! backend's (relative to the map's largest value; the 7×5 pair is too small for
//! SSIMULACRA2, a map of zeros from both, and for Butteraugli, no map from either).

use std::sync::Arc;

use cudarc::driver::{CudaStream, DriverError};
use gpumetrics_engine::cuda::Kernels;
use gpumetrics_engine::map::MapKind;
use gpumetrics_engine::{
    BackendChoice, Engine, EngineConfig, Frame, FrameLayout, HostFrame, MetricSet, PixelFormat,
};

use crate::common::{self, Rng};
use crate::{Check, Outcome};

pub(crate) const CHECKS: &[(&[&str], Check)] = &[
    (&["map_squared_error"], squared_error),
    (&["map_ssim_down", "map_ssim_across"], ssim),
    (&["ba_reduce"], butteraugli),
    (&["ssimu2_map"], ssimulacra2),
    (&["cvvdp_heat_up", "cvvdp_heat_jod"], cvvdp),
];

crate::gpu_tests! {
    squared_error_map_matches_the_host => "map_squared_error",
    ssim_map_matches_the_host => "map_ssim_down",
    butteraugli_map_matches_the_host => "ba_reduce",
    ssimulacra2_map_matches_the_host => "ssimu2_map",
    cvvdp_map_matches_the_host => "cvvdp_heat_up",
}

fn squared_error(_k: &Kernels, _s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    Ok(compare(
        r,
        MetricSet::PSNR,
        MapKind::SquaredError,
        0.0,
        false,
    ))
}

/// Both backends run the same f64 operations in the same order (no fused multiply-adds):
/// only the last f32 rounding could differ.
fn ssim(_k: &Kernels, _s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    Ok(compare(r, MetricSet::PSNR, MapKind::Ssim, 1e-6, false))
}

/// The kernels and the host build run the same per-pixel code; the Gaussians' sums and
/// fused multiply-adds may round differently, as for the scores (1e-4 relative there).
fn butteraugli(_k: &Kernels, _s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    Ok(compare(
        r,
        MetricSet::BUTTERAUGLI,
        MapKind::Butteraugli,
        1e-4,
        true,
    ))
}

/// The values the column pass stores are the host's (the scores agree to 1e-12); the
/// terms come from sums added in another order, so the last bits may differ.
fn ssimulacra2(_k: &Kernels, _s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    Ok(compare(
        r,
        MetricSet::SSIMULACRA2,
        MapKind::Ssimulacra2,
        1e-5,
        true,
    ))
}

/// The band heats come from the same per-sample code as the CPU's; the device's powers
/// (`exp2(y·log2 x)`) differ from the host's in the last bits.
fn cvvdp(_k: &Kernels, _s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    Ok(compare(
        r,
        MetricSet::named("cvvdp").expect("a metric"),
        MapKind::Cvvdp,
        1e-4,
        true,
    ))
}

/// The `kind` map of both backends measuring `metrics` with it, the largest difference
/// per pixel (divided by the CPU map's largest magnitude when `relative`).
fn compare(
    r: &mut Rng,
    metrics: MetricSet,
    kind: MapKind,
    tolerance: f64,
    relative: bool,
) -> Outcome {
    let mut out = Outcome {
        elements: 0,
        max_err: 0.0,
        tolerance,
        note: String::new(),
    };
    for (format, w, h) in [
        (PixelFormat::Rgb, 173usize, 97usize),
        (PixelFormat::I420, 173, 97),
        (PixelFormat::Gray8, 7, 5),
    ] {
        let len = match format {
            PixelFormat::Rgb => 3 * w * h,
            PixelFormat::I420 => w * h + 2 * w.div_ceil(2) * h.div_ceil(2),
            _ => w * h,
        };
        let a = r.bytes(len);
        let noise = r.bytes(len);
        let b: Vec<u8> = a
            .iter()
            .zip(&noise)
            .map(|(v, n)| v.saturating_add(n % 32).saturating_sub(16))
            .collect();
        let layout = FrameLayout {
            format,
            width: w as u32,
            height: h as u32,
        };
        let planes = |d| common::images::planes(format, w as u32, h as u32, d);
        let (pa, pb) = (planes(&a), planes(&b));
        let (fa, fb) = (
            Frame::Host(HostFrame::new(&pa)),
            Frame::Host(HostFrame::new(&pb)),
        );
        let maps = [BackendChoice::Cuda, BackendChoice::Cpu].map(|backend| {
            let cfg = EngineConfig {
                metrics,
                backend,
                ..Default::default()
            };
            let s = Engine::builder(&cfg, layout, layout)
                .map(kind)
                .build()
                .and_then(|mut e| e.compare(&fa, &fb));
            s.map(|s| s.map().map(|(_, m)| m.values.clone()))
        });
        match maps {
            [Ok(Some(gpu)), Ok(Some(cpu))] if gpu.len() == cpu.len() => {
                let scale = if relative {
                    cpu.iter()
                        .fold(f64::MIN_POSITIVE, |m, c| m.max((*c as f64).abs()))
                } else {
                    1.0
                };
                let err = gpu
                    .iter()
                    .zip(&cpu)
                    .map(|(g, c)| (*g as f64 - *c as f64).abs() / scale)
                    .fold(0f64, f64::max);
                out.elements += gpu.len();
                out.max_err = out.max_err.max(err);
                out.note += &format!("{} {w}x{h}: {err:.1e}; ", format.name());
            }
            // A pair too small for the metric's map (Butteraugli's): none from either.
            [Ok(None), Ok(None)] => {
                out.note += &format!("{} {w}x{h}: no map from either; ", format.name());
            }
            // A pair the metric refuses (too small) must be refused by both, alike.
            [Err(g), Err(c)] if g.to_string() == c.to_string() => {
                out.note += &format!("{} {w}x{h}: both refuse ({g}); ", format.name());
            }
            other => {
                out.max_err = f64::INFINITY;
                out.note += &format!("{} {w}x{h}: {other:?}; ", format.name());
            }
        }
    }
    out
}
