// SPDX-License-Identifier: MPL-2.0
//! Live monitoring (issue 21): tumbling windows (`window`), alert rules (`alerts`) and
//! `subsample`, on the CPU backend.

mod common;

use common::*;
use gst::prelude::*;
use gstgpumetrics::message::{AlertChange, AlertState, FrameScores, Summary, Window};

const W: u32 = 32;
const H: u32 = 24;

/// Bus messages of a run through two appsrc (`ref`, `dist`) fed with `pairs`.
#[derive(Debug, Default)]
struct Seen {
    frames: Vec<FrameScores>,
    windows: Vec<Window>,
    alerts: Vec<AlertChange>,
    summaries: Vec<Summary>,
    warnings: Vec<String>,
    error: Option<String>,
    out: usize,
    out_with_meta: usize,
}

fn run_pairs(props: &str, pairs: Vec<(gst::Buffer, gst::Buffer)>) -> Seen {
    init();
    let caps = i420_caps(W, H, 25);
    let desc = format!(
        "appsrc name=ref format=time caps=\"{caps}\" ! m.ref_sink \
         appsrc name=dist format=time caps=\"{caps}\" ! m.dist_sink \
         gpumetrics name=m backend=cpu {props} ! appsink name=out sync=false"
    );
    let desc = desc.replace("backend=cpu", &format!("backend={}", test_backend()));
    let p = gst::parse::launch(&desc)
        .unwrap()
        .downcast::<gst::Pipeline>()
        .unwrap();
    let sink = p
        .by_name("out")
        .unwrap()
        .downcast::<gst_app::AppSink>()
        .unwrap();
    let counts = std::sync::Arc::new(std::sync::Mutex::new((0usize, 0usize)));
    {
        let counts = counts.clone();
        sink.set_callbacks(
            gst_app::AppSinkCallbacks::builder()
                .new_sample(move |s| {
                    let sample = s.pull_sample().map_err(|_| gst::FlowError::Eos)?;
                    let mut c = counts.lock().unwrap();
                    c.0 += 1;
                    if gstgpumetrics::meta::get(sample.buffer().unwrap()).is_some() {
                        c.1 += 1;
                    }
                    Ok(gst::FlowSuccess::Ok)
                })
                .build(),
        );
    }
    let bus = p.bus().unwrap();
    let _ = p.set_state(gst::State::Playing);
    let (refs, dists): (Vec<_>, Vec<_>) = pairs.into_iter().unzip();
    let p2 = p.clone();
    let feeder = std::thread::spawn(move || {
        let p3 = p2.clone();
        let t = std::thread::spawn(move || push_all(&p3, "ref", refs));
        push_all(&p2, "dist", dists);
        t.join().unwrap();
    });
    let mut seen = Seen::default();
    while let Some(msg) = bus.timed_pop(gst::ClockTime::from_seconds(30)) {
        if let Some(f) = FrameScores::from_message(&msg) {
            seen.frames.push(f);
        } else if let Some(w) = Window::from_message(&msg) {
            seen.windows.push(w);
        } else if let Some(a) = AlertChange::from_message(&msg) {
            seen.alerts.push(a);
        } else if let Some(s) = Summary::from_message(&msg) {
            seen.summaries.push(s);
        }
        match msg.view() {
            gst::MessageView::Eos(_) => break,
            gst::MessageView::Warning(w) => seen.warnings.push(w.error().to_string()),
            gst::MessageView::Error(e) => {
                seen.error = Some(format!("{} ({:?})", e.error(), e.debug()));
                break;
            }
            _ => {}
        }
    }
    p.set_state(gst::State::Null).unwrap();
    let _ = feeder.join();
    let c = *counts.lock().unwrap();
    (seen.out, seen.out_with_meta) = c;
    seen
}

/// Pair `i` at 40 ms steps: Y of the distorted frame `d` levels from the reference's.
fn pair(i: u64, d: u8) -> (gst::Buffer, gst::Buffer) {
    (
        solid_i420(W, H, [100, 128, 128], 40 * i, 40),
        solid_i420(W, H, [100 + d, 128, 128], 40 * i, 40),
    )
}

#[test]
fn windows_tumble_on_running_time_and_gaps_are_visible() {
    // Pairs at 0..400 ms, then at 1000..1200 ms; window 200 ms.
    let pairs: Vec<_> = (0..10)
        .chain(25..30)
        .map(|i| pair(i, (i % 3) as u8))
        .collect();
    let path = temp_path("windows.jsonl");
    let seen = run_pairs(
        &format!("window=200000000 stats-file={}", path.display()),
        pairs,
    );
    assert!(seen.error.is_none(), "{seen:?}");
    let spans: Vec<(u64, u64, u64)> = seen
        .windows
        .iter()
        .map(|w| (w.start / MS, w.end / MS, w.stats.frames))
        .collect();
    assert_eq!(
        spans,
        [
            (0, 200, 5),
            (200, 400, 5),
            (400, 600, 0),
            (600, 800, 0),
            (800, 1000, 0),
            (1000, 1200, 5)
        ]
    );
    // The summary's layout: per field the statistics of the window's pairs only.
    let w0 = &seen.windows[0].stats;
    let y = w0.field("mse-y").unwrap();
    // Y differences 0, 1, 2, 0, 1 over the first five pairs.
    assert_eq!((y.min, y.max, y.mean), (0.0, 4.0, 1.2));
    assert!(
        seen.windows[2].stats.fields.is_empty(),
        "no pairs, no fields"
    );
    let summary = &seen.summaries[0];
    assert_eq!(summary.frames, 15);
    assert_eq!(
        seen.windows.iter().map(|w| w.stats.frames).sum::<u64>(),
        summary.frames
    );
    // The stats file has the windows as records of type "window", between the pairs.
    let text = std::fs::read_to_string(&path).unwrap();
    let types: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["type"].to_string())
        .collect();
    assert_eq!(types.iter().filter(|t| *t == "\"window\"").count(), 6);
    assert_eq!(
        types[5], "\"window\"",
        "the first window after its five pairs"
    );
    assert_eq!(types.last().unwrap(), "\"summary\"");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn alert_rules_raise_and_clear_after_their_hold() {
    // Identical pairs (PSNR inf), then 10 degraded ones from 400 ms, then identical again
    // from 800 ms. psnr-y<40:100ms: raised at the first pair at or after 500 ms (520 ms),
    // cleared at the first pair at or after 900 ms (920 ms).
    let pairs: Vec<_> = (0..30)
        .map(|i| pair(i, if (10..20).contains(&i) { 20 } else { 0 }))
        .collect();
    let path = temp_path("alerts.csv");
    let seen = run_pairs(
        &format!(
            "alerts=\"psnr-y<40:100ms,mse-y>1000\" window=400000000 stats-file={} \
             stats-format=csv",
            path.display()
        ),
        pairs,
    );
    assert!(seen.error.is_none(), "{seen:?}");
    let changes: Vec<(&str, AlertState, u64)> = seen
        .alerts
        .iter()
        .map(|a| (a.rule.as_str(), a.state, a.running_time / MS))
        .collect();
    assert_eq!(
        changes,
        [
            ("psnr-y<40:100ms", AlertState::Raised, 520),
            ("psnr-y<40:100ms", AlertState::Cleared, 920)
        ]
    );
    let raised = &seen.alerts[0];
    let psnr = 10.0 * (255.0f64 * 255.0 / 400.0).log10();
    assert_eq!(raised.field, "psnr-y");
    assert!((raised.value - psnr).abs() < 1e-9, "{raised:?}");
    let cleared = &seen.alerts[1];
    assert_eq!(cleared.since, Some(520 * MS));
    assert!((cleared.worst.unwrap() - psnr).abs() < 1e-9);
    assert_eq!(cleared.value, f64::INFINITY);
    // The raise is also an element warning naming the rule and the value.
    assert!(
        seen.warnings
            .iter()
            .any(|w| w.contains("psnr-y<40:100ms") && w.contains(&format!("{psnr}"))),
        "{:?}",
        seen.warnings
    );
    // Counts: one episode of 400 ms; per window the overlap.
    let s = &seen.summaries[0];
    assert_eq!(s.alerts.len(), 2);
    assert_eq!(
        (s.alerts[0].rule.as_str(), s.alerts[0].episodes),
        ("psnr-y<40:100ms", 1)
    );
    assert!((s.alerts[0].seconds - 0.4).abs() < 1e-9, "{:?}", s.alerts);
    assert_eq!((s.alerts[1].episodes, s.alerts[1].seconds), (0, 0.0));
    let per_window: Vec<f64> = seen
        .windows
        .iter()
        .map(|w| w.stats.alerts[0].seconds)
        .collect();
    assert_eq!(per_window.len(), 3);
    assert!(
        (per_window[0] - 0.0).abs() < 1e-9
            && (per_window[1] - 0.28).abs() < 1e-9
            && (per_window[2] - 0.12).abs() < 1e-9,
        "{per_window:?}"
    );
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.lines()
            .any(|l| l.starts_with("alert:psnr-y<40:100ms,1,,,400000000")),
        "{text}"
    );
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn bad_alert_rules_are_an_error_at_start_that_quotes_the_rule() {
    for (rules, want) in [
        (
            "vmaf<70",
            "rule 'vmaf<70' names the field 'vmaf', which no enabled metric produces",
        ),
        (
            "psnr-y<30:2",
            "rule 'psnr-y<30:2': the hold time '2' needs a unit",
        ),
        ("psnr-y~30", "rule 'psnr-y~30': no '<' or '>'"),
    ] {
        let seen = run_pairs(&format!("alerts=\"{rules}\""), vec![pair(0, 0)]);
        let e = seen.error.unwrap_or_else(|| panic!("{rules}: no error"));
        assert!(e.contains(want), "{rules}: {e}");
        assert!(seen.frames.is_empty());
    }
}

#[test]
fn subsample_scores_every_nth_pair_and_counts_the_rest() {
    let pairs: Vec<_> = (0..30).map(|i| pair(i, (i % 4) as u8)).collect();
    let seen = run_pairs("subsample=3 window=400000000", pairs);
    assert!(seen.error.is_none(), "{seen:?}");
    let indices: Vec<u64> = seen.frames.iter().map(|f| f.frame).collect();
    assert_eq!(
        indices,
        (0..30).step_by(3).collect::<Vec<_>>(),
        "real frame numbers"
    );
    let s = &seen.summaries[0];
    assert_eq!((s.frames, s.skipped), (10, 20));
    assert_eq!(
        (seen.out, seen.out_with_meta),
        (30, 10),
        "every buffer leaves"
    );
    let w: Vec<(u64, u64)> = seen
        .windows
        .iter()
        .map(|w| (w.stats.frames, w.stats.skipped))
        .collect();
    assert_eq!(w, [(4, 6), (3, 7), (3, 7)]);
}

#[test]
fn subsampled_vmaf_scores_what_the_full_run_scores() {
    // VMAF's motion (of the reference) needs the previous frame: the skipped pairs still
    // reach the engine.
    let moving = |i: u64, shift: u64| {
        let mut f = solid_i420(48, 40, [0, 128, 128], 40 * i, 40);
        {
            let b = f.get_mut().unwrap();
            let mut m = b.map_writable().unwrap();
            for (k, px) in m.as_mut_slice()[..48 * 40].iter_mut().enumerate() {
                *px = ((k as u64 * 7 + i * i * 13 + shift * (k as u64 % 5)) % 200 + 20) as u8;
            }
        }
        f
    };
    let caps = i420_caps(48, 40, 25);
    let run_vmaf = |props: &str| {
        let reference: Vec<_> = (0..12).map(|i| moving(i, 0)).collect();
        let distorted: Vec<_> = (0..12).map(|i| moving(i, 3)).collect();
        let run = run_buffers(
            &caps,
            &format!("metrics=vmaf {props}"),
            reference,
            distorted,
        );
        run.expect_ok();
        run
    };
    let full = run_vmaf("");
    let sub = run_vmaf("subsample=4");
    assert_eq!(sub.summary().skipped, 9);
    assert_eq!(sub.frames.len(), 3);
    for f in &sub.frames {
        let want = full.frames[f.frame as usize].get("vmaf").unwrap();
        assert_eq!(f.get("vmaf"), Some(want), "pair {}", f.frame);
    }
    // Not trivially equal: the scores differ from pair to pair.
    assert!(
        full.frames
            .iter()
            .any(|f| f.get("vmaf") != full.frames[4].get("vmaf"))
    );
}
