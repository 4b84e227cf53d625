// SPDX-License-Identifier: MPL-2.0
//! Without libgstcuda (simulated: the loader is pointed at a file that does not exist) the
//! plugin still registers, the element works on the CPU (or the CUDA primary context) and
//! answers no `gst.cuda.context` query (the GPU side of these: cuda_context.rs).
//! A test binary of its own, since the library is loaded once per process.

mod common;

use common::*;
use gst::prelude::*;
use gstgpumetrics::gstcuda;

#[test]
fn element_works_without_libgstcuda() {
    // SAFETY: set before any other thread of this process reads the environment.
    unsafe { std::env::set_var(gstcuda::LIBRARY_ENV, "/nonexistent/libgstcuda-1.0.so.0") };
    let why = gstcuda::api()
        .err()
        .expect("the library must be reported missing");
    assert!(why.contains("/nonexistent/libgstcuda-1.0.so.0"), "{why}");

    let r = run(&format!(
        "videotestsrc num-buffers=5 ! {c} ! m.ref_sink \
         videotestsrc num-buffers=5 pattern=ball ! {c} ! m.dist_sink \
         gpumetrics name=m backend=auto ! fakesink",
        c = i420_caps(32, 16, 30)
    ));
    r.expect_ok();
    assert_eq!(r.frames.len(), 5);
    let psnr = r.frames[0]
        .scores
        .iter()
        .find(|(f, _)| f.name == "psnr-y")
        .unwrap()
        .1;
    assert!(psnr.is_finite() && psnr > 0.0, "{psnr}");
    assert_eq!(r.summary().frames, 5);

    // No context is offered to the neighbours, on any pad.
    let m = gst::ElementFactory::make("gpumetrics").build().unwrap();
    m.set_state(gst::State::Ready).unwrap();
    for pad in ["ref_sink", "dist_sink", "src"] {
        assert!(!answers(&m, pad), "{pad}");
    }
    m.set_state(gst::State::Null).unwrap();

    // A context set on it without a CUDA context is not handed on either.
    let m = gst::ElementFactory::make("gpumetrics").build().unwrap();
    m.set_context(&gst::Context::new(gstcuda::CONTEXT_TYPE, true));
    m.set_state(gst::State::Ready).unwrap();
    assert!(!answers(&m, "ref_sink"), "the bogus context was answered");
    m.set_state(gst::State::Null).unwrap();

    // Two instances in one pipeline: neither has one.
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
    for name in ["a", "b"] {
        assert!(
            !answers(&pipeline.by_name(name).unwrap(), "ref_sink"),
            "{name}"
        );
    }
    pipeline.set_state(gst::State::Null).unwrap();
}

/// Whether `pad` of `m` answers a `gst.cuda.context` query.
fn answers(m: &gst::Element, pad: &str) -> bool {
    let mut q = gst::query::Context::new(gstcuda::CONTEXT_TYPE);
    m.static_pad(pad).unwrap().query(&mut q)
}
