//! The engine-level check the pipeline kernels share: a metric's field from the CUDA backend
//! against the CPU backend's on the same frames.

use crate::common::{self, Rng};
use crate::{Outcome, rel_err};

/// A metric's field from the CUDA and the CPU backend on a 173×97 random pair (RGB and
/// I420): the kernels as the engine launches them, against the host build of the same code.
pub(crate) fn engine_pipeline(
    r: &mut Rng,
    metric: gpumetrics_engine::MetricSet,
    field: &str,
    tolerance: f64,
    relative: bool,
) -> Outcome {
    use gpumetrics_engine::{
        BackendChoice, Engine, EngineConfig, Frame, FrameLayout, HostFrame, PixelFormat,
    };
    let (w, h) = (173usize, 97usize);
    let mut max_err = 0.0f64;
    let mut notes = Vec::new();
    for format in [PixelFormat::Rgb, PixelFormat::I420] {
        let layout = FrameLayout {
            format,
            width: w as u32,
            height: h as u32,
        };
        let len = match format {
            PixelFormat::Rgb => 3 * w * h,
            _ => w * h + 2 * w.div_ceil(2) * h.div_ceil(2),
        };
        // Smooth random image (noise blurred by averaging) and a noisier copy.
        let base = r.bytes(len);
        let a: Vec<u8> = (0..len)
            .map(|i| ((base[i] as u32 + base[(i + 1) % len] as u32 + 2 * 128) / 4) as u8)
            .collect();
        let noise = r.bytes(len);
        let b: Vec<u8> = a
            .iter()
            .zip(&noise)
            .map(|(v, n)| v.saturating_add(n % 16).saturating_sub(8))
            .collect();
        let planes = |d| common::images::planes(format, w as u32, h as u32, d);
        let (pa, pb) = (planes(&a), planes(&b));
        let (fa, fb) = (
            Frame::Host(HostFrame::new(&pa)),
            Frame::Host(HostFrame::new(&pb)),
        );
        let score = |backend| {
            let cfg = EngineConfig {
                metrics: metric,
                backend,
                ..Default::default()
            };
            Engine::new(&cfg, layout, layout)
                .and_then(|mut e| e.compare(&fa, &fb))
                .map(|s| s.get(field).unwrap_or(f64::NAN))
        };
        match (score(BackendChoice::Cuda), score(BackendChoice::Cpu)) {
            (Ok(g), Ok(c)) => {
                let e = if relative {
                    rel_err(g, c)
                } else {
                    (g - c).abs()
                };
                max_err = max_err.max(if e.is_nan() { f64::INFINITY } else { e });
                notes.push(format!("{} cuda {g:.5} cpu {c:.5}", format.name()));
            }
            (g, c) => {
                max_err = f64::INFINITY;
                notes.push(format!("{} {g:?} {c:?}", format.name()));
            }
        }
    }
    Outcome {
        elements: 2,
        max_err,
        tolerance,
        note: notes.join(", "),
    }
}
