//! Compiles the kernel crate to PTX and generates the typed launchers included by
//! `src/cuda/mod.rs` (needs the nightly toolchain with rust-src and llvm-tools; see
//! docs/KERNELS.md).

fn main() {
    gpumetrics_build::Builder::new("../kernels/metrics").build_or_exit();
}
