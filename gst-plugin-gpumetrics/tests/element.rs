// SPDX-License-Identifier: MPL-2.0
//! Pipeline tests of the `gpumetrics` element (CPU backend): pairing, caps, errors, EOS, live,
//! stats files, meta, summary values.

mod common;

use std::time::Duration;

use common::*;
use gst::prelude::*;
use gstgpumetrics::message::FrameScores;
use gstgpumetrics::records;

const W: u32 = 32;
const H: u32 = 24;

/// Frame `i` of a stream whose frames all differ (Y = 20 + 7 i): a mispaired frame gives a
/// finite PSNR, a correct pair gives +inf.
fn frame(i: u64, pts_ms: u64) -> gst::Buffer {
    solid_i420(W, H, [(20 + 7 * i) as u8, 128, 128], pts_ms, 40)
}

fn frames(indices: impl IntoIterator<Item = u64>, offset_ms: u64) -> Vec<gst::Buffer> {
    indices
        .into_iter()
        .map(|i| frame(i, offset_ms + 40 * i))
        .collect()
}

fn caps() -> String {
    i420_caps(W, H, 25)
}

/// Every pair measured (at least one) has PSNR-Y, and every PSNR field is +inf.
#[track_caller]
fn assert_all_inf(run: &Run) {
    assert!(!run.frames.is_empty(), "no pair was measured: {run:#?}");
    for f in &run.frames {
        assert!(
            f.get("psnr-y").is_some(),
            "frame {} has no psnr-y: {f:?}",
            f.frame
        );
        for (field, v) in &f.scores {
            let name = field.name;
            if name.starts_with("psnr") {
                assert_eq!(
                    *v,
                    f64::INFINITY,
                    "frame {} {name} mispaired: {f:?}",
                    f.frame
                );
            }
        }
    }
}

fn meta_count(run: &Run) -> usize {
    run.out
        .iter()
        .filter(|b| gstgpumetrics::meta::get(b).is_some())
        .count()
}

#[test]
fn identical_frames_pair_one_to_one() {
    let run = run_buffers(&caps(), "", frames(0..10, 0), frames(0..10, 0));
    run.expect_ok();
    assert_eq!(run.frames.len(), 10);
    assert_all_inf(&run);
    for (i, f) in run.frames.iter().enumerate() {
        assert_eq!(f.frame, i as u64);
        assert_eq!(f.pts, Some(gst::ClockTime::from_mseconds(40 * i as u64)));
        assert_eq!(f.running_time, f.pts);
        assert_eq!(f.duration, Some(gst::ClockTime::from_mseconds(40)));
        assert!(f.get("psnr-y").is_some() && f.get("psnr-avg").is_some());
    }
    let s = run.summary();
    assert_eq!((s.frames, s.unmatched_ref, s.unmatched_dist), (10, 0, 0));
    assert_eq!(run.out.len(), 10);
    assert_eq!(meta_count(&run), 10);
}

#[test]
fn dropped_distorted_frames_are_unmatched_reference() {
    let dist = frames([0, 1, 2, 4, 5, 6, 8, 9], 0);
    let run = run_buffers(&caps(), "", frames(0..10, 0), dist);
    run.expect_ok();
    assert_all_inf(&run);
    assert_eq!(run.frames.len(), 8);
    let s = run.summary();
    assert_eq!((s.frames, s.unmatched_ref, s.unmatched_dist), (8, 2, 0));
    assert_eq!(run.out.len(), 8);
}

#[test]
fn dropped_reference_frames_leave_distorted_frames_without_meta() {
    let reference = frames([0, 1, 3, 4, 6, 7, 8, 9], 0);
    let run = run_buffers(&caps(), "", reference, frames(0..10, 0));
    run.expect_ok();
    assert_all_inf(&run);
    let s = run.summary();
    assert_eq!((s.frames, s.unmatched_ref, s.unmatched_dist), (8, 0, 2));
    // Every distorted frame goes downstream, the unmatched ones without scores.
    assert_eq!(run.out.len(), 10);
    assert_eq!(meta_count(&run), 8);
    let without: Vec<_> = run
        .out
        .iter()
        .filter(|b| gstgpumetrics::meta::get(b).is_none())
        .map(|b| b.pts().unwrap().mseconds())
        .collect();
    assert_eq!(without, vec![80, 200]);
}

#[test]
fn gap_in_reference() {
    let reference = frames((0..5).chain(10..15), 0);
    let run = run_buffers(&caps(), "", reference, frames(0..15, 0));
    run.expect_ok();
    assert_all_inf(&run);
    let s = run.summary();
    assert_eq!((s.frames, s.unmatched_ref, s.unmatched_dist), (10, 0, 5));
    assert_eq!(run.out.len(), 15);
}

#[test]
fn different_start_times() {
    // The distorted stream starts 4 frames later: only the overlap is compared.
    let run = run_buffers(&caps(), "", frames(0..10, 0), frames(4..12, 0));
    run.expect_ok();
    assert_all_inf(&run);
    let s = run.summary();
    assert_eq!((s.frames, s.unmatched_ref), (6, 4));
    assert_eq!(run.frames[0].pts, Some(gst::ClockTime::from_mseconds(160)));
}

#[test]
fn jitter_below_half_a_frame_still_pairs() {
    let mut dist = frames(0..8, 0);
    for (i, b) in dist.iter_mut().enumerate() {
        let jitter = [0u64, 15, 5, 19, 0, 10, 18, 1][i];
        b.get_mut()
            .unwrap()
            .set_pts(gst::ClockTime::from_mseconds(40 * i as u64 + jitter));
    }
    let run = run_buffers(&caps(), "", frames(0..8, 0), dist);
    run.expect_ok();
    assert_all_inf(&run);
    assert_eq!(run.summary().frames, 8);
}

#[test]
fn sequence_mode_ignores_timestamps() {
    // Timestamps 10 s apart: timestamp pairing finds nothing, sequence pairing everything.
    let run = run_buffers(&caps(), "", frames(0..6, 0), frames(0..6, 10_000));
    run.expect_ok();
    assert_eq!(run.summary().frames, 0);
    assert_eq!(run.summary().unmatched_ref, 6);

    let run = run_buffers(
        &caps(),
        "pairing=sequence",
        frames(0..6, 0),
        frames(0..6, 10_000),
    );
    run.expect_ok();
    assert_all_inf(&run);
    let s = run.summary();
    assert_eq!((s.frames, s.unmatched_ref, s.unmatched_dist), (6, 0, 0));
    assert_eq!(
        run.frames[5].pts,
        Some(gst::ClockTime::from_mseconds(10_200))
    );
}

#[test]
fn known_mse_gives_known_psnr_and_summary() {
    // Y differs by d (U, V equal): MSE-Y = d^2, PSNR-Y = 10 log10(255^2 / d^2).
    let diffs = [1u8, 2, 4, 8, 16];
    let reference: Vec<_> = (0..5)
        .map(|i| solid_i420(W, H, [100, 120, 140], 40 * i, 40))
        .collect();
    let dist: Vec<_> = diffs
        .iter()
        .enumerate()
        .map(|(i, d)| solid_i420(W, H, [100 + d, 120, 140], 40 * i as u64, 40))
        .collect();
    let run = run_buffers(&caps(), "", reference, dist);
    run.expect_ok();
    let expected: Vec<f64> = diffs
        .iter()
        .map(|&d| psnr(255.0, (d as f64).powi(2)))
        .collect();
    for (f, e) in run.frames.iter().zip(&expected) {
        assert!((f.get("psnr-y").unwrap() - e).abs() < 1e-9, "{f:?}");
        assert_eq!(f.get("psnr-u"), Some(f64::INFINITY));
        assert_eq!(f.get("mse-y").unwrap(), (f.frame as f64).exp2().powi(2));
        // 4:2:0 weighting: MSE-avg = 4/6 MSE-Y.
        let avg = psnr(255.0, f.get("mse-y").unwrap() * 4.0 / 6.0);
        assert!((f.get("psnr-avg").unwrap() - avg).abs() < 1e-9);
    }
    let s = run.summary();
    assert_eq!(s.frames, 5);
    let y = s.field("psnr-y").expect("psnr-y summary");
    let mean = expected.iter().sum::<f64>() / 5.0;
    assert!((y.mean - mean).abs() < 1e-9, "{y:?}");
    assert!((y.min - expected[4]).abs() < 1e-9);
    assert!((y.max - expected[0]).abs() < 1e-9);
    assert!((y.p50 - expected[2]).abs() < 1e-9);
    let var = expected.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 5.0;
    assert!((y.stddev - var.sqrt()).abs() < 1e-6, "{y:?}");
    let hm = 5.0 / expected.iter().map(|v| 1.0 / v).sum::<f64>();
    assert!((y.harmonic_mean.unwrap() - hm).abs() < 1e-9);
    let mse = s.field("mse-y").unwrap();
    assert_eq!(mse.mean, (1.0 + 4.0 + 16.0 + 64.0 + 256.0) / 5.0);
    assert_eq!(s.field("psnr-u").unwrap().mean, f64::INFINITY);
}

#[test]
fn format_mix_i420_vs_nv12_same_content_is_inf_and_output_has_dist_caps() {
    let run = run(&format!(
        "videotestsrc pattern=ball num-buffers=10 ! {} ! tee name=t \
         t. ! queue ! m.ref_sink \
         t. ! queue ! videoconvert ! video/x-raw,format=NV12 ! m.dist_sink \
         gpumetrics name=m backend=cpu ! appsink name=out",
        i420_caps(64, 48, 30)
    ));
    run.expect_ok();
    assert_eq!(run.frames.len(), 10);
    assert_all_inf(&run);
    let caps = run.out_caps.as_ref().unwrap();
    let info = gst_video::VideoInfo::from_caps(caps).unwrap();
    assert_eq!(info.format(), gst_video::VideoFormat::Nv12);
    assert_eq!((info.width(), info.height()), (64, 48));
    assert_eq!(meta_count(&run), 10);
}

#[test]
fn identity_drops_are_never_mispaired() {
    // pattern=ball moves every frame: a mispaired frame would score finite.
    for (r, d) in [
        ("identity drop-probability=0.3", "identity"),
        ("identity", "identity drop-probability=0.3"),
    ] {
        let run = run(&format!(
            "videotestsrc pattern=ball num-buffers=40 ! {} ! tee name=t \
             t. ! queue ! {r} ! m.ref_sink \
             t. ! queue ! {d} ! m.dist_sink \
             gpumetrics name=m backend=cpu ! appsink name=out",
            i420_caps(64, 48, 30)
        ));
        run.expect_ok();
        assert_all_inf(&run);
        let s = run.summary();
        assert!(s.frames > 0);
        // The last frames of the longer input may be left when the other ends.
        assert!(s.frames + s.unmatched_ref + s.unmatched_dist <= 40);
        assert!(s.frames + s.unmatched_ref + s.unmatched_dist >= 30, "{s:?}");
    }
}

#[test]
fn videorate_different_framerates_pair_by_time() {
    // Reference at 30 fps, distorted at 15 fps (every other frame): 15 pairs, 15 unmatched.
    let run = run(&format!(
        "videotestsrc pattern=ball num-buffers=30 ! {} ! tee name=t \
         t. ! queue ! m.ref_sink \
         t. ! queue ! videorate ! video/x-raw,framerate=15/1 ! m.dist_sink \
         gpumetrics name=m backend=cpu ! appsink name=out",
        i420_caps(64, 48, 30)
    ));
    run.expect_ok();
    let s = run.summary();
    assert_all_inf(&run);
    assert!(s.frames >= 14 && s.frames <= 15, "{s:?}");
    assert!(s.unmatched_ref >= 14, "{s:?}");
}

#[test]
fn size_mismatch_is_an_error_naming_both_sizes() {
    let run = run(
        "videotestsrc num-buffers=5 ! video/x-raw,format=I420,width=64,height=48 ! m.ref_sink \
         videotestsrc num-buffers=5 ! video/x-raw,format=I420,width=32,height=24 ! m.dist_sink \
         gpumetrics name=m backend=cpu ! fakesink",
    );
    let (msg, _) = run.error.expect("size mismatch must fail");
    assert!(msg.contains("64x48") && msg.contains("32x24"), "{msg}");
    assert!(msg.contains("videoscale"), "{msg}");
}

#[test]
fn caps_negotiation_accepts_system_and_cuda_memory_refuses_other_formats() {
    init();
    let m = gst::ElementFactory::make("gpumetrics").build().unwrap();
    let i420: gst::Caps = i420_caps(64, 48, 30).parse().unwrap();
    let yuy2 = gst::Caps::builder("video/x-raw")
        .field("format", "YUY2")
        .field("width", 64)
        .field("height", 48)
        .field("framerate", gst::Fraction::new(30, 1))
        .build();
    let mut cuda = i420.clone();
    cuda.make_mut()
        .set_features(0, Some(gst::CapsFeatures::new(["memory:CUDAMemory"])));
    for pad in ["ref_sink", "dist_sink"] {
        let pad = m.static_pad(pad).unwrap();
        assert!(pad.query_accept_caps(&i420));
        assert!(
            pad.query_accept_caps(&cuda),
            "{pad:?} must accept CUDA memory caps"
        );
        assert!(!pad.query_accept_caps(&yuy2));
    }
    // Linking an unsupported format fails at negotiation.
    init();
    let r = gst::parse::launch(
        "videotestsrc num-buffers=5 ! video/x-raw,format=YUY2,width=64,height=48 ! m.ref_sink \
         videotestsrc num-buffers=5 ! video/x-raw,format=I420,width=64,height=48 ! m.dist_sink \
         gpumetrics name=m backend=cpu ! fakesink",
    );
    assert!(r.is_err());
}

#[test]
fn eos_on_either_pad_ends_the_stream() {
    for (nr, nd) in [(5, 200), (200, 5)] {
        let run = run_with(
            &format!(
                "videotestsrc num-buffers={nr} ! {c} ! m.ref_sink \
                 videotestsrc num-buffers={nd} ! {c} ! m.dist_sink \
                 gpumetrics name=m backend=cpu ! appsink name=out",
                c = i420_caps(32, 24, 30)
            ),
            Duration::from_secs(20),
            |_| {},
        );
        run.expect_ok();
        assert_eq!(run.summary().frames, 5);
    }
}

#[test]
fn live_sources() {
    let run = run_with(
        &format!(
            "videotestsrc is-live=true pattern=ball num-buffers=15 ! {c} ! tee name=t \
             t. ! queue ! m.ref_sink t. ! queue ! m.dist_sink \
             gpumetrics name=m backend=cpu latency=200000000 ! appsink name=out",
            // (latency: slack for loaded CI machines; the tee feeds both pads together)
            c = i420_caps(32, 24, 30)
        ),
        Duration::from_secs(20),
        |_| {},
    );
    run.expect_ok();
    assert_all_inf(&run);
    assert!(run.summary().frames >= 14, "{:?}", run.summary());
}

#[test]
fn live_input_that_stops_does_not_stall() {
    // dist_sink gets 5 frames and then nothing (no EOS); the reference keeps going and ends.
    // The element must time out on the missing frames and finish with the reference's EOS.
    let desc = format!(
        "videotestsrc is-live=true num-buffers=25 ! {c} ! queue ! m.ref_sink \
         appsrc name=dist is-live=true format=time caps=\"{c}\" ! queue ! m.dist_sink \
         gpumetrics name=m backend=cpu ! appsink name=out",
        c = i420_caps(W, H, 25)
    );
    let run = run_with(&desc, Duration::from_secs(15), |p| {
        let src = p
            .by_name("dist")
            .unwrap()
            .downcast::<gst_app::AppSrc>()
            .unwrap();
        let start = std::time::Instant::now();
        for i in 0..5u64 {
            let due = Duration::from_millis(40 * i);
            if let Some(wait) = due.checked_sub(start.elapsed()) {
                std::thread::sleep(wait);
            }
            let _ = src.push_buffer(frame(i, 40 * i));
        }
        // keep the source open without EOS
    });
    run.expect_ok();
    let s = run.summary();
    assert!(s.unmatched_ref >= 15, "{s:?}");
    assert!(s.frames <= 5, "{s:?}");
}

#[test]
fn backend_auto_works_without_a_gpu() {
    let run = run_buffers(&caps(), "backend=auto", frames(0..3, 0), frames(0..3, 0));
    run.expect_ok();
    assert_eq!(run.summary().frames, 3);
    assert_all_inf(&run);
}

#[test]
fn post_messages_and_attach_meta_can_be_disabled() {
    let run = run_buffers(
        &caps(),
        "post-messages=false attach-meta=false",
        frames(0..4, 0),
        frames(0..4, 0),
    );
    run.expect_ok();
    assert!(run.frames.is_empty());
    assert_eq!(meta_count(&run), 0);
    assert_eq!(run.out.len(), 4);
    assert_eq!(run.summary().frames, 4);
}

fn known_run(props: &str) -> Run {
    let reference: Vec<_> = (0..4)
        .map(|i| solid_i420(W, H, [100, 120, 140], 40 * i, 40))
        .collect();
    let dist: Vec<_> = (0..4)
        .map(|i| solid_i420(W, H, [100 + i as u8, 120, 141], 40 * i, 40))
        .collect();
    let run = run_buffers(&caps(), props, reference, dist);
    run.expect_ok();
    assert_eq!(run.frames.len(), 4, "a message per pair");
    run
}

/// Equal up to JSON's decimal round trip (serde_json's default float parser may be 1 ulp off).
fn same(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-12 * a.abs().max(b.abs())
}

fn check_frame_json(v: &serde_json::Value, f: &FrameScores) {
    assert_eq!(v["type"], "frame");
    assert_eq!(v["frame"], f.frame);
    assert_eq!(v["pts"], f.pts.unwrap().nseconds());
    assert_eq!(v["running-time"], f.running_time.unwrap().nseconds());
    assert_eq!(v["duration"], f.duration.unwrap().nseconds());
    for (field, val) in &f.scores {
        let name = field.name;
        let got = records::json_to_f64(&v[name]).unwrap();
        assert!(same(got, *val), "{name}: {got} != {val}");
    }
}

#[test]
fn stats_file_jsonl() {
    let path = temp_path("stats.jsonl");
    let run = known_run(&format!("stats-file={} stats-format=jsonl", path.display()));
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 5);
    for (l, f) in lines.iter().zip(&run.frames) {
        check_frame_json(l, f);
    }
    assert_eq!(lines[0]["psnr-y"], serde_json::Value::Null);
    let s = &lines[4];
    assert_eq!(s["type"], "summary");
    assert_eq!(s["frames"], 4);
    assert_eq!(s["unmatched-ref"], 0);
    let sum = run.summary();
    let y = sum.field("psnr-y").unwrap();
    assert!(same(
        records::json_to_f64(&s["fields"]["psnr-y"]["p50"]).unwrap(),
        y.p50
    ));
    assert_eq!(s["fields"]["psnr-y"]["max"], serde_json::Value::Null);
    std::fs::remove_file(&path).ok();
}

#[test]
fn stats_file_json() {
    let path = temp_path("stats.json");
    let run = known_run(&format!("stats-file={} stats-format=json", path.display()));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let frames = v["frames"].as_array().unwrap();
    assert_eq!(frames.len(), 4);
    for (l, f) in frames.iter().zip(&run.frames) {
        check_frame_json(l, f);
    }
    assert_eq!(v["summary"]["frames"], 4);
    let mse_v = run.summary().field("mse-v").unwrap();
    assert!(same(
        records::json_to_f64(&v["summary"]["fields"]["mse-v"]["mean"]).unwrap(),
        mse_v.mean
    ));
    std::fs::remove_file(&path).ok();
}

#[test]
fn stats_file_csv() {
    let path = temp_path("stats.csv");
    let run = known_run(&format!("stats-file={} stats-format=csv", path.display()));
    let mut r = csv::Reader::from_path(&path).unwrap();
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(
        &header[..5],
        ["record", "frame", "pts", "running-time", "duration"]
    );
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = r.records().map(|r| r.unwrap()).collect();
    assert_eq!(rows.len(), 4 + 4 + 11);
    for (row, f) in rows.iter().zip(&run.frames) {
        assert_eq!(&row[0], "frame");
        assert_eq!(row[1].parse::<u64>().unwrap(), f.frame);
        assert_eq!(row[2].parse::<u64>().unwrap(), f.pts.unwrap().nseconds());
        for (field, val) in &f.scores {
            let name = field.name;
            assert_eq!(records::parse_f64(&row[col(name)]), Some(*val), "{name}");
        }
    }
    assert_eq!(&rows[0][col("psnr-y")], "inf");
    assert_eq!((&rows[4][0], &rows[4][1]), ("frames", "4"));
    assert_eq!((&rows[5][0], &rows[5][1]), ("unmatched-ref", "0"));
    assert_eq!((&rows[6][0], &rows[6][1]), ("unmatched-dist", "0"));
    assert_eq!((&rows[7][0], &rows[7][1]), ("skipped", "0"));
    assert_eq!(&rows[8][0], "mean");
    let sum = run.summary();
    assert_eq!(
        records::parse_f64(&rows[8][col("mse-y")]),
        Some(sum.field("mse-y").unwrap().mean)
    );
    assert_eq!(&rows[13][0], "pooled");
    assert_eq!(
        records::parse_f64(&rows[13][col("psnr-y")]),
        sum.field("psnr-y").unwrap().pooled
    );
    assert_eq!(&rows[13][col("mse-y")], "");
    assert_eq!(&rows[18][0], "p99");
    std::fs::remove_file(&path).ok();
}

#[test]
fn unwritable_stats_file_fails_at_start() {
    let run = known_run_err("stats-file=/nonexistent-dir/x/stats.jsonl");
    let (msg, _) = run.error.expect("must fail");
    assert!(msg.contains("/nonexistent-dir/x/stats.jsonl"), "{msg}");
}

fn known_run_err(props: &str) -> Run {
    run_buffers(&caps(), props, frames(0..2, 0), frames(0..2, 0))
}

#[test]
fn flushing_seek() {
    init();
    let pipeline = gst::parse::launch(&format!(
        "videotestsrc pattern=ball ! {c} ! tee name=t \
         t. ! queue ! m.ref_sink t. ! queue ! m.dist_sink \
         gpumetrics name=m backend=cpu ! appsink name=out sync=false",
        c = i420_caps(32, 24, 10)
    ))
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    let sink = pipeline
        .by_name("out")
        .unwrap()
        .downcast::<gst_app::AppSink>()
        .unwrap();
    let bus = pipeline.bus().unwrap();
    pipeline.set_state(gst::State::Paused).unwrap();
    let (res, _, _) = pipeline.state(gst::ClockTime::from_seconds(10));
    res.unwrap();
    pipeline
        .seek(
            1.0,
            gst::SeekFlags::FLUSH | gst::SeekFlags::ACCURATE,
            gst::SeekType::Set,
            gst::ClockTime::from_seconds(1),
            gst::SeekType::Set,
            gst::ClockTime::from_seconds(2),
        )
        .unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let mut pts = vec![];
    let mut frames = vec![];
    let mut summary = None;
    while let Some(sample) = sink.try_pull_sample(gst::ClockTime::from_seconds(10)) {
        pts.push(sample.buffer().unwrap().pts().unwrap().mseconds());
        frames.push(gstgpumetrics::meta::get(sample.buffer().unwrap()));
    }
    while let Some(msg) = bus.pop() {
        if let Some(s) = gstgpumetrics::message::Summary::from_message(&msg) {
            summary = Some(s);
        }
        if let gst::MessageView::Error(e) = msg.view() {
            panic!("{}", e.error());
        }
    }
    pipeline.set_state(gst::State::Null).unwrap();
    // The preroll buffer at 0 may have been compared before the seek; after it, [1 s, 2 s).
    let after: Vec<u64> = pts.iter().copied().filter(|&p| p >= 1000).collect();
    assert_eq!(
        after,
        (10..20).map(|i| i * 100).collect::<Vec<_>>(),
        "{pts:?}"
    );
    assert!(frames.iter().all(|m| {
        m.as_ref()
            .is_some_and(|m| m.get("psnr-y") == Some(f64::INFINITY))
    }));
    assert!(summary.is_some(), "summary at EOS after the seek");
}

#[test]
fn format_mixes_of_the_same_content_are_inf() {
    // Same frames converted to two layouts of the same kind: every PSNR must be +inf.
    let pairs = [
        ("I420", "YV12"),
        ("I420", "NV21"),
        ("Y444", "Y444"),
        ("Y42B", "Y42B"),
        ("GRAY8", "GRAY8"),
        ("I420_10LE", "P010_10LE"),
        ("I420_12LE", "I420_12LE"),
        ("Y444_16LE", "Y444_16LE"),
        ("GRAY16_LE", "GRAY16_LE"),
        ("RGBx", "BGRx"),
        ("RGBA", "ARGB"),
        ("RGB", "BGR"),
        ("xRGB", "xBGR"),
        ("ABGR", "BGRA"),
    ];
    for (a, b) in pairs {
        // An 8-bit source, so that no conversion needs dithering (which differs per layout).
        let src = if a.contains('R') { "RGBA" } else { "I420" };
        let run = run(&format!(
            "videotestsrc pattern=ball num-buffers=3 ! video/x-raw,format={src},width=34,height=22 \
             ! tee name=t \
             t. ! queue ! videoconvert ! video/x-raw,format={a} ! m.ref_sink \
             t. ! queue ! videoconvert ! video/x-raw,format={b} ! m.dist_sink \
             gpumetrics name=m backend=cpu ! appsink name=out"
        ));
        assert!(run.error.is_none(), "{a} vs {b}: {:?}", run.error);
        run.expect_ok();
        assert_eq!(run.frames.len(), 3, "{a} vs {b}");
        for f in &run.frames {
            for (field, v) in &f.scores {
                if field.name.starts_with("psnr") {
                    assert_eq!(*v, f64::INFINITY, "{a} vs {b}: {f:?}");
                }
            }
        }
        let names: Vec<&str> = run.frames[0].fields().map(|f| f.name).collect();
        assert!(names.contains(&"psnr-avg"), "{a} vs {b}: {names:?}");
    }
}

#[test]
fn error_mid_run_keeps_measured_records_in_the_stats_file() {
    // The distorted input switches to another size after 3 frames: element error, and the
    // stats file still holds the 3 records and the summary.
    let path = temp_path("error.jsonl");
    let caps = caps();
    let desc = appsrc_pipeline(
        &caps,
        &caps,
        &format!("stats-file={} stats-format=json", path.display()),
    );
    let run = run_with(&desc, Duration::from_secs(20), |p| {
        let p2 = p.clone();
        let t = std::thread::spawn(move || push_all(&p2, "ref", frames(0..6, 0)));
        let src = p
            .by_name("dist")
            .unwrap()
            .downcast::<gst_app::AppSrc>()
            .unwrap();
        for b in frames(0..3, 0) {
            let _ = src.push_buffer(b);
        }
        std::thread::sleep(Duration::from_millis(200));
        src.set_caps(Some(&i420_caps(16, 12, 25).parse::<gst::Caps>().unwrap()));
        for i in 3..6u64 {
            let _ = src.push_buffer(solid_i420(16, 12, [1, 2, 3], 40 * i, 40));
        }
        let _ = src.end_of_stream();
        t.join().unwrap();
    });
    let (msg, _) = run.error.clone().expect("size change must fail");
    assert!(msg.contains("16x12") && msg.contains("videoscale"), "{msg}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(v["frames"].as_array().unwrap().len(), 3);
    assert_eq!(v["summary"]["frames"], 3);
    assert_eq!(run.summaries.len(), 1, "summary posted on stop");
    std::fs::remove_file(&path).ok();
}

#[test]
fn live_pipeline_reports_latency() {
    init();
    let pipeline = gst::parse::launch(&format!(
        "videotestsrc is-live=true ! {c} ! tee name=t t. ! queue ! m.ref_sink \
         t. ! queue ! m.dist_sink gpumetrics name=m backend=cpu ! fakesink",
        c = i420_caps(32, 24, 25)
    ))
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let (res, _, _) = pipeline.state(gst::ClockTime::from_seconds(10));
    res.unwrap();
    let m = pipeline.by_name("m").unwrap();
    let mut q = gst::query::Latency::new();
    assert!(m.static_pad("src").unwrap().query(&mut q));
    let (live, min, _max) = q.result();
    pipeline.set_state(gst::State::Null).unwrap();
    assert!(live);
    assert!(min >= gst::ClockTime::from_mseconds(40), "{min}");
}

#[test]
fn pairing_tolerance_property() {
    // Distorted frames 25 ms late (frames last 40 ms). With the automatic 20 ms, distorted
    // frame i is closest in time to reference frame i + 1 (15 ms) and is paired with it.
    let late = || frames(0..5, 25);
    let run = run_buffers(&caps(), "", frames(0..5, 0), late());
    run.expect_ok();
    let s = run.summary();
    assert_eq!((s.frames, s.unmatched_ref), (4, 1));
    assert!(
        run.frames
            .iter()
            .all(|f| f.get("psnr-y").unwrap().is_finite())
    );
    // A fixed 30 ms pairs frame i with frame i.
    let run = run_buffers(
        &caps(),
        "pairing-tolerance=30000000",
        frames(0..5, 0),
        late(),
    );
    run.expect_ok();
    assert_all_inf(&run);
    assert_eq!(run.summary().frames, 5);
}

#[test]
fn meta_survives_downstream_conversion() {
    // The meta has no tags, so converters and scalers keep it on the buffers they produce.
    let run = run(&format!(
        "videotestsrc num-buffers=3 ! {c} ! tee name=t t. ! queue ! m.ref_sink \
         t. ! queue ! m.dist_sink gpumetrics name=m backend=cpu \
         ! videoconvert ! video/x-raw,format=RGBA ! videoscale ! video/x-raw,width=16,height=12 \
         ! appsink name=out",
        c = i420_caps(32, 24, 30)
    ));
    run.expect_ok();
    assert_eq!(run.out.len(), 3);
    for (i, b) in run.out.iter().enumerate() {
        let m = gstgpumetrics::meta::get(b).expect("meta after videoconvert/videoscale");
        assert_eq!(m.frame, i as u64);
        assert_eq!(m.get("psnr-y"), Some(f64::INFINITY));
    }
}
