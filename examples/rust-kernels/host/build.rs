//! Compiles the kernel crate to PTX and writes `OUT_DIR/kernels.rs` (the PTX and one typed
//! launcher per kernel). The kernel crate's folder comes from its build script (`links`).

fn main() {
    let Some(root) = std::env::var_os("DEP_RUST_KERNELS_EXAMPLE_ROOT") else {
        eprintln!("the kernel crate must declare `links = \"rust-kernels-example\"`");
        std::process::exit(1);
    };
    gpumetrics_build::Builder::new(root).build_or_exit();
}
