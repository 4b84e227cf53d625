// SPDX-License-Identifier: MPL-2.0
//! A monitor that runs for months (issue 43): error text stays bounded whatever a property
//! holds, an ephemeral Prometheus port is reported, a failed stats-file write leaves whole
//! records, the element says what cannot work (alert rules the caps cannot feed, decode
//! errors upstream), and restarts leak no thread, fd or memory.

mod common;

use std::time::Duration;

use common::*;
use gst::prelude::*;

/// A value of 1 MiB characters, as an operator's script might paste by mistake.
fn huge(unit: &str) -> String {
    let mut s = unit.repeat((1 << 20) / unit.len() + 1);
    s.truncate(1 << 20);
    s
}

/// The first element error of a pipeline that is set to PAUSED (its start fails), or when
/// the start succeeds, of the run until `timeout`.
fn error_of(desc: &str, timeout: Duration) -> String {
    let run = run_with(desc, timeout, |_| {});
    let (message, debug) = run.error.expect("an element error");
    assert!(
        debug.len() < 4096,
        "the debug text is bounded too: {} bytes",
        debug.len()
    );
    message
}

/// An error quoting a 1 MiB value shows its start and its length, in a few hundred bytes.
#[track_caller]
fn assert_bounded(message: &str, starts: &str) {
    assert!(
        message.len() < 1024,
        "{} bytes: {}...",
        message.len(),
        &message[..300]
    );
    assert!(message.contains("...(1048576 characters)"), "{message}");
    assert!(message.contains(starts), "{message}");
}

#[test]
fn errors_quote_a_huge_property_value_cut_with_its_length() {
    init();
    let sources = "videotestsrc num-buffers=3 ! video/x-raw,format=I420,width=64,height=48 \
                   ! tee name=t t. ! queue ! m.ref_sink t. ! queue ! m.dist_sink";
    let cases: Vec<(&str, String, &str)> = vec![
        ("alerts", huge("psnr-y<"), "rule 'psnr-y<psnr-y<"),
        ("alerts", huge("x"), "rule 'xxxx"),
        ("roi", huge("1,"), "roi \"1,1,1,"),
        ("prometheus-address", huge("9"), "prometheus-address '9999"),
        ("vmaf-model", format!("/{}", &huge("m")[1..]), "/mmmm"),
    ];
    for (property, value, starts) in cases {
        let metrics = if property == "vmaf-model" {
            "metrics=vmaf"
        } else {
            ""
        };
        // Set through the API: gst-launch syntax would need the value quoted.
        let desc = format!("{sources} gpumetrics name=m backend=cpu {metrics} ! fakesink");
        let run = run_prepared(
            &desc,
            Duration::from_secs(30),
            |p| p.by_name("m").unwrap().set_property(property, &value),
            |_| {},
        );
        let (message, debug) = run.error.unwrap_or_else(|| panic!("{property}: no error"));
        assert!(debug.len() < 4096, "{property}: debug of {}", debug.len());
        assert_bounded(&message, starts);
    }
    // A short value is quoted whole, as before.
    let e = error_of(
        &format!("{sources} gpumetrics name=m backend=cpu alerts=psnr-y ! fakesink"),
        Duration::from_secs(30),
    );
    assert!(e.contains("rule 'psnr-y'"), "{e}");
}

#[test]
fn a_refused_change_while_playing_quotes_the_value_bounded() {
    init();
    let p = gst::parse::launch(
        "videotestsrc is-live=true ! video/x-raw,format=I420,width=64,height=48 ! tee name=t \
         t. ! queue ! m.ref_sink t. ! queue ! m.dist_sink \
         gpumetrics name=m backend=cpu ! fakesink",
    )
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    let bus = p.bus().unwrap();
    p.set_state(gst::State::Playing).unwrap();
    p.state(gst::ClockTime::from_seconds(10)).0.unwrap();
    let m = p.by_name("m").unwrap();
    m.set_property("roi", huge("7"));
    let warning = std::iter::from_fn(|| bus.timed_pop(gst::ClockTime::from_seconds(5)))
        .find_map(|msg| match msg.view() {
            gst::MessageView::Warning(w) => Some(w.error().to_string()),
            _ => None,
        })
        .expect("a warning");
    p.set_state(gst::State::Null).unwrap();
    assert!(warning.contains("'roi'"), "{warning}");
    assert_bounded(&warning, "\"7777");
}

#[test]
fn port_zero_is_bound_and_reported_in_prometheus_bound_address() {
    init();
    let p = gst::parse::launch(
        "videotestsrc is-live=true ! video/x-raw,format=I420,width=64,height=48 ! tee name=t \
         t. ! queue ! m.ref_sink t. ! queue ! m.dist_sink \
         gpumetrics name=m backend=cpu prometheus-address=127.0.0.1:0 ! fakesink",
    )
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    let m = p.by_name("m").unwrap();
    assert_eq!(
        m.property::<Option<String>>("prometheus-bound-address")
            .as_deref(),
        Some("")
    );
    p.set_state(gst::State::Playing).unwrap();
    p.state(gst::ClockTime::from_seconds(10)).0.unwrap();
    let bound = m
        .property::<Option<String>>("prometheus-bound-address")
        .unwrap();
    let addr: std::net::SocketAddr = bound.parse().expect("host:port");
    assert_eq!(addr.ip().to_string(), "127.0.0.1");
    assert_ne!(addr.port(), 0, "the port the system chose");
    assert!(
        scrape(&bound).contains("gpumetrics_pairs_total{element=\"m\"}"),
        "the endpoint at {bound} serves the element's series"
    );
    p.set_state(gst::State::Null).unwrap();
    assert_eq!(
        m.property::<Option<String>>("prometheus-bound-address")
            .as_deref(),
        Some("")
    );
    assert!(
        std::net::TcpStream::connect(&bound).is_err(),
        "closed at stop"
    );
}

/// A disk that fills up during the run: the stats file, limited to 4 KiB by the child's
/// RLIMIT_FSIZE (`ulimit -f`, so a write that crosses the limit is short and the next one
/// fails), ends at the last complete record, in every layout, and the element errors naming
/// the file. The child is this test binary, re-run under the limit with
/// GPUMETRICS_FULL_CHILD set.
#[test]
fn a_full_disk_leaves_the_stats_file_ending_with_a_whole_record() {
    const CHILD: &str = "GPUMETRICS_FULL_CHILD";
    if let Ok(spec) = std::env::var(CHILD) {
        let (format, path) = spec.split_once(':').unwrap();
        let run = run(&format!(
            "videotestsrc num-buffers=300 ! {c} ! tee name=t t. ! queue ! m.ref_sink \
             t. ! queue ! m.dist_sink gpumetrics name=m backend=cpu stats-file={path} \
             stats-format={format} metrics=psnr+ssim window=200000000 ! fakesink",
            c = i420_caps(64, 48, 25)
        ));
        let (message, _) = run.error.expect("the write fails");
        assert!(
            message.contains("to stats-file") && message.contains("failed"),
            "{message}"
        );
        return;
    }
    for format in ["jsonl", "csv", "json"] {
        let path = temp_path(&format!("full.{format}"));
        let exe = std::env::current_exe().unwrap();
        // SIGXFSZ ignored (it stays ignored across exec): the write fails with EFBIG.
        let out = std::process::Command::new("bash")
            .args([
                "-c",
                "trap '' XFSZ; ulimit -f 4; exec \"$0\" \"$@\"",
                exe.to_str().unwrap(),
                "a_full_disk_leaves_the_stats_file_ending_with_a_whole_record",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, format!("{format}:{}", path.display()))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{format}: the child: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).ok();
        assert!(text.len() > 1000, "{format}: records before the limit");
        assert!(text.len() <= 4096, "{format}: {} bytes", text.len());
        assert!(
            text.ends_with('\n'),
            "{format}: a partial record at the end: {:?}",
            &text[text.len().saturating_sub(200)..]
        );
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            match format {
                "csv" => assert_eq!(
                    line.split(',').count(),
                    lines[0].split(',').count(),
                    "{line}"
                ),
                "json" if i == 0 => assert_eq!(*line, "{\"frames\":["),
                _ => {
                    serde_json::from_str::<serde_json::Value>(line.trim_start_matches(','))
                        .unwrap_or_else(|e| panic!("{format} line {i} {line:?}: {e}"));
                }
            }
        }
    }
}

/// Issue 43, finding 2: a live input (`stalling`: `ref` or `dist`) stalls 1.2 s after 1 s,
/// then delivers its backlog at once and goes on. Runs the two live inputs (25 fps, 3 s) with `props` and
/// returns the run, the stats file's records and, with `prometheus-address`, a scrape of
/// the endpoint taken after the backlog (before the stop).
fn stalled_run(props: &str, stalling: &'static str) -> (Run, Vec<serde_json::Value>, String) {
    const FRAMES: u64 = 75;
    let c = i420_caps(32, 24, 25);
    let path = temp_path(&format!("stall-{stalling}-{}.jsonl", props.len()));
    let desc = format!(
        "appsrc name=ref is-live=true format=time block=false caps=\"{c}\" ! m.ref_sink \
         appsrc name=dist is-live=true format=time block=false caps=\"{c}\" ! m.dist_sink \
         gpumetrics name=m backend=cpu metrics=psnr latency=300000000 window=500000000 \
         stats-file={} {props} ! appsink name=out",
        path.display()
    );
    let scraped = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let scraped_by_feeder = scraped.clone();
    let run = run_with(&desc, Duration::from_secs(30), move |p| {
        let src = |name: &str| {
            p.by_name(name)
                .unwrap()
                .downcast::<gst_app::AppSrc>()
                .unwrap()
        };
        let (r, d) = (src("ref"), src("dist"));
        let (steady, stalled) = if stalling == "dist" {
            (&r, &d)
        } else {
            (&d, &r)
        };
        let frame = |i: u64| solid_i420(32, 24, [(16 + i) as u8, 128, 128], 40 * i, 40);
        let start = std::time::Instant::now();
        let mut stalled_next = 0;
        for i in 0..FRAMES {
            let due = Duration::from_millis(40 * i);
            if let Some(wait) = due.checked_sub(start.elapsed()) {
                std::thread::sleep(wait);
            }
            let _ = steady.push_buffer(frame(i));
            // The stalling input delivers nothing from 1 s to 2.2 s, then its backlog.
            if !(25..55).contains(&i) {
                while stalled_next <= i {
                    let _ = stalled.push_buffer(frame(stalled_next));
                    stalled_next += 1;
                }
            }
        }
        // The endpoint while the run goes on (its series leave at the stop), once the
        // backlog was taken.
        std::thread::sleep(Duration::from_millis(600));
        let address: String = p.by_name("m").unwrap().property("prometheus-bound-address");
        if !address.is_empty() {
            *scraped_by_feeder.lock().unwrap() = scrape(&address);
        }
        let _ = r.end_of_stream();
        let _ = d.end_of_stream();
    });
    let scraped = scraped.lock().unwrap().clone();
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    std::fs::remove_file(&path).ok();
    let records = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    (run, records, scraped)
}

/// The windows of a stats file: posted once each, starts strictly increasing.
#[track_caller]
fn assert_windows_final(records: &[serde_json::Value]) -> u64 {
    let windows: Vec<&serde_json::Value> =
        records.iter().filter(|r| r["type"] == "window").collect();
    assert!(windows.len() >= 6, "{} windows", windows.len());
    let starts: Vec<u64> = windows
        .iter()
        .map(|w| w["start"].as_u64().unwrap())
        .collect();
    assert!(
        starts.windows(2).all(|p| p[0] < p[1]),
        "window starts go back or repeat: {starts:?}"
    );
    windows.iter().map(|w| w["frames"].as_u64().unwrap()).sum()
}

#[test]
fn a_live_stall_is_an_event_its_pairs_are_measured_within_the_budget_and_windows_are_final() {
    let (run, records, scraped) = stalled_run(
        "stall-budget=3000000000 prometheus-address=127.0.0.1:0",
        "dist",
    );
    run.expect_ok();
    let s = run.summary();
    // Every pair that both inputs delivered is measured, none is unmatched.
    assert_eq!(
        (s.frames, s.unmatched_ref, s.unmatched_dist),
        (75, 0, 0),
        "{s:?}"
    );
    assert_eq!(assert_windows_final(&records), 75);
    // The stall is said: its start at the first reference frame left without a partner
    // (1 s), its end with its length; on the bus, in the stats file and in the summary.
    let stalls: Vec<_> = run.events.iter().filter(|e| e.event == "stall").collect();
    let start = stalls
        .iter()
        .find(|e| e.state == "start" && e.input == "dist" && e.running_time == 1_000_000_000)
        .unwrap_or_else(|| panic!("no stall of dist at 1 s: {stalls:?}"));
    assert!(start.duration.is_none());
    let end = stalls
        .iter()
        .find(|e| e.state == "end" && e.input == "dist")
        .unwrap_or_else(|| panic!("the stall does not end: {stalls:?}"));
    let length = end.duration.unwrap();
    assert!(
        (500_000_000..=2_000_000_000).contains(&length),
        "a stall of {length} ns"
    );
    for input in ["ref", "dist"] {
        let n = |state: &str| {
            stalls
                .iter()
                .filter(|e| e.input == input && e.state == state)
                .count()
        };
        assert_eq!(n("start"), n("end"), "{input}: every stall ends");
    }
    let in_file = records
        .iter()
        .filter(|r| r["type"] == "event" && r["event"] == "stall")
        .count();
    assert_eq!(in_file, stalls.len());
    let counted = s
        .events
        .iter()
        .find(|c| c.event == "stall" && c.input == "dist")
        .unwrap_or_else(|| panic!("the summary counts no stall: {:?}", s.events));
    assert!(
        counted.intervals >= 1 && counted.seconds > 0.4,
        "{counted:?}"
    );
    // Prometheus counts it like black and freeze.
    let series = "gpumetrics_events_total{element=\"m\",event=\"stall\",input=\"dist\"} ";
    let stalls_counted = scraped
        .lines()
        .find_map(|l| l.strip_prefix(series))
        .and_then(|n| n.trim().parse::<u64>().ok());
    assert!(stalls_counted.is_some_and(|n| n >= 1), "{scraped}");
}

#[test]
fn past_the_stall_budget_frames_are_unmatched_once_and_windows_stay_final() {
    let (run, records, _) = stalled_run("stall-budget=0", "dist");
    run.expect_ok();
    let s = run.summary();
    // Given up at once: the reference frames of the stall are unmatched, and the
    // distorted backlog that arrives after them too; each frame counted exactly once.
    assert!(s.unmatched_ref >= 10 && s.unmatched_dist >= 10, "{s:?}");
    assert_eq!(s.frames + s.unmatched_ref, 75, "{s:?}");
    assert_eq!(s.frames + s.unmatched_dist, 75, "{s:?}");
    assert_eq!(assert_windows_final(&records), s.frames);
    let windows = records.iter().filter(|r| r["type"] == "window");
    let unmatched: u64 = windows
        .map(|w| w["unmatched-ref"].as_u64().unwrap() + w["unmatched-dist"].as_u64().unwrap())
        .sum();
    assert_eq!(unmatched, s.unmatched_ref + s.unmatched_dist);
    assert!(
        run.events
            .iter()
            .any(|e| e.event == "stall" && e.input == "dist" && e.state == "start"),
        "{:?}",
        run.events
    );
}

/// Issue 43, finding 8: an alert rule on a field the inputs never give was silently never
/// evaluated.
#[test]
fn an_alert_rule_on_a_field_the_caps_cannot_give_is_a_warning_naming_it() {
    let run = run(
        "videotestsrc num-buffers=5 ! video/x-raw,format=GRAY8,width=64,height=48 ! tee name=t \
         t. ! queue ! m.ref_sink t. ! queue ! m.dist_sink \
         gpumetrics name=m backend=cpu metrics=psnr alerts=psnr-r<30,psnr-y<30 ! fakesink",
    );
    run.expect_ok();
    let said: Vec<&String> = run
        .warnings
        .iter()
        .filter(|w| w.contains("never evaluated"))
        .collect();
    assert_eq!(said.len(), 1, "{:?}", run.warnings);
    assert!(
        said[0].contains("'psnr-r<30'")
            && said[0].contains("no psnr-r")
            && said[0].contains("available: psnr-y, mse-y"),
        "{}",
        said[0]
    );
}

/// Issue 43, finding 8: frames decoded with errors were scored with no word about it.
/// The decoders here post warnings (as a decoder that tolerates an error does) and flag
/// frames corrupted from pad probes in their streaming threads.
#[test]
fn decoder_warnings_and_corrupted_frames_are_counted_per_input() {
    use std::sync::atomic::{AtomicU64, Ordering};
    let c = i420_caps(64, 48, 25);
    let desc = format!(
        "videotestsrc num-buffers=10 ! {c} ! jpegenc ! jpegdec name=rdec ! videoconvert ! {c} \
         ! m.ref_sink \
         videotestsrc num-buffers=10 ! {c} ! jpegenc ! ( jpegdec name=ddec ) ! \
         videoconvert name=dconv ! {c} ! m.dist_sink \
         videotestsrc num-buffers=3 ! jpegenc ! jpegdec name=other ! fakesink \
         gpumetrics name=m backend=cpu ! fakesink"
    );
    // `(decoder, buffers at which it posts a warning, buffers it flags corrupted)`.
    let plan: [(&str, &[u64], &[u64]); 4] = [
        ("rdec", &[3], &[]),
        ("ddec", &[2, 5], &[1, 4, 7]),
        ("other", &[0, 1], &[]),
        // Not a decoder: its warnings are not the decoder's.
        ("dconv", &[1], &[]),
    ];
    let run = run_prepared(
        &desc,
        Duration::from_secs(30),
        move |p| {
            for (name, warn_at, corrupt_at) in plan {
                let element = p.by_name(name).unwrap();
                let n = AtomicU64::new(0);
                element.static_pad("src").unwrap().add_probe(
                    gst::PadProbeType::BUFFER,
                    move |pad, info| {
                        let i = n.fetch_add(1, Ordering::Relaxed);
                        let e = pad.parent_element().unwrap();
                        if warn_at.contains(&i) {
                            let _ = e.post_message(
                                gst::message::Warning::builder(
                                    gst::StreamError::Decode,
                                    "could not decode a slice",
                                )
                                .src(&e)
                                .build(),
                            );
                        }
                        if corrupt_at.contains(&i)
                            && let Some(gst::PadProbeData::Buffer(b)) = &mut info.data
                        {
                            b.make_mut().set_flags(gst::BufferFlags::CORRUPTED);
                        }
                        gst::PadProbeReturn::Ok
                    },
                );
            }
        },
        |_| {},
    );
    run.expect_ok();
    let s = run.summary();
    assert_eq!(s.frames, 10);
    assert_eq!(s.decode.warnings, [1, 2], "{:?}", s.decode);
    assert_eq!(s.decode.corrupted, [0, 3], "{:?}", s.decode);
}

#[test]
fn a_stalled_reference_holds_the_distorted_frames_and_lets_them_all_leave() {
    // The other direction: the distorted frames wait (not pushed) while the reference
    // stalls, are paired when its backlog comes, and all leave `src`, in order.
    let (run, records, _) = stalled_run("stall-budget=3000000000", "ref");
    run.expect_ok();
    let s = run.summary();
    assert_eq!(
        (s.frames, s.unmatched_ref, s.unmatched_dist),
        (75, 0, 0),
        "{s:?}"
    );
    assert_eq!(assert_windows_final(&records), 75);
    let pts: Vec<u64> = run
        .out
        .iter()
        .map(|b| b.pts().unwrap().mseconds())
        .collect();
    assert_eq!(pts, (0..75).map(|i| 40 * i).collect::<Vec<_>>());
    assert!(
        run.events.iter().any(|e| e.event == "stall"
            && e.input == "ref"
            && e.state == "start"
            && e.running_time == 1_000_000_000),
        "{:?}",
        run.events
    );
}
