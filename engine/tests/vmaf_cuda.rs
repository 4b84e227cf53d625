//! VMAF on the GPU against the CPU backend (run on the GPU machine: `cargo test --release -p
//! gpumetrics-engine --test vmaf_cuda -- --ignored`): every field of every record equal
//! (the features are integer sums on both backends, so `vmaf` is equal too), for frames in
//! system memory (uploaded by the backend) and in CUDA memory (read in place). The inputs
//! are synthetic sequences (the GPU machine has no FFmpeg): a textured pattern panning by a
//! fraction of a pixel per frame and a quantised, noisy copy, in 8 to 16 bit, planar and
//! semi-planar, 4:2:0 and 4:4:4, at an odd size, 320x240 and 1920x1080, with every v0 model
//! and two v1 models (one HFR) where libvmaf accepts the size.

use cudarc::driver::{CudaContext, DevicePtr};
use gpumetrics_engine::{
    BackendChoice, Engine, EngineConfig, FrameLayout, HostFrame, MetricSet, PixelFormat, Scores,
};

mod common;

use common::synthetic::{device_frame, planes};

/// How a format lays out its samples: bytes per sample, chroma subsampling shift, chroma
/// interleaved (semi-planar), left shift of the value in its container, bit depth.
fn layout(format: PixelFormat) -> (usize, usize, bool, u32, u32) {
    match format {
        PixelFormat::I420 => (1, 1, false, 0, 8),
        PixelFormat::Nv12 => (1, 1, true, 0, 8),
        PixelFormat::Y444 => (1, 0, false, 0, 8),
        PixelFormat::I420_10Le => (2, 1, false, 0, 10),
        PixelFormat::P010_10Le => (2, 1, true, 6, 10),
        PixelFormat::I420_12Le => (2, 1, false, 0, 12),
        PixelFormat::Y444_16Le => (2, 0, false, 0, 16),
        other => unreachable!("{other:?}"),
    }
}

/// Frame `i` of the reference (`distorted` false) or distorted sequence, as raw planes with
/// their offsets and strides.
fn frame(
    format: PixelFormat,
    w: usize,
    h: usize,
    i: usize,
    distorted: bool,
) -> (Vec<u8>, Vec<usize>, Vec<usize>) {
    let (bytes, sub, semi, shift, depth) = layout(format);
    let max = ((1u32 << depth) - 1) as f64;
    let mut s = 0x9e37_79b9_7f4a_7c15u64 ^ (i as u64 * 0x1234_5678) ^ distorted as u64;
    let mut noise = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 60) as f64 - 8.0
    };
    let pan = 0.75 * i as f64;
    let value = |x: f64, y: f64, c: usize| {
        let (x, y) = (x + pan, y + 0.5 * pan);
        let v = 0.5
            + 0.27 * ((x / (9.0 + c as f64)).sin() * (y / 13.0).cos())
            + if ((x / 16.0) as i64 + (y / 16.0) as i64) % 2 == 0 {
                0.12
            } else {
                -0.12
            }
            + 0.05 * ((x * 1.7).sin() * (y * 2.3).cos());
        v.clamp(0.0, 1.0) * max
    };
    let mut out = Vec::new();
    let mut put = |v: f64, n: f64| {
        let v = if distorted {
            let q = max / 40.0;
            (((v + n * max / 255.0) / q).round() * q).clamp(0.0, max)
        } else {
            v
        };
        let v = (v.round() as u32) << shift;
        if bytes == 1 {
            out.push(v as u8);
        } else {
            out.extend((v as u16).to_le_bytes());
        }
    };
    for y in 0..h {
        for x in 0..w {
            put(value(x as f64, y as f64, 0), noise());
        }
    }
    let (cw, ch) = (w.div_ceil(1 << sub), h.div_ceil(1 << sub));
    let at = |x: usize, y: usize| ((x << sub) as f64, (y << sub) as f64);
    if semi {
        for y in 0..ch {
            for x in 0..cw {
                for c in 1..3 {
                    let (px, py) = at(x, y);
                    put(value(px, py, c), noise());
                }
            }
        }
        (out, vec![0, w * h * bytes], vec![w * bytes, 2 * cw * bytes])
    } else {
        for c in 1..3 {
            for y in 0..ch {
                for x in 0..cw {
                    let (px, py) = at(x, y);
                    put(value(px, py, c), noise());
                }
            }
        }
        let luma = w * h * bytes;
        (
            out,
            vec![0, luma, luma + cw * ch * bytes],
            vec![w * bytes, cw * bytes, cw * bytes],
        )
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_records_equal_cpu_records() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let cases = [
        (PixelFormat::I420, 173, 97, 5),
        (PixelFormat::Nv12, 320, 240, 4),
        (PixelFormat::Y444, 173, 97, 4),
        (PixelFormat::I420_10Le, 320, 240, 4),
        (PixelFormat::P010_10Le, 173, 97, 4),
        (PixelFormat::I420_12Le, 174, 98, 4),
        (PixelFormat::Y444_16Le, 96, 64, 4),
        (PixelFormat::Y444, 352, 288, 4),
        (PixelFormat::I420, 1920, 1080, 3),
    ];
    let mut compared = 0;
    for (format, w, h, n) in cases {
        let layout = FrameLayout {
            format,
            width: w as u32,
            height: h as u32,
        };
        let frames: Vec<_> = (0..n)
            .map(|i| (frame(format, w, h, i, false), frame(format, w, h, i, true)))
            .collect();
        let uploads: Vec<_> = frames
            .iter()
            .map(|((r, _, _), (d, _, _))| {
                (stream.clone_htod(r).unwrap(), stream.clone_htod(d).unwrap())
            })
            .collect();
        stream.synchronize().unwrap();
        // The v1 models where libvmaf accepts the size (CAMBI: a side of 216; SpEED: 80
        // chroma samples a side), including an HFR one (five-frame window, lag 2).
        let v1: &[&str] = if w >= 320 {
            &["vmaf_v1.0.16_3d0h", "vmaf_v1.0.16_hfr_3d0h"]
        } else {
            &[]
        };
        let v0 = ["vmaf_v0.6.1", "vmaf_v0.6.1neg", "vmaf_4k_v0.6.1"];
        for &model in v0.iter().chain(v1) {
            let run = |backend, on_device: bool| -> Vec<Scores> {
                let cfg = EngineConfig {
                    metrics: MetricSet::VMAF,
                    backend,
                    options: common::vmaf_options(model),
                    ..Default::default()
                };
                let mut e = Engine::new(&cfg, layout, layout).unwrap();
                let mut out = Vec::new();
                for (((r, ro, rs), (d, dofs, ds)), (rb, db)) in frames.iter().zip(&uploads) {
                    let got = if on_device {
                        let (rp, _g1) = rb.device_ptr(&stream);
                        let (dp, _g2) = db.device_ptr(&stream);
                        e.push(&device_frame(rp, ro, rs), &device_frame(dp, dofs, ds))
                    } else {
                        let (rpl, dpl) = (planes(ro, rs, r), planes(dofs, ds, d));
                        e.push(
                            &gpumetrics_engine::Frame::Host(HostFrame::new(&rpl)),
                            &gpumetrics_engine::Frame::Host(HostFrame::new(&dpl)),
                        )
                    };
                    out.extend(got.unwrap());
                }
                out.extend(e.finish().expect("finishing the sequence"));
                out
            };
            let cpu = run(BackendChoice::Cpu, false);
            assert_eq!(cpu.len(), n);
            for on_device in [false, true] {
                let gpu = run(BackendChoice::Cuda, on_device);
                assert_eq!(gpu, cpu, "{format:?} {w}x{h} {model} device={on_device}");
                compared += gpu.len();
            }
            let v: Vec<f64> = cpu.iter().map(|s| s.get("vmaf").unwrap()).collect();
            println!("{format:?} {w}x{h} {model}: vmaf {v:.3?} equal on both backends");
        }
    }
    assert!(compared > 0);
}

/// The synthetic sequences themselves are sane on the CPU (runs everywhere): scores in range,
/// motion after the first frame, the distorted copy below the reference against itself.
#[test]
fn synthetic_sequences_score_sensibly_on_the_cpu() {
    for format in [
        PixelFormat::I420,
        PixelFormat::P010_10Le,
        PixelFormat::Y444_16Le,
    ] {
        let (w, h) = (96, 64);
        let layout = FrameLayout {
            format,
            width: w as u32,
            height: h as u32,
        };
        let cfg = EngineConfig {
            metrics: MetricSet::VMAF,
            backend: BackendChoice::Cpu,
            options: common::vmaf_options("vmaf_v0.6.1"),
            ..Default::default()
        };
        let score = |distorted: bool| {
            let mut e = Engine::new(&cfg, layout, layout).unwrap();
            let mut out = Vec::new();
            for i in 0..3 {
                let (r, ro, rs) = frame(format, w, h, i, false);
                let (d, dofs, ds) = frame(format, w, h, i, distorted);
                let (rpl, dpl) = (planes(&ro, &rs, &r), planes(&dofs, &ds, &d));
                out.extend(
                    e.push(
                        &gpumetrics_engine::Frame::Host(HostFrame::new(&rpl)),
                        &gpumetrics_engine::Frame::Host(HostFrame::new(&dpl)),
                    )
                    .unwrap(),
                );
            }
            out.extend(e.finish().expect("finishing the sequence"));
            out
        };
        let (same, dist) = (score(false), score(true));
        assert_eq!(same.len(), 3);
        assert!(
            same[1].get("vmaf-motion2").unwrap() > 0.0,
            "{format:?} {same:?}"
        );
        for (s, d) in same.iter().zip(&dist) {
            let (s, d) = (s.get("vmaf").unwrap(), d.get("vmaf").unwrap());
            assert!(
                (0.0..=100.0).contains(&d) && d < s,
                "{format:?}: {d} vs {s}"
            );
        }
    }
}
