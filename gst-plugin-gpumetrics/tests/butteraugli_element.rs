// SPDX-License-Identifier: MPL-2.0
//! The `butteraugli` metric through the element: exactly 0 for identical frames in every
//! family, positive for a scaled-down-and-up copy in both fields and the summary, the
//! `butteraugli-intensity` property (80 nits by default) changes the score, and frames below
//! 8×8 get one warning and no field. `GPUMETRICS_TEST_BACKEND=cuda` runs it on the GPU.

mod common;

use common::*;
use gst::glib;
use gst::prelude::*;

fn pipeline(caps: &str, distort: &str, props: &str) -> String {
    format!(
        "videotestsrc pattern=smpte num-buffers=2 ! {caps} ! tee name=t \
         t. ! queue ! m.ref_sink \
         t. ! queue ! {distort} ! m.dist_sink \
         gpumetrics name=m backend={} metrics=butteraugli {props} ! appsink name=out",
        test_backend()
    )
}

fn caps(format: &str, w: u32, h: u32) -> String {
    format!("video/x-raw,format={format},width={w},height={h},framerate=30/1")
}

fn scaled(caps: &str) -> String {
    format!("videoscale ! video/x-raw,width=96,height=64 ! videoscale ! {caps}")
}

#[test]
fn identical_frames_give_exactly_0() {
    for format in ["I420", "NV12", "P010_10LE", "BGRx", "GRAY8"] {
        let run = run(&pipeline(&caps(format, 192, 128), "identity", ""));
        run.expect_ok();
        assert_eq!(run.frames.len(), 2, "{format}");
        for f in &run.frames {
            assert_eq!(f.get("butteraugli"), Some(0.0), "{format}: {f:?}");
            assert_eq!(f.get("butteraugli-3norm"), Some(0.0), "{format}: {f:?}");
            assert_eq!(f.get("psnr-y"), None);
        }
    }
}

#[test]
fn distortion_scores_and_intensity_target_is_used() {
    let c = caps("I420", 192, 128);
    let score = |props: &str| {
        let run = run(&pipeline(&c, &scaled(&c), props));
        run.expect_ok();
        let f = &run.frames[0];
        let (max, norm3) = (
            f.get("butteraugli").unwrap(),
            f.get("butteraugli-3norm").unwrap(),
        );
        assert!(
            max > 1.0 && norm3 > 0.0 && norm3 < max,
            "{props}: {max} {norm3}"
        );
        for field in ["butteraugli", "butteraugli-3norm"] {
            assert!(run.summary().field(field).is_some(), "{field}");
        }
        max
    };
    let default = score("");
    assert_eq!(score("butteraugli-intensity=80"), default);
    let vship = score("butteraugli-intensity=203");
    assert!(
        (vship - default).abs() > 0.01 * default,
        "{default} {vship}"
    );
}

#[test]
fn intensity_property_has_libjxls_default_and_limits() {
    init();
    let e = gst::ElementFactory::make("gpumetrics").build().unwrap();
    assert_eq!(e.property::<f64>("butteraugli-intensity"), 80.0);
    e.set_property("butteraugli-intensity", 203.0f64);
    assert_eq!(e.property::<f64>("butteraugli-intensity"), 203.0);
    let spec = e.find_property("butteraugli-intensity").unwrap();
    let spec = spec.downcast_ref::<glib::ParamSpecDouble>().unwrap();
    assert_eq!((spec.minimum(), spec.maximum()), (1.0, 10000.0));
}

#[test]
fn frames_below_8x8_are_warned_once_and_get_no_field() {
    let c = caps("I420", 6, 6);
    let run = run(&pipeline(&c, "identity", ""));
    run.expect_ok();
    assert_eq!(run.frames.len(), 2);
    assert!(run.frames.iter().all(|f| f.get("butteraugli").is_none()));
    let warned: Vec<_> = run
        .warnings
        .iter()
        .filter(|w| w.contains("butteraugli needs frames of at least 8x8"))
        .collect();
    assert_eq!(warned.len(), 1, "{:?}", run.warnings);
}
