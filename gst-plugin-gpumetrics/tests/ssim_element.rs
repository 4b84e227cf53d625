// SPDX-License-Identifier: MPL-2.0
//! The `ssim` and `ms-ssim` metrics through the element: fields per the `ssim-chroma`
//! property, exactly 1 for identical frames, below 1 for a scaled-down-and-up copy.

mod common;

use common::*;

fn pipeline(props: &str, distort: &str) -> String {
    format!(
        "videotestsrc pattern=zone-plate kx2=20 ky2=20 kt=1 num-buffers=3 ! {} ! tee name=t \
         t. ! queue ! m.ref_sink \
         t. ! queue ! {distort} ! m.dist_sink \
         gpumetrics name=m backend=cpu {props} ! appsink name=out",
        i420_caps(320, 192, 30)
    )
}

const SCALED: &str = "videoscale ! video/x-raw,width=160,height=96 ! videoscale ! \
                      video/x-raw,width=320,height=192";

#[test]
fn identical_frames_give_exactly_one() {
    let run = run(&pipeline(
        "metrics=ssim+ms-ssim ssim-chroma=true",
        "identity",
    ));
    run.expect_ok();
    assert_eq!(run.frames.len(), 3);
    for f in &run.frames {
        for k in ["ssim", "ssim-y", "ssim-u", "ssim-v", "ssim-all", "ms-ssim"] {
            assert_eq!(f.get(k), Some(1.0), "{k}: {f:?}");
        }
        assert_eq!(f.get("psnr-y"), None);
    }
}

#[test]
fn chroma_fields_follow_the_property() {
    let luma = run(&pipeline("metrics=psnr+ssim+ms-ssim", SCALED));
    luma.expect_ok();
    assert_eq!(luma.frames.len(), 3);
    for f in &luma.frames {
        let (s, ms) = (f.get("ssim-y").unwrap(), f.get("ms-ssim").unwrap());
        assert!(s > 0.0 && s < 1.0 && ms > 0.0 && ms < 1.0, "{f:?}");
        assert_eq!(f.get("ssim"), Some(s));
        assert_eq!(f.get("ssim-u"), None);
        assert_eq!(f.get("ssim-all"), None);
        assert!(f.get("psnr-y").is_some());
    }
    let chroma = run(&pipeline("metrics=ssim ssim-chroma=true", SCALED));
    chroma.expect_ok();
    assert_eq!(chroma.frames.len(), 3);
    for f in &chroma.frames {
        let [y, u, v] = ["ssim-y", "ssim-u", "ssim-v"].map(|k| f.get(k).unwrap());
        let all = f.get("ssim-all").unwrap();
        assert!((all - (4.0 * y + u + v) / 6.0).abs() < 1e-12, "{f:?}");
        assert_eq!(f.get("ms-ssim"), None);
    }
    assert!(chroma.summary().field("ssim-all").is_some());
}

#[test]
fn frames_too_small_for_ms_ssim_get_only_ssim() {
    let run = run(&format!(
        "videotestsrc pattern=ball num-buffers=2 ! {} ! tee name=t \
         t. ! queue ! m.ref_sink t. ! queue ! m.dist_sink \
         gpumetrics name=m backend=cpu metrics=ssim+ms-ssim ! appsink name=out",
        i420_caps(200, 120, 30)
    ));
    run.expect_ok();
    assert_eq!(run.frames.len(), 2);
    for f in &run.frames {
        assert_eq!(f.get("ssim"), Some(1.0));
        assert_eq!(f.get("ms-ssim"), None);
    }
}
