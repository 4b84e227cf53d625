// SPDX-License-Identifier: MPL-2.0
//! The `cvvdp` metric through the element, against ColorVideoVDP 0.5.7: the generator's RGB
//! clips (tests/data/cvvdp/values.json, `rgb_cases`: the reference's `predict` on uint8
//! frames) pushed as RGB buffers at the clip's frame rate give each pair the reference's JOD
//! of the span to it and the summary its JOD of the whole clip; `subsample` keeps every
//! frame in the temporal channels; PQ caps with an SDR display model are a warning naming
//! both; the display models are the reference's.

mod common;

use common::*;
use gst::prelude::*;
use serde_json::Value;

fn values() -> Value {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/cvvdp/values.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// -3..3 from a hash of the sample's place (the generator's `noise`).
fn noise(x: i64, y: i64, t: i64, seed: i64) -> i64 {
    let mask = 0xFFFF_FFFFi64;
    let h =
        ((x * 73_856_093) & mask) ^ ((y * 19_349_663) & mask) ^ ((t * 83_492_791 + seed) & mask);
    h % 7 - 3
}

/// Channel `which` of pixel (x, y) of frame t (the generator's 8-bit `plane`).
fn sample(x: i64, y: i64, t: i64, which: i64, distorted: bool) -> u8 {
    let mut v = match which {
        0 => 16 + (((x * 5 + t * 3) ^ (y * 7)) * 37 % 200),
        1 => 108 + (x * 3 + y * 5 + t * 2) % 40,
        _ => 113 + (x * 2 + y * 3 + t * 7) % 30,
    };
    if distorted {
        v += noise(x, y, t, which) + if which == 0 && t % 4 == 3 { 4 } else { 0 };
    }
    v.clamp(0, 255) as u8
}

/// Frame t of an RGB clip as a buffer of `caps`' layout (rows padded to 4 bytes).
fn rgb_buffer(info: &gst_video::VideoInfo, t: u64, fps: u64, distorted: bool) -> gst::Buffer {
    let (w, h) = (info.width() as usize, info.height() as usize);
    let stride = info.stride()[0] as usize;
    let mut buf = gst::Buffer::with_size(info.size()).unwrap();
    {
        let b = buf.get_mut().unwrap();
        b.set_pts(gst::ClockTime::from_nseconds(t * 1_000_000_000 / fps));
        b.set_duration(gst::ClockTime::from_nseconds(1_000_000_000 / fps));
        let mut map = b.map_writable().unwrap();
        let data = map.as_mut_slice();
        for y in 0..h {
            for x in 0..w {
                for c in 0..3 {
                    data[y * stride + 3 * x + c] =
                        sample(x as i64, y as i64, t as i64, c as i64, distorted);
                }
            }
        }
    }
    buf
}

/// Runs an RGB case of the generator through the element with `props`.
fn run_case(c: &Value, props: &str) -> Run {
    run_frames(c, props, 0..c["frames"].as_u64().unwrap())
}

/// [`run_case`] on the case's frames `frames` only (a clip of its own: the first of them
/// starts the sequence).
fn run_frames(c: &Value, props: &str, frames: std::ops::Range<u64>) -> Run {
    init();
    let (w, h, _, fps) = (
        c["width"].as_u64().unwrap() as u32,
        c["height"].as_u64().unwrap() as u32,
        c["frames"].as_u64().unwrap(),
        c["fps"].as_u64().unwrap(),
    );
    let info = gst_video::VideoInfo::builder(gst_video::VideoFormat::Rgb, w, h)
        .fps(gst::Fraction::new(fps as i32, 1))
        .build()
        .unwrap();
    let caps = info.to_caps().unwrap().to_string();
    let make = |distorted| {
        frames
            .clone()
            .map(|t| rgb_buffer(&info, t, fps, distorted))
            .collect()
    };
    run_buffers(
        &caps,
        &format!(
            "metrics=cvvdp cvvdp-display={} {props}",
            c["display"].as_str().unwrap()
        ),
        make(false),
        make(true),
    )
}

#[test]
fn each_pair_and_the_summary_equal_the_references_jod() {
    let v = values();
    for c in v["rgb_cases"].as_array().unwrap() {
        let run = run_case(c, "");
        run.expect_ok();
        let n = c["frames"].as_u64().unwrap() as usize;
        assert_eq!(run.frames.len(), n, "{}", c["name"]);
        for j in c["jod"].as_array().unwrap() {
            let k = j["frames"].as_u64().unwrap() as usize;
            let want = j["jod"].as_f64().unwrap();
            let got = run.frames[k - 1].get("cvvdp").unwrap();
            assert!(
                (got - want).abs() <= 1e-3,
                "{} on {k} frames: {got} here, {want} in the reference",
                c["name"]
            );
        }
        let whole = c["jod"].as_array().unwrap().last().unwrap()["jod"]
            .as_f64()
            .unwrap();
        let pooled = run.summary().field("cvvdp").unwrap().pooled.unwrap();
        assert!(
            (pooled - whole).abs() <= 1e-3,
            "{}: summary {pooled}, reference {whole}",
            c["name"]
        );
    }
}

#[test]
fn subsample_scores_fewer_pairs_but_filters_every_frame() {
    let v = values();
    let c = &v["rgb_cases"][0];
    let run = run_case(c, "subsample=2");
    run.expect_ok();
    let n = c["frames"].as_u64().unwrap() as usize;
    // Pairs 0, 2, 4, ... scored: each the JOD of every frame up to it, as without subsample.
    let full = run_case(c, "");
    let all: Vec<f64> = full
        .frames
        .iter()
        .map(|f| f.get("cvvdp").unwrap())
        .collect();
    let scored: Vec<f64> = run.frames.iter().filter_map(|f| f.get("cvvdp")).collect();
    assert_eq!(scored.len(), n.div_ceil(2));
    for (i, got) in scored.iter().enumerate() {
        assert_eq!(*got, all[2 * i], "pair {}", 2 * i);
    }
    // The last pair measured is frame n-1 only when n is odd; the reference's value of the
    // span to a scored pair is what it reports.
    let want = c["jod"].as_array().unwrap()[0]["jod"].as_f64().unwrap();
    assert!((scored[0] - want).abs() <= 1e-3);
}

#[test]
fn pq_content_on_an_sdr_display_model_is_a_warning_naming_both() {
    init();
    let caps = "video/x-raw,format=I420_10LE,width=64,height=48,framerate=30/1,\
                colorimetry=bt2100-pq";
    let info = gst_video::VideoInfo::from_caps(&gst::Caps::from_str(caps).unwrap()).unwrap();
    let frames = || {
        (0..3u64)
            .map(|t| {
                let mut b = gst::Buffer::with_size(info.size()).unwrap();
                {
                    let b = b.get_mut().unwrap();
                    b.set_pts(gst::ClockTime::from_nseconds(t * 33_333_333));
                    b.set_duration(gst::ClockTime::from_nseconds(33_333_333));
                    let mut m = b.map_writable().unwrap();
                    for (i, v) in m.as_mut_slice().chunks_mut(2).enumerate() {
                        v.copy_from_slice(&(((i as u16 * 7) % 700) + 64).to_le_bytes());
                    }
                }
                b
            })
            .collect()
    };
    let run = run_buffers(caps, "metrics=cvvdp", frames(), frames());
    run.expect_ok();
    assert!(
        run.warnings
            .iter()
            .any(|w| w.contains("PQ") && w.contains("standard_fhd")),
        "{:?}",
        run.warnings
    );
    // Identical inputs: no visible difference.
    for f in &run.frames {
        assert!((f.get("cvvdp").unwrap() - 10.0).abs() < 1e-6, "{f:?}");
    }
    let quiet = run_buffers(
        caps,
        "metrics=cvvdp cvvdp-display=standard_hdr_pq",
        frames(),
        frames(),
    );
    quiet.expect_ok();
    assert!(
        !quiet.warnings.iter().any(|w| w.contains("cvvdp")),
        "{:?}",
        quiet.warnings
    );
}

#[test]
fn the_display_property_takes_the_references_models() {
    init();
    let e = gst::ElementFactory::make("gpumetrics").build().unwrap();
    let nick = |e: &gst::Element| {
        let v = e.property_value("cvvdp-display");
        glib_nick(&v)
    };
    assert_eq!(nick(&e), "standard_fhd");
    for name in [
        "standard_4k",
        "standard_hdr_pq",
        "standard_hdr_hlg",
        "standard_hdr_linear",
        "standard_hdr_dark",
        "standard_hdr_linear_dark",
    ] {
        e.set_property_from_str("cvvdp-display", name);
        assert_eq!(nick(&e), name);
    }
}

fn glib_nick(v: &gst::glib::Value) -> String {
    let (_, e) = gst::glib::EnumValue::from_value(v).unwrap();
    e.nick().to_string()
}

use std::str::FromStr;

/// With `window`, a pair's `cvvdp` is the JOD of the current window's span up to it (issue
/// 47: "since the start of the run or of the current window", "the reference's result on
/// that span"): each pair's value is that of a run of the window's frames alone (its
/// temporal channels starting at the window, as the reference's on those frames); at each
/// window's last pair the window's `pooled`; the summary the whole run's.
#[test]
fn with_window_each_pair_is_the_jod_of_its_window_so_far() {
    let v = values();
    let c = &v["rgb_cases"][0];
    let (n, fps) = (
        c["frames"].as_u64().unwrap() as usize,
        c["fps"].as_u64().unwrap(),
    );
    let full = run_case(c, "");
    let all: Vec<f64> = full
        .frames
        .iter()
        .map(|f| f.get("cvvdp").unwrap())
        .collect();
    // Windows of 4 frames (shorter than the filters, 9 taps at 25 fps: the second
    // instance takes every pair) and of 10 (longer: it stops after 8, the main one's
    // differences are then the window's).
    for per_window in [4usize, 10] {
        let window = per_window as u64 * 1_000_000_000 / fps;
        let path = common::temp_path("cvvdp-windows.jsonl");
        let run = run_case(c, &format!("window={window} stats-file={}", path.display()));
        run.expect_ok();
        let got: Vec<f64> = run.frames.iter().map(|f| f.get("cvvdp").unwrap()).collect();
        assert_eq!(got.len(), n);
        assert_eq!(
            got[..per_window],
            all[..per_window],
            "the first window starts with the run"
        );
        // Every window is a run of its own frames.
        for w0 in (0..n).step_by(per_window) {
            let w1 = (w0 + per_window).min(n);
            let alone = run_frames(c, "", w0 as u64..w1 as u64);
            let want: Vec<f64> = alone
                .frames
                .iter()
                .map(|f| f.get("cvvdp").unwrap())
                .collect();
            assert_eq!(
                got[w0..w1],
                want[..],
                "{per_window} a window: frames {w0}..{w1}"
            );
        }
        // A later window starts over: its first pair is not the run's JOD up to it.
        assert_ne!(got[per_window], all[per_window]);
        // The windows' pooled JODs (the stats file): their last pair's.
        let text = std::fs::read_to_string(&path).unwrap();
        let pooled: Vec<f64> = text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|r| r["type"] == "window")
            .map(|r| {
                r["fields"]["cvvdp"]["pooled"]
                    .as_f64()
                    .unwrap_or_else(|| panic!("a window's cvvdp pooled: {r}"))
            })
            .collect();
        assert_eq!(pooled.len(), n.div_ceil(per_window), "{text}");
        for (k, p) in pooled.iter().enumerate() {
            let last = (per_window * k + per_window - 1).min(n - 1);
            assert_eq!(got[last], *p, "window {k}'s last pair");
        }
        // The summary still pools the whole run.
        let whole = full.summary().field("cvvdp").unwrap().pooled.unwrap();
        assert_eq!(run.summary().field("cvvdp").unwrap().pooled.unwrap(), whole);
        let _ = std::fs::remove_file(&path);
    }
}

/// With `subsample`, the skipped pairs' frames still belong to the spans: the summary's
/// and each window's `pooled` are those of every frame (equal to the run without
/// `subsample`), and a scored pair's value in a window is that of the window so far.
#[test]
fn subsample_pools_every_frame_of_a_span() {
    let v = values();
    let c = &v["rgb_cases"][0];
    let fps = c["fps"].as_u64().unwrap();
    let window = 4 * 1_000_000_000 / fps;
    let windows_of = |path: &std::path::Path| -> Vec<f64> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|r| r["type"] == "window")
            .map(|r| r["fields"]["cvvdp"]["pooled"].as_f64().unwrap())
            .collect()
    };
    let pooled = |run: &Run| run.summary().field("cvvdp").unwrap().pooled.unwrap();
    let (all_path, sub_path) = (
        common::temp_path("cvvdp-all.jsonl"),
        common::temp_path("cvvdp-sub.jsonl"),
    );
    let all = run_case(
        c,
        &format!("window={window} stats-file={}", all_path.display()),
    );
    let sub = run_case(
        c,
        &format!(
            "window={window} subsample=3 stats-file={}",
            sub_path.display()
        ),
    );
    all.expect_ok();
    sub.expect_ok();
    assert_eq!(pooled(&sub), pooled(&all), "the summary's span");
    assert_eq!(
        windows_of(&sub_path),
        windows_of(&all_path),
        "each window's"
    );
    let every: Vec<f64> = all.frames.iter().map(|f| f.get("cvvdp").unwrap()).collect();
    let scored: Vec<f64> = sub.frames.iter().filter_map(|f| f.get("cvvdp")).collect();
    for (i, got) in scored.iter().enumerate() {
        assert_eq!(*got, every[3 * i], "pair {}", 3 * i);
    }
    let _ = std::fs::remove_file(&all_path);
    let _ = std::fs::remove_file(&sub_path);
}
