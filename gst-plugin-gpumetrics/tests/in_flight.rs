// SPDX-License-Identifier: MPL-2.0
//! The `in-flight` property (issue 25): whatever the number of pairs in flight, every pair
//! gets its own record, in frame order, with the scores of one pair at a time, and every
//! buffer leaves in order (scored, skipped, unmatched), none lost at EOS; the latency query
//! includes the frames the pairs in flight add.
//!
//! On the CPU backend (the default here) the engine measures one pair at a time whatever
//! `in-flight` says, so these tests check that the property changes nothing there; the GPU
//! machine runs them with `GPUMETRICS_TEST_BACKEND=cuda` (scripts/gpu-all.sh element), where
//! the pairs really are in flight. The test reading CUDA memory in place is GPU-only.

mod common;

use std::time::Duration;

use common::*;
use gst::prelude::*;
use gstgpumetrics::message::FrameScores;

const W: u32 = 64;
const H: u32 = 48;
const FPS: u64 = 25;
const FRAME_NS: u64 = 1_000_000_000 / FPS;

/// Frame `i` of a textured I420 stream at `pts_ms`; `distortion` > 0 changes every luma
/// sample by a pattern that differs per frame, so that each pair has its own scores.
fn textured(i: u64, pts_ms: u64, distortion: u8) -> gst::Buffer {
    init();
    let info = gst_video::VideoInfo::builder(gst_video::VideoFormat::I420, W, H)
        .build()
        .unwrap();
    let mut buf = gst::Buffer::with_size(info.size()).unwrap();
    {
        let b = buf.get_mut().unwrap();
        b.set_pts(gst::ClockTime::from_mseconds(pts_ms));
        b.set_duration(gst::ClockTime::from_nseconds(FRAME_NS));
        let mut map = b.map_writable().unwrap();
        let data = map.as_mut_slice();
        let (w, h, i) = (W as usize, H as usize, i as usize);
        for y in 0..h {
            for x in 0..w {
                let v = (x * 3 + y * 5 + i * 11) % 200 + 20;
                let d = if distortion == 0 {
                    0
                } else {
                    (x + 2 * y + i) % (usize::from(distortion) + i % 3 + 1)
                };
                data[y * info.stride()[0] as usize + x] = (v + d) as u8;
            }
        }
        data[info.offset()[1]..].fill(128);
    }
    buf
}

/// One run of `n` frames per input through gpumetrics with `props`, without the reference
/// frames in `no_ref` and the distorted frames in `no_dist` (their partners are unmatched).
fn run_frames(props: &str, n: u64, no_ref: &[u64], no_dist: &[u64]) -> Run {
    let reference = (0..n)
        .filter(|i| !no_ref.contains(i))
        .map(|i| textured(i, 40 * i, 0))
        .collect();
    let distorted = (0..n)
        .filter(|i| !no_dist.contains(i))
        .map(|i| textured(i, 40 * i, 4))
        .collect();
    run_buffers(&i420_caps(W, H, FPS as i32), props, reference, distorted)
}

/// The records and output of one run: every record in frame order, every distorted buffer
/// out in order, and the summary's counts.
#[track_caller]
fn checked(run: &Run, pairs: u64, skipped: u64, unmatched_dist: u64) -> Vec<FrameScores> {
    run.expect_ok();
    let s = run.summary();
    assert_eq!(
        (s.frames, s.skipped, s.unmatched_dist),
        (pairs - skipped, skipped, unmatched_dist),
        "{s:?}"
    );
    assert_eq!(run.frames.len() as u64, pairs - skipped, "{:?}", run.frames);
    let order: Vec<u64> = run.frames.iter().map(|f| f.frame).collect();
    let mut sorted = order.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(order, sorted, "records out of order or repeated");
    assert!(
        run.frames.iter().all(|f| f.get("psnr-y").is_some()),
        "a record without scores: {:?}",
        run.frames
    );
    let pts: Vec<_> = run.out.iter().map(|b| b.pts().unwrap()).collect();
    assert_eq!(
        pts.len() as u64,
        pairs + unmatched_dist,
        "every buffer leaves"
    );
    assert!(pts.is_sorted(), "buffers out of order: {pts:?}");
    let with_meta = run
        .out
        .iter()
        .filter(|b| gstgpumetrics::meta::get(b).is_some())
        .count();
    assert_eq!(with_meta as u64, pairs - skipped);
    run.frames.clone()
}

/// Relative difference allowed in SSIM's and MS-SSIM's fields: on the GPU their sums are
/// added with f64 atomics, whose order (and so the last bits) varies from run to run
/// whatever the pairs in flight. Every other field must be equal bit for bit.
const ATOMIC_ORDER: f64 = 1e-13;

/// `records` are `one`'s: the same pairs, times and fields in order, with the same values
/// (SSIM's within [`ATOMIC_ORDER`]).
fn assert_same(records: &[FrameScores], one: &[FrameScores], what: &str) {
    assert_eq!(records.len(), one.len(), "{what}: record count");
    for (a, b) in records.iter().zip(one) {
        let head = |f: &FrameScores| (f.frame, f.pts, f.running_time, f.duration);
        assert_eq!(head(a), head(b), "{what}");
        let names = |f: &FrameScores| f.fields().map(|f| f.name).collect::<Vec<_>>();
        assert_eq!(names(a), names(b), "{what}: frame {}", a.frame);
        for ((field, x), (_, y)) in a.scores.iter().zip(&b.scores) {
            let n = field.name;
            let atomic =
                n.starts_with("ms-ssim") || (n.starts_with("ssim") && !n.starts_with("ssimulacra"));
            let same = x.to_bits() == y.to_bits()
                || (atomic && (x - y).abs() <= ATOMIC_ORDER * x.abs().max(y.abs()));
            assert!(same, "{what}: frame {} {n}: {x} != {y}", a.frame);
        }
    }
}

#[test]
fn every_record_is_the_same_in_order_with_any_number_in_flight() {
    // Frames 5 and 11 have no reference (their distorted frames leave unscored, between the
    // pairs), frame 8 no distorted frame (its reference is unmatched).
    let (n, no_ref, no_dist) = (24u64, [5u64, 11], [8u64]);
    let pairs = n - 3;
    for (metrics, subsample) in [
        ("psnr+ssim", 1u64),
        ("psnr+vmaf", 1),
        // Skipped pairs the engine does not see (no metric needs every frame), and skipped
        // pairs it sees (VMAF's motion).
        ("psnr", 3),
        ("psnr+vmaf", 3),
    ] {
        let skipped = pairs - pairs.div_ceil(subsample);
        let mut first: Option<Vec<FrameScores>> = None;
        for in_flight in [1, 2, 4] {
            let props = format!("metrics={metrics} subsample={subsample} in-flight={in_flight}");
            let run = run_frames(&props, n, &no_ref, &no_dist);
            let records = checked(&run, pairs, skipped, no_ref.len() as u64);
            if metrics.contains("vmaf") {
                assert!(records.iter().all(|f| f.get("vmaf").is_some()), "{props}");
            }
            match &first {
                None => first = Some(records),
                Some(one) => assert_same(
                    &records,
                    one,
                    &format!("{props}: the records differ from those of one pair at a time"),
                ),
            }
        }
    }
}

#[test]
fn property_default_range_and_value_in_effect() {
    init();
    let m = gst::ElementFactory::make("gpumetrics").build().unwrap();
    assert_eq!(m.property::<u32>("in-flight"), 2);
    let spec = m.find_property("in-flight").unwrap();
    let spec = spec.downcast_ref::<gst::glib::ParamSpecUInt>().unwrap();
    assert_eq!(
        (spec.minimum(), spec.maximum()),
        (1, gpumetrics_engine::MAX_IN_FLIGHT as u32)
    );
    m.set_property("in-flight", 4u32);
    assert_eq!(m.property::<u32>("in-flight"), 4);
}

/// The pairs the engine holds: lag (VMAF: 1) plus the pairs in flight beyond the first;
/// the CPU backend has one pair in flight whatever is set.
fn expected_delay(metrics: &str, in_flight: u64) -> u64 {
    let lag = u64::from(metrics.contains("vmaf"));
    let in_flight = if test_backend() == "cuda" {
        in_flight
    } else {
        1
    };
    lag + in_flight - 1
}

/// The minimum latency the element answers: upstream's plus a frame per pair it holds.
#[test]
fn latency_query_adds_a_frame_per_pair_held() {
    init();
    for metrics in ["psnr", "psnr+vmaf"] {
        for in_flight in [1, 2, 4] {
            let desc = format!(
                "videotestsrc is-live=true pattern=ball ! {c} ! tee name=t \
                 t. ! queue ! m.ref_sink t. ! queue ! m.dist_sink \
                 gpumetrics name=m backend={b} metrics={metrics} in-flight={in_flight} ! \
                 fakesink",
                c = i420_caps(W, H, FPS as i32),
                b = test_backend()
            );
            let pipeline = gst::parse::launch(&desc)
                .unwrap()
                .downcast::<gst::Pipeline>()
                .unwrap();
            pipeline.set_state(gst::State::Playing).unwrap();
            // The engine (and its latency) is made for the first pair: wait for a record.
            let bus = pipeline.bus().unwrap();
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            let mut measured = false;
            while !measured && std::time::Instant::now() < deadline {
                let Some(msg) = bus.timed_pop(gst::ClockTime::from_mseconds(100)) else {
                    continue;
                };
                if let gst::MessageView::Error(e) = msg.view() {
                    panic!("{desc}: {}", e.error());
                }
                measured = FrameScores::from_message(&msg).is_some();
            }
            assert!(measured, "{desc}: no record within 20 s");
            let m = pipeline.by_name("m").unwrap();
            let upstream = ["ref_sink", "dist_sink"]
                .iter()
                .map(|p| {
                    let mut q = gst::query::Latency::new();
                    assert!(m.static_pad(p).unwrap().peer_query(&mut q));
                    q.result().1
                })
                .max()
                .unwrap();
            let mut q = gst::query::Latency::new();
            assert!(m.static_pad("src").unwrap().query(&mut q));
            let (live, min, _) = q.result();
            pipeline.set_state(gst::State::Null).unwrap();
            assert!(live);
            let added = expected_delay(metrics, in_flight) * FRAME_NS;
            assert_eq!(
                min,
                upstream + gst::ClockTime::from_nseconds(added),
                "metrics={metrics} in-flight={in_flight} on {}: upstream {upstream}",
                test_backend()
            );
        }
    }
}

/// Frames in CUDA memory, read in place by the kernels while later pairs are prepared: the
/// buffers (reference and distorted) must stay unchanged until the engine no longer reads
/// them, or the records would differ from those of one pair at a time.
#[test]
#[ignore = "GPU-only: needs cudaupload and a CUDA device (scripts/gpu-all.sh element)"]
fn device_frames_in_flight_give_the_records_of_one_at_a_time() {
    require_gstcuda();
    assert!(
        gst::ElementFactory::find("cudaupload").is_some(),
        "GPU-only test: no cudaupload element (nvcodec plugin without a CUDA device?)"
    );
    let (n, no_ref, no_dist) = (40u64, [7u64], [13u64]);
    let c = i420_caps(W, H, FPS as i32);
    let mut first: Option<Vec<FrameScores>> = None;
    for in_flight in [1, 2, 4] {
        let desc = format!(
            "appsrc name=ref format=time caps=\"{c}\" ! cudaupload ! m.ref_sink \
             appsrc name=dist format=time caps=\"{c}\" ! cudaupload ! m.dist_sink \
             gpumetrics name=m backend=cuda metrics=psnr+ssim+vmaf in-flight={in_flight} ! \
             appsink name=out"
        );
        let reference: Vec<_> = (0..n)
            .filter(|i| !no_ref.contains(i))
            .map(|i| textured(i, 40 * i, 0))
            .collect();
        let distorted: Vec<_> = (0..n)
            .filter(|i| !no_dist.contains(i))
            .map(|i| textured(i, 40 * i, 4))
            .collect();
        let run = run_with(&desc, Duration::from_secs(60), move |p| {
            let p2 = p.clone();
            let t = std::thread::spawn(move || push_all(&p2, "ref", reference));
            push_all(p, "dist", distorted);
            t.join().unwrap();
        });
        let m = run.summary();
        assert_eq!(m.frames, n - 2, "{m:?}");
        let records = checked(&run, n - 2, 0, 1);
        match &first {
            None => first = Some(records),
            Some(one) => assert_same(&records, one, &format!("in-flight={in_flight}")),
        }
    }
}
