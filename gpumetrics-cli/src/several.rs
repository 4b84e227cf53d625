// SPDX-License-Identifier: MPL-2.0
//! `gpumetrics REF DIST1 DIST2 ...`: one reference against several distorted files (an
//! encoding ladder, a CRF sweep) in one run. The reference is decoded once and a `tee` hands
//! its frames to one gpumetrics element per distorted file ([`pipeline::build_several`]),
//! all in this process and on one device; the run reads the elements' messages apart
//! ([`run::run_elements`]). Out come a table with a column per file ([`ladder_table`]), one
//! plot with a line per file, records that say which file they belong to, and the `--fail`
//! rules judged on each file.
//!
//! Options that describe one pair (`--align`, the monitoring windows, alerts and Prometheus
//! endpoint) are usage errors here; `--offset`, `--every`, `--frames`, `--scale` and `--roi`
//! apply to each file alike.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, anyhow};
use comfy_table::{CellAlignment, ContentArrangement, Table, presets};
use gstgpumetrics::message::{FieldStats, Summary};

use crate::cli::{self, Args, FormatArg, PairingArg};
use crate::gate::GateConfig;
use crate::input;
use crate::pipeline::{self, Decoding, PipelineConfig};
use crate::{Failure, Notes, fail, fields, header, monitor, output, plot, progress, run, usage};

/// What the command worked out before the inputs were opened (the same as for one pair).
pub struct Plan<'a> {
    /// The element's form (`psnr+ssim`).
    pub metrics: &'a str,
    pub run_fields: &'a [&'static str],
    pub rules: &'a [fail::Rule],
    pub subsample: Option<u32>,
    pub every: u64,
    pub skipped_by: &'static str,
    pub stop: &'a Arc<AtomicBool>,
    pub notes: &'a Notes,
}

/// The flags that describe one pair, refused with several distorted files.
fn one_pair_flags(args: &Args) -> Vec<&'static str> {
    [
        (args.align.is_some(), "--align"),
        (args.window.is_some(), "--window"),
        (!args.alerts.is_empty(), "--alert"),
        (args.prometheus.is_some(), "--prometheus"),
    ]
    .into_iter()
    .filter_map(|(given, flag)| given.then_some(flag))
    .collect()
}

/// The names of the files in the table and the plot: the file names, or the inputs as
/// given where two file names are the same (`a/dist.mp4`, `b/dist.mp4`).
pub fn labels(given: &[&str]) -> Vec<String> {
    let short: Vec<&str> = given.iter().map(|g| crate::short_name(g)).collect();
    let unique = short
        .iter()
        .enumerate()
        .all(|(i, s)| !short[..i].contains(s));
    if unique {
        short.into_iter().map(String::from).collect()
    } else {
        given.iter().map(|g| g.to_string()).collect()
    }
}

/// The statistics of the table's rows, each with how it is read from the field's stats
/// (`None`: the field has no such statistic).
type Stat = (&'static str, fn(&FieldStats, bool) -> Option<f64>);
const STATS: &[Stat] = &[
    ("mean", |s, _| Some(s.mean)),
    ("harm. mean", |s, customary| {
        s.harmonic_mean.filter(|_| customary)
    }),
    ("min", |s, _| Some(s.min)),
    ("max", |s, _| Some(s.max)),
    ("p5", |s, _| Some(s.p5)),
    ("p50", |s, _| Some(s.p50)),
    ("p95", |s, _| Some(s.p95)),
];

/// The summary table of several files: a row per field and statistic, a column per file
/// (`labels`, in the order given), then each file's counts.
pub fn ladder_table(labels: &[String], summaries: &[Summary], counts: &[output::Counts]) -> String {
    let mut table = Table::new();
    let mut head = vec!["field".to_string(), "stat".to_string()];
    head.extend(labels.iter().cloned());
    table
        .load_preset(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(head);
    // The fields of every file, in the order the first has them.
    let mut names: Vec<&str> = Vec::new();
    for s in summaries {
        for (name, _) in &s.fields {
            if !names.contains(&name.as_str()) && !output::repeats(s, name) {
                names.push(name);
            }
        }
    }
    for name in names {
        let field = fields::meta(name);
        let mut first = true;
        for (stat, get) in STATS {
            let cells: Vec<String> = summaries
                .iter()
                .map(|s| {
                    s.field(name)
                        .and_then(|st| get(st, field.harmonic_mean))
                        .map_or("-".into(), |v| field.format(v))
                })
                .collect();
            if *stat == "harm. mean" && cells.iter().all(|c| c == "-") {
                continue;
            }
            let mut row = vec![
                if first {
                    name.to_string()
                } else {
                    String::new()
                },
                stat.to_string(),
            ];
            row.extend(cells);
            table.add_row(row);
            first = false;
        }
    }
    for i in 2..labels.len() + 2 {
        if let Some(c) = table.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    let mut out = table.to_string();
    out.push('\n');
    for ((label, summary), counts) in labels.iter().zip(summaries).zip(counts) {
        // The single-pair table's count lines, under the file's name.
        for line in output::counts_text(summary, counts).lines() {
            out.push_str(&format!("{label}: {line}\n"));
        }
    }
    out
}

/// Runs `gpumetrics REF DIST1 DIST2 ...` from the checks on: opens the inputs, builds and
/// runs the pipeline (again, with a file converted, when its raw format differs from the
/// reference's), prints the notes and the table, writes the plot and judges the rules; the
/// exit status, as [`crate::real_main`]'s.
pub fn run(args: &Args, plan: &Plan) -> Result<i32, Failure> {
    let notes = plan.notes;
    let given: Vec<&str> = std::iter::once(args.distorted.as_str())
        .chain(args.more_distorted.iter().map(String::as_str))
        .collect();
    let flags = one_pair_flags(args);
    if !flags.is_empty() {
        return Err(usage(anyhow!(
            "{} {} one pair (gpumetrics REF DIST), and {} distorted files are given: run \
             each file alone for it (--offset, --every, --frames, --scale and --roi apply to \
             each of several files)",
            flags.join(", "),
            if flags.len() == 1 {
                "describes"
            } else {
                "describe"
            },
            given.len()
        )));
    }
    if let Some((i, d)) = given
        .iter()
        .enumerate()
        .find(|(i, d)| given[..*i].contains(d))
    {
        return Err(usage(anyhow!(
            "the distorted input {d} is given twice (as the {} and the {}): give each file \
             once",
            ordinal(given.iter().position(|g| g == d).unwrap_or(0)),
            ordinal(i)
        )));
    }
    let reference_given = args.reference.as_deref().context("no reference")?;
    let reference = input::discover(reference_given, "reference", &args.raw)?;
    notes.say(format!(
        "reference: {} ({})",
        reference.given,
        reference.describe()
    ));
    let mut distorted = Vec::new();
    for d in &given {
        let input = input::discover(d, "distorted", &args.raw)?;
        notes.say(format!("distorted: {} ({})", input.given, input.describe()));
        distorted.push(input);
    }
    if let Some(live) = std::iter::once(&reference)
        .chain(&distorted)
        .find(|i| i.live)
    {
        return Err(usage(anyhow!(
            "{} is live: several distorted files are compared with a reference file, not \
             with streams (compare a live stream as one pair: gpumetrics REF DIST)",
            live.given
        )));
    }
    if let Some(roi) = &args.roi {
        roi.check_within(reference.width, reference.height, "the reference's")
            .map_err(|e| usage(anyhow!("--roi: {e}")))?;
    }
    let mut scale_to = Vec::new();
    for d in &distorted {
        let same = (d.width, d.height) == (reference.width, reference.height);
        scale_to.push(match (same, args.scale) {
            (true, _) => None,
            (false, true) => {
                notes.say(format!(
                    "scaling: {} {}x{} -> {}x{} (videoscale method={}, or cudascale on NVDEC)",
                    d.given,
                    d.width,
                    d.height,
                    reference.width,
                    reference.height,
                    pipeline::SCALE_METHOD
                ));
                Some((reference.width, reference.height))
            }
            (false, false) => {
                return Err(anyhow!(
                    "{} differs in size from the reference ({}x{} against {}x{}): add \
                     --scale to scale the distorted videos to the reference size",
                    d.given,
                    d.width,
                    d.height,
                    reference.width,
                    reference.height
                )
                .into());
            }
        });
    }
    let pairing = match args.pairing {
        PairingArg::Timestamp => "timestamp",
        PairingArg::Sequence => "sequence",
    };
    if args.pairing == PairingArg::Timestamp
        && distorted.iter().any(|d| d.framerate != reference.framerate)
    {
        notes.say(
            "frame rates differ: frames are paired by timestamp; frames without a partner \
             are counted as unmatched",
        );
    }

    let cuda = crate::choose_backend(args, notes)?;
    let mut decoding = Vec::new();
    for (d, scale) in distorted.iter().zip(&scale_to) {
        let [_, dist] = crate::choose_decoding(args, [None, Some(d)], &cuda, *scale, notes)?;
        decoding.push(dist);
    }
    let [ref_decoding, _] =
        crate::choose_decoding(args, [Some(&reference), None], &cuda, None, notes)?;

    let offset = args.offset;
    let (ref_skip, dist_skip) = if offset >= 0 {
        (0, offset as u64)
    } else {
        (offset.unsigned_abs(), 0)
    };
    let every = plan.every;
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
            index_duration: if args.pairing == PairingArg::Timestamp {
                reference.frame_duration()
            } else {
                None
            },
        },
    ];
    // Expected pairs of all files together, for the progress bar.
    let total = reference.estimated_frames().map(|n| {
        distorted
            .iter()
            .map(|d| {
                let mut pairs = n.saturating_sub(ref_skip);
                if let Some(m) = d.estimated_frames()
                    && d.framerate == reference.framerate
                {
                    pairs = pairs.min(m.saturating_sub(dist_skip));
                }
                let pairs = pairs.div_ceil(every);
                args.frames.map_or(pairs, |f| pairs.min(f))
            })
            .sum()
    });
    let config = PipelineConfig {
        metrics: plan.metrics.to_string(),
        backend: args.backend.nick(),
        device: args.device,
        pairing,
        options: args.metric_options.clone(),
        scale_to: None,
        convert_to: None,
        decoding: [ref_decoding.clone(), Decoding::Software],
        gates,
        monitoring: monitor::Monitoring {
            subsample: plan.subsample,
            roi: args.roi,
            ..Default::default()
        },
    };

    let metric_names: Vec<String> = plan.metrics.split('+').map(String::from).collect();
    let options = header::options(&args.metric_options);
    let header = header::Header {
        version: env!("CARGO_PKG_VERSION"),
        inputs: header::Inputs {
            reference: Some(header::InputInfo::of(&reference)),
            distorted: header::Distorted::Several(
                distorted.iter().map(header::InputInfo::of).collect(),
            ),
        },
        backend: if cuda.is_ok() { "cuda" } else { "cpu" },
        device: cuda.is_ok().then_some(args.device),
        threads: cuda.is_err().then(rayon::current_num_threads),
        decoding: std::iter::once(&ref_decoding)
            .chain(&decoding)
            .map(|d| match d {
                Decoding::Nvdec(f) => f.clone(),
                Decoding::Software => "software".into(),
            })
            .collect(),
        models: header::models(&metric_names, &options),
        metrics: metric_names,
        fields: plan.run_fields.to_vec(),
        options,
        run: header::RunSettings {
            pairing: Some(pairing),
            offset,
            every,
            frames: args.frames,
            scale: scale_to.iter().any(Option::is_some),
            roi: args.roi.map(|r| r.to_string()),
            window: None,
            alerts: Vec::new(),
            fail: plan.rules.iter().map(|r| r.text.clone()).collect(),
        },
        null_scores: header::NULL_SCORES,
    };
    let to_file = args.output.is_some();
    let path_text = args.output.as_deref().unwrap_or("-".as_ref()).display();
    let mut sink = output::destination(args.output.as_deref())
        .with_context(|| format!("cannot create {path_text}"))
        .and_then(|out| {
            output::RecordSink::open_labelled(
                args.format,
                out,
                plan.run_fields.to_vec(),
                &header,
                given.iter().map(|g| g.to_string()).collect(),
            )
            .with_context(|| format!("cannot write {path_text}"))
        })?;
    notes.say(format!(
        "metrics: {} ({} distorted files against one reference decoded once)",
        plan.metrics.replace('+', ", "),
        given.len()
    ));
    let keep = args.plot.is_some() || (args.format == FormatArg::Table && to_file);
    let report = run::Report {
        unit: "pair",
        fields: monitor::main_fields(crate::metric_set(plan.metrics), &[]),
        windows_to_stdout: args.format == FormatArg::Table || to_file,
        alerts: false,
        frame_base: ref_skip,
    };
    let mut convert_to: Vec<Option<String>> = vec![None; distorted.len()];
    let (built, outcomes) = loop {
        let each: Vec<pipeline::Distorted> = distorted
            .iter()
            .enumerate()
            .map(|(i, input)| pipeline::Distorted {
                input,
                decoding: decoding[i].clone(),
                scale_to: scale_to[i],
                convert_to: convert_to[i].clone(),
            })
            .collect();
        let built = pipeline::build_several(
            &config,
            (&reference, &ref_decoding),
            &each,
            plan.stop.clone(),
        )?;
        let mut progress = progress::Progress::new(total, args.quiet, false, "pairs");
        match run::run_elements(
            &built.pipeline,
            &built.elements,
            plan.stop,
            &mut sink,
            &mut progress,
            keep,
            &report,
            args.verbose,
        ) {
            Ok(outcomes) => break (built, outcomes),
            Err(e) => {
                // As with one pair: a file whose raw format differs from the reference's
                // fails at its first frames; run again with it converted.
                let mut again = false;
                for (i, caps) in built.caps.iter().enumerate() {
                    let [r, d] = caps.each_ref().map(|c| {
                        c.lock()
                            .ok()
                            .and_then(|c| c.as_ref().and_then(pipeline::caps_format))
                    });
                    if let (Some(r), Some(d)) = (r, d)
                        && r != d
                        && convert_to[i].is_none()
                    {
                        notes.say(format!(
                            "formats differ (reference {r}, {} {d}): converting it to {r}",
                            given[i]
                        ));
                        convert_to[i] = Some(r);
                        again = true;
                    }
                }
                if !again {
                    return Err(e.into());
                }
            }
        }
    };
    drop(sink);

    let say_decoding = |role: &str, d: &Decoding, i: usize| {
        let plugged = built.decoders[i]
            .lock()
            .map(|v| v.clone())
            .unwrap_or_default();
        notes.say(format!(
            "decoding {role}: {}",
            crate::describe_decoding(d, &plugged)
        ));
    };
    say_decoding("reference", &ref_decoding, 0);
    for (i, d) in decoding.iter().enumerate() {
        say_decoding(given[i], d, i + 1);
    }
    if args.verbose {
        let all = built
            .all_decoders
            .lock()
            .map(|v| v.clone())
            .unwrap_or_default();
        notes.say(format!(
            "pipeline: {} decoders ({}) for {} inputs (the reference and {} distorted files)",
            all.len(),
            all.join(", "),
            given.len() + 1,
            given.len()
        ));
    }
    for (i, (decoded, caps)) in built.decoded.iter().zip(&built.caps).enumerate() {
        for note in crate::depth_notes(decoded, caps) {
            notes.say(format!("{}: {note}", given[i]));
        }
    }
    let nvdec = std::iter::once(&ref_decoding)
        .chain(&decoding)
        .any(|d| matches!(d, Decoding::Nvdec(_)));
    for (i, outcome) in outcomes.iter().enumerate() {
        if (args.verbose || nvdec)
            && let Some(m) = &outcome.memory_stats
        {
            let get = |f: &str| m.get::<u64>(f).unwrap_or(0);
            notes.say(format!(
                "memory ({}): {} frames read in CUDA memory (zero-copy), {} downloaded to the \
                 host, {} in system memory",
                given[i],
                get("device-frames"),
                get("downloaded-frames"),
                get("system-frames")
            ));
        }
    }
    let interrupted = outcomes.first().is_some_and(|o| o.interrupted);
    if interrupted {
        let counts: Vec<String> = outcomes
            .iter()
            .zip(&given)
            .map(|(o, g)| format!("{g} {}", o.summary.frames))
            .collect();
        notes.say(format!(
            "interrupted after {} compared pairs: the summary covers those",
            counts.join(", ")
        ));
    }
    let empty: Vec<String> = outcomes
        .iter()
        .enumerate()
        .filter(|(_, o)| o.summary.frames == 0)
        .map(|(i, o)| {
            let why = crate::why_no_pairs(&built.gates[i], &o.summary, offset, false, true);
            format!("{}: {why}", given[i])
        })
        .collect();
    if !empty.is_empty() && !interrupted {
        return Err(Failure {
            status: cli::EXIT_NO_PAIRS,
            error: anyhow!("no pair was compared for {}", empty.join("; ")),
        });
    }

    let labels = labels(&given);
    let counts: Vec<output::Counts> = built
        .gates
        .iter()
        .map(|g| {
            let dropped = |i: usize| g[i].as_ref().map_or(0, crate::gate::Gate::offset_dropped);
            output::Counts {
                skipped_by: plan.skipped_by,
                offset_dropped: [dropped(0), dropped(1)],
                single: false,
            }
        })
        .collect();
    let summaries: Vec<Summary> = outcomes.iter().map(|o| o.summary.clone()).collect();
    let table = ladder_table(&labels, &summaries, &counts);
    match (args.format, &args.output) {
        (FormatArg::Table, Some(path)) => {
            let mut text = String::new();
            for (label, o) in labels.iter().zip(&outcomes) {
                text += &format!("{label}\n{}\n", output::frames_table(&o.records));
                if !o.events.is_empty() {
                    text += &(output::events_text(&o.events) + "\n");
                }
            }
            text += &table;
            std::fs::write(path, text)
                .with_context(|| format!("cannot write {}", path.display()))?;
            crate::print_stdout(&table)?;
        }
        (FormatArg::Table, None) | (_, Some(_)) => crate::print_stdout(&table)?,
        (_, None) => {
            if !args.quiet {
                eprint!("{table}");
            }
        }
    }
    if let Some(path) = &args.output {
        notes.say(format!("records: {}", path.display()));
    }
    if let Some(path) = &args.plot {
        let curves: Vec<plot::Curves> = labels
            .iter()
            .zip(&outcomes)
            .map(|(label, o)| plot::Curves {
                label: Some(label),
                records: &o.records,
                summary: &o.summary,
            })
            .collect();
        let title = format!(
            "{} distorted files vs {}",
            given.len(),
            crate::short_name(&reference.given)
        );
        plot::write_curves(path, &curves, &title)
            .with_context(|| format!("--plot {}", path.display()))?;
        notes.say(format!("plot: {}", path.display()));
    }

    let mut status = if interrupted { 130 } else { 0 };
    let mut failed = Vec::new();
    for (label, summary) in labels.iter().zip(&summaries) {
        for rule in plan.rules {
            match rule.judge(summary) {
                fail::Verdict::Pass(text) => notes.say(format!("{label}: {text}")),
                fail::Verdict::Fail(text) => {
                    eprintln!("{label}: {text}");
                    if !failed.contains(label) {
                        failed.push(label.clone());
                    }
                    status = cli::EXIT_THRESHOLD;
                }
            }
        }
    }
    if !failed.is_empty() {
        eprintln!(
            "fail: {} of {} distorted files broke a --fail rule: {}",
            failed.len(),
            labels.len(),
            failed.join(", ")
        );
    }
    Ok(status)
}

/// `first`, `second`, ... for a position from 0.
fn ordinal(i: usize) -> String {
    match i {
        0 => "first".into(),
        1 => "second".into(),
        2 => "third".into(),
        n => format!("{}th", n + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_file_names_unless_they_clash() {
        assert_eq!(
            labels(&["a/crf18.mp4", "a/crf28.mp4"]),
            ["crf18.mp4", "crf28.mp4"]
        );
        assert_eq!(
            labels(&["a/dist.mp4", "b/dist.mp4"]),
            ["a/dist.mp4", "b/dist.mp4"]
        );
    }

    fn stats(mean: f64) -> FieldStats {
        FieldStats {
            mean,
            min: mean - 1.0,
            max: mean + 1.0,
            harmonic_mean: Some(mean),
            ..Default::default()
        }
    }

    #[test]
    fn the_table_has_a_column_per_file_and_a_row_per_statistic() {
        let summary = |psnr: f64| Summary {
            frames: 10,
            fields: vec![("psnr-y".into(), stats(psnr)), ("mse-y".into(), stats(5.0))],
            ..Default::default()
        };
        let counts = [output::Counts {
            skipped_by: "--every",
            ..Default::default()
        }; 2];
        let t = ladder_table(
            &["crf18.mp4".into(), "crf28.mp4".into()],
            &[summary(40.0), summary(30.0)],
            &counts,
        );
        let rows: Vec<Vec<&str>> = t
            .lines()
            .filter(|l| l.starts_with('│'))
            .map(|l| l.split(['│', '┆']).map(str::trim).collect::<Vec<_>>())
            .map(|r| r[1..r.len() - 1].to_vec())
            .collect();
        assert_eq!(rows[0], ["field", "stat", "crf18.mp4", "crf28.mp4"], "{t}");
        assert_eq!(rows[1], ["psnr-y", "mean", "40.000", "30.000"], "{t}");
        assert_eq!(rows[2], ["", "harm. mean", "40.000", "30.000"], "{t}");
        assert_eq!(rows[3], ["", "min", "39.000", "29.000"], "{t}");
        // The harmonic mean only where it is customary (not for MSE).
        let mse: Vec<&str> = rows[8..].iter().map(|r| r[1]).collect();
        assert_eq!(rows[8][0], "mse-y", "{t}");
        assert_eq!(mse, ["mean", "min", "max", "p5", "p50", "p95"], "{t}");
        assert!(
            t.contains("crf28.mp4: compared pairs: 10   unmatched"),
            "{t}"
        );
    }
}
