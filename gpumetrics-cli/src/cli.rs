// SPDX-License-Identifier: MPL-2.0
//! Command-line arguments (clap derive, with the metrics' options and the list of metrics
//! added at run time from the engine's registry: [`command`], [`from_matches`]).
//! Validation that clap cannot express (metric names, `--fail-below` syntax and fields)
//! happens here too, so that every usage error exits with status 2.

// The arguments' doc comments are clap's `--help` text, written for a terminal
// (`FIELD<VALUE[:HOLD]`), not Markdown: rustdoc would read tags and links in them.
#![allow(rustdoc::invalid_html_tags, rustdoc::broken_intra_doc_links)]

use std::path::PathBuf;

use clap::builder::TypedValueParser;
use clap::{ArgMatches, Command, CommandFactory, FromArgMatches, Parser, ValueEnum};
use gpumetrics_engine::{BackendChoice, metric};
use gstgpumetrics::quote::quoted;

use crate::{monitor, options};

/// The help heading of the monitoring options.
const MONITORING: &str = "Monitoring";

/// Exit status when a `--fail` rule (or a `--fail-below` threshold) is not met.
pub const EXIT_THRESHOLD: i32 = 3;
/// Exit status of a run that compared no pair (nothing to judge: not a pass, not a
/// threshold failure).
pub const EXIT_NO_PAIRS: i32 = 4;
/// Exit status of a run error (missing file, pipeline error).
pub const EXIT_RUN_ERROR: i32 = 1;
/// Exit status of a usage error (clap uses the same).
pub const EXIT_USAGE: i32 = 2;

#[derive(Parser, Debug)]
#[command(
    name = "gpumetrics",
    version,
    override_usage = "gpumetrics [OPTIONS] REF DIST [DIST...]\n       gpumetrics [OPTIONS] DIST\n       \
gpumetrics [OPTIONS] --reference REF --distorted DIST",
    after_help = "Exit status: 0 success, 1 run error (missing or undecodable file, pipeline \
error, an output that cannot be written), 2 usage error, 3 a --fail rule (or --fail-below \
threshold) was not met, 4 no pair was compared (e.g. an --offset past the end), 130 interrupted \
by Ctrl-C (after printing the summary of the pairs measured so far; also how a live run ends). \
A closed stdout (`| head`) ends the command quietly, as SIGPIPE ends other tools.\n\n\
Examples:\n  \
gpumetrics ref.mp4 dist.mp4\n  \
gpumetrics ref.mkv dist.mkv --metrics all --plot scores.png\n  \
gpumetrics ref.y4m dist.mp4 --align auto --scale --format jsonl -o scores.jsonl\n  \
gpumetrics ref.mp4 dist.mp4 --metrics psnr,vmaf --fail 'vmaf.mean<93' --fail 'psnr-y.min<30'\n  \
gpumetrics ref.mp4 crf18.mp4 crf23.mp4 crf28.mp4 --metrics psnr,ssim --plot ladder.png\n  \
gpumetrics --reference ref.yuv --distorted dist.yuv --width 1920 --height 1080 --pixel-format 420 \
--bitdepth 10\n  \
gpumetrics dist.mp4 --metrics siti\n  \
gpumetrics udp://127.0.0.1:5000 udp://127.0.0.1:5001 --window 1s --alert psnr-y<30:2s\n\n\
A live input (udp://, srt://, rtsp://, ... or a source that does not preroll) runs until \
Ctrl-C or the end of its stream; progress then shows the running time and the latest \
window instead of an ETA.\n\n\
Many channels as a service: gpumetrics monitor CONFIG runs every channel of a TOML file in one \
process, rebuilding a channel whose input stops, with one Prometheus endpoint and events as JSON \
lines (gpumetrics monitor --help; examples/monitor.toml).\n\n\
One input (gpumetrics DIST) is measured alone with the no-reference metrics (by default all \
of them); a full-reference metric, and the options that need a reference (--offset, --align, \
--align-range, --align-frames, --scale, --pairing), are then usage errors.\n\n\
Several distorted files (gpumetrics REF DIST1 DIST2 ...; an encoding ladder, a CRF sweep) are \
compared with the reference in one process: the reference is decoded once and its frames go to \
one gpumetrics element per file. The table has a row per field and statistic and a column per \
file; the plot a panel per field with a line per file; the records (-o/--format) a `distorted` key (CSV: \
first column) naming the file as given, and one summary per file (json: `summary` is an array). \
--offset, --every, --frames, --scale and --roi apply to each file; --fail rules are judged on \
each (exit 3 if any file fails, naming it). --align, --window, --alert and --prometheus take \
one pair: with several files they are usage errors."
)]
pub struct Args {
    /// REF DIST: the reference video, then the distorted one, compared frame by frame. REF
    /// DIST1 DIST2 ...: the reference (decoded once) against each distorted file, in one
    /// pipeline: the table has a column per file, the records a `distorted` key. DIST alone:
    /// the distorted video measured without a reference, with the no-reference metrics.
    /// Each a file path or a URI (file://, http://, or a live stream: udp://, srt://, rtsp://,
    /// anything GStreamer's urisourcebin opens), a y4m file or a raw .yuv file (see "Raw
    /// input"). The reference comes first; ffmpeg-quality-metrics takes `dist ref`, the
    /// other way round: --reference and --distorted name them instead.
    #[arg(value_name = "INPUT", num_args = 1..)]
    pub inputs: Vec<String>,

    /// The reference input, instead of the first positional one (as libvmaf's vmaf tool
    /// and ab-av1 name it).
    #[arg(long = "reference", value_name = "REF")]
    pub named_reference: Option<String>,

    /// The distorted input, instead of the second positional one (or of the only one).
    #[arg(long = "distorted", value_name = "DIST")]
    pub named_distorted: Option<String>,

    /// The reference input (the first of two inputs; none with one input).
    #[arg(skip)]
    pub reference: Option<String>,

    /// The distorted input (the second of two inputs, or the only one).
    #[arg(skip)]
    pub distorted: String,

    /// How raw `.yuv` inputs are laid out.
    #[command(flatten)]
    pub raw: crate::raw::RawArgs,
    /// The distorted inputs after the first (`gpumetrics REF DIST1 DIST2 ...`).
    #[arg(skip)]
    pub more_distorted: Vec<String>,

    /// Metrics to compute: a comma-separated list of the element's metric names, or `all`
    /// (every metric the element offers; with one input, every no-reference metric).
    /// Default: psnr; with one input, every no-reference metric.
    #[arg(short, long, value_name = "LIST")]
    pub metrics: Option<String>,

    /// Where the metrics run: auto = CUDA when a device is usable, else the CPU.
    #[arg(long, default_value = "auto", value_parser = backend_parser())]
    pub backend: BackendChoice,

    /// CUDA device (for --backend cuda and auto): an index, or auto = the GPU with the most
    /// free capacity (the fewest gpumetrics engines, then the most free memory). Default 0;
    /// with several distorted files, the files' elements spread over the GPUs in turn from
    /// device 0 (from the one auto picks with --device auto; one given index pins them all).
    #[arg(long, value_name = "N|auto", value_parser = parse_device)]
    pub device: Option<DeviceArg>,

    /// How frames are decoded: auto = NVDEC into CUDA memory when the CUDA backend is usable
    /// and the codec has an NVIDIA decoder, else software.
    #[arg(long, value_enum, default_value_t = DecodeArg::Auto)]
    pub decode: DecodeArg,

    /// Layout of the output: table = the summary table (with -o FILE, the file also gets one
    /// row per pair, times in seconds); jsonl = a header record (inputs, backend, version,
    /// metrics, models, options), one record per compared pair, then the summary; json = the
    /// same as one document {header, frames, windows, events, summary}; csv = one row per
    /// compared pair and nothing else (the summary is the table on stdout). Times in
    /// nanoseconds; a score of +inf (PSNR of identical frames) is null in JSON, inf in CSV.
    #[arg(short, long, value_enum, default_value_t = FormatArg::Table)]
    pub format: FormatArg,

    /// Write the --format output to FILE instead of stdout (the summary table is then
    /// printed on stdout as well). `-o -` is stdout, as without -o: the records there, the
    /// table on stderr.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Plot the per-frame scores with their means to FILE (.png or .svg).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,

    /// Write each measured pair's distortion map NAME (squared-error, ssim, or butteraugli,
    /// cvvdp or ssimulacra2: with --metrics including that metric) to DIR as
    /// NAME-FRAME.pfm (FRAME zero-padded to six digits): little-endian grayscale PFM, the
    /// exact values, rows bottom to top. DIR is created. One pair (REF and DIST).
    #[arg(long, value_name = "NAME:DIR", value_parser = crate::maps::parse)]
    pub map: Option<crate::maps::MapArg>,

    /// Write the distortion map NAME of each measured pair as a heat-map video to FILE
    /// (H.264 at a fixed quantiser of 10 in Matroska; the element's map-style=heat over
    /// black, its colour scale in docs/METRICS.md). One pair; with --map, the same NAME.
    #[arg(long, value_name = "NAME:FILE.mkv", value_parser = crate::maps::parse)]
    pub map_video: Option<crate::maps::MapArg>,

    /// Skip frames at the start of one input: N > 0 skips the first N distorted frames
    /// (the distorted video starts N frames late), N < 0 skips the first -N reference frames.
    #[arg(
        long,
        default_value_t = 0,
        allow_negative_numbers = true,
        value_name = "N",
        conflicts_with = "align"
    )]
    pub offset: i64,

    /// Find the offset: `auto` tries every offset within ±--align-range frames and applies
    /// the one with the highest PSNR-Y over the first frames; on live inputs it is found
    /// and followed as the streams flow (the element's align=auto).
    #[arg(long, value_enum, value_name = "MODE")]
    pub align: Option<AlignArg>,

    /// Largest offset (in frames, either direction) that --align auto tries (live inputs:
    /// 5 s unless given).
    #[arg(long, default_value_t = 30, value_name = "N")]
    pub align_range: u32,

    /// `--align-range` was given (live inputs take the element's 5 s otherwise).
    #[arg(skip)]
    pub align_range_given: bool,

    /// Frames compared per candidate offset by --align auto.
    #[arg(long, default_value_t = 30, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub align_frames: u32,

    /// Scale the distorted video to the reference size (videoscale, Lanczos) when the sizes
    /// differ. Without it, differing sizes are an error.
    #[arg(long)]
    pub scale: bool,

    /// Score every N-th frame pair only (with one input: every N-th frame); the others are
    /// counted as skipped. Temporal metrics (VMAF's motion) still see every frame, so a
    /// scored pair has the value of a full run; records keep their frame numbers (0, N, 2N).
    /// The same as --subsample (the element's `subsample`).
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u64).range(1..u64::from(u32::MAX)))]
    pub every: u64,

    /// Stop after N compared pairs (with one input: N measured frames).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub frames: Option<u64>,

    /// Pair frames by timestamp (default; handles differing frame rates) or by sequence
    /// (the n-th with the n-th, for streams with broken timestamps).
    #[arg(long, value_enum, default_value_t = PairingArg::Timestamp)]
    pub pairing: PairingArg,

    /// Exit with status 3 when a summary statistic breaks RULE (with several distorted
    /// files: on any of them): FIELD.STAT<VALUE or FIELD.STAT>VALUE (FIELD alone: its mean),
    /// e.g. 'vmaf.mean<93', 'butteraugli.p95>4', 'psnr-y.min<30'; STAT is mean,
    /// harmonic-mean, min, max, stddev, p1, p5, p50, p95 or p99. The comparison must point
    /// the way the field gets worse (< for PSNR, SSIM, VMAF; > for MSE, Butteraugli).
    /// Checked before decoding; repeatable.
    #[arg(long = "fail", value_name = "RULE")]
    pub fail: Vec<String>,

    /// Exit with status 3 when the mean of FIELD is below VALUE (e.g. psnr-y=35): the same as
    /// --fail 'FIELD.mean<VALUE'; repeatable. FIELD is one whose higher scores are better
    /// (not mse-*, butteraugli).
    #[arg(long, value_name = "FIELD=VALUE", value_parser = parse_threshold)]
    pub fail_below: Vec<Threshold>,

    /// Threads of the CPU backend (default: one per core; RAYON_NUM_THREADS also sets it).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..1024))]
    pub threads: Option<u32>,

    /// Tumbling windows of running time (e.g. 500ms, 1s, 2.5s, 1m): each one, as it completes,
    /// is a line with its pairs and means (a record in the jsonl, csv and json formats).
    #[arg(long, value_name = "DURATION", value_parser = monitor::parse_duration, help_heading = MONITORING)]
    pub window: Option<u64>,

    /// Alert rule FIELD<VALUE[:HOLD] or FIELD>VALUE[:HOLD], HOLD in ms or s (e.g.
    /// vmaf<70:2s): raised when the condition has held for HOLD of running time, cleared when
    /// it has been false for HOLD; each change is printed on stderr as it happens, the summary
    /// counts episodes and seconds per rule. Repeatable; FIELD must be a field of --metrics.
    #[arg(long = "alert", value_name = "RULE", help_heading = MONITORING)]
    pub alerts: Vec<String>,

    /// Score every N-th matched pair in the element; the others are counted as skipped.
    /// Temporal metrics (VMAF's motion) still see every frame, so a scored pair has the value
    /// of a full run. The same as --every N (the element's `subsample`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), help_heading = MONITORING)]
    pub subsample: Option<u32>,

    /// Measure only this rectangle of the reference, x,y,width,height in pixels (the same
    /// rectangle of the distorted video; with one input, of that input).
    #[arg(long, value_name = "X,Y,W,H", value_parser = monitor::Roi::parse, help_heading = MONITORING)]
    pub roi: Option<monitor::Roi>,

    /// Serve the scores, window means and alert states in Prometheus' text format at
    /// http://HOST:PORT/metrics while the command runs (e.g. 127.0.0.1:9100).
    #[arg(long, value_name = "HOST:PORT", value_parser = monitor::parse_address, help_heading = MONITORING)]
    pub prometheus: Option<String>,

    /// No progress display and no notes on stderr (errors are still printed).
    #[arg(short, long)]
    pub quiet: bool,

    /// More notes on stderr: decoder elements, the element's memory-stats.
    #[arg(short, long)]
    pub verbose: bool,

    /// The metrics' options given on the command line (flags made from the registry).
    #[arg(skip)]
    pub metric_options: Vec<options::Given>,

    /// The flags given on the command line that need a reference input ([`REFERENCE_ONLY`]),
    /// as written (`--offset`): refused with one input.
    #[arg(skip)]
    pub reference_only: Vec<&'static str>,
}

/// The flags that apply to a reference input only (clap's id, the flag as written): with one
/// input, giving any of them is a usage error.
pub const REFERENCE_ONLY: &[(&str, &str)] = &[
    ("offset", "--offset"),
    ("align", "--align"),
    ("align_range", "--align-range"),
    ("align_frames", "--align-frames"),
    ("scale", "--scale"),
    ("pairing", "--pairing"),
];

impl Args {
    /// One input: the distorted one, measured alone.
    pub fn single(&self) -> bool {
        self.reference.is_none()
    }
}

/// `--backend`'s values: the engine's choices, by name.
/// `--device` (and a monitor channel's `device`): a CUDA device index, or `auto`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceArg {
    /// The GPU with the most free capacity when the run starts.
    Auto,
    Index(u32),
}

impl std::fmt::Display for DeviceArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceArg::Auto => f.write_str("auto"),
            DeviceArg::Index(i) => write!(f, "{i}"),
        }
    }
}

/// `--device N|auto`.
pub fn parse_device(text: &str) -> Result<DeviceArg, String> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("auto") {
        return Ok(DeviceArg::Auto);
    }
    t.parse::<u32>().map(DeviceArg::Index).map_err(|_| {
        format!(
            "`{}` is not a CUDA device: give its index (0, 1, ...) or auto",
            quoted(text)
        )
    })
}

fn backend_parser() -> impl TypedValueParser<Value = BackendChoice> {
    clap::builder::PossibleValuesParser::new(BackendChoice::ALL.map(BackendChoice::name))
        .map(|s| s.parse().expect("a possible value is a backend"))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DecodeArg {
    Auto,
    Nvdec,
    Software,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    Table,
    Jsonl,
    Csv,
    Json,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AlignArg {
    Auto,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PairingArg {
    Timestamp,
    Sequence,
}

/// `--fail-below FIELD=VALUE`.
#[derive(Clone, Debug, PartialEq)]
pub struct Threshold {
    pub field: String,
    pub value: f64,
}

fn parse_threshold(s: &str) -> Result<Threshold, String> {
    let shown = quoted(s);
    let (field, value) = s
        .split_once('=')
        .ok_or_else(|| format!("expected FIELD=VALUE (e.g. psnr-y=35), got `{shown}`"))?;
    let field = field.trim();
    if field.is_empty() {
        return Err(format!("no field name in `{shown}` (e.g. psnr-y=35)"));
    }
    let Some(meta) = metric::field(field) else {
        let known: Vec<&str> = metric::fields().map(|f| f.name).collect();
        return Err(format!(
            "no field `{}`; the fields are {}",
            quoted(field),
            known.join(", ")
        ));
    };
    if !meta.higher_is_better() {
        return Err(format!(
            "`{field}` is lower-is-better: a mean below VALUE is a better result, so a \
             --fail-below threshold on it makes no sense"
        ));
    }
    let value: f64 = value
        .trim()
        .parse()
        .map_err(|_| format!("`{}` is not a number (in `{shown}`)", quoted(value.trim())))?;
    if !value.is_finite() {
        return Err(format!(
            "the threshold in `{shown}` must be a finite number"
        ));
    }
    Ok(Threshold {
        field: field.to_string(),
        value,
    })
}

/// One line: what the command does, with the registry's metric names.
fn about() -> String {
    let names: Vec<&str> = metric::all().map(|i| i.name).collect();
    format!(
        "Measure a distorted video against its reference, or alone: {}",
        names.join(", ")
    )
}

/// `--help`'s description, with the registry's metrics and their descriptions.
fn long_about() -> String {
    let width = metric::all().map(|i| i.name.len()).max().unwrap_or(0);
    let metrics: String = metric::all()
        .map(|i| {
            // Wrapped here with a hanging indent (clap's wrapping would start the next
            // line at the margin).
            let mut lines = vec![String::new()];
            for word in i.description.split_whitespace() {
                let line = lines.last_mut().expect("never empty");
                if !line.is_empty() && width + 4 + line.len() + 1 + word.len() > 96 {
                    lines.push(word.to_string());
                } else {
                    if !line.is_empty() {
                        line.push(' ');
                    }
                    line.push_str(word);
                }
            }
            let indent = " ".repeat(width + 4);
            format!(
                "  {:width$}  {}\n",
                i.name,
                lines.join(&format!("\n{indent}"))
            )
        })
        .collect();
    format!(
        "Measure a distorted video against its reference, frame by frame, with the gpumetrics \
         GStreamer element, on an NVIDIA GPU (CUDA) or the CPU; several distorted videos against \
         one reference (gpumetrics REF DIST1 DIST2 ..., see below); or one video alone \
         (gpumetrics DIST) with the no-reference metrics ({no_reference}). The metrics \
         (--metrics):\n\n\
         {metrics}\n\
         Both inputs are decoded by GStreamer (any container and codec it can decode). When the \
         CUDA backend is usable and the codec has an NVIDIA decoder (nvh264dec, nvh265dec, ...), \
         frames are decoded by NVDEC into CUDA memory and measured there (zero-copy); otherwise \
         they are decoded in software. Which one was used is printed on stderr.\n\n\
         Progress goes to stderr; the summary table (mean, harmonic mean where customary, min, \
         max, p5, p50, p95 per field) to stdout. Per-frame records can be written as JSON Lines \
         or JSON (with a header and the summary; a score of +inf, the PSNR of identical \
         frames, is null there) or CSV (one row per frame, +inf as inf), and the per-frame \
         curves plotted to PNG or SVG. Black and \
         freeze intervals (the black and freeze metrics) are notes while the command runs, \
         event records in the JSON outputs and counted under the table.",
        no_reference = metric::no_reference_names()
    )
}

/// The command: the derived arguments, then one flag per metric option of the registry, and
/// the registry's metrics in the description.
pub fn command() -> Command {
    Args::command()
        .about(about())
        .long_about(long_about())
        .args(options::args())
}

/// The arguments from the matches of [`command`].
pub fn from_matches(matches: &ArgMatches) -> Result<Args, clap::Error> {
    let mut args = Args::from_arg_matches(matches)?;
    // `-o -`: standard output, as tools write it, not a file named `-`.
    if args.output.as_deref() == Some(std::path::Path::new("-")) {
        args.output = None;
    }
    args.metric_options = options::given(matches);
    (args.reference, args.distorted, args.more_distorted) = inputs(&args).map_err(|e| {
        let mut cmd = command();
        cmd.error(clap::error::ErrorKind::ArgumentConflict, e)
    })?;
    let given: Vec<&str> = args
        .reference
        .iter()
        .chain([&args.distorted])
        .chain(&args.more_distorted)
        .map(String::as_str)
        .collect();
    let framerate_given =
        matches.value_source("framerate") == Some(clap::parser::ValueSource::CommandLine);
    args.raw.check(&given, framerate_given).map_err(|e| {
        let mut cmd = command();
        cmd.error(clap::error::ErrorKind::ArgumentConflict, e)
    })?;
    args.align_range_given =
        matches.value_source("align_range") == Some(clap::parser::ValueSource::CommandLine);
    args.reference_only = REFERENCE_ONLY
        .iter()
        .filter(|(id, _)| matches.value_source(id) == Some(clap::parser::ValueSource::CommandLine))
        .map(|&(_, flag)| flag)
        .collect();
    Ok(args)
}

/// (reference, distorted, more distorted) from the positional inputs or the named ones, never
/// both.
fn inputs(args: &Args) -> Result<(Option<String>, String, Vec<String>), String> {
    let (r, d) = (&args.named_reference, &args.named_distorted);
    match (args.inputs.as_slice(), r, d) {
        ([dist], None, None) => Ok((None, dist.clone(), Vec::new())),
        ([reference, dist, more @ ..], None, None) => {
            Ok((Some(reference.clone()), dist.clone(), more.to_vec()))
        }
        ([], r, Some(d)) => Ok((r.clone(), d.clone(), Vec::new())),
        ([], Some(r), None) => Err(format!(
            "--reference {r} without --distorted: give the distorted input with --distorted"
        )),
        ([], None, None) => Err("no input: give REF DIST, DIST alone, or --reference REF \
             --distorted DIST"
            .into()),
        (positional, _, _) => Err(format!(
            "inputs given both positionally ({}) and with {}: give either REF DIST \
             (reference first) or --reference REF --distorted DIST",
            positional.join(" "),
            [("--reference", r.is_some()), ("--distorted", d.is_some())]
                .into_iter()
                .filter_map(|(f, given)| given.then_some(f))
                .collect::<Vec<_>>()
                .join(" and ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds() {
        assert_eq!(
            parse_threshold("psnr-y=35.5").unwrap(),
            Threshold {
                field: "psnr-y".into(),
                value: 35.5
            }
        );
        assert!(parse_threshold("psnr-y").is_err());
        assert!(parse_threshold("=3").is_err());
        assert!(parse_threshold("ssim=high").is_err());
        assert!(parse_threshold("ssim=inf").is_err());
    }

    #[test]
    fn threshold_fields_come_from_the_registry() {
        let e = parse_threshold("nosuch=3").unwrap_err();
        assert!(e.contains("no field `nosuch`"), "{e}");
        for f in metric::fields() {
            assert!(e.contains(f.name), "{e} lacks {}", f.name);
            let r = parse_threshold(&format!("{}=1", f.name));
            if f.higher_is_better() {
                assert_eq!(r.unwrap().field, f.name);
            } else {
                let e = r.unwrap_err();
                assert!(e.contains("lower-is-better"), "{}: {e}", f.name);
            }
        }
        for lower in ["mse-y", "butteraugli"] {
            assert!(parse_threshold(&format!("{lower}=1")).is_err(), "{lower}");
        }
    }

    #[test]
    fn the_description_lists_the_registrys_metrics() {
        let cmd = command();
        let about = cmd.get_about().unwrap().to_string();
        let long = cmd.get_long_about().unwrap().to_string();
        for i in metric::all() {
            assert!(about.contains(i.name), "{about}");
            // The name, then every word of the description, in order (it is wrapped).
            let words: Vec<&str> = long.split_whitespace().collect();
            let want: Vec<&str> = i.description.split_whitespace().collect();
            assert!(
                words
                    .windows(want.len() + 1)
                    .any(|w| w[0] == i.name && w[1..] == want[..]),
                "{} {}\n{long}",
                i.name,
                i.description
            );
        }
    }

    #[test]
    fn command_is_consistent() {
        // Also: no registry option takes the name of one of the command's own flags.
        command().debug_assert();
    }
}
