// SPDX-License-Identifier: MPL-2.0
//! The command's outputs, gates and errors (issue 23) on tiny clips generated here with
//! ffmpeg (testsrc2, 64x48, 10 fps, H.264): `--every` with VMAF's temporal features, the
//! tidy CSV and JSON layouts with their header, `--fail` rules, write errors (a full disk, a
//! closed pipe), output paths checked before decoding, a run that compares no pair, the
//! note on a 10-bit input measured as 8-bit and `--threads`. CPU backend.

use std::io::{BufRead, BufReader};
use std::process::{Command as StdCommand, Stdio};
use std::sync::OnceLock;

use assert_cmd::Command;
use gpumetrics_engine::metric;
use predicates::prelude::*;
use serde_json::Value;

mod common;
use common::{Clips, ffmpeg};

/// The command on the CPU backend, quiet (`-q`).
fn quiet(args: &[&str]) -> Command {
    let mut cmd = common::gpumetrics(&["-q"]);
    cmd.args(args);
    cmd
}

/// Frames of the clips.
const FRAMES: u64 = 20;

fn clips() -> &'static Clips {
    static CLIPS: OnceLock<Clips> = OnceLock::new();
    CLIPS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
        let src = |n: u64| format!("testsrc2=size=64x48:rate=10,trim=end_frame={n}");
        let x264 = ["-c:v", "libx264", "-preset", "ultrafast"];
        let enc = |input: &[&str], quality: &[&str], format: &str, out: &str| {
            ffmpeg(&[input, &x264, quality, &["-pix_fmt", format, &p(out)]].concat());
        };
        let lossless = ["-qp", "0"];
        let lossy = ["-b:v", "20k"];
        enc(
            &["-f", "lavfi", "-i", &src(FRAMES)],
            &lossless,
            "yuv420p",
            "ref.mp4",
        );
        enc(&["-i", &p("ref.mp4")], &lossy, "yuv420p", "dist.mp4");
        enc(
            &["-i", &p("ref.mp4")],
            &lossy,
            "yuv444p10le",
            "dist444_10.mp4",
        );
        // Long enough that a reader closing the pipe after the first line comes before
        // the last record.
        enc(
            &["-f", "lavfi", "-i", &src(150)],
            &lossless,
            "yuv420p",
            "long.mp4",
        );
        Clips {
            path: dir.path().to_path_buf(),
            _dir: dir,
        }
    })
}

fn stdout_of(args: &[&str]) -> String {
    let out = quiet(args).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn jsonl(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The records of `type` (`frame`, `summary`, ...).
fn of_type<'a>(records: &'a [Value], kind: &str) -> Vec<&'a Value> {
    records.iter().filter(|r| r["type"] == kind).collect()
}

#[test]
fn every_keeps_temporal_metrics_exact_and_the_frame_numbers() {
    let c = clips();
    let (r, d) = (c.get("ref.mp4"), c.get("dist.mp4"));
    let full = jsonl(&stdout_of(&[&r, &d, "--metrics", "vmaf", "-f", "jsonl"]));
    let every = jsonl(&stdout_of(&[
        &r,
        &d,
        "--metrics",
        "vmaf",
        "--every",
        "5",
        "-f",
        "jsonl",
    ]));
    let frames = of_type(&every, "frame");
    let numbers: Vec<u64> = frames
        .iter()
        .map(|f| f["frame"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, [0, 5, 10, 15]);
    let full_frames = of_type(&full, "frame");
    // Each scored pair has the value of the full run (VMAF's motion saw every frame).
    for f in &frames {
        let n = f["frame"].as_u64().unwrap() as usize;
        assert_eq!(f["vmaf"], full_frames[n]["vmaf"], "frame {n}");
        assert_eq!(f["pts"], full_frames[n]["pts"], "frame {n}");
    }
    let mean: f64 = frames
        .iter()
        .map(|f| f["vmaf"].as_f64().unwrap())
        .sum::<f64>()
        / 4.0;
    let summary = of_type(&every, "summary")[0];
    let got = summary["fields"]["vmaf"]["mean"].as_f64().unwrap();
    assert!((got - mean).abs() < 1e-9, "{got} {mean}");
    assert_eq!(summary["skipped"], FRAMES - 4);
    assert_eq!(of_type(&every, "header")[0]["run"]["every"], 5);
    // A negative offset drops reference frames: the records count the reference's frames.
    let offset = jsonl(&stdout_of(&[
        &r,
        &d,
        "--offset=-3",
        "--frames",
        "2",
        "-f",
        "jsonl",
    ]));
    let numbers: Vec<u64> = of_type(&offset, "frame")
        .iter()
        .map(|f| f["frame"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, [3, 4]);
    // --every and --subsample are one setting.
    quiet(&[&r, &d, "--every", "5", "--subsample", "3"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("the same setting"));
}

#[test]
fn csv_has_only_frame_rows_and_json_only_numbers_or_null() {
    let c = clips();
    let (r, d) = (c.get("ref.mp4"), c.get("dist.mp4"));
    let dir = tempfile::tempdir().unwrap();
    let csv_path = dir.path().join("s.csv");
    let out = stdout_of(&[&r, &d, "-f", "csv", "-o", csv_path.to_str().unwrap()]);
    assert!(
        out.contains("compared pairs: 20"),
        "the summary on stdout: {out}"
    );
    let mut rd = csv::Reader::from_path(&csv_path).unwrap();
    let header: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(header[..4], ["frame", "pts", "running-time", "duration"]);
    let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
    assert_eq!(rows.len() as u64, FRAMES);
    for (i, row) in rows.iter().enumerate() {
        // An integer frame column, numeric scores: what pandas loads as int and float.
        assert_eq!(row[0].parse::<u64>().unwrap(), i as u64);
        let psnr = header.iter().position(|h| h == "psnr-y").unwrap();
        assert!(row[psnr].parse::<f64>().unwrap() > 20.0, "{row:?}");
    }

    // Identical frames: PSNR +inf is null in JSON; the columns stay numeric.
    let json_path = dir.path().join("s.json");
    stdout_of(&[
        &r,
        &r,
        "--metrics",
        "psnr,vmaf",
        "--frames",
        "2",
        "-f",
        "json",
        "-o",
        json_path.to_str().unwrap(),
    ]);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    let frames = v["frames"].as_array().unwrap();
    assert_eq!(frames.len(), 2);
    for f in frames {
        assert_eq!(f["psnr-y"], Value::Null, "{f}");
        assert_eq!(f["mse-y"], 0.0, "{f}");
        assert!(f["vmaf"].is_number(), "{f}");
    }
    assert_eq!(v["summary"]["fields"]["psnr-y"]["mean"], Value::Null);
    assert_eq!(v["summary"]["frames"], 2);
    assert_eq!(v["windows"], Value::Array(vec![]));
    // The header says what ran, and how.
    let h = &v["header"];
    assert_eq!(h["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(h["backend"], "cpu");
    assert_eq!(h["device"], Value::Null);
    assert_eq!(h["device-auto"], Value::Null);
    assert_eq!(h["devices"], Value::Null);
    assert_eq!(h["metrics"], serde_json::json!(["psnr", "vmaf"]));
    assert_eq!(h["inputs"]["reference"]["width"], 64);
    assert_eq!(h["inputs"]["distorted"]["framerate"], "10/1");
    assert_eq!(h["models"]["vmaf"], h["options"]["vmaf-model"]);
    assert!(h["models"]["vmaf"].is_string(), "{h}");
    for spec in metric::options() {
        assert!(
            h["options"].get(spec.name).is_some(),
            "{} in {h}",
            spec.name
        );
    }
    assert!(h["null-scores"].as_str().unwrap().contains("+inf"), "{h}");
}

/// A command whose inputs do not exist: what it reports must come before they are read.
fn before_decoding(args: &[&str], code: i32) -> assert_cmd::assert::Assert {
    quiet(&[&["/nonexistent/ref.mp4", "/nonexistent/dist.mp4"][..], args].concat())
        .assert()
        .code(code)
        .stderr(predicate::str::contains("cannot read").not())
}

#[test]
fn fail_rules_are_checked_before_decoding_and_judged_on_any_statistic() {
    before_decoding(&["--fail", "vmaf.mean<93"], 2).stderr(
        predicate::str::contains("no field `vmaf`")
            .and(predicate::str::contains("add it to --metrics"))
            .and(predicate::str::contains("psnr-y, mse-y")),
    );
    before_decoding(
        &["--metrics", "butteraugli", "--fail", "butteraugli.p95<4"],
        2,
    )
    .stderr(predicate::str::contains("lower-is-better"));
    before_decoding(&["--fail", "psnr-y.median<30"], 2)
        .stderr(predicate::str::contains("no statistic `median`"));
    before_decoding(&["--fail", "psnr-y"], 2).stderr(predicate::str::contains("no '<' or '>'"));

    let c = clips();
    let (r, d) = (c.get("ref.mp4"), c.get("dist.mp4"));
    let base = [&r[..], &d, "--metrics", "psnr,butteraugli", "--frames", "4"];
    let out = quiet(&base).output().unwrap();
    let table = String::from_utf8(out.stdout).unwrap();
    // The worst Butteraugli frame is the max column.
    let max = cell(&table, "butteraugli", 4);
    let min_psnr = cell(&table, "psnr-y", 3);
    quiet(
        &[
            &base[..],
            &[
                "--fail",
                &format!("butteraugli.max>{}", max - 0.01),
                "--fail",
                &format!("psnr-y.min<{}", min_psnr - 1.0),
            ],
        ]
        .concat(),
    )
    .assert()
    .code(3)
    .stderr(
        predicate::str::contains("fail: butteraugli max")
            // The other rule held (its pass note is for stderr without -q).
            .and(predicate::str::contains("psnr-y").not()),
    );
    quiet(
        &[
            &base[..],
            &[
                "--fail",
                &format!("butteraugli.max>{}", max + 0.01),
                "--fail-below",
                "psnr-y=10",
            ],
        ]
        .concat(),
    )
    .assert()
    .code(0);
}

/// A field the metrics can produce but this run did not (an option adds it) fails its rule
/// with exit 3, after the run: not a usage error that would hide the other rules' verdict.
#[test]
fn a_rule_on_a_field_the_run_did_not_produce_fails() {
    let c = clips();
    quiet(&[
        &c.get("ref.mp4"),
        &c.get("dist.mp4"),
        "--metrics",
        "ssim",
        "--frames",
        "2",
        "--fail",
        "ssim-u.mean<0.5",
    ])
    .assert()
    .code(3)
    .stderr(predicate::str::contains(
        "fail: ssim-u.mean<0.5: the run produced no `ssim-u`",
    ));
}

/// The number in column `i` of the summary table's row of `field`.
fn cell(table: &str, field: &str, i: usize) -> f64 {
    let row = table
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some(field))
        .unwrap_or_else(|| panic!("no {field} in {table}"));
    let cells: Vec<&str> = row
        .split(['│', '┆'])
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    cells[i].parse().unwrap()
}

/// An argument of 100,000 characters (one argument may hold up to 128 KiB) that the command
/// refuses: the error quotes its start and states its length, in a few hundred bytes, from
/// clap (`--roi`, `--window`, ...) and from the command's own checks (`--alert`, `--fail`,
/// `--metrics`) alike (issue 43).
#[test]
fn errors_quote_a_huge_value_cut_with_its_length() {
    for (flag, unit) in [
        ("--roi", "1,"),
        ("--window", "x"),
        ("--subsample", "9"),
        ("--prometheus", "x"),
        ("--fail-below", "x"),
        ("--alert", "x"),
        ("--fail", "x"),
        ("--metrics", "x"),
    ] {
        let value = unit.repeat(100_000 / unit.len());
        let err = before_decoding(&[flag, &value], 2)
            .get_output()
            .stderr
            .clone();
        let err = String::from_utf8_lossy(&err);
        assert!(
            err.len() < 2048,
            "{flag}: {} bytes: {}",
            err.len(),
            &err[..300]
        );
        assert!(err.contains("...(100000 characters)"), "{flag}: {err}");
        assert!(err.contains(&value[..100]), "{flag}: {err}");
    }
}

/// `-o -` is standard output (issue 43): the records there, the summary table on stderr,
/// and no file named `-`.
#[test]
fn dash_output_is_standard_output() {
    let c = clips();
    let dir = tempfile::tempdir().unwrap();
    let out = common::gpumetrics(&[
        "-f",
        "jsonl",
        "-o",
        "-",
        &c.get("ref.mp4"),
        &c.get("dist.mp4"),
    ])
    .current_dir(dir.path())
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        !dir.path().join("-").exists(),
        "a file named '-' was written"
    );
    let records = jsonl(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(of_type(&records, "frame").len() as u64, FRAMES);
    assert_eq!(of_type(&records, "summary").len(), 1);
    assert!(err.contains("psnr-y"), "the table on stderr: {err}");
    assert!(!err.contains("records: -"), "{err}");
}

#[test]
fn write_errors_end_the_run_in_one_line() {
    let c = clips();
    let (r, d) = (c.get("ref.mp4"), c.get("dist.mp4"));
    // A full disk: one line, exit 1, no panic.
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = StdCommand::new(assert_cmd::cargo::cargo_bin("gpumetrics"))
        .args(["--backend", "cpu", "-q", &r, &d])
        .stdout(full)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(
        err.trim(),
        "gpumetrics: error: writing the summary to stdout: No space left on device (os error 28)"
    );
    // Output paths are checked before decoding.
    before_decoding(&["--plot", "/nonexistent/x.png"], 1).stderr(predicate::str::contains(
        "--plot /nonexistent/x.png: cannot write it",
    ));
    before_decoding(&["-f", "csv", "-o", "/nonexistent/x.csv"], 1).stderr(
        predicate::str::contains("-o /nonexistent/x.csv: cannot write it"),
    );
}

#[test]
fn a_closed_pipe_ends_the_run_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let c = clips();
    let long = c.get("long.mp4");
    let mut child = StdCommand::new(assert_cmd::cargo::cargo_bin("gpumetrics"))
        .args(["--backend", "cpu", "-q", "-f", "jsonl", &long, &long])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // `| head -1`: the first line, then the pipe closes.
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("{\"type\":\"header\""), "{first}");
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    // Ended by SIGPIPE (13), as `head`'s other writers are: the shell's status 141.
    assert_eq!(out.status.signal(), Some(13), "{:?}\n{err}", out.status);
    assert!(err.is_empty(), "nothing on stderr: {err}");
}

#[test]
fn a_run_without_pairs_is_an_error_that_says_why() {
    let c = clips();
    quiet(&[&c.get("ref.mp4"), &c.get("dist.mp4"), "--offset", "60"])
        .assert()
        .code(4)
        .stdout("")
        .stderr(predicate::str::contains(
            "no pair was compared: the offset (+60) drops all 20 frames of the distorted input",
        ));
}

#[test]
fn ten_bit_measured_as_eight_bit_is_said() {
    let c = clips();
    let out = Command::cargo_bin("gpumetrics")
        .unwrap()
        .args(["--backend", "cpu", "--frames", "2"])
        .args([c.get("ref.mp4"), c.get("dist444_10.mp4")])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(
            "bit depth: the distorted video is 10-bit (Y444_10LE) and was measured as 8-bit (I420)"
        ),
        "{err}"
    );
}

#[test]
fn threads_set_the_cpu_backends_pool() {
    let c = clips();
    let out = stdout_of(&[
        &c.get("ref.mp4"),
        &c.get("dist.mp4"),
        "--threads",
        "1",
        "--frames",
        "2",
        "-f",
        "jsonl",
    ]);
    assert_eq!(jsonl(&out)[0]["threads"], 1);
    before_decoding(&["--threads", "0"], 2).stderr(predicate::str::contains("--threads"));
}
