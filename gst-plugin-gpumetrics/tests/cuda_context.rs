// SPDX-License-Identifier: MPL-2.0
//! CUDA context sharing (`gst.cuda.context`) and the `memory-stats` counters. On a GPU machine
//! the element creates a GstCudaContext on `device-id`, answers queries with it and shares
//! it between instances: GPU-only tests, `#[ignore]`d (run with `--include-ignored` there,
//! scripts/gpu-all.sh's element step), which fail where GstCuda cannot reach a CUDA device.
//! Without a usable GstCuda the element answers no context query: no_gstcuda.rs checks that
//! on every machine (it makes the library missing). The rest runs everywhere.

mod common;

use common::*;
use gst::glib;
use gst::prelude::*;
use gstgpumetrics::gstcuda;

fn element(backend: &str) -> gst::Element {
    init();
    gst::ElementFactory::make("gpumetrics")
        .property_from_str("backend", backend)
        .build()
        .unwrap()
}

/// The context a `gst.cuda.context` query on `pad` returns.
fn query(pad: &gst::Pad) -> Option<gst::Context> {
    let mut q = gst::query::Context::new(gstcuda::CONTEXT_TYPE);
    pad.query(&mut q).then(|| q.context_owned()).flatten()
}

fn cuda_object(c: &gst::Context) -> gst::Object {
    c.structure()
        .get::<gst::Object>(gstcuda::CONTEXT_TYPE)
        .unwrap()
}

#[test]
#[ignore = "GPU-only: needs a GstCuda that reaches a CUDA device (scripts/gpu-all.sh element)"]
fn context_queries_are_answered_on_every_pad_with_one_context() {
    require_gstcuda();
    let m = element("auto");
    m.set_state(gst::State::Ready).unwrap();
    let answers: Vec<_> = ["ref_sink", "dist_sink", "src"]
        .iter()
        .map(|p| query(&m.static_pad(p).unwrap()))
        .collect();
    let first = answers[0].as_ref().expect("ref_sink answers");
    assert_eq!(first.context_type(), gstcuda::CONTEXT_TYPE);
    assert_eq!(first.structure().get::<u32>("cuda-device-id"), Ok(0));
    for a in &answers[1..] {
        let a = a.as_ref().expect("every pad answers");
        assert_eq!(
            cuda_object(a),
            cuda_object(first),
            "one context per element"
        );
    }
    m.set_state(gst::State::Null).unwrap();
}

#[test]
fn other_context_types_are_not_answered() {
    let m = element("auto");
    m.set_state(gst::State::Ready).unwrap();
    for pad in ["ref_sink", "dist_sink", "src"] {
        let mut q = gst::query::Context::new("gst.gl.GLDisplay");
        assert!(!m.static_pad(pad).unwrap().query(&mut q), "{pad}");
    }
    m.set_state(gst::State::Null).unwrap();
}

#[test]
fn backend_cpu_creates_no_context() {
    let m = element("cpu");
    m.set_state(gst::State::Ready).unwrap();
    assert!(query(&m.static_pad("ref_sink").unwrap()).is_none());
    m.set_state(gst::State::Null).unwrap();
}

#[test]
#[ignore = "GPU-only: needs a GstCuda that reaches a CUDA device (scripts/gpu-all.sh element)"]
fn a_context_without_a_cuda_context_is_ignored() {
    require_gstcuda();
    let m = element("auto");
    let bogus = gst::Context::new(gstcuda::CONTEXT_TYPE, true);
    m.set_context(&bogus);
    m.set_state(gst::State::Ready).unwrap();
    // One the element made itself, never the bogus one (no_gstcuda.rs: none without GstCuda).
    let c = query(&m.static_pad("ref_sink").unwrap()).expect("the element's own context");
    assert!(c.structure().has_field(gstcuda::CONTEXT_TYPE), "{c:?}");
    assert_eq!(c.structure().get::<u32>("cuda-device-id"), Ok(0), "{c:?}");
    m.set_state(gst::State::Null).unwrap();
}

#[test]
#[ignore = "GPU-only: needs a GstCuda that reaches a CUDA device (scripts/gpu-all.sh element)"]
fn two_instances_in_one_pipeline_share_the_context() {
    require_gstcuda();
    let pipeline = gst::parse::launch(
        "videotestsrc num-buffers=1 ! tee name=t t. ! queue ! a.ref_sink t. ! queue ! a.dist_sink \
         gpumetrics name=a ! fakesink \
         videotestsrc num-buffers=1 ! tee name=u u. ! queue ! b.ref_sink u. ! queue ! b.dist_sink \
         gpumetrics name=b ! fakesink",
    )
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    pipeline.set_state(gst::State::Ready).unwrap();
    let ctx = |name: &str| {
        let m = pipeline.by_name(name).unwrap();
        query(&m.static_pad("ref_sink").unwrap()).map(|c| cuda_object(&c))
    };
    let (a, b) = (ctx("a"), ctx("b"));
    assert!(a.is_some(), "the first instance answers");
    assert_eq!(a, b, "the second instance must get the first one's context");
    pipeline.set_state(gst::State::Null).unwrap();
}

/// Runs `frames` test frames into both inputs of `gpumetrics name=m PROPS` (64×48, the
/// test backend) to EOS; returns the pipeline (still playing) and the element.
fn run_to_eos(frames: u32, props: &str) -> (gst::Pipeline, gst::Element) {
    init();
    let pipeline = gst::parse::launch(&format!(
        "videotestsrc num-buffers={frames} ! {} ! tee name=t t. ! queue ! m.ref_sink \
         t. ! queue ! m.dist_sink gpumetrics name=m {props} backend={} ! fakesink",
        i420_caps(64, 48, 30),
        test_backend()
    ))
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let msg = pipeline
        .bus()
        .unwrap()
        .timed_pop_filtered(
            gst::ClockTime::from_seconds(30),
            &[gst::MessageType::Eos, gst::MessageType::Error],
        )
        .expect("EOS or error");
    assert!(matches!(msg.view(), gst::MessageView::Eos(_)), "{msg:?}");
    let m = pipeline.by_name("m").unwrap();
    (pipeline, m)
}

#[test]
fn memory_stats_count_system_memory_frames() {
    let (pipeline, m) = run_to_eos(7, "");
    let s = m.property::<gst::Structure>("memory-stats");
    assert_eq!(s.get::<u64>("system-frames"), Ok(14), "{s}");
    assert_eq!(s.get::<u64>("device-frames"), Ok(0), "{s}");
    assert_eq!(s.get::<u64>("downloaded-frames"), Ok(0), "{s}");
    pipeline.set_state(gst::State::Null).unwrap();
}

/// `device-id=-1` on one GPU or none behaves as today: the run measures every pair (on the
/// CPU here, or the one GPU), the property reads back -1, and -1 is its lowest value.
#[test]
fn device_id_minus_one_runs_as_device_0_does() {
    let (pipeline, m) = run_to_eos(5, "device-id=-1");
    assert_eq!(m.property::<i32>("device-id"), -1);
    let s = m.property::<gst::Structure>("memory-stats");
    assert_eq!(s.get::<u64>("system-frames"), Ok(10), "{s}");
    pipeline.set_state(gst::State::Null).unwrap();
    let spec = m.find_property("device-id").unwrap();
    let spec = spec.downcast_ref::<glib::ParamSpecInt>().unwrap();
    assert_eq!((spec.minimum(), spec.default_value()), (-1, 0));
}

/// On a GPU machine `device-id=-1` creates its context on a device that exists.
#[test]
#[ignore = "GPU-only: needs a GstCuda that reaches a CUDA device (scripts/gpu-all.sh element)"]
fn device_id_minus_one_creates_its_context_on_an_existing_device() {
    let e = element("cuda");
    e.set_property("device-id", -1i32);
    e.set_state(gst::State::Ready).unwrap();
    let c = query(&e.static_pad("src").unwrap()).expect("a context");
    let device = c.structure().get::<u32>("cuda-device-id").unwrap();
    assert!(
        (device as usize) < gpumetrics_engine::devices::device_count(),
        "{device}"
    );
    e.set_state(gst::State::Null).unwrap();
}
