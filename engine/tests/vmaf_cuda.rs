//! VMAF on the GPU against the CPU backend (run on the GPU machine: `cargo test --release -p
//! gpumetrics-engine --test vmaf_cuda -- --ignored`): on the reference clips of
//! tests/data/vmaf (first frames of every pair, every model), the features are integer sums
//! on both backends and must be equal; `vmaf` then too. Frames in system memory (uploaded by
//! the backend) and in CUDA memory (read in place).

use std::path::Path;

use cudarc::driver::{CudaContext, DevicePtr};
use gpumetrics_engine::vmaf::{Model, VmafOptions};
use gpumetrics_engine::{
    BackendChoice, DeviceFrame, Engine, EngineConfig, Frame, FrameLayout, HostFrame, MetricSet,
    PixelFormat, Plane, Scores,
};

mod common;

const FRAMES: usize = 4;

fn decode(clip: &str, pix_fmt: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../tests/data/vmaf/{clip}.mkv"));
    common::ffmpeg(&[
        "-i",
        path.to_str().unwrap(),
        "-f",
        "rawvideo",
        "-pix_fmt",
        pix_fmt,
        "-",
    ])
}

/// Frame `i` of tightly packed planar frames of `frame_len` bytes.
fn host<'a>(data: &'a [u8], i: usize, frame_len: usize, offsets: &[(usize, usize)]) -> Frame<'a> {
    let base = &data[i * frame_len..];
    let planes: Vec<Plane> = offsets
        .iter()
        .map(|&(o, stride)| Plane {
            data: &base[o..],
            stride,
        })
        .collect();
    Frame::Host(HostFrame::new(&planes))
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_features_equal_cpu_features_on_the_reference_clips() {
    let pairs = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/vmaf/pairs.txt"),
    )
    .unwrap();
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let mut compared = 0;
    for line in pairs.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (w, h, pix) = (
            f[3].parse::<u32>().unwrap(),
            f[4].parse::<u32>().unwrap(),
            f[5],
        );
        // Decoded at the coded (even) size: the engine reads the even frame.
        let (w, h) = (w.next_multiple_of(2), h.next_multiple_of(2));
        let (format, bps, s) = match pix {
            "yuv420p" => (PixelFormat::I420, 1usize, 1u32),
            "yuv420p10le" => (PixelFormat::I420_10Le, 2, 1),
            "yuv444p" => (PixelFormat::Y444, 1, 0),
            "yuv420p12le" => (PixelFormat::I420_12Le, 2, 1),
            "yuv444p16le" => (PixelFormat::Y444_16Le, 2, 0),
            other => panic!("{other}"),
        };
        let layout = FrameLayout {
            format,
            width: w,
            height: h,
        };
        let (wu, hu) = (w as usize, h as usize);
        let (cw, ch) = (wu >> s, hu >> s);
        let frame_len = (wu * hu + 2 * cw * ch) * bps;
        let offsets = [
            (0, wu * bps),
            (wu * hu * bps, cw * bps),
            ((wu * hu + cw * ch) * bps, cw * bps),
        ];
        let (r, d) = (decode(f[1], pix), decode(f[2], pix));
        let n = (r.len() / frame_len).min(FRAMES);
        let (rb, db) = (
            stream.clone_htod(&r).unwrap(),
            stream.clone_htod(&d).unwrap(),
        );
        stream.synchronize().unwrap();
        let (rp, _g1) = rb.device_ptr(&stream);
        let (dp, _g2) = db.device_ptr(&stream);
        let device = |base: u64, i: usize| -> Frame<'static> {
            let mut fr = DeviceFrame {
                n_planes: 3,
                ..Default::default()
            };
            for (k, &(o, stride)) in offsets.iter().enumerate() {
                fr.ptrs[k] = base + (i * frame_len + o) as u64;
                fr.pitches[k] = stride;
            }
            Frame::Device(fr)
        };
        for model in ["vmaf_v0.6.1", "vmaf_v0.6.1neg", "vmaf_4k_v0.6.1"] {
            let run = |backend, on_device: bool| -> Vec<Scores> {
                let cfg = EngineConfig {
                    metrics: MetricSet::VMAF,
                    backend,
                    ..Default::default()
                };
                let mut e = Engine::builder(&cfg, layout, layout)
                    .vmaf(VmafOptions {
                        model: Model::load(model).unwrap(),
                        features: true,
                    })
                    .build()
                    .unwrap();
                let mut out = Vec::new();
                for i in 0..n {
                    let got = if on_device {
                        e.push(&device(rp, i), &device(dp, i))
                    } else {
                        e.push(
                            &host(&r, i, frame_len, &offsets),
                            &host(&d, i, frame_len, &offsets),
                        )
                    };
                    out.extend(got.unwrap());
                }
                out.extend(e.finish());
                out
            };
            let cpu = run(BackendChoice::Cpu, false);
            for on_device in [false, true] {
                let gpu = run(BackendChoice::Cuda, on_device);
                assert_eq!(gpu, cpu, "{} {model} device={on_device}", f[0]);
                compared += gpu.len();
            }
        }
    }
    println!("{compared} records equal");
    assert!(compared > 0);
}
