//! The distortion-map kernels (`map_*`): the CUDA backend's squared-error and SSIM maps
//! against the CPU backend's (the host build of the same per-sample code), pixel by pixel,
//! on RGB (the mean of three channels), I420 and gray pairs, one smaller than the SSIM
//! window (SciPy's reflection past both edges); the Butteraugli map that `ba_reduce`
//! stores, SSIMULACRA2's that `ssimu2_map_terms`, `ssimu2_map_scale` and `ssimu2_map_sum`
//! make and ColorVideoVDP's heat map that `cvvdp_mask`, `cvvdp_base`, `cvvdp_heat_up` and
//! `cvvdp_heat_jod` make, against the CPU backend's (relative to the map's largest value;
//! the 7×5 pair is too small for SSIMULACRA2, a map of zeros from both, and for
//! Butteraugli, no map from either); and a map handed out in device memory: its statistics
//! (`map_stats`) and frames (`map_gray16`, `map_heat`) against the host's.

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
    (&["map_ssim"], ssim),
    (&["ba_reduce"], butteraugli),
    (
        &["ssimu2_map_terms", "ssimu2_map_scale", "ssimu2_map_sum"],
        ssimulacra2,
    ),
    (&["cvvdp_heat_up", "cvvdp_heat_jod"], cvvdp),
    (&["map_stats", "map_gray16", "map_heat"], handout),
];

crate::gpu_tests! {
    squared_error_map_matches_the_host => "map_squared_error",
    ssim_map_matches_the_host => "map_ssim",
    butteraugli_map_matches_the_host => "ba_reduce",
    ssimulacra2_map_matches_the_host => "ssimu2_map_scale",
    cvvdp_map_matches_the_host => "cvvdp_heat_up",
    maps_stats_and_frames_match_the_host => "map_stats",
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
/// (`exp2(y·log2 x)`) differ from the host's in the last bits. Then each map of a sequence
/// of four I420 160×90 pairs: past the first, `cvvdp_dkl_temporal` makes them, on a
/// history in f32 (a heat map's).
fn cvvdp(_k: &Kernels, _s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    let single = compare(
        r,
        MetricSet::named("cvvdp").expect("a metric"),
        MapKind::Cvvdp,
        1e-4,
        true,
    );
    Ok(crate::engine::merge(
        single,
        cvvdp_sequence(r),
        "I420 160x90, four pairs",
    ))
}

/// [`cvvdp`]'s sequence: each pair's map from both backends, relative to the CPU map's
/// largest magnitude.
fn cvvdp_sequence(r: &mut Rng) -> Outcome {
    let mut out = Outcome::new(1e-4);
    let (w, h) = (160usize, 90usize);
    let pairs: Vec<_> = (0..4)
        .map(|_| pair(r, PixelFormat::I420, w, h, false))
        .collect();
    let layout = pairs[0].0;
    let maps = [BackendChoice::Cuda, BackendChoice::Cpu].map(|backend| {
        let cfg = EngineConfig {
            metrics: MetricSet::named("cvvdp").expect("a metric"),
            backend,
            ..Default::default()
        };
        let mut e = Engine::builder(&cfg, layout, layout)
            .map(MapKind::Cvvdp)
            .build()
            .map_err(|e| e.to_string())?;
        let mut maps = Vec::new();
        for (_, a, b) in &pairs {
            let planes = |d| common::images::planes(PixelFormat::I420, w as u32, h as u32, d);
            let (pa, pb) = (planes(a), planes(b));
            let s = e
                .compare(
                    &Frame::Host(HostFrame::new(&pa)),
                    &Frame::Host(HostFrame::new(&pb)),
                )
                .map_err(|e| e.to_string())?;
            let map = s.map().ok_or("no map")?;
            maps.push(map.values().map_err(|e| e.to_string())?.values.clone());
        }
        Ok::<_, String>(maps)
    });
    match maps {
        [Ok(gpu), Ok(cpu)] if gpu.len() == cpu.len() => {
            for (t, (g, c)) in gpu.iter().zip(&cpu).enumerate() {
                let err = if g.len() == c.len() {
                    largest_difference(g, c, true)
                } else {
                    f64::INFINITY
                };
                out.elements += g.len();
                out.max_err = out.max_err.max(err);
                out.note += &format!("pair {t}: {err:.1e}; ");
            }
        }
        other => {
            out.max_err = f64::INFINITY;
            out.note += &format!("{:?}", other.map(|m| m.map(|v| v.len())));
        }
    }
    out
}

/// A map handed out in device memory (`map_stats`, `map_gray16`, `map_heat`): the
/// statistics the device made equal the host's of the same values, exactly (largest value,
/// first pixel holding it, count past the threshold; SSIM counting below it); its frames
/// rendered on the device, copied to the host and rendered into device memory of the
/// engine's context, equal the host's rendering of the same values byte for byte, in both
/// styles, rows at a padded stride. Sizes of one pixel to several times the stats kernel's
/// stride (264 × 256 values).
fn handout(_k: &Kernels, s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    use gpumetrics_engine::map::{MapStyle, PairMap};
    let mut out = Outcome::new(0.0);
    let fail = |out: &mut Outcome, why: String| {
        out.max_err = f64::INFINITY;
        out.note += &why;
        out.note += "; ";
    };
    for (w, h) in [(1usize, 1usize), (173, 97), (640, 360)] {
        for (metrics, kind) in [
            (MetricSet::PSNR, MapKind::SquaredError),
            (MetricSet::PSNR, MapKind::Ssim),
            (MetricSet::BUTTERAUGLI, MapKind::Butteraugli),
        ] {
            if kind == MapKind::Butteraugli && w < 8 {
                continue;
            }
            // Flat areas (many equal values: ties for the largest) and noise.
            let (layout, a, b) = pair(r, PixelFormat::I420, w, h, true);
            let planes = |d| common::images::planes(layout.format, w as u32, h as u32, d);
            let (pa, pb) = (planes(&a), planes(&b));
            let cfg = EngineConfig {
                metrics,
                backend: BackendChoice::Cuda,
                ..Default::default()
            };
            let scores = Engine::builder(&cfg, layout, layout)
                .map(kind)
                .build()
                .and_then(|mut e| {
                    e.compare(
                        &Frame::Host(HostFrame::new(&pa)),
                        &Frame::Host(HostFrame::new(&pb)),
                    )
                });
            let scores = match scores {
                Ok(s) => s,
                Err(e) => {
                    fail(&mut out, format!("{} {w}x{h}: {e}", kind.name()));
                    continue;
                }
            };
            let Some(map) = scores.map() else {
                fail(&mut out, format!("{} {w}x{h}: no map", kind.name()));
                continue;
            };
            if !map.on_device() {
                fail(
                    &mut out,
                    format!("{} {w}x{h}: not in device memory", kind.name()),
                );
            }
            let values = match map.values() {
                Ok(v) => v,
                Err(e) => {
                    fail(&mut out, format!("{} {w}x{h}: {e}", kind.name()));
                    continue;
                }
            };
            let t = kind.default_threshold(255.0) as f32;
            let want = values.stats(t, kind.worse_above());
            let f = kind.fields();
            let got = [0, 1, 2, 3].map(|i| scores.get(f[i].name));
            let want = [
                want.worst as f64,
                want.worst_x as f64,
                want.worst_y as f64,
                want.area,
            ]
            .map(Some);
            if got != want {
                fail(
                    &mut out,
                    format!("{} {w}x{h}: statistics {got:?}, host {want:?}", kind.name()),
                );
            }
            let host = PairMap::on_host(kind, (*values).clone());
            for style in [MapStyle::Gray16, MapStyle::Heat] {
                let stride = w * style.pixel_bytes() + 8;
                let (mut a, mut b) = (vec![0u8; stride * h], vec![0u8; stride * h]);
                let rendered = map
                    .render(style, 255.0, &mut a, stride)
                    .and_then(|()| host.render(style, 255.0, &mut b, stride));
                if let Err(e) = rendered {
                    fail(&mut out, format!("{} {style:?} {w}x{h}: {e}", kind.name()));
                    continue;
                }
                let row = w * style.pixel_bytes();
                let rows_equal = |a: &[u8], b: &[u8]| {
                    (0..h).all(|y| a[y * stride..][..row] == b[y * stride..][..row])
                };
                if !rows_equal(&a, &b) {
                    fail(
                        &mut out,
                        format!("{} {style:?} {w}x{h}: frame differs", kind.name()),
                    );
                }
                // Into device memory of the stream's context (the engine's: device 0's
                // primary context).
                let mut device = s.alloc_zeros::<u8>(stride * h)?;
                let ptr = {
                    let (p, _sync) = cudarc::driver::DevicePtrMut::device_ptr_mut(&mut device, s);
                    p
                };
                // SAFETY: `device` holds stride × h bytes of this context, used by nothing else.
                let done = unsafe {
                    map.render_device(
                        style,
                        255.0,
                        ptr,
                        stride,
                        stride * h,
                        s.context().cu_ctx() as usize,
                    )
                };
                match done {
                    Ok(true) => {
                        let c = s.clone_dtoh(&device)?;
                        if !rows_equal(&c, &b) {
                            fail(
                                &mut out,
                                format!("{} {style:?} {w}x{h}: device frame differs", kind.name()),
                            );
                        }
                    }
                    other => fail(
                        &mut out,
                        format!("{} {style:?} {w}x{h}: render_device {other:?}", kind.name()),
                    ),
                }
                // Rows too short are refused, not written past.
                let short = map.render(style, 255.0, &mut a, row.saturating_sub(1).max(1));
                if short.is_ok() && w > 1 {
                    fail(
                        &mut out,
                        format!("{} {style:?} {w}x{h}: short rows taken", kind.name()),
                    );
                }
                out.elements += w * h;
            }
        }
    }
    Ok(out)
}

/// A random `w`×`h` frame of `format` (RGB, I420 or gray) and the same with noise of ±16,
/// its layout; with `flat`, every other run of 4,096 samples left without noise.
fn pair(
    r: &mut Rng,
    format: PixelFormat,
    w: usize,
    h: usize,
    flat: bool,
) -> (FrameLayout, Vec<u8>, Vec<u8>) {
    let len = match format {
        PixelFormat::Rgb => 3 * w * h,
        PixelFormat::I420 => w * h + 2 * w.div_ceil(2) * h.div_ceil(2),
        _ => w * h,
    };
    let a = r.bytes(len);
    let noise = r.bytes(len);
    let b = a
        .iter()
        .zip(&noise)
        .enumerate()
        .map(|(i, (v, n))| match flat && (i / 4096) % 2 == 0 {
            true => *v,
            false => v.saturating_add(n % 32).saturating_sub(16),
        })
        .collect();
    let layout = FrameLayout {
        format,
        width: w as u32,
        height: h as u32,
    };
    (layout, a, b)
}

/// The largest difference per pixel of two maps of one size, divided by the CPU map's
/// largest magnitude when `relative`.
fn largest_difference(gpu: &[f32], cpu: &[f32], relative: bool) -> f64 {
    let scale = if relative {
        cpu.iter()
            .fold(f64::MIN_POSITIVE, |m, c| m.max((*c as f64).abs()))
    } else {
        1.0
    };
    gpu.iter()
        .zip(cpu)
        .map(|(g, c)| (*g as f64 - *c as f64).abs() / scale)
        .fold(0f64, f64::max)
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
    let mut out = Outcome::new(tolerance);
    for (format, w, h) in [
        (PixelFormat::Rgb, 173usize, 97usize),
        (PixelFormat::I420, 173, 97),
        (PixelFormat::Gray8, 7, 5),
    ] {
        let (layout, a, b) = pair(r, format, w, h, false);
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
            s.and_then(|s| match s.map() {
                Some(m) => m.values().map(|v| Some(v.values.clone())),
                None => Ok(None),
            })
        });
        match maps {
            [Ok(Some(gpu)), Ok(Some(cpu))] if gpu.len() == cpu.len() => {
                let err = largest_difference(&gpu, &cpu, relative);
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
