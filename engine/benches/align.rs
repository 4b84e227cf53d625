//! What live alignment (`align=auto`) costs per frame at a given size: the thumbnail of a
//! frame on the CPU (host frames) and on the GPU (device frames; skipped without CUDA),
//! and the aligner's work per pair, locked (each pair checked against 25 offsets) and
//! searching (every offset within ±`--range` tried on 16 frames, at the worst: every
//! distorted frame).
//!
//!     cargo bench -p gpumetrics-engine --bench align [-- --size 1920x1080 --range 5
//!         --fps 30 --seconds 2]
//!
//! A pair costs two thumbnails (one per input) and one aligner step.

use std::time::{Duration, Instant};

use clap::Parser;
use gpumetrics_engine::Frame;
use gpumetrics_engine::align::{Aligner, Incoming, Thumbnail, of_host};

// The frames only: the metric sets are the other benches'.
#[allow(dead_code)]
mod common;
use common::I420;

#[derive(Parser)]
struct Args {
    /// Frame size, WIDTHxHEIGHT.
    #[arg(long, default_value = "1920x1080")]
    size: String,
    /// align-range in seconds.
    #[arg(long, default_value_t = 5.0)]
    range: f64,
    /// Frame rate of both inputs.
    #[arg(long, default_value_t = 30.0)]
    fps: f64,
    /// Seconds per row.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// Runs `f` for `seconds`: its mean time per call.
fn time(seconds: f64, mut f: impl FnMut()) -> Duration {
    let start = Instant::now();
    let mut n = 0u32;
    while start.elapsed().as_secs_f64() < seconds || n < 3 {
        f();
        n += 1;
    }
    start.elapsed() / n
}

/// A picture that changes every frame (the aligner's input).
fn thumbnail(i: u64) -> Thumbnail {
    let mut cells = [0f32; gpumetrics_kernels::thumb::CELLS];
    for (c, v) in cells.iter_mut().enumerate() {
        let x = (i * 2_654_435_761 + c as u64 * 40_503) % 1000;
        *v = 40.0 + (x as f32) / 10.0;
    }
    Thumbnail::from_cells(cells)
}

fn main() {
    let args = Args::parse();
    let (w, h) = args
        .size
        .split_once('x')
        .and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?)))
        .expect("--size WIDTHxHEIGHT");
    let frame = I420::new(w, h, 7);
    let step = (1e9 / args.fps) as u64;
    let range = (args.range * 1e9) as u64;
    println!(
        "live alignment at {w}x{h}, {} fps, align-range {} s",
        args.fps, args.range
    );
    println!("| work | per call | calls per pair | per pair |");
    println!("| --- | --- | --- | --- |");
    let row = |what: &str, t: Duration, calls: u32| {
        println!(
            "| {what} | {:.1} µs | {calls} | {:.1} µs |",
            t.as_secs_f64() * 1e6,
            t.as_secs_f64() * 1e6 * calls as f64
        )
    };
    let Frame::Host(host) = frame.host() else {
        unreachable!("a host frame")
    };
    let t = time(args.seconds, || {
        std::hint::black_box(of_host(&host, &frame.layout).unwrap());
    });
    row("thumbnail, host frame (CPU)", t, 2);
    match device(&frame, args.seconds) {
        Ok(t) => row("thumbnail, device frame (GPU, with the copy back)", t, 2),
        Err(e) => println!("| thumbnail, device frame | skipped: {e} | | |"),
    }

    // Locked: the distorted input 1.3 s behind, past the lock.
    let delay = 1_300_000_000;
    let mut a: Aligner<u64> = Aligner::new(range);
    let (mut r, mut d) = (0u64, 0u64);
    let push = |a: &mut Aligner<u64>, r: &mut u64, d: &mut u64| {
        a.push_reference(Incoming {
            running_time: *r * step,
            duration: Some(step),
            thumbnail: thumbnail(*r),
            buffer: *r,
        });
        *r += 1;
        if *r * step > delay {
            a.push_distorted(Incoming {
                running_time: delay + *d * step,
                duration: Some(step),
                thumbnail: thumbnail(*d),
                buffer: *d,
            });
            *d += 1;
        }
    };
    while a.offset().is_none() {
        push(&mut a, &mut r, &mut d);
    }
    let t = time(args.seconds, || push(&mut a, &mut r, &mut d));
    row("aligner, locked (one frame of each input)", t, 1);

    // Searching: a still picture never locks, so every distorted frame searches.
    let mut a: Aligner<u64> = Aligner::new(range);
    let still = thumbnail(0);
    let mut i = 0u64;
    let mut feed = |a: &mut Aligner<u64>| {
        for distorted in [false, true] {
            let f = Incoming {
                running_time: i * step,
                duration: Some(step),
                thumbnail: still.clone(),
                buffer: i,
            };
            if distorted {
                a.push_distorted(f);
            } else {
                a.push_reference(f);
            }
        }
        i += 1;
    };
    for _ in 0..(range / step) * 2 {
        feed(&mut a);
    }
    let t = time(args.seconds, || feed(&mut a));
    row("aligner, searching (one frame of each input)", t, 1);
}

/// The device thumbnail's time per frame, on device 0.
fn device(frame: &I420, seconds: f64) -> Result<Duration, String> {
    // SAFETY: only probes for the driver library.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err("no CUDA driver".into());
    }
    let ctx = cudarc::driver::CudaContext::new(0).map_err(|e| e.to_string())?;
    let stream = ctx.default_stream();
    let data = stream.clone_htod(&frame.data).map_err(|e| e.to_string())?;
    let (base, _guard) = cudarc::driver::DevicePtr::device_ptr(&data, &stream);
    // SAFETY: the context lives as long as `ctx`, which the thumbnailer keeps.
    let ext = unsafe {
        gpumetrics_engine::cuda::ExternalContext::new(
            ctx.cu_ctx() as usize,
            0,
            Box::new(ctx.clone()),
        )
    };
    let mut t = gpumetrics_engine::align::cuda::Thumbnailer::new(ext).map_err(|e| e.to_string())?;
    let Frame::Device(d) = frame.device(base) else {
        unreachable!("a device frame")
    };
    Ok(time(seconds, || {
        std::hint::black_box(t.of(&d, &frame.layout).unwrap());
    }))
}
