// SPDX-License-Identifier: MPL-2.0
//! `align=auto` on live streams: one source sent twice over UDP (MPEG-TS on loopback), the
//! distorted copy through a lower-bitrate encoder, 1.3 s later and with another PTS base;
//! later the distorted sender drops 10 frames and repeats one 5 times (everything after it
//! 5 frames later). Each source frame carries its index, burnt into its top rows, so the
//! test knows which reference frame each received distorted frame shows: the element must
//! lock within 3 s, report the offset within a frame, measure only true pairs (their
//! PSNR/SSIM/VMAF equal those of the same frames lined up here by their index, measured
//! by an element in `pairing=sequence`), lose the lock at the repeat and find it again; its
//! stats file carries the same alignment records and its endpoint the lock.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use gst::prelude::*;
use gst_video::prelude::*;
use gstgpumetrics::message::{AlignRecord, FrameScores, Summary};

const W: u32 = 320;
const H: u32 = 180;
const FPS: u64 = 25;
const FRAME: u64 = 1_000_000_000 / FPS;
const DELAY: u64 = 1_300_000_000;
/// Bits of the burnt-in index, each a `BLOCK`×`BLOCK` square of the top rows.
const BITS: usize = 12;
const BLOCK: usize = 16;
/// Distorted sender: frames `DROP..DROP + 10` dropped, frame `REPEAT - 1` shown 5 more
/// times (what follows 5 frames later), then the run ends at `END`.
const DROP: u64 = 75;
const REPEAT: u64 = 150;
const END: u64 = 240;

fn info() -> gst_video::VideoInfo {
    gst_video::VideoInfo::builder(gst_video::VideoFormat::I420, W, H)
        .fps(gst::Fraction::new(FPS as i32, 1))
        .build()
        .unwrap()
}

/// Burns `index` into the top rows of an I420 frame (white square: bit set).
fn stamp(buffer: &mut gst::BufferRef, index: u64) {
    let info = info();
    let mut frame = gst_video::VideoFrameRef::from_buffer_ref_writable(buffer, &info).unwrap();
    let stride = frame.plane_stride()[0] as usize;
    let luma = frame.plane_data_mut(0).unwrap();
    for bit in 0..BITS {
        let v = if index >> bit & 1 == 1 { 235 } else { 16 };
        for y in 0..BLOCK {
            let row = y * stride + bit * BLOCK;
            luma[row..row + BLOCK].fill(v);
        }
    }
}

/// Reads the index back from a decoded frame (the middle of each square).
fn read_stamp(buffer: &gst::BufferRef, info: &gst_video::VideoInfo) -> u64 {
    let frame = gst_video::VideoFrameRef::from_buffer_ref_readable(buffer, info).unwrap();
    let stride = frame.plane_stride()[0] as usize;
    let luma = frame.plane_data(0).unwrap();
    let mut index = 0;
    for bit in 0..BITS {
        let mut sum = 0u32;
        for y in 4..BLOCK - 4 {
            for x in 4..BLOCK - 4 {
                sum += luma[y * stride + bit * BLOCK + x] as u32;
            }
        }
        if sum / ((BLOCK - 8) * (BLOCK - 8)) as u32 > 125 {
            index |= 1 << bit;
        }
    }
    index
}

/// The live sender: frames stamped with their index; the distorted branch with its
/// timestamps 10 s ahead, the drop and the repeat (its packets are delayed by [`relay`]).
/// Returns the pipeline and the distorted branch's frame count.
fn sender(reference_port: u16, distorted_port: u16) -> (gst::Pipeline, Arc<AtomicU64>) {
    let caps = format!("video/x-raw,format=I420,width={W},height={H},framerate={FPS}/1");
    let launch = format!(
        "videotestsrc is-live=true pattern=ball ! {caps} ! identity name=stamp ! tee name=t \
         t. ! queue ! x264enc tune=zerolatency speed-preset=ultrafast bitrate=1500 \
            key-int-max={FPS} ! mpegtsmux ! udpsink host=127.0.0.1 port={reference_port} \
            sync=false \
         t. ! queue ! identity name=disrupt ! x264enc tune=zerolatency \
            speed-preset=ultrafast bitrate=150 key-int-max={FPS} ! mpegtsmux ! \
            udpsink host=127.0.0.1 port={distorted_port} sync=false"
    );
    let pipeline = gst::parse::launch(&launch)
        .expect("the sender runs (x264enc, mpegtsmux: gstreamer1.0-plugins-ugly/-bad)")
        .downcast::<gst::Pipeline>()
        .unwrap();
    let count = AtomicU64::new(0);
    pipeline
        .by_name("stamp")
        .unwrap()
        .static_pad("src")
        .unwrap()
        .add_probe(gst::PadProbeType::BUFFER, move |_, info| {
            if let Some(gst::PadProbeData::Buffer(b)) = &mut info.data {
                stamp(b.make_mut(), count.fetch_add(1, Ordering::SeqCst));
            }
            gst::PadProbeReturn::Ok
        });
    let sent = Arc::new(AtomicU64::new(0));
    let n = sent.clone();
    let history: Mutex<Vec<gst::Buffer>> = Mutex::new(Vec::new());
    pipeline
        .by_name("disrupt")
        .unwrap()
        .static_pad("src")
        .unwrap()
        .add_probe(gst::PadProbeType::BUFFER, move |_, info| {
            let i = n.fetch_add(1, Ordering::SeqCst);
            let Some(gst::PadProbeData::Buffer(b)) = &mut info.data else {
                return gst::PadProbeReturn::Ok;
            };
            let mut history = history.lock().unwrap();
            history.push(b.clone());
            if history.len() > 6 {
                history.remove(0);
            }
            if (DROP..DROP + 10).contains(&i) {
                return gst::PadProbeReturn::Drop;
            }
            if i >= REPEAT {
                // Show frame max(REPEAT - 1, i - 5): REPEAT - 1 five more times, then
                // everything 5 frames late.
                let back = (i - (REPEAT - 1)).min(5) as usize;
                let shown = history[history.len() - 1 - back].copy();
                let mut shown = shown;
                {
                    let s = shown.make_mut();
                    s.set_pts(b.pts());
                    s.set_dts(b.dts());
                    s.set_duration(b.duration());
                }
                *b = shown;
            }
            // Another PTS base than the reference's.
            let b = b.make_mut();
            let ahead = gst::ClockTime::from_seconds(10);
            b.set_pts(b.pts().map(|t| t + ahead));
            b.set_dts(b.dts().map(|t| t + ahead));
            gst::PadProbeReturn::Ok
        });
    (pipeline, sent)
}

/// The network path of the distorted copy: each UDP packet from `from` is sent on to
/// `to` [`DELAY`] later. Returns its port and the flag that stops it.
fn relay(to: u16) -> (u16, Arc<std::sync::atomic::AtomicBool>) {
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(Duration::from_millis(5)))
        .unwrap();
    let port = socket.local_addr().unwrap().port();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let done = stop.clone();
    std::thread::spawn(move || {
        let out = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut held: std::collections::VecDeque<(Instant, Vec<u8>)> = Default::default();
        let mut buf = [0u8; 65536];
        while !done.load(Ordering::SeqCst) {
            if let Ok(n) = socket.recv(&mut buf) {
                held.push_back((
                    Instant::now() + Duration::from_nanos(DELAY),
                    buf[..n].to_vec(),
                ));
            }
            while held.front().is_some_and(|(due, _)| *due <= Instant::now()) {
                let (_, data) = held.pop_front().unwrap();
                let _ = out.send_to(&data, ("127.0.0.1", to));
            }
        }
    });
    (port, stop)
}

/// A decoded frame as it reached the element: running time, index, the buffer.
#[derive(Clone)]
struct Seen {
    running_time: u64,
    index: u64,
    buffer: gst::Buffer,
}

/// The frames an appsink received, as they came.
type Captured = Arc<Mutex<Vec<Seen>>>;

fn capture(pipeline: &gst::Pipeline, name: &str) -> (Captured, Arc<Mutex<Option<gst::Caps>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let caps = Arc::new(Mutex::new(None));
    let (s, c) = (seen.clone(), caps.clone());
    let sink = pipeline
        .by_name(name)
        .unwrap()
        .downcast::<gst_app::AppSink>()
        .unwrap();
    sink.set_callbacks(
        gst_app::AppSinkCallbacks::builder()
            .new_sample(move |sink| {
                let sample = sink.pull_sample().map_err(|_| gst::FlowError::Eos)?;
                let buffer = sample.buffer_owned().unwrap();
                let sample_caps = sample.caps_owned().unwrap();
                let info = gst_video::VideoInfo::from_caps(&sample_caps).unwrap();
                let segment = sample
                    .segment()
                    .unwrap()
                    .downcast_ref::<gst::ClockTime>()
                    .unwrap()
                    .clone();
                let running_time = segment
                    .to_running_time(buffer.pts().unwrap())
                    .unwrap()
                    .nseconds();
                let index = read_stamp(&buffer, &info);
                *c.lock().unwrap() = Some(sample_caps);
                s.lock().unwrap().push(Seen {
                    running_time,
                    index,
                    buffer,
                });
                Ok(gst::FlowSuccess::Ok)
            })
            .build(),
    );
    (seen, caps)
}

#[derive(Default)]
struct Received {
    frames: Vec<FrameScores>,
    align: Vec<AlignRecord>,
    summary: Option<Summary>,
    error: Option<String>,
}

/// The decoder of the received streams: `avdec_h264` (system memory), or
/// `$GPUMETRICS_TEST_DECODER` (`nvh264dec` on a GPU machine: CUDA memory into the element,
/// whose thumbnails are then made on the GPU).
fn decoder() -> String {
    std::env::var("GPUMETRICS_TEST_DECODER").unwrap_or_else(|_| "avdec_h264".into())
}

#[test]
fn two_live_streams_are_aligned_by_content_and_realigned_after_a_repeat() {
    init();
    let (rport, dport) = (free_port(), free_port());
    let decoder = decoder();
    // The frames captured for lining up by hand come to the host.
    let download = if decoder.starts_with("nv") {
        "cudadownload !"
    } else {
        ""
    };
    let source = |port: u16, tee: &str| {
        format!(
            "udpsrc name={tee}src port={port} caps=\"video/mpegts,systemstream=(boolean)true,packetsize=(int)188\" \
             ! tsdemux ! h264parse ! {decoder} ! tee name={tee} \
             {tee}. ! queue max-size-time=0 max-size-buffers=0 max-size-bytes=0 ! m.{tee}_sink \
             {tee}. ! queue max-size-time=0 max-size-buffers=0 max-size-bytes=0 ! {download} \
             appsink name={tee}cap sync=false"
        )
    };
    let stats = temp_path("align.jsonl");
    let launch = format!(
        "{} {} gpumetrics name=m backend={} align=auto metrics=psnr+ssim+vmaf \
         stats-file={} prometheus-address=127.0.0.1:0 ! fakesink sync=false",
        source(rport, "ref"),
        source(dport, "dist"),
        test_backend(),
        stats.display()
    );
    let receiver = gst::parse::launch(&launch)
        .unwrap()
        .downcast::<gst::Pipeline>()
        .unwrap();
    let (refs, ref_caps) = capture(&receiver, "refcap");
    let (dists, _) = capture(&receiver, "distcap");
    let received = Arc::new(Mutex::new(Received::default()));
    let bus = receiver.bus().unwrap();
    receiver.set_state(gst::State::Playing).unwrap();

    let (relayed, relay_stop) = relay(dport);
    let (sender, sent) = sender(rport, relayed);
    sender.set_state(gst::State::Playing).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let endpoint: String = receiver
        .by_name("m")
        .unwrap()
        .property("prometheus-bound-address");
    let mut scraped = String::new();
    while sent.load(Ordering::SeqCst) < END && Instant::now() < deadline {
        collect(&bus, &received, Duration::from_millis(100));
        // While locked, before the repeat: the endpoint says so.
        if scraped.is_empty() && sent.load(Ordering::SeqCst) > DROP {
            scraped = scrape(&endpoint);
        }
    }
    sender.set_state(gst::State::Null).unwrap();
    // Let the last frames arrive, then end both inputs.
    collect(&bus, &received, Duration::from_nanos(DELAY + 1_000_000_000));
    relay_stop.store(true, Ordering::SeqCst);
    for name in ["refsrc", "distsrc"] {
        let src = receiver.by_name(name).unwrap();
        src.send_event(gst::event::Eos::new());
    }
    let end = Instant::now() + Duration::from_secs(60);
    while received.lock().unwrap().summary.is_none()
        && received.lock().unwrap().error.is_none()
        && Instant::now() < end
    {
        collect(&bus, &received, Duration::from_millis(100));
    }
    receiver.set_state(gst::State::Null).unwrap();
    let received = received.lock().unwrap();
    assert!(received.error.is_none(), "{:?}", received.error);
    let summary = received.summary.as_ref().expect("the summary");
    assert!(sent.load(Ordering::SeqCst) >= END, "the sender did not run");

    let refs = refs.lock().unwrap().clone();
    let dists = dists.lock().unwrap().clone();
    let caps = ref_caps.lock().unwrap().clone().unwrap();
    check(&received, summary, &refs, &dists, &caps);

    // The endpoint while locked, and the stats file: the same alignment records as the
    // messages, the summary's count of frames before the lock.
    for series in [
        "gpumetrics_align_locked{element=\"m\"} 1",
        "gpumetrics_align_relocks_total{element=\"m\"} 0",
    ] {
        assert!(scraped.lines().any(|l| l == series), "{series}:\n{scraped}");
    }
    let offset = scraped
        .lines()
        .find_map(|l| l.strip_prefix("gpumetrics_align_offset_seconds{element=\"m\"} "))
        .and_then(|v| v.parse::<f64>().ok())
        .expect("the offset gauge");
    assert!((offset - DELAY as f64 / 1e9).abs() < 0.1, "{offset}");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&stats)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let in_file: Vec<(String, Option<i64>)> = lines
        .iter()
        .filter(|v| v["type"] == "align")
        .map(|v| {
            (
                v["state"].as_str().unwrap().to_string(),
                v["offset"].as_i64(),
            )
        })
        .collect();
    let in_messages: Vec<(String, Option<i64>)> = received
        .align
        .iter()
        .map(|a| (a.state.clone(), a.offset))
        .collect();
    assert_eq!(in_file, in_messages);
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "summary");
    assert_eq!(last["unaligned"].as_u64(), Some(summary.unaligned));
    let _ = std::fs::remove_file(&stats);
}

/// Takes the element's messages for `wait`.
fn collect(bus: &gst::Bus, received: &Mutex<Received>, wait: Duration) {
    let until = Instant::now() + wait;
    while let Some(msg) = bus.timed_pop(gst::ClockTime::from_nseconds(
        until.saturating_duration_since(Instant::now()).as_nanos() as u64,
    )) {
        let mut r = received.lock().unwrap();
        if let Some(f) = FrameScores::from_message(&msg) {
            r.frames.push(f);
        } else if let Some(a) = AlignRecord::from_message(&msg) {
            r.align.push(a);
        } else if let Some(s) = Summary::from_message(&msg) {
            r.summary = Some(s);
        } else if let gst::MessageView::Error(e) = msg.view() {
            r.error = Some(format!("{} ({:?})", e.error(), e.debug()));
        }
        if Instant::now() >= until {
            break;
        }
    }
}

/// The true offset (distorted minus reference running time) of the distorted frames
/// received in `times`: the median over the frames whose index both inputs showed.
fn true_offset(refs: &HashMap<u64, u64>, dists: &[&Seen]) -> i64 {
    let mut d: Vec<i64> = dists
        .iter()
        .filter_map(|s| Some(s.running_time as i64 - *refs.get(&s.index)? as i64))
        .collect();
    assert!(!d.is_empty());
    d.sort();
    d[d.len() / 2]
}

fn check(received: &Received, summary: &Summary, refs: &[Seen], dists: &[Seen], caps: &gst::Caps) {
    let by_index: HashMap<u64, u64> = refs.iter().map(|s| (s.index, s.running_time)).collect();
    assert_eq!(by_index.len(), refs.len(), "each reference frame once");
    let locks: Vec<&AlignRecord> = received
        .align
        .iter()
        .filter(|a| a.state != "searching")
        .collect();
    eprintln!("align records: {locks:#?}");
    // The first lock: within 3 s of the distorted frames flowing, at the delay.
    let first = locks.first().expect("a lock");
    assert_eq!(first.state, "locked");
    let start = dists[0].running_time;
    assert!(
        first.running_time - start <= 3_000_000_000,
        "locked {} ns after the distorted frames started",
        first.running_time - start
    );
    let before: Vec<&Seen> = dists.iter().filter(|s| s.index < DROP).collect();
    let truth = true_offset(&by_index, &before);
    assert!(
        (truth - DELAY as i64).abs() <= 2 * FRAME as i64,
        "the sender's delay is {truth} ns"
    );
    let offset = first.offset.unwrap();
    assert!(
        (offset - truth).abs() <= FRAME as i64,
        "offset {offset} ns, true offset {truth} ns"
    );
    assert_eq!(
        first.offset_frames,
        Some((offset as f64 / FRAME as f64).round() as i64)
    );
    // The repeat: lost, then locked again 5 frames later.
    let lost = locks
        .iter()
        .position(|a| a.state == "lost")
        .expect("the repeat loses the lock");
    let relock = locks[lost..]
        .iter()
        .find(|a| a.state == "locked")
        .expect("a lock after the loss");
    assert!(relock.relocks >= 1);
    let after: Vec<&Seen> = dists.iter().filter(|s| s.index > REPEAT + 10).collect();
    let truth_after = true_offset(&by_index, &after);
    assert!(
        (truth_after - truth - 5 * FRAME as i64).abs() <= FRAME as i64 / 2,
        "the repeat moved the content by {} ns",
        truth_after - truth
    );
    assert!(
        (relock.offset.unwrap() - truth_after).abs() <= FRAME as i64,
        "re-locked at {:?}, true offset {truth_after}",
        relock.offset
    );

    // Every measured pair: its distorted frame and the reference frame of the same index.
    let dist_at: HashMap<u64, &Seen> = dists.iter().map(|s| (s.running_time, s)).collect();
    let ref_of: HashMap<u64, &Seen> = refs.iter().map(|s| (s.index, s)).collect();
    assert_eq!(summary.frames as usize, received.frames.len());
    assert!(summary.unaligned > 0, "frames before the lock are counted");
    let scored_after = received
        .frames
        .iter()
        .filter(|f| f.running_time.unwrap().nseconds() > relock.running_time)
        .count();
    assert!(
        scored_after > 40,
        "{scored_after} pairs measured after the re-lock"
    );
    // Lined up here: the same frames by index, measured in sequence, one run per lock.
    let mut segments: BTreeMap<usize, Vec<(&FrameScores, &Seen, &Seen)>> = BTreeMap::new();
    let loss_times: Vec<u64> = locks
        .iter()
        .filter(|a| a.state == "lost")
        .map(|a| a.running_time)
        .collect();
    for f in &received.frames {
        let t = f.running_time.unwrap().nseconds();
        let d = dist_at.get(&t).expect("a measured frame was received");
        let r = ref_of
            .get(&d.index)
            .unwrap_or_else(|| panic!("distorted frame {} has no reference frame", d.index));
        let segment = loss_times.iter().filter(|l| **l <= t).count();
        segments.entry(segment).or_default().push((f, r, d));
    }
    let caps_text = caps.to_string();
    let restamp = |b: &gst::Buffer, i: usize| {
        let mut b = b.copy();
        let m = b.make_mut();
        m.set_pts(gst::ClockTime::from_nseconds(i as u64 * FRAME));
        m.set_dts(gst::ClockTime::NONE);
        m.set_duration(gst::ClockTime::from_nseconds(FRAME));
        b
    };
    let mut compared = 0;
    for (_, pairs) in segments {
        let r: Vec<gst::Buffer> = pairs
            .iter()
            .enumerate()
            .map(|(i, p)| restamp(&p.1.buffer, i))
            .collect();
        let d: Vec<gst::Buffer> = pairs
            .iter()
            .enumerate()
            .map(|(i, p)| restamp(&p.2.buffer, i))
            .collect();
        let run = run_buffers(&caps_text, "pairing=sequence metrics=psnr+ssim+vmaf", r, d);
        run.expect_ok();
        assert_eq!(run.frames.len(), pairs.len());
        for ((element, _, d), by_hand) in pairs.iter().zip(&run.frames) {
            for field in ["psnr-y", "psnr-u", "psnr-v", "ssim-y", "vmaf"] {
                let (a, b) = (element.get(field).unwrap(), by_hand.get(field).unwrap());
                // The same frames on the same backend are equal; the CUDA backend against
                // the CPU's (lined up by hand) within their agreed tolerances.
                let tolerance = match (test_backend().as_str(), field) {
                    ("cpu", _) | (_, "psnr-y" | "psnr-u" | "psnr-v") => 1e-9,
                    (_, "ssim-y") => 1e-6,
                    _ => 1e-4,
                };
                assert!(
                    a == b || (a - b).abs() <= tolerance * b.abs().max(1.0),
                    "frame {} ({field}): {a} measured, {b} lined up by hand",
                    d.index
                );
            }
            compared += 1;
        }
    }
    assert!(compared > 100, "{compared} pairs compared");
}

fn free_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
