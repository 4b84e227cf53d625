//! CAMBI against libvmaf 3.2.0's `--feature cambi` on real clips: per-frame `cambi` within
//! 1e-3 of libvmaf's CSV (6 decimals), on the CPU backend, with the defaults, with the
//! VMAF v1 models' options (high-resolution speed-up 1080, visible luminance 0.06, cap 17)
//! and with encoding sizes, depths and other tunables set.
//!
//! Data: tests/data/cambi/ (made by tests/generate_cambi_reference.sh): banded gradients,
//! a pan over a photo, an x264 encode, a flat frame; 8, 10 and 12 bit, 4:2:0 and 4:4:4, an
//! odd size and 1920x1080; decoded here with FFmpeg. `runs.txt` gives each run's libvmaf
//! options, which map onto the metric's `cambi-*` options one to one.
//!
//! `cargo test -p gpumetrics-engine --test cambi_reference -- --nocapture` prints the
//! largest difference per clip and run.

mod common;

use std::path::{Path, PathBuf};

use common::ffmpeg;
use gpumetrics_engine::{
    BackendChoice, Engine, EngineConfig, Frame, FrameLayout, HostFrame, MetricSet, Options,
    PixelFormat, Plane,
};

const TOLERANCE: f64 = 1e-3;

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/cambi")
}

/// (format, bytes per sample, chroma subsampling shift)
fn layout_of(pix_fmt: &str) -> (PixelFormat, usize, u32) {
    match pix_fmt {
        "yuv420p" => (PixelFormat::I420, 1, 1),
        "yuv420p10le" => (PixelFormat::I420_10Le, 2, 1),
        "yuv420p12le" => (PixelFormat::I420_12Le, 2, 1),
        "yuv444p" => (PixelFormat::Y444, 1, 0),
        "yuv444p10le" => (PixelFormat::Y444_10Le, 2, 0),
        other => panic!("no layout for {other}"),
    }
}

/// libvmaf's option names and ours.
fn option_name(libvmaf: &str) -> &'static str {
    match libvmaf {
        "enc_width" => "cambi-enc-width",
        "enc_height" => "cambi-enc-height",
        "enc_bitdepth" => "cambi-enc-bitdepth",
        "window_size" => "cambi-window-size",
        "topk" | "cambi_topk" => "cambi-topk",
        "tvi_threshold" => "cambi-tvi-threshold",
        "cambi_vis_lum_threshold" => "cambi-vis-lum-threshold",
        "max_log_contrast" => "cambi-max-log-contrast",
        "cambi_eotf" | "eotf" => "cambi-eotf",
        "cambi_max_val" => "cambi-max-val",
        "cambi_high_res_speedup" => "cambi-high-res-speedup",
        other => panic!("no option for libvmaf's {other}"),
    }
}

/// The backend the comparison runs on: the CPU, or `GPUMETRICS_TEST_BACKEND=cuda` (on the
/// GPU machine, with the FFmpeg cache: libvmaf's numbers from the CUDA backend).
fn backend() -> BackendChoice {
    match std::env::var("GPUMETRICS_TEST_BACKEND").as_deref() {
        Ok("cuda") => BackendChoice::Cuda,
        _ => BackendChoice::Cpu,
    }
}

fn options(libvmaf: &str) -> Options {
    let mut o = Options::new();
    if libvmaf != "-" {
        for kv in libvmaf.split(':') {
            let (k, v) = kv.split_once('=').unwrap();
            o.parse(option_name(k), v).unwrap();
        }
    }
    o
}

/// The clip's frames: per frame its three planes, tightly packed.
fn decode(clip: &str, w: usize, h: usize, pix_fmt: &str) -> Vec<[Vec<u8>; 3]> {
    let path = data().join(format!("{clip}.mkv"));
    let raw = ffmpeg(&[
        "-i",
        path.to_str().unwrap(),
        "-f",
        "rawvideo",
        "-pix_fmt",
        pix_fmt,
        "-",
    ]);
    let (_, bps, s) = layout_of(pix_fmt);
    let (cw, ch) = (w.div_ceil(1 << s), h.div_ceil(1 << s));
    let sizes = [w * h * bps, cw * ch * bps, cw * ch * bps];
    let frame: usize = sizes.iter().sum();
    assert_eq!(raw.len() % frame, 0, "{clip}: partial frame");
    raw.chunks(frame)
        .map(|f| {
            let (y, rest) = f.split_at(sizes[0]);
            let (u, v) = rest.split_at(sizes[1]);
            [y.to_vec(), u.to_vec(), v.to_vec()]
        })
        .collect()
}

/// libvmaf's per-frame values (its one `cambi…` column).
fn reference(clip: &str, run: &str) -> Vec<f64> {
    let text = std::fs::read_to_string(data().join(format!("{clip}.{run}.csv"))).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = header.iter().position(|h| h.starts_with("cambi")).unwrap();
    lines
        .map(|l| l.split(',').nth(col).unwrap().parse().unwrap())
        .collect()
}

#[test]
fn cambi_equals_libvmaf_on_every_clip_and_run() {
    let clips: Vec<(String, usize, usize, String)> =
        std::fs::read_to_string(data().join("clips.txt"))
            .unwrap()
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (
                    f[0].into(),
                    f[1].parse().unwrap(),
                    f[2].parse().unwrap(),
                    f[3].into(),
                )
            })
            .collect();
    let runs = std::fs::read_to_string(data().join("runs.txt")).unwrap();
    let mut worst = 0.0f64;
    let mut checked = 0;
    let mut positive = 0;
    for line in runs.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (clip, run, opts) = (f[0], f[1], f[2]);
        let (_, w, h, pix) = clips.iter().find(|c| c.0 == clip).unwrap();
        let (format, bps, s) = layout_of(pix);
        let frames = decode(clip, *w, *h, pix);
        let want = reference(clip, run);
        assert_eq!(frames.len(), want.len(), "{clip}.{run}");
        let layout = FrameLayout {
            format,
            width: *w as u32,
            height: *h as u32,
        };
        let cfg = EngineConfig {
            metrics: MetricSet::named("cambi").unwrap(),
            backend: backend(),
            options: options(opts),
            ..Default::default()
        };
        let mut engine = Engine::new(&cfg, layout, layout).unwrap();
        assert!(
            engine.metric_notes().is_empty(),
            "{:?}",
            engine.metric_notes()
        );
        let cw = w.div_ceil(1 << s) * bps;
        let mut max = 0.0f64;
        for (i, (planes, want)) in frames.iter().zip(&want).enumerate() {
            let frame = Frame::Host(HostFrame::new(&[
                Plane {
                    data: &planes[0],
                    stride: w * bps,
                },
                Plane {
                    data: &planes[1],
                    stride: cw,
                },
                Plane {
                    data: &planes[2],
                    stride: cw,
                },
            ]));
            let got = engine.compare(&frame, &frame).unwrap();
            let v = got.get("cambi").unwrap();
            // Both inputs are linked: the reference's value is the same frame's.
            assert_eq!(got.get("ref-cambi"), Some(v));
            let d = (v - want).abs();
            assert!(
                d <= TOLERANCE,
                "{clip}.{run} frame {i}: {v} vs libvmaf {want}"
            );
            max = max.max(d);
            checked += 1;
            positive += (*want > 0.01) as usize;
        }
        println!("{clip:>14} {run:<10} max |diff| {max:.2e} (libvmaf {want:?})");
        worst = worst.max(max);
    }
    println!("largest difference {worst:.2e} over {checked} frames");
    assert!(
        checked >= 60 && positive >= 50,
        "{checked} frames, {positive} with banding"
    );
}
