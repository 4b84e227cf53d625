//! Compiles the kernel crate to PTX and generates the typed launchers included by
//! `src/cuda/mod.rs` (needs the nightly toolchain with rust-src and llvm-tools; see
//! docs/KERNELS.md). The kernel crate's sources are found through Cargo: its build script
//! publishes their directory (`links = "gpumetrics-kernels"`), which is a checkout or a
//! read-only registry copy alike.
//!
//! It also lists the metrics' GPU kernel checks for the `cuda_kernels` test binary: each
//! metric keeps them in its own folder (`src/metric/<metric>/gpu_checks.rs`, a module of
//! that test binary, not of this crate), declared in `OUT_DIR/gpu_checks.rs`, so that a new
//! metric's checks need no line elsewhere.

fn main() {
    let Some(root) = std::env::var_os("DEP_GPUMETRICS_KERNELS_ROOT") else {
        eprintln!(
            "gpumetrics-engine: DEP_GPUMETRICS_KERNELS_ROOT is not set: the gpumetrics-kernels \
             dependency must be built with its build script (it declares `links`)"
        );
        std::process::exit(1);
    };
    let mut builder = gpumetrics_build::Builder::new(root);
    // The device crate as Cargo has it, for a packaged kernel crate, whose manifest asks a
    // registry for gpumetrics-device: the nested device build takes the same copy.
    if let Some(device) = std::env::var_os("DEP_GPUMETRICS_KERNELS_DEVICE_ROOT") {
        builder = builder.dependency_dir("gpumetrics-device", device);
    }
    builder.build_or_exit();
    list_gpu_checks();
}

/// Writes `OUT_DIR/gpu_checks.rs`: one `mod <metric>` per `src/metric/<metric>/gpu_checks.rs`
/// (by absolute path) and `METRIC_CHECKS`, their `CHECKS` lists.
fn list_gpu_checks() {
    use std::fmt::Write as _;
    use std::path::Path;

    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let metrics = Path::new(&manifest).join("src/metric");
    println!("cargo::rerun-if-changed={}", metrics.display());
    let mut found: Vec<(String, std::path::PathBuf)> = std::fs::read_dir(&metrics)
        .unwrap_or_else(|e| panic!("{}: {e}", metrics.display()))
        .filter_map(|e| {
            let dir = e.ok()?.path();
            let checks = dir.join("gpu_checks.rs");
            let name = dir.file_name()?.to_string_lossy().into_owned();
            checks.is_file().then_some((name, checks))
        })
        .collect();
    found.sort();
    let mut out = String::new();
    for (name, path) in &found {
        writeln!(
            out,
            "#[path = {:?}]\nmod {name};",
            path.display().to_string()
        )
        .expect("writing to a String");
    }
    out.push_str("\n/// Every metric's checks (`src/metric/<metric>/gpu_checks.rs`).\n");
    out.push_str("const METRIC_CHECKS: &[&[(&[&str], Check)]] = &[\n");
    for (name, _) in &found {
        writeln!(out, "    {name}::CHECKS,").expect("writing to a String");
    }
    out.push_str("];\n");
    let out_dir = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    std::fs::write(Path::new(&out_dir).join("gpu_checks.rs"), out).expect("OUT_DIR is writable");
}
