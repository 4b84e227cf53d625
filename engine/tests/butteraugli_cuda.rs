//! Butteraugli on the CUDA backend against the CPU backend (both fields within 1e-4
//! relative: one kernel-crate code path, differing only in the GPU's fused operations), for
//! RGB, I420, NV12 and P010 frames from 8×8 to 2160p, in host and device memory, and the
//! device memory one engine takes. Run on the GPU machine:
//! `cargo test --release -p gpumetrics-engine --test butteraugli_cuda -- --ignored`.

mod common;

use common::synthetic::{device_frame, device_memory_mib, frames, planes};
use cudarc::driver::{CudaContext, DevicePtr};
use gpumetrics_engine::{
    BackendChoice, Engine, EngineConfig, Frame, FrameLayout, HostFrame, MetricSet, PixelFormat,
};

const TOLERANCE: f64 = 1e-4;

fn engine(backend: BackendChoice, format: PixelFormat, w: usize, h: usize) -> Engine {
    let cfg = EngineConfig {
        metrics: MetricSet::BUTTERAUGLI,
        backend,
        ..Default::default()
    };
    let l = FrameLayout {
        format,
        width: w as u32,
        height: h as u32,
    };
    Engine::new(&cfg, l, l).unwrap()
}

fn fields(s: gpumetrics_engine::Scores) -> [f64; 2] {
    ["butteraugli", "butteraugli-3norm"].map(|f| s.get(f).unwrap())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_matches_cpu() {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    // `BUTTERAUGLI_MAX_SIDE` bounds the sizes (compute-sanitizer runs take the small ones).
    let max_side: usize = std::env::var("BUTTERAUGLI_MAX_SIDE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::MAX);
    let mut worst = 0.0f64;
    for format in [
        PixelFormat::Rgb,
        PixelFormat::I420,
        PixelFormat::Nv12,
        PixelFormat::P010_10Le,
    ] {
        for (w, h) in [
            (8, 8),
            (14, 9),
            (15, 15),
            (31, 23),
            (257, 129),
            (640, 360),
            (1920, 1080),
            (3840, 2160),
        ] {
            if w.max(h) > max_side {
                continue;
            }
            let (r, d, strides, offsets) = frames(format, w, h);
            let (rp, dp) = (
                planes(&offsets, &strides, &r),
                planes(&offsets, &strides, &d),
            );
            let (rf, df) = (
                Frame::Host(HostFrame::new(&rp)),
                Frame::Host(HostFrame::new(&dp)),
            );
            let cpu = fields(
                engine(BackendChoice::Cpu, format, w, h)
                    .compare(&rf, &df)
                    .unwrap(),
            );
            let mut cuda_engine = engine(BackendChoice::Cuda, format, w, h);
            let cuda = fields(cuda_engine.compare(&rf, &df).unwrap());
            let same = fields(cuda_engine.compare(&rf, &rf).unwrap());
            let (rb, db) = (
                stream.clone_htod(&r).unwrap(),
                stream.clone_htod(&d).unwrap(),
            );
            stream.synchronize().unwrap();
            let (rptr, _g1) = rb.device_ptr(&stream);
            let (dptr, _g2) = db.device_ptr(&stream);
            let dev = |base: u64| device_frame(base, &offsets, &strides);
            let on_device = fields(cuda_engine.compare(&dev(rptr), &dev(dptr)).unwrap());
            let rel = (0..2)
                .map(|i| (cpu[i] - cuda[i]).abs() / cpu[i].abs().max(1e-9))
                .fold(0.0, f64::max);
            println!(
                "{format:?} {w}x{h}: cpu {:.6} / {:.6}, cuda {:.6} / {:.6}, rel {rel:.1e}, device frames {:?}, identical {:?}",
                cpu[0], cpu[1], cuda[0], cuda[1], on_device, same
            );
            assert!(rel <= TOLERANCE, "{format:?} {w}x{h}: {cpu:?} vs {cuda:?}");
            assert!(cpu[0] > 0.0 && cpu[1] > 0.0);
            assert_eq!(on_device, cuda);
            assert_eq!(same, [0.0, 0.0]);
            worst = worst.max(rel);
        }
    }
    println!("largest relative difference {worst:.1e}");
}

/// Device memory of one I420 Butteraugli engine as recorded on the H200 (docs/GPU-RUNS.md:
/// 450–452 MiB at 1080p, 1,792 MiB at 2160p, 2026-12-01).
const RECORDED_MIB: [(usize, usize, f64); 2] = [(1920, 1080, 452.0), (3840, 2160, 1792.0)];

/// Device memory of one engine at 1080p and 2160p, each within 10 % of the recorded figure
/// (a change of the buffers' layout shows here, and the docs are then updated with the new
/// figure). Run it alone (`--ignored device_memory`), as memory freed by earlier tests
/// would be reused and other tests' allocations beside it would count.
#[test]
#[ignore = "needs a CUDA GPU"]
fn device_memory() {
    for (w, h, recorded) in RECORDED_MIB {
        let mib = device_memory_mib(w, h, || {
            engine(BackendChoice::Cuda, PixelFormat::I420, w, h)
        });
        println!(
            "{w}x{h} I420 engine with butteraugli (incl. upload buffers): {mib:.1} MiB of device memory"
        );
        let (lo, hi) = (0.9 * recorded, 1.1 * recorded);
        assert!(
            (lo..=hi).contains(&mib),
            "{w}x{h}: {mib:.1} MiB, recorded {recorded} MiB (allowed {lo:.0}–{hi:.0}); run the \
             test alone, and record a deliberate change in docs/GPU-RUNS.md and here"
        );
    }
}
