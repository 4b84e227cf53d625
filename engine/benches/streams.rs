//! Many streams on one GPU: N engines in one process, one thread each, all pushing the same
//! fixed pair of 1080p frames (or one frame, for the `dist:` sets) for the same time.
//!
//!     cargo bench -p gpumetrics-engine --bench streams [-- --engines 1,2,4,8,16,32
//!         --sets psnr+ssim+vmaf,all,dist:blur+blockiness+siti+black+freeze --frames device,host]
//!
//! Per row: the aggregate pairs/s of all engines, the slowest and the fastest engine's rate
//! and their spread (how evenly the GPU is shared: a starved engine shows here), and the
//! device memory each engine takes (the drop in free memory while the N engines are built,
//! divided by N, so shared modules and tables count once).

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use clap::Parser;
use cudarc::driver::{CudaContext, CudaSlice, DevicePtr};
use gpumetrics_engine::metric::no_reference;
use gpumetrics_engine::{BackendChoice, Engine, EngineConfig, Frame, FrameLayout, MetricSet};

mod common;
use common::I420;

#[derive(Parser)]
struct Args {
    /// Seconds per row (every engine runs this long).
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Comma-separated engine counts.
    #[arg(long, default_value = "1,2,4,8,16,32", value_delimiter = ',')]
    engines: Vec<usize>,
    /// Comma-separated metric sets: names joined by `+` (metric names, `all`,
    /// `full-reference`, `no-reference`); a `dist:` prefix measures that input alone.
    #[arg(long, default_value = "psnr+ssim+vmaf,all", value_delimiter = ',')]
    sets: Vec<String>,
    /// Comma-separated frame kinds: device (frames already in GPU memory), host.
    #[arg(long, default_value = "device,host", value_delimiter = ',')]
    frames: Vec<String>,
    /// Pairs in flight per engine.
    #[arg(long, default_value_t = 1)]
    in_flight: usize,
    /// Width and height of the frames.
    #[arg(long, default_value_t = 1920)]
    width: u32,
    #[arg(long, default_value_t = 1080)]
    height: u32,
    #[arg(long)]
    bench: bool,
}

/// A set named on the command line: its metrics and whether it runs on one input.
fn parse_set(name: &str) -> Option<(MetricSet, bool)> {
    let (single, names) = match name.strip_prefix("dist:") {
        Some(rest) => (true, rest),
        None => (false, name),
    };
    let set = common::named_set(names)?;
    (!single || no_reference().contains(set)).then_some((set, single))
}

/// Free device memory in bytes, as the driver reports it for the current context.
fn free_memory(ctx: &CudaContext) -> Result<usize, String> {
    ctx.bind_to_thread().map_err(|e| e.to_string())?;
    cudarc::driver::result::mem_get_info()
        .map(|(free, _)| free)
        .map_err(|e| e.to_string())
}

/// What one row measured.
struct Row {
    aggregate: f64,
    slowest: f64,
    fastest: f64,
    mib_per_engine: f64,
}

/// Builds `n` engines, then runs each on its own thread for `seconds` (started together by a
/// barrier) and collects each engine's pairs/s.
fn measure(
    args: &Args,
    (metrics, single): (MetricSet, bool),
    n: usize,
    frames: (&Frame<'_>, &Frame<'_>),
    layout: FrameLayout,
    ctx: &CudaContext,
) -> Result<Row, String> {
    let config = EngineConfig {
        metrics,
        backend: BackendChoice::Cuda,
        device_id: 0,
        options: gpumetrics_engine::Options::new(),
    };
    let before = free_memory(ctx)?;
    let mut engines = Vec::with_capacity(n);
    for _ in 0..n {
        let b = if single {
            Engine::single_builder(&config, layout)
        } else {
            Engine::builder(&config, layout, layout)
        };
        engines.push(
            b.in_flight(args.in_flight)
                .build()
                .map_err(|e| e.to_string())?,
        );
    }
    let after = free_memory(ctx)?;
    let mib_per_engine = before.saturating_sub(after) as f64 / n as f64 / (1 << 20) as f64;
    let barrier = Arc::new(Barrier::new(n));
    let seconds = args.seconds;
    let (r, d) = frames;
    let rates: Vec<Result<f64, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = engines
            .into_iter()
            .map(|mut engine| {
                let barrier = barrier.clone();
                scope.spawn(move || -> Result<f64, String> {
                    let mut push = || -> Result<(), String> {
                        let done = if single {
                            engine.push_single(d)
                        } else {
                            engine.push(r, d)
                        };
                        done.map(|_| ()).map_err(|e| e.to_string())
                    };
                    push()?; // warm-up
                    barrier.wait();
                    let start = Instant::now();
                    let mut pairs = 0u64;
                    while start.elapsed() < Duration::from_secs_f64(seconds) {
                        for _ in 0..8 {
                            push()?;
                        }
                        pairs += 8;
                    }
                    engine.finish().map_err(|e| e.to_string())?;
                    Ok(pairs as f64 / start.elapsed().as_secs_f64())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("engine thread panicked".into()))
            })
            .collect()
    });
    let rates = rates.into_iter().collect::<Result<Vec<f64>, String>>()?;
    Ok(Row {
        aggregate: rates.iter().sum(),
        slowest: rates.iter().copied().fold(f64::INFINITY, f64::min),
        fastest: rates.iter().copied().fold(0.0, f64::max),
        mib_per_engine,
    })
}

fn main() {
    let args = Args::parse();
    let ctx = match CudaContext::new(0) {
        Ok(c) => c,
        Err(e) => {
            println!("streams: no CUDA device ({e}): nothing to measure");
            return;
        }
    };
    let (r, d) = (
        I420::new(args.width, args.height, 1),
        I420::new(args.width, args.height, 2),
    );
    let stream = ctx.default_stream();
    let upload = |f: &I420| -> CudaSlice<u8> { stream.clone_htod(&f.data).expect("upload") };
    let (rb, db) = (upload(&r), upload(&d));
    stream.synchronize().expect("synchronize");
    let (rp, _g1) = rb.device_ptr(&stream);
    let (dp, _g2) = db.device_ptr(&stream);
    let (rd, dd) = (r.device(rp), d.device(dp));
    let (rh, dh) = (r.host(), d.host());
    println!(
        "| set | inputs | frames | engines | in flight | pairs/s (all) | per engine (slowest / fastest) | spread | MiB per engine |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for name in &args.sets {
        let Some(set) = parse_set(name) else {
            eprintln!(
                "streams: {name}: not a set of metric names (or dist: with a full-reference metric)"
            );
            std::process::exit(2);
        };
        let label = name.strip_prefix("dist:").unwrap_or(name);
        let inputs = if set.1 { "dist" } else { "both" };
        for kind in &args.frames {
            let frames = match kind.as_str() {
                "device" => (&rd, &dd),
                "host" => (&rh, &dh),
                other => {
                    eprintln!("streams: unknown frame kind {other} (device, host)");
                    std::process::exit(2);
                }
            };
            for &n in &args.engines {
                let head = format!("| {label} | {inputs} | {kind} | {n} | {}", args.in_flight);
                match measure(&args, set, n.max(1), frames, r.layout, &ctx) {
                    Ok(row) => println!(
                        "{head} | {:.0} | {:.0} / {:.0} | {:.0} % | {:.0} |",
                        row.aggregate,
                        row.slowest,
                        row.fastest,
                        100.0 * (row.fastest - row.slowest) / row.fastest.max(1e-9),
                        row.mib_per_engine
                    ),
                    Err(e) => println!("{head} | n/a: {e} | | | |"),
                }
            }
        }
    }
}
