// SPDX-License-Identifier: MPL-2.0
//! Nothing measured is lost, and what the element reports agrees with itself (issue 20):
//! late fields in the CSV stats file, held pairs across a flushing seek and a live stall,
//! replay after EOS, properties changed while playing, runs that pair nothing, a removed
//! sink pad.

mod common;

use std::time::{Duration, Instant};

use common::*;
use gst::glib;
use gst::prelude::*;
use gstgpumetrics::message::{FrameScores, Summary};

const W: u32 = 64;
const H: u32 = 48;

/// A solid packed RGB frame.
fn solid_rgb(rgb: [u8; 3], pts_ms: u64) -> gst::Buffer {
    let info = gst_video::VideoInfo::builder(gst_video::VideoFormat::Rgb, W, H)
        .build()
        .unwrap();
    let mut buf = gst::Buffer::with_size(info.size()).unwrap();
    {
        let b = buf.get_mut().unwrap();
        b.set_pts(gst::ClockTime::from_mseconds(pts_ms));
        b.set_duration(gst::ClockTime::from_mseconds(40));
        let mut map = b.map_writable().unwrap();
        let stride = info.stride()[0] as usize;
        for row in map.as_mut_slice().chunks_mut(stride) {
            for px in row[..W as usize * 3].chunks_mut(3) {
                px.copy_from_slice(&rgb);
            }
        }
    }
    buf
}

fn appsrc(p: &gst::Pipeline, name: &str) -> gst_app::AppSrc {
    p.by_name(name).unwrap().downcast().unwrap()
}

/// Bus messages until EOS, an error or `timeout`: the records, the summaries, the element's
/// warnings and every error.
#[derive(Default, Debug)]
struct Seen {
    frames: Vec<FrameScores>,
    summaries: Vec<Summary>,
    warnings: Vec<String>,
    errors: Vec<String>,
    eos: bool,
}

fn collect(bus: &gst::Bus, timeout: Duration, seen: &mut Seen) {
    let deadline = Instant::now() + timeout;
    while let Some(msg) = bus.timed_pop(gst::ClockTime::from_mseconds(
        deadline
            .saturating_duration_since(Instant::now())
            .as_millis() as u64,
    )) {
        if let Some(f) = FrameScores::from_message(&msg) {
            seen.frames.push(f);
        } else if let Some(s) = Summary::from_message(&msg) {
            seen.summaries.push(s);
        }
        match msg.view() {
            gst::MessageView::Eos(_) => {
                seen.eos = true;
                return;
            }
            gst::MessageView::Warning(w) => seen.warnings.push(w.error().to_string()),
            gst::MessageView::Error(e) => {
                seen.errors.push(format!("{} ({:?})", e.error(), e.debug()));
                return;
            }
            _ => {}
        }
    }
}

fn launch(desc: &str) -> gst::Pipeline {
    init();
    // GPUMETRICS_TEST_BACKEND=cuda runs the same cases on the CUDA backend.
    let desc = &desc.replace("backend=cpu", &format!("backend={}", test_backend()));
    gst::parse::launch(desc)
        .unwrap_or_else(|e| panic!("{desc}: {e}"))
        .downcast()
        .unwrap()
}

#[test]
fn csv_stats_file_keeps_fields_that_first_appear_after_the_first_record() {
    // PSNR on YUV gives psnr-y/u/v; after a change to RGB, psnr-r/g/b. The file's columns
    // were those of the first record: the RGB fields were on the bus but not in the file.
    let path = temp_path("late-fields.csv");
    let yuv = i420_caps(W, H, 25);
    let desc = appsrc_pipeline(
        &yuv,
        &yuv,
        &format!("stats-file={} stats-format=csv", path.display()),
    );
    let run = run_with(&desc, Duration::from_secs(30), |p| {
        let rgb: gst::Caps = format!("video/x-raw,format=RGB,width={W},height={H},framerate=25/1")
            .parse()
            .unwrap();
        for name in ["ref", "dist"] {
            let src = appsrc(p, name);
            for i in 0..3 {
                src.push_buffer(solid_i420(W, H, [100, 128, 128], 40 * i, 40))
                    .unwrap();
            }
            let value = if name == "ref" { 100 } else { 110 };
            for i in 3..6 {
                let sample = gst::Sample::builder()
                    .buffer(&solid_rgb([value, 90, 80], 40 * i))
                    .caps(&rgb)
                    .build();
                src.push_sample(&sample).unwrap();
            }
            src.end_of_stream().unwrap();
        }
    });
    run.expect_ok();
    assert_eq!(run.frames.len(), 6);
    let bus_r: Vec<f64> = run.frames[3..]
        .iter()
        .map(|f| f.get("psnr-r").expect("psnr-r on the bus"))
        .collect();
    let mut csv = csv::Reader::from_path(&path).unwrap();
    let header: Vec<String> = csv.headers().unwrap().iter().map(String::from).collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name} in {header:?}"))
    };
    let (r, y) = (col("psnr-r"), col("psnr-y"));
    let rows: Vec<csv::StringRecord> = csv.records().map(Result::unwrap).collect();
    let frames: Vec<&csv::StringRecord> = rows.iter().filter(|r| &r[0] == "frame").collect();
    assert_eq!(frames.len(), 6);
    for (row, want) in frames[3..].iter().zip(&bus_r) {
        let got = gstgpumetrics::records::parse_f64(&row[r]).unwrap();
        assert_eq!(got, *want, "{row:?}");
        assert_eq!(&row[y], "", "no psnr-y on RGB frames");
    }
    assert_eq!(&frames[0][r], "", "no psnr-r on YUV frames");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_flushing_seek_with_vmaf_loses_no_measured_pair() {
    // VMAF holds a pair back (its motion needs the next frame). A flushing seek used to drop
    // it: the frame indices jumped and the pair was in no count.
    let path = temp_path("seek.jsonl");
    let p = launch(&format!(
        "videotestsrc pattern=ball ! {c} ! tee name=t \
         t. ! queue ! m.ref_sink t. ! queue ! m.dist_sink \
         gpumetrics name=m backend=cpu metrics=psnr+vmaf stats-file={f} ! \
         fakesink sync=false",
        c = i420_caps(W, H, 10),
        f = path.display()
    ));
    let bus = p.bus().unwrap();
    p.set_state(gst::State::Paused).unwrap();
    let (res, _, _) = p.state(gst::ClockTime::from_seconds(10));
    res.unwrap();
    p.seek(
        1.0,
        gst::SeekFlags::FLUSH | gst::SeekFlags::ACCURATE,
        gst::SeekType::Set,
        gst::ClockTime::from_seconds(1),
        gst::SeekType::Set,
        gst::ClockTime::from_seconds(2),
    )
    .unwrap();
    p.set_state(gst::State::Playing).unwrap();
    let mut seen = Seen::default();
    collect(&bus, Duration::from_secs(20), &mut seen);
    p.set_state(gst::State::Null).unwrap();
    assert!(seen.eos && seen.errors.is_empty(), "{seen:?}");
    let indices: Vec<u64> = seen.frames.iter().map(|f| f.frame).collect();
    let n = indices.len() as u64;
    assert!(n > 10, "the prerolled pairs and [1 s, 2 s): {indices:?}");
    assert_eq!(indices, (0..n).collect::<Vec<_>>(), "every measured pair");
    assert!(seen.frames.iter().all(|f| f.get("vmaf").is_some()));
    assert_eq!(seen.summaries.last().unwrap().frames, n);
    let text = std::fs::read_to_string(&path).unwrap();
    let records = text
        .lines()
        .filter(|l| l.contains("\"type\":\"frame\""))
        .count();
    assert_eq!(records as u64, n, "{text}");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn replay_after_eos_continues_the_stats_file_as_the_bus_does() {
    for format in ["jsonl", "csv", "json"] {
        let path = temp_path(&format!("replay.{format}"));
        let p = launch(&format!(
            "videotestsrc pattern=ball ! {c} ! tee name=t \
             t. ! queue ! m.ref_sink t. ! queue ! m.dist_sink \
             gpumetrics name=m backend=cpu stats-file={f} stats-format={format} ! \
             fakesink sync=false",
            c = i420_caps(W, H, 10),
            f = path.display()
        ));
        let bus = p.bus().unwrap();
        // Play [0 s, 2 s) to EOS, then replay [1 s, 2 s) with a flushing seek.
        let seek = |from: u64| {
            p.seek(
                1.0,
                gst::SeekFlags::FLUSH | gst::SeekFlags::ACCURATE,
                gst::SeekType::Set,
                gst::ClockTime::from_seconds(from),
                gst::SeekType::Set,
                gst::ClockTime::from_seconds(2),
            )
            .unwrap();
        };
        p.set_state(gst::State::Paused).unwrap();
        let (res, _, _) = p.state(gst::ClockTime::from_seconds(10));
        res.unwrap();
        seek(0);
        p.set_state(gst::State::Playing).unwrap();
        let mut seen = Seen::default();
        collect(&bus, Duration::from_secs(20), &mut seen);
        assert!(seen.eos, "{format}: first EOS: {seen:?}");
        seen.eos = false;
        seek(1);
        collect(&bus, Duration::from_secs(20), &mut seen);
        assert!(seen.eos && seen.errors.is_empty(), "{format}: {seen:?}");
        p.set_state(gst::State::Null).unwrap();
        let counts: Vec<u64> = seen.summaries.iter().map(|s| s.frames).collect();
        // The pair prerolled before the first seek may count too, and the tee forwards a
        // seek from each branch (a pair may be measured between the two flushes).
        assert_eq!(counts.len(), 2, "{format}: {counts:?}");
        let total = counts[1];
        assert!(
            counts[0] >= 20 && (counts[0] + 10..=counts[0] + 12).contains(&total),
            "{format}: {counts:?}"
        );
        assert_eq!(seen.frames.len() as u64, total);
        let text = std::fs::read_to_string(&path).unwrap();
        match format {
            "jsonl" => {
                let lines: Vec<serde_json::Value> = text
                    .lines()
                    .map(|l| serde_json::from_str(l).unwrap())
                    .collect();
                let frames = lines.iter().filter(|v| v["type"] == "frame").count();
                let summaries: Vec<&serde_json::Value> =
                    lines.iter().filter(|v| v["type"] == "summary").collect();
                assert_eq!(frames as u64, total, "{text}");
                assert_eq!(summaries.len(), 2);
                assert_eq!(summaries[0]["frames"], counts[0]);
                assert_eq!(summaries[1]["frames"], total);
                assert_eq!(lines.last().unwrap()["type"], "summary");
            }
            "csv" => {
                let first: Vec<&str> = text.lines().map(|l| l.split(',').next().unwrap()).collect();
                assert_eq!(
                    first.iter().filter(|c| **c == "frame").count() as u64,
                    total
                );
                assert_eq!(first.iter().filter(|c| **c == "frames").count(), 2);
                assert!(text.contains(&format!("\nframes,{total},")), "{text}");
            }
            _ => {
                let v: serde_json::Value = serde_json::from_str(&text)
                    .unwrap_or_else(|e| panic!("one JSON document: {e}: {text}"));
                assert_eq!(v["frames"].as_array().unwrap().len() as u64, total);
                assert_eq!(v["summary"]["frames"], total);
            }
        }
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn properties_fixed_for_the_run_refuse_changes_while_playing() {
    let first = temp_path("first.jsonl");
    let second = temp_path("second.jsonl");
    let p = launch(&format!(
        "videotestsrc is-live=true pattern=ball ! {c} ! tee name=t \
         t. ! queue ! m.ref_sink t. ! queue ! m.dist_sink \
         gpumetrics name=m backend=cpu stats-file={f} ! fakesink",
        c = i420_caps(W, H, 25),
        f = first.display()
    ));
    let m = p.by_name("m").unwrap();
    let bus = p.bus().unwrap();
    p.set_state(gst::State::Playing).unwrap();
    let (res, _, _) = p.state(gst::ClockTime::from_seconds(10));
    res.unwrap();
    let changes: [(&str, glib::Value); 4] = [
        ("stats-file", second.display().to_string().to_value()),
        ("pairing-tolerance", 5i64.to_value()),
        ("metrics", {
            let v = m.property_value("metrics");
            let flags = glib::FlagsClass::with_type(v.type_()).unwrap();
            flags.set_by_nick(v, "ssim").unwrap()
        }),
        ("pairing", {
            let v = m.property_value("pairing");
            let e = glib::EnumClass::with_type(v.type_()).unwrap();
            e.to_value_by_nick("sequence").unwrap()
        }),
    ];
    for (name, value) in changes {
        let before = format!("{:?}", m.property_value(name));
        m.set_property_from_value(name, &value);
        assert_eq!(
            format!("{:?}", m.property_value(name)),
            before,
            "{name} reads back the value in effect"
        );
        let warning = std::iter::from_fn(|| bus.timed_pop(gst::ClockTime::from_seconds(5)))
            .find_map(|msg| match msg.view() {
                gst::MessageView::Warning(w) => Some(w.error().to_string()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no warning for {name}"));
        assert!(
            warning.contains(&format!("'{name}'")) && warning.contains("NULL or READY"),
            "{warning}"
        );
    }
    // post-messages is GST_PARAM_MUTABLE_PLAYING: it changes.
    m.set_property("post-messages", false);
    assert!(!m.property::<bool>("post-messages"));
    p.set_state(gst::State::Null).unwrap();
    assert!(!second.exists(), "the refused path is not used");
    assert!(first.exists());
    // In READY or NULL they change.
    m.set_property("stats-file", second.display().to_string());
    assert_eq!(
        m.property::<Option<String>>("stats-file"),
        Some(second.display().to_string())
    );
    // Every property is marked with when it can change.
    for pspec in m.list_properties() {
        if pspec.owner_type() != m.type_() || !pspec.flags().contains(glib::ParamFlags::WRITABLE) {
            continue;
        }
        let f = pspec.flags();
        assert!(
            f.contains(gst::PARAM_FLAG_MUTABLE_READY)
                || f.contains(gst::PARAM_FLAG_MUTABLE_PLAYING),
            "{} has no GST_PARAM_MUTABLE_* flag",
            pspec.name()
        );
    }
    let _ = std::fs::remove_file(&first);
}

#[test]
fn a_live_stall_finishes_the_held_pair_without_waiting_for_eos() {
    // dist_sink stalls after 5 frames (no EOS) while the reference goes on for 4 s. VMAF
    // holds the 5th pair back for the next frame; it used to stay held until EOS.
    let c = i420_caps(W, H, 25);
    let p = launch(&format!(
        "videotestsrc is-live=true num-buffers=100 ! {c} ! queue ! m.ref_sink \
         appsrc name=dist is-live=true format=time caps=\"{c}\" ! queue ! m.dist_sink \
         gpumetrics name=m backend=cpu metrics=vmaf ! fakesink"
    ));
    let bus = p.bus().unwrap();
    p.set_state(gst::State::Playing).unwrap();
    let src = appsrc(&p, "dist");
    let feeder = std::thread::spawn(move || {
        let start = Instant::now();
        for i in 0..5u64 {
            let due = Duration::from_millis(40 * i);
            if let Some(wait) = due.checked_sub(start.elapsed()) {
                std::thread::sleep(wait);
            }
            let _ = src.push_buffer(solid_i420(W, H, [(20 + 7 * i) as u8, 128, 128], 40 * i, 40));
        }
        src
    });
    // 1.5 s after the stall, well before the reference ends (4 s).
    let mut seen = Seen::default();
    collect(&bus, Duration::from_millis(1700), &mut seen);
    let _src = feeder.join().unwrap();
    let indices: Vec<u64> = seen.frames.iter().map(|f| f.frame).collect();
    p.set_state(gst::State::Null).unwrap();
    assert!(seen.errors.is_empty(), "{seen:?}");
    assert_eq!(
        indices,
        [0, 1, 2, 3, 4],
        "the 5th pair is finished at the live timeout"
    );
}

#[test]
fn a_run_that_pairs_nothing_says_why() {
    // The distorted timestamps start 10 s after the reference's: nothing ever pairs.
    let caps = i420_caps(32, 24, 25);
    let reference: Vec<_> = (0..5)
        .map(|i| solid_i420(32, 24, [50, 128, 128], 40 * i, 40))
        .collect();
    let distorted: Vec<_> = (0..5)
        .map(|i| solid_i420(32, 24, [50, 128, 128], 10_000 + 40 * i, 40))
        .collect();
    let run = run_buffers(&caps, "", reference, distorted);
    run.expect_ok();
    assert_eq!(run.summary().frames, 0);
    let w = run
        .warnings
        .iter()
        .find(|w| w.contains("No frame pair was compared"))
        .unwrap_or_else(|| panic!("no warning: {:?}", run.warnings));
    assert!(
        w.contains("ref_sink: first frame at running time 0:00:00.000000000")
            && w.contains("dist_sink: first frame at running time 0:00:10.000000000")
            && w.contains("tolerance 0:00:00.020000000"),
        "{w}"
    );
    // Untimed jitter: 3 ms apart with no durations and framerate 0/1 (1 ms tolerance).
    let caps = "video/x-raw,format=I420,width=32,height=24,framerate=0/1";
    let frame = |ms: u64| {
        let mut b = solid_i420(32, 24, [50, 128, 128], ms, 0);
        b.get_mut().unwrap().set_duration(gst::ClockTime::NONE);
        b
    };
    let run = run_buffers(
        caps,
        "",
        (0..4).map(|i| frame(100 * i)).collect(),
        (0..4).map(|i| frame(100 * i + 3)).collect(),
    );
    run.expect_ok();
    assert_eq!(run.summary().frames, 0);
    assert!(
        run.warnings
            .iter()
            .any(|w| w.contains("No frame pair was compared")
                && w.contains("duration unknown")
                && w.contains("tolerance 0:00:00.001000000")),
        "{:?}",
        run.warnings
    );
}

#[test]
fn removing_ref_sink_ends_the_run_with_an_error_naming_it() {
    let c = i420_caps(32, 24, 25);
    let p = launch(&format!(
        "appsrc name=ref format=time caps=\"{c}\" ! m.ref_sink \
         videotestsrc num-buffers=50 ! {c} ! m.dist_sink \
         gpumetrics name=m backend=cpu ! fakesink"
    ));
    let m = p.by_name("m").unwrap();
    let bus = p.bus().unwrap();
    p.set_state(gst::State::Playing).unwrap();
    let src = appsrc(&p, "ref");
    src.push_buffer(solid_i420(32, 24, [50, 128, 128], 0, 40))
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    m.remove_pad(&m.static_pad("ref_sink").unwrap()).unwrap();
    let mut seen = Seen::default();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline && !seen.eos {
        collect(&bus, Duration::from_millis(500), &mut seen);
        if seen
            .errors
            .iter()
            .any(|e| e.contains("ref_sink was removed"))
        {
            break;
        }
    }
    p.set_state(gst::State::Null).unwrap();
    assert!(
        seen.errors
            .iter()
            .any(|e| e.contains("ref_sink was removed")),
        "{seen:?}"
    );
}
