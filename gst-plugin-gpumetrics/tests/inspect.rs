// SPDX-License-Identifier: MPL-2.0
//! The element's properties as `gst-inspect-1.0 gpumetrics` shows them: names, blurbs,
//! flags, types, ranges, defaults and enum values stay as users know them. What comes from
//! the engine's registry (a line per metric in the `metrics` flags, a property block per
//! metric option) is checked against the registry itself, so that adding a metric changes
//! no file here; everything else is exactly tests/data/gst-inspect-properties.txt (the
//! "Element Properties:" section to the end, without those lines and blocks). Runs the plugin cargo
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
    let (actual, registry) = split_registry(&stdout[start..]);
    check_registry(&registry);
    let actual = actual.as_str();
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

/// What the registry makes, taken out of the inspected section.
#[derive(Default)]
struct Registry {
    /// The `metrics` flags' value lines, trimmed.
    flags: Vec<String>,
    /// Per option property: its name and its block's first line's blurb.
    options: Vec<(String, String)>,
}

/// Splits the section into the element's own lines and what the registry made.
fn split_registry(section: &str) -> (String, Registry) {
    let names: Vec<&str> = gpumetrics_engine::metric::options()
        .map(|o| o.name)
        .collect();
    let mut rest = String::new();
    let mut registry = Registry::default();
    let mut in_option = false;
    for line in section.split_inclusive('\n') {
        // A property block starts with its name at the second column.
        let starts_block = line.starts_with("  ") && !line[2..].starts_with(' ');
        if starts_block {
            let (name, blurb) = line.trim().split_once(':').unwrap_or((line.trim(), ""));
            in_option = names.contains(&name.trim());
            if in_option {
                registry
                    .options
                    .push((name.trim().to_string(), blurb.trim().to_string()));
            }
        }
        // A line that is not indented (a blank line, the "Element Signals:" header) ends
        // the block: an option property may be the last of the properties.
        if !line.starts_with("  ") {
            in_option = false;
        }
        if in_option {
            continue;
        }
        let t = line.trim();
        if t.starts_with("(0x") && t.contains("): ") {
            registry.flags.push(t.to_string());
            continue;
        }
        rest.push_str(line);
    }
    (rest, registry)
}

/// One flag line per registered metric (its bit, nick and description), in registry
/// order, then one per named set of metrics (its metrics' bits), and one property per
/// option with the option's doc as its blurb.
fn check_registry(found: &Registry) {
    let line = |bits: u32, name: &str, description: &str| {
        format!("(0x{bits:08x}): {name:<16} - {description}")
    };
    let flags: Vec<String> = gpumetrics_engine::metric::all()
        .map(|m| line(m.flag.bits(), m.name, m.description))
        .chain(
            gpumetrics_engine::metric::SETS
                .iter()
                .map(|s| line(s.set().bits(), s.name, s.description)),
        )
        .collect();
    assert_eq!(found.flags, flags, "the metrics flags' lines");
    let mut options: Vec<(String, String)> = gpumetrics_engine::metric::options()
        .map(|o| (o.name.to_string(), o.doc.to_string()))
        .collect();
    options.sort();
    assert_eq!(found.options, options, "the metric options' properties");
}
