// SPDX-License-Identifier: MPL-2.0
//! The `ssimulacra2` metric through the element: exactly 100 for identical frames in every
//! family, below 100 for a scaled-down-and-up copy, the caps' colorimetry is used, and HDR
//! transfers (PQ, HLG) are measured.

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

/// Asserts that two scores of the same distortion read through different settings differ
/// by more than `margin`: a setting that reaches the conversion moves the score by whole
/// points, where rounding noise (GPU against CPU: below 1e-3) moves it by far less.
#[track_caller]
fn differ_by_more_than(what: &str, a: f64, b: f64, margin: f64) {
    assert!(
        (a - b).abs() > margin,
        "{what}: {a} and {b} differ by {}, not more than {margin}",
        (a - b).abs()
    );
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
    // Measured on the CPU backend: bt709 1.504, bt601 4.653 (3.15 apart: the matrix), jpeg
    // siting 10.860 (9.36 apart: the chroma positions). Margins: about half of each.
    differ_by_more_than("bt709 vs bt601 matrix", bt709, bt601, 1.5);
    differ_by_more_than("mpeg2 vs jpeg chroma-site", bt709, jpeg, 4.5);
}

#[test]
fn pq_and_hlg_are_measured() {
    let mut scores = vec![];
    for colorimetry in ["bt2100-pq", "bt2100-hlg", "bt2020-10"] {
        let c = caps("P010_10LE", &format!(",colorimetry={colorimetry}"));
        let same = run(&pipeline(&c, "identity"));
        same.expect_ok();
        assert_eq!(
            same.frames[0].get("ssimulacra2"),
            Some(100.0),
            "{colorimetry}"
        );
        let scaled = run(&pipeline(&c, &scaled(&c)));
        scaled.expect_ok();
        let s = scaled.frames[0].get("ssimulacra2").unwrap();
        assert!(s < 95.0, "{colorimetry}: {s}");
        scores.push(s);
    }
    // The same code values read through different curves score differently. Measured on
    // the CPU backend: PQ -61.55, HLG -42.71 (18.8 apart), bt2020-10 (SDR) -8.76 (52.8 from
    // PQ). Margins: about half of each.
    differ_by_more_than("PQ vs HLG", scores[0], scores[1], 9.0);
    differ_by_more_than("PQ vs bt2020-10", scores[0], scores[2], 25.0);
}

#[test]
fn chroma_upsampling_property_changes_subsampled_scores_only() {
    let score = |format: &str, up: &str| {
        let c = caps(format, ",colorimetry=bt709");
        let desc = pipeline(&c, &scaled(&c)).replace(
            "metrics=ssimulacra2",
            &format!("metrics=ssimulacra2 chroma-upsampling={up}"),
        );
        let run = run(&desc);
        run.expect_ok();
        run.frames[0].get("ssimulacra2").unwrap()
    };
    // Measured on the CPU backend: nearest 4.812, catmull-rom 8.636 (3.82 apart).
    differ_by_more_than(
        "I420 nearest vs catmull-rom",
        score("I420", "nearest"),
        score("I420", "catmull-rom"),
        1.9,
    );
    // 4:4:4 has nothing to upsample.
    assert_eq!(score("Y444", "nearest"), score("Y444", "catmull-rom"));
}
