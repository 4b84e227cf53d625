// SPDX-License-Identifier: MPL-2.0
//! The run of the command, from the settled [`Plan`] to the exit status, for one distorted
//! input (against a reference, or measured alone) or several against one reference: one
//! pair is the run of several with N = 1, and only what is said differs (one pair's notes
//! say `distorted`, its records have no `distorted` key, its table no column per file).
//!
//! In order: the inputs are opened and checked ([`lineup`]), the backend and each input's
//! decoding chosen ([`backend`], [`decoding`]), the offset found ([`align`]), the records'
//! header started, the pipeline built and run ([`measure`]), and what it measured said
//! ([`summary`]) and judged ([`verdict`]).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::Context;

use crate::cli::{Args, FormatArg};
use crate::decoding::{self, Decodings};
use crate::exit::Failure;
use crate::lineup::{self, Lineup};
use crate::measure;
use crate::notes::Notes;
use crate::output::{self, RecordSink};
use crate::pipeline;
use crate::plan::Plan;
use crate::{align, backend, header, monitor, run, several, summary, verdict};

/// The run settled before its pipeline is built: what the steps after share.
pub struct Setup<'a> {
    pub args: &'a Args,
    pub plan: &'a Plan,
    pub lineup: &'a Lineup,
    pub decodings: &'a Decodings,
    /// `--offset`, or the one `--align auto` found.
    pub offset: i64,
    pub notes: &'a Notes,
    /// The CUDA device of each distorted input's element (0s on the CPU).
    pub devices: Vec<u32>,
    /// `--device auto`: what it chose and why.
    pub device_auto: Option<String>,
}

/// Runs the command's measurement: the exit status (0, 130 when interrupted, or
/// [`crate::cli::EXIT_THRESHOLD`] when a `--fail` rule broke).
pub fn run(
    args: &Args,
    plan: &Plan,
    stop: &Arc<AtomicBool>,
    notes: &Notes,
) -> Result<i32, Failure> {
    if !args.more_distorted.is_empty() {
        several::check(args)?;
    }
    let lineup = lineup::open(args, notes)?;
    let device = backend::choose(args, notes)?;
    let cuda = device.as_ref().map(|_| ()).map_err(Clone::clone);
    let decodings = Decodings::choose(args, &lineup, &cuda, notes)?;
    let offset = align::chosen_offset(args, &lineup, notes)?;
    let n = lineup.distorted.len();
    let (devices, device_auto) = match &device {
        Ok(d) => (
            spread_devices(args, &decodings, d.index, n, notes),
            d.auto.clone(),
        ),
        Err(_) => (vec![0; n], None),
    };
    let setup = Setup {
        args,
        plan,
        lineup: &lineup,
        decodings: &decodings,
        offset,
        notes,
        devices,
        device_auto,
    };
    let mut sink = open_records(&setup, &header(&setup, cuda.is_ok()))?;
    notes.say(metrics_note(&setup));

    let to_file = args.output.is_some();
    // The records are kept for the plot and for the per-frame table's file.
    let keep = args.plot.is_some() || (args.format == FormatArg::Table && to_file);
    let report = run::Report {
        unit: if plan.single { "frame" } else { "pair" },
        fields: monitor::main_fields(plan.metric_set(), plan.alert_rules()),
        // Where the summary table goes (stderr when the records are on stdout).
        windows_to_stdout: args.format == FormatArg::Table || to_file,
        alerts: plan.alerts.is_some(),
        frame_base: measure::skips(offset).0,
        map_dir: args.map.as_ref().map(|m| m.dir.clone()),
    };
    let (built, outcomes) = measure::measure(&setup, &mut sink, &report, keep, stop)?;
    drop(sink);

    summary::say_how_it_went(&setup, &built, &outcomes);
    verdict::refuse_empty(&lineup, &built, &outcomes, offset)?;
    let labels = several::labels(&lineup.given());
    summary::print(&setup, &built, &outcomes, &labels)?;
    Ok(verdict::judge(&plan.rules, &labels, &outcomes, notes))
}

/// The device of each distorted file's element ([`backend::spread`] over the CUDA
/// devices), and a note when they spread: an element away from the reference's GPU gets the
/// reference's NVDEC frames through system memory (no peer-to-peer copy), which costs a
/// download and an upload per frame; without `cudadownload` they do not spread.
fn spread_devices(
    args: &Args,
    decodings: &Decodings,
    first: u32,
    n: usize,
    notes: &Notes,
) -> Vec<u32> {
    let count = gpumetrics_engine::devices::device_count();
    let devices = backend::spread(first, args.device, count, n);
    if devices.iter().all(|&d| d == first) {
        return devices;
    }
    let on_device = matches!(decodings.reference, Some(pipeline::Decoding::Nvdec(_)));
    if on_device && gst::ElementFactory::find("cudadownload").is_none() {
        notes.say(format!(
            "devices: every file on device {first} (cudadownload, which hands the NVDEC \
             reference to the other GPUs, is missing)"
        ));
        return vec![first; n];
    }
    let list: Vec<String> = devices.iter().map(u32::to_string).collect();
    notes.say(if on_device {
        format!(
            "devices: the files' elements on CUDA devices {} in turn; the reference is \
             decoded once on device {first} and reaches the others through system memory \
             (a download and an upload per frame and device, not peer to peer)",
            list.join(", ")
        )
    } else {
        format!(
            "devices: the files' elements on CUDA devices {} in turn (each uploads the \
             reference's frames itself)",
            list.join(", ")
        )
    });
    devices
}

/// Starts the records (`-o FILE` or stdout) with `header`: with several distorted files
/// each record says which file it belongs to, with one it says nothing of it.
fn open_records(setup: &Setup, header: &header::Header) -> anyhow::Result<RecordSink> {
    let Setup {
        args, plan, lineup, ..
    } = *setup;
    let path_text = args.output.as_deref().unwrap_or("-".as_ref()).display();
    output::destination(args.output.as_deref())
        .with_context(|| format!("cannot create {path_text}"))
        .and_then(|out| {
            let columns = plan.run_fields.clone();
            if lineup.several() {
                let given = lineup.given().into_iter().map(String::from).collect();
                RecordSink::open_labelled(args.format, out, columns, header, given)
            } else {
                RecordSink::open(args.format, out, columns, header)
            }
            .with_context(|| format!("cannot write {path_text}"))
        })
}

/// The note that says the metrics (and, with one input or several, how they are measured).
fn metrics_note(setup: &Setup) -> String {
    let Setup {
        args, plan, lineup, ..
    } = *setup;
    let metrics = plan.metrics.replace('+', ", ");
    if lineup.several() {
        format!(
            "metrics: {metrics} ({} distorted files against one reference decoded once)",
            lineup.distorted.len()
        )
    } else if plan.single && args.metrics.is_none() {
        format!("metrics: {metrics} (one input, no --metrics: every no-reference metric)")
    } else {
        format!("metrics: {metrics}")
    }
}

/// The records' header: what was measured, how, on what.
fn header(setup: &Setup, cuda: bool) -> header::Header {
    let Setup {
        args,
        plan,
        lineup,
        decodings,
        offset,
        ..
    } = *setup;
    let metric_names: Vec<String> = plan.metrics.split('+').map(String::from).collect();
    let options = header::options(&args.metric_options);
    let distorted = if lineup.several() {
        header::Distorted::Several(lineup.distorted.iter().map(header::InputInfo::of).collect())
    } else {
        header::Distorted::One(header::InputInfo::of(&lineup.distorted[0]))
    };
    header::Header {
        version: env!("CARGO_PKG_VERSION"),
        inputs: header::Inputs {
            reference: lineup.reference.as_ref().map(header::InputInfo::of),
            distorted,
        },
        backend: if cuda { "cuda" } else { "cpu" },
        device: cuda.then(|| setup.devices.first().copied().unwrap_or(0)),
        device_auto: if cuda {
            setup.device_auto.clone()
        } else {
            None
        },
        devices: (cuda && lineup.several()).then(|| setup.devices.clone()),
        threads: (!cuda).then(rayon::current_num_threads),
        decoding: decodings.all().map(decoding::header_name).collect(),
        models: header::models(&metric_names, &options),
        metrics: metric_names,
        fields: plan.run_fields.clone(),
        options,
        run: header::RunSettings {
            pairing: lineup.reference.is_some().then_some(measure::pairing(args)),
            offset,
            every: plan.every,
            frames: args.frames,
            scale: lineup.scale_to.iter().any(Option::is_some),
            roi: args.roi.map(|r| r.to_string()),
            window: args.window,
            alerts: args.alerts.clone(),
            fail: plan.rules.iter().map(|r| r.text.clone()).collect(),
        },
        null_scores: header::NULL_SCORES,
    }
}
