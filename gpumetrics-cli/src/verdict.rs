// SPDX-License-Identifier: MPL-2.0
//! The exit status of a run that ended: an error when an input gave nothing to compare
//! (with what the gates saw as the reason), else 130 when Ctrl-C ended it, else whether
//! each distorted input's summary met the `--fail` rules.

use std::sync::atomic::Ordering;

use anyhow::anyhow;
use gstgpumetrics::message::Summary;

use crate::cli;
use crate::exit::Failure;
use crate::fail::{self, Verdict};
use crate::gate::Gate;
use crate::lineup::Lineup;
use crate::notes::Notes;
use crate::pipeline::BuiltRun;
use crate::run::Outcome;

/// Fails a run that compared no pair for a distorted input (with one input alone: measured
/// no frame), saying why; an interrupted run is not failed, its summary covers what was
/// measured.
pub fn refuse_empty(
    lineup: &Lineup,
    built: &BuiltRun,
    outcomes: &[Outcome],
    offset: i64,
) -> Result<(), Failure> {
    let single = lineup.reference.is_none();
    let several = lineup.several();
    let empty: Vec<String> = outcomes
        .iter()
        .enumerate()
        .filter(|(_, o)| o.summary.frames == 0)
        .map(|(i, o)| {
            let why = why_no_pairs(&built.gates[i], &o.summary, offset, single, several);
            if several {
                format!("{}: {why}", lineup.distorted[i].given)
            } else {
                why
            }
        })
        .collect();
    if empty.is_empty() || crate::summary::interrupted(outcomes) {
        return Ok(());
    }
    let error = if several {
        anyhow!("no pair was compared for {}", empty.join("; "))
    } else if single {
        anyhow!("no frame was measured: {}", empty[0])
    } else {
        anyhow!("no pair was compared: {}", empty[0])
    };
    Err(Failure {
        status: cli::EXIT_NO_PAIRS,
        error,
    })
}

/// Why a run compared no pair, from what the gates saw: the offset, an empty input, or
/// frames that found no partner (`several`: for one of several distorted files).
fn why_no_pairs(
    gates: &[Option<Gate>; 2],
    summary: &Summary,
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

/// Judges `rules` on each distorted input's summary (`labels`: their names, said before
/// each verdict when there are several): the exit status, 130 for an interrupted run
/// whose rules all passed.
pub fn judge(rules: &[fail::Rule], labels: &[String], outcomes: &[Outcome], notes: &Notes) -> i32 {
    let several = outcomes.len() > 1;
    let mut status = if crate::summary::interrupted(outcomes) {
        130
    } else {
        0
    };
    let mut failed: Vec<&str> = Vec::new();
    for (label, outcome) in labels.iter().zip(outcomes) {
        let prefix = if several {
            format!("{label}: ")
        } else {
            String::new()
        };
        for rule in rules {
            match rule.judge(&outcome.summary) {
                Verdict::Pass(text) => notes.say(format!("{prefix}{text}")),
                Verdict::Fail(text) => {
                    eprintln!("{prefix}{text}");
                    if !failed.contains(&label.as_str()) {
                        failed.push(label);
                    }
                    status = cli::EXIT_THRESHOLD;
                }
            }
        }
    }
    if several && !failed.is_empty() {
        eprintln!(
            "fail: {} of {} distorted files broke a --fail rule: {}",
            failed.len(),
            labels.len(),
            failed.join(", ")
        );
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use gstgpumetrics::message::FieldStats;

    fn outcome(psnr: f64, interrupted: bool) -> Outcome {
        Outcome {
            records: Vec::new(),
            summary: Summary {
                frames: 10,
                fields: vec![(
                    "psnr-y".into(),
                    FieldStats {
                        mean: psnr,
                        min: psnr,
                        max: psnr,
                        ..Default::default()
                    },
                )],
                ..Default::default()
            },
            events: Vec::new(),
            memory_stats: None,
            interrupted,
        }
    }

    /// One distorted input or several, the status is the same rule: a broken `--fail`
    /// rule of any file fails the run, else an interruption is 130, else 0.
    #[test]
    fn the_status_is_the_worst_of_each_files_verdicts() {
        let rules = [fail::Rule::parse("psnr-y.mean<30", &["psnr-y"]).unwrap()];
        let notes = Notes { quiet: true };
        let labels = |n: usize| -> Vec<String> { (0..n).map(|i| format!("d{i}.mp4")).collect() };
        let judge = |outcomes: &[Outcome]| judge(&rules, &labels(outcomes.len()), outcomes, &notes);
        assert_eq!(judge(&[outcome(40.0, false)]), 0);
        assert_eq!(judge(&[outcome(20.0, false)]), cli::EXIT_THRESHOLD);
        assert_eq!(judge(&[outcome(40.0, true)]), 130);
        assert_eq!(judge(&[outcome(20.0, true)]), cli::EXIT_THRESHOLD);
        assert_eq!(judge(&[outcome(40.0, false), outcome(35.0, false)]), 0);
        assert_eq!(
            judge(&[outcome(40.0, false), outcome(20.0, false)]),
            cli::EXIT_THRESHOLD
        );
        assert_eq!(judge(&[outcome(40.0, true), outcome(35.0, true)]), 130);
        assert_eq!(judge(&[]), 0);
    }
}
