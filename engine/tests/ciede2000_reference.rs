//! CIEDE2000 against libvmaf 3.2.0's `ciede` feature on real clips (8, 10, 12 and 16 bit,
//! 4:2:0 and 4:4:4, an odd size, 1080p and identical frames): every frame's `ciede2000`
//! within 1e-3 of libvmaf's (which prints 6 decimals), +inf where libvmaf prints `inf`.
//! Data: tests/data/features/ciede2000.csv, made by `tests/generate_libvmaf_features.sh
//! ciede2000 ciede` from the clips of tests/data/vmaf/.
//!
//! Except at odd 4:2:0 sizes: there libvmaf reads the last chroma column from its rows'
//! padding and the last chroma row from past its planes (its chroma planes are rounded
//! down; `gpumetrics_kernels::ciede2000` says more), so its value depends on memory the
//! frame does not hold, and it is compared within [`ODD_TOLERANCE`] only (0.033 dB apart on
//! the 333x199 clip; about 1 % of its pixels read such memory).
//!
//! `-- --nocapture` prints the largest difference per pair. On the GPU machine,
//! `GPUMETRICS_TEST_BACKEND=cuda` (with `GPUMETRICS_FFMPEG_CACHE` carried from a run here)
//! compares the CUDA backend with libvmaf the same way.

mod common;

use common::clips;
use gpumetrics_engine::{MetricSet, Options, metric};

const TOLERANCE: f64 = 1e-3;
/// At odd 4:2:0 sizes (see above).
const ODD_TOLERANCE: f64 = 0.05;

fn flag() -> MetricSet {
    metric::all()
        .find(|i| i.name == "ciede2000")
        .expect("ciede2000 is registered")
        .flag
}

#[test]
fn ciede2000_equals_libvmaf_on_real_clips() {
    let reference = clips::libvmaf_features("ciede2000");
    let mut failures = Vec::new();
    let mut compared = 0;
    for pair in clips::pairs() {
        let want = reference
            .get(&pair.name)
            .unwrap_or_else(|| panic!("{}: no reference values", pair.name))
            .as_ref()
            .unwrap_or_else(|e| panic!("{}: libvmaf refused it ({e})", pair.name));
        let got = clips::scores(&pair, flag(), Options::new())
            .unwrap_or_else(|e| panic!("{}: {e}", pair.name));
        assert_eq!(got.len(), want.len(), "{}: frames", pair.name);
        let odd =
            pair.pix_fmt.starts_with("yuv420") && (pair.width % 2 == 1 || pair.height % 2 == 1);
        let tolerance = if odd { ODD_TOLERANCE } else { TOLERANCE };
        let mut worst = 0.0f64;
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            let g = g.get("ciede2000").expect("a ciede2000 field");
            let w = w["ciede2000"];
            let d = if g == w { 0.0 } else { (g - w).abs() };
            worst = worst.max(d);
            if d.is_nan() || d > tolerance {
                failures.push(format!("{} frame {i}: {g} vs libvmaf {w}", pair.name));
            }
            compared += 1;
        }
        println!(
            "{:<28} {:>3} frames, largest difference {worst:.2e}",
            pair.name,
            got.len()
        );
    }
    assert!(compared > 100, "only {compared} frames compared");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn ciede2000_refuses_what_libvmaf_cannot_read() {
    use gpumetrics_engine::{BackendChoice, Engine, EngineConfig, FrameLayout, PixelFormat};
    // Gray and RGB: no field, and a note that says why.
    for format in [PixelFormat::Gray8, PixelFormat::Rgb] {
        let layout = FrameLayout {
            format,
            width: 16,
            height: 16,
        };
        let cfg = EngineConfig {
            metrics: flag(),
            backend: BackendChoice::Cpu,
            ..Default::default()
        };
        let engine = Engine::new(&cfg, layout, layout).unwrap();
        assert!(
            engine
                .metric_notes()
                .iter()
                .any(|n| n.contains("ciede2000 reads YUV")),
            "{format:?}: {:?}",
            engine.metric_notes()
        );
    }
}
