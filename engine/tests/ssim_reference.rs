//! SSIM and MS-SSIM equal scikit-image's `structural_similarity` and pytorch-msssim's
//! `ms_ssim` within 1e-5 on natural images with real codec distortions (JPEG, x264 8- and
//! 10-bit, odd sizes, GRAY8 / I420 / I420_10LE / RGB). Data and expected values come from
//! tests/generate_ssim_reference.py. The CUDA variants need a GPU (`--ignored`).

use std::path::PathBuf;

use gpumetrics_engine::{
    BackendChoice, Engine, EngineConfig, Frame, FrameLayout, HostFrame, MetricSet, PixelFormat,
    Plane, Scores,
};

const TOLERANCE: f64 = 1e-5;
const SSIM_FIELDS: [&str; 9] = [
    "ssim", "ssim-y", "ssim-u", "ssim-v", "ssim-r", "ssim-g", "ssim-b", "ssim-all", "ms-ssim",
];

struct Case {
    name: String,
    layout: FrameLayout,
    reference: Vec<u8>,
    distorted: Vec<u8>,
    chroma: bool,
    fields: Vec<(String, f64)>,
}

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/ssim")
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(dir().join("references.tsv")).expect("references.tsv");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let layout = FrameLayout {
                format: PixelFormat::from_name(f[1]).expect("format"),
                width: f[2].parse().unwrap(),
                height: f[3].parse().unwrap(),
            };
            let read = |n: &str| std::fs::read(dir().join(n)).expect(n);
            Case {
                name: f[0].into(),
                layout,
                reference: read(f[4]),
                distorted: read(f[5]),
                chroma: f[6] == "1",
                fields: f[7]
                    .split(';')
                    .map(|kv| {
                        let (k, v) = kv.split_once('=').unwrap();
                        (k.to_string(), v.parse().unwrap())
                    })
                    .collect(),
            }
        })
        .collect()
}

/// Tightly packed planes, as the generator writes them.
fn frame<'a>(layout: &FrameLayout, data: &'a [u8]) -> Frame<'a> {
    let mut planes = Vec::new();
    let mut offset = 0;
    for p in 0..layout.format.n_planes() {
        let stride = layout.min_row_bytes(p);
        planes.push(Plane {
            data: &data[offset..],
            stride,
        });
        offset += stride * layout.plane_rows(p) as usize;
    }
    assert_eq!(offset, data.len(), "raw size of {layout:?}");
    Frame::Host(HostFrame::new(&planes))
}

fn engine(backend: BackendChoice, c: &Case) -> Engine {
    let cfg = EngineConfig {
        metrics: MetricSet::SSIM | MetricSet::MS_SSIM,
        backend,
        options: gpumetrics_engine::Options::new()
            .with(
                "ssim-chroma",
                gpumetrics_engine::OptionValue::Bool(c.chroma),
            )
            .unwrap(),
        ..Default::default()
    };
    Engine::new(&cfg, c.layout, c.layout).expect("engine")
}

fn ssim_fields(s: &Scores) -> Vec<&'static str> {
    s.iter()
        .map(|(k, _)| k)
        .filter(|k| SSIM_FIELDS.contains(k))
        .collect()
}

fn check_references(backend: BackendChoice) {
    let mut worst = 0.0f64;
    for c in cases() {
        let mut e = engine(backend, &c);
        let s = e
            .compare(
                &frame(&c.layout, &c.reference),
                &frame(&c.layout, &c.distorted),
            )
            .unwrap();
        // Exactly the reference's fields, each within the tolerance.
        let mut want: Vec<&str> = c.fields.iter().map(|(k, _)| k.as_str()).collect();
        let mut got = ssim_fields(&s);
        want.sort();
        got.sort();
        assert_eq!(got, want, "{}: fields", c.name);
        for (k, v) in &c.fields {
            let g = s.get(k).unwrap();
            let d = (g - v).abs();
            println!("{:<28} {:<8} {g:.10} ref {v:.10} |d| {d:.2e}", c.name, k);
            assert!(d <= TOLERANCE, "{} {k}: {g} vs reference {v}", c.name);
            worst = worst.max(d);
        }
        // Identical inputs: exactly 1.
        let same = e
            .compare(
                &frame(&c.layout, &c.reference),
                &frame(&c.layout, &c.reference),
            )
            .unwrap();
        for k in ssim_fields(&same) {
            assert_eq!(same.get(k), Some(1.0), "{} {k} of identical frames", c.name);
        }
    }
    println!("largest difference to the references: {worst:.2e}");
}

#[test]
fn cpu_matches_skimage_and_pytorch_msssim() {
    check_references(BackendChoice::Cpu);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_matches_skimage_and_pytorch_msssim() {
    check_references(BackendChoice::Cuda);
}

#[test]
fn too_small_for_ms_ssim_is_left_out_with_a_note() {
    let c = cases()
        .into_iter()
        .find(|c| c.name == "moon_jpeg_small")
        .unwrap();
    let e = engine(BackendChoice::Cpu, &c);
    let notes = e.metric_notes();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("ms-ssim") && n.contains("37x23")),
        "{notes:?}"
    );
}

#[test]
fn a_distortion_lowers_the_score() {
    // The test can fail: one changed pixel moves SSIM below 1 and stays near it.
    let c = &cases()[0];
    let mut d = c.reference.clone();
    d[c.layout.width as usize * 50 + 60] ^= 0x40;
    let mut e = engine(BackendChoice::Cpu, c);
    let s = e
        .compare(&frame(&c.layout, &c.reference), &frame(&c.layout, &d))
        .unwrap();
    let v = s.get("ssim").unwrap();
    assert!(v < 1.0 && v > 0.99, "{v}");
    assert!(s.get("ms-ssim").unwrap() < 1.0);
}
