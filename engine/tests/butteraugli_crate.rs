//! Butteraugli of the engine against the `butteraugli` crate (imazen's port of libjxl's
//! butteraugli, the reference of docs/METRICS.md) with libjxl's default parameters, on a
//! natural image with real distortions made by FFmpeg at test time (JPEG, x264, x265 Main
//! 10, blur, noise), from 8×8 (no half-resolution level) and 15×15 (the smallest with one)
//! to 1080p, odd sizes, 8 and 10 bit. Both fields within 0.5 % relative.
//!
//! Both sides get the same linear RGB: the engine's documented conversion
//! (`host_linear_rgb`, checked against `yuvxyb` by the SSIMULACRA2 tests) handed to
//! `butteraugli_linear`; one test also feeds the crate its own sRGB path.
//!
//! `BUTTERAUGLI_BACKEND=cuda` runs the same comparisons on the CUDA backend with frames in
//! device memory (on the GPU machine, which has no FFmpeg: fill `GPUMETRICS_FFMPEG_CACHE`
//! with a run here and carry it); CPU otherwise.

mod common;

use butteraugli::{ButteraugliParams, Img, RGB, RGB8, butteraugli, butteraugli_linear};
use common::images::{Distortion, decode, distorted, planes};
use common::natural_source as source;
use common::synthetic::device_frame;
use gpumetrics_engine::{
    BackendChoice, Colorimetry, Engine, EngineConfig, Frame, FrameLayout, HostFrame, MetricSet,
    PixelFormat, Scores, host_linear_rgb,
};

/// Relative tolerance of both fields (docs/METRICS.md).
const TOLERANCE: f64 = 0.005;

fn backend() -> BackendChoice {
    match std::env::var("BUTTERAUGLI_BACKEND").as_deref() {
        Ok("cuda") => BackendChoice::Cuda,
        _ => BackendChoice::Cpu,
    }
}

fn layout(format: PixelFormat, w: u32, h: u32) -> FrameLayout {
    FrameLayout {
        format,
        width: w,
        height: h,
    }
}

fn engine(l: FrameLayout, intensity: f32) -> Engine {
    let cfg = EngineConfig {
        metrics: MetricSet::BUTTERAUGLI,
        backend: backend(),
        options: gpumetrics_engine::Options::new()
            .with(
                "butteraugli-intensity",
                gpumetrics_engine::OptionValue::Float(intensity as f64),
            )
            .unwrap(),
        ..Default::default()
    };
    Engine::new(&cfg, l, l).unwrap()
}

/// The engine's scores of a pair of raw frames, in host memory or (CUDA) device memory.
fn engine_scores(l: FrameLayout, intensity: f32, r: &[u8], d: &[u8]) -> Scores {
    let mut e = engine(l, intensity);
    if backend() == BackendChoice::Cuda {
        return on_device(&mut e, l, r, d);
    }
    let (rp, dp) = (
        planes(l.format, l.width, l.height, r),
        planes(l.format, l.width, l.height, d),
    );
    e.compare(
        &Frame::Host(HostFrame::new(&rp)),
        &Frame::Host(HostFrame::new(&dp)),
    )
    .unwrap()
}

fn on_device(e: &mut Engine, l: FrameLayout, r: &[u8], d: &[u8]) -> Scores {
    use cudarc::driver::{CudaContext, DevicePtr};
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let (rb, db) = (stream.clone_htod(r).unwrap(), stream.clone_htod(d).unwrap());
    stream.synchronize().unwrap();
    let (rp, _g1) = rb.device_ptr(&stream);
    let (dp, _g2) = db.device_ptr(&stream);
    let frame = |base: u64, data: &[u8]| {
        let host = planes(l.format, l.width, l.height, data);
        let offsets: Vec<usize> = host
            .iter()
            .map(|p| p.data.as_ptr() as usize - data.as_ptr() as usize)
            .collect();
        let strides: Vec<usize> = host.iter().map(|p| p.stride).collect();
        device_frame(base, &offsets, &strides)
    };
    e.compare(&frame(rp, r), &frame(dp, d)).unwrap()
}

/// (engine, crate) of both fields: (max norm, 3-norm) each.
fn both(l: FrameLayout, intensity: f32, r: &[u8], d: &[u8]) -> ((f64, f64), (f64, f64)) {
    let s = engine_scores(l, intensity, r, d);
    let ours = (
        s.get("butteraugli").expect("butteraugli field"),
        s.get("butteraugli-3norm").expect("butteraugli-3norm field"),
    );
    let c = Colorimetry::default_for(l.format.family());
    let lin = |data: &[u8]| {
        let p = planes(l.format, l.width, l.height, data);
        let px = host_linear_rgb(&l, &c, &HostFrame::new(&p)).unwrap();
        let px: Vec<RGB<f32>> = px.into_iter().map(|[r, g, b]| RGB { r, g, b }).collect();
        Img::new(px, l.width as usize, l.height as usize)
    };
    let params = ButteraugliParams::default().with_intensity_target(intensity);
    let res = butteraugli_linear(lin(r).as_ref(), lin(d).as_ref(), &params).unwrap();
    (ours, (res.score, res.pnorm_3))
}

/// Relative difference, and a check of both fields against the tolerance.
fn check(what: &str, ours: (f64, f64), theirs: (f64, f64)) -> f64 {
    let rel = |a: f64, b: f64| (a - b).abs() / b.abs().max(1e-9);
    let worst = rel(ours.0, theirs.0).max(rel(ours.1, theirs.1));
    println!(
        "{what}: max {:.5} / crate {:.5}, 3-norm {:.5} / crate {:.5}, rel {worst:.1e}",
        ours.0, theirs.0, ours.1, theirs.1
    );
    assert!(
        ours.0 > 0.0 && ours.1 > 0.0,
        "{what}: distorted frames score 0"
    );
    assert!(worst <= TOLERANCE, "{what}: {ours:?} vs crate {theirs:?}");
    worst
}

#[test]
fn rgb_matches_the_crate_on_real_distortions() {
    use Distortion::*;
    let sizes: &[(u32, u32, &[Distortion])] = &[
        (8, 8, &[Jpeg(20), Noise]),
        (14, 9, &[Jpeg(25), Blur]),
        (15, 15, &[Jpeg(10), Noise]),
        (31, 23, &[Jpeg(15), Noise, Blur]),
        (97, 61, &[Jpeg(30), X264(40), Blur]),
        (257, 129, &[Jpeg(5), Noise, Blur]),
        (
            512,
            382,
            &[Jpeg(3), Jpeg(12), Jpeg(31), X264(26), X264(44), Blur, Noise],
        ),
        (1920, 1080, &[Jpeg(20)]),
    ];
    let mut worst = 0.0f64;
    for &(w, h, distortions) in sizes {
        let l = layout(PixelFormat::Rgb, w, h);
        let r = decode(&source(), w, h, "", "rgb24");
        let s = engine_scores(l, 80.0, &r, &r);
        assert_eq!(s.get("butteraugli"), Some(0.0), "{w}x{h} identical");
        assert_eq!(s.get("butteraugli-3norm"), Some(0.0), "{w}x{h} identical");
        for &d in distortions {
            let dist = distorted(d, w, h, "rgb24");
            let (ours, theirs) = both(l, 80.0, &r, &dist);
            worst = worst.max(check(&format!("{w}x{h} {d:?}"), ours, theirs));
        }
    }
    println!("largest relative difference {worst:.1e}");
}

#[test]
fn video_formats_8_and_10_bit_match_the_crate() {
    use Distortion::*;
    let cases: &[(PixelFormat, &str, u32, u32, Distortion)] = &[
        (PixelFormat::I420, "yuv420p", 320, 180, X264(38)),
        (PixelFormat::Nv12, "nv12", 97, 61, X264(30)),
        (PixelFormat::P010_10Le, "p010le", 320, 180, X265Main10(34)),
        (PixelFormat::P010_10Le, "p010le", 173, 97, X265Main10(28)),
        (
            PixelFormat::Y444_10Le,
            "yuv444p10le",
            160,
            90,
            X265Main10(30),
        ),
    ];
    for &(format, pix_fmt, w, h, d) in cases {
        let l = layout(format, w, h);
        let r = decode(&source(), w, h, "", pix_fmt);
        let dist = distorted(d, w, h, pix_fmt);
        let (ours, theirs) = both(l, 80.0, &r, &dist);
        check(&format!("{format:?} {w}x{h} {d:?}"), ours, theirs);
    }
}

/// The intensity target scales linear light before opsin dynamics: Vship's 203 nits
/// scores the same pair differently, and the crate agrees at both.
#[test]
fn intensity_target_matches_the_crate() {
    let (w, h) = (128, 96);
    let l = layout(PixelFormat::Rgb, w, h);
    let r = decode(&source(), w, h, "", "rgb24");
    let d = distorted(Distortion::Jpeg(15), w, h, "rgb24");
    let (at80, c80) = both(l, 80.0, &r, &d);
    let (at203, c203) = both(l, 203.0, &r, &d);
    check("80 nits", at80, c80);
    check("203 nits", at203, c203);
    assert!(
        (at80.0 - at203.0).abs() > 0.01 * at80.0,
        "{at80:?} {at203:?}"
    );
}

/// The crate's own sRGB path on 8-bit RGB (its exact sRGB curve): the engine's colour
/// stage leads to the same scores.
#[test]
fn srgb_input_matches_the_crates_own_conversion() {
    let (w, h) = (200, 150);
    let l = layout(PixelFormat::Rgb, w, h);
    let r = decode(&source(), w, h, "", "rgb24");
    let d = distorted(Distortion::Jpeg(12), w, h, "rgb24");
    let s = engine_scores(l, 80.0, &r, &d);
    let ours = (
        s.get("butteraugli").unwrap(),
        s.get("butteraugli-3norm").unwrap(),
    );
    let img = |b: &[u8]| {
        let px: Vec<RGB8> = b.chunks(3).map(|p| RGB8::new(p[0], p[1], p[2])).collect();
        Img::new(px, w as usize, h as usize)
    };
    let res = butteraugli(
        img(&r).as_ref(),
        img(&d).as_ref(),
        &ButteraugliParams::default(),
    )
    .unwrap();
    check(
        "sRGB 8-bit, crate's conversion",
        ours,
        (res.score, res.pnorm_3),
    );
}

#[test]
fn too_small_frames_have_no_score() {
    let l = layout(PixelFormat::Rgb, 7, 20);
    let r = vec![128u8; 3 * 7 * 20];
    let p = planes(l.format, 7, 20, &r);
    let f = Frame::Host(HostFrame::new(&p));
    let mut e = engine(l, 80.0);
    let s = e.compare(&f, &f).unwrap();
    assert_eq!(s.get("butteraugli"), None);
    assert!(
        e.metric_notes()
            .iter()
            .any(|n| n.contains("butteraugli needs frames of at least 8x8")),
        "{:?}",
        e.metric_notes()
    );
}

/// The `butteraugli` map (`EngineBuilder::map`): libjxl's diffmap, per pixel the crate's
/// (`with_compute_diffmap(true)`), its maximum the `butteraugli` field; refused without the
/// metric.
#[test]
fn the_diffmap_matches_the_crates() {
    use Distortion::*;
    use gpumetrics_engine::map::MapKind;
    let mut worst = 0.0f64;
    for &(w, h, d) in &[
        (31u32, 23u32, Jpeg(15)),
        (97, 61, X264(40)),
        (257, 129, Noise),
    ] {
        let l = layout(PixelFormat::Rgb, w, h);
        let r = decode(&source(), w, h, "", "rgb24");
        let dist = distorted(d, w, h, "rgb24");
        let cfg = EngineConfig {
            metrics: MetricSet::BUTTERAUGLI,
            backend: backend(),
            ..Default::default()
        };
        let mut e = Engine::builder(&cfg, l, l)
            .map(MapKind::Butteraugli)
            .build()
            .unwrap();
        let s = if backend() == BackendChoice::Cuda {
            on_device(&mut e, l, &r, &dist)
        } else {
            let (rp, dp) = (planes(l.format, w, h, &r), planes(l.format, w, h, &dist));
            e.compare(
                &Frame::Host(HostFrame::new(&rp)),
                &Frame::Host(HostFrame::new(&dp)),
            )
            .unwrap()
        };
        let map = s.map().expect("a map");
        assert_eq!(map.kind(), MapKind::Butteraugli);
        let map = map.values().unwrap();
        assert_eq!((map.width, map.height), (w as usize, h as usize));
        let max = map.values.iter().fold(0f32, |a, &b| a.max(b)) as f64;
        assert!(
            (max - s.get("butteraugli").unwrap()).abs() <= 1e-6 * max,
            "{max}"
        );

        let c = Colorimetry::default_for(l.format.family());
        let lin = |data: &[u8]| {
            let p = planes(l.format, w, h, data);
            let px = host_linear_rgb(&l, &c, &HostFrame::new(&p)).unwrap();
            let px: Vec<RGB<f32>> = px.into_iter().map(|[r, g, b]| RGB { r, g, b }).collect();
            Img::new(px, w as usize, h as usize)
        };
        let params = ButteraugliParams::default().with_compute_diffmap(true);
        let res = butteraugli_linear(lin(&r).as_ref(), lin(&dist).as_ref(), &params).unwrap();
        let theirs = res.diffmap.expect("the crate's diffmap");
        let mut here_worst = 0.0f64;
        for y in 0..h as usize {
            for x in 0..w as usize {
                let a = map.values[y * w as usize + x] as f64;
                let b = theirs[(x, y)] as f64;
                let rel = (a - b).abs() / b.abs().max(1e-3 * max);
                here_worst = here_worst.max(rel);
            }
        }
        println!("{w}x{h} {d:?}: largest relative difference {here_worst:.1e}");
        worst = worst.max(here_worst);
    }
    println!("diffmap: largest relative difference {worst:.1e}");
    assert!(worst <= 1e-3, "{worst}");
    // The map comes with the metric.
    let l = layout(PixelFormat::Rgb, 16, 16);
    let cfg = EngineConfig {
        metrics: MetricSet::PSNR,
        backend: BackendChoice::Cpu,
        ..Default::default()
    };
    let Err(e) = Engine::builder(&cfg, l, l)
        .map(MapKind::Butteraugli)
        .build()
    else {
        panic!("a butteraugli map without the metric was not refused");
    };
    assert!(e.to_string().contains("add butteraugli"), "{e}");
}
