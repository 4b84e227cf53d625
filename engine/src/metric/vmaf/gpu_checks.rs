//! The VMAF kernels (`vmaf_*`), as one pipeline through the engine with features.

use std::sync::Arc;

use cudarc::driver::{CudaStream, DriverError};
use gpumetrics_engine::cuda::Kernels;

use crate::common::Rng;
use crate::{Check, Outcome};

/// The checks of this module and the kernels each covers.
pub(crate) const CHECKS: &[(&[&str], Check)] = &[(
    &[
        "vmaf_load",
        "vmaf_vif_fused",
        "vmaf_vif_down",
        "vmaf_adm_dwt",
        "vmaf_adm_decouple",
        "vmaf_adm_rows",
        "vmaf_motion_diff_y",
        "vmaf_motion_sad",
    ],
    vmaf_pipeline,
)];

crate::gpu_tests! {
    vmaf_kernels_match_the_cpu_backend => "vmaf_load",
}

/// VMAF's whole pipeline (every `vmaf_*` kernel) on the GPU against the CPU backend: three
/// pairs of a smooth random odd-sized frame and a noisier copy, 8-bit 4:2:0 and 10-bit
/// 4:4:4 with features, `vmaf` and `vmaf-neg` (one pass on the GPU, two on the CPU); the
/// features are integer sums on both sides, so they must be equal.
fn vmaf_pipeline(_k: &Kernels, _s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    use gpumetrics_engine::{
        BackendChoice, Engine, EngineConfig, Frame, FrameLayout, HostFrame, MetricSet, PixelFormat,
        Plane, Scores,
    };
    let (w, h) = (173usize, 97usize);
    let mut max_err = 0.0f64;
    let mut notes = Vec::new();
    let mut elements = 0;
    for (format, bps, sub) in [
        (PixelFormat::I420, 1usize, 1u32),
        (PixelFormat::Y444_10Le, 2, 0),
    ] {
        let layout = FrameLayout {
            format,
            width: w as u32,
            height: h as u32,
        };
        let (cw, ch) = (w.div_ceil(1 << sub), h.div_ceil(1 << sub));
        let samples = w * h + 2 * cw * ch;
        let max = if bps == 1 { 255u32 } else { 1023 };
        let mut frames = Vec::new();
        for _ in 0..3 {
            let base: Vec<u32> = (0..samples).map(|_| r.next_u32() % (max + 1)).collect();
            let a: Vec<u32> = (0..samples)
                .map(|i| (base[i] + base[(i + 1) % samples] + 2 * (max / 2)) / 4)
                .collect();
            let b: Vec<u32> = a
                .iter()
                .map(|&v| {
                    (v + r.next_u32() % (max / 16 + 1))
                        .saturating_sub(max / 32)
                        .min(max)
                })
                .collect();
            let bytes = |v: &[u32]| -> Vec<u8> {
                v.iter()
                    .flat_map(|&x| {
                        if bps == 1 {
                            vec![x as u8]
                        } else {
                            (x as u16).to_le_bytes().to_vec()
                        }
                    })
                    .collect()
            };
            frames.push((bytes(&a), bytes(&b)));
        }
        // (byte offset, stride) of Y, U, V.
        let planes = [
            (0, w * bps),
            (w * h * bps, cw * bps),
            ((w * h + cw * ch) * bps, cw * bps),
        ];
        let run = |backend| -> Result<Vec<Scores>, String> {
            let cfg = EngineConfig {
                metrics: MetricSet::VMAF | MetricSet::named("vmaf-neg").expect("registered"),
                backend,
                options: crate::common::vmaf_options("vmaf_v0.6.1"),
                ..Default::default()
            };
            let mut e = Engine::new(&cfg, layout, layout).map_err(|e| e.to_string())?;
            let mut out = Vec::new();
            for (a, b) in &frames {
                let pa: Vec<Plane> = planes
                    .iter()
                    .map(|&(o, s)| Plane {
                        data: &a[o..],
                        stride: s,
                    })
                    .collect();
                let pb: Vec<Plane> = planes
                    .iter()
                    .map(|&(o, s)| Plane {
                        data: &b[o..],
                        stride: s,
                    })
                    .collect();
                let (fa, fb) = (
                    Frame::Host(HostFrame::new(&pa)),
                    Frame::Host(HostFrame::new(&pb)),
                );
                out.extend(e.push(&fa, &fb).map_err(|e| e.to_string())?);
            }
            out.extend(e.finish().expect("finishing the sequence"));
            Ok(out)
        };
        match (run(BackendChoice::Cuda), run(BackendChoice::Cpu)) {
            (Ok(g), Ok(c)) if g.len() == c.len() && g.len() == 3 => {
                for (g, c) in g.iter().zip(&c) {
                    let names = |s: &Scores| s.iter().map(|(n, _)| n).collect::<Vec<_>>();
                    if names(g) != names(c) {
                        max_err = f64::INFINITY;
                        notes.push(format!("fields {:?} against {:?}", names(g), names(c)));
                    }
                    for ((name, gv), (_, cv)) in g.iter().zip(c.iter()) {
                        let model = name == "vmaf" || name == "vmaf-neg";
                        let tol_scale = if model { 1e-9 } else { 0.0 };
                        let e = (gv - cv).abs();
                        let e = if e.is_nan() { f64::INFINITY } else { e };
                        max_err = max_err.max((e - tol_scale).max(0.0));
                        elements += 1;
                    }
                }
                let at = |s: &Scores, f: &str| s.get(f).unwrap_or(f64::NAN);
                notes.push(format!(
                    "{} vmaf cuda {:.4} cpu {:.4}, vmaf-neg cuda {:.4} cpu {:.4}",
                    format.name(),
                    at(&g[2], "vmaf"),
                    at(&c[2], "vmaf"),
                    at(&g[2], "vmaf-neg"),
                    at(&c[2], "vmaf-neg"),
                ));
            }
            (g, c) => {
                max_err = f64::INFINITY;
                notes.push(format!(
                    "{} {:?} {:?}",
                    format.name(),
                    g.map(|v| v.len()),
                    c.map(|v| v.len())
                ));
            }
        }
    }
    Ok(Outcome {
        elements,
        max_err,
        tolerance: 0.0,
        note: format!(
            "fields equal (vmaf, vmaf-neg within 1e-9); {}",
            notes.join(", ")
        ),
    })
}
