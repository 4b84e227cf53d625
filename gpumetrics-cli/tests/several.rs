// SPDX-License-Identifier: MPL-2.0
//! One reference against several distorted files in one run (`gpumetrics REF D1 D2 D3`,
//! issue 23) on tiny clips generated here with ffmpeg (testsrc2, 64x48, 10 fps, 10 frames,
//! H.264: a lossless reference, three encodings at QP 20, 35 and 50, one in 10-bit 4:4:4):
//! each file's numbers
//! equal those of its own run, the reference is decoded once, the records and the table say
//! which file each number belongs to, `--fail` is judged per file, and the options of one
//! pair are usage errors. CPU backend.

use std::sync::OnceLock;

use serde_json::Value;

mod common;
use common::{Clips, ffmpeg, gpumetrics};

const FRAMES: usize = 10;
/// The distorted files, best first.
const DISTORTED: [&str; 3] = ["qp20.mp4", "qp35.mp4", "qp50.mp4"];

impl Clips {
    /// The reference, then the distorted files.
    fn all(&self) -> Vec<String> {
        std::iter::once("ref.mp4")
            .chain(DISTORTED)
            .map(|n| self.get(n))
            .collect()
    }
}

fn clips() -> &'static Clips {
    static CLIPS: OnceLock<Clips> = OnceLock::new();
    CLIPS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
        let x264 = [
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-pix_fmt",
            "yuv420p",
        ];
        let src = format!("testsrc2=size=64x48:rate=10,trim=end_frame={FRAMES}");
        ffmpeg(
            &[
                &["-f", "lavfi", "-i", &src][..],
                &x264,
                &["-qp", "0", &p("ref.mp4")],
            ]
            .concat(),
        );
        for (name, qp) in DISTORTED.iter().zip(["20", "35", "50"]) {
            ffmpeg(&[&["-i", &p("ref.mp4")][..], &x264, &["-qp", qp, &p(name)]].concat());
        }
        // Another raw format than the reference's (converted by the command).
        ffmpeg(&[
            "-i",
            &p("ref.mp4"),
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-qp",
            "30",
            "-pix_fmt",
            "yuv444p10le",
            &p("d444_10.mp4"),
        ]);
        Clips {
            path: dir.path().to_path_buf(),
            _dir: dir,
        }
    })
}

/// Runs and returns (status, stdout, stderr).
fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = gpumetrics(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn jsonl(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn of_type<'a>(records: &'a [Value], kind: &str) -> Vec<&'a Value> {
    records.iter().filter(|r| r["type"] == kind).collect()
}

/// A record without its `distorted` key (the single-file layout).
fn without_distorted(v: &Value) -> Value {
    let mut v = v.clone();
    v.as_object_mut().unwrap().remove("distorted");
    v
}

/// The table's rows, each cell trimmed; in the table of several files a row's empty first
/// cell (the field's other statistics) is filled with the field above.
fn rows(table: &str) -> Vec<Vec<String>> {
    let mut field = String::new();
    table
        .lines()
        .map(|l| {
            l.split(['│', '┆'])
                .map(|c| c.trim().to_string())
                .collect::<Vec<_>>()
        })
        .filter(|c| c.len() > 2)
        .map(|c| {
            let mut c = c[1..c.len() - 1].to_vec();
            if c[0].is_empty() {
                c[0] = field.clone();
            } else {
                field = c[0].clone();
            }
            c
        })
        .collect()
}

/// The cells after `first` in the row that starts with them (`["psnr-y", "mean"]`, or
/// `["psnr-y"]` in the single-file table).
fn row(table: &str, first: &[&str]) -> Vec<String> {
    rows(table)
        .into_iter()
        .find(|c| c.len() > first.len() && c[..first.len()] == *first)
        .unwrap_or_else(|| panic!("no row {first:?} in\n{table}"))[first.len()..]
        .to_vec()
}

#[test]
fn each_files_numbers_are_those_of_its_own_run_and_the_reference_is_decoded_once() {
    let c = clips();
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("all.jsonl");
    let records_arg = records.to_str().unwrap();
    let mut args: Vec<&str> = vec!["--metrics", "psnr,ssim", "-v", "--format", "jsonl"];
    args.extend(["-o", records_arg]);
    let inputs = c.all();
    args.extend(inputs.iter().map(String::as_str));
    let (status, table, stderr) = run(&args);
    assert_eq!(status, Some(0), "{stderr}");
    // The graph's decoders: one per input, so the reference was decoded once (a decoder per
    // comparison would make 6).
    let line = stderr
        .lines()
        .find(|l| l.starts_with("pipeline: "))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(line.starts_with("pipeline: 4 decoders ("), "{line}");
    assert_eq!(line.matches("avdec_h264").count(), 4, "{line}");

    let all = jsonl(&std::fs::read_to_string(&records).unwrap());
    let header = &all[0];
    assert_eq!(header["type"], "header");
    let given: Vec<&str> = header["inputs"]["distorted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["given"].as_str().unwrap())
        .collect();
    assert_eq!(given, inputs[1..], "{header}");
    assert_eq!(header["decoding"].as_array().unwrap().len(), 4, "{header}");
    let summaries = of_type(&all, "summary");
    assert_eq!(summaries.len(), 3);
    let head = row(&table, &["field", "stat"]);
    assert_eq!(head, DISTORTED, "{table}");

    let mut means = Vec::new();
    for (i, d) in inputs[1..].iter().enumerate() {
        let one = dir.path().join(format!("{i}.jsonl"));
        let (status, one_table, stderr) = run(&[
            "--metrics",
            "psnr,ssim",
            "-q",
            "--format",
            "jsonl",
            "-o",
            one.to_str().unwrap(),
            &inputs[0],
            d,
        ]);
        assert_eq!(status, Some(0), "{stderr}");
        let alone = jsonl(&std::fs::read_to_string(&one).unwrap());
        // The single-file layout has no `distorted` key.
        assert!(alone.iter().all(|r| r.get("distorted").is_none()));
        let frames: Vec<Value> = of_type(&all, "frame")
            .into_iter()
            .filter(|f| f["distorted"] == d.as_str())
            .map(without_distorted)
            .collect();
        let frames_alone: Vec<Value> = of_type(&alone, "frame").into_iter().cloned().collect();
        assert_eq!(frames.len(), FRAMES, "{d}");
        assert_eq!(frames, frames_alone, "{d}: per-frame scores");
        assert_eq!(summaries[i]["distorted"], d.as_str());
        assert_eq!(
            without_distorted(summaries[i]),
            *of_type(&alone, "summary")[0],
            "{d}: summary"
        );
        // The table's column is the file's own table.
        for field in ["psnr-y", "ssim"] {
            let alone_row = row(&one_table, &[field]);
            for (stat, at) in [("mean", 0), ("min", 2), ("max", 3), ("p95", 6)] {
                assert_eq!(
                    row(&table, &[field, stat])[i],
                    alone_row[at],
                    "{d} {field} {stat}\n{table}\n{one_table}"
                );
            }
        }
        means.push(summaries[i]["fields"]["psnr-y"]["mean"].as_f64().unwrap());
    }
    // The ladder is a ladder: a higher QP scores lower.
    assert!(means[0] > means[1] && means[1] > means[2], "{means:?}");
}

#[test]
fn csv_and_json_say_which_file_and_the_frame_options_apply_to_each() {
    let c = clips();
    let inputs = c.all();
    let with = |extra: &[&str]| {
        let mut args = vec!["-q", "--metrics", "psnr"];
        args.extend(["--offset", "1", "--every", "2", "--frames", "3"]);
        args.extend(extra);
        args.extend(inputs.iter().map(String::as_str));
        let (status, out, err) = run(&args);
        assert_eq!(status, Some(0), "{err}");
        out
    };
    let csv = with(&["--format", "csv"]);
    let mut lines = csv.lines();
    let head = lines.next().unwrap();
    assert!(head.starts_with("distorted,frame,pts,"), "{head}");
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 9, "{csv}");
    for d in &inputs[1..] {
        let frames: Vec<&str> = rows.iter().filter(|r| r[0] == d).map(|r| r[1]).collect();
        // --every 2 --frames 3: the reference's frames 0, 2, 4 (the offset drops the
        // distorted input's first frame).
        assert_eq!(frames, ["0", "2", "4"], "{d}\n{csv}");
    }
    let json: Value = serde_json::from_str(&with(&["--format", "json"])).unwrap();
    let summary = json["summary"]
        .as_array()
        .expect("an array with several files");
    let files: Vec<&str> = summary
        .iter()
        .map(|s| s["distorted"].as_str().unwrap())
        .collect();
    assert_eq!(files, inputs[1..]);
    assert!(
        summary
            .iter()
            .all(|s| s["frames"] == 3 && s["skipped"] == 2)
    );
    assert_eq!(json["frames"].as_array().unwrap().len(), 9);
    assert!(json["frames"][0]["distorted"].is_string());
    // One distorted file: the layout without `distorted`.
    let (status, one, err) = run(&["-q", "--format", "csv", &inputs[0], &inputs[1]]);
    assert_eq!(status, Some(0), "{err}");
    assert!(one.starts_with("frame,pts,"), "{one}");
}

#[test]
fn fail_rules_are_judged_per_file_and_the_plot_has_a_line_per_file() {
    let c = clips();
    let inputs = c.all();
    let dir = tempfile::tempdir().unwrap();
    let plot = dir.path().join("ladder.svg");
    let mut args = vec!["--metrics", "psnr", "--fail", "psnr-y.mean<30"];
    args.extend(["--plot", plot.to_str().unwrap()]);
    args.extend(inputs.iter().map(String::as_str));
    let (status, _, stderr) = run(&args);
    // QP 50 is far below 30 dB; QP 20 and 35 are above.
    assert_eq!(status, Some(3), "{stderr}");
    let fails: Vec<&str> = stderr.lines().filter(|l| l.contains("fail: ")).collect();
    assert_eq!(fails.len(), 2, "{stderr}");
    assert!(
        fails[0].starts_with("qp50.mp4: fail: psnr-y mean "),
        "{stderr}"
    );
    assert!(
        fails[1].contains("1 of 3 distorted files") && fails[1].ends_with("qp50.mp4"),
        "{stderr}"
    );
    assert!(stderr.contains("qp20.mp4: pass: psnr-y mean"), "{stderr}");
    let svg = std::fs::read_to_string(&plot).unwrap();
    for d in DISTORTED {
        assert!(
            svg.contains(&format!("{d}, mean ")),
            "{d} not in the legend"
        );
    }
}

#[test]
fn options_of_one_pair_are_usage_errors_before_decoding() {
    let c = clips();
    let inputs = c.all();
    for (extra, says) in [
        (&["--align", "auto"][..], "--align describes one pair"),
        (&["--window", "1s"][..], "--window describes one pair"),
        (
            &["--prometheus", "127.0.0.1:9"][..],
            "--prometheus describes",
        ),
    ] {
        let mut args = extra.to_vec();
        args.extend(inputs.iter().map(String::as_str));
        let (status, out, err) = run(&args);
        assert_eq!(status, Some(2), "{extra:?}: {err}");
        assert!(err.contains(says), "{extra:?}: {err}");
        assert!(
            !err.contains("reference: "),
            "{extra:?} opened the inputs: {err}"
        );
        assert!(out.is_empty());
    }
    let (status, _, err) = run(&[&inputs[0], &inputs[1], &inputs[2], &inputs[1]]);
    assert_eq!(status, Some(2), "{err}");
    assert!(err.contains("is given twice"), "{err}");
}

#[test]
fn help_describes_several_distorted_files() {
    let (status, help, _) = run(&["--help"]);
    assert_eq!(status, Some(0));
    assert!(
        help.contains("Usage: gpumetrics [OPTIONS] REF DIST [DIST...]"),
        "{help}"
    );
    let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
    for says in [
        "the reference is decoded once",
        "a column per file",
        "a `distorted` key",
        "--align, --window, --alert and --prometheus take one pair",
    ] {
        assert!(flat.contains(says), "{says}: {help}");
    }
}

/// A file in another raw format than the reference's fails at its first pair and the run is
/// made again with it converted; the other files' records, held until every file has
/// measured a pair, are written once.
#[test]
fn a_file_in_another_format_is_converted_and_the_records_written_once() {
    let c = clips();
    let (a, b) = (c.get("qp20.mp4"), c.get("d444_10.mp4"));
    let args = [
        "--metrics",
        "psnr",
        "--format",
        "csv",
        &c.get("ref.mp4"),
        &a,
        &b,
    ];
    // Whether the first file's first pairs come before the error is a race: try a few times.
    for _ in 0..5 {
        let (status, csv, err) = run(&args);
        assert_eq!(status, Some(0), "{err}");
        assert!(err.contains("converting it to I420"), "{err}");
        assert!(
            err.contains("d444_10.mp4: bit depth: the distorted video is 10-bit"),
            "{err}"
        );
        let rows: Vec<&str> = csv.lines().skip(1).collect();
        for d in [&a, &b] {
            let frames: Vec<&str> = rows
                .iter()
                .filter(|r| r.split(',').next() == Some(d))
                .map(|r| r.split(',').nth(1).unwrap())
                .collect();
            let want: Vec<String> = (0..FRAMES).map(|i| i.to_string()).collect();
            assert_eq!(frames, want, "{d}\n{csv}");
        }
    }
}

#[test]
fn files_that_compare_no_pair_are_named() {
    let c = clips();
    let inputs = c.all();
    let mut args = vec!["-q", "--offset", "20"];
    args.extend(inputs.iter().map(String::as_str));
    let (status, _, err) = run(&args);
    assert_eq!(status, Some(4), "{err}");
    assert!(
        err.starts_with("gpumetrics: error: no pair was compared for "),
        "{err}"
    );
    for d in &inputs[1..] {
        assert!(
            err.contains(&format!("{d}: the offset (+20) drops all 10 frames")),
            "{err}"
        );
    }
    // --align is refused with several files: the message does not offer it.
    assert!(!err.contains("--align"), "{err}");
}
