// SPDX-License-Identifier: MPL-2.0
//! The documents that must follow the registry: the license text, every per-crate README
//! pointing to docs/METRICS.md, and docs/METRICS.md defining every field and the summary's
//! statistics by itself (no pointer out of the repository as the definition).

use std::path::{Path, PathBuf};

use gpumetrics_engine::metric;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_license_is_the_full_mpl_2_0() {
    let text = read("LICENSE");
    assert!(
        text.starts_with("Mozilla Public License Version 2.0"),
        "LICENSE"
    );
    // The whole text, through its exhibits, not a notice.
    for part in ["1. Definitions", "10. Versions of the License", "Exhibit B"] {
        assert!(text.contains(part), "LICENSE lacks {part}");
    }
    let workspace = read("Cargo.toml");
    assert!(workspace.contains("license = \"MPL-2.0\""));
}

#[test]
fn every_readme_points_to_the_metrics() {
    // The READMEs name no list of metrics (engine/tests/metric_lists.rs) but point to the
    // one that is kept complete.
    for path in [
        "README.md",
        "engine/README.md",
        "gst-plugin-gpumetrics/README.md",
        "gpumetrics-cli/README.md",
    ] {
        assert!(
            read(path).contains("docs/METRICS.md"),
            "{path} does not point to docs/METRICS.md"
        );
    }
}

#[test]
fn metrics_md_is_complete_in_itself() {
    let text = read("docs/METRICS.md");
    assert!(
        !text.contains("shared/docs") && !text.contains("../shared"),
        "docs/METRICS.md points outside the repository"
    );
    for m in metric::all() {
        assert!(
            m.fields
                .iter()
                .any(|f| text.contains(&format!("`{}`", f.name))),
            "docs/METRICS.md names no field of {}",
            m.name
        );
    }
    // The summary's statistics, the pooling comparison and the CPU backend's threads.
    for word in [
        "`mean`",
        "`harmonic-mean`",
        "`pooled`",
        "`p99`",
        "libvmaf",
        "FFmpeg",
        "RAYON_NUM_THREADS",
    ] {
        assert!(text.contains(word), "docs/METRICS.md lacks {word}");
    }
}

#[test]
fn the_readme_shows_the_engine_example_verbatim() {
    // The program of "Using the engine from Rust" is `examples/score_two_frames.rs` after its
    // header comment; `cargo test` builds the example, so the README's program compiles.
    let example = read("engine/examples/score_two_frames.rs");
    let code: String = example
        .lines()
        .skip_while(|l| l.starts_with("//") || l.is_empty())
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(code.starts_with("use gpumetrics_engine::"), "{code}");
    let readme = read("README.md");
    let section = readme
        .split("\n## Using the engine from Rust\n")
        .nth(1)
        .expect("README.md has no \"Using the engine from Rust\" section");
    let section = section.split("\n## ").next().unwrap();
    assert!(
        section.contains(&format!("```rust\n{code}```\n")),
        "README.md's \"Using the engine from Rust\" is not engine/examples/score_two_frames.rs"
    );
}
