//! Blur and blockiness on the CPU backend over every Y'CbCr and gray format, sizes from
//! 1×1 up, limited and full range, a few frames each (blockiness adds up over them): no
//! panic (the debug build checks every integer operation), no NaN, only the declared
//! fields, and no field where FFmpeg gives none (a flat frame has no blur).

mod common;

use gpumetrics_engine::metric::{blockiness, blur};
use gpumetrics_engine::{
    BackendChoice, ColorFamily, Colorimetry, Engine, EngineConfig, FrameLayout, PixelFormat, Range,
};

#[test]
fn every_format_and_small_size_measures_without_nan() {
    let mut r = common::Rng::new(0x5eed);
    let mut measured = 0;
    for &format in PixelFormat::ALL {
        if format.family() == ColorFamily::Rgb {
            continue;
        }
        for (w, h) in [
            (1u32, 1u32),
            (2, 3),
            (4, 4),
            (5, 9),
            (9, 5),
            (8, 8),
            (13, 11),
            (33, 20),
        ] {
            for range in [Range::Limited, Range::Full] {
                let c = Colorimetry {
                    range,
                    ..Colorimetry::default_for(format.family())
                };
                let cfg = EngineConfig {
                    metrics: blur::FLAG | blockiness::FLAG,
                    backend: BackendChoice::Cpu,
                    ..Default::default()
                };
                let layout = FrameLayout {
                    format,
                    width: w,
                    height: h,
                };
                let mut e = Engine::builder(&cfg, layout, layout)
                    .colorimetry(c, c)
                    .build()
                    .expect("an engine");
                for f in 0..3 {
                    let flat = f == 1;
                    let mut fill = |_: usize| if flat { 77 } else { r.next_u32() as u8 };
                    let a = common::OwnedFrame::new(format, w, h, &mut fill);
                    let b = common::OwnedFrame::new(format, w, h, &mut fill);
                    let s = e.compare(&a.host(), &b.host()).expect("scores");
                    for (name, v) in s.iter() {
                        assert!(
                            ["blur", "ref-blur", "blockiness", "ref-blockiness"].contains(&name),
                            "{name}"
                        );
                        assert!(!v.is_nan(), "{} {w}x{h} {name}", format.name());
                        assert!(v >= 0.0, "{} {w}x{h} {name}: {v}", format.name());
                    }
                    if flat {
                        assert_eq!(s.get("blur"), None, "{} {w}x{h}", format.name());
                    }
                    measured += 1;
                }
            }
        }
    }
    assert!(measured > 100);
}
