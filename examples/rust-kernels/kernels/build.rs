//! Publishes this crate's folder to the host crate's build script (`links`), which compiles
//! it to PTX with gpumetrics-build.

fn main() {
    let root = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo::metadata=root={root}");
    println!("cargo::rerun-if-changed=build.rs");
}
