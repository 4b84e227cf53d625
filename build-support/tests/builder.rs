//! End to end: builds a copy of the repository's kernel workspace (needs the nightly
//! toolchain with rust-src and llvm-tools, like the engine build) and checks that the build
//! fails, naming the kernel, when declarations and PTX disagree.

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
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels"),
        &kernels,
    );
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
