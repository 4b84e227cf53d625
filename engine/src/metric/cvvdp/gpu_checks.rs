//! The ColorVideoVDP kernels (`cvvdp_*`), as one pipeline through the engine: the CUDA
//! backend's JOD against the CPU backend's (the host build of the same per-sample code),
//! frame after frame.

use std::sync::Arc;

use cudarc::driver::{CudaStream, DriverError};
use gpumetrics_engine::cuda::Kernels;
use gpumetrics_engine::metric::cvvdp::FLAG;
use gpumetrics_engine::{
    BackendChoice, Colorimetry, Engine, EngineConfig, Frame, FrameLayout, HostFrame, Matrix,
    Options, PixelFormat, Primaries, Transfer,
};

use crate::common::{self, Rng};
use crate::engine::{engine_pipeline, merge};
use crate::{Check, Outcome};

/// The checks of this module and the kernels each covers.
pub(crate) const CHECKS: &[(&[&str], Check)] = &[(
    &[
        "cvvdp_dkl",
        "cvvdp_dkl_sdr420",
        "cvvdp_dkl_temporal",
        "cvvdp_temporal",
        "cvvdp_reduce",
        "cvvdp_band",
        "cvvdp_band_one",
        "cvvdp_mask",
        "cvvdp_base",
    ],
    cvvdp_pipeline,
)];

crate::gpu_tests! {
    cvvdp_kernels_match_the_cpu_backend => "cvvdp_dkl",
}

/// JOD: the tolerance is 0.01 against the reference; the two backends of one code
/// differ by the GPU's approximate pow, exp and log only.
const TOLERANCE: f64 = 1e-3;

/// One pair on RGB and I420 (173×97: the image pass and the first video pass), then
/// sequences longer than the filters (the history ring, of 9 to 12 slots, wraps): 8-bit
/// BT.709 I420 at 30 fps (9 taps, 14 frames; 160×91, past the first pair on
/// `cvvdp_dkl_temporal`, and 151×90, of odd width, on `cvvdp_dkl_sdr420` and
/// `cvvdp_temporal`) and 10-bit BT.2100 PQ at 60 fps on an odd size (17 taps, 22 frames),
/// each frame's JOD from both backends, one pair in flight, two, three and four (on the GPU
/// the pairs then take as many lanes in turn, which share the history); then with
/// windows of 5 frames (`Engine::start_window`: the second instance that restarts the
/// temporal channels at each window, 2 pairs in flight on the GPU), each pair's JOD of its
/// window so far.
fn cvvdp_pipeline(_k: &Kernels, _s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    Ok(merge(
        engine_pipeline(r, FLAG, "cvvdp", TOLERANCE, false),
        sequences(r),
        "sequences",
    ))
}

fn sequences(r: &mut Rng) -> Outcome {
    let mut out = Outcome::new(TOLERANCE);
    let sdr = Colorimetry::default_for(PixelFormat::I420.family());
    let pq = Colorimetry {
        matrix: Matrix::Bt2020,
        transfer: Transfer::Pq,
        primaries: Primaries::Bt2020,
        ..sdr
    };
    for (bits, w, h, fps, frames, c, display) in [
        (8u32, 160u32, 91u32, 30.0, 14usize, sdr, "standard_fhd"),
        (8, 151, 90, 30.0, 14, sdr, "standard_fhd"),
        (10, 97, 61, 60.0, 22, pq, "standard_hdr_pq"),
    ] {
        let format = if bits == 8 {
            PixelFormat::I420
        } else {
            PixelFormat::I420_10Le
        };
        let layout = FrameLayout {
            format,
            width: w,
            height: h,
        };
        let (wu, hu) = (w as usize, h as usize);
        let (cw, ch) = (wu.div_ceil(2), hu.div_ceil(2));
        let bytes = if bits > 8 { 2 } else { 1 };
        // A smooth random texture moving one pixel a frame; the distorted adds grain.
        let (pw, ph) = (wu + frames, hu);
        let noise = r.bytes(pw * ph);
        let texture: Vec<f32> = (0..pw * ph)
            .map(|i| {
                let (x, y) = (i % pw, i / pw);
                let n = |dx: usize, dy: usize| noise[((y + dy) % ph) * pw + (x + dx) % pw] as f32;
                (n(0, 0) + n(1, 0) + n(0, 1) + n(1, 1)) / (4.0 * 255.0)
            })
            .collect();
        let grain = r.bytes(wu * hu * frames);
        let scale = (1u32 << (bits - 8)) as f32;
        let frame = |t: usize, distorted: bool| -> Vec<u8> {
            let mut samples = Vec::with_capacity(wu * hu + 2 * cw * ch);
            for i in 0..wu * hu {
                let (x, y) = (i % wu, i / wu);
                let g = grain[t * wu * hu + i] as f32 / 255.0 - 0.5;
                let v = texture[y * pw + x + t] + if distorted { 0.06 * g } else { 0.0 };
                samples.push(((16.0 + 219.0 * v.clamp(0.0, 1.0)) * scale).round() as u16);
            }
            for plane in 0..2 {
                for i in 0..cw * ch {
                    let (x, y) = (i % cw, i / cw);
                    let v = texture[2 * y * pw + 2 * x + t] - 0.5;
                    let c = 128.0 + if plane == 0 { 60.0 * v } else { -40.0 * v };
                    samples.push((c * scale).round() as u16);
                }
            }
            if bytes == 2 {
                samples.iter().flat_map(|v| v.to_le_bytes()).collect()
            } else {
                samples.iter().map(|&v| v as u8).collect()
            }
        };
        let run =
            |backend: BackendChoice, windows: bool, in_flight: usize| -> Result<Vec<f64>, String> {
                let mut options = Options::new();
                options
                    .parse("cvvdp-display", display)
                    .map_err(|e| e.to_string())?;
                let cfg = EngineConfig {
                    metrics: FLAG,
                    backend,
                    options,
                    ..Default::default()
                };
                let mut builder = Engine::builder(&cfg, layout, layout)
                    .colorimetry(c, c)
                    .frame_rate(fps);
                if in_flight > 1 {
                    builder = builder.in_flight(in_flight);
                }
                let mut e = builder.build().map_err(|e| e.to_string())?;
                let mut scored = Vec::new();
                for t in 0..frames {
                    if windows && t % 5 == 0 {
                        e.start_window();
                    }
                    let (a, b) = (frame(t, false), frame(t, true));
                    let planes = |d| common::images::ycbcr_planes(d, wu, hu, (cw, ch), bytes);
                    let (pa, pb) = (planes(&a), planes(&b));
                    let s = e
                        .push(
                            &Frame::Host(HostFrame::new(&pa)),
                            &Frame::Host(HostFrame::new(&pb)),
                        )
                        .map_err(|e| e.to_string())?;
                    scored.extend(s);
                }
                scored.extend(e.finish().map_err(|e| e.to_string())?);
                if scored.len() != frames {
                    return Err(format!("{} pairs scored of {frames}", scored.len()));
                }
                if !windows {
                    return Ok(scored
                        .iter()
                        .map(|s| s.get("cvvdp").unwrap_or(f64::NAN))
                        .collect());
                }
                // Each pair's JOD of its window so far, from its window terms.
                let mut pool = gpumetrics_engine::Pooler::new();
                Ok(scored
                    .iter()
                    .enumerate()
                    .map(|(t, s)| {
                        if t % 5 == 0 {
                            pool = gpumetrics_engine::Pooler::new();
                        }
                        let j = pool.span_jod_with("cvvdp", s).unwrap_or(f64::NAN);
                        pool.push_window(s);
                        j
                    })
                    .collect())
            };
        for (windows, in_flight) in [(false, 1), (false, 2), (false, 3), (false, 4), (true, 2)] {
            let label = format!(
                "{} {w}x{h} {fps} fps {display}, {in_flight} in flight{}",
                format.name(),
                if windows { ", windows of 5" } else { "" }
            );
            match (
                run(BackendChoice::Cuda, windows, in_flight),
                run(BackendChoice::Cpu, windows, 1),
            ) {
                (Ok(g), Ok(c)) => {
                    for (a, b) in g.iter().zip(&c) {
                        let e = (a - b).abs();
                        out.max_err = out.max_err.max(if e.is_nan() { f64::INFINITY } else { e });
                        out.elements += 1;
                    }
                    out.note += &format!(
                        "{label}: last cuda {:.5} cpu {:.5}; ",
                        g.last().unwrap_or(&f64::NAN),
                        c.last().unwrap_or(&f64::NAN)
                    );
                }
                (g, c) => {
                    out.max_err = f64::INFINITY;
                    out.note += &format!("{label}: {:?} {:?}; ", g.err(), c.err());
                }
            }
        }
    }
    out
}
