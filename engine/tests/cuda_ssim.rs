//! SSIM / MS-SSIM: the CUDA backend agrees with the CPU backend within 1e-5 for every format
//! pair, odd sizes, padded strides and frames already in device memory. Needs a GPU: run
//! with `--ignored` there (see docs/GPU-RUNS.md).

mod common;

use common::{OwnedFrame as Owned, compare_on_device, xorshift};
use gpumetrics_engine::{BackendChoice, Engine, EngineConfig, MetricSet, PixelFormat, Scores};

const TOLERANCE: f64 = 1e-5;
/// Two CUDA runs on the same pair: the blocks' partial sums are added with f64 atomics,
/// whose order varies, so the last bits may differ.
const REPEAT_TOLERANCE: f64 = 1e-12;

/// A frame with padded strides: a smooth pattern plus noise, or that frame with some bytes
/// nudged (the distorted version), so that SSIM is neither 0 nor 1.
fn frame(format: PixelFormat, width: u32, height: u32, seed: u64, distort: bool) -> Owned {
    let mut rnd = xorshift(0x9e37_79b9_7f4a_7c15);
    let mut f = Owned::new(format, width, height, |i| {
        ((i * 7 / 5 + i / 311) % 230) as u8 + (rnd() % 24) as u8
    });
    if distort {
        let mut d = xorshift(seed);
        for v in f.data.iter_mut() {
            let d = d();
            if d.is_multiple_of(4) {
                *v = v.wrapping_add((d >> 32) as u8 % 9).wrapping_sub(4);
            }
        }
    }
    f
}

fn try_engine(backend: BackendChoice, r: &Owned, d: &Owned) -> Option<Engine> {
    let cfg = EngineConfig {
        metrics: MetricSet::SSIM | MetricSet::MS_SSIM,
        backend,
        options: gpumetrics_engine::Options::new()
            .with("ssim-chroma", gpumetrics_engine::OptionValue::Bool(true))
            .unwrap(),
        ..Default::default()
    };
    Engine::new(&cfg, r.layout, d.layout).ok()
}

/// Same fields, values within `tol`; returns the largest difference.
fn agree(a: &Scores, b: &Scores, tol: f64, what: &str) -> f64 {
    let names = |s: &Scores| s.iter().map(|(k, _)| k).collect::<Vec<_>>();
    assert_eq!(names(a), names(b), "{what}");
    let mut worst = 0.0f64;
    for ((k, x), (_, y)) in a.iter().zip(b.iter()) {
        let d = (x - y).abs();
        assert!(d <= tol, "{what} {k}: {x} vs {y}");
        worst = worst.max(d);
    }
    worst
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_agrees_with_cpu_for_every_format() {
    let (mut checked, mut worst, mut fields) = (0, 0.0f64, 0);
    for &rf in PixelFormat::ALL {
        for &df in PixelFormat::ALL {
            for (w, h) in [(17, 9), (199, 171), (641, 361)] {
                if (w, h) == (641, 361) && rf != df {
                    continue;
                }
                let (r, d) = (frame(rf, w, h, 7, false), frame(df, w, h, 11, true));
                let Some(mut cpu) = try_engine(BackendChoice::Cpu, &r, &d) else {
                    continue;
                };
                let mut gpu = try_engine(BackendChoice::Cuda, &r, &d).expect("cuda engine");
                assert_eq!(gpu.backend_name(), "cuda");
                let a = cpu.compare(&r.host(), &d.host()).unwrap();
                let b = gpu.compare(&r.host(), &d.host()).unwrap();
                let what = format!("{} vs {} at {w}x{h}", rf.name(), df.name());
                worst = worst.max(agree(&a, &b, TOLERANCE, &what));
                fields += a.len();
                // The second pair uses the other result slot.
                let b2 = gpu.compare(&r.host(), &d.host()).unwrap();
                agree(&b, &b2, REPEAT_TOLERANCE, &format!("{what}: second pair"));
                checked += 1;
            }
        }
    }
    println!(
        "{checked} format/size combinations, {fields} fields, largest |cpu - cuda| {worst:.2e}"
    );
    assert!(checked > 100);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn device_frames_equal_host_frames() {
    let (r, d) = (
        frame(PixelFormat::Nv12, 1920, 1080, 3, false),
        frame(PixelFormat::Nv12, 1920, 1080, 5, true),
    );
    let mut gpu = try_engine(BackendChoice::Cuda, &r, &d).unwrap();
    let mut cpu = try_engine(BackendChoice::Cpu, &r, &d).unwrap();
    let host = gpu.compare(&r.host(), &d.host()).unwrap();
    let on_device = compare_on_device(&mut gpu, &r, &d);
    agree(&host, &on_device, REPEAT_TOLERANCE, "host vs device frames");
    let c = cpu.compare(&r.host(), &d.host()).unwrap();
    let worst = agree(&c, &on_device, TOLERANCE, "NV12 1080p");
    let (s, ms) = (host.get("ssim").unwrap(), host.get("ms-ssim").unwrap());
    println!("1080p NV12: ssim {s:.6} ms-ssim {ms:.6}, largest |cpu - cuda| {worst:.2e}");
    assert!(s > 0.1 && s < 1.0 && ms > 0.1 && ms < 1.0);
}
