//! The README's example, built as another project would build it: examples/rust-kernels, a
//! kernel crate and a host crate outside gpumetrics' workspace, whose build script runs
//! gpumetrics-build and whose program launches the kernels through the typed launchers
//! (gpumetrics-launch). Without a GPU the program checks what it can (the launchers and the
//! PTX exist, the CPU path runs); with one (`GPUMETRICS_EXPECT_GPU=1`, as on the GPU
//! machine) the GPU's results must equal the CPU's bit for bit.

use std::path::Path;
use std::process::Command;

#[test]
fn the_rust_kernels_example_builds_and_runs() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let host = repo.join("examples/rust-kernels/host");
    // The repository's lock file, so the example builds with the versions the workspace
    // was tested with (cargo drops what the example does not use).
    let lock = host.join("Cargo.lock");
    if !lock.exists() {
        std::fs::copy(repo.join("Cargo.lock"), &lock).unwrap();
    }
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("rust-kernels-example");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let built = Command::new(&cargo)
        .args(["build", "--quiet", "--manifest-path"])
        .arg(host.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "the example did not build:\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let run = Command::new(target.join("debug/rust-kernels-example"))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "the example failed:\n{out}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(out.contains("kernels: scale, block_sums\n"), "{out}");
    assert!(out.contains("ptx targets: [70]\n"), "{out}");
    // The first block's sum, added in order here: every value and partial sum is a small
    // multiple of 1/8, so f32 adds them exactly in any order.
    let first: f32 = (0..256).map(|i| ((i % 17) as f32 * 0.25 - 1.0) * 1.5).sum();
    assert!(
        out.contains(&format!("cpu block sums: [{first:?}, ")),
        "{out}"
    );
    let gpu = out.lines().find(|l| l.starts_with("gpu: ")).unwrap_or("");
    if std::env::var_os("GPUMETRICS_EXPECT_GPU").is_some() {
        assert!(gpu.ends_with("equal the CPU's bit for bit"), "{out}");
    } else {
        assert!(
            gpu.starts_with("gpu: none") || gpu.ends_with("equal the CPU's bit for bit"),
            "{out}"
        );
    }
}
