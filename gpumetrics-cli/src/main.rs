// SPDX-License-Identifier: MPL-2.0
//! `gpumetrics REF DIST [options]`: measures a distorted video against its reference with the
//! `gpumetrics` element (registered in-process, no GST_PLUGIN_PATH needed) and prints a
//! summary table, optionally per-frame records and a plot; the exit status says whether
//! the `--fail` rules were met. `gpumetrics DIST [options]`: the same for one input
//! measured alone, with the no-reference metrics (the element's ref_sink left unlinked).
//! `gpumetrics REF DIST1 DIST2 ... [options]`: several distorted files against one
//! reference decoded once, in one pipeline ([`several`]). All three are one run
//! ([`flow`]).
//!
//! Modules: [`cli`] arguments, [`options`] the metrics' options, [`fields`] what is
//! known of each field, [`fail`] the quality gates, [`plan`] what the arguments settle,
//! [`input`] what the files are, [`raw`] `.yuv` and y4m inputs, [`lineup`] the inputs of a
//! run checked together, [`backend`] CPU or CUDA, [`decoding`] NVDEC or software, [`align`]
//! the offset search, [`gate`] which frames reach the element, [`monitor`] windows, alerts
//! and live inputs, [`pipeline`] the GStreamer graph, [`measure`] building and running it,
//! [`run`] the bus loop, [`output`] table and records, [`records`] the machine-readable
//! layouts, [`header`] their header, [`plot`] the curves, [`progress`] stderr display,
//! [`notes`] the other stderr lines, [`summary`] what is said after the run, [`verdict`]
//! its exit status, [`several`] what only several distorted files have, [`exit`] how the
//! command ends. `gpumetrics monitor CONFIG` runs many channels as a service
//! ([`service`]).

mod advice;
mod align;
mod backend;
mod cli;
mod decoding;
mod exit;
mod fail;
mod fields;
mod flow;
mod gate;
mod header;
mod input;
mod lineup;
mod maps;
mod measure;
mod metric_names;
mod monitor;
mod notes;
mod options;
mod output;
mod pipeline;
mod plan;
mod plot;
mod progress;
mod raw;
mod records;
mod run;
mod service;
mod several;
mod summary;
mod verdict;

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, anyhow};

use cli::Args;
use exit::Failure;
use notes::Notes;

/// Two SIGINTs closer than this are one Ctrl-C (see [`stop_on_ctrl_c`]).
const SIGINT_TWICE: std::time::Duration = std::time::Duration::from_millis(250);

/// Ctrl-C ends the run at the next frame, with the summary of what was measured (the flag
/// returned is set); a second Ctrl-C ends at once. A second SIGINT within [`SIGINT_TWICE`]
/// of the first is the same one delivered twice (`timeout -s INT` signals the command and
/// its process group), not a second Ctrl-C.
fn stop_on_ctrl_c() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let first = std::sync::OnceLock::new();
    let _ = ctrlc::set_handler(move || {
        let at = *first.get_or_init(std::time::Instant::now);
        if flag.swap(true, Ordering::SeqCst) && at.elapsed() >= SIGINT_TWICE {
            std::process::exit(130);
        }
    });
    stop
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
    let stop = stop_on_ctrl_c();
    // Usage errors first, before any decoding.
    let plan = plan::check(&args)?;
    flow::run(&args, &plan, &stop, &notes)
}

/// Parses the command line, with the metric names of the element in `--metrics`' help.
fn parse_args() -> Args {
    let names = gst::init()
        .ok()
        .and_then(|_| gstgpumetrics::plugin_register_static().ok())
        .map(|_| {
            (
                metric_names::available().join(", "),
                metric_names::no_reference().join(", "),
                metric_names::sets().join(", "),
            )
        });
    let mut cmd = cli::command();
    if let Some((names, no_reference, sets)) = names {
        cmd = cmd.mut_arg("metrics", |a| {
            a.help(format!(
                "Metrics to compute, comma-separated: {names}; a named set of them ({sets}: \
                 the AOM common test conditions' set, its table in the CTC's order); or all \
                 (every metric the element offers; with one input, every no-reference \
                 metric). Default: psnr; with one input (DIST alone), the no-reference \
                 metrics ({no_reference}), the only ones it can run"
            ))
        });
    }
    let matches = cmd.try_get_matches().unwrap_or_else(|e| exit_bounded(e));
    cli::from_matches(&matches).unwrap_or_else(|e| exit_bounded(e))
}

/// Exits with clap's error (or help), each argument it quotes bounded as the command's own
/// errors quote values ([`gstgpumetrics::quote`]): clap quotes a refused value whole, and a
/// megabyte pasted into `--roi` would come back whole.
fn exit_bounded(e: clap::Error) -> ! {
    let text = e.render().to_string();
    let bounded = std::env::args_os().skip(1).fold(text.clone(), |t, a| {
        gstgpumetrics::quote::bounded_within(&t, &a.to_string_lossy())
    });
    if bounded == text {
        e.exit()
    }
    eprint!("{bounded}");
    std::process::exit(e.exit_code())
}

fn main() -> ExitCode {
    // `gpumetrics monitor CONFIG`: the service (a file named `monitor` is `./monitor`).
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if argv.get(1).is_some_and(|a| a == "monitor") {
        return ExitCode::from(service::main(argv) as u8);
    }
    let args = parse_args();
    match real_main(args) {
        Ok(status) => ExitCode::from(status as u8),
        Err(Failure { error, .. }) if exit::is_broken_pipe(&error) => exit::die_of_sigpipe(),
        Err(Failure { status, error }) => {
            eprintln!("gpumetrics: error: {error:#}");
            ExitCode::from(status as u8)
        }
    }
}
