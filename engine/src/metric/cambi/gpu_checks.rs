//! The CAMBI kernels (`cambi_*`), as one pipeline through the engine: the CUDA backend's
//! `cambi` against the CPU backend's on banded frames.
//!
//! Tolerance: 1e-12 relative. The planes, the mask, the keys and the counts are integers,
//! the c-values the same `f32` operations on both sides, and the top-k selection is exact;
//! only the order of the `f64` sum of the kept c-values differs.

use std::sync::Arc;

use cudarc::driver::{CudaStream, DriverError};
use gpumetrics_engine::cuda::Kernels;
use gpumetrics_engine::{
    BackendChoice, Engine, EngineConfig, Frame, FrameLayout, HostFrame, MetricSet, Options,
    PixelFormat, Plane,
};

use crate::common::Rng;
use crate::{Check, Outcome, rel_err};

/// The checks of this module and the kernels each covers.
pub(crate) const CHECKS: &[(&[&str], Check)] = &[(
    &[
        "cambi_prepare",
        "cambi_flat",
        "cambi_mask_rows",
        "cambi_mask",
        "cambi_mode",
        "cambi_cvalues",
        "cambi_radix",
        "cambi_topk_sum",
        "cambi_topk_mean",
    ],
    cambi_pipeline,
)];

crate::gpu_tests! {
    cambi_kernels_match_the_cpu_backend => "cambi_prepare",
}

/// One case: the luma layout and the metric's options (`name=value`, comma-separated).
struct Case {
    format: PixelFormat,
    w: usize,
    h: usize,
    options: &'static str,
}

/// 8-bit (anti-dithered) and 10-bit, odd sizes, an encoding size below the input's, the
/// v1 models' options at 1080p (the high-resolution speed-up), PQ, a larger contrast range
/// and window, a low top-k.
const CASES: &[Case] = &[
    Case {
        format: PixelFormat::I420,
        w: 320,
        h: 240,
        options: "",
    },
    Case {
        format: PixelFormat::I420_10Le,
        w: 333,
        h: 217,
        options: "",
    },
    Case {
        format: PixelFormat::I420,
        w: 320,
        h: 240,
        options: "cambi-enc-width=256,cambi-enc-height=216,cambi-enc-bitdepth=10",
    },
    Case {
        format: PixelFormat::I420_10Le,
        w: 400,
        h: 300,
        options: "cambi-eotf=pq,cambi-max-log-contrast=3,cambi-window-size=95,cambi-topk=0.05",
    },
    Case {
        format: PixelFormat::I420,
        w: 1920,
        h: 1080,
        options: "cambi-high-res-speedup=1080,cambi-vis-lum-threshold=0.06,cambi-max-val=17",
    },
    Case {
        format: PixelFormat::I420_10Le,
        w: 1920,
        h: 1080,
        options: "",
    },
];

/// Luma of a `w`×`h` frame of `max + 1` codes: a slow diagonal gradient quantised into
/// visible steps (banding), a flat block, a noisy block and a fine ramp; `seed` moves the
/// steps.
fn luma(w: usize, h: usize, max: u32, r: &mut Rng) -> Vec<u32> {
    let step = (max + 1) / 64;
    let phase = r.next_u32() % 7;
    (0..w * h)
        .map(|i| {
            let (x, y) = (i % w, i / w);
            if x < w / 5 && y < h / 4 {
                max / 3
            } else if x > 3 * w / 4 && y > 2 * h / 3 {
                r.next_u32() % (max + 1)
            } else if y > 5 * h / 6 {
                (x as u32 * max / w as u32) & !1
            } else {
                let g = ((x + 2 * y) as u32 * 40 / (w + 2 * h) as u32 + phase) * step;
                (g + max / 8).min(max)
            }
        })
        .collect()
}

fn options(s: &str) -> Options {
    let mut o = Options::new();
    for kv in s.split(',').filter(|kv| !kv.is_empty()) {
        let (k, v) = kv.split_once('=').unwrap();
        o.parse(k, v).unwrap();
    }
    o
}

fn cambi_pipeline(_k: &Kernels, _s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    let mut max_err = 0.0f64;
    let mut notes = Vec::new();
    let mut elements = 0;
    for c in CASES {
        let layout = FrameLayout {
            format: c.format,
            width: c.w as u32,
            height: c.h as u32,
        };
        let bps = if c.format == PixelFormat::I420 { 1 } else { 2 };
        let max = (1u32 << c.format.depth()) - 1;
        let (cw, ch) = (c.w.div_ceil(2), c.h.div_ceil(2));
        let engines = [BackendChoice::Cuda, BackendChoice::Cpu].map(|backend| {
            let cfg = EngineConfig {
                metrics: MetricSet::named("cambi").unwrap(),
                backend,
                options: options(c.options),
                ..Default::default()
            };
            Engine::new(&cfg, layout, layout).unwrap()
        });
        let [mut cuda, mut cpu] = engines;
        assert!(cuda.metric_notes().is_empty(), "{:?}", cuda.metric_notes());
        let mut worst = 0.0f64;
        let mut last = 0.0;
        for _ in 0..2 {
            let y = luma(c.w, c.h, max, r);
            let mut yb = Vec::with_capacity(c.w * c.h * bps);
            for v in &y {
                yb.extend_from_slice(&v.to_le_bytes()[..bps]);
            }
            let chroma = vec![128u8; cw * ch * bps];
            let planes = [
                Plane {
                    data: &yb,
                    stride: c.w * bps,
                },
                Plane {
                    data: &chroma,
                    stride: cw * bps,
                },
                Plane {
                    data: &chroma,
                    stride: cw * bps,
                },
            ];
            let f = Frame::Host(HostFrame::new(&planes));
            let g = cuda.compare(&f, &f).unwrap().get("cambi").unwrap();
            let h = cpu.compare(&f, &f).unwrap().get("cambi").unwrap();
            worst = worst.max(rel_err(g, h));
            elements += 1;
            last = h;
        }
        max_err = max_err.max(worst);
        notes.push(format!(
            "{} {}x{} [{}]: {last:.5} err {worst:.1e}",
            c.format.name(),
            c.w,
            c.h,
            c.options
        ));
    }
    Ok(Outcome {
        elements,
        max_err,
        tolerance: 1e-12,
        note: notes.join("; "),
    })
}
