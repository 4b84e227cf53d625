// SPDX-License-Identifier: MPL-2.0
//! One hand-written list of the metrics, docs/METRICS.md's table "The metrics", follows the
//! registry (`metric::all()`): a new metric missing from it, a removed one still in it, or
//! another order fails here. The READMEs list no metrics (they point to that table), so
//! that adding a metric changes no README: a list of metrics in one fails here too.
//!
//! A list is a run of inline-code names joined by `,`, `and` and `the full-reference` /
//! `the no-reference` (e.g. "`psnr`, `ssim`, ... `vmaf` and the no-reference `blur`, ...
//! `cambi`") with at least three registered names.

use std::path::{Path, PathBuf};

use gpumetrics_engine::metric;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The registered names: full-reference ones, then no-reference ones, each in registry
/// order.
fn registered() -> (Vec<&'static str>, Vec<&'static str>) {
    let nr = metric::no_reference();
    let (no_ref, full): (Vec<&metric::Info>, Vec<_>) =
        metric::all().partition(|i| nr.contains(i.flag));
    (
        full.iter().map(|i| i.name).collect(),
        no_ref.iter().map(|i| i.name).collect(),
    )
}

/// The text outside fenced code blocks (whose lines are blanked, so line numbers stay).
fn prose(text: &str) -> String {
    let mut fenced = false;
    text.lines()
        .map(|l| {
            if l.trim_start().starts_with("```") {
                fenced = !fenced;
                return "";
            }
            if fenced { "" } else { l }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether the text between two inline-code spans joins them into one list.
fn joins(between: &str) -> bool {
    let s = between.split_whitespace().collect::<Vec<_>>().join(" ");
    let s = s.strip_prefix(',').unwrap_or(&s).trim_start();
    let s = s.strip_prefix("and").unwrap_or(s).trim_start();
    let s = s.strip_prefix("the").unwrap_or(s).trim_start();
    let s = s
        .strip_prefix("full-reference")
        .or_else(|| s.strip_prefix("no-reference"))
        .unwrap_or(s);
    s.trim().is_empty()
}

/// Every run of inline-code spans joined into a list, with the line it starts on.
fn runs(text: &str) -> Vec<(usize, Vec<String>)> {
    let text = prose(text);
    let parts: Vec<&str> = text.split('`').collect();
    let mut runs: Vec<(usize, Vec<String>)> = Vec::new();
    let mut offset = 0;
    let mut open = false;
    for (i, part) in parts.iter().enumerate() {
        if i % 2 == 1 {
            let line = text[..offset].lines().count().max(1);
            match runs.last_mut() {
                Some((_, run)) if open => run.push(part.to_string()),
                _ => runs.push((line, vec![part.to_string()])),
            }
            open = true;
        } else if i > 0 {
            open = open && joins(part);
        }
        offset += part.len() + 1;
    }
    runs
}

/// The lists of metrics of `path`: the runs naming at least three registered metrics.
fn lists(path: &str) -> Vec<(usize, Vec<String>)> {
    let names: Vec<&str> = metric::all().map(|i| i.name).collect();
    runs(&read(path))
        .into_iter()
        .filter(|(_, run)| run.iter().filter(|t| names.contains(&t.as_str())).count() >= 3)
        .collect()
}

#[test]
fn no_readme_lists_the_metrics() {
    for path in [
        "README.md",
        "gst-plugin-gpumetrics/README.md",
        "gpumetrics-cli/README.md",
        "engine/README.md",
        "examples/README.md",
        "build-support/README.md",
        "launch/README.md",
        "kernels/metrics/README.md",
        "kernels/device/README.md",
        "engine/models/README.md",
    ] {
        let lists = lists(path);
        assert!(
            lists.is_empty(),
            "{path}: lists of metrics {lists:?}: point to docs/METRICS.md's table \"The \
             metrics\" instead (the one list, which the registry keeps complete)"
        );
    }
}

#[test]
fn the_metrics_tables_are_the_registrys() {
    let path = "docs/METRICS.md";
    let text = read(path);
    let section = text
        .split("\n## The metrics\n")
        .nth(1)
        .expect("docs/METRICS.md has a \"## The metrics\" section");
    let section = section.split("\n## ").next().unwrap();
    // The first cell of every table row but the headers.
    let rows: Vec<String> = section
        .lines()
        .filter_map(|l| l.strip_prefix('|'))
        .filter_map(|l| l.split('|').next())
        .map(|cell| cell.trim().to_string())
        .filter(|cell| cell != "metric" && !cell.starts_with("---"))
        .map(|cell| cell.trim_matches('`').to_string())
        .collect();
    let (full, no_ref) = registered();
    let all: Vec<&str> = full.iter().chain(&no_ref).copied().collect();
    assert_eq!(
        rows, all,
        "{path}'s tables under \"The metrics\" (full-reference, then no-reference, each in \
         registry order) are not the registry's metrics"
    );
}

#[test]
fn the_list_scanner_finds_lists_and_their_drift() {
    let (full, no_ref) = registered();
    let code = |names: &[&str]| {
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let good = format!(
        "metrics: {}, and the no-reference\n{} (names).",
        code(&full),
        code(&no_ref)
    );
    let found = runs(&good);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].1.len(), full.len() + no_ref.len());
    // A list without its last metric, or with an unknown one, is still found as a list.
    let short = code(&no_ref[..no_ref.len() - 1]);
    let found = runs(&format!("one input: {short}."));
    assert_eq!(found[0].1.len(), no_ref.len() - 1);
    let extra = format!("{} and `not-a-metric`", code(&no_ref));
    assert_eq!(runs(&extra)[0].1.last().unwrap(), "not-a-metric");
    // Fenced code is not prose; a table cell ends a list.
    assert!(runs(&format!("```\n{}\n```\n", code(&full))).is_empty());
    assert_eq!(runs("| `psnr` | `ssim` |").len(), 2);
}
