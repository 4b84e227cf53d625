// SPDX-License-Identifier: MPL-2.0
//! gstreamer-check harness tests: the distorted buffer passes through with the same memory
//! and the scores meta, output caps are the dist_sink caps, GAP events, summary at EOS.

mod common;

use common::*;
use gst::prelude::*;
use gst_check::Harness;
use gstgpumetrics::message::Summary;

const W: u32 = 16;
const H: u32 = 8;

struct Pair {
    reference: Harness,
    distorted: Harness,
    bus: gst::Bus,
}

fn setup(dist_caps: &str) -> Pair {
    init();
    // The properties are set before a harness wraps the element: a harness starts the
    // element it is given, and the element refuses (with a warning) a change of these
    // while it runs, so setting them afterwards would leave the defaults in effect.
    // Each test pulls a pair's buffer right after pushing it: one pair at a time. (With the
    // default of 2 in flight the CUDA backend hands a pair's buffer on when the next pair
    // is queued, one frame later; tests/in_flight.rs checks that.)
    let element = gst::ElementFactory::make("gpumetrics")
        .property_from_str("backend", &test_backend())
        .property("in-flight", 1u32)
        .build()
        .unwrap();
    let mut reference = Harness::with_element(&element, Some("ref_sink"), Some("src"));
    assert_eq!(element.property::<u32>("in-flight"), 1, "in effect");
    let backend = element.property_value("backend");
    let nick = gst::glib::EnumValue::from_value(&backend).map(|(_, v)| v.nick().to_string());
    assert_eq!(nick.as_deref(), Some(test_backend().as_str()), "in effect");
    let bus = gst::Bus::new();
    element.set_bus(Some(&bus));
    let mut distorted = Harness::with_element(&element, Some("dist_sink"), None);
    reference.set_src_caps_str(&i420_caps(W, H, 25));
    distorted.set_src_caps_str(dist_caps);
    reference.play();
    Pair {
        reference,
        distorted,
        bus,
    }
}

fn data_ptr(b: &gst::BufferRef) -> *const u8 {
    b.map_readable().unwrap().as_slice().as_ptr()
}

#[test]
fn distorted_buffer_passes_through_with_meta_and_same_memory() {
    let mut p = setup(&i420_caps(W, H, 25));
    for i in 0..3u64 {
        p.reference
            .push(solid_i420(W, H, [50, 60, 70], 40 * i, 40))
            .unwrap();
        let dist = solid_i420(W, H, [52, 60, 70], 40 * i, 40);
        let input_ptr = data_ptr(&dist);
        // Keep a reference: the element must copy the buffer struct, not the memory.
        let keep = dist.clone();
        p.distorted.push(dist).unwrap();
        let out = p.reference.pull().unwrap();
        assert_eq!(data_ptr(&out), input_ptr, "frame memory must not be copied");
        assert_eq!(out.pts(), keep.pts());
        assert!(
            gstgpumetrics::meta::get(&keep).is_none(),
            "input buffer must stay untouched"
        );
        let m = gstgpumetrics::meta::get(&out).expect("scores meta on the output buffer");
        assert_eq!(m.frame, i);
        assert_eq!(m.pts, keep.pts());
        assert!((m.get("psnr-y").unwrap() - psnr(255.0, 4.0)).abs() < 1e-9);
        // C view of the same meta: a GstCustomMeta whose structure has the fields.
        let cm = gst::meta::CustomMeta::from_buffer(&out, gstgpumetrics::meta::META_NAME).unwrap();
        assert_eq!(cm.structure().get::<u64>("frame").unwrap(), i);
    }
    let caps = p.reference.sinkpad().unwrap().current_caps().unwrap();
    assert_eq!(caps, i420_caps(W, H, 25).parse::<gst::Caps>().unwrap());
}

#[test]
fn output_caps_are_the_distorted_caps() {
    let nv12 = format!("video/x-raw,format=NV12,width={W},height={H},framerate=25/1");
    let mut p = setup(&nv12);
    p.reference
        .push(solid_i420(W, H, [50, 60, 70], 0, 40))
        .unwrap();
    let info = gst_video::VideoInfo::builder(gst_video::VideoFormat::Nv12, W, H)
        .build()
        .unwrap();
    let mut dist = gst::Buffer::with_size(info.size()).unwrap();
    {
        let b = dist.get_mut().unwrap();
        b.set_pts(gst::ClockTime::ZERO);
        b.set_duration(gst::ClockTime::from_mseconds(40));
        let mut m = b.map_writable().unwrap();
        let s = m.as_mut_slice();
        let (y, uv) = s.split_at_mut(info.offset()[1]);
        y.fill(50);
        for px in uv.chunks_mut(2) {
            px[0] = 60;
            px[1] = 70;
        }
    }
    p.distorted.push(dist).unwrap();
    let out = p.reference.pull().unwrap();
    let m = gstgpumetrics::meta::get(&out).unwrap();
    assert_eq!(m.get("psnr-avg"), Some(f64::INFINITY));
    let caps = p.reference.sinkpad().unwrap().current_caps().unwrap();
    assert_eq!(caps, nv12.parse::<gst::Caps>().unwrap());
}

#[test]
fn gap_event_leaves_the_distorted_frame_unmatched_and_summary_at_eos() {
    let mut p = setup(&i420_caps(W, H, 25));
    let f = |i: u64| solid_i420(W, H, [(10 * i) as u8, 60, 70], 40 * i, 40);
    p.reference.push(f(0)).unwrap();
    p.distorted.push(f(0)).unwrap();
    assert!(gstgpumetrics::meta::get(&p.reference.pull().unwrap()).is_some());
    // Reference frame 1 is missing (GAP), distorted frame 1 is there.
    assert!(
        p.reference.push_event(
            gst::event::Gap::builder(gst::ClockTime::from_mseconds(40))
                .duration(gst::ClockTime::from_mseconds(40))
                .build()
        )
    );
    p.distorted.push(f(1)).unwrap();
    p.reference.push(f(2)).unwrap();
    let out = p.reference.pull().unwrap();
    assert_eq!(out.pts(), Some(gst::ClockTime::from_mseconds(40)));
    assert!(
        gstgpumetrics::meta::get(&out).is_none(),
        "unmatched: no scores"
    );
    p.distorted.push(f(2)).unwrap();
    let out = p.reference.pull().unwrap();
    let m = gstgpumetrics::meta::get(&out).unwrap();
    assert_eq!((m.frame, m.get("psnr-y")), (1, Some(f64::INFINITY)));

    assert!(p.reference.push_event(gst::event::Eos::new()));
    // The reference has ended: distorted frames that still arrive are unmatched, passed on
    // without scores, until the distorted input ends too.
    p.distorted.push(f(3)).unwrap();
    let out = p.reference.pull().unwrap();
    assert_eq!(out.pts(), Some(gst::ClockTime::from_mseconds(120)));
    assert!(gstgpumetrics::meta::get(&out).is_none());
    assert!(p.distorted.push_event(gst::event::Eos::new()));
    loop {
        let ev = p.reference.pull_event().unwrap();
        if ev.type_() == gst::EventType::Eos {
            break;
        }
    }
    let summaries: Vec<Summary> = std::iter::from_fn(|| p.bus.pop())
        .filter_map(|m| Summary::from_message(&m))
        .collect();
    assert_eq!(summaries.len(), 1);
    let s = &summaries[0];
    assert_eq!((s.frames, s.unmatched_ref, s.unmatched_dist), (2, 0, 2));
    assert_eq!(s.field("psnr-y").unwrap().min, f64::INFINITY);
}
