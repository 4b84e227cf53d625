//! Throughput of every metric per backend, on fixed synthetic frames, printed as a table.
//!
//!     cargo bench -p gpumetrics-engine --bench throughput [-- --seconds 2 --sizes 1080p,2160p]
//!
//! CUDA rows: "device" frames already in GPU memory (the NVDEC case), "host" frames uploaded
//! through the engine's pinned staging. Rows for an unavailable backend say why.
//!
//! Rows: every metric alone, `all`; the no-reference metrics also on one input alone
//! (`inputs` = dist: frames/s), and together (`no-reference`); `full-reference` (every
//! metric that needs the reference) and `full-reference+M` for each no-reference metric M,
//! which show what M adds to a comparison; one per named set of metrics (`aom-ctc`: the AOM
//! CTC's set in one run); `vmaf <model>` rows for VMAF's v1 models (at 8 and, as Netflix
//! recommends measuring v1, 10 bits).

use std::time::{Duration, Instant};

use clap::Parser;
use cudarc::driver::{CudaContext, CudaSlice, DevicePtr};
use gpumetrics_engine::{BackendChoice, Engine, EngineConfig, Frame};

mod common;
use common::I420;

#[derive(Parser)]
struct Args {
    /// Seconds per row.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Comma-separated sizes: 720p, 1080p, 2160p.
    #[arg(long, default_value = "1080p,2160p", value_delimiter = ',')]
    sizes: Vec<String>,
    /// Skip the CPU backend.
    #[arg(long)]
    no_cpu: bool,
    /// Comma-separated rows to run (default: all), e.g. ssim,ms-ssim; a name with `+` is a
    /// row of its own for that set of metrics and row sets (blur+siti, full-reference+blur).
    #[arg(long, value_delimiter = ',')]
    metrics: Vec<String>,
    /// Comma-separated pairs in flight for the CUDA rows (`EngineBuilder::in_flight`).
    #[arg(long, default_value = "1,2,4", value_delimiter = ',')]
    in_flight: Vec<usize>,
    /// Make this distortion map with every pair (`squared-error`, `ssim`, or a metric's
    /// map: `butteraugli`, `cvvdp`, `ssimulacra2`, with that metric in the row): each row's
    /// rate with it, for what the map costs (issue 48: at most 10 % below the same row
    /// without). Rows on one input alone have no map and are left out.
    #[arg(long)]
    map: Option<String>,
    /// What each pair's map is used for (with `--map`): `stats` its statistics only (every
    /// record has them); `frame` a heat frame drawn into device memory (the element's src
    /// in CUDA memory; a map on the host is drawn on the host); `host-frame` a heat frame
    /// on the host (src in system memory); `values` its f32 values on the host (the
    /// command's `--map` files).
    #[arg(long, value_enum, default_value_t = MapUse::Frame)]
    map_use: MapUse,
    #[arg(long)]
    bench: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, clap::ValueEnum)]
enum MapUse {
    Stats,
    Frame,
    HostFrame,
    Values,
}

/// Where the maps go ([`MapUse`]): a heat frame's memory on the device (device 0's primary
/// context, the CUDA backend's) and on the host, made once per row.
struct MapSink {
    used: MapUse,
    device: Option<(std::sync::Arc<CudaContext>, CudaSlice<u8>)>,
    host: Vec<u8>,
}

impl MapSink {
    fn new(used: MapUse, w: u32, h: u32) -> MapSink {
        let bytes = 4 * w as usize * h as usize;
        let device = (used == MapUse::Frame)
            .then(|| {
                let ctx = CudaContext::new(0).ok()?;
                let b = ctx.default_stream().alloc_zeros::<u8>(bytes).ok()?;
                Some((ctx, b))
            })
            .flatten();
        MapSink {
            used,
            device,
            host: vec![0; bytes],
        }
    }

    fn take(&mut self, scores: Option<gpumetrics_engine::Scores>) -> Result<(), String> {
        use gpumetrics_engine::map::MapStyle;
        let Some(map) = scores.as_ref().and_then(|s| s.map()) else {
            return Ok(());
        };
        let stride = 4 * map.width();
        let drawn = match (self.used, &self.device) {
            (MapUse::Stats, _) => return Ok(()),
            (MapUse::Values, _) => return map.values().map(|_| ()).map_err(|e| e.to_string()),
            (MapUse::Frame, Some((ctx, b))) => {
                let (ptr, _sync) = b.device_ptr(b.stream());
                // SAFETY: `b` holds a frame of the map's size in the engine's context, used by
                // nothing else.
                unsafe {
                    map.render_device(
                        MapStyle::Heat,
                        255.0,
                        ptr,
                        stride,
                        b.len(),
                        ctx.cu_ctx() as usize,
                    )
                }
                .map_err(|e| e.to_string())?
            }
            _ => false,
        };
        if !drawn {
            map.render(MapStyle::Heat, 255.0, &mut self.host, stride)
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// Pairs per second; `push`, so that metrics holding a pair back (VMAF) run as in a stream,
/// and pairs in flight overlap as in one.
fn run(
    engine: &mut Engine,
    r: &Frame,
    d: &Frame,
    seconds: f64,
    sink: &mut MapSink,
) -> Result<f64, String> {
    let mut push = |engine: &mut Engine| {
        let scores = match engine.has_reference() {
            true => engine.push(r, d),
            false => engine.push_single(d),
        }
        .map_err(|e| e.to_string())?;
        sink.take(scores)
    };
    push(engine)?; // warm-up
    let start = Instant::now();
    let mut n = 0u64;
    while start.elapsed() < Duration::from_secs_f64(seconds) {
        for _ in 0..16 {
            push(engine)?;
        }
        n += 16;
    }
    // The pairs still in flight are part of the run (and their frames are still valid).
    for s in engine.finish().map_err(|e| e.to_string())? {
        sink.take(Some(s))?;
    }
    Ok(n as f64 / start.elapsed().as_secs_f64())
}

fn size(name: &str) -> (u32, u32) {
    match name {
        "720p" => (1280, 720),
        "1080p" => (1920, 1080),
        "2160p" => (3840, 2160),
        other => panic!("unknown size {other}"),
    }
}

fn main() {
    use gpumetrics_engine::MetricSet;
    use gpumetrics_engine::metric::{all, needing_reference, no_reference};
    let args = Args::parse();
    let nr = no_reference();
    let fr = needing_reference(MetricSet::ALL).fold(MetricSet::default(), |s, i| s | i.flag);
    // (name, metrics, one input alone, VMAF model, bits)
    let mut rows: Vec<(String, MetricSet, bool, Option<&str>, u32)> = Vec::new();
    for i in all() {
        rows.push((i.name.into(), i.flag, false, None, 8));
        if nr.contains(i.flag) {
            rows.push((i.name.into(), i.flag, true, None, 8));
        }
    }
    rows.push(("all".into(), MetricSet::ALL, false, None, 8));
    rows.push(("no-reference".into(), nr, true, None, 8));
    rows.push(("no-reference".into(), nr, false, None, 8));
    rows.push(("full-reference".into(), fr, false, None, 8));
    for i in all().filter(|i| nr.contains(i.flag)) {
        rows.push((
            format!("full-reference+{}", i.name),
            fr | i.flag,
            false,
            None,
            8,
        ));
    }
    for set in gpumetrics_engine::metric::SETS {
        rows.push((set.name.into(), set.set(), false, None, 8));
    }
    for model in ["vmaf_v1.0.16_3d0h", "vmaf_v1.0.16_hfr_3d0h"] {
        for bits in [8, 10] {
            rows.push((
                format!("vmaf {model}"),
                MetricSet::VMAF,
                false,
                Some(model),
                bits,
            ));
        }
    }
    // Sets named on the command line (`--metrics blur+siti+black`): on one input alone too
    // when every metric of the set needs no reference.
    for name in args.metrics.iter().filter(|n| n.contains('+')) {
        if rows.iter().any(|r| &r.0 == name) {
            continue;
        }
        let Some(set) = common::named_set(name) else {
            eprintln!("throughput: {name}: not a set of metric names");
            std::process::exit(2);
        };
        if nr.contains(set) {
            rows.push((name.clone(), set, true, None, 8));
        }
        rows.push((name.clone(), set, false, None, 8));
    }
    let map = args.map.as_deref().map(|name| {
        gpumetrics_engine::map::MapKind::from_name(name).unwrap_or_else(|| {
            eprintln!("throughput: --map {name}: no such map");
            std::process::exit(2);
        })
    });
    if map.is_some() {
        rows.retain(|r| !r.2);
    }
    println!("| metric | inputs | size | format | backend | in flight | frames | pairs/s |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for s in &args.sizes {
        let (w, h) = size(s);
        let frames8 = (I420::new(w, h, 1), I420::new(w, h, 2));
        let frames10 = (I420::with_depth(w, h, 1, 10), I420::with_depth(w, h, 2, 10));
        for (name, m, single, model, bits) in &rows {
            if !args.metrics.is_empty() && !args.metrics.iter().any(|a| a == name) {
                continue;
            }
            let (r, d) = if *bits == 10 { &frames10 } else { &frames8 };
            let format = r.layout.format.name();
            let inputs = match (single, map) {
                (true, _) => "dist".to_string(),
                (false, None) => "both".to_string(),
                (false, Some(k)) => format!("both, map {} ({:?})", k.name(), args.map_use),
            };
            let row = |backend: &str, depth: usize, frames: &str, result: Result<f64, String>| {
                let head = format!("| {name} | {inputs} | {s} | {format} | {backend} | {depth}");
                match result {
                    Ok(fps) => println!("{head} | {frames} | {fps:.0} |"),
                    Err(e) => println!("{head} | {frames} | n/a: {e} |"),
                }
            };
            let mut options = gpumetrics_engine::Options::new();
            if let Some(model) = model {
                options.parse("vmaf-model", model).unwrap();
            }
            let cfg = |backend| EngineConfig {
                metrics: *m,
                backend,
                device_id: 0,
                options: options.clone(),
            };
            let build = |backend, depth| {
                let config = cfg(backend);
                let b = if *single {
                    Engine::single_builder(&config, d.layout)
                } else {
                    Engine::builder(&config, r.layout, d.layout)
                };
                let b = match map {
                    Some(kind) => b.map(kind),
                    None => b,
                };
                b.in_flight(depth).build()
            };
            let mut sink = MapSink::new(args.map_use, w, h);
            if !args.no_cpu {
                let mut e = build(BackendChoice::Cpu, 1).unwrap();
                row(
                    "cpu",
                    1,
                    "host",
                    run(&mut e, &r.host(), &d.host(), args.seconds, &mut sink),
                );
            }
            for &depth in &args.in_flight {
                match build(BackendChoice::Cuda, depth) {
                    Ok(mut e) => {
                        let depth = e.in_flight();
                        row(
                            "cuda",
                            depth,
                            "host",
                            run(&mut e, &r.host(), &d.host(), args.seconds, &mut sink),
                        );
                        row(
                            "cuda",
                            depth,
                            "device",
                            on_device(&mut e, r, d, args.seconds, &mut sink),
                        );
                    }
                    Err(err) => row("cuda", depth, "-", Err(err.to_string())),
                }
            }
        }
    }
}

/// Copies both frames to the GPU once, then measures with device frames.
fn on_device(
    engine: &mut Engine,
    r: &I420,
    d: &I420,
    seconds: f64,
    sink: &mut MapSink,
) -> Result<f64, String> {
    let ctx = CudaContext::new(0).map_err(|e| e.to_string())?;
    let stream = ctx.default_stream();
    let upload = |f: &I420| -> Result<CudaSlice<u8>, String> {
        stream.clone_htod(&f.data).map_err(|e| e.to_string())
    };
    let (rb, db) = (upload(r)?, upload(d)?);
    stream.synchronize().map_err(|e| e.to_string())?;
    let (rp, _g1) = rb.device_ptr(&stream);
    let (dp, _g2) = db.device_ptr(&stream);
    run(engine, &r.device(rp), &d.device(dp), seconds, sink)
}
