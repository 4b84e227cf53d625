//! PSNR-HVS against libvmaf 3.2.0's `psnr_hvs` feature on real clips (issue 44): every
//! frame's `psnr-hvs-y`, `psnr-hvs-u`, `psnr-hvs-v` and `psnr-hvs` within 1e-3 dB of
//! libvmaf's `psnr_hvs_y`, `psnr_hvs_cb`, `psnr_hvs_cr` and `psnr_hvs` (which it prints
//! with 6 decimals), +inf where libvmaf prints `inf` (a clip against itself); the pair
//! libvmaf refuses (16 bits per sample) is refused by the engine too, saying why.
//!
//! Data: the clips of tests/data/vmaf/ (8, 10, 12 and 16 bit, 4:2:0 and 4:4:4, 333x199,
//! 1920x1080 and a clip against itself), decoded by FFmpeg (`common::clips`), and
//! tests/data/features/psnr_hvs.csv, made from them by
//! `tests/generate_libvmaf_features.sh psnr_hvs psnr_hvs`.
//!
//! `-- --nocapture` prints the largest difference per pair and field. On the GPU machine
//! (no FFmpeg there): a run here with `GPUMETRICS_FFMPEG_CACHE=DIR` keeps the decoded
//! clips in DIR; carried, the same variable and `GPUMETRICS_TEST_BACKEND=cuda` run the
//! comparison on the CUDA backend.

mod common;

use common::clips;
use gpumetrics_engine::{MetricSet, Options};

const TOLERANCE: f64 = 1e-3;

/// (our field, libvmaf's column)
const FIELDS: [(&str, &str); 4] = [
    ("psnr-hvs-y", "psnr_hvs_y"),
    ("psnr-hvs-u", "psnr_hvs_cb"),
    ("psnr-hvs-v", "psnr_hvs_cr"),
    ("psnr-hvs", "psnr_hvs"),
];

fn flag() -> MetricSet {
    MetricSet::named("psnr-hvs").expect("psnr-hvs is registered")
}

#[test]
fn psnr_hvs_equals_libvmaf_on_real_clips() {
    let reference = clips::libvmaf_features("psnr_hvs");
    let mut failures = Vec::new();
    let (mut compared, mut refused, mut infinite) = (0, 0, 0);
    let mut overall = [0.0f64; 4];
    for pair in clips::pairs() {
        let want = reference
            .get(&pair.name)
            .unwrap_or_else(|| panic!("{}: no libvmaf values in psnr_hvs.csv", pair.name));
        let got = clips::scores(&pair, flag(), Options::new());
        let (want, got) = match (want, got) {
            (Ok(want), Ok(got)) => (want, got),
            // libvmaf refuses it (more than 12 bits): so does the engine, saying why.
            (Err(why), Err(e)) => {
                let e = e.to_string();
                if !(e.contains("psnr-hvs") && e.contains("12 bits")) {
                    failures.push(format!("{}: refused, but saying {e}", pair.name));
                }
                println!("{:<28} refused as by libvmaf ({why}): {e}", pair.name);
                refused += 1;
                continue;
            }
            (Err(why), Ok(_)) => {
                failures.push(format!(
                    "{}: libvmaf refuses it ({why}), the engine does not",
                    pair.name
                ));
                continue;
            }
            (Ok(_), Err(e)) => panic!("{}: the engine refuses it: {e}", pair.name),
        };
        assert_eq!(got.len(), want.len(), "{}: one record per frame", pair.name);
        let mut worst = [0.0f64; 4];
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            for (k, (field, column)) in FIELDS.iter().enumerate() {
                let (g, w) = (g.get(field), w[*column]);
                let d = match g {
                    Some(g) if g == w => 0.0,
                    Some(g) => (g - w).abs(),
                    None => f64::NAN,
                };
                if w.is_infinite() && d == 0.0 {
                    infinite += 1;
                }
                if d.is_nan() || d > TOLERANCE {
                    failures.push(format!(
                        "{} frame {i} {field}: {g:?} vs libvmaf {w}",
                        pair.name
                    ));
                    continue;
                }
                worst[k] = worst[k].max(d);
            }
            compared += 1;
        }
        println!(
            "{:<28} {:>3} frames, largest difference {}",
            pair.name,
            got.len(),
            FIELDS
                .iter()
                .zip(&worst)
                .map(|((f, _), d)| format!("{f} {d:.1e}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        for (o, w) in overall.iter_mut().zip(worst) {
            *o = o.max(w);
        }
    }
    println!(
        "largest |engine - libvmaf| over {compared} frames (libvmaf prints 6 decimals): {}",
        FIELDS
            .iter()
            .zip(&overall)
            .map(|((f, _), d)| format!("{f} {d:.2e}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(compared > 100, "only {compared} frames compared");
    assert_eq!(refused, 1, "the 16-bit pair");
    // The clip against itself: every field of its 12 frames is +inf on both sides.
    assert!(
        infinite >= 4 * 12,
        "only {infinite} infinite values matched"
    );
}
