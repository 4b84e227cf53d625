// SPDX-License-Identifier: MPL-2.0
//! The element's hand-written descriptions name every registered metric
//! (`gpumetrics_engine::metric::all()`): its long description (`gst-inspect-1.0`'s
//! "Description"), the crate documentation (src/lib.rs) and the element's gtk-doc section
//! (src/gpumetrics/mod.rs). The `metrics` flags, their descriptions and the metrics'
//! properties are made from the registry; these three texts are not, so a new metric must
//! be added to them by hand, and this test says where.

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

#[test]
fn the_crate_and_element_docs_name_every_metric() {
    let lib = source("src/lib.rs");
    let crate_doc: String = lib
        .lines()
        .filter(|l| l.starts_with("//!"))
        .take_while(|l| *l != "//!")
        .map(|l| format!("{l}\n"))
        .collect();
    assert_names_every_metric("src/lib.rs's first doc paragraph", &crate_doc);
    let module = source("src/gpumetrics/mod.rs");
    let section = module
        .split("SECTION:element-gpumetrics")
        .nth(1)
        .and_then(|s| s.split("*/").next())
        .expect("src/gpumetrics/mod.rs has the element's gtk-doc section");
    let first_paragraph = section.split("\n *\n").nth(1).unwrap_or(section);
    assert_names_every_metric(
        "the first paragraph of src/gpumetrics/mod.rs's gtk-doc section",
        first_paragraph,
    );
}
