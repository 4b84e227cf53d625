//! The integer ADM of libvmaf 3.2.0 with its options (VMAF v1's: the Barten-Watson blended
//! CSF, DLM weight, noise weight, min value, at the v1 models' four view distances/display
//! heights; and Watson97 off the default view, Barten, the blend's MAE tables, scale 0 and
//! AIM skipped, the defaults): per-frame adm2, aim, adm3 and scale0..3 within 1e-6 of
//! libvmaf, through the engine's ADM on the CPU backend's kernel functions
//! (`gpumetrics_engine::vmaf::adm::luma_features`, a test hook; the GPU runs the same
//! functions).
//!
//! Data: tests/data/vmaf_v1/ (made by tests/generate_vmaf_adm_v1_reference.sh from the clips
//! of tests/data/vmaf/, decoded here with FFmpeg): `<pair>__<config>.csv` per pair of
//! pairs.txt and config of configs.txt (libvmaf's option string). Its CSVs have 6
//! decimals; with `GPUMETRICS_VMAF_V1_EXACT_DIR` set to a folder of the same CSVs from a
//! `vmaf` tool printing "%.17g" (see the generator), every value must be equal to the bit.
//!
//! `cargo test -p gpumetrics-engine --test vmaf_adm_v1 -- --nocapture` prints the largest
//! differences per config and feature.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gpumetrics_engine::vmaf::adm::{LumaFeatures, luma_features};

const TOLERANCE: f64 = 1e-6;
const FEATURES: [&str; 7] = [
    "integer_adm2",
    "integer_aim",
    "integer_adm3",
    "integer_adm_scale0",
    "integer_adm_scale1",
    "integer_adm_scale2",
    "integer_adm_scale3",
];

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/vmaf_v1")
}

fn exact_dir() -> Option<PathBuf> {
    std::env::var_os("GPUMETRICS_VMAF_V1_EXACT_DIR").map(PathBuf::from)
}

fn lines(file: &str) -> Vec<Vec<String>> {
    std::fs::read_to_string(data().join(file))
        .unwrap_or_else(|e| panic!("tests/data/vmaf_v1/{file}: {e}"))
        .lines()
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect()
}

/// libvmaf's option string `k=v:k=v` as the hook's (name, value) pairs.
fn options(s: &str) -> Vec<(String, f64)> {
    s.split(':')
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            let v = match v {
                "true" => 1.0,
                "false" => 0.0,
                v => v.parse().unwrap(),
            };
            (k.to_string(), v)
        })
        .collect()
}

/// The luma planes of a clip (even size, no crop) as `u16` samples.
fn lumas(clip: &str, w: usize, h: usize, pix_fmt: &str) -> Vec<Vec<u16>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/vmaf")
        .join(format!("{clip}.mkv"));
    let raw = common::ffmpeg(&[
        "-i",
        path.to_str().unwrap(),
        "-f",
        "rawvideo",
        "-pix_fmt",
        pix_fmt,
        "-",
    ]);
    let bps = if pix_fmt == "yuv420p" { 1 } else { 2 };
    let frame = w * h * 3 / 2 * bps;
    assert_eq!(raw.len() % frame, 0, "{clip}: partial frame");
    raw.chunks(frame)
        .map(|f| {
            let y = &f[..w * h * bps];
            if bps == 1 {
                y.iter().map(|&v| v as u16).collect()
            } else {
                y.chunks(2)
                    .map(|b| u16::from_le_bytes([b[0], b[1]]))
                    .collect()
            }
        })
        .collect()
}

/// libvmaf's CSV: per frame, the values of [`FEATURES`] (its columns carry option suffixes).
fn reference(file: &Path) -> Vec<[f64; 7]> {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
    let mut rows = text.lines();
    let header: Vec<&str> = rows.next().unwrap().split(',').collect();
    let column = |f: &str| {
        header
            .iter()
            .position(|h| *h == f || h.starts_with(&format!("{f}_")))
            .unwrap_or_else(|| panic!("{file:?}: no column {f}"))
    };
    let cols = FEATURES.map(column);
    rows.map(|l| {
        let v: Vec<&str> = l.split(',').collect();
        cols.map(|c| v[c].parse().unwrap())
    })
    .collect()
}

#[test]
fn adm_with_options_equals_libvmaf_3_2_0() {
    let exact = exact_dir();
    let configs = lines("configs.txt");
    let mut worst: BTreeMap<(String, &str), f64> = BTreeMap::new();
    let mut frames = 0;
    for pair in lines("pairs.txt") {
        let (name, w, h, pix) = (&pair[0], &pair[3], &pair[4], &pair[5]);
        let (w, h): (usize, usize) = (w.parse().unwrap(), h.parse().unwrap());
        let bpc = match pix.as_str() {
            "yuv420p" => 8,
            "yuv420p10le" => 10,
            "yuv420p12le" => 12,
            other => panic!("no depth for {other}"),
        };
        let refs = lumas(&pair[1], w, h, pix);
        let dists = lumas(&pair[2], w, h, pix);
        assert_eq!(refs.len(), dists.len());
        for config in &configs {
            let opts = options(&config[1]);
            let opts: Vec<(&str, f64)> = opts.iter().map(|(k, v)| (k.as_str(), *v)).collect();
            let file = format!("{name}__{}.csv", config[0]);
            let expected = reference(&exact.clone().unwrap_or_else(data).join(&file));
            assert_eq!(expected.len(), refs.len(), "{file}: frames");
            for (i, (r, d)) in refs.iter().zip(&dists).enumerate() {
                let f: LumaFeatures = luma_features(&opts, w as u32, h as u32, bpc, r, d).unwrap();
                let got = [
                    f.adm2, f.aim, f.adm3, f.scale[0], f.scale[1], f.scale[2], f.scale[3],
                ];
                for (k, feature) in FEATURES.iter().enumerate() {
                    // Barten's factors overflow libvmaf's fixed point (as here): NaN at times.
                    let both_nan = got[k].is_nan() && expected[i][k].is_nan();
                    let diff = if both_nan {
                        0.0
                    } else {
                        (got[k] - expected[i][k]).abs()
                    };
                    let e = worst.entry((config[0].clone(), feature)).or_default();
                    *e = e.max(diff);
                    if both_nan {
                    } else if exact.is_some() {
                        assert_eq!(
                            got[k].to_bits(),
                            expected[i][k].to_bits(),
                            "{file} frame {i} {feature}: {} vs libvmaf {}",
                            got[k],
                            expected[i][k]
                        );
                    } else {
                        assert!(
                            diff <= TOLERANCE,
                            "{file} frame {i} {feature}: {} vs libvmaf {} (diff {diff:e})",
                            got[k],
                            expected[i][k]
                        );
                    }
                }
                frames += 1;
            }
        }
    }
    for ((config, feature), d) in &worst {
        println!("{config:18} {feature:20} max |diff| {d:.3e}");
    }
    println!(
        "{frames} frames, {}",
        if exact.is_some() {
            "bit-exact"
        } else {
            "6-decimal CSVs"
        }
    );
}

#[test]
fn bad_options_and_sizes_are_refused() {
    let n = 64 * 48;
    let (r, d) = (vec![100u16; n], vec![101u16; n]);
    assert!(luma_features(&[], 64, 48, 8, &r, &d).is_ok());
    for opts in [
        &[("adm_csf_mode", 4.0)][..],
        &[("adm_dlm_weight", 2.0)],
        &[("adm_norm_view_dist", 0.5)],
        &[("adm_ref_display_height", 1080.5)],
        &[("adm_csf_mode", 2.0), ("adm_ref_display_height", 1000.0)],
        &[("adm_no_such_option", 1.0)],
        &[("adm_skip_aim", 2.0)],
    ] {
        assert!(luma_features(opts, 64, 48, 8, &r, &d).is_err(), "{opts:?}");
    }
    assert!(luma_features(&[], 32, 48, 8, &r[..32 * 48], &d[..32 * 48]).is_err());
    assert!(luma_features(&[], 64, 48, 8, &r[1..], &d).is_err());
    assert!(luma_features(&[], 64, 48, 17, &r, &d).is_err());
    assert!(luma_features(&[], 64, 48, 6, &r, &d).is_err());
    let big = vec![1u16 << 10; n];
    assert!(luma_features(&[], 64, 48, 10, &big, &d).is_err());
}
