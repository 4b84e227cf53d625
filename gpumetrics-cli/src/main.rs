// SPDX-License-Identifier: MPL-2.0
//! `gpumetrics REF DIST [options]`: measures a distorted video against its reference with the
//! `gpumetrics` element (registered in-process, no GST_PLUGIN_PATH needed) and prints a
//! summary table, optionally per-frame records and a plot; the exit status says whether
//! `--fail-below` thresholds were met. `gpumetrics DIST [options]`: the same for one input
//! measured alone, with the no-reference metrics (the element's ref_sink left unlinked).
//!
//! Modules: [`cli`] arguments, [`options`] the metrics' options, [`fields`] what is
//! known of each field, [`input`] what the files are, [`align`] the offset search,
//! [`raw`] `.yuv` and y4m inputs, [`gate`] which frames reach the element, [`monitor`] windows, alerts and live inputs,
//! [`pipeline`] the GStreamer graph, [`run`] the bus loop, [`output`] table and records,
//! [`plot`] the curves, [`progress`] stderr display.

mod align;
mod cli;
mod fields;
mod gate;
mod input;
mod metrics;
mod monitor;
mod options;
mod output;
mod pipeline;
mod plot;
mod progress;
mod raw;
mod run;

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result, anyhow, bail};
use gpumetrics_engine::{
    BackendChoice, Engine, EngineConfig, EngineError, FrameLayout, MetricSet, Options, PixelFormat,
    metric,
};

use cli::{Args, BackendArg, DecodeArg, FormatArg, PairingArg};
use gate::GateConfig;
use input::Input;
use pipeline::{Decoding, PipelineConfig};

/// Two SIGINTs closer than this are one Ctrl-C (see `real_main`).
const SIGINT_TWICE: std::time::Duration = std::time::Duration::from_millis(250);

/// An error with the exit status it ends the command with.
struct Failure {
    status: i32,
    error: anyhow::Error,
}

fn usage(error: anyhow::Error) -> Failure {
    Failure {
        status: cli::EXIT_USAGE,
        error,
    }
}

impl From<anyhow::Error> for Failure {
    fn from(error: anyhow::Error) -> Self {
        Failure {
            status: cli::EXIT_RUN_ERROR,
            error,
        }
    }
}

/// Prints notes on stderr unless `--quiet`.
struct Notes {
    quiet: bool,
}

impl Notes {
    fn say(&self, text: impl AsRef<str>) {
        if !self.quiet {
            eprintln!("{}", text.as_ref());
        }
    }
}

/// Whether the element's CUDA backend can run here: the engine opens its CUDA context for a
/// tiny frame, exactly what the element does at its first caps. The error says why not.
fn cuda_backend_usable(device: u32) -> Result<(), String> {
    let layout = FrameLayout {
        format: PixelFormat::I420,
        width: 64,
        height: 64,
    };
    let config = EngineConfig {
        metrics: MetricSet::PSNR,
        backend: BackendChoice::Cuda,
        device_id: device,
        ..Default::default()
    };
    Engine::new(&config, layout, layout)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// The metrics of the element's form (`psnr+vmaf`).
fn metric_set(metrics: &str) -> MetricSet {
    metrics
        .split('+')
        .filter_map(MetricSet::named)
        .fold(MetricSet::default(), |set, m| set | m)
}

/// Checks the metrics' options as the engine will, before anything is decoded: the values
/// that only the metric can judge (a VMAF model that does not load) are usage errors too.
/// `metrics` is the element's form (`psnr+vmaf`).
fn check_options(metrics: &str, given: &[options::Given]) -> Result<()> {
    let requested = metric_set(metrics);
    let mut set = Options::new();
    for (spec, value) in given {
        set.set(spec.name, value.clone())?;
    }
    match gpumetrics_engine::metric::check_options(requested, &set) {
        Err(EngineError::InvalidOption { option, why }) => bail!("--{option}: {why}"),
        // Anything else depends on the real frames: the run says it.
        _ => Ok(()),
    }
}

/// Refuses a `--fail-below` on a field of a metric that is not measured (clap has checked
/// that the field is the registry's, and higher-is-better), and with one input (`single`) on
/// a field of the reference (`ref-si`). Fields that depend on an option or on the input
/// (`ssim-u`) are checked after the run.
fn check_thresholds(metrics: &str, thresholds: &[cli::Threshold], single: bool) -> Result<()> {
    let run_fields = fields::of_run(metric_set(metrics), single);
    for t in thresholds {
        let from = metric::all().find(|i| i.fields.iter().any(|f| f.name == t.field));
        if let Some(info) = from
            && !metrics.split('+').any(|m| m == info.name)
        {
            bail!(
                "--fail-below {}: no field `{}` with --metrics {}: it comes from {} (add it \
                 to --metrics)",
                t.field,
                t.field,
                metrics.replace('+', ","),
                info.name
            );
        }
        if single && from.is_some() && !run_fields.contains(&t.field.as_str()) {
            bail!(
                "--fail-below {}: a field of the reference input, and there is one input only \
                 (gpumetrics REF DIST measures the reference too); the fields of this run are {}",
                t.field,
                run_fields.join(", ")
            );
        }
    }
    Ok(())
}

/// Picks the decoding of each input (reference, distorted; software for an absent one) and
/// says which.
fn choose_decoding(
    args: &Args,
    inputs: [Option<&Input>; 2],
    cuda: &Result<(), String>,
    scale_to: Option<(u32, u32)>,
    notes: &Notes,
) -> Result<[Decoding; 2]> {
    let zero_copy = match (cuda, gstgpumetrics::gstcuda::api()) {
        (Ok(()), Ok(_)) => Ok(()),
        (Err(e), _) => Err(format!("the CUDA backend is not usable ({e})")),
        (_, Err(e)) => Err(format!("GStreamer's CUDA library is not usable ({e})")),
    };
    let mut out = [Decoding::Software, Decoding::Software];
    for (i, input) in inputs.iter().enumerate() {
        let Some(input) = input else {
            continue;
        };
        let want_nv = args.decode != DecodeArg::Software && args.backend != BackendArg::Cpu;
        let factory = pipeline::nvdec_factory(input);
        let scaled = i == 1 && scale_to.is_some();
        let cudascale = !scaled || gst::ElementFactory::find("cudascale").is_some();
        let choice = match (&zero_copy, factory) {
            (Ok(()), Some(f)) if want_nv && cudascale => Ok(Decoding::Nvdec(f)),
            (Ok(()), Some(_)) if want_nv => Err("cudascale (for --scale) is missing".to_string()),
            (Ok(()), None) => Err(format!(
                "GStreamer has no NVIDIA decoder for {}",
                input.codec().unwrap_or_else(|| "this codec".into())
            )),
            (Err(e), _) => Err(e.clone()),
            _ => Err("not requested".into()),
        };
        out[i] = match choice {
            Ok(d) => d,
            Err(why) if args.decode == DecodeArg::Nvdec => {
                bail!(
                    "--decode nvdec: cannot decode the {} input with NVDEC: {why}",
                    input.role
                )
            }
            Err(why) => {
                if args.verbose && args.decode == DecodeArg::Auto {
                    notes.say(format!("{}: software decoding because {why}", input.role));
                }
                Decoding::Software
            }
        };
    }
    Ok(out)
}

fn describe_decoding(d: &Decoding, plugged: &[String]) -> String {
    match d {
        Decoding::Nvdec(f) => format!("NVDEC ({f}, CUDA memory, zero-copy)"),
        Decoding::Software if plugged.is_empty() => "software".to_string(),
        Decoding::Software => format!("software ({})", plugged.join(", ")),
    }
}

fn real_main(args: Args) -> Result<i32, Failure> {
    gst::init().context("cannot initialise GStreamer")?;
    gstgpumetrics::plugin_register_static().context("cannot register the gpumetrics element")?;
    let notes = Notes { quiet: args.quiet };
    // Ctrl-C ends the run at the next frame, with the summary of what was measured; a
    // second Ctrl-C ends at once. A second SIGINT within SIGINT_TWICE of the first is the
    // same one delivered twice (`timeout -s INT` signals the command and its process group),
    // not a second Ctrl-C.
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        let first = std::sync::OnceLock::new();
        let _ = ctrlc::set_handler(move || {
            let at = *first.get_or_init(std::time::Instant::now);
            if stop.swap(true, Ordering::SeqCst) && at.elapsed() >= SIGINT_TWICE {
                std::process::exit(130);
            }
        });
    }

    // Usage errors first, before any decoding.
    let single = args.single();
    if single && !args.reference_only.is_empty() {
        let flags = &args.reference_only;
        return Err(usage(anyhow!(
            "{} {} a reference input, and there is one input only: DIST alone is measured \
             with the no-reference metrics, with nothing to align, scale or pair it with (give \
             the reference first to compare: gpumetrics REF DIST)",
            flags.join(", "),
            if flags.len() == 1 { "needs" } else { "need" }
        )));
    }
    let list = args
        .metrics
        .clone()
        .unwrap_or_else(|| metrics::default_list(single));
    let metrics =
        metrics::parse(&list, single).map_err(|e| usage(anyhow!("--metrics {list}: {e}")))?;
    check_options(&metrics, &args.metric_options).map_err(usage)?;
    check_thresholds(&metrics, &args.fail_below, single).map_err(usage)?;
    let alerts = monitor::check_alerts(&args.alerts, metric_set(&metrics), single)
        .map_err(|e| usage(anyhow!(e)))?;
    if let Some(p) = &args.plot {
        let ext = p
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        if !matches!(ext.as_deref(), Some("png" | "svg")) {
            return Err(usage(anyhow!(
                "--plot {}: the file name must end in .png or .svg",
                p.display()
            )));
        }
    }

    let reference = match &args.reference {
        Some(r) => Some(input::discover(r, "reference", &args.raw)?),
        None => None,
    };
    let distorted = input::discover(&args.distorted, "distorted", &args.raw)?;
    match &reference {
        Some(r) => notes.say(format!("reference: {} ({})", r.given, r.describe())),
        None => notes.say("reference: none (one input: measured alone, no-reference metrics)"),
    }
    notes.say(format!(
        "distorted: {} ({})",
        distorted.given,
        distorted.describe()
    ));
    // The input whose size the measured frames have.
    let sized = reference.as_ref().unwrap_or(&distorted);

    if let Some(roi) = &args.roi {
        let what = if single {
            "the input's"
        } else {
            "the reference's"
        };
        roi.check_within(sized.width, sized.height, what)
            .map_err(|e| usage(anyhow!("--roi: {e}")))?;
    }
    let inputs = [reference.as_ref(), Some(&distorted)];
    let live = inputs.iter().flatten().any(|i| i.live);
    if live {
        if args.align.is_some() {
            return Err(usage(anyhow!(
                "--align auto decodes the first frames of both inputs twice, which a live \
                 input cannot replay: give the offset with --offset"
            )));
        }
        let which: Vec<&str> = inputs
            .iter()
            .flatten()
            .filter(|i| i.live)
            .map(|i| i.role)
            .collect();
        notes.say(format!(
            "live: the {} input{} live; running until Ctrl-C or the end of the stream",
            which.join(" and "),
            if which.len() == 1 { " is" } else { "s are" }
        ));
    }

    let same_size = (sized.width, sized.height) == (distorted.width, distorted.height);
    let scale_to = match (same_size, args.scale) {
        (true, _) => None,
        (false, true) => {
            notes.say(format!(
                "scaling: distorted {}x{} -> {}x{} (videoscale method={}, or cudascale on NVDEC)",
                distorted.width,
                distorted.height,
                sized.width,
                sized.height,
                pipeline::SCALE_METHOD
            ));
            Some((sized.width, sized.height))
        }
        (false, false) => {
            return Err(anyhow!(
                "the inputs differ in size (reference {}x{}, distorted {}x{}): add --scale to \
                 scale the distorted video to the reference size",
                sized.width,
                sized.height,
                distorted.width,
                distorted.height
            )
            .into());
        }
    };
    let pairing = match args.pairing {
        PairingArg::Timestamp => "timestamp",
        PairingArg::Sequence => "sequence",
    };
    if let Some(reference) = &reference
        && reference.framerate != distorted.framerate
        && args.pairing == PairingArg::Timestamp
    {
        notes.say(
            "frame rates differ: frames are paired by timestamp; frames without a partner \
             are counted as unmatched",
        );
    }

    // Backend and decoding.
    let cuda = if args.backend == BackendArg::Cpu {
        Err("--backend cpu".to_string())
    } else {
        cuda_backend_usable(args.device)
    };
    match (&cuda, args.backend) {
        (Err(e), BackendArg::Cuda) => {
            return Err(anyhow!("--backend cuda: no usable CUDA device: {e}").into());
        }
        (Ok(()), _) => notes.say(format!("backend: cuda (device {})", args.device)),
        (Err(e), BackendArg::Auto) => notes.say(if args.verbose {
            format!("backend: cpu (CUDA not usable: {e})")
        } else {
            "backend: cpu (no usable CUDA device; -v says why)".to_string()
        }),
        (Err(_), _) => notes.say("backend: cpu"),
    }
    let decoding = choose_decoding(&args, inputs, &cuda, scale_to, &notes)?;

    // Alignment (two inputs: with one, --align and --offset were refused above).
    let offset = match (args.align, &reference) {
        (Some(cli::AlignArg::Auto), Some(reference)) => {
            let a = align::find(reference, &distorted, args.align_frames, args.align_range)?;
            let direction = match a.offset {
                0 => "the inputs are aligned".to_string(),
                n if n > 0 => format!("the distorted video starts {n} frames late"),
                n => format!("the distorted video starts {} frames early", -n),
            };
            let margin = a.margin.map_or("no other candidate".into(), |m| {
                format!("margin {m:.2} dB over the next best")
            });
            notes.say(format!(
                "align: offset {:+} ({direction}); PSNR-Y {:.2} dB, {margin} ({} offsets tried on {} pairs each)",
                a.offset, a.psnr, a.candidates, a.pairs
            ));
            if a.margin.is_some_and(|m| m < 0.5) {
                notes.say(
                    "align: warning: the margin is small (little motion?): check the offset or \
                     give it with --offset",
                );
            }
            a.offset
        }
        _ => args.offset,
    };
    let (ref_skip, dist_skip) = if offset >= 0 {
        (0, offset as u64)
    } else {
        (offset.unsigned_abs(), 0)
    };
    let timestamp = args.pairing == PairingArg::Timestamp;
    let gates = [
        GateConfig {
            skip: ref_skip,
            every: args.every,
            limit: args.frames,
            index_duration: None,
        },
        GateConfig {
            skip: dist_skip,
            every: args.every,
            limit: args.frames,
            // One input counts its own frames.
            index_duration: if timestamp {
                reference.as_ref().and_then(Input::frame_duration)
            } else {
                None
            },
        },
    ];
    // Expected pairs (with one input, frames), for the progress bar.
    let total = sized.estimated_frames().map(|n| {
        let mut pairs = n.saturating_sub(ref_skip);
        if reference.is_some()
            && let Some(d) = distorted.estimated_frames()
            && distorted.framerate == sized.framerate
        {
            pairs = pairs.min(d.saturating_sub(dist_skip));
        }
        let pairs = pairs.div_ceil(args.every);
        args.frames.map_or(pairs, |f| pairs.min(f))
    });

    let mut config = PipelineConfig {
        metrics: metrics.clone(),
        backend: args.backend.nick(),
        device: args.device,
        pairing,
        options: args.metric_options.clone(),
        scale_to,
        convert_to: None,
        decoding: decoding.clone(),
        gates,
        monitoring: monitor::Monitoring {
            window: args.window,
            alerts: alerts.as_ref().map(|(joined, _)| joined.clone()),
            subsample: args.subsample,
            roi: args.roi,
            prometheus: args.prometheus.clone(),
        },
    };
    let to_file = args.output.is_some();
    let mut sink = output::RecordSink::open(
        args.format,
        args.output.as_deref(),
        fields::of_run(metric_set(&metrics), single),
    )
    .with_context(|| {
        format!(
            "cannot create {}",
            args.output.as_deref().unwrap_or("-".as_ref()).display()
        )
    })?;
    notes.say(match (&args.metrics, single) {
        (None, true) => format!(
            "metrics: {} (one input, no --metrics: every no-reference metric)",
            metrics.replace('+', ", ")
        ),
        _ => format!("metrics: {}", metrics.replace('+', ", ")),
    });
    let keep = args.plot.is_some() || (args.format == FormatArg::Table && to_file);
    let report = run::Report {
        unit: if single { "frame" } else { "pair" },
        fields: monitor::main_fields(
            metric_set(&metrics),
            alerts.as_ref().map_or(&[][..], |(_, rules)| rules),
        ),
        // Where the summary table goes (stderr when the records are on stdout).
        windows_to_stdout: args.format == FormatArg::Table || to_file,
        alerts: alerts.is_some(),
    };
    let (built, outcome) = loop {
        let built = pipeline::build(&config, inputs, stop.clone())?;
        let unit = if single { "frames" } else { "pairs" };
        let mut progress = progress::Progress::new(total, args.quiet, live, unit);
        match run::run(
            &built,
            &stop,
            &mut sink,
            &mut progress,
            keep,
            &report,
            args.verbose,
        ) {
            Ok(outcome) => break (built, outcome),
            Err(e) => {
                // Differing raw formats (e.g. 4:2:0 against 4:4:4) fail at the first
                // frames: run again with the distorted video converted to the reference's
                // format, as other quality tools do.
                let formats = built.caps.each_ref().map(|c| {
                    c.lock()
                        .ok()
                        .and_then(|c| c.as_ref().and_then(pipeline::caps_format))
                });
                match formats {
                    [Some(r), Some(d)] if r != d && config.convert_to.is_none() => {
                        notes.say(format!(
                            "formats differ (reference {r}, distorted {d}): converting the \
                             distorted video to {r} ({})",
                            match config.decoding[1] {
                                Decoding::Nvdec(_) => "cudaconvert",
                                Decoding::Software => "videoconvert",
                            }
                        ));
                        config.convert_to = Some(r);
                    }
                    _ => return Err(e.into()),
                }
            }
        }
    };
    drop(sink);

    for (i, d) in decoding.iter().enumerate() {
        if inputs[i].is_none() {
            continue;
        }
        let plugged = built.decoders[i]
            .lock()
            .map(|v| v.clone())
            .unwrap_or_default();
        notes.say(format!(
            "decoding {}: {}",
            ["reference", "distorted"][i],
            describe_decoding(d, &plugged)
        ));
    }
    // With NVDEC, whether the frames stayed on the device is the point: always say it.
    let nvdec = decoding.iter().any(|d| matches!(d, Decoding::Nvdec(_)));
    if (args.verbose || nvdec)
        && let Some(m) = &outcome.memory_stats
    {
        let get = |f: &str| m.get::<u64>(f).unwrap_or(0);
        notes.say(format!(
            "memory: {} frames read in CUDA memory (zero-copy), {} downloaded to the host, {} \
             in system memory",
            get("device-frames"),
            get("downloaded-frames"),
            get("system-frames")
        ));
        if args.verbose {
            notes.say(format!("memory-stats: {m}"));
        }
    }
    if outcome.interrupted {
        notes.say(format!(
            "interrupted after {} {}: the summary covers those",
            outcome.summary.frames,
            if single {
                "measured frames"
            } else {
                "compared pairs"
            }
        ));
    }

    let gate = |i: usize, f: fn(&gate::Gate) -> u64| built.gates[i].as_ref().map_or(0, f);
    let counts = output::Counts {
        // The first input's gate counts the instants --every leaves out.
        skipped: gate(if single { 1 } else { 0 }, gate::Gate::skipped),
        offset_dropped: [
            gate(0, gate::Gate::offset_dropped),
            gate(1, gate::Gate::offset_dropped),
        ],
        single,
    };
    let table = output::summary_table(&outcome.summary, &counts);
    match (args.format, &args.output) {
        (FormatArg::Table, Some(path)) => {
            let mut text = output::frames_table(&outcome.records) + "\n";
            if !outcome.events.is_empty() {
                text += &(output::events_text(&outcome.events) + "\n");
            }
            text += &table;
            std::fs::write(path, text)
                .with_context(|| format!("cannot write {}", path.display()))?;
            print!("{table}");
        }
        (FormatArg::Table, None) => print!("{table}"),
        // Records went to the file: the table goes to stdout.
        (_, Some(_)) => print!("{table}"),
        // Records went to stdout: the table goes to stderr, so stdout stays machine-readable.
        (_, None) => {
            if !args.quiet {
                eprint!("{table}");
            }
        }
    }
    let _ = std::io::stdout().flush();
    if to_file && let Some(path) = &args.output {
        notes.say(format!("records: {}", path.display()));
    }

    if let Some(path) = &args.plot {
        let title = match &reference {
            Some(r) => format!(
                "{} vs {}",
                short_name(&distorted.given),
                short_name(&r.given)
            ),
            None => format!("{} (no reference)", short_name(&distorted.given)),
        };
        plot::write(path, &outcome.records, &outcome.summary, &title)?;
        notes.say(format!("plot: {}", path.display()));
    }

    let mut status = if outcome.interrupted { 130 } else { 0 };
    for t in &args.fail_below {
        let Some(stats) = outcome.summary.field(&t.field) else {
            if outcome.summary.frames == 0 {
                eprintln!("fail: --fail-below {}: no pair was compared", t.field);
                status = cli::EXIT_THRESHOLD;
                continue;
            }
            let fields: Vec<&str> = outcome
                .summary
                .fields
                .iter()
                .map(|(n, _)| n.as_str())
                .collect();
            return Err(usage(anyhow!(
                "--fail-below: this run has no field `{}`; its fields are {}",
                t.field,
                fields.join(", ")
            )));
        };
        if stats.mean < t.value || stats.mean.is_nan() {
            eprintln!(
                "fail: {} mean {} is below {}",
                t.field,
                output::fmt_score(&t.field, stats.mean),
                t.value
            );
            status = cli::EXIT_THRESHOLD;
        } else {
            notes.say(format!(
                "pass: {} mean {} >= {}",
                t.field,
                output::fmt_score(&t.field, stats.mean),
                t.value
            ));
        }
    }
    Ok(status)
}

/// The file name of a path or URI, for the plot title.
fn short_name(given: &str) -> &str {
    given.rsplit('/').find(|s| !s.is_empty()).unwrap_or(given)
}

/// Parses the command line, with the metric names of the element in `--metrics`' help.
fn parse_args() -> Args {
    let names = gst::init()
        .ok()
        .and_then(|_| gstgpumetrics::plugin_register_static().ok())
        .map(|_| {
            (
                metrics::available().join(", "),
                metrics::no_reference().join(", "),
            )
        });
    let mut cmd = cli::command();
    if let Some((names, no_reference)) = names {
        cmd = cmd.mut_arg("metrics", |a| {
            a.help(format!(
                "Metrics to compute, comma-separated: {names}; or all (every metric the \
                 element offers; with one input, every no-reference metric). Default: psnr; \
                 with one input (DIST alone), the no-reference metrics ({no_reference}), the \
                 only ones it can run"
            ))
        });
    }
    let matches = cmd.get_matches();
    cli::from_matches(&matches).unwrap_or_else(|e| e.exit())
}

fn main() -> ExitCode {
    let args = parse_args();
    match real_main(args) {
        Ok(status) => ExitCode::from(status as u8),
        Err(Failure { status, error }) => {
            eprintln!("gpumetrics: error: {error:#}");
            ExitCode::from(status as u8)
        }
    }
}
