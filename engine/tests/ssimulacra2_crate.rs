//! SSIMULACRA2 of the engine (CPU backend) against the `ssimulacra2` crate (rust-av, the
//! reference of docs/METRICS.md) on a natural image with real distortions made by
//! FFmpeg at test time (JPEG and x264 at several qualities, blur, noise), from 8×8 to 1080p,
//! odd sizes and sizes with fewer than six scales. Tolerance 0.05. Both sides get the same
//! linear RGB: the engine's documented conversion (`host_linear_rgb`).
//!
//! The source, `tests/data/ssimulacra2/natural.jpg` (at the repository root, with every
//! test's data), is made by `tests/generate_ssimulacra2_source.sh`.

mod common;

use std::path::PathBuf;

use common::images::{Distortion, decode, distorted, planes};
use common::{ffmpeg, natural_source as source};

use gpumetrics_engine::{
    BackendChoice, Colorimetry, Engine, EngineConfig, Frame, FrameLayout, HostFrame, MetricSet,
    PixelFormat, host_linear_rgb,
};
use ssimulacra2::{LinearRgb, compute_frame_ssimulacra2};

const TOLERANCE: f64 = 0.05;

fn engine(format: PixelFormat, w: u32, h: u32) -> Engine {
    let cfg = EngineConfig {
        metrics: MetricSet::SSIMULACRA2,
        backend: BackendChoice::Cpu,
        ..Default::default()
    };
    let l = FrameLayout {
        format,
        width: w,
        height: h,
    };
    Engine::new(&cfg, l, l).unwrap()
}

/// (engine, crate) scores of a pair of raw frames.
fn both(format: PixelFormat, w: u32, h: u32, r: &[u8], d: &[u8]) -> (f64, f64) {
    let l = FrameLayout {
        format,
        width: w,
        height: h,
    };
    let (rp, dp) = (planes(format, w, h, r), planes(format, w, h, d));
    let (rf, df) = (HostFrame::new(&rp), HostFrame::new(&dp));
    let s = engine(format, w, h)
        .compare(&Frame::Host(rf), &Frame::Host(df))
        .unwrap();
    let ours = s.get("ssimulacra2").expect("ssimulacra2 field");
    let c = Colorimetry::default_for(format.family());
    let lin = |f| LinearRgb::new(host_linear_rgb(&l, &c, f).unwrap(), w as usize, h as usize);
    let theirs = compute_frame_ssimulacra2(lin(&rf).unwrap(), lin(&df).unwrap()).unwrap();
    (ours, theirs)
}

#[test]
fn rgb_matches_the_crate_on_real_distortions() {
    use Distortion::*;
    let sizes: &[(u32, u32, &[Distortion])] = &[
        (8, 8, &[Jpeg(20), Noise]),
        (13, 9, &[Jpeg(25), Blur]),
        (31, 23, &[Jpeg(15), Noise, Blur]),
        (64, 48, &[Jpeg(30), X264(40), Blur]),
        (257, 129, &[Jpeg(10), Noise, Blur]),
        (
            512,
            382,
            &[Jpeg(3), Jpeg(12), Jpeg(31), X264(26), X264(44), Blur, Noise],
        ),
        (1920, 1080, &[Jpeg(20), X264(36)]),
    ];
    let mut worst = 0.0f64;
    for &(w, h, distortions) in sizes {
        let r = decode(&source(), w, h, "", "rgb24");
        let (same, _) = both(PixelFormat::Rgb, w, h, &r, &r);
        assert_eq!(same, 100.0, "{w}x{h} identical");
        for &d in distortions {
            let dist = distorted(d, w, h, "rgb24");
            let (ours, theirs) = both(PixelFormat::Rgb, w, h, &r, &dist);
            let delta = (ours - theirs).abs();
            println!("{w}x{h} {d:?}: engine {ours:.6} crate {theirs:.6} |Δ| {delta:.2e}");
            assert!(delta <= TOLERANCE, "{w}x{h} {d:?}: {ours} vs {theirs}");
            assert!(ours < 100.0);
            worst = worst.max(delta);
        }
    }
    println!("largest |Δ| {worst:.2e}");
}

/// The engine's sRGB conversion equals the crate's own (`yuvxyb`) for RGB input.
#[test]
fn srgb_conversion_equals_the_crates() {
    use ssimulacra2::{ColorPrimaries, Rgb, TransferCharacteristic};
    let (w, h) = (128, 96);
    let r = decode(&source(), w, h, "", "rgb24");
    let d = distorted(Distortion::Jpeg(20), w, h, "rgb24");
    let (ours, _) = both(PixelFormat::Rgb, w, h, &r, &d);
    let rgb = |b: &[u8]| {
        let px = b
            .chunks(3)
            .map(|p| [p[0], p[1], p[2]].map(|v| v as f32 / 255.0))
            .collect::<Vec<[f32; 3]>>();
        Rgb::new(
            px,
            w as usize,
            h as usize,
            TransferCharacteristic::SRGB,
            ColorPrimaries::BT709,
        )
        .unwrap()
    };
    let theirs = compute_frame_ssimulacra2(rgb(&r), rgb(&d)).unwrap();
    assert!((ours - theirs).abs() <= TOLERANCE, "{ours} vs {theirs}");
}

/// I420 as NV12 (interleaved chroma) and as P010 (10-bit codes = 8-bit codes · 4, MSB
/// aligned), so that all three carry the same colours.
fn repack(i420: &[u8], w: u32, h: u32) -> (Vec<u8>, Vec<u8>) {
    let (w, h) = (w as usize, h as usize);
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let (y, u, v) = (
        &i420[..w * h],
        &i420[w * h..][..cw * ch],
        &i420[w * h + cw * ch..][..cw * ch],
    );
    let uv: Vec<u8> = u.iter().zip(v).flat_map(|(a, b)| [*a, *b]).collect();
    let nv12 = [y, &uv].concat();
    let p010 = nv12
        .iter()
        .flat_map(|&c| (((c as u16) << 2) << 6).to_le_bytes())
        .collect();
    (nv12, p010)
}

#[test]
fn yuv_inputs_match_the_crate_on_the_same_conversion() {
    for (w, h) in [(320, 180), (97, 61)] {
        let r = decode(&source(), w, h, "", "yuv420p");
        let d = distorted(Distortion::Jpeg(18), w, h, "yuv420p");
        let (rn, rp) = repack(&r, w, h);
        let (dn, dp) = repack(&d, w, h);
        let mut scores = Vec::new();
        for (format, r, d) in [
            (PixelFormat::I420, &r, &d),
            (PixelFormat::Nv12, &rn, &dn),
            (PixelFormat::P010_10Le, &rp, &dp),
        ] {
            let (same, _) = both(format, w, h, r, r);
            assert_eq!(same, 100.0);
            let (ours, theirs) = both(format, w, h, r, d);
            println!("{w}x{h} {format:?}: engine {ours:.6} crate {theirs:.6}");
            assert!(
                (ours - theirs).abs() <= TOLERANCE,
                "{format:?}: {ours} vs {theirs}"
            );
            scores.push(ours);
        }
        // The same colours in three layouts.
        assert_eq!(scores[0], scores[1]);
        assert!((scores[0] - scores[2]).abs() < 1e-3, "{scores:?}");
    }
}

#[test]
fn too_small_frames_have_no_score() {
    let r = vec![128u8; 3 * 7 * 20];
    let p = planes(PixelFormat::Rgb, 7, 20, &r);
    let f = Frame::Host(HostFrame::new(&p));
    let mut e = engine(PixelFormat::Rgb, 7, 20);
    let s = e.compare(&f, &f).unwrap();
    assert_eq!(s.get("ssimulacra2"), None);
    assert!(
        e.metric_notes()
            .iter()
            .any(|n| n.contains("ssimulacra2 needs"))
    );
}

/// The score the crate's own test expects for its tank pair.
const TANK_PUBLISHED: f64 = 17.398505;

/// The crate's own test pair (`test_data/tank_source.png` / `tank_distorted.png` of its
/// repository, 1448×1080), read from `GPUMETRICS_TANK_DIR` (not in this repository: 2.9 MB):
/// engine and crate agree, and the engine gives the published score, both within the
/// tolerance. The published score holds for those PNGs only: a re-decode of
/// `tank_distorted.jxl` scores 17.3013 in both and fails here.
#[test]
#[ignore = "needs GPUMETRICS_TANK_DIR with the crate's tank test PNGs"]
fn tank_pair() {
    let dir = PathBuf::from(std::env::var("GPUMETRICS_TANK_DIR").expect("GPUMETRICS_TANK_DIR"));
    let (w, h) = (1448, 1080);
    let raw = |name: &str| {
        ffmpeg(&[
            "-i",
            dir.join(name).to_str().unwrap(),
            "-f",
            "rawvideo",
            "-pix_fmt",
            "rgb24",
            "-",
        ])
    };
    let (r, d) = (raw("tank_source.png"), raw("tank_distorted.png"));
    let (ours, theirs) = both(PixelFormat::Rgb, w, h, &r, &d);
    println!("tank: engine {ours:.6} crate {theirs:.6} (published {TANK_PUBLISHED})");
    assert!((ours - theirs).abs() <= TOLERANCE, "{ours} vs {theirs}");
    assert!(
        (ours - TANK_PUBLISHED).abs() <= TOLERANCE,
        "engine {ours}, published {TANK_PUBLISHED}: are these the crate's original PNGs?"
    );
}
