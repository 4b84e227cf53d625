//! Compiles the kernel crate to PTX and generates the typed launchers included by
//! `src/cuda/mod.rs` (needs the nightly toolchain with rust-src and llvm-tools; see
//! docs/KERNELS.md). The kernel crate's sources are found through Cargo: its build script
//! publishes their directory (`links = "gpumetrics-kernels"`), which is a checkout or a
//! read-only registry copy alike.

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
}
