// SPDX-License-Identifier: MPL-2.0
//! The `gpumetrics` command on clips generated at test time with ffmpeg (testsrc2, 320x180,
//! H.264): every output format, alignment in both directions, scaling, differing lengths
//! and frame rates, `--every`/`--frames`, thresholds and bad input; the monitoring options
//! (`--window`, `--alert`, `--subsample`, `--roi`) and live inputs (UDP streams from a
//! gst-launch-1.0 sender on this machine). CPU backend, so no GPU is needed.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command as StdCommand, ExitStatus, Stdio};
use std::sync::{OnceLock, mpsc};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use gpumetrics_engine::metric;
use predicates::prelude::*;
use serde_json::Value;

mod common;
use common::{Clips, Sender, ffmpeg, free_udp_port, gpumetrics};

/// Frames of the main reference clip.
const FRAMES: usize = 45;

/// Generates the clips once per test binary.
fn clips() -> &'static Clips {
    static CLIPS: OnceLock<Clips> = OnceLock::new();
    CLIPS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
        let lossless = [
            "-c:v",
            "libx264",
            "-qp",
            "0",
            "-preset",
            "ultrafast",
            "-pix_fmt",
            "yuv420p",
        ];
        let lossy = [
            "-c:v",
            "libx264",
            "-b:v",
            "80k",
            "-preset",
            "ultrafast",
            "-pix_fmt",
            "yuv420p",
        ];
        let src = |n: usize| format!("testsrc2=size=320x180:rate=30,trim=end_frame={n}");
        // The source, 50 frames, with 5 frames more than the reference.
        let long = p("long.mp4");
        ffmpeg(
            &[
                &["-f", "lavfi", "-i", &src(FRAMES + 5)][..],
                &lossless,
                &[&long],
            ]
            .concat(),
        );
        let ref_path = p("ref.mp4");
        ffmpeg(
            &[
                &["-i", &long, "-frames:v", &FRAMES.to_string()][..],
                &lossless,
                &[&ref_path],
            ]
            .concat(),
        );
        let enc = |input: &str, filter: &str, out: &str| {
            ffmpeg(&[&["-i", input, "-vf", filter][..], &lossy, &[&p(out)]].concat());
        };
        enc(&ref_path, "null", "dist.mp4");
        // Reference starts at source frame 3; the distorted source at 0: it starts 3 late.
        ffmpeg(
            &[
                &["-i", &long, "-vf", "trim=start_frame=3,setpts=PTS-STARTPTS"][..],
                &lossless,
                &[&p("ref_from3.mp4")],
            ]
            .concat(),
        );
        enc(&long, "null", "dist_long.mp4");
        // Distorted starts at source frame 5: it starts 5 frames early.
        enc(
            &long,
            "trim=start_frame=5,setpts=PTS-STARTPTS",
            "dist_from5.mp4",
        );
        enc(&ref_path, "scale=160:90", "dist_small.mp4");
        enc(&ref_path, "trim=end_frame=30", "dist_short.mp4");
        enc(&ref_path, "fps=15", "dist_15fps.mp4");
        ffmpeg(
            &[
                &[
                    "-i",
                    &ref_path,
                    "-c:v",
                    "libx264",
                    "-b:v",
                    "80k",
                    "-preset",
                    "ultrafast",
                ][..],
                &["-pix_fmt", "yuv444p", &p("dist_444.mp4")],
            ]
            .concat(),
        );
        // Frames 15 to 29 (0.5 s to 1 s) blurred, the others identical to the reference
        // (lossless): PSNR inf, then about 23 dB, then inf.
        ffmpeg(
            &[
                &[
                    "-i",
                    &ref_path,
                    "-vf",
                    "boxblur=luma_radius=6:enable='between(n,15,29)'",
                ][..],
                &lossless,
                &[&p("dist_blur_middle.mp4")],
            ]
            .concat(),
        );
        // Long enough that Ctrl-C comes in the middle of the run.
        ffmpeg(
            &[
                &["-f", "lavfi", "-i", &src(600)][..],
                &lossy,
                &[&p("long600.mp4")],
            ]
            .concat(),
        );
        std::fs::write(p("notvideo.mp4"), "this is not a video\n").unwrap();
        Clips {
            path: dir.path().to_path_buf(),
            _dir: dir,
        }
    })
}

fn run_ok(args: &[&str]) -> (String, String) {
    let out = gpumetrics(args).output().unwrap();
    let (so, se) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}\nstdout:\n{so}\nstderr:\n{se}"
    );
    (so, se)
}

/// The number after `label` in `text` (e.g. `compared pairs: 45`).
fn number_after(text: &str, label: &str) -> u64 {
    let rest = &text[text
        .find(label)
        .unwrap_or_else(|| panic!("no `{label}` in:\n{text}"))
        + label.len()..];
    rest.trim_start()
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap_or_else(|_| panic!("no number after `{label}` in:\n{text}"))
}

/// The mean column of `field` in the summary table.
fn table_mean(table: &str, field: &str) -> f64 {
    let row = table
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(field))
        .unwrap_or_else(|| panic!("no row {field} in:\n{table}"));
    row.split(['│', '┆'])
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .nth(1)
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn table_summary() {
    let c = clips();
    let (out, err) = run_ok(&[&c.get("ref.mp4"), &c.get("dist.mp4")]);
    assert_eq!(
        number_after(&out, "compared pairs:"),
        FRAMES as u64,
        "{out}"
    );
    assert!(out.contains("unmatched: 0 reference, 0 distorted"), "{out}");
    let psnr = table_mean(&out, "psnr-y");
    assert!((20.0..45.0).contains(&psnr), "a real encode: {psnr}\n{out}");
    assert!(out.contains("harm. mean") && out.contains("p95"), "{out}");
    assert!(err.contains("decoding reference: software"), "{err}");
    assert!(err.contains("backend: cpu"), "{err}");
}

/// The field names of the summary table's rows, in order.
fn table_fields(table: &str) -> Vec<String> {
    table
        .lines()
        .filter_map(|l| l.strip_prefix('│')?.split(['│', '┆']).next())
        .map(|cell| cell.trim().to_string())
        .filter(|name| name != "field")
        .collect()
}

#[test]
fn all_metrics() {
    let c = clips();
    // The options that add fields: every field a Y'CbCr input can have.
    let (out, _) = run_ok(&[
        &c.get("ref.mp4"),
        &c.get("dist.mp4"),
        "--metrics",
        "all",
        "--ssim-chroma",
        "--vmaf-features",
        "--frames",
        "4",
    ]);
    // Every metric of the registry, each with every field it declares, in record order;
    // only the RGB channels' fields (psnr-r, mse-g, ssim-b, ...) are not for this input,
    // and the v1 models' VMAF features are not for the default (v0) model.
    let v1 = gpumetrics_engine::metric::vmaf::V1_FEATURE_FIELDS;
    let expected: Vec<String> = metric::all()
        .flat_map(|info| info.fields)
        .map(|f| f.name)
        .filter(|n| !n.ends_with("-r") && !n.ends_with("-g") && !n.ends_with("-b"))
        .filter(|n| !v1.contains(n))
        .map(String::from)
        .collect();
    assert_eq!(table_fields(&out), expected, "{out}");
    // A real encode (80 kbit/s H.264): every mean finite and off its metric's identical
    // value. Measured here: PSNR 35.0-37.0 dB, MSE 13-21, SSIM 0.960-0.972, MS-SSIM 0.992,
    // SSIMULACRA2 51.4, Butteraugli 10.2 (3-norm 3.5), VMAF 88.6, its features 0.70-0.98
    // and motion2 1.1.
    for field in &expected {
        let v = table_mean(&out, field);
        let f = field.as_str();
        let range = match f {
            "ssimulacra2" => 10.0..90.0,
            "butteraugli" => 1.0..50.0,
            "butteraugli-3norm" => 0.1..table_mean(&out, "butteraugli"),
            "vmaf" | "vmaf-neg" => 50.0..100.0,
            // SI/TI of each input (no reference); TI's mean includes the first frame's 0.
            "si" | "ref-si" => 1.0..300.0,
            "ti" | "ref-ti" => 0.01..100.0,
            // No black pixels in this content; the frames move (freeze-diff is absent on the
            // first frame), are sharp-edged (blur in pixels) and mildly blocky.
            "black" | "ref-black" => 0.0..0.5,
            "freeze-diff" | "ref-freeze-diff" => 0.001..0.5,
            "blur" | "ref-blur" => 1.0..30.0,
            // Banding: testsrc2's flat areas and ramps, at most a little.
            "cambi" | "ref-cambi" => 0.0..30.0,
            // blockdetect's ratio, accumulated over the clip: about 10 for the source, about
            // 40 for the 80 kbit/s encode.
            "blockiness" | "ref-blockiness" => 1.0..200.0,
            "vmaf-motion2" => 0.1..20.0,
            "ssim" | "ms-ssim" => 0.5..1.0,
            _ if f.starts_with("psnr-") => 25.0..50.0,
            _ if f.starts_with("mse-") => 1.0..100.0,
            _ if f.starts_with("ssim-") => 0.5..1.0,
            _ if f.starts_with("vmaf-") => 0.5..1.0,
            // Any other metric's field (a metric added later needs no line here): a finite
            // mean, as every field of a real encode has.
            _ => f64::MIN..f64::MAX,
        };
        assert!(range.contains(&v), "{f}: {v} not in {range:?}\n{out}");
    }
    assert_eq!(
        table_mean(&out, "ssim"),
        table_mean(&out, "ssim-y"),
        "{out}"
    );
    // The encode is blurrier and blockier than its source (measured: blur 5.33 vs 4.32,
    // blockiness 39.6 vs 10.3).
    assert!(
        table_mean(&out, "blur") > table_mean(&out, "ref-blur"),
        "{out}"
    );
    assert!(
        table_mean(&out, "blockiness") > 2.0 * table_mean(&out, "ref-blockiness"),
        "{out}"
    );
}

/// `--metrics aom-ctc`: the AOM CTC set in one run, its table in the CTC's order with the
/// aggregate APSNR as rows.
#[test]
fn aom_ctc_set() {
    let c = clips();
    let (out, _) = run_ok(&[
        &c.get("ref.mp4"),
        &c.get("dist.mp4"),
        "--metrics",
        "aom-ctc",
        "--frames",
        "4",
    ]);
    assert_eq!(
        table_fields(&out),
        [
            "aom-psnr-y",
            "aom-psnr-u",
            "aom-psnr-v",
            "aom-ssim-db",
            "aom-ms-ssim-db",
            "vmaf",
            "vmaf-neg",
            "psnr-hvs",
            "ciede2000",
            "aom-apsnr-y",
            "aom-apsnr-u",
            "aom-apsnr-v",
            "cambi",
            "psnr-hvs-y",
            "psnr-hvs-u",
            "psnr-hvs-v",
            // The CTC's CAMBI is the distorted video's alone: no ref-cambi.
        ],
        "{out}"
    );
    // A real encode: PSNRs and their aggregates of 25 to 50 dB, SSIM of 10 to 30 dB, VMAF
    // NEG at most VMAF.
    for f in ["aom-psnr-y", "aom-apsnr-y", "psnr-hvs", "aom-apsnr-v"] {
        let v = table_mean(&out, f);
        assert!((25.0..50.0).contains(&v), "{f}: {v}\n{out}");
    }
    for f in ["aom-ssim-db", "aom-ms-ssim-db"] {
        assert!((10.0..35.0).contains(&table_mean(&out, f)), "{f}\n{out}");
    }
    assert!(
        table_mean(&out, "vmaf-neg") <= table_mean(&out, "vmaf"),
        "{out}"
    );
    assert!(!out.contains("pooled (PSNR"), "shown as rows: {out}");
}

#[test]
fn jsonl_on_stdout() {
    let c = clips();
    let (out, err) = run_ok(&[&c.get("ref.mp4"), &c.get("dist.mp4"), "--format", "jsonl"]);
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), FRAMES + 2, "{out}");
    assert_eq!(lines[0]["type"], "header");
    assert_eq!(lines[1]["type"], "frame");
    assert_eq!(lines[2]["pts"], 33_333_333);
    assert!(lines[1]["psnr-y"].as_f64().unwrap() > 20.0);
    let summary = &lines[FRAMES + 1];
    assert_eq!(summary["type"], "summary");
    assert_eq!(summary["frames"], FRAMES as u64);
    assert!(summary["fields"]["psnr-y"]["mean"].as_f64().is_some());
    // The human table went to stderr.
    assert!(err.contains("compared pairs: 45"), "{err}");
}

#[test]
fn csv_and_json_to_files() {
    let c = clips();
    let dir = tempfile::tempdir().unwrap();
    let csv_path = dir.path().join("s.csv");
    let (out, _) = run_ok(&[
        &c.get("ref.mp4"),
        &c.get("dist.mp4"),
        "-f",
        "csv",
        "-o",
        csv_path.to_str().unwrap(),
    ]);
    // With -o, stdout gets the table.
    assert!(out.contains("compared pairs: 45"), "{out}");
    let mut r = csv::Reader::from_path(&csv_path).unwrap();
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(header[..3], ["frame", "pts", "running-time"]);
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), FRAMES);

    let json_path = dir.path().join("s.json");
    run_ok(&[
        &c.get("ref.mp4"),
        &c.get("dist.mp4"),
        "-f",
        "json",
        "-o",
        json_path.to_str().unwrap(),
        "--frames",
        "7",
    ]);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    assert_eq!(v["frames"].as_array().unwrap().len(), 7);
    assert_eq!(v["summary"]["frames"], 7);

    let table_path = dir.path().join("s.txt");
    run_ok(&[
        &c.get("ref.mp4"),
        &c.get("dist.mp4"),
        "-o",
        table_path.to_str().unwrap(),
        "--frames",
        "3",
    ]);
    let t = std::fs::read_to_string(&table_path).unwrap();
    assert!(
        t.contains("| 0.067 s |"),
        "per-frame rows with seconds:\n{t}"
    );
    assert!(t.contains("compared pairs: 3"), "{t}");
}

fn found_offset(err: &str) -> i64 {
    let at = err
        .find("align: offset ")
        .unwrap_or_else(|| panic!("{err}"))
        + 14;
    err[at..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn align_auto_finds_late_start() {
    let c = clips();
    let (out, err) = run_ok(&[
        &c.get("ref_from3.mp4"),
        &c.get("dist_long.mp4"),
        "--align",
        "auto",
    ]);
    assert_eq!(found_offset(&err), 3, "{err}");
    assert!(err.contains("margin"), "{err}");
    assert!(out.contains("first 3 distorted frames dropped"), "{out}");
    assert_eq!(
        number_after(&out, "compared pairs:"),
        FRAMES as u64 + 2,
        "{out}"
    );
    // Aligned, the scores are those of the encode; misaligned they are much lower.
    let aligned = table_mean(&out, "psnr-y");
    let (plain, _) = run_ok(&[&c.get("ref_from3.mp4"), &c.get("dist_long.mp4")]);
    assert!(
        aligned > table_mean(&plain, "psnr-y") + 3.0,
        "{out}\n{plain}"
    );
}

#[test]
fn align_auto_finds_early_start() {
    let c = clips();
    let (out, err) = run_ok(&[
        &c.get("long.mp4"),
        &c.get("dist_from5.mp4"),
        "--align",
        "auto",
    ]);
    assert_eq!(found_offset(&err), -5, "{err}");
    assert!(out.contains("first 5 reference frames dropped"), "{out}");
    assert_eq!(
        number_after(&out, "compared pairs:"),
        FRAMES as u64,
        "{out}"
    );
}

#[test]
fn manual_offset() {
    let c = clips();
    let (out, _) = run_ok(&[&c.get("long.mp4"), &c.get("dist_from5.mp4"), "--offset=-5"]);
    assert!(table_mean(&out, "psnr-y") > 25.0, "{out}");
    assert!(out.contains("first 5 reference frames dropped"), "{out}");
}

#[test]
fn differing_sizes_need_scale() {
    let c = clips();
    gpumetrics(&[&c.get("ref.mp4"), &c.get("dist_small.mp4")])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("--scale").and(predicate::str::contains("160x90")));
    let (out, err) = run_ok(&[&c.get("ref.mp4"), &c.get("dist_small.mp4"), "--scale"]);
    assert!(err.contains("videoscale method=lanczos"), "{err}");
    assert_eq!(
        number_after(&out, "compared pairs:"),
        FRAMES as u64,
        "{out}"
    );
    assert!(table_mean(&out, "psnr-y") > 20.0, "{out}");
}

#[test]
fn differing_formats_are_converted() {
    let c = clips();
    let (out, err) = run_ok(&[&c.get("ref.mp4"), &c.get("dist_444.mp4")]);
    assert!(
        err.contains("formats differ (reference I420, distorted Y444): converting the distorted video to I420"),
        "{err}"
    );
    assert_eq!(
        number_after(&out, "compared pairs:"),
        FRAMES as u64,
        "{out}"
    );
    assert!(table_mean(&out, "psnr-y") > 25.0, "{out}");
}

#[test]
fn differing_lengths_are_unmatched() {
    let c = clips();
    let (out, _) = run_ok(&[&c.get("ref.mp4"), &c.get("dist_short.mp4")]);
    assert_eq!(number_after(&out, "compared pairs:"), 30, "{out}");
    assert_eq!(number_after(&out, "unmatched:"), 15, "{out}");
}

#[test]
fn differing_frame_rates_pair_by_timestamp() {
    let c = clips();
    let (out, err) = run_ok(&[&c.get("ref.mp4"), &c.get("dist_15fps.mp4")]);
    assert!(err.contains("frame rates differ"), "{err}");
    let compared = number_after(&out, "compared pairs:");
    let unmatched_ref = number_after(&out, "unmatched:");
    assert!((21..=23).contains(&compared), "{out}");
    assert_eq!(compared + unmatched_ref, FRAMES as u64, "{out}");
    // Paired by time, the pairs show the same picture: a real score, not a mismatch.
    assert!(table_mean(&out, "psnr-y") > 25.0, "{out}");
}

#[test]
fn every_and_frames() {
    let c = clips();
    let (out, _) = run_ok(&[
        &c.get("ref.mp4"),
        &c.get("dist.mp4"),
        "--every",
        "3",
        "--frames",
        "5",
    ]);
    assert_eq!(number_after(&out, "compared pairs:"), 5, "{out}");
    assert_eq!(number_after(&out, "skipped (--every):"), 8, "{out}");
    assert!(out.contains("unmatched: 0 reference, 0 distorted"), "{out}");
}

#[test]
fn fail_below() {
    let c = clips();
    let (r, d) = (c.get("ref.mp4"), c.get("dist.mp4"));
    gpumetrics(&[&r, &d, "--frames", "5", "--fail-below", "psnr-y=99"])
        .assert()
        .code(3)
        .stderr(predicate::str::contains("fail: psnr-y mean"));
    gpumetrics(&[
        &r,
        &d,
        "--frames",
        "5",
        "--fail-below",
        "psnr-y=10",
        "--fail-below",
        "psnr-avg=10",
    ])
    .assert()
    .code(0)
    .stderr(predicate::str::contains("pass: psnr-y"));
    gpumetrics(&[&r, &d, "--frames", "5", "--fail-below", "ssim=0.1"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no field `ssim`"));
    gpumetrics(&[&r, &d, "--fail-below", "psnr-y"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("FIELD=VALUE"));
    gpumetrics(&[&r, &d, "--device", "gpu1"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "is not a CUDA device: give its index (0, 1, ...) or auto",
        ));
}

#[test]
fn plots() {
    let c = clips();
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("p.png");
    let svg = dir.path().join("p.svg");
    for p in [&png, &svg] {
        run_ok(&[
            &c.get("ref.mp4"),
            &c.get("dist.mp4"),
            "--metrics",
            "psnr,ssim",
            "--frames",
            "10",
            "--plot",
            p.to_str().unwrap(),
        ]);
    }
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.contains("<svg") && text.contains("psnr-y") && text.contains("frame"));
    gpumetrics(&[&c.get("ref.mp4"), &c.get("dist.mp4"), "--plot", "x.gif"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(".png or .svg"));
}

#[test]
fn bad_input() {
    let c = clips();
    let missing = Path::new(&c.path).join("missing.mp4");
    gpumetrics(&[&c.get("ref.mp4"), missing.to_str().unwrap()])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("cannot read the distorted file"));
    gpumetrics(&[&c.get("notvideo.mp4"), &c.get("ref.mp4")])
        .assert()
        .code(1)
        .stderr(predicate::str::contains(
            "cannot decode the reference input",
        ));
    gpumetrics(&[&c.get("ref.mp4"), &c.get("dist.mp4"), "--metrics", "lpips"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown metric `lpips`"));
    // No input at all is clap's usage error (one input is measured alone: tests/single.rs).
    Command::cargo_bin("gpumetrics").unwrap().assert().code(2);
}

/// Polls `child` until it exits or `limit` passes; kills it and fails on a hang.
fn wait_with_limit(child: &mut std::process::Child, limit: Duration, what: &str) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {limit:?}, killed");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn ctrl_c_prints_the_summary_of_what_was_measured() {
    let c = clips();
    let long = c.get("long600.mp4");
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("gpumetrics"))
        .args(["--backend", "cpu", "--metrics", "all", &long, &long])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Stderr line by line: without a terminal, progress is a plain `progress: K/600 pairs,
    // ...` line every 5 s, printed from the run loop, so Ctrl-C's handler is in place and
    // pairs are being measured when it appears.
    let (lines_tx, lines) = mpsc::channel();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut stdout = child.stdout.take().unwrap();
    let stdout = std::thread::spawn(move || {
        let mut text = String::new();
        stdout.read_to_string(&mut text).map(|_| text)
    });
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    let progress = loop {
        match lines.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) if line.starts_with("progress: ") => break line,
            Ok(line) => seen.push(line),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "no progress line ({e}: the run ended first, or hangs); stderr:\n{}",
                    seen.join("\n")
                );
            }
        }
    };
    // `progress: K/600 pairs, ...`: K pairs were measured before the signal.
    let before = number_after(&progress, "progress:");
    assert!(progress.contains("/600 pairs"), "{progress}");
    let kill = StdCommand::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    // The pairs in flight drain within the command's 10 s grace, then it stops hard.
    let status = wait_with_limit(&mut child, Duration::from_secs(60), "after Ctrl-C");
    seen.push(progress.clone());
    seen.extend(lines.iter()); // to EOF: the child has exited
    let se = seen.join("\n");
    let so = stdout.join().unwrap().unwrap();
    assert_eq!(status.code(), Some(130), "{so}\n{se}");
    assert!(
        se.contains("interrupted: finishing the pairs in flight"),
        "{se}"
    );
    // The summary covers what was measured up to the signal, and only that.
    let compared = number_after(&so, "compared pairs:");
    assert_eq!(
        number_after(&se, "interrupted after"),
        compared,
        "{so}\n{se}"
    );
    assert!(
        (before..600).contains(&compared),
        "{before} pairs at the progress line, {compared} in the summary\n{so}"
    );
    // The same file on both sides: the pairs measured are whole and paired right.
    assert_eq!(table_mean(&so, "psnr-y"), f64::INFINITY, "{so}");
    assert_eq!(table_mean(&so, "ssimulacra2"), 100.0, "{so}");
}

#[test]
fn help_lists_every_option() {
    let out = Command::cargo_bin("gpumetrics")
        .unwrap()
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    for opt in [
        "--metrics",
        "--backend",
        "--device",
        "--decode",
        "--format",
        "--output",
        "--plot",
        "--offset",
        "--align",
        "--align-range",
        "--scale",
        "--every",
        "--frames",
        "--pairing",
        "--fail-below",
        "--window",
        "--alert",
        "--subsample",
        "--roi",
        "--prometheus",
        "udp://",
        "--quiet",
        "--verbose",
        "Exit status",
    ] {
        assert!(help.contains(opt), "--help lacks {opt}:\n{help}");
    }
    // The metrics' options come from the registry, each with its default and, for a choice,
    // its values.
    let options: Vec<_> = metric::options().collect();
    assert!(options.len() >= 5, "{options:?}");
    for spec in options {
        let flag = format!("--{}", spec.name);
        let at = help
            .find(&format!("{flag} "))
            .or_else(|| help.find(&format!("{flag}[")))
            .unwrap_or_else(|| panic!("--help lacks {flag}:\n{help}"));
        let entry = &help[at..];
        let entry = &entry[..entry[2..].find("\n      --").map_or(entry.len(), |e| e + 2)];
        let default = format!("[default: {}]", spec.format(&spec.default_value()));
        assert!(entry.contains(&default), "{flag} lacks {default}:\n{entry}");
        let first_words: String = spec
            .doc
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            entry.contains(&first_words),
            "{flag} lacks its doc:\n{entry}"
        );
        if let metric::OptionKind::Choice { values, .. } = spec.kind {
            for v in values {
                assert!(entry.contains(v.nick), "{flag} lacks {}:\n{entry}", v.nick);
            }
        }
    }
    for flag in [
        "--vmaf-model",
        "--vmaf-features",
        "--ssim-chroma",
        "--chroma-upsampling",
        "--butteraugli-intensity",
    ] {
        assert!(help.contains(flag), "--help lacks {flag}:\n{help}");
    }
    // The description lists the registry's metrics.
    for info in metric::all() {
        let line = help
            .lines()
            .find(|l| l.split_whitespace().next() == Some(info.name))
            .unwrap_or_else(|| panic!("--help does not describe {}:\n{help}", info.name));
        let first_word = info.description.split_whitespace().next().unwrap();
        assert!(line.contains(first_word), "{line}");
    }
}

/// A command whose inputs do not exist: a usage error must come before they are read.
fn before_decoding(args: &[&str]) -> assert_cmd::assert::Assert {
    gpumetrics(&[&["/nonexistent/ref.mp4", "/nonexistent/dist.mp4"][..], args].concat())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot read").not())
}

#[test]
fn invalid_metric_options_are_usage_errors() {
    before_decoding(&["--butteraugli-intensity", "0"]).stderr(
        predicate::str::contains("--butteraugli-intensity").and(predicate::str::contains(
            "butteraugli-intensity: 0 is outside 1 to 10000",
        )),
    );
    before_decoding(&["--butteraugli-intensity", "bright"]).stderr(predicate::str::contains(
        "butteraugli-intensity: `bright` is not a number",
    ));
    before_decoding(&["--chroma-upsampling", "foo"]).stderr(
        predicate::str::contains("--chroma-upsampling")
            .and(predicate::str::contains("catmull-rom, nearest")),
    );
    before_decoding(&["--ssim-chroma=maybe"]).stderr(predicate::str::contains(
        "ssim-chroma: `maybe` is not true or false",
    ));
    // What only the metric can judge is judged before decoding too, for a requested metric.
    before_decoding(&["--metrics", "vmaf", "--vmaf-model", "/nonexistent.json"]).stderr(
        predicate::str::contains("--vmaf-model: ")
            .and(predicate::str::contains("/nonexistent.json")),
    );
}

#[test]
fn metric_options_reach_the_element() {
    let c = clips();
    let (r, d) = (c.get("ref.mp4"), c.get("dist.mp4"));
    let base = [&r[..], &d, "--metrics", "ssim", "--frames", "3"];
    let (out, _) = run_ok(&base);
    // `ssim-y` is `ssim` without the chroma planes: one row.
    assert_eq!(table_fields(&out), ["ssim"], "{out}");
    // A bool alone is true; in front of REF it does not take REF as its value.
    let (out, _) = run_ok(&[&["--ssim-chroma"][..], &base].concat());
    assert_eq!(
        table_fields(&out),
        ["ssim-y", "ssim-u", "ssim-v", "ssim", "ssim-all"],
        "{out}"
    );
    assert!(table_mean(&out, "ssim-u") > 0.5, "{out}");
    assert!(table_mean(&out, "ssim-all") > 0.5, "{out}");
    let (out, _) = run_ok(&[&base[..], &["--ssim-chroma=false"]].concat());
    assert_eq!(table_fields(&out), ["ssim"], "{out}");

    // A higher intensity target makes the same differences more visible: a higher score.
    // Measured: 10.862 at the default 80 nits, 13.287 at 203 (2.4 higher).
    let base = [&r[..], &d, "--metrics", "butteraugli", "--frames", "2"];
    let (default, _) = run_ok(&base);
    let (bright, _) = run_ok(&[&base[..], &["--butteraugli-intensity", "203"]].concat());
    let (a, b) = (
        table_mean(&default, "butteraugli"),
        table_mean(&bright, "butteraugli"),
    );
    assert!(
        a.is_finite() && b.is_finite() && b - a > 1.0,
        "{default}\n{bright}"
    );
    let (nearest, _) = run_ok(&[&base[..], &["--chroma-upsampling", "nearest"]].concat());
    assert!(table_mean(&nearest, "butteraugli").is_finite(), "{nearest}");
}

#[test]
fn fail_below_fields_are_checked_before_decoding() {
    before_decoding(&["--fail-below", "nosuch=3"]).stderr(
        predicate::str::contains("no field `nosuch`")
            .and(predicate::str::contains("psnr-y"))
            .and(predicate::str::contains("ms-ssim")),
    );
    for lower in ["mse-y=30", "butteraugli=2"] {
        before_decoding(&["--metrics", "psnr,butteraugli", "--fail-below", lower])
            .stderr(predicate::str::contains("lower-is-better"));
    }
    before_decoding(&["--fail-below", "ssim=0.9"]).stderr(predicate::str::contains(
        "no field `ssim` with --metrics psnr",
    ));
}

#[test]
fn table_uses_each_fields_decimals() {
    let c = clips();
    let (out, _) = run_ok(&[
        &c.get("ref.mp4"),
        &c.get("dist.mp4"),
        "--metrics",
        "psnr,ssim",
        "--frames",
        "3",
    ]);
    let mut checked = Vec::new();
    for line in out.lines() {
        let cells: Vec<&str> = line
            .split(['│', '┆'])
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        let Some(field) = cells.first().and_then(|n| metric::field(n)) else {
            continue;
        };
        assert_eq!(cells.len(), 8, "{line}");
        for (i, cell) in cells[1..].iter().enumerate() {
            if i == 1 && !field.harmonic_mean {
                assert_eq!(*cell, "-", "{} has no harmonic mean:\n{out}", field.name);
                continue;
            }
            let decimals = cell.split_once('.').map_or(0, |(_, d)| d.len());
            assert_eq!(
                decimals, field.decimals as usize,
                "{}: {cell}\n{out}",
                field.name
            );
        }
        checked.push(field.decimals);
    }
    checked.dedup();
    // psnr (3 decimals), mse, ssim (5): more than one precision, all from the registry.
    assert!(checked.len() > 1, "{checked:?}\n{out}");
}

/// The window lines of `text`: (start, end, pairs, the rest of the line).
fn window_lines(text: &str) -> Vec<(String, String, u64, String)> {
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("window ")?;
            let (span, rest) = rest.split_once(": ")?;
            let (start, end) = span.split_once('–')?;
            let (pairs, rest) = rest.split_once(" pair")?;
            let pairs: u64 = pairs.parse().ok()?;
            let rest = if pairs == 1 {
                rest
            } else {
                rest.strip_prefix('s')?
            };
            Some((start.to_string(), end.to_string(), pairs, rest.to_string()))
        })
        .collect()
}

/// The lines of `text` that start with `prefix`.
fn lines_with<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.starts_with(prefix)).collect()
}

#[test]
fn windows_and_alerts_on_files() {
    let c = clips();
    let (out, err) = run_ok(&[
        &c.get("ref.mp4"),
        &c.get("dist_blur_middle.mp4"),
        "--window",
        "500ms",
        "--alert",
        "psnr-y<30",
        "--alert",
        "psnr-y<30:100ms",
    ]);
    // 45 frames at 30 fps: three windows of 15 pairs; the middle one is the blurred part.
    let windows = window_lines(&out);
    let spans: Vec<(&str, &str, u64)> = windows
        .iter()
        .map(|(s, e, n, _)| (s.as_str(), e.as_str(), *n))
        .collect();
    assert_eq!(
        spans,
        [
            ("00:00:00.000", "00:00:00.500", 15),
            ("00:00:00.500", "00:00:01.000", 15),
            ("00:00:01.000", "00:00:01.500", 15),
        ],
        "{out}"
    );
    assert_eq!(windows[0].3, ", psnr-y inf", "{out}");
    let middle = &windows[1].3;
    let psnr: f64 = middle
        .strip_prefix(", psnr-y ")
        .and_then(|r| r.split(';').next())
        .unwrap_or_else(|| panic!("{middle}"))
        .parse()
        .unwrap();
    assert!((15.0..30.0).contains(&psnr), "{out}");
    // Without a hold the rule is raised for exactly the middle window; with 100 ms it is
    // raised 3 frames later and cleared 3 frames into the last window.
    assert!(
        middle.ends_with("; in alert psnr-y<30: 0.500 s; in alert psnr-y<30:100ms: 0.400 s"),
        "{out}"
    );
    assert_eq!(
        windows[2].3, ", psnr-y inf; in alert psnr-y<30:100ms: 0.100 s",
        "{out}"
    );
    // The changes as they happened, in order, on stderr; the element's warning for a raised
    // alert is not printed besides.
    let changes: Vec<String> = lines_with(&err, "ALERT ")
        .iter()
        .map(|l| {
            // The value and worst depend on the blur; the rest is exact.
            l.split(' ')
                .map(|w| {
                    if w.trim_end_matches([',', ')'])
                        .parse::<f64>()
                        .is_ok_and(f64::is_finite)
                    {
                        "V"
                    } else {
                        w
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    assert_eq!(
        changes,
        [
            "ALERT raised psnr-y<30: psnr-y = V at 00:00:00.500",
            "ALERT raised psnr-y<30:100ms: psnr-y = V at 00:00:00.600",
            "ALERT cleared psnr-y<30: psnr-y = inf at 00:00:01.000 (since 00:00:00.500, worst V",
            "ALERT cleared psnr-y<30:100ms: psnr-y = inf at 00:00:01.100 (since 00:00:00.600, \
             worst V",
        ],
        "{err}"
    );
    assert!(!err.contains("warning: alert raised"), "{err}");
    assert!(
        out.ends_with(
            "alert psnr-y<30: 1 episode, 0.500 s in alert\n\
             alert psnr-y<30:100ms: 1 episode, 0.500 s in alert\n"
        ),
        "{out}"
    );

    // The machine formats get the windows as records, between the frames they close.
    let (out, err) = run_ok(&[
        &c.get("ref.mp4"),
        &c.get("dist_blur_middle.mp4"),
        "--window",
        "500ms",
        "--format",
        "jsonl",
    ]);
    let records: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = records
        .iter()
        .map(|r| r["type"].as_str().unwrap())
        .collect();
    let expected: Vec<&str> = [
        vec!["header"],
        vec!["frame"; 15],
        vec!["window"],
        vec!["frame"; 15],
        vec!["window"],
        vec!["frame"; 15],
        vec!["window", "summary"],
    ]
    .concat();
    assert_eq!(kinds, expected, "{out}");
    let w = &records[32];
    assert_eq!(
        (&w["start"], &w["end"], &w["frames"]),
        (&500_000_000.into(), &1_000_000_000.into(), &15.into())
    );
    // The window lines go with the table, to stderr.
    assert_eq!(window_lines(&err).len(), 3, "{err}");
}

#[test]
fn subsample_counts_the_skipped_pairs() {
    let c = clips();
    let (out, _) = run_ok(&[
        &c.get("ref.mp4"),
        &c.get("dist.mp4"),
        "--subsample",
        "3",
        "--window",
        "500ms",
    ]);
    // Pairs 0, 3, 6, ... scored: 15 of 45, the other 30 skipped; 5 and 10 per window.
    assert_eq!(number_after(&out, "compared pairs:"), 15, "{out}");
    assert_eq!(number_after(&out, "skipped (--subsample):"), 30, "{out}");
    assert!(!out.contains("skipped (--every)"), "{out}");
    let windows = window_lines(&out);
    assert_eq!(windows.len(), 3, "{out}");
    for (_, _, pairs, rest) in &windows {
        assert_eq!(*pairs, 5, "{out}");
        assert!(rest.ends_with(", 10 skipped"), "{out}");
    }
}

#[test]
fn bad_monitoring_options_are_usage_errors() {
    before_decoding(&["--alert", "vmaf<70"]).stderr(predicate::str::contains(
        "--alert: rule 'vmaf<70' names the field 'vmaf', which no enabled metric produces",
    ));
    before_decoding(&["--alert", "psnr-y=30"]).stderr(predicate::str::contains("no '<' or '>'"));
    before_decoding(&["--alert", "psnr-y<30:2"])
        .stderr(predicate::str::contains("the hold time '2' needs a unit"));
    before_decoding(&["--alert", "psnr-y<30", "--alert", "psnr-y<30"])
        .stderr(predicate::str::contains("given twice"));
    before_decoding(&["--roi", "1,2,3"]).stderr(predicate::str::contains("x,y,width,height"));
    before_decoding(&["--roi", "0,0,0,10"]).stderr(predicate::str::contains(
        "width and height must be at least 1",
    ));
    before_decoding(&["--window", "5"]).stderr(predicate::str::contains("needs a unit"));
    before_decoding(&["--window", "0s"]).stderr(predicate::str::contains("--window"));
    before_decoding(&["--subsample", "0"]).stderr(predicate::str::contains("--subsample"));
    before_decoding(&["--prometheus", "9100"]).stderr(predicate::str::contains("HOST:PORT"));
    // A rectangle past the reference is known once the inputs are: a usage error too.
    let c = clips();
    gpumetrics(&[
        &c.get("ref.mp4"),
        &c.get("dist.mp4"),
        "--roi",
        "300,0,100,100",
    ])
    .assert()
    .code(2)
    .stderr(predicate::str::contains(
        "--roi: 300,0,100,100 reaches past the reference's 320x180 frame",
    ));
    let (out, _) = run_ok(&[
        &c.get("ref.mp4"),
        &c.get("dist.mp4"),
        "--roi",
        "0,0,320,180",
    ]);
    assert_eq!(
        number_after(&out, "compared pairs:"),
        FRAMES as u64,
        "{out}"
    );
}

/// A gst-launch-1.0 sending one live test picture as two MPEG-TS streams over UDP: the
/// reference at 2 Mbit/s to `ports[0]`, the distorted at 100 kbit/s to `ports[1]`.
fn two_streams(ports: [u16; 2]) -> Sender {
    let stream = |bitrate: u32, port: u16| {
        format!(
            "t. ! queue ! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=15 \
             bitrate={bitrate} ! mpegtsmux ! udpsink host=127.0.0.1 port={port}"
        )
    };
    Sender::launch(
        &format!(
            "videotestsrc is-live=true ! video/x-raw,format=I420,width=320,height=180,\
         framerate=30/1 ! tee name=t {} {}",
            stream(2000, ports[0]),
            stream(100, ports[1])
        ),
        true,
    )
}

/// `--align auto` on two live streams: the distorted copy 1.3 s late (a delaying relay)
/// through a lower-bitrate encoder. The command prints the offset it locks on (within a
/// frame), the records carry `align` records, and Ctrl-C prints the table.
#[test]
fn live_align_auto_finds_the_delay_and_measures() {
    let (reference, distorted) = (free_udp_port(), free_udp_port());
    let relay = common::Relay::start(distorted, Duration::from_secs_f64(common::ALIGN_DELAY));
    let mut sender = common::twice(reference, relay.port);
    running(&mut sender);
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("records.jsonl");
    let (mut child, stdout, stderr) = live_command(
        [reference, distorted],
        &[
            "--align",
            "auto",
            "--metrics",
            "psnr,ssim",
            "--format",
            "jsonl",
            "-o",
            records.to_str().unwrap(),
        ],
    );
    let mut err = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut locked_at = None;
    while locked_at.is_none_or(|t: Instant| t.elapsed() < Duration::from_secs(3)) {
        match stderr.recv_timeout(Duration::from_millis(200)) {
            Ok(line) => {
                if line.starts_with("ALIGN locked") && locked_at.is_none() {
                    locked_at = Some(Instant::now());
                }
                err.push(line);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(e) => panic!("the command ended ({e}): {}", err.join("\n")),
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("no lock: {}", err.join("\n"));
        }
    }
    let kill = StdCommand::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = wait_with_limit(&mut child, Duration::from_secs(60), "after Ctrl-C");
    drop(sender);
    err.extend(stderr.iter());
    let se = err.join("\n");
    let so = stdout.iter().collect::<Vec<_>>().join("\n");
    assert_eq!(status.code(), Some(130), "{so}\n{se}");
    assert!(se.contains("live: --align auto finds the offset"), "{se}");
    let lock = lines_with(&se, "ALIGN locked: offset +")[0];
    let offset: f64 = lock["ALIGN locked: offset +".len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (offset - common::ALIGN_DELAY).abs() <= common::ALIGN_SLACK,
        "{lock}"
    );
    // The table: the summary of the pairs measured.
    assert!(so.contains("psnr-y") && so.contains("ssim"), "{so}");
    let lines: Vec<Value> = std::fs::read_to_string(&records)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let align: Vec<&Value> = lines.iter().filter(|v| v["type"] == "align").collect();
    assert!(
        align.iter().any(|a| a["state"] == "locked"
            && (a["offset"].as_f64().unwrap() / 1e9 - common::ALIGN_DELAY).abs()
                <= common::ALIGN_SLACK),
        "{align:?}"
    );
    let frames = lines.iter().filter(|v| v["type"] == "frame").count();
    assert!(frames > 25, "{frames} pairs measured");
    let summary = lines.iter().find(|v| v["type"] == "summary").unwrap();
    assert!(summary["unaligned"].as_u64().unwrap() > 0, "{summary}");
}

/// Waits until the sender is running (before the command opens its streams), or fails with
/// its report when it ended at once.
fn running(sender: &mut Sender) {
    std::thread::sleep(Duration::from_millis(500));
    if let Some(status) = sender.0.try_wait().unwrap() {
        let mut e = String::new();
        let _ = sender.0.stderr.take().unwrap().read_to_string(&mut e);
        panic!("the sender ended at once ({status}): {e}");
    }
}

/// The command on the live streams of `ports` (reference, distorted) with `args`: the
/// child and its stdout and stderr, line by line.
fn live_command(
    ports: [u16; 2],
    args: &[&str],
) -> (
    std::process::Child,
    mpsc::Receiver<String>,
    mpsc::Receiver<String>,
) {
    let uri = |p: u16| format!("udp://127.0.0.1:{p}");
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("gpumetrics"))
        .args(["--backend", "cpu", &uri(ports[0]), &uri(ports[1])])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = line_channel(child.stdout.take().unwrap());
    let stderr = line_channel(child.stderr.take().unwrap());
    (child, stdout, stderr)
}

/// Reads `reader` line by line into a channel (ends when the stream does).
fn line_channel(reader: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(reader).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

#[test]
fn live_udp_inputs_run_until_ctrl_c_with_windows_and_alerts() {
    let ports = [free_udp_port(), free_udp_port()];
    let mut sender = two_streams(ports);
    running(&mut sender);
    let (mut child, stdout, stderr) =
        live_command(ports, &["--window", "500ms", "--alert", "psnr-y<45:200ms"]);
    // SIGINT after the first window with pairs in alert: the run is live and measuring, and
    // the rule has been raised.
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        match stdout.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => {
                let first = window_lines(&line)
                    .first()
                    .is_some_and(|w| w.2 > 0 && w.3.contains("; in alert psnr-y<45:200ms: "));
                out.push(line);
                if first {
                    break;
                }
            }
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                let err: Vec<String> = stderr.try_iter().collect();
                panic!(
                    "no window line ({e}); stdout:\n{}\nstderr:\n{}",
                    out.join("\n"),
                    err.join("\n")
                );
            }
        }
    }
    let kill = StdCommand::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = wait_with_limit(&mut child, Duration::from_secs(60), "after Ctrl-C");
    drop(sender);
    out.extend(stdout.iter());
    let so = out.join("\n") + "\n";
    let se = stderr.iter().collect::<Vec<_>>().join("\n");
    assert_eq!(status.code(), Some(130), "{so}\n{se}");
    assert!(
        se.contains("live: the reference and distorted inputs are live"),
        "{se}"
    );
    assert!(se.contains(", live, video/x-h264)"), "{se}");
    assert!(!se.contains("ETA"), "{se}");
    // A 100 kbit/s encode against a 2 Mbit/s one: below 45 dB from the first pairs (the
    // hold keeps a stray pair from clearing the rule).
    assert_eq!(
        lines_with(&se, "ALERT raised psnr-y<45:200ms: psnr-y = ").len(),
        1,
        "{se}"
    );
    let compared = number_after(&so, "compared pairs:");
    assert!(compared > 0, "{so}");
    assert_eq!(
        number_after(&se, "interrupted after"),
        compared,
        "{so}\n{se}"
    );
    // Every pair falls in one window, the last one closed at the end of the run.
    let windows = window_lines(&so);
    assert!(windows.len() >= 2, "{so}");
    assert_eq!(windows.iter().map(|w| w.2).sum::<u64>(), compared, "{so}");
    for (_, _, pairs, rest) in &windows {
        if *pairs > 0 {
            assert!(rest.starts_with(", psnr-y "), "{so}");
        }
    }
    // Raised once, never cleared: in alert from that window to the end.
    let last = windows.last().unwrap();
    assert!(last.3.contains("; in alert psnr-y<45:200ms: "), "{so}");
    assert!(!se.contains("ALERT cleared"), "{se}");
    assert!(so.contains("alert psnr-y<45:200ms: 1 episode, "), "{so}");
    assert!(table_mean(&so, "psnr-y") < 45.0, "{so}");
}

/// `--metrics cvvdp`: each record's `cvvdp` is the JOD of the run so far, the summary's
/// `pooled` (printed under the table) the whole run's, which is the last record's;
/// `--cvvdp-display` changes the display model (a 4K monitor at the same distance makes the
/// same encode look better: more pixels per degree).
#[test]
fn cvvdp_reports_the_runs_jod() {
    let c = clips();
    let run = |display: &str| {
        let (out, err) = run_ok(&[
            &c.get("ref.mp4"),
            &c.get("dist.mp4"),
            "--metrics",
            "cvvdp",
            "--cvvdp-display",
            display,
            "--frames",
            "6",
            "--format",
            "jsonl",
        ]);
        let lines: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let frames: Vec<f64> = lines
            .iter()
            .filter(|l| l["type"] == "frame")
            .map(|l| l["cvvdp"].as_f64().unwrap())
            .collect();
        let summary = lines.iter().find(|l| l["type"] == "summary").unwrap();
        let pooled = summary["fields"]["cvvdp"]["pooled"].as_f64().unwrap();
        (frames, pooled, err)
    };
    let (frames, pooled, err) = run("standard_fhd");
    assert_eq!(frames.len(), 6);
    for v in &frames {
        assert!((0.0..10.0).contains(v), "an 80 kbit/s encode: {v}");
    }
    assert!((pooled - frames[5]).abs() < 1e-4, "{pooled} {frames:?}");
    assert!(
        err.contains("pooled (JOD of the whole run, as ColorVideoVDP reports it): cvvdp"),
        "{err}"
    );
    let (frames_4k, _, _) = run("standard_4k");
    assert!(frames_4k[5] > frames[5], "{frames_4k:?} {frames:?}");
}

/// Reads a little-endian grayscale PFM: (width, height, rows top to bottom).
fn read_pfm(path: &std::path::Path) -> (usize, usize, Vec<f32>) {
    let bytes = std::fs::read(path).unwrap();
    let mut fields = Vec::new();
    let mut at = 0;
    while fields.len() < 4 {
        let end = at
            + bytes[at..]
                .iter()
                .position(|b| b.is_ascii_whitespace())
                .unwrap();
        fields.push(String::from_utf8(bytes[at..end].to_vec()).unwrap());
        at = end + 1;
    }
    assert_eq!(fields[0], "Pf", "{}", path.display());
    assert_eq!(fields[3], "-1.0", "little-endian");
    let (w, h): (usize, usize) = (fields[1].parse().unwrap(), fields[2].parse().unwrap());
    let floats: Vec<f32> = bytes[at..]
        .chunks(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    assert_eq!(floats.len(), w * h);
    // Stored bottom row first.
    let rows: Vec<f32> = floats.chunks(w).rev().flatten().copied().collect();
    (w, h, rows)
}

/// `--map ssim:DIR`: one PFM per measured pair, named by frame number, the luma SSIM map
/// whose mean away from the 5-pixel border is the pair's `ssim-y`.
#[test]
fn map_files_hold_each_pairs_exact_map() {
    let c = clips();
    let dir = tempfile::tempdir().unwrap();
    let maps = dir.path().join("maps");
    let (out, _) = run_ok(&[
        &c.get("ref.mp4"),
        &c.get("dist.mp4"),
        "--metrics",
        "ssim",
        "--map",
        &format!("ssim:{}", maps.display()),
        "--alert",
        "ssim-area>0.99",
        "--frames",
        "3",
        "--format",
        "jsonl",
    ]);
    let records = common::frame_records(&out);
    assert_eq!(records.len(), 3);
    for r in &records {
        let frame = r["frame"].as_u64().unwrap();
        let (w, h, m) = read_pfm(&maps.join(format!("ssim-{frame:06}.pfm")));
        assert_eq!((w, h), (320, 180));
        assert!(m.iter().all(|v| (-1.0..=1.0).contains(v)));
        let mut sum = 0f64;
        for y in 5..h - 5 {
            for x in 5..w - 5 {
                sum += m[y * w + x] as f64;
            }
        }
        let mean = sum / ((w - 10) * (h - 10)) as f64;
        let ssim = r["ssim-y"].as_f64().unwrap();
        assert!(
            (mean - ssim).abs() < 1e-4,
            "frame {frame}: {mean} vs {ssim}"
        );
    }
    assert_eq!(std::fs::read_dir(&maps).unwrap().count(), 3);
    // One input alone has no map to make.
    let out = gpumetrics(&[&c.get("dist.mp4"), "--map", "ssim:/tmp/x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("give REF and DIST"));
}

/// `--map cvvdp:DIR` with `--metrics cvvdp`: ColorVideoVDP's heat map per measured pair,
/// whose largest value is the record's `cvvdp-peak` at `cvvdp-peak-x/-y`; without the
/// metric, a clear refusal.
#[test]
fn cvvdp_map_files_hold_the_heat_map_of_each_pair() {
    let c = clips();
    let dir = tempfile::tempdir().unwrap();
    let maps = dir.path().join("maps");
    let (out, _) = run_ok(&[
        &c.get("ref.mp4"),
        &c.get("dist.mp4"),
        "--metrics",
        "cvvdp",
        "--map",
        &format!("cvvdp:{}", maps.display()),
        "--frames",
        "3",
        "--format",
        "jsonl",
    ]);
    let records = common::frame_records(&out);
    assert_eq!(records.len(), 3);
    for r in &records {
        let frame = r["frame"].as_u64().unwrap();
        let (w, h, m) = read_pfm(&maps.join(format!("cvvdp-{frame:06}.pfm")));
        assert_eq!((w, h), (320, 180));
        assert!(m.iter().all(|v| v.is_finite() && *v >= 0.0));
        let (at, peak) = m
            .iter()
            .enumerate()
            .fold((0, f32::MIN), |b, (i, &v)| if v > b.1 { (i, v) } else { b });
        let want = r["cvvdp-peak"].as_f64().unwrap();
        assert!(
            (peak as f64 - want).abs() <= 1e-6 * want.abs(),
            "{peak} vs {want}"
        );
        assert_eq!(at % w, r["cvvdp-peak-x"].as_f64().unwrap() as usize);
        assert_eq!(at / w, r["cvvdp-peak-y"].as_f64().unwrap() as usize);
    }
    let out = gpumetrics(&[
        &c.get("ref.mp4"),
        &c.get("dist.mp4"),
        "--map",
        &format!("cvvdp:{}", maps.display()),
    ])
    .output()
    .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("add cvvdp to the metrics"), "{err}");
}

/// `--map-video ssim:FILE.mkv`: the heat-map frames encoded to a file that decodes, one
/// frame per measured pair; with a different `--map` NAME, a usage error.
#[test]
fn map_video_writes_a_heat_map_video() {
    let c = clips();
    let dir = tempfile::tempdir().unwrap();
    let video = dir.path().join("ssim.mkv");
    run_ok(&[
        &c.get("ref.mp4"),
        &c.get("dist.mp4"),
        "--metrics",
        "ssim",
        "--map-video",
        &format!("ssim:{}", video.display()),
        "--frames",
        "6",
    ]);
    let decoded = common::decode_rgb24(&video);
    let frame = 320 * 180 * 3;
    assert!(
        !decoded.is_empty() && decoded.len().is_multiple_of(frame) && decoded.len() / frame >= 6,
        "{} bytes",
        decoded.len()
    );
    let out = gpumetrics(&[
        &c.get("ref.mp4"),
        &c.get("dist.mp4"),
        "--map",
        "squared-error:/tmp/x",
        "--map-video",
        "ssim:/tmp/x.mkv",
    ])
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the same NAME"));
}
