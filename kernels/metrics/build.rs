//! Publishes where the kernel crate's sources are to the build scripts of the crates that
//! depend on it (`DEP_GPUMETRICS_KERNELS_ROOT`, through `links`): the engine compiles these
//! sources to PTX, and Cargo alone knows whether they are a checkout or a registry copy.

fn main() {
    let root = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo::metadata=root={root}");
    println!("cargo::rerun-if-changed=build.rs");
}
