// SPDX-License-Identifier: MPL-2.0
//! The `ssimulacra2` metric through the element: exactly 100 for identical frames in every
//! family, below 100 for a scaled-down-and-up copy, the caps' colorimetry is used, and
//! HDR transfers are refused with a reason.

mod common;

use common::*;

fn pipeline(caps: &str, distort: &str) -> String {
    format!(
        "videotestsrc pattern=smpte num-buffers=2 ! {caps} ! tee name=t \
         t. ! queue ! m.ref_sink \
         t. ! queue ! {distort} ! m.dist_sink \
         gpumetrics name=m backend=cpu metrics=ssimulacra2 ! appsink name=out"
    )
}

fn scaled(caps: &str) -> String {
    format!("videoscale ! video/x-raw,width=96,height=64 ! videoscale ! {caps}")
}

fn caps(format: &str, extra: &str) -> String {
    format!("video/x-raw,format={format},width=192,height=128,framerate=30/1{extra}")
}

#[test]
fn identical_frames_give_exactly_100() {
    for format in ["I420", "NV12", "P010_10LE", "BGRx", "GRAY8"] {
        let run = run(&pipeline(&caps(format, ""), "identity"));
        run.expect_ok();
        assert_eq!(run.frames.len(), 2, "{format}");
        for f in &run.frames {
            assert_eq!(f.get("ssimulacra2"), Some(100.0), "{format}: {f:?}");
            assert_eq!(f.get("psnr-y"), None);
        }
    }
}

#[test]
fn distortion_lowers_the_score_and_colorimetry_is_used() {
    let score = |extra: &str| {
        let c = caps("I420", extra);
        let run = run(&pipeline(&c, &scaled(&c)));
        run.expect_ok();
        let s = run.frames[0].get("ssimulacra2").unwrap();
        assert!(s < 95.0 && s > 0.0, "{extra}: {s}");
        assert!(run.summary().field("ssimulacra2").is_some());
        s
    };
    let bt709 = score(",colorimetry=bt709,chroma-site=mpeg2");
    let bt601 = score(",colorimetry=bt601,chroma-site=mpeg2");
    let jpeg = score(",colorimetry=bt709,chroma-site=jpeg");
    assert_ne!(bt709, bt601);
    assert_ne!(bt709, jpeg);
}

#[test]
fn pq_is_refused_not_measured() {
    let c = caps("P010_10LE", ",colorimetry=bt2100-pq");
    let run = run(&pipeline(&c, "identity"));
    let (msg, _) = run.error.clone().expect("an error for PQ input");
    assert!(
        msg.contains("PQ") && msg.contains("not support yet"),
        "{msg}"
    );
    assert!(run.frames.is_empty());
}
