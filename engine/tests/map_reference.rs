// SPDX-License-Identifier: MPL-2.0
//! Distortion maps (issue 48) against their references: the values tests/maps/generate.py
//! recorded (tests/data/maps/values.json) on the SSIM references' natural image pairs
//! (tests/data/ssim/). The SSIM map equals scikit-image's `full=True` map within 1e-5 at
//! every recorded pixel (its reflected border, its corners and pixels inside) and its mean
//! is the SSIM scikit-image returns; the squared-error map's sum and maximum are NumPy's.

mod common;

use gpumetrics_engine::map::{self, ssim};
use serde_json::Value;

fn repo(path: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(path)
}

fn luma(file: &str, w: usize, h: usize, bytes: usize) -> Vec<u16> {
    let data = std::fs::read(repo(&format!("tests/data/ssim/{file}"))).unwrap();
    if bytes == 2 {
        data.chunks(2)
            .take(w * h)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect()
    } else {
        data[..w * h].iter().map(|&b| b as u16).collect()
    }
}

#[test]
fn maps_equal_their_references() {
    let text = std::fs::read_to_string(repo("tests/data/maps/values.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let cases = v["cases"].as_array().unwrap();
    assert!(cases.len() >= 5);
    for c in cases {
        let name = c["name"].as_str().unwrap();
        let (w, h) = (
            c["width"].as_u64().unwrap() as usize,
            c["height"].as_u64().unwrap() as usize,
        );
        let bytes = c["bytes"].as_u64().unwrap() as usize;
        let r = luma(c["reference"].as_str().unwrap(), w, h, bytes);
        let d = luma(c["distorted"].as_str().unwrap(), w, h, bytes);

        let m = ssim::map(&r, &d, w, h, c["peak"].as_f64().unwrap());
        assert_eq!((m.width, m.height, m.values.len()), (w, h, w * h));
        let pixels = c["ssim"]["pixels"].as_array().unwrap();
        let mut worst = 0f64;
        for p in pixels {
            let (x, y) = (
                p[0].as_u64().unwrap() as usize,
                p[1].as_u64().unwrap() as usize,
            );
            let want = p[2].as_f64().unwrap();
            let got = m.values[y * w + x] as f64;
            worst = worst.max((got - want).abs());
            assert!(
                (got - want).abs() <= 1e-5,
                "{name} ({x}, {y}): {got} here, {want} in scikit-image"
            );
        }
        let mean = ssim::mean(&m);
        let want = c["ssim"]["mean"].as_f64().unwrap();
        assert!((mean - want).abs() <= 1e-6, "{name}: mean {mean} vs {want}");
        eprintln!("{name}: {} pixels, worst {worst:.1e}", pixels.len());

        let se = map::squared_error(&r, &d, w, h);
        let sum: f64 = se.values.iter().map(|&v| v as f64).sum();
        assert_eq!(sum, c["squared-error"]["sum"].as_f64().unwrap(), "{name}");
        assert_eq!(
            se.stats(0.0, true).worst as f64,
            c["squared-error"]["max"].as_f64().unwrap(),
            "{name}"
        );
    }
}

/// A raw frame's planes: one gray plane, or I420's three.
fn planes(
    data: &[u8],
    w: usize,
    h: usize,
    bytes: usize,
    gray: bool,
) -> Vec<gpumetrics_engine::Plane<'_>> {
    use gpumetrics_engine::Plane;
    if gray {
        return vec![Plane { data, stride: w }];
    }
    common::images::ycbcr_planes(data, w, h, (w.div_ceil(2), h.div_ceil(2)), bytes)
}

/// The engine's maps (`EngineBuilder::map`) on the same pairs as frames of their formats
/// (GRAY8, I420, I420_10LE: luma): each pair's scores carry the map, equal to
/// scikit-image's at the recorded pixels, with `metrics=psnr` alongside.
fn engine_maps(backend: gpumetrics_engine::BackendChoice) {
    use gpumetrics_engine::map::MapKind;
    use gpumetrics_engine::{
        Engine, EngineConfig, Frame, FrameLayout, HostFrame, MetricSet, PixelFormat,
    };
    let text = std::fs::read_to_string(repo("tests/data/maps/values.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    for c in v["cases"].as_array().unwrap() {
        let name = c["name"].as_str().unwrap();
        let (w, h) = (
            c["width"].as_u64().unwrap() as usize,
            c["height"].as_u64().unwrap() as usize,
        );
        let bytes = c["bytes"].as_u64().unwrap() as usize;
        let gray = c["reference"].as_str().unwrap().ends_with(".gray");
        let format = match (gray, bytes) {
            (true, _) => PixelFormat::Gray8,
            (false, 1) => PixelFormat::I420,
            _ => PixelFormat::I420_10Le,
        };
        let read = |f: &str| std::fs::read(repo(&format!("tests/data/ssim/{f}"))).unwrap();
        let (r, d) = (
            read(c["reference"].as_str().unwrap()),
            read(c["distorted"].as_str().unwrap()),
        );
        let layout = FrameLayout {
            format,
            width: w as u32,
            height: h as u32,
        };
        let cfg = EngineConfig {
            metrics: MetricSet::PSNR,
            backend,
            ..Default::default()
        };
        for kind in [MapKind::SquaredError, MapKind::Ssim] {
            let mut engine = Engine::builder(&cfg, layout, layout)
                .map(kind)
                .build()
                .unwrap();
            let (rp, dp) = (planes(&r, w, h, bytes, gray), planes(&d, w, h, bytes, gray));
            let scores = engine
                .compare(
                    &Frame::Host(HostFrame::new(&rp)),
                    &Frame::Host(HostFrame::new(&dp)),
                )
                .unwrap();
            assert!(scores.get("psnr-y").is_some(), "{name}");
            let m = scores.map().expect("a map");
            assert_eq!(m.kind(), kind);
            let m = m.values().expect("the map's values");
            // The record's statistics of the map: its worst value, where, and the share past
            // the default threshold.
            let worse_above = kind.worse_above();
            let worst = m
                .values
                .iter()
                .fold(None::<f32>, |a, &v| {
                    Some(match a {
                        None => v,
                        Some(a) if worse_above => a.max(v),
                        Some(a) => a.min(v),
                    })
                })
                .unwrap() as f64;
            let f = kind.fields();
            assert_eq!(scores.get(f[0].name), Some(worst), "{name}");
            let (x, y) = (
                scores.get(f[1].name).unwrap() as usize,
                scores.get(f[2].name).unwrap() as usize,
            );
            assert_eq!(m.values[y * w + x] as f64, worst, "{name}");
            let t = kind.default_threshold(c["peak"].as_f64().unwrap()) as f32;
            let past = m
                .values
                .iter()
                .filter(|&&v| if worse_above { v > t } else { v < t })
                .count() as f64
                / m.values.len() as f64;
            assert_eq!(scores.get(f[3].name), Some(past), "{name}");
            assert_eq!((m.width, m.height), (w, h), "{name}");
            match kind {
                MapKind::Ssim => {
                    for p in c["ssim"]["pixels"].as_array().unwrap() {
                        let (x, y) = (
                            p[0].as_u64().unwrap() as usize,
                            p[1].as_u64().unwrap() as usize,
                        );
                        let want = p[2].as_f64().unwrap();
                        let got = m.values[y * w + x] as f64;
                        assert!(
                            (got - want).abs() <= 1e-5,
                            "{name} ({x}, {y}): {got} vs {want}"
                        );
                    }
                }
                _ => {
                    let sum: f64 = m.values.iter().map(|&v| v as f64).sum();
                    assert_eq!(sum, c["squared-error"]["sum"].as_f64().unwrap(), "{name}");
                }
            }
        }
    }
}

#[test]
fn the_engine_gives_each_pair_its_map() {
    engine_maps(gpumetrics_engine::BackendChoice::Cpu);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_cuda_backend_gives_the_same_maps() {
    engine_maps(gpumetrics_engine::BackendChoice::Cuda);
}

#[test]
fn a_map_needs_a_reference() {
    use gpumetrics_engine::{Engine, EngineConfig, FrameLayout, MetricSet, PixelFormat};
    let layout = FrameLayout {
        format: PixelFormat::I420,
        width: 64,
        height: 48,
    };
    let cfg = EngineConfig {
        metrics: MetricSet::named("blur").unwrap(),
        backend: gpumetrics_engine::BackendChoice::Cpu,
        ..Default::default()
    };
    let Err(e) = Engine::single_builder(&cfg, layout)
        .map(gpumetrics_engine::map::MapKind::Ssim)
        .build()
    else {
        panic!("a map without a reference was not refused")
    };
    assert!(e.to_string().contains("ssim map"), "{e}");
}
