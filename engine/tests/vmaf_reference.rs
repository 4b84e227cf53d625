//! VMAF against libvmaf v3.1.0 on real clips (issue 14): per-frame `vmaf` of the three
//! built-in models within 0.005, the elementary features within 1e-4, on the CPU backend
//! (the GPU runs the same kernel functions; `vmaf_cuda.rs` compares the two).
//!
//! Data: tests/data/vmaf/ (made by tests/generate_vmaf_reference.sh): lossless reference
//! clips and x264/x265 distortions of them (8, 10 and 12 bit, 4:2:0 and 4:4:4, 320x240,
//! 333x199 cropped from 334x200, 1920x1080, and a clip against itself; 16-bit 4:4:4 FFV1
//! with a blur as the distortion), decoded here with FFmpeg,
//! and libvmaf's per-frame CSV for each pair (6 decimals). The neg model reads libvmaf's
//! `_egl_1` features (enhancement gain limit 1).
//!
//! `cargo test -p gpumetrics-engine --test vmaf_reference -- --nocapture` prints the largest
//! differences per pair, model and field. On the GPU machine (no FFmpeg there): a run here
//! with `GPUMETRICS_FFMPEG_CACHE=DIR` keeps the decoded clips in DIR; carried, the same
//! variable and `GPUMETRICS_TEST_BACKEND=cuda` run the comparison on the CUDA backend.
//!
//! Bit-exactness: with `GPUMETRICS_VMAF_EXACT_DIR` set to a folder of the same CSVs written
//! by a `vmaf` tool that prints 17 significant digits (in libvmaf/src/output.c, the CSV
//! writer's `"%.6f,"` and `"%.16f,"` replaced by `"%.17g,"`; run the generator with that
//! tool), every feature and every score must be equal to the last bit (they are, on all 113
//! frames and the 3 models).

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use common::clips::{Pair, backend, decode, host, layout_of, pairs};
use gpumetrics_engine::{
    BackendChoice, Engine, EngineConfig, Frame, FrameLayout, HostFrame, MetricSet, PixelFormat,
    Plane, Scores,
};

const VMAF_TOLERANCE: f64 = 0.005;
const FEATURE_TOLERANCE: f64 = 1e-4;
const MODELS: [&str; 3] = ["vmaf_v0.6.1", "vmaf_v0.6.1neg", "vmaf_4k_v0.6.1"];

/// Full-precision reference CSVs, when given (see the module documentation).
fn exact_dir() -> Option<PathBuf> {
    std::env::var_os("GPUMETRICS_VMAF_EXACT_DIR").map(PathBuf::from)
}

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/vmaf")
}

/// libvmaf's CSV: one map of column → value per frame.
fn reference_values(pair: &str) -> Vec<HashMap<String, f64>> {
    let dir = exact_dir().unwrap_or_else(data);
    read_csv(&dir.join(format!("{pair}.csv")))
}

fn read_csv(path: &Path) -> Vec<HashMap<String, f64>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|l| {
            header
                .iter()
                .zip(l.split(','))
                .filter(|(h, _)| !h.is_empty())
                .map(|(h, v)| (h.to_string(), v.parse().unwrap()))
                .collect()
        })
        .collect()
}

/// The engine's records of a pair with one model, on the CPU backend (or [`backend`]).
fn run(pair: &Pair, model: &str, refs: &[[Vec<u8>; 3]], dists: &[[Vec<u8>; 3]]) -> Vec<Scores> {
    let (format, bps, s) = layout_of(&pair.pix_fmt);
    let layout = FrameLayout {
        format,
        width: pair.width,
        height: pair.height,
    };
    let cfg = EngineConfig {
        metrics: MetricSet::VMAF,
        backend: backend(),
        options: common::vmaf_options(model),
        ..Default::default()
    };
    let mut engine = Engine::new(&cfg, layout, layout).unwrap();
    // motion2 waits for the next pair; the HFR models' five-frame window for two.
    assert_eq!(engine.lag(), if model.contains("_hfr_") { 2 } else { 1 });
    let mut out = Vec::new();
    for (r, d) in refs.iter().zip(dists) {
        let rf = host(r, pair.width, bps, s);
        let df = host(d, pair.width, bps, s);
        out.extend(engine.push(&rf, &df).unwrap());
    }
    out.extend(engine.finish().expect("finishing the sequence"));
    out
}

/// (our field, libvmaf's column for the default and 4k models, for the neg model)
const FEATURES: [(&str, &str, &str); 10] = [
    ("vmaf-adm2", "integer_adm2", "integer_adm2_egl_1"),
    (
        "vmaf-adm-scale0",
        "integer_adm_scale0",
        "integer_adm_scale0_egl_1",
    ),
    (
        "vmaf-adm-scale1",
        "integer_adm_scale1",
        "integer_adm_scale1_egl_1",
    ),
    (
        "vmaf-adm-scale2",
        "integer_adm_scale2",
        "integer_adm_scale2_egl_1",
    ),
    (
        "vmaf-adm-scale3",
        "integer_adm_scale3",
        "integer_adm_scale3_egl_1",
    ),
    (
        "vmaf-vif-scale0",
        "integer_vif_scale0",
        "integer_vif_scale0_egl_1",
    ),
    (
        "vmaf-vif-scale1",
        "integer_vif_scale1",
        "integer_vif_scale1_egl_1",
    ),
    (
        "vmaf-vif-scale2",
        "integer_vif_scale2",
        "integer_vif_scale2_egl_1",
    ),
    (
        "vmaf-vif-scale3",
        "integer_vif_scale3",
        "integer_vif_scale3_egl_1",
    ),
    ("vmaf-motion2", "integer_motion2", "integer_motion2"),
];

#[test]
fn vmaf_equals_libvmaf_on_real_clips() {
    let mut failures = Vec::new();
    // Largest difference per (model, field) over all pairs.
    let mut overall: Vec<(String, f64)> = Vec::new();
    let mut note = |key: String, d: f64| match overall.iter_mut().find(|(k, _)| *k == key) {
        Some((_, m)) => *m = m.max(d),
        None => overall.push((key, d)),
    };
    for pair in pairs() {
        let refs = decode(&pair.reference, pair.width, pair.height, &pair.pix_fmt);
        let dists = decode(&pair.distorted, pair.width, pair.height, &pair.pix_fmt);
        let expected = reference_values(&pair.name);
        assert_eq!(refs.len(), expected.len(), "{}: frame count", pair.name);
        for model in MODELS {
            let got = run(&pair, model, &refs, &dists);
            assert_eq!(
                got.len(),
                expected.len(),
                "{} {model}: one record per frame",
                pair.name
            );
            let mut worst = [0.0f64; 11];
            for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
                let mut check = |k: usize, field: &str, col: &str, tol: f64| {
                    let (g, e) = (g.get(field).unwrap(), e[col]);
                    let d = (g - e).abs();
                    worst[k] = worst[k].max(d);
                    if d.is_nan() || d > tol {
                        failures.push(format!(
                            "{} {model} frame {i} {field}: {g} vs libvmaf {e}",
                            pair.name
                        ));
                    }
                };
                let exact = exact_dir().is_some();
                check(0, "vmaf", model, if exact { 0.0 } else { VMAF_TOLERANCE });
                for (k, (field, col, neg_col)) in FEATURES.iter().enumerate() {
                    let col = if model.ends_with("neg") { neg_col } else { col };
                    check(
                        k + 1,
                        field,
                        col,
                        if exact { 0.0 } else { FEATURE_TOLERANCE },
                    );
                }
            }
            println!(
                "{:28} {:15} vmaf {:.2e} | {}",
                pair.name,
                model,
                worst[0],
                FEATURES
                    .iter()
                    .zip(&worst[1..])
                    .map(|((f, _, _), d)| format!("{} {d:.1e}", &f[5..]))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            note(format!("{model} vmaf"), worst[0]);
            for ((f, _, _), d) in FEATURES.iter().zip(&worst[1..]) {
                note(format!("{model} {f}"), *d);
            }
        }
    }
    println!("largest |engine - libvmaf| over all pairs (libvmaf prints 6 decimals):");
    for (k, d) in &overall {
        println!("  {k:32} {d:.2e}");
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The v1 models (libvmaf 3.2.0's names, its `<pair>_v1.csv` columns `<model>` and
/// `<model>/<feature>`).
const V1_MODELS: [&str; 8] = [
    "vmaf_v1.0.16_3d0h",
    "vmaf_v1.0.16_5d0h",
    "vmaf_v1.0.16_1d5h_2160",
    "vmaf_v1.0.16_3d0h_2160",
    "vmaf_v1.0.16_hfr_3d0h",
    "vmaf_v1.0.16_hfr_5d0h",
    "vmaf_v1.0.16_hfr_1d5h_2160",
    "vmaf_v1.0.16_hfr_3d0h_2160",
];

/// (our field, the feature's column after the model's name) of the v1 models.
const V1_FEATURES: [(&str, &str); 5] = [
    ("vmaf-cambi", "cambi"),
    ("vmaf-speed-chroma-uv", "speed_chroma_uv"),
    ("vmaf-adm3", "integer_adm3"),
    ("vmaf-aim", "integer_aim"),
    ("vmaf-motion3", "integer_motion3"),
];

/// The v1 models within 0.005 and their features within 1e-3 of libvmaf 3.2.0, on every
/// pair and model libvmaf accepts; the sizes libvmaf refuses (`<pair>_v1_refused.txt`:
/// SpEED's "image too small", CAMBI beyond 10 bits) are refused here too, with its reason.
#[test]
fn vmaf_v1_equals_libvmaf_on_real_clips() {
    const V1_FEATURE_TOLERANCE: f64 = 1e-3;
    let mut failures = Vec::new();
    let mut overall = [0.0f64; 6];
    for pair in pairs() {
        let refused = std::fs::read_to_string(data().join(format!("{}_v1_refused.txt", pair.name)))
            .unwrap_or_default();
        let csv = data().join(format!("{}_v1.csv", pair.name));
        let expected = if csv.exists() {
            read_csv(&csv)
        } else {
            Vec::new()
        };
        let (format, _, _) = layout_of(&pair.pix_fmt);
        let layout = FrameLayout {
            format,
            width: pair.width,
            height: pair.height,
        };
        let mut decoded = None;
        for model in V1_MODELS {
            if let Some(line) = refused.lines().find(|l| l.split(' ').next() == Some(model)) {
                let cfg = EngineConfig {
                    metrics: MetricSet::VMAF,
                    backend: backend(),
                    options: common::vmaf_options(model),
                    ..Default::default()
                };
                match Engine::new(&cfg, layout, layout) {
                    Ok(_) => failures.push(format!(
                        "{} {model}: libvmaf refuses it ({line}), the engine does not",
                        pair.name
                    )),
                    Err(e) => println!("{:28} {model:28} refused as libvmaf: {e}", pair.name),
                }
                continue;
            }
            if expected.is_empty() || !expected[0].contains_key(model) {
                continue;
            }
            let (refs, dists) = decoded.get_or_insert_with(|| {
                (
                    decode(&pair.reference, pair.width, pair.height, &pair.pix_fmt),
                    decode(&pair.distorted, pair.width, pair.height, &pair.pix_fmt),
                )
            });
            let got = run(&pair, model, refs, dists);
            assert_eq!(got.len(), expected.len(), "{} {model}", pair.name);
            let mut worst = [0.0f64; 6];
            for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
                let mut check = |k: usize, field: &str, col: &str, tol: f64| {
                    let (g, e) = (g.get(field), e[col]);
                    let d = g.map_or(f64::NAN, |g| (g - e).abs());
                    worst[k] = worst[k].max(d);
                    if d.is_nan() || d > tol {
                        failures.push(format!(
                            "{} {model} frame {i} {field}: {g:?} vs libvmaf {e}",
                            pair.name
                        ));
                    }
                };
                check(0, "vmaf", model, VMAF_TOLERANCE);
                for (k, (field, col)) in V1_FEATURES.iter().enumerate() {
                    check(
                        k + 1,
                        field,
                        &format!("{model}/{col}"),
                        V1_FEATURE_TOLERANCE,
                    );
                }
            }
            println!(
                "{:28} {model:28} vmaf {:.1e} | {}",
                pair.name,
                worst[0],
                V1_FEATURES
                    .iter()
                    .zip(&worst[1..])
                    .map(|((f, _), d)| format!("{} {d:.1e}", &f[5..]))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            for (o, w) in overall.iter_mut().zip(worst) {
                *o = o.max(w);
            }
        }
    }
    println!(
        "largest |engine - libvmaf| over all v1 pairs and models: vmaf {:.2e}",
        overall[0]
    );
    for ((f, _), d) in V1_FEATURES.iter().zip(&overall[1..]) {
        println!("  {f:24} {d:.2e}");
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn the_first_frame_against_itself_scores_below_100_because_its_motion_is_0() {
    let pair = pairs()
        .into_iter()
        .find(|p| p.name.starts_with("self_"))
        .unwrap();
    let refs = decode(&pair.reference, pair.width, pair.height, &pair.pix_fmt);
    let got = run(&pair, "vmaf_v0.6.1", &refs[..3], &refs[..3]);
    assert_eq!(got[0].get("vmaf-motion2"), Some(0.0));
    assert!(got[0].get("vmaf").unwrap() < 99.0, "{:?}", got[0]);
    assert_eq!(got[1].get("vmaf"), Some(100.0));
}

#[test]
fn the_engine_holds_one_pair_back_and_each_record_is_its_own_pair() {
    let layout = FrameLayout {
        format: PixelFormat::Gray8,
        width: 64,
        height: 48,
    };
    let frame = |seed: u64, noise: u64| -> Vec<u8> {
        let mut next = common::xorshift(seed);
        (0..64 * 48)
            .map(|i| (((i % 64) * 3 + (i / 64) * 2) as u64 + next() % (noise + 1)) as u8)
            .collect()
    };
    let refs: Vec<Vec<u8>> = (0..4).map(|i| frame(1 + i, 0)).collect();
    let dists: Vec<Vec<u8>> = (0..4).map(|i| frame(10 + i, 4 * i)).collect();
    fn f(d: &[u8]) -> Frame<'_> {
        Frame::Host(HostFrame::new(&[Plane {
            data: d,
            stride: 64,
        }]))
    }
    let engine = |metrics| {
        let cfg = EngineConfig {
            metrics,
            backend: BackendChoice::Cpu,
            ..Default::default()
        };
        Engine::new(&cfg, layout, layout).unwrap()
    };
    let mut psnr_only = engine(MetricSet::PSNR);
    assert_eq!(psnr_only.lag(), 0);
    let psnr: Vec<f64> = (0..4)
        .map(|i| {
            let s = psnr_only.compare(&f(&refs[i]), &f(&dists[i])).unwrap();
            s.get("psnr-y").unwrap()
        })
        .collect();
    let mut e = engine(MetricSet::PSNR | MetricSet::VMAF);
    assert_eq!(e.lag(), 1);
    let err = e.compare(&f(&refs[0]), &f(&dists[0])).unwrap_err();
    assert!(err.to_string().contains("Engine::push"), "{err}");
    e.reset();
    let mut records = Vec::new();
    for i in 0..4 {
        let out = e.push(&f(&refs[i]), &f(&dists[i])).unwrap();
        assert_eq!(out.is_none(), i == 0, "pair {i}");
        records.extend(out);
    }
    records.extend(e.finish().expect("finishing the sequence"));
    assert!(
        e.finish().expect("finishing again").is_empty(),
        "nothing is held after finish"
    );
    assert_eq!(records.len(), 4);
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r.get("psnr-y"), Some(psnr[i]), "record {i} is pair {i}");
        let names: Vec<_> = r.iter().map(|(n, _)| n).collect();
        assert_eq!(names.last(), Some(&"vmaf"), "vmaf comes last: {names:?}");
    }
    // A flush drops the held pair: the next push starts a sequence again.
    assert!(e.push(&f(&refs[0]), &f(&dists[0])).unwrap().is_none());
    assert_eq!(e.held(), 1);
    assert_eq!(
        e.reset(),
        1,
        "the flush reports the measured pair it dropped"
    );
    assert_eq!(e.held(), 0);
    assert!(e.push(&f(&refs[1]), &f(&dists[1])).unwrap().is_none());
    // Frames of at most 32 rows get no vmaf, with a note.
    let small = FrameLayout {
        height: 32,
        ..layout
    };
    let cfg = EngineConfig {
        metrics: MetricSet::VMAF,
        backend: BackendChoice::Cpu,
        ..Default::default()
    };
    let e = Engine::new(&cfg, small, small).unwrap();
    assert_eq!(e.lag(), 0);
    assert!(
        e.metric_notes()[0].contains("larger than 32x32"),
        "{:?}",
        e.metric_notes()
    );
}
