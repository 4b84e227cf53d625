// SPDX-License-Identifier: MPL-2.0
//! The element's properties as `gst-inspect-1.0 gpumetrics` shows them are exactly those of
//! tests/data/gst-inspect-properties.txt (the "Element Properties:" section to the end,
//! taken before the properties came from the engine's registry): names, blurbs, flags,
//! types, ranges, defaults and enum values stay as users know them. Runs the plugin cargo
//! built for this test (the cdylib next to the test executable, in target/<profile>/deps:
//! `cargo test` builds it there and does not copy it up), alone in a temporary directory,
//! in a fresh registry. Fails where gst-inspect-1.0 is not installed (gstreamer1.0-tools,
//! which scripts/setup-deps.sh installs): a check that cannot run is not a pass.

use std::path::PathBuf;
use std::process::Command;

const EXPECTED: &str = include_str!("data/gst-inspect-properties.txt");

/// The plugin cargo built with this test: the cdylib next to the test executable
/// (target/<profile>/deps/, where `cargo test` builds it; `cargo build` also copies it up to
/// target/<profile>/, but a fresh `cargo test` does not).
fn built_plugin() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let deps = exe.parent().expect("the test executable lies in deps/");
    let name = format!(
        "{}gstgpumetrics{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    deps.join(&name)
}

#[test]
fn gst_inspect_shows_the_properties_unchanged() {
    let built = built_plugin();
    assert!(
        built.exists(),
        "{} is missing: cargo builds the cdylib with the tests",
        built.display()
    );
    // A directory holding only this plugin (deps/ holds other shared objects, proc macros
    // among them, that the registry scan would try to load).
    let dir = std::env::temp_dir().join(format!("gpumetrics-inspect-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary plugin directory");
    let plugin = dir.join(built.file_name().expect("a file name"));
    std::fs::copy(&built, &plugin).expect("copying the plugin");
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
    let _ = std::fs::remove_dir_all(&dir);
    let output = match output {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!(
            "gst-inspect-1.0 is not installed (gstreamer1.0-tools; scripts/setup-deps.sh \
             installs it)"
        ),
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
