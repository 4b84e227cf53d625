// SPDX-License-Identifier: MPL-2.0
//! Distortion maps (issue 48) against their references: the values tests/maps/generate.py
//! recorded (tests/data/maps/values.json) on the SSIM references' natural image pairs
//! (tests/data/ssim/). The SSIM map equals scikit-image's `full=True` map within 1e-5 at
//! every recorded pixel (its reflected border, its corners and pixels inside) and its mean
//! is the SSIM scikit-image returns; the squared-error map's sum and maximum are NumPy's.

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
            se.stats(0.0, true).max as f64,
            c["squared-error"]["max"].as_f64().unwrap(),
            "{name}"
        );
    }
}
