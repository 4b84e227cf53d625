// SPDX-License-Identifier: MPL-2.0
//! The command's inputs on clips generated here with ffmpeg: `--reference`/`--distorted`
//! against the positional pair, raw `.yuv` files and y4m files (8-bit 4:2:0 at an odd size,
//! 10-bit 4:2:2) scored exactly as the same frames stored losslessly (FFV1 in Matroska), and
//! the usage and size errors. CPU backend.

use std::sync::OnceLock;

use assert_cmd::Command;
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

/// Per case (name, size, ffmpeg pixel format): `NAME-ref.mkv` and `NAME-dist.mkv` (FFV1,
/// lossless; the distorted one with noise), and the same frames as `.y4m` and `.yuv`.
const CASES: [(&str, &str, &str); 2] =
    [("p8", "63x47", "yuv420p"), ("p10", "62x46", "yuv422p10le")];

fn clips() -> &'static Clips {
    static CLIPS: OnceLock<Clips> = OnceLock::new();
    CLIPS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
        for (name, size, pix) in CASES {
            let source = format!(
                "testsrc2=size=64x48:rate=25,scale={}",
                size.replace('x', ":")
            );
            for (role, filter) in [("ref", "null"), ("dist", "noise=alls=12:allf=t")] {
                let mkv = p(&format!("{name}-{role}.mkv"));
                ffmpeg(&[
                    "-f",
                    "lavfi",
                    "-i",
                    &source,
                    "-frames:v",
                    "12",
                    "-vf",
                    filter,
                    "-pix_fmt",
                    pix,
                    "-c:v",
                    "ffv1",
                    &mkv,
                ]);
                ffmpeg(&[
                    "-i",
                    &mkv,
                    "-strict",
                    "-1",
                    &p(&format!("{name}-{role}.y4m")),
                ]);
                ffmpeg(&[
                    "-i",
                    &mkv,
                    "-f",
                    "rawvideo",
                    &p(&format!("{name}-{role}.yuv")),
                ]);
            }
        }
        Clips {
            path: dir.path().to_path_buf(),
            _dir: dir,
        }
    })
}

/// The frame records' scores (every field but the times) of a run with `args`.
fn scores(args: &[&str]) -> Vec<Vec<(String, Value)>> {
    let out = quiet(&[args, &["--metrics", "psnr,ssim", "--format", "jsonl"]].concat())
        .output()
        .unwrap();
    let (so, se) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{args:?}\n{so}\n{se}");
    let frames: Vec<_> = so
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["type"] == "frame")
        .map(|v| {
            v.as_object()
                .unwrap()
                .iter()
                .filter(|(k, _)| {
                    k.starts_with("psnr") || k.starts_with("mse") || k.starts_with("ssim")
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(frames.len(), 12, "{args:?}\n{so}");
    frames
}

#[test]
fn y4m_and_yuv_score_as_the_same_frames_stored_losslessly() {
    let c = clips();
    let size = |s: &str| {
        s.split_once('x')
            .map(|(w, h)| (w.to_string(), h.to_string()))
            .unwrap()
    };
    for (name, dims, _) in CASES {
        let f = |ext: &str, role: &str| c.get(&format!("{name}-{role}.{ext}"));
        let lossless = scores(&[&f("mkv", "ref"), &f("mkv", "dist")]);
        assert!(
            lossless[0].iter().any(|(k, _)| k == "psnr-u"),
            "{lossless:?}"
        );
        assert_eq!(
            scores(&[&f("y4m", "ref"), &f("y4m", "dist")]),
            lossless,
            "{name} y4m"
        );
        let (w, h) = size(dims);
        let (pf, depth) = if name == "p8" {
            ("420", "8")
        } else {
            ("422", "10")
        };
        let raw = [
            "--width",
            &w,
            "--height",
            &h,
            "--pixel-format",
            pf,
            "--bitdepth",
            depth,
        ];
        let yuv = scores(
            &[
                &[
                    "--reference",
                    &f("yuv", "ref"),
                    "--distorted",
                    &f("yuv", "dist"),
                ][..],
                &raw,
            ]
            .concat(),
        );
        assert_eq!(yuv, lossless, "{name} yuv");
        // A y4m and a .yuv file together, and a GStreamer format name.
        let gst_format = if name == "p8" { "I420" } else { "I422_10LE" };
        let mixed = scores(&[
            &f("y4m", "ref"),
            &f("yuv", "dist"),
            "--width",
            &w,
            "--height",
            &h,
            "--pixel-format",
            gst_format,
        ]);
        assert_eq!(mixed, lossless, "{name} y4m + yuv");
        // A y4m file as a file:// URI is read the same way.
        let uri = format!("file://{}", f("y4m", "dist"));
        assert_eq!(
            scores(&[&f("y4m", "ref"), &uri]),
            lossless,
            "{name} y4m URI"
        );
    }
}

#[test]
fn named_inputs_are_the_positional_pair() {
    let c = clips();
    let (r, d) = (c.get("p8-ref.mkv"), c.get("p8-dist.mkv"));
    let positional = scores(&[&r, &d]);
    assert_eq!(scores(&["--reference", &r, "--distorted", &d]), positional);
    // The other order on the command line: the names decide.
    assert_eq!(scores(&["--distorted", &d, "--reference", &r]), positional);
    // --distorted alone is the one-input run.
    let out = quiet(&["--distorted", &d, "--metrics", "siti"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("measured frames: 12"));
}

#[test]
fn input_usage_errors_name_the_fix() {
    let c = clips();
    let (r, d) = (c.get("p8-ref.mkv"), c.get("p8-dist.mkv"));
    let yuv = c.get("p8-dist.yuv");
    let usage = |args: &[&str], text: &str| {
        quiet(args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(text));
    };
    usage(&[&r, "--distorted", &d], "inputs given both positionally");
    usage(
        &["--reference", &r, &d],
        "give either REF DIST (reference first)",
    );
    usage(&["--reference", &r], "--reference");
    usage(&["--reference", &r], "without --distorted");
    usage(&[], "no input: give REF DIST");
    usage(
        &[&r, &yuv],
        "is raw video without a header: give --width, --height, --pixel-format",
    );
    usage(
        &[
            &r,
            &yuv,
            "--width",
            "63",
            "--height",
            "47",
            "--pixel-format",
            "420",
        ],
        "needs --bitdepth",
    );
    usage(
        &[
            &r,
            &yuv,
            "--width",
            "63",
            "--height",
            "47",
            "--pixel-format",
            "420",
            "--bitdepth",
            "16",
        ],
        "no planar 420 format of 16 bits",
    );
    usage(
        &[&r, &d, "--width", "64"],
        "--width describes .yuv inputs, and no input is a .yuv file",
    );
    usage(
        &[&r, &d, "--framerate", "30"],
        "--framerate describes .yuv inputs",
    );
    usage(
        &[
            &yuv,
            "--width",
            "63",
            "--height",
            "47",
            "--pixel-format",
            "yuv420p",
        ],
        "neither 420, 422, 444, 400 nor a GStreamer video format name",
    );
    // ffmpeg-quality-metrics' order is named in --help.
    quiet(&["--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "ffmpeg-quality-metrics takes `dist ref`",
        ))
        .stdout(predicate::str::contains("--reference <REF>"))
        .stdout(predicate::str::contains("--pixel-format <FORMAT>"));
}

#[test]
fn a_yuv_file_of_the_wrong_size_is_an_error() {
    let c = clips();
    let (r, yuv) = (c.get("p8-ref.y4m"), c.get("p8-dist.yuv"));
    // 64x47 frames: 12 frames of 63x47 (4,497 bytes each) are 11.88 frames of 64x47.
    quiet(&[
        &r,
        &yuv,
        "--width",
        "64",
        "--height",
        "47",
        "--pixel-format",
        "420",
        "--bitdepth",
        "8",
    ])
    .assert()
    .code(1)
    .stderr(predicate::str::contains(
        "holds 53964 bytes of frames, not a whole number of 64x47 I420 frames of 4544 bytes",
    ))
    .stderr(predicate::str::contains(
        "check --width, --height, --pixel-format and --bitdepth",
    ));
    // A truncated y4m file.
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.y4m");
    let bytes = std::fs::read(&r).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() - 100]).unwrap();
    quiet(&[cut.to_str().unwrap(), &r])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("the file is truncated"));
}
