//! End to end: builds a copy of the repository's kernel crates (needs the nightly toolchain
//! with rust-src and llvm-tools, like the engine build) and checks that the build fails,
//! naming the kernel, when declarations and PTX disagree.

use std::path::{Path, PathBuf};

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let name = e.file_name();
        if name == "target" {
            continue;
        }
        let (src, dst) = (e.path(), to.join(&name));
        if src.is_dir() {
            copy_dir(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// The repository's kernel crates (`kernels/device`, `kernels/metrics`) copied into `to`,
/// with a workspace manifest of their own there: the crates inherit their version, edition,
/// licence and the device crate's requirement from the repository's workspace, whose
/// `[workspace.package]` table and `gpumetrics-device` line are copied (its path made
/// relative to `to`).
fn copy_kernel_crates(to: &Path) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    copy_dir(&repo.join("kernels"), to);
    let root = std::fs::read_to_string(repo.join("Cargo.toml")).unwrap();
    let mut package = String::new();
    let mut in_package = false;
    for line in root.lines() {
        if line.starts_with('[') {
            in_package = line == "[workspace.package]";
        }
        if in_package {
            package.push_str(line);
            package.push('\n');
        }
    }
    let device = root
        .lines()
        .find(|l| l.starts_with("gpumetrics-device = "))
        .expect("the workspace's gpumetrics-device requirement")
        .replace("\"kernels/device\"", "\"device\"");
    std::fs::write(
        to.join("Cargo.toml"),
        format!(
            "[workspace]\nresolver = \"3\"\nmembers = [\"device\", \"metrics\"]\n\n{package}\n\
             [workspace.dependencies]\n{device}\n"
        ),
    )
    .unwrap();
}

fn build(crate_dir: &Path, out: &Path) -> Result<gpumetrics_build::Output, String> {
    gpumetrics_build::Builder::new(crate_dir)
        .out_dir(out)
        .emit_cargo_directives(false)
        .extra_target("sm_90")
        .unwrap()
        .build()
        .map_err(|e| e.to_string())
}

#[test]
fn builds_and_rejects_mismatched_kernels() {
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("builder-test");
    let _ = std::fs::remove_dir_all(&root);
    let kernels = root.join("kernels");
    copy_kernel_crates(&kernels);
    let metrics = kernels.join("metrics");
    let out = root.join("out");

    let ok = build(&metrics, &out).unwrap();
    assert_eq!(ok.ptx.iter().map(|p| p.0).collect::<Vec<_>>(), [70, 90]);
    let sm90 = std::fs::read_to_string(&ok.ptx[1].1).unwrap();
    assert!(sm90.contains(".target sm_90"));
    let bindings = std::fs::read_to_string(&ok.bindings).unwrap();
    for k in &ok.kernels {
        assert!(
            bindings.contains(&format!("pub unsafe fn {}(", k.name)),
            "{}",
            k.name
        );
    }

    // an entry point written by hand, without kernel!
    let selftest = metrics.join("src/selftest.rs");
    let original = std::fs::read_to_string(&selftest).unwrap();
    std::fs::write(
        &selftest,
        format!(
            "{original}\n#[cfg(target_arch = \"nvptx64\")]\n#[unsafe(no_mangle)]\n\
             pub unsafe extern \"ptx-kernel\" fn rogue(x: *mut u32) {{ unsafe {{ *x = 1 }} }}\n"
        ),
    )
    .unwrap();
    let e = build(&metrics, &out).unwrap_err();
    assert!(
        e.contains("entry `rogue` without a kernel! declaration"),
        "{e}"
    );
    std::fs::write(&selftest, &original).unwrap();

    // a kernel! in a file that is not a module of the crate
    std::fs::write(
        metrics.join("src/orphan.rs"),
        "gpumetrics_device::kernel! { pub unsafe fn orphan(x: *mut u32) { unsafe { *x = 1 } } }\n",
    )
    .unwrap();
    let e = build(&metrics, &out).unwrap_err();
    assert!(
        e.contains("kernel `orphan`") && e.contains("is not in the sm_70 PTX"),
        "{e}"
    );
    std::fs::remove_file(metrics.join("src/orphan.rs")).unwrap();

    // a declaration whose parameters differ from its body's does not compile
    std::fs::write(
        &selftest,
        original.replace(
            "pub unsafe fn selftest_saxpy(n: u32,",
            "pub unsafe fn selftest_saxpy(n: u64,",
        ),
    )
    .unwrap();
    let e = build(&metrics, &out).unwrap_err();
    assert!(
        e.contains("the device build of") && e.contains("error[E0308]"),
        "{e}"
    );

    // a device compile error is reported with rustc's message
    std::fs::write(
        &selftest,
        original.replace(
            "let i = dev::global_idx_x();",
            "let i: u32 = dev::global_idx_x() + 1.0;",
        ),
    )
    .unwrap();
    let e = build(&metrics, &out).unwrap_err();
    assert!(
        e.contains("the device build of") && e.contains("error[E0277]"),
        "{e}"
    );
}

/// Makes every file and folder under `dir` read-only (or writable again).
fn set_read_only(dir: &Path, read_only: bool) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.path().is_dir() {
            set_read_only(&e.path(), read_only);
        }
        let mut p = e.metadata().unwrap().permissions();
        p.set_readonly(read_only);
        std::fs::set_permissions(e.path(), p).unwrap();
    }
    let mut p = std::fs::metadata(dir).unwrap().permissions();
    p.set_readonly(read_only);
    std::fs::set_permissions(dir, p).unwrap();
}

/// The kernel crate as a registry gives it: packaged by `cargo package` (its manifest
/// normalised, the device crate a registry dependency), unpacked into a read-only folder
/// with no workspace around it (so no workspace profile and nowhere to write a lock file),
/// the device crate patched to its own unpacked package by a `.cargo/config.toml` above
/// them, as a local registry would serve it. The build must work from there.
#[test]
fn builds_a_packaged_kernel_crate_from_a_read_only_folder() {
    // Outside the repository: Cargo looks for a workspace in every folder above a
    // package, as it does not above a registry's copies.
    let root = std::env::temp_dir().join(format!("gpumetrics-packaged-{}", std::process::id()));
    if root.exists() {
        set_read_only(&root, false);
        std::fs::remove_dir_all(&root).unwrap();
    }
    let _cleanup = Cleanup(root.clone());
    let ws = root.join("ws");
    copy_kernel_crates(&ws);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let packaged = std::process::Command::new(&cargo)
        .args(["package", "--no-verify", "--allow-dirty", "--manifest-path"])
        .arg(ws.join("Cargo.toml"))
        .args([
            "-p",
            "gpumetrics-device",
            "-p",
            "gpumetrics-kernels",
            "--target-dir",
        ])
        .arg(root.join("t"))
        .output()
        .unwrap();
    assert!(
        packaged.status.success(),
        "{}",
        String::from_utf8_lossy(&packaged.stderr)
    );
    let registry = root.join("registry");
    std::fs::create_dir_all(registry.join(".cargo")).unwrap();
    for name in ["gpumetrics-device-0.1.0", "gpumetrics-kernels-0.1.0"] {
        let crate_file = root.join("t/package").join(format!("{name}.crate"));
        let unpacked = std::process::Command::new("tar")
            .arg("-xzf")
            .arg(&crate_file)
            .arg("-C")
            .arg(&registry)
            .status()
            .unwrap();
        assert!(unpacked.success(), "tar -xzf {}", crate_file.display());
    }
    std::fs::write(
        registry.join(".cargo/config.toml"),
        format!(
            "[patch.crates-io]\ngpumetrics-device = {{ path = {:?} }}\n",
            registry.join("gpumetrics-device-0.1.0")
        ),
    )
    .unwrap();
    let kernels = registry.join("gpumetrics-kernels-0.1.0");
    let manifest = std::fs::read_to_string(kernels.join("Cargo.toml")).unwrap();
    assert!(!manifest.contains("workspace = true") && !manifest.contains("path = \"../"));
    // Read-only permissions do not stop root (as CI may run): the folder's listing, sizes
    // and times before and after the build say whether anything was written there.
    let before = listing(&registry);
    set_read_only(&registry, true);
    let out = root.join("out");
    let built = gpumetrics_build::Builder::new(&kernels)
        .out_dir(&out)
        .emit_cargo_directives(false)
        .build();
    set_read_only(&registry, false);
    let built = built.unwrap();
    assert_eq!(built.ptx.len(), 1);
    let ptx = std::fs::read_to_string(&built.ptx[0].1).unwrap();
    assert!(ptx.contains(".target sm_70") && ptx.contains(".entry selftest_saxpy"));
    assert!(out.join("nvptx/Cargo.lock").exists());
    assert_eq!(
        listing(&registry),
        before,
        "the build wrote into the package's folder"
    );
}

/// Every path under `dir` with its size and modification time, sorted.
fn listing(dir: &Path) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
    let mut all = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let m = e.metadata().unwrap();
        all.push((e.path(), m.len(), m.modified().unwrap()));
        if m.is_dir() {
            all.extend(listing(&e.path()));
        }
    }
    all.sort();
    all
}

/// Removes a test's folder when dropped, whether its checks passed or not.
struct Cleanup(PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        if self.0.exists() {
            set_read_only(&self.0, false);
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
