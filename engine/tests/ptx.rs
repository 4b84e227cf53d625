//! The embedded PTX against the kernel sources: every declared kernel is an entry with the
//! declared parameter sizes, and shared memory shows up as `.shared`.

use std::path::{Path, PathBuf};

use gpumetrics_build::{ptx, scan};
use gpumetrics_engine::cuda::{KERNELS, PTX};

fn kernel_sources() -> scan::Scan {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/metrics/src");
    let files: Vec<(PathBuf, String)> = scan::rust_files(&src)
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).unwrap();
            (f, text)
        })
        .collect();
    scan::scan_sources(&src, &files, "gpumetrics_kernels").unwrap()
}

/// The text of one entry, from `.entry name(` to the next entry.
fn entry_body<'a>(ptx: &'a str, name: &str) -> &'a str {
    let start = ptx
        .find(&format!(".entry {name}("))
        .unwrap_or_else(|| panic!("no entry {name}"));
    let rest = &ptx[start + 1..];
    let end = rest.find(".entry ").map_or(rest.len(), |e| e);
    &rest[..end]
}

#[test]
fn baseline_is_sm_70() {
    assert_eq!(PTX[0].0, 70);
    assert!(PTX[0].1.contains(".target sm_70"));
    assert!(PTX.windows(2).all(|w| w[0].0 < w[1].0));
}

#[test]
fn every_declared_kernel_is_an_entry_with_its_parameter_sizes() {
    let declared = kernel_sources();
    assert!(declared.kernels.iter().any(|k| k.name == "psnr_sse"));
    assert_eq!(declared.kernels.len(), KERNELS.len());
    for (sm, text) in PTX {
        let entries = ptx::parse_entries(text).unwrap();
        assert_eq!(
            entries.len(),
            declared.kernels.len(),
            "sm_{sm}: entries {entries:?}"
        );
        for k in &declared.kernels {
            let e = entries
                .iter()
                .find(|e| e.name == k.name)
                .unwrap_or_else(|| panic!("sm_{sm}: kernel {} missing from the PTX", k.name));
            assert_eq!(e.param_sizes.len(), k.params.len(), "{}", k.name);
            for (p, size) in k.params.iter().zip(&e.param_sizes) {
                if let Some(expected) = p.known_size() {
                    assert_eq!(expected, *size, "{}({})", k.name, p.name);
                }
            }
            let info = KERNELS.iter().find(|i| i.name == k.name).unwrap();
            let sizes: Vec<usize> = info.params.iter().map(|p| p.ptx_bytes).collect();
            assert_eq!(sizes, e.param_sizes, "{}", k.name);
        }
    }
}

#[test]
fn shared_memory_is_dot_shared() {
    let declared = kernel_sources();
    for (sm, text) in PTX {
        assert!(ptx::uses_shared_memory(text), "sm_{sm}");
        for s in &declared.shared {
            let decl = format!(
                ".shared .align 16 .b8 gpumetrics_shared_{}[{}]",
                s.name, s.bytes
            );
            assert!(text.contains(&decl), "sm_{sm}: no `{decl}`");
        }
        let body = entry_body(text, "selftest_block_sum_static");
        assert!(body.contains("gpumetrics_shared_SELFTEST_SUMS"), "sm_{sm}");
        assert!(
            body.contains("st.shared") && body.contains("ld.shared"),
            "sm_{sm}"
        );
        // dynamic shared memory, sized at launch
        assert!(
            text.lines().any(|l| l.starts_with(".extern .shared")
                && l.contains(" gpu_launch_sized_workgroup_mem[]"))
        );
        let body = entry_body(text, "selftest_block_sum_dynamic");
        assert!(
            body.contains("gpu_launch_sized_workgroup_mem") || body.contains("st.shared"),
            "sm_{sm}"
        );
    }
}

#[test]
fn warp_shuffles_atomics_and_fast_math_are_single_instructions() {
    let text = PTX[0].1;
    let body = entry_body(text, "selftest_warp_atomics");
    for insn in [
        "shfl.sync.down.b32",
        "shfl.sync.bfly.b32",
        "atom.add.f32",
        "atom.add.u64",
        "atom.add.u32",
    ] {
        assert!(body.contains(insn), "no {insn}");
    }
    let body = entry_body(text, "selftest_math");
    for insn in [
        "sqrt.rn.f32",
        "rsqrt.approx.ftz.f32",
        "ex2.approx.ftz.f32",
        "lg2.approx.ftz.f32",
        "fma.rn.f32",
        "sqrt.rn.f64",
        "fma.rn.f64",
    ] {
        assert!(body.contains(insn), "no {insn}");
    }
    // no libdevice or other external functions
    assert!(
        !text.contains(".extern .func"),
        "unresolved external function"
    );
}

/// `ba_ac_error`'s 4-pixel groups keep their 64 running line sums in registers and read
/// the Malta windows as 16-byte vectors: sums the compiler failed to resolve to registers
/// would go to local memory (`.local`), as the Butteraugli column runs' once did, and
/// scalar loads were what bound the per-pixel kernel. Up to 3 vectors per window row;
/// LLVM narrows those it uses only part of to `v2` or scalar loads (66 of 102 stay `v4`
/// on sm_70 at 8268d2b), so this asks for at least one per row of each band's window.
#[test]
fn ac_error_groups_load_vectors_into_registers() {
    for (sm, text) in PTX {
        let body = entry_body(text, "ba_ac_error");
        assert!(
            !body.contains(".local"),
            "sm_{sm}: ba_ac_error uses local memory"
        );
        let vector_loads = body
            .lines()
            .map(str::trim_start)
            .filter(|l| l.starts_with("ld.") && l.contains(".v4."))
            .count();
        assert!(
            vector_loads >= 3 * 9,
            "sm_{sm}: {vector_loads} vector loads"
        );
    }
}
