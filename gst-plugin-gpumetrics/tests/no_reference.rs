// SPDX-License-Identifier: MPL-2.0
//! No-reference metrics (issue 22) in the element: dist_sink alone (ref_sink unlinked), live
//! and not, the black and freeze intervals as `gpumetrics-event` messages, stats-file
//! records and summary counts, and both inputs with `ref-` fields and `input=ref` events.

mod common;

use std::time::Duration;

use common::*;
use gstgpumetrics::message::EventRecord;

const W: u32 = 32;
const H: u32 = 24;
/// 25 frames/s.
const FRAME_MS: u64 = 40;

/// An I420 frame whose luma is `y` plus, when `seed` is given, noise of ±20 that differs
/// per seed (so no two such frames are frozen).
fn frame(y: u8, seed: Option<u64>, index: u64) -> gst::Buffer {
    let mut b = solid_i420(W, H, [y, 128, 128], index * FRAME_MS, FRAME_MS);
    if let Some(seed) = seed {
        let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let b = b.get_mut().unwrap();
        let mut map = b.map_writable().unwrap();
        for v in &mut map.as_mut_slice()[..(W * H) as usize] {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            *v = (y as i32 + (s % 41) as i32 - 20).clamp(0, 255) as u8;
        }
    }
    b
}

/// `black` frozen black frames, then `moving` noisy grey ones.
fn clip(black: u64, moving: u64) -> Vec<gst::Buffer> {
    (0..black + moving)
        .map(|i| match i < black {
            true => frame(16, None, i),
            false => frame(128, Some(i), i),
        })
        .collect()
}

fn alone(props: &str, buffers: Vec<gst::Buffer>) -> Run {
    let caps = i420_caps(W, H, 25);
    run_with(
        &format!(
            "gpumetrics name=m backend=cpu {props} ! appsink name=out \
             appsrc name=dist format=time caps=\"{caps}\" ! m.dist_sink"
        ),
        Duration::from_secs(30),
        move |p| push_all(p, "dist", buffers),
    )
}

fn event(event: &str, state: &str, input: &str, t_ms: u64, d_ms: Option<u64>) -> EventRecord {
    EventRecord {
        event: event.into(),
        state: state.into(),
        input: input.into(),
        running_time: t_ms * MS,
        duration: d_ms.map(|d| d * MS),
    }
}

#[test]
fn dist_sink_alone_measures_no_reference_metrics_with_events() {
    let stats = temp_path("alone.jsonl");
    // 2.4 s of frozen black, then 1.2 s of moving grey.
    let run = alone(
        &format!("metrics=black+freeze+siti stats-file={}", stats.display()),
        clip(60, 30),
    );
    run.expect_ok();
    assert_eq!(run.frames.len(), 90);
    assert_eq!(run.out.len(), 90, "every frame leaves on src");
    for f in &run.frames {
        let names: Vec<_> = f.fields().map(|f| f.name).collect();
        assert!(names.iter().all(|n| !n.starts_with("ref-")), "{names:?}");
    }
    assert_eq!(run.frames[10].get("black"), Some(1.0));
    assert_eq!(run.frames[70].get("black"), Some(0.0));
    assert!(
        run.frames[0].get("freeze-diff").is_none(),
        "first frame: no reference"
    );
    assert_eq!(run.frames[30].get("freeze-diff"), Some(0.0));
    assert!(run.frames[70].get("freeze-diff").unwrap() > 0.01);
    assert!(run.frames[70].get("si").unwrap() > 10.0);
    let want = vec![
        event("black", "start", "dist", 0, None),
        event("freeze", "start", "dist", 0, None),
        event("black", "end", "dist", 2400, Some(2400)),
        event("freeze", "end", "dist", 2400, Some(2400)),
    ];
    assert_eq!(run.events, want);
    let s = run.summary();
    assert_eq!((s.frames, s.unmatched_ref, s.unmatched_dist), (90, 0, 0));
    let counts: Vec<_> = s
        .events
        .iter()
        .map(|e| (e.event.as_str(), e.input.as_str(), e.intervals, e.seconds))
        .collect();
    assert_eq!(
        counts,
        [("black", "dist", 1, 2.4), ("freeze", "dist", 1, 2.4)]
    );
    // The stats file has the same events, after the record of the frame that ended them.
    let text = std::fs::read_to_string(&stats).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains(r#""type":"event","event":"black","state":"end""#))
        .unwrap_or_else(|| panic!("no black end in {text}"));
    assert!(
        lines[at - 1].contains(r#""frame":60,"#),
        "{}",
        lines[at - 1]
    );
    assert!(lines[at].contains(r#""running-time":2400000000,"duration":2400000000"#));
    assert!(
        lines
            .last()
            .unwrap()
            .contains(r#""events":[{"event":"black""#)
    );
    let _ = std::fs::remove_file(stats);
}

#[test]
fn an_interval_open_at_eos_ends_there_and_a_short_one_is_not_reported() {
    // 0.4 s of black, 1.2 s of grey, then 2.4 s of black to the end.
    let mut buffers: Vec<_> = (0..10).map(|i| frame(16, Some(i), i)).collect();
    buffers.extend((10..40).map(|i| frame(128, Some(i), i)));
    buffers.extend((40..100).map(|i| frame(16, Some(i), i)));
    let run = alone("metrics=black", buffers);
    run.expect_ok();
    assert_eq!(
        run.events,
        [
            event("black", "start", "dist", 1600, None),
            event("black", "end", "dist", 4000, Some(2400)),
        ]
    );
}

#[test]
fn dist_sink_alone_runs_live() {
    let run = run(
        "gpumetrics name=m backend=cpu metrics=black+siti ! appsink name=out \
         videotestsrc is-live=true pattern=black num-buffers=8 ! \
         video/x-raw,format=I420,width=32,height=24,framerate=25/1 ! m.dist_sink",
    );
    run.expect_ok();
    assert_eq!(run.frames.len(), 8);
    assert!(run.frames.iter().all(|f| f.get("black") == Some(1.0)));
    assert!(run.events.is_empty(), "0.32 s of black is shorter than 2 s");
}

#[test]
fn a_full_reference_metric_without_ref_sink_is_an_error_naming_it() {
    let run = alone("metrics=psnr+ssim+black", clip(3, 0));
    let (msg, _) = run.error.expect("an element error");
    assert!(
        msg.contains("psnr, ssim need a reference input") && msg.contains("ref_sink"),
        "{msg}"
    );
    assert!(run.frames.is_empty());
}

#[test]
fn with_both_inputs_each_gets_its_fields_and_events() {
    // The reference is black for 2.4 s, the distorted input never.
    let reference = clip(60, 10);
    let distorted: Vec<_> = (0..70).map(|i| frame(128, Some(1000 + i), i)).collect();
    let run = run_buffers(
        &i420_caps(W, H, 25),
        "metrics=black+psnr",
        reference,
        distorted,
    );
    run.expect_ok();
    assert_eq!(run.frames.len(), 70);
    let f = &run.frames[5];
    assert_eq!((f.get("black"), f.get("ref-black")), (Some(0.0), Some(1.0)));
    assert!(f.get("psnr-y").is_some());
    assert_eq!(
        run.events,
        [
            event("black", "start", "ref", 0, None),
            event("black", "end", "ref", 2400, Some(2400)),
        ]
    );
}

#[test]
fn windows_and_alerts_work_with_one_input() {
    let stats = temp_path("alone-window.jsonl");
    // 1.2 s of black, then 1.2 s of grey: an alert on black raised in the first second.
    let mut buffers: Vec<_> = (0..30).map(|i| frame(16, Some(i), i)).collect();
    buffers.extend((30..60).map(|i| frame(128, Some(i), i)));
    let run = alone(
        &format!(
            "metrics=black window=1000000000 alerts=black>0.5 stats-file={}",
            stats.display()
        ),
        buffers,
    );
    run.expect_ok();
    assert!(
        run.warnings
            .iter()
            .any(|w| w.contains("alert raised: black>0.5")),
        "{:?}",
        run.warnings
    );
    let s = run.summary();
    assert_eq!(s.frames, 60);
    assert_eq!(s.alerts.len(), 1);
    assert_eq!(s.alerts[0].episodes, 1);
    let text = std::fs::read_to_string(&stats).unwrap();
    let windows: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(r#""type":"window""#))
        .collect();
    // [0, 1 s): 25 black frames; [1, 2 s): 5 black + 20 grey; [2, 3 s): 10 grey.
    assert_eq!(windows.len(), 3, "{text}");
    assert!(windows[0].contains(r#""frames":25,"#), "{}", windows[0]);
    assert!(windows[2].contains(r#""frames":10,"#), "{}", windows[2]);
    let _ = std::fs::remove_file(stats);
}
