// SPDX-License-Identifier: MPL-2.0
//! What the command says once the pipeline has ended: how the run went (the decoders, a
//! conversion that lost bits, where NVDEC's frames were read, an interruption), the
//! summary table (one pair's, or with several distorted files the ladder with a column per
//! file) on stdout, or on stderr when the records are on stdout, the per-frame table's file
//! (`--format table -o FILE`) and the plot.

use anyhow::{Context, Result};
use gstgpumetrics::message::Summary;

use crate::cli::FormatArg;
use crate::exit::print_stdout;
use crate::flow::Setup;
use crate::gate::Gate;
use crate::output::{self, Counts};
use crate::pipeline::BuiltRun;
use crate::run::Outcome;
use crate::{plot, several};

/// Says how the run went, on stderr.
pub fn say_how_it_went(setup: &Setup, built: &BuiltRun, outcomes: &[Outcome]) {
    let Setup {
        args,
        plan,
        lineup,
        decodings,
        notes,
        ..
    } = *setup;
    decodings.say_used(built, lineup, args.verbose, notes);
    let several = lineup.several();
    let given = lineup.given();
    // With NVDEC, whether the frames stayed on the device is the point: always say it.
    let nvdec = decodings.any_nvdec();
    for (i, outcome) in outcomes.iter().enumerate() {
        if (args.verbose || nvdec)
            && let Some(m) = &outcome.memory_stats
        {
            let get = |f: &str| m.get::<u64>(f).unwrap_or(0);
            let which = if several {
                format!(" ({})", given[i])
            } else {
                String::new()
            };
            notes.say(format!(
                "memory{which}: {} frames read in CUDA memory (zero-copy), {} downloaded to the \
                 host, {} in system memory",
                get("device-frames"),
                get("downloaded-frames"),
                get("system-frames")
            ));
            if args.verbose && !several {
                notes.say(format!("memory-stats: {m}"));
            }
        }
    }
    if interrupted(outcomes) {
        let counts = if several {
            let each: Vec<String> = outcomes
                .iter()
                .zip(&given)
                .map(|(o, g)| format!("{g} {}", o.summary.frames))
                .collect();
            each.join(", ")
        } else {
            outcomes[0].summary.frames.to_string()
        };
        notes.say(format!(
            "interrupted after {counts} {}: the summary covers those",
            if plan.single {
                "measured frames"
            } else {
                "compared pairs"
            }
        ));
    }
}

/// Whether Ctrl-C ended the run (it ends every input's at once).
pub fn interrupted(outcomes: &[Outcome]) -> bool {
    outcomes.first().is_some_and(|o| o.interrupted)
}

/// Prints the summary table where it goes, writes the per-frame table's file and the plot
/// (`labels`: the distorted inputs' names in the table and the plot).
pub fn print(
    setup: &Setup,
    built: &BuiltRun,
    outcomes: &[Outcome],
    labels: &[String],
) -> Result<()> {
    let Setup {
        args,
        plan,
        lineup,
        notes,
        ..
    } = *setup;
    let several = lineup.several();
    let counts: Vec<Counts> = built
        .gates
        .iter()
        .map(|g| {
            let dropped = |i: usize| g[i].as_ref().map_or(0, Gate::offset_dropped);
            Counts {
                skipped_by: plan.skipped_by,
                offset_dropped: [dropped(0), dropped(1)],
                single: plan.single,
            }
        })
        .collect();
    let summaries: Vec<Summary> = outcomes.iter().map(|o| o.summary.clone()).collect();
    let table = if several {
        several::ladder_table(labels, &summaries, &counts)
    } else {
        output::summary_table(&summaries[0], &counts[0])
    };
    match (args.format, &args.output) {
        (FormatArg::Table, Some(path)) => {
            let mut text = String::new();
            for (label, o) in labels.iter().zip(outcomes) {
                if several {
                    text += &format!("{label}\n");
                }
                text += &(output::frames_table(&o.records) + "\n");
                if !o.events.is_empty() {
                    text += &(output::events_text(&o.events) + "\n");
                }
            }
            text += &table;
            std::fs::write(path, text)
                .with_context(|| format!("cannot write {}", path.display()))?;
            print_stdout(&table)?;
        }
        // Records went to the file: the table goes to stdout.
        (FormatArg::Table, None) | (_, Some(_)) => print_stdout(&table)?,
        // Records went to stdout: the table goes to stderr, so stdout stays machine-readable.
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
            .zip(outcomes)
            .map(|(label, o)| plot::Curves {
                label: several.then_some(label.as_str()),
                records: &o.records,
                summary: &o.summary,
            })
            .collect();
        let dist = short_name(&lineup.distorted[0].given);
        let title = match &lineup.reference {
            Some(r) if several => format!(
                "{} distorted files vs {}",
                lineup.distorted.len(),
                short_name(&r.given)
            ),
            Some(r) => format!("{dist} vs {}", short_name(&r.given)),
            None => format!("{dist} (no reference)"),
        };
        plot::write_curves(path, &curves, &title)
            .with_context(|| format!("--plot {}", path.display()))?;
        notes.say(format!("plot: {}", path.display()));
    }
    Ok(())
}

/// The file name of a path or URI, for the plot title and the files' labels.
pub fn short_name(given: &str) -> &str {
    given.rsplit('/').find(|s| !s.is_empty()).unwrap_or(given)
}
