//! Publishes where the kernel crate's sources are to the build scripts of the crates that
//! depend on it (`DEP_GPUMETRICS_KERNELS_ROOT`, through `links`): the engine compiles these
//! sources to PTX, and Cargo alone knows whether they are a checkout or a registry copy.
//! Passes on where gpumetrics-device's are too (`DEP_GPUMETRICS_KERNELS_DEVICE_ROOT`), for
//! the nested device build of a packaged kernel crate, whose device crate comes from the
//! same place as this one (gpumetrics-build's `Builder::dependency_dir`).

fn main() {
    let root = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo::metadata=root={root}");
    let device = std::env::var("DEP_GPUMETRICS_DEVICE_ROOT")
        .expect("gpumetrics-device's build script publishes its folder (`links`)");
    println!("cargo::metadata=device_root={device}");
    println!("cargo::rerun-if-changed=build.rs");
}
