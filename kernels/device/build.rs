//! Publishes where this crate's sources are (`links`, `DEP_GPUMETRICS_DEVICE_ROOT`) to the
//! build scripts of the crates that depend on it. A kernel crate's build script passes it on
//! to its host crate's, whose nested device build then takes this copy (a checkout or a
//! registry's) rather than asking crates.io for it (gpumetrics-build's
//! `Builder::dependency_dir`).

fn main() {
    let root = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo::metadata=root={root}");
    println!("cargo::rerun-if-changed=build.rs");
}
