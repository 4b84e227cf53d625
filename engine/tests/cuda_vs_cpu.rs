//! The CUDA backend gives the CPU backend's numbers, for every format, odd sizes, padded
//! strides and frames already in device memory. Needs a GPU: run with `--ignored` there
//! (see docs/GPU-RUNS.md).

mod common;

use common::{OwnedFrame as Owned, compare_on_device, xorshift};
use gpumetrics_engine::{BackendChoice, Engine, EngineConfig, MetricSet, PixelFormat};

/// Random bytes with padded strides.
fn frame(format: PixelFormat, width: u32, height: u32, seed: u64) -> Owned {
    let mut rnd = xorshift(seed);
    Owned::new(format, width, height, |_| (rnd() >> 56) as u8)
}

/// `None` for format pairs the engine refuses (covered by the plan tests).
fn try_engine(backend: BackendChoice, r: &Owned, d: &Owned) -> Option<Engine> {
    let cfg = EngineConfig {
        metrics: MetricSet::PSNR,
        backend,
        device_id: 0,
        ..Default::default()
    };
    Engine::new(&cfg, r.layout, d.layout).ok()
}

fn engine(backend: BackendChoice, r: &Owned, d: &Owned) -> Engine {
    try_engine(backend, r, d).expect("engine")
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_equals_cpu_for_every_format() {
    let mut checked = 0;
    for &rf in PixelFormat::ALL {
        for &df in PixelFormat::ALL {
            for (w, h) in [(1, 1), (17, 9), (640, 360), (1921, 1081)] {
                let (r, d) = (frame(rf, w, h, 7), frame(df, w, h, 11));
                let Some(mut cpu) = try_engine(BackendChoice::Cpu, &r, &d) else {
                    continue;
                };
                let mut gpu = engine(BackendChoice::Cuda, &r, &d);
                assert_eq!(gpu.backend_name(), "cuda");
                let a = cpu.compare(&r.host(), &d.host()).unwrap();
                let b = gpu.compare(&r.host(), &d.host()).unwrap();
                assert_eq!(a, b, "{} vs {} at {w}x{h}", rf.name(), df.name());
                checked += 1;
            }
        }
    }
    println!("{checked} format/size combinations equal");
    assert!(checked > 100);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn device_frames_equal_host_frames() {
    let (r, d) = (
        frame(PixelFormat::Nv12, 1920, 1080, 3),
        frame(PixelFormat::Nv12, 1920, 1080, 5),
    );
    let mut gpu = engine(BackendChoice::Cuda, &r, &d);
    let host = gpu.compare(&r.host(), &d.host()).unwrap();
    let on_device = compare_on_device(&mut gpu, &r, &d);
    assert_eq!(host, on_device);
    assert!(host.get("psnr-y").unwrap().is_finite());
}
