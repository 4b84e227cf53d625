// SPDX-License-Identifier: MPL-2.0
//! The summary's `pooled` PSNR (the PSNR of the mean MSE) against the summary line of
//! Debian's FFmpeg `psnr` filter (`PSNR y:.. u:.. v:.. average:..`, printed with `%f`), on
//! clips generated here: 8-bit 4:2:0 and 10-bit 4:4:4 with noise, and a clip against itself
//! (every frame identical: +inf, which FFmpeg prints as `inf`). CPU backend.

use std::process::Command as StdCommand;

use assert_cmd::Command;
use serde_json::Value;

fn ffmpeg(args: &[&str]) -> String {
    let out = StdCommand::new("ffmpeg")
        .args(["-hide_banner", "-nostats", "-y"])
        .args(args)
        .output()
        .expect("ffmpeg runs (scripts/setup-deps.sh installs it)");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "ffmpeg {args:?}: {err}");
    err
}

/// FFmpeg's summary of `dist` against `reference`: (`y`, `u`, `v`, `average`) as printed.
fn ffmpeg_summary(reference: &str, dist: &str) -> Vec<(String, String)> {
    let log = ffmpeg(&[
        "-i", dist, "-i", reference, "-lavfi", "psnr", "-f", "null", "-",
    ]);
    let line = log
        .lines()
        .find_map(|l| l.split_once("] PSNR ").map(|(_, rest)| rest.to_string()))
        .unwrap_or_else(|| panic!("no PSNR summary line:\n{log}"));
    line.split_whitespace()
        .filter_map(|kv| kv.split_once(':'))
        .filter(|(k, _)| matches!(*k, "y" | "u" | "v" | "average"))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The summary object of `gpumetrics REF DIST --format json`, and the table it printed on
/// stderr.
fn gpumetrics_summary(reference: &str, dist: &str) -> (Value, String) {
    let out = Command::cargo_bin("gpumetrics")
        .unwrap()
        .args(["--backend", "cpu", reference, dist, "--format", "json"])
        .output()
        .unwrap();
    let (so, se) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert_eq!(out.status.code(), Some(0), "{so}\n{se}");
    let doc: Value = serde_json::from_str(&so).unwrap();
    (doc["summary"].clone(), se)
}

#[test]
fn pooled_psnr_is_ffmpegs_summary_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
    // The luma darkens by `step` code values a frame, so that the per-frame MSEs differ.
    for (name, pix, step) in [("p8", "yuv420p", 8), ("p10", "yuv444p10le", 32)] {
        let distort = format!(
            "noise=alls=20:allf=t,geq=lum='max(lum(X,Y)-{step}*N,0)':cb='cb(X,Y)':cr='cr(X,Y)'"
        );
        let (r, d) = (
            p(&format!("{name}-ref.mkv")),
            p(&format!("{name}-dist.mkv")),
        );
        // Noise that varies over the frames, so the mean of the PSNRs and the PSNR of the
        // mean MSE differ.
        let source = "testsrc2=size=64x48:rate=25";
        ffmpeg(&[
            "-f",
            "lavfi",
            "-i",
            source,
            "-frames:v",
            "15",
            "-pix_fmt",
            pix,
            "-c:v",
            "ffv1",
            &r,
        ]);
        ffmpeg(&[
            "-i", &r, "-vf", &distort, "-pix_fmt", pix, "-c:v", "ffv1", &d,
        ]);
        let want = ffmpeg_summary(&r, &d);
        assert_eq!(want.len(), 4, "{want:?}");
        let (summary, table) = gpumetrics_summary(&r, &d);
        for (plane, printed) in &want {
            let field = if plane == "average" {
                "psnr-avg".to_string()
            } else {
                format!("psnr-{plane}")
            };
            let stats = &summary["fields"][&field];
            let pooled = stats["pooled"]
                .as_f64()
                .unwrap_or_else(|| panic!("{field}: {stats}"));
            let printed: f64 = printed.parse().unwrap();
            assert!(
                (pooled - printed).abs() <= 5e-7 + 1e-9,
                "{name} {field}: pooled {pooled} vs FFmpeg's {printed}"
            );
            // The mean of the per-frame PSNRs is another number.
            let mean = stats["mean"].as_f64().unwrap();
            if field == "psnr-y" && name == "p8" {
                assert!(mean - pooled > 0.1, "{name} {field}: {mean} {pooled}");
            }
            assert!(
                table.contains(&format!("{field} {pooled:.3}")),
                "{field} {pooled:.3} not in:\n{table}"
            );
        }
        assert!(
            summary["fields"]["mse-y"].get("pooled").is_none(),
            "{summary}"
        );
        // A clip against itself: FFmpeg prints inf, the summary has +inf (`null` in JSON, as
        // every infinite score).
        let same = ffmpeg_summary(&r, &r);
        assert!(same.iter().all(|(_, v)| v == "inf"), "{same:?}");
        let (summary, _) = gpumetrics_summary(&r, &r);
        for field in ["psnr-y", "psnr-u", "psnr-v", "psnr-avg"] {
            let pooled = summary["fields"][field].get("pooled");
            assert_eq!(pooled, Some(&Value::Null), "{field} in {summary}");
        }
    }
}
