// SPDX-License-Identifier: MPL-2.0
//! `gpumetrics REF DIST [options]`: measures a distorted video against its reference with the
//! `gpumetrics` element (registered in-process, no GST_PLUGIN_PATH needed) and prints a
//! summary table, optionally per-frame records and a plot; the exit status says whether
//! the `--fail` rules were met. `gpumetrics DIST [options]`: the same for one input
//! measured alone, with the no-reference metrics (the element's ref_sink left unlinked).
//! `gpumetrics REF DIST1 DIST2 ... [options]`: several distorted files against one
//! reference decoded once, in one pipeline ([`several`]).
//!
//! Modules: [`cli`] arguments, [`options`] the metrics' options, [`fields`] what is
//! known of each field, [`fail`] the quality gates, [`input`] what the files are, [`raw`]
//! `.yuv` and y4m inputs, [`align`] the offset search, [`gate`] which frames reach the
//! element, [`monitor`] windows, alerts and live inputs, [`pipeline`] the GStreamer graph,
//! [`run`] the bus loop, [`output`] table and records, [`records`] the machine-readable
//! layouts, [`header`] their header, [`plot`] the curves, [`progress`] stderr display,
//! [`several`] the run of several distorted files.

mod align;
mod cli;
mod fail;
mod fields;
mod gate;
mod header;
mod input;
mod metrics;
mod monitor;
mod options;
mod output;
mod pipeline;
mod plot;
mod progress;
mod raw;
mod records;
mod run;
mod several;

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

/// Checks before decoding that `path` can be written (its folder exists, it is not a
/// folder, the file system lets us), so that a typo in `-o` or `--plot` does not cost the
/// run. A file the check creates is removed again.
fn check_writable(path: &std::path::Path) -> std::io::Result<()> {
    if path.is_dir() {
        return Err(std::io::Error::other("it is a folder: give a file name"));
    }
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// Why a run compared no pair, from what the gates saw: the offset, an empty input, or
/// frames that found no partner (`several`: for one of several distorted files).
fn why_no_pairs(
    gates: &[Option<gate::Gate>; 2],
    summary: &gstgpumetrics::message::Summary,
    offset: i64,
    single: bool,
    several: bool,
) -> String {
    let roles = ["reference", "distorted"];
    for (i, g) in gates.iter().enumerate() {
        let Some(g) = g else { continue };
        let kept = g.kept.load(Ordering::Relaxed) + g.skipped();
        let dropped = g.offset_dropped();
        if kept == 0 && dropped > 0 {
            return format!(
                "the offset ({offset:+}) drops all {dropped} frames of the {} input, so \
                 nothing is left to compare: give an --offset within its length{}",
                roles[i],
                // --align finds the offset of one pair only.
                if several {
                    ""
                } else {
                    ", or --align auto to find it"
                }
            );
        }
        if kept == 0 {
            return format!("the {} input gave no frame", roles[i]);
        }
    }
    if single {
        return "the element measured no frame (-v may say why)".into();
    }
    if summary.unmatched_ref > 0 || summary.unmatched_dist > 0 {
        return format!(
            "no frame found a partner of the same time in the other input ({} reference, {} \
             distorted frames unmatched): with broken timestamps, try --pairing sequence",
            summary.unmatched_ref, summary.unmatched_dist
        );
    }
    "the element compared no pair (-v may say why)".into()
}

/// Writes `text` to stdout; the error (a full disk, a closed pipe) is the command's.
fn print_stdout(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|_| out.flush())
        .context("writing the summary to stdout")
}

/// Whether `error` comes from writing to a closed pipe (`gpumetrics ... | head`).
fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Ends the process the way a closed pipe ends other tools: by SIGPIPE, quietly (the
/// shell's status 141; `set -o pipefail` treats it as it treats `head`'s other writers).
fn die_of_sigpipe() -> ! {
    // SAFETY: restoring the default disposition and raising the signal in this thread; the
    // process ends there (Rust ignores SIGPIPE at start-up so that writes return EPIPE).
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    std::process::exit(128 + libc::SIGPIPE)
}

/// Bits per sample of a raw video format (`I420_10LE`: 10).
fn depth(format: &str) -> Option<u32> {
    let f = gst_video::VideoFormat::from_string(format);
    (f != gst_video::VideoFormat::Unknown)
        .then(|| {
            gst_video::VideoFormatInfo::from_format(f)
                .depth()
                .first()
                .copied()
        })
        .flatten()
}

/// A note for each input whose frames were measured at fewer bits than they were decoded
/// with: formats that differ in layout are converted to the reference's, so a 10-bit 4:4:4
/// distorted video against an 8-bit 4:2:0 reference is measured as 8-bit 4:2:0.
fn depth_notes(decoded: &[pipeline::CapsCell; 2], caps: &[pipeline::CapsCell; 2]) -> Vec<String> {
    let format = |c: &std::sync::Mutex<Option<gst::Caps>>| {
        c.lock()
            .ok()
            .and_then(|c| c.as_ref().and_then(pipeline::caps_format))
    };
    let mut notes = Vec::new();
    for (i, role) in ["reference", "distorted"].iter().enumerate() {
        let (Some(decoded), Some(measured)) = (format(&decoded[i]), format(&caps[i])) else {
            continue;
        };
        if let (Some(from), Some(to)) = (depth(&decoded), depth(&measured))
            && to < from
        {
            notes.push(format!(
                "bit depth: the {role} video is {from}-bit ({decoded}) and was measured as \
                 {to}-bit ({measured}), the other input's format: its samples were rounded to \
                 {to} bits, and the scores include that rounding"
            ));
        }
    }
    notes
}

/// Whether the CUDA backend runs (`Err`: why not), said on stderr; `--backend cuda`
/// without a usable device is an error.
fn choose_backend(args: &Args, notes: &Notes) -> Result<Result<(), String>> {
    let cuda = if args.backend == BackendArg::Cpu {
        Err("--backend cpu".to_string())
    } else {
        cuda_backend_usable(args.device)
    };
    match (&cuda, args.backend) {
        (Err(e), BackendArg::Cuda) => bail!("--backend cuda: no usable CUDA device: {e}"),
        (Ok(()), _) => notes.say(format!("backend: cuda (device {})", args.device)),
        (Err(e), BackendArg::Auto) => notes.say(if args.verbose {
            format!("backend: cpu (CUDA not usable: {e})")
        } else {
            "backend: cpu (no usable CUDA device; -v says why)".to_string()
        }),
        (Err(_), _) => notes.say("backend: cpu"),
    }
    Ok(cuda)
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
    if let Some(n) = args.threads {
        // The CPU backend's metrics run on rayon's global pool.
        rayon::ThreadPoolBuilder::new()
            .num_threads(n as usize)
            .build_global()
            .map_err(|e| anyhow!("--threads {n}: {e}"))?;
    }
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
    let run_fields = fields::of_run(metric_set(&metrics), single);
    let mut rules: Vec<fail::Rule> = args
        .fail_below
        .iter()
        .map(|t| fail::Rule::below(&t.field, t.value))
        .collect();
    for text in &args.fail {
        rules.push(fail::Rule::parse(text, &run_fields).map_err(|e| usage(anyhow!(e)))?);
    }
    // `--every` is the element's `subsample` (temporal metrics see every frame), as is
    // `--subsample`: one setting under two names.
    if args.every > 1
        && let Some(n) = args.subsample
        && u64::from(n) != args.every
    {
        return Err(usage(anyhow!(
            "--every {} and --subsample {n} are the same setting (the element's subsample): \
             give one",
            args.every
        )));
    }
    let (subsample, skipped_by) = match (args.every, args.subsample) {
        (1, n) => (n, "--subsample"),
        // The range clap allows.
        (n, _) => (Some(n as u32), "--every"),
    };
    let every = subsample.map_or(1, u64::from);
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
    for (flag, path) in [("-o", &args.output), ("--plot", &args.plot)] {
        if let Some(p) = path {
            check_writable(p)
                .map_err(|e| anyhow!("{flag} {}: cannot write it: {e}", p.display()))?;
        }
    }

    if !args.more_distorted.is_empty() {
        let plan = several::Plan {
            metrics: &metrics,
            run_fields: &run_fields,
            rules: &rules,
            subsample,
            every,
            skipped_by,
            stop: &stop,
            notes: &notes,
        };
        return several::run(&args, &plan);
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
    let cuda = choose_backend(&args, &notes)?;
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
    // The gates pass every pair up to the last one wanted; the element scores every N-th.
    let limit = args.frames.map(|f| (f - 1).saturating_mul(every) + 1);
    let gates = [
        GateConfig {
            skip: ref_skip,
            every: 1,
            limit,
            index_duration: None,
        },
        GateConfig {
            skip: dist_skip,
            every: 1,
            limit,
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
        let pairs = pairs.div_ceil(every);
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
            subsample,
            roi: args.roi,
            prometheus: args.prometheus.clone(),
        },
    };
    let to_file = args.output.is_some();
    let metric_names: Vec<String> = metrics.split('+').map(String::from).collect();
    let options = header::options(&args.metric_options);
    let header = header::Header {
        version: env!("CARGO_PKG_VERSION"),
        inputs: header::Inputs {
            reference: reference.as_ref().map(header::InputInfo::of),
            distorted: header::Distorted::One(header::InputInfo::of(&distorted)),
        },
        backend: if cuda.is_ok() { "cuda" } else { "cpu" },
        device: cuda.is_ok().then_some(args.device),
        threads: cuda.is_err().then(rayon::current_num_threads),
        decoding: decoding
            .iter()
            .zip(inputs)
            .filter(|(_, i)| i.is_some())
            .map(|(d, _)| match d {
                Decoding::Nvdec(f) => f.clone(),
                Decoding::Software => "software".into(),
            })
            .collect(),
        models: header::models(&metric_names, &options),
        metrics: metric_names,
        fields: run_fields.clone(),
        options,
        run: header::RunSettings {
            pairing: reference.is_some().then_some(pairing),
            offset,
            every,
            frames: args.frames,
            scale: scale_to.is_some(),
            roi: args.roi.map(|r| r.to_string()),
            window: args.window,
            alerts: args.alerts.clone(),
            fail: rules.iter().map(|r| r.text.clone()).collect(),
        },
        null_scores: header::NULL_SCORES,
    };
    let path_text = args.output.as_deref().unwrap_or("-".as_ref()).display();
    let mut sink = output::destination(args.output.as_deref())
        .with_context(|| format!("cannot create {path_text}"))
        .and_then(|out| {
            output::RecordSink::open(args.format, out, run_fields.clone(), &header)
                .with_context(|| format!("cannot write {path_text}"))
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
        frame_base: ref_skip,
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
    for note in depth_notes(&built.decoded, &built.caps) {
        notes.say(note);
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

    if outcome.summary.frames == 0 && !outcome.interrupted {
        let why = why_no_pairs(&built.gates, &outcome.summary, offset, single, false);
        return Err(Failure {
            status: cli::EXIT_NO_PAIRS,
            error: anyhow!(
                "no {} was {}: {why}",
                if single { "frame" } else { "pair" },
                if single { "measured" } else { "compared" }
            ),
        });
    }

    let gate = |i: usize, f: fn(&gate::Gate) -> u64| built.gates[i].as_ref().map_or(0, f);
    let counts = output::Counts {
        skipped_by,
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
            print_stdout(&table)?;
        }
        (FormatArg::Table, None) => print_stdout(&table)?,
        // Records went to the file: the table goes to stdout.
        (_, Some(_)) => print_stdout(&table)?,
        // Records went to stdout: the table goes to stderr, so stdout stays machine-readable.
        (_, None) => {
            if !args.quiet {
                eprint!("{table}");
            }
        }
    }
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
        plot::write(path, &outcome.records, &outcome.summary, &title)
            .with_context(|| format!("--plot {}", path.display()))?;
        notes.say(format!("plot: {}", path.display()));
    }

    let mut status = if outcome.interrupted { 130 } else { 0 };
    for rule in &rules {
        match rule.judge(&outcome.summary) {
            fail::Verdict::Pass(text) => notes.say(text),
            fail::Verdict::Fail(text) => {
                eprintln!("{text}");
                status = cli::EXIT_THRESHOLD;
            }
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
        Err(Failure { error, .. }) if is_broken_pipe(&error) => die_of_sigpipe(),
        Err(Failure { status, error }) => {
            eprintln!("gpumetrics: error: {error:#}");
            ExitCode::from(status as u8)
        }
    }
}
