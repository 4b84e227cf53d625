// SPDX-License-Identifier: MPL-2.0
//! One input (`gpumetrics DIST`): measured alone with the no-reference metrics, on clips
//! generated at test time by gst-launch-1.0 (videotestsrc, 64x48, 10 fps, Y4M); the usage
//! errors of a full-reference metric or a reference-only flag with one input; and the
//! `ref-` fields that the no-reference metrics add with two inputs. CPU backend, so no GPU
//! is needed. (The no-reference metric on main is `siti`; the others are taken from the
//! registry.)

use std::process::Command as StdCommand;
use std::sync::OnceLock;

use assert_cmd::Command;
use gpumetrics_engine::metric;
use predicates::prelude::*;
use serde_json::Value;

mod common;
use common::{Clips, gpumetrics};

/// Frames of each clip.
const FRAMES: usize = 12;

/// A Y4M clip of `FRAMES` frames of videotestsrc's `pattern`.
fn clip(path: &str, pattern: &str) {
    let out = StdCommand::new("gst-launch-1.0")
        .args([
            "-q",
            "videotestsrc",
            &format!("num-buffers={FRAMES}"),
            &format!("pattern={pattern}"),
            "!",
            "video/x-raw,format=I420,width=64,height=48,framerate=10/1",
            "!",
            "y4menc",
            "!",
            "filesink",
            &format!("location={path}"),
        ])
        .output()
        .expect("gst-launch-1.0 runs (scripts/setup-deps.sh installs it)");
    assert!(
        out.status.success(),
        "gst-launch-1.0 ({pattern}): {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Generates the clips once per test binary: a moving ball and a snow pattern (different
/// SI/TI).
fn clips() -> &'static Clips {
    static CLIPS: OnceLock<Clips> = OnceLock::new();
    CLIPS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
        clip(&p("ball.y4m"), "ball");
        clip(&p("snow.y4m"), "snow");
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

/// The JSON Lines records on stdout: the header, the frames, then the summary (the
/// header's `inputs` has no reference with one input).
fn jsonl(out: &str) -> (Vec<Value>, Value) {
    let mut lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let header = lines.remove(0);
    assert_eq!(header["type"], "header", "{out}");
    assert!(
        header["inputs"]["distorted"]["width"].as_u64().is_some(),
        "{header}"
    );
    let summary = lines.pop().expect("a summary");
    assert_eq!(summary["type"], "summary", "{out}");
    (lines, summary)
}

/// The score fields of a record (not type, frame, pts, running-time, duration), sorted.
fn score_fields(record: &Value) -> Vec<String> {
    record
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| !["type", "frame", "pts", "running-time", "duration"].contains(&k.as_str()))
        .cloned()
        .collect()
}

/// The fields of the summary's `fields` object, sorted.
fn summary_fields(summary: &Value) -> Vec<String> {
    summary["fields"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

/// The mean of `field` in a JSON summary.
fn mean(summary: &Value, field: &str) -> f64 {
    summary["fields"][field]["mean"]
        .as_f64()
        .unwrap_or_else(|| panic!("no mean of {field} in {summary}"))
}

/// The fields a run of one input with every no-reference metric can produce: theirs,
/// without the reference's `ref-` ones.
fn no_reference_fields() -> Vec<&'static str> {
    metric::all()
        .filter(|m| metric::no_reference().contains(m.flag))
        .flat_map(|m| m.fields.iter().map(|f| f.name))
        .filter(|f| !f.starts_with(metric::REF_PREFIX))
        .collect()
}

#[test]
fn one_input_with_siti_has_only_the_distorted_fields() {
    let c = clips();
    let (out, err) = run_ok(&[&c.get("ball.y4m"), "--metrics", "siti", "-f", "jsonl"]);
    let (frames, summary) = jsonl(&out);
    assert_eq!(frames.len(), FRAMES, "{out}");
    for f in &frames {
        assert_eq!(f["type"], "frame", "{f}");
        assert_eq!(score_fields(f), ["si", "ti"], "{f}");
        assert!(f["si"].as_f64().unwrap() > 0.0, "{f}");
    }
    // TI: 0 on the first frame, then the ball moves.
    assert_eq!(frames[0]["ti"].as_f64(), Some(0.0));
    assert!(frames[3]["ti"].as_f64().unwrap() > 0.0, "{}", frames[3]);
    assert_eq!(summary["frames"], FRAMES as u64);
    assert_eq!(summary_fields(&summary), ["si", "ti"], "{summary}");
    // The table (on stderr, the records being on stdout) counts frames, not pairs.
    assert!(
        err.contains(&format!("measured frames: {FRAMES} (one input")),
        "{err}"
    );
    assert!(!err.contains("unmatched") && !err.contains("ref-"), "{err}");
    assert!(err.contains("reference: none"), "{err}");
    assert!(err.contains("decoding distorted: software"), "{err}");
    assert!(!err.contains("decoding reference"), "{err}");
}

#[test]
fn one_input_uri_with_every_frames_and_csv() {
    let c = clips();
    let uri = format!("file://{}", c.get("ball.y4m"));
    let dir = tempfile::tempdir().unwrap();
    let csv_path = dir.path().join("s.csv");
    let (out, _) = run_ok(&[
        &uri,
        "--metrics",
        "siti",
        "--every",
        "2",
        "--frames",
        "4",
        "-f",
        "csv",
        "-o",
        csv_path.to_str().unwrap(),
    ]);
    assert!(out.contains("measured frames: 4"), "{out}");
    assert!(out.contains("skipped (--every): 3"), "{out}");
    let mut r = csv::Reader::from_path(&csv_path).unwrap();
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(
        header,
        ["frame", "pts", "running-time", "duration", "si", "ti"]
    );
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    // Frames only, numbered as the input's: 0, 2, 4, 6.
    let frames: Vec<&str> = rows.iter().map(|r| &r[0]).collect();
    assert_eq!(frames, ["0", "2", "4", "6"], "{rows:?}");
    let pts: Vec<&str> = rows.iter().map(|r| &r[1]).collect();
    // Every other frame of 10 fps: 0, 0.2, 0.4, 0.6 s.
    assert_eq!(
        pts,
        ["0", "200000000", "400000000", "600000000"],
        "{rows:?}"
    );
}

#[test]
fn one_input_without_metrics_uses_the_no_reference_metrics() {
    let c = clips();
    let (out, err) = run_ok(&[&c.get("snow.y4m"), "-f", "jsonl"]);
    let (frames, summary) = jsonl(&out);
    assert_eq!(frames.len(), FRAMES, "{out}");
    let want = no_reference_fields();
    assert!(want.contains(&"si"), "{want:?}");
    // Every field the run produced is a no-reference one, and SI/TI are there; no PSNR
    // (the default with two inputs).
    let got = summary_fields(&summary);
    assert!(got.iter().all(|f| want.contains(&f.as_str())), "{got:?}");
    assert!(
        got.contains(&"si".into()) && got.contains(&"ti".into()),
        "{got:?}"
    );
    // No PSNR field anywhere (the header's option names, `xpsnr-frame-rate`, are not
    // fields).
    assert!(!out.contains("\"psnr-"), "{out}");
    let names: Vec<&str> = metric::all()
        .filter(|m| metric::no_reference().contains(m.flag))
        .map(|m| m.name)
        .collect();
    assert!(
        err.contains(&format!(
            "metrics: {} (one input, no --metrics: every no-reference metric)",
            names.join(", ")
        )),
        "{err}"
    );
    // `all` with one input: the same metrics.
    let (out, _) = run_ok(&[&c.get("snow.y4m"), "--metrics", "all", "-f", "jsonl"]);
    assert_eq!(summary_fields(&jsonl(&out).1), got);
    // --help says what the default is with one input.
    let help = Command::cargo_bin("gpumetrics")
        .unwrap()
        .arg("--help")
        .output()
        .unwrap();
    // Words as written, whatever the line wrapping of the terminal width.
    let help = String::from_utf8(help.stdout)
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        help.contains("with one input (DIST alone), the no-reference metrics"),
        "{help}"
    );
    assert!(help.contains("gpumetrics [OPTIONS] DIST"), "{help}");
}

/// A command of one input that does not exist: a usage error must come before it is read.
fn refused_before_decoding(args: &[&str]) -> assert_cmd::assert::Assert {
    gpumetrics(&[&["/nonexistent/dist.mp4"][..], args].concat())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot read").not())
}

#[test]
fn one_input_with_a_full_reference_metric_is_a_usage_error() {
    let names: Vec<&str> = metric::all()
        .filter(|m| metric::no_reference().contains(m.flag))
        .map(|m| m.name)
        .collect();
    let lists = format!(
        "only the no-reference metrics can run: {}",
        names.join(", ")
    );
    refused_before_decoding(&["--metrics", "psnr"]).stderr(
        predicate::str::contains("psnr needs a reference input")
            .and(predicate::str::contains(lists.as_str())),
    );
    refused_before_decoding(&["--metrics", "siti,psnr,ssim"]).stderr(predicate::str::contains(
        "psnr, ssim need a reference input",
    ));
    // Fields of the reference, in thresholds and alert rules.
    refused_before_decoding(&["--metrics", "siti", "--fail-below", "ref-si=1"])
        .stderr(predicate::str::contains("--fail-below ref-si"));
    refused_before_decoding(&["--metrics", "siti", "--alert", "ref-ti>100"])
        .stderr(predicate::str::contains("--alert").and(predicate::str::contains("'ref-ti'")));
}

#[test]
fn one_input_refuses_the_reference_only_options() {
    for args in [
        &["--offset", "3"][..],
        &["--offset", "0"],
        &["--align", "auto"],
        &["--align-range", "5"],
        &["--align-frames", "5"],
        &["--scale"],
        &["--pairing", "sequence"],
    ] {
        refused_before_decoding(args).stderr(predicate::str::contains(format!(
            "{} needs a reference input, and there is one input only",
            args[0]
        )));
    }
    refused_before_decoding(&["--scale", "--offset", "1"]).stderr(predicate::str::contains(
        "--offset, --scale need a reference input",
    ));
    // With two inputs the same options are accepted (the run then fails on the missing
    // files, with a run error).
    gpumetrics(&[
        "/nonexistent/ref.mp4",
        "/nonexistent/dist.mp4",
        "--offset",
        "3",
    ])
    .assert()
    .code(1)
    .stderr(predicate::str::contains("cannot read the reference file"));
    // No input: clap's usage error. Three are a reference and two distorted files
    // (tests/several.rs): these are missing.
    gpumetrics(&[]).assert().code(2);
    gpumetrics(&["a.mp4", "b.mp4", "c.mp4"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("cannot read the reference file"));
}

#[test]
fn two_inputs_with_siti_give_the_reference_fields_too() {
    let c = clips();
    let (out, err) = run_ok(&[
        &c.get("snow.y4m"),
        &c.get("ball.y4m"),
        "--metrics",
        "siti",
        "-f",
        "jsonl",
    ]);
    let (frames, summary) = jsonl(&out);
    assert_eq!(frames.len(), FRAMES, "{out}");
    for f in &frames {
        assert_eq!(score_fields(f), ["ref-si", "ref-ti", "si", "ti"], "{f}");
    }
    assert_eq!(
        summary_fields(&summary),
        ["ref-si", "ref-ti", "si", "ti"],
        "{summary}"
    );
    assert!(err.contains(&format!("compared pairs: {FRAMES}")), "{err}");
    // Each input's own SI/TI: the reference's are those of a run of the reference alone,
    // the distorted input's those of a run of it alone, and the two clips differ.
    for (clip, prefix) in [("snow.y4m", "ref-"), ("ball.y4m", "")] {
        let (alone, _) = run_ok(&[&c.get(clip), "--metrics", "siti", "-f", "jsonl"]);
        let alone = jsonl(&alone).1;
        for f in ["si", "ti"] {
            assert_eq!(
                mean(&summary, &format!("{prefix}{f}")),
                mean(&alone, f),
                "{clip} {f}\n{summary}\n{alone}"
            );
        }
    }
    assert!(
        (mean(&summary, "ref-si") - mean(&summary, "si")).abs() > 10.0,
        "{summary}"
    );
}
