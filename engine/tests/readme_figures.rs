// SPDX-License-Identifier: MPL-2.0
//! The READMEs quote measured figures, never rounded or remembered ones: every number
//! written with a thousands separator (`1,696`, `45,055`) in a README's prose (outside
//! code blocks, whose example outputs are their own) is one that docs/BENCHMARKS.md or
//! docs/GPU-RUNS.md records. A README figure that no run measured ("PSNR 47,000–50,000")
//! fails here; which entry is the newest for a figure is for the writer to check (the
//! entries are newest first). A figure that README.md quotes in several places (VMAF v1,
//! the six metrics together, Butteraugli) is the same in each.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The numbers of `line` with thousands separators: a digit run of 1 to 3 digits followed
/// by groups of `,ddd`, not part of a longer list of numbers (`2,2,102,52`).
fn figures(line: &str) -> Vec<&str> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_digit() || (i > 0 && matches!(b[i - 1], b'0'..=b'9' | b'.' | b',')) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let lead = i - start;
        let mut groups = 0;
        while i + 3 < b.len()
            && b[i] == b','
            && b[i + 1..i + 4].iter().all(u8::is_ascii_digit)
            && !b.get(i + 4).is_some_and(u8::is_ascii_digit)
        {
            i += 4;
            groups += 1;
        }
        let followed = b.get(i).is_some_and(|c| *c == b',' || c.is_ascii_digit());
        if lead <= 3 && groups > 0 && !followed {
            out.push(&line[start..i]);
        }
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b',') {
            i += 1;
        }
    }
    out
}

#[test]
fn the_figure_scanner() {
    assert_eq!(figures("v1 at 1,696 (1,481 with two)"), ["1,696", "1,481"]);
    assert_eq!(figures("PSNR 47,000–50,000 pairs/s"), ["47,000", "50,000"]);
    assert_eq!(figures("roi 2,2,102,52 and 1.5,000"), Vec::<&str>::new());
    assert_eq!(figures("at 2,666."), ["2,666"]);
}

#[test]
fn every_readme_figure_is_a_recorded_one() {
    let records = read("docs/BENCHMARKS.md") + &read("docs/GPU-RUNS.md");
    let mut checked = 0;
    for path in [
        "README.md",
        "engine/README.md",
        "gst-plugin-gpumetrics/README.md",
        "gpumetrics-cli/README.md",
        "examples/README.md",
        "build-support/README.md",
        "launch/README.md",
        "kernels/metrics/README.md",
        "kernels/device/README.md",
    ] {
        let mut fenced = false;
        for (n, line) in read(path).lines().enumerate() {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                continue;
            }
            if fenced {
                continue;
            }
            for f in figures(line) {
                checked += 1;
                assert!(
                    records.contains(f),
                    "{path}:{}: {f} is in no entry of docs/BENCHMARKS.md or docs/GPU-RUNS.md \
                     (quote the newest measured figure)",
                    n + 1
                );
            }
        }
    }
    // The headline figures (throughput of each metric, VMAF v1, the six) are there.
    assert!(checked >= 20, "only {checked} figures found in the READMEs");
}

/// The first number after `prefix` in `text` (whitespace-normalised), as written.
fn figure_after(text: &str, prefix: &str) -> String {
    let at = text
        .find(prefix)
        .unwrap_or_else(|| panic!("README.md no longer says \"{prefix}\""));
    text[at + prefix.len()..]
        .split(|c: char| !(c.is_ascii_digit() || c == ','))
        .find(|w| !w.is_empty())
        .unwrap_or_default()
        .trim_end_matches(',')
        .to_string()
}

#[test]
fn readme_headline_figures_agree_where_repeated() {
    // README.md quotes some figures in several places; each place says the same.
    let text = read("README.md")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for places in [
        // VMAF v1 (`vmaf_v1.0.16_3d0h`, 1080p 10-bit): the opening and "VMAF v1".
        &["v1 at ", "`vmaf_v1.0.16_3d0h` at 1080p 10-bit "][..],
        // The six full-reference metrics in one engine.
        &[
            "All six metrics together: ",
            "six metrics run at ",
            "the six together ",
        ][..],
        // Butteraugli: the opening and "GPU machine, benchmarks".
        &[
            "`butteraugli` crate within 2.1e-6 relative, GPU equal to CPU; ",
            "on 16 cores); Butteraugli ",
        ][..],
    ] {
        let figures: Vec<String> = places.iter().map(|p| figure_after(&text, p)).collect();
        assert!(
            figures.iter().all(|f| *f == figures[0] && !f.is_empty()),
            "README.md quotes different figures for one measurement: {:?}",
            places.iter().zip(&figures).collect::<Vec<_>>()
        );
    }
}
