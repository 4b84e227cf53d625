// SPDX-License-Identifier: MPL-2.0
//! `gpumetrics REF DIST1 DIST2 ...`: what only a run of one reference against several
//! distorted files (an encoding ladder, a CRF sweep) has. The run itself is the one of a
//! pair ([`crate::flow`]) with N distorted files: the reference is decoded once and a `tee`
//! hands its frames to one gpumetrics element per file ([`crate::pipeline::build_several`]). Here:
//! the flags refused with several files, the files' labels, and the table with a column per
//! file ([`ladder_table`]).
//!
//! Options that describe one pair (`--align`, the monitoring windows, alerts and Prometheus
//! endpoint) are usage errors here; `--offset`, `--every`, `--frames`, `--scale` and `--roi`
//! apply to each file alike.

use anyhow::anyhow;
use comfy_table::{CellAlignment, ContentArrangement, Table, presets};
use gstgpumetrics::message::{FieldStats, Summary};

use crate::cli::Args;
use crate::exit::{Failure, usage};
use crate::input::Input;
use crate::{fields, output};

/// The flags that describe one pair, refused with several distorted files.
fn one_pair_flags(args: &Args) -> Vec<&'static str> {
    [
        (args.align.is_some(), "--align"),
        (args.window.is_some(), "--window"),
        (!args.alerts.is_empty(), "--alert"),
        (args.prometheus.is_some(), "--prometheus"),
        (args.map.is_some(), "--map"),
        (args.map_video.is_some(), "--map-video"),
    ]
    .into_iter()
    .filter_map(|(given, flag)| given.then_some(flag))
    .collect()
}

/// Refuses, before any input is opened, the flags that describe one pair and a distorted
/// file given twice (its records could not be told apart).
pub fn check(args: &Args) -> Result<(), Failure> {
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
    Ok(())
}

/// Refuses live inputs: the files are compared with a reference file, whose frames the tee
/// hands to every element at the pace of the slowest.
pub fn refuse_live<'a>(inputs: impl IntoIterator<Item = &'a Input>) -> Result<(), Failure> {
    match inputs.into_iter().find(|i| i.live) {
        Some(live) => Err(usage(anyhow!(
            "{} is live: several distorted files are compared with a reference file, not \
             with streams (compare a live stream as one pair: gpumetrics REF DIST)",
            live.given
        ))),
        None => Ok(()),
    }
}

/// The names of the files in the table and the plot: the file names, or the inputs as
/// given where two file names are the same (`a/dist.mp4`, `b/dist.mp4`).
pub fn labels(given: &[&str]) -> Vec<String> {
    let short: Vec<&str> = given
        .iter()
        .map(|g| crate::summary::short_name(g))
        .collect();
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
