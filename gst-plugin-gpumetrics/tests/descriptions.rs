// SPDX-License-Identifier: MPL-2.0
//! The element's descriptions and the registry (`gpumetrics_engine::metric::all()`): the
//! long description (`gst-inspect-1.0`'s "Description") is made from the registry and names
//! every metric; the hand-written ones (the crate documentation, src/lib.rs, and the
//! element's gtk-doc section, src/gpumetrics/mod.rs) point to the `metrics` property instead
//! of listing the metrics, so that no list there falls out of step when a metric is added.

mod common;

use std::path::Path;

fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .map(str::to_string)
        .collect()
}

fn assert_names_every_metric(what: &str, text: &str) {
    let words = words(text);
    for m in gpumetrics_engine::metric::all() {
        assert!(
            words.iter().any(|w| w == m.name),
            "{what} does not name the metric {} (any case)",
            m.name
        );
    }
}

fn source(path: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_element_description_names_every_metric() {
    common::init();
    let factory = gst::ElementFactory::find("gpumetrics").expect("the gpumetrics element");
    let description = factory
        .metadata(gst::ELEMENT_METADATA_DESCRIPTION)
        .expect("a description");
    assert_names_every_metric(
        "the element's description (src/gpumetrics/imp.rs)",
        description,
    );
}

/// Fails when a text names more than two registered metrics: a list, which a new metric
/// would leave out of step.
fn assert_lists_no_metrics(what: &str, text: &str) {
    let words = words(text);
    let named: Vec<&str> = gpumetrics_engine::metric::all()
        .map(|m| m.name)
        .filter(|name| words.iter().any(|w| w == name))
        .collect();
    assert!(
        named.len() <= 2,
        "{what} lists metrics ({named:?}); point to the `metrics` property (or docs/METRICS.md) \
         instead, which the registry keeps complete"
    );
    assert!(
        text.contains("`metrics` property"),
        "{what} should point to the `metrics` property"
    );
}

#[test]
fn the_crate_and_element_docs_point_to_the_metrics_property() {
    let lib = source("src/lib.rs");
    let crate_doc: String = lib
        .lines()
        .filter(|l| l.starts_with("//!"))
        .take_while(|l| *l != "//!")
        .map(|l| format!("{l}\n"))
        .collect();
    assert_lists_no_metrics("src/lib.rs's first doc paragraph", &crate_doc);
    let module = source("src/gpumetrics/mod.rs");
    let section = module
        .split("SECTION:element-gpumetrics")
        .nth(1)
        .and_then(|s| s.split("*/").next())
        .expect("src/gpumetrics/mod.rs has the element's gtk-doc section");
    let first_paragraph = section.split("\n *\n").nth(1).unwrap_or(section);
    assert_lists_no_metrics(
        "the first paragraph of src/gpumetrics/mod.rs's gtk-doc section",
        first_paragraph,
    );
}
