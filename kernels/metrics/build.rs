//! Publishes where the kernel crate's sources are to the build scripts of the crates that
//! depend on it (`DEP_GPUMETRICS_KERNELS_ROOT`, through `links`): the engine compiles these
//! sources to PTX, and Cargo alone knows whether they are a checkout or a registry copy.
//! Passes on where gpumetrics-device's are too (`DEP_GPUMETRICS_KERNELS_DEVICE_ROOT`), for
//! the nested device build of a packaged kernel crate, whose device crate comes from the
//! same place as this one (gpumetrics-build's `Builder::dependency_dir`).
//!
//! Declares the metrics' modules: every folder of `src/` with a `mod.rs` is one metric's
//! kernel module, declared in `OUT_DIR/metric_modules.rs` (included by `src/lib.rs`), so
//! that a new metric's kernels are its folder alone. The shared modules are single files,
//! declared in `src/lib.rs` by hand.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let root = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo::metadata=root={root}");
    let device = std::env::var("DEP_GPUMETRICS_DEVICE_ROOT")
        .expect("gpumetrics-device's build script publishes its folder (`links`)");
    println!("cargo::metadata=device_root={device}");
    println!("cargo::rerun-if-changed=build.rs");

    let src = Path::new(&root).join("src");
    // The folder itself: Cargo reruns this script when an entry is added or removed.
    println!("cargo::rerun-if-changed={}", src.display());
    let mut folders: Vec<String> = std::fs::read_dir(&src)
        .unwrap_or_else(|e| panic!("{}: {e}", src.display()))
        .filter_map(|e| {
            let path = e.ok()?.path();
            path.join("mod.rs").is_file().then(|| {
                path.file_name()
                    .expect("a folder has a name")
                    .to_string_lossy()
                    .into_owned()
            })
        })
        .collect();
    folders.sort();
    let mut out = String::new();
    for name in &folders {
        assert!(
            name.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
            "src/{name}/: a metric's kernel folder is named as a Rust module (snake_case)"
        );
        let path = src.join(name).join("mod.rs");
        writeln!(
            out,
            "#[path = {:?}]\npub mod {name};",
            path.display().to_string()
        )
        .expect("writing to a String");
    }
    let out_dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(Path::new(&out_dir).join("metric_modules.rs"), out)
        .expect("OUT_DIR is writable");
}
