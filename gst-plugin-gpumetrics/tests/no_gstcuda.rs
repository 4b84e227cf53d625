// SPDX-License-Identifier: MPL-2.0
//! Without libgstcuda (simulated: the loader is pointed at a file that does not exist) the
//! plugin still registers and the element works on the CPU (or the CUDA primary context).
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
        .find(|(n, _)| n == "psnr-y")
        .unwrap()
        .1;
    assert!(psnr.is_finite() && psnr > 0.0, "{psnr}");
    assert_eq!(r.summary().frames, 5);

    // No context is offered to the neighbours.
    let m = gst::ElementFactory::make("gpumetrics").build().unwrap();
    m.set_state(gst::State::Ready).unwrap();
    let mut q = gst::query::Context::new(gstcuda::CONTEXT_TYPE);
    assert!(!m.static_pad("ref_sink").unwrap().query(&mut q));
    m.set_state(gst::State::Null).unwrap();
}
