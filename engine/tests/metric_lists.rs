// SPDX-License-Identifier: MPL-2.0
//! The READMEs' lists of metrics follow the registry (`metric::all()`): a new metric that
//! is missing from one, a removed one still in one, or a list in another order fails here.
//!
//! A list is a run of inline-code names joined by `,`, `and` and `the full-reference` /
//! `the no-reference` (e.g. "`psnr`, `ssim`, ... `vmaf` and the no-reference `blur`, ...
//! `cambi`"), with at least three registered names. Each must be exactly the registered
//! metrics (the full-reference ones, then the no-reference ones), the no-reference ones or
//! the full-reference ones, each in registry order. engine/README.md lists them as the
//! first column of its tables under "## Metrics", and README.md's opening paragraphs name
//! each in prose. Each README must hold the lists it has today, so that a list rewritten
//! into another form is not silently left out. The element's README also lists every
//! metric option, in registry order (`metric::options()`).

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

fn check_list(path: &str, line: usize, list: &[String]) {
    let (full, no_ref) = registered();
    let all: Vec<&str> = full.iter().chain(&no_ref).copied().collect();
    let list: Vec<&str> = list.iter().map(String::as_str).collect();
    assert!(
        list == all || list == no_ref || list == full,
        "{path}:{line}: the list of metrics {list:?} is not the registry's: every metric \
         {all:?}, the no-reference ones {no_ref:?} or the full-reference ones {full:?}, in \
         that order"
    );
}

#[test]
fn every_readme_list_of_metrics_is_the_registrys() {
    // Each README with the lists it has today (README.md: `--metrics`, "One input", the
    // `metrics` property; the element's: its opening, "One input", the `metrics` property;
    // the command's: its metrics).
    for (path, at_least) in [
        ("README.md", 3),
        ("gst-plugin-gpumetrics/README.md", 3),
        ("gpumetrics-cli/README.md", 1),
        ("engine/README.md", 0),
        ("examples/README.md", 0),
        ("build-support/README.md", 0),
        ("launch/README.md", 0),
        ("kernels/metrics/README.md", 0),
        ("kernels/device/README.md", 0),
        ("engine/models/README.md", 0),
    ] {
        let lists = lists(path);
        assert!(
            lists.len() >= at_least,
            "{path}: {} lists of metrics found, {at_least} expected: {lists:?}",
            lists.len()
        );
        for (line, list) in &lists {
            check_list(path, *line, list);
        }
    }
}

#[test]
fn the_engine_readme_tables_are_the_registrys() {
    let path = "engine/README.md";
    let text = read(path);
    let section = text
        .split("\n## Metrics\n")
        .nth(1)
        .expect("engine/README.md has a \"## Metrics\" section");
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
        "{path}'s tables (full-reference, then no-reference) are not the registry's metrics"
    );
}

#[test]
fn the_readme_opening_names_every_metric() {
    let text = read("README.md").to_lowercase();
    let opening = text.split("\n## ").next().unwrap();
    let words: Vec<&str> = opening
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .collect();
    for m in metric::all() {
        assert!(
            words.contains(&m.name),
            "README.md's opening paragraphs do not name the metric {}",
            m.name
        );
    }
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

#[test]
fn the_element_readme_lists_every_metric_option() {
    // "The metric options (`ssim-chroma`, ...) are not written in the element": every
    // option of the registry (`metric::options()`), in its order.
    let path = "gst-plugin-gpumetrics/README.md";
    let text = read(path);
    let list = text
        .split("The metric options (")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .unwrap_or_else(|| panic!("{path} has no \"The metric options (...)\" sentence"));
    let listed: Vec<&str> = list.split('`').skip(1).step_by(2).collect();
    let registered: Vec<&str> = metric::options().map(|o| o.name).collect();
    assert_eq!(
        listed, registered,
        "{path}'s \"The metric options (...)\" is not the registry's options, in its order"
    );
}
