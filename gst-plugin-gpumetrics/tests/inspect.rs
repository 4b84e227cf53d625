// SPDX-License-Identifier: MPL-2.0
//! The element's properties as `gst-inspect-1.0 gpumetrics` shows them are exactly those of
//! tests/data/gst-inspect-properties.txt (the "Element Properties:" section to the end,
//! taken before the properties came from the engine's registry): names, blurbs, flags,
//! types, ranges, defaults and enum values stay as users know them. Runs the plugin cargo
//! built for this test (the cdylib next to the test executable, in target/<profile>/deps:
//! `cargo test` builds it there and does not copy it up) in a fresh registry; skipped, with
//! a note, where gst-inspect-1.0 is not installed.

use std::path::PathBuf;
use std::process::Command;

const EXPECTED: &str = include_str!("data/gst-inspect-properties.txt");

/// The directory of the built plugin: target/<profile>, the parent of the test's deps/.
fn plugin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let deps = exe.parent().expect("the test executable lies in deps/");
    deps.parent()
        .expect("deps/ lies in the profile directory")
        .to_path_buf()
}

#[test]
fn gst_inspect_shows_the_properties_unchanged() {
    let dir = plugin_dir();
    let plugin = dir.join(format!(
        "{}gstgpumetrics{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    assert!(
        plugin.exists(),
        "{} is missing: cargo builds the cdylib with the tests",
        plugin.display()
    );
    let registry = std::env::temp_dir().join(format!(
        "gpumetrics-inspect-registry-{}.bin",
        std::process::id()
    ));
    let output = Command::new("gst-inspect-1.0")
        .arg("gpumetrics")
        .env("GST_PLUGIN_PATH", &dir)
        .env("GST_REGISTRY", &registry)
        // These override the two above where they are set.
        .env_remove("GST_PLUGIN_PATH_1_0")
        .env_remove("GST_REGISTRY_1_0")
        .env("GST_INSPECT_NO_COLORS", "1")
        .output();
    let _ = std::fs::remove_file(&registry);
    let output = match output {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("skipped: gst-inspect-1.0 is not installed (gstreamer1.0-tools)");
            return;
        }
        Err(e) => panic!("cannot run gst-inspect-1.0: {e}"),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "gst-inspect-1.0 gpumetrics failed ({}) with GST_PLUGIN_PATH={}: {}{}",
        output.status,
        dir.display(),
        stdout,
        String::from_utf8_lossy(&output.stderr)
    );
    // The plugin inspected is the one built with this test.
    let filename = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("Filename"))
        .unwrap_or_default();
    assert!(
        filename.contains(&*plugin.to_string_lossy()),
        "gst-inspect-1.0 loaded another plugin: {filename:?}, expected {}",
        plugin.display()
    );
    let start = stdout
        .find("Element Properties:")
        .unwrap_or_else(|| panic!("no \"Element Properties:\" section in:\n{stdout}"));
    let actual = &stdout[start..];
    if actual != EXPECTED {
        let first = actual
            .lines()
            .zip(EXPECTED.lines())
            .position(|(a, e)| a != e)
            .unwrap_or_else(|| actual.lines().count().min(EXPECTED.lines().count()));
        panic!(
            "gst-inspect-1.0 output differs from tests/data/gst-inspect-properties.txt at line \
             {} of the section:\n  expected: {:?}\n  actual:   {:?}\nwhole section:\n{actual}",
            first + 1,
            EXPECTED.lines().nth(first),
            actual.lines().nth(first)
        );
    }
}
