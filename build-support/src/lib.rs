//! Builds a `no_std` Rust kernel crate to PTX from a build script and generates typed host
//! launchers for its kernels. Needs only rustup components: a nightly toolchain with
//! `rust-src` and `llvm-tools` (no CUDA toolkit, clang or `llvm-bitcode-linker`).
//!
//! ```no_run
//! // in `fn main` of the host crate's build.rs
//! gpumetrics_build::Builder::new("../kernels/metrics").build_or_exit();
//! ```
//!
//! and in the host crate, which depends on `gpumetrics-launch` (the runtime the generated
//! code calls, [`Builder::runtime_path`]):
//!
//! ```ignore
//! mod kernels {
//!     include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
//! }
//! ```
//!
//! Steps of [`Builder::build`]:
//! 1. scan the kernel crate's sources for `kernel!` and `shared!` declarations ([`scan`]);
//! 2. write the `addrspace(3)` definitions of the shared arrays (`OUT_DIR/gpumetrics-shared.ll`);
//! 3. compile our linker driver ([`linker`]) with the host rustc;
//! 4. run `cargo rustc --target nvptx64-nvidia-cuda -Zbuild-std=core --release --crate-type
//!    cdylib` of the nightly toolchain in its own target dir (`OUT_DIR/nvptx`), with the
//!    outer build's cargo/rustc variables removed, the driver as linker;
//! 5. parse the PTX ([`ptx`]), compare its entries and parameter sizes with the declarations,
//!    and write `OUT_DIR/kernels.rs` ([`codegen`]).
//!
//! Environment: `GPUMETRICS_TOOLCHAIN` (default `nightly`; `stable` works too through
//! `RUSTC_BOOTSTRAP=1`, which is always set for the nested build), `GPUMETRICS_EXTRA_SM`
//! (e.g. `sm_90`, comma-separated: extra PTX modules for newer GPUs, picked at load time).

pub mod codegen;
pub mod linker;
pub mod ptx;
pub mod scan;

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "nvptx64-nvidia-cuda";
const BASELINE_SM: u32 = 70;

/// A failed build, with a message that says what to do.
#[derive(Debug)]
pub struct Error(String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

fn err<T>(msg: impl Into<String>) -> Result<T, Error> {
    Err(Error(msg.into()))
}

/// What a build produced.
#[derive(Debug, Clone)]
pub struct Output {
    /// PTX files as (compute capability `major * 10 + minor`, path), baseline first.
    pub ptx: Vec<(u32, PathBuf)>,
    /// The generated bindings (`OUT_DIR/kernels.rs`).
    pub bindings: PathBuf,
    /// The kernels found.
    pub kernels: Vec<scan::KernelDecl>,
    /// The shared arrays found.
    pub shared: Vec<scan::SharedDecl>,
}

/// Builds one kernel crate. See the crate documentation.
#[derive(Debug, Clone)]
pub struct Builder {
    crate_dir: PathBuf,
    toolchain: Option<String>,
    extra_sms: Vec<u32>,
    runtime_path: String,
    out_dir: Option<PathBuf>,
    emit_cargo: bool,
}

/// The PTX ISA version `llc` is asked for on a given `sm_XY`: the minimum that target needs,
/// and at least 7.0 (CUDA 11.0).
pub fn ptx_isa_for(sm: u32) -> u32 {
    match sm {
        120.. => 87,
        100.. => 86,
        89.. => 78,
        87.. => 74,
        86.. => 71,
        _ => 70,
    }
}

/// Parses `sm_90` / `90` / `compute_90`.
pub fn parse_sm(s: &str) -> Result<u32, Error> {
    let t = s.trim();
    let digits = t
        .strip_prefix("sm_")
        .or_else(|| t.strip_prefix("compute_"))
        .unwrap_or(t);
    match digits.parse::<u32>() {
        Ok(v) if (BASELINE_SM..1000).contains(&v) => Ok(v),
        _ => err(format!(
            "`{s}` is not a GPU target like sm_90 (sm_70 or newer; no `a`/`f` variants)"
        )),
    }
}

impl Builder {
    /// A builder for the kernel crate whose `Cargo.toml` is in `crate_dir` (relative paths
    /// are relative to `CARGO_MANIFEST_DIR`, i.e. the crate whose build script this is).
    pub fn new(crate_dir: impl Into<PathBuf>) -> Self {
        Self {
            crate_dir: crate_dir.into(),
            toolchain: None,
            extra_sms: Vec::new(),
            runtime_path: "::gpumetrics_launch".into(),
            out_dir: None,
            emit_cargo: true,
        }
    }

    /// The rustup toolchain for the device build (default: `$GPUMETRICS_TOOLCHAIN`, else
    /// `nightly`).
    pub fn toolchain(mut self, name: impl Into<String>) -> Self {
        self.toolchain = Some(name.into());
        self
    }

    /// Adds a PTX module for `sm` (e.g. `"sm_90"`), besides the sm_70 baseline; also
    /// `GPUMETRICS_EXTRA_SM=sm_90,...`.
    pub fn extra_target(mut self, sm: &str) -> Result<Self, Error> {
        self.extra_sms.push(parse_sm(sm)?);
        Ok(self)
    }

    /// Path, in the host crate, of the runtime the generated code calls: the
    /// `gpumetrics-launch` crate (the default, `::gpumetrics_launch`), or a module that
    /// provides the same `DevPtr`, `DevPtrMut`, `KernelInfo`, `ParamInfo`, `launch` and
    /// `cudarc`.
    pub fn runtime_path(mut self, path: impl Into<String>) -> Self {
        self.runtime_path = path.into();
        self
    }

    /// Output directory (default `$OUT_DIR`).
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.out_dir = Some(dir.into());
        self
    }

    /// Whether to print `cargo:` lines (default true; false outside build scripts).
    pub fn emit_cargo_directives(mut self, on: bool) -> Self {
        self.emit_cargo = on;
        self
    }

    /// [`build`](Self::build), printing the error and exiting with status 1 on failure: the
    /// one-liner for build scripts.
    pub fn build_or_exit(self) -> Output {
        match self.build() {
            Ok(o) => o,
            Err(e) => {
                eprintln!("\nerror: gpumetrics-build: {e}\n");
                std::process::exit(1);
            }
        }
    }

    /// Builds the PTX and the bindings.
    pub fn build(self) -> Result<Output, Error> {
        let out_dir = match &self.out_dir {
            Some(d) => d.clone(),
            None => PathBuf::from(
                std::env::var_os("OUT_DIR")
                    .ok_or(Error("OUT_DIR is not set (not in a build script?)".into()))?,
            ),
        };
        let crate_dir = if self.crate_dir.is_relative() {
            std::env::var_os("CARGO_MANIFEST_DIR")
                .map(PathBuf::from)
                .unwrap_or_default()
                .join(&self.crate_dir)
        } else {
            self.crate_dir.clone()
        };
        let crate_dir = crate_dir
            .canonicalize()
            .map_err(|e| Error(format!("kernel crate {}: {e}", crate_dir.display())))?;
        let manifest = crate_dir.join("Cargo.toml");
        let manifest_text = std::fs::read_to_string(&manifest)
            .map_err(|e| Error(format!("{}: {e}", manifest.display())))?;
        let package = package_name(&manifest_text)
            .ok_or_else(|| Error(format!("{}: no [package] name", manifest.display())))?;
        let lib_name = package.replace('-', "_");

        if self.emit_cargo {
            for p in watched_paths(&crate_dir) {
                println!("cargo:rerun-if-changed={}", p.display());
            }
            println!("cargo:rerun-if-env-changed=GPUMETRICS_TOOLCHAIN");
            println!("cargo:rerun-if-env-changed=GPUMETRICS_EXTRA_SM");
        }

        // 1. sources
        let src_dir = crate_dir.join("src");
        let mut files = Vec::new();
        for f in scan::rust_files(&src_dir) {
            let text =
                std::fs::read_to_string(&f).map_err(|e| Error(format!("{}: {e}", f.display())))?;
            files.push((f, text));
        }
        let found = scan::scan_sources(&src_dir, &files, &lib_name)
            .map_err(|e| Error(format!("in the kernel sources:\n{e}")))?;
        codegen::check_names(&found.kernels).map_err(Error)?;

        // docs.rs builds documentation without a device toolchain or network: the typed
        // launchers are generated from the declarations alone, with no PTX (loading the
        // kernels would fail; nothing runs there).
        if std::env::var_os("DOCS_RS").is_some() {
            std::fs::create_dir_all(&out_dir)
                .map_err(|e| Error(format!("{}: {e}", out_dir.display())))?;
            let text = codegen::bindings(
                &found.kernels,
                &[],
                &[],
                &self.runtime_path,
                &crate_dir.display().to_string(),
            );
            let bindings = out_dir.join("kernels.rs");
            write_if_changed(&bindings, &text)?;
            return Ok(Output {
                ptx: Vec::new(),
                bindings,
                kernels: found.kernels,
                shared: found.shared,
            });
        }

        // toolchain
        let tc = Toolchain::find(self.toolchain.clone())?;

        // 2. shared memory module
        std::fs::create_dir_all(&out_dir)
            .map_err(|e| Error(format!("{}: {e}", out_dir.display())))?;
        let ll = out_dir.join("gpumetrics-shared.ll");
        let ll_text = codegen::shared_ll(&found.shared, &tc.data_layout()?);
        write_if_changed(&ll, &ll_text)?;

        // 3. linker driver
        let driver = build_driver(&out_dir)?;

        // 4. nested cargo
        let mut sms = self.extra_sms.clone();
        if let Some(v) = std::env::var_os("GPUMETRICS_EXTRA_SM") {
            for s in v
                .to_string_lossy()
                .split(',')
                .filter(|s| !s.trim().is_empty())
            {
                sms.push(parse_sm(s)?);
            }
        }
        sms.sort_unstable();
        sms.dedup();
        sms.retain(|&s| s != BASELINE_SM);

        let target_dir = out_dir.join("nvptx");
        let fingerprint = fnv(&[linker::SOURCE, &ll_text]);
        let mut cmd = Command::new(&tc.cargo);
        clean_env(&mut cmd);
        cmd.env("RUSTC", &tc.rustc)
            .env("RUSTC_BOOTSTRAP", "1")
            .env("RUSTUP_TOOLCHAIN", &tc.name)
            .current_dir(&crate_dir)
            .args([
                "rustc",
                "--lib",
                "--release",
                "--target",
                TARGET,
                "-Zbuild-std=core",
                "--crate-type",
                "cdylib",
            ])
            .arg("--manifest-path")
            .arg(&manifest)
            .arg("--target-dir")
            .arg(&target_dir)
            // The lock file goes with the build, not beside the sources: a kernel crate
            // from a registry is a read-only directory with no workspace around it.
            .arg("--config")
            .arg(format!(
                "resolver.lockfile-path={}",
                toml_string(&target_dir.join("Cargo.lock").to_string_lossy())
            ))
            .arg("--config")
            .arg(format!(
                "target.{TARGET}.linker={}",
                toml_string(&driver.to_string_lossy())
            ))
            // The device build's profile, whatever workspace (if any) the kernel crate is
            // in: one fat-LTO codegen unit, so the linker driver sees every function.
            .args(DEVICE_PROFILE.iter().flat_map(|c| ["--config", *c]))
            .args(["--", "-C", &format!("target-cpu=sm_{BASELINE_SM}")])
            .arg("-C")
            .arg(format!(
                "link-arg=--gpumetrics-llvm-bin={}",
                tc.llvm_bin.display()
            ))
            .arg("-C")
            .arg(format!("link-arg=--gpumetrics-ll={}", ll.display()))
            .arg("-C")
            .arg(format!(
                "link-arg=--gpumetrics-fingerprint={fingerprint:016x}"
            ));
        for sm in &sms {
            cmd.arg("-C").arg(format!(
                "link-arg=--gpumetrics-extra-target=sm_{sm}:+ptx{}",
                ptx_isa_for(*sm)
            ));
        }
        let out = cmd
            .output()
            .map_err(|e| Error(format!("cannot run {}: {e}", tc.cargo.display())))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            return err(format!(
                "the device build of {} failed:\n{cmd:?}\n{}{stderr}",
                crate_dir.display(),
                String::from_utf8_lossy(&out.stdout)
            ));
        }
        if self.emit_cargo {
            for line in stderr
                .lines()
                .filter(|l| l.starts_with("warning") && !l.contains("generated"))
            {
                println!("cargo:warning=device build: {line}");
            }
        }

        // 5. PTX: copy, check, bind
        let deps = target_dir.join(TARGET).join("release").join("deps");
        let ptx_dir = out_dir.join("ptx");
        std::fs::create_dir_all(&ptx_dir)
            .map_err(|e| Error(format!("{}: {e}", ptx_dir.display())))?;
        let mut ptx_files = Vec::new();
        let base = deps.join(format!("{lib_name}.ptx"));
        let mut all = vec![(BASELINE_SM, base.clone())];
        all.extend(
            sms.iter()
                .map(|&sm| (sm, linker::extra_output(&base, &format!("sm_{sm}")))),
        );
        let mut first_entries = None;
        for (sm, src) in all {
            let text = std::fs::read_to_string(&src)
                .map_err(|e| Error(format!("the device build made no {}: {e}", src.display())))?;
            let entries =
                ptx::parse_entries(&text).map_err(|e| Error(format!("{}: {e}", src.display())))?;
            let dst = ptx_dir.join(format!("{lib_name}.sm_{sm}.ptx"));
            codegen::check(&found.kernels, &entries, &format!("the sm_{sm} PTX"))
                .map_err(|e| Error(format!("the kernels and the PTX differ:\n{e}")))?;
            write_if_changed(&dst, &text)?;
            first_entries.get_or_insert(entries);
            ptx_files.push((sm, dst));
        }
        let entries = first_entries.unwrap_or_default();
        let ptx_list: Vec<(u32, String)> = ptx_files
            .iter()
            .map(|(s, p)| (*s, p.to_string_lossy().into_owned()))
            .collect();
        let text = codegen::bindings(
            &found.kernels,
            &entries,
            &ptx_list,
            &self.runtime_path,
            &crate_dir.display().to_string(),
        );
        let bindings = out_dir.join("kernels.rs");
        write_if_changed(&bindings, &text)?;
        Ok(Output {
            ptx: ptx_files,
            bindings,
            kernels: found.kernels,
            shared: found.shared,
        })
    }
}

/// The release profile of the nested device build, as `--config` values.
const DEVICE_PROFILE: &[&str] = &[
    "profile.release.lto=\"fat\"",
    "profile.release.codegen-units=1",
    "profile.release.panic=\"abort\"",
    "profile.release.opt-level=3",
    "profile.release.debug=false",
];

/// The nightly (or chosen) toolchain's tools.
struct Toolchain {
    name: String,
    cargo: PathBuf,
    rustc: PathBuf,
    llvm_bin: PathBuf,
}

impl Toolchain {
    fn find(name: Option<String>) -> Result<Self, Error> {
        let name = name
            .or_else(|| {
                std::env::var("GPUMETRICS_TOOLCHAIN")
                    .ok()
                    .filter(|s| !s.is_empty())
            })
            .unwrap_or_else(|| "nightly".into());
        let install = format!("rustup toolchain install {name} --component rust-src,llvm-tools");
        let which = |tool: &str| -> Result<PathBuf, Error> {
            let mut cmd = Command::new("rustup");
            clean_env(&mut cmd);
            let out = cmd.args(["which", "--toolchain", &name, tool]).output().map_err(|e| {
                Error(format!("cannot run rustup ({e}); the device build needs rustup's `{name}` toolchain: {install}"))
            })?;
            if !out.status.success() {
                return err(format!(
                    "the `{name}` toolchain is missing (needed to build the GPU kernels):\n  {install}\n{}",
                    String::from_utf8_lossy(&out.stderr)
                        .lines()
                        .next()
                        .unwrap_or("")
                        .trim()
                ));
            }
            Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
        };
        let cargo = which("cargo")?;
        let rustc = which("rustc")?;
        let run = |args: &[&str]| -> Result<String, Error> {
            let mut cmd = Command::new(&rustc);
            clean_env(&mut cmd);
            let out = cmd
                .env("RUSTC_BOOTSTRAP", "1")
                .args(args)
                .output()
                .map_err(|e| Error(format!("{}: {e}", rustc.display())))?;
            if !out.status.success() {
                return err(format!(
                    "{} {args:?} failed: {}",
                    rustc.display(),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        };
        let sysroot = PathBuf::from(run(&["--print", "sysroot"])?.trim());
        let host = run(&["-vV"])?
            .lines()
            .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
            .ok_or(Error("rustc -vV printed no host".into()))?;
        if !sysroot
            .join("lib/rustlib/src/rust/library/core/Cargo.toml")
            .is_file()
        {
            return err(format!(
                "the `{name}` toolchain has no rust-src component (needed for -Zbuild-std=core):\n  rustup component add rust-src --toolchain {name}"
            ));
        }
        let llvm_bin = sysroot.join("lib/rustlib").join(&host).join("bin");
        for tool in ["llvm-link", "opt", "llc"] {
            if !llvm_bin.join(tool).is_file() {
                return err(format!(
                    "the `{name}` toolchain has no llvm-tools component ({} is missing):\n  rustup component add llvm-tools --toolchain {name}",
                    llvm_bin.join(tool).display()
                ));
            }
        }
        Ok(Self {
            name,
            cargo,
            rustc,
            llvm_bin,
        })
    }

    fn data_layout(&self) -> Result<String, Error> {
        let mut cmd = Command::new(&self.rustc);
        clean_env(&mut cmd);
        let out = cmd
            .env("RUSTC_BOOTSTRAP", "1")
            .args([
                "-Zunstable-options",
                "--print",
                "target-spec-json",
                "--target",
                TARGET,
            ])
            .output()
            .map_err(|e| Error(format!("{}: {e}", self.rustc.display())))?;
        let json = String::from_utf8_lossy(&out.stdout);
        json.lines()
            .find_map(|l| {
                let v = l
                    .trim()
                    .strip_prefix("\"data-layout\":")?
                    .trim()
                    .trim_end_matches(',');
                Some(v.trim_matches('"').to_string())
            })
            .ok_or_else(|| {
                Error(format!(
                    "no data-layout in the {TARGET} target spec: {}",
                    String::from_utf8_lossy(&out.stderr)
                ))
            })
    }
}

/// Removes what the outer cargo build passes to build scripts, so a nested cargo neither
/// uses the outer toolchain/flags nor waits on the outer build directory's lock.
fn clean_env(cmd: &mut Command) {
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        let drop = (k.starts_with("CARGO")
            && k != "CARGO_HOME"
            && k != "CARGO_NET_OFFLINE"
            && k != "CARGO_HTTP_PROXY")
            || k.starts_with("__CARGO")
            || k.starts_with("RUSTC")
            || k.starts_with("RUSTDOC")
            || matches!(
                &*k,
                "RUSTFLAGS"
                    | "RUSTUP_TOOLCHAIN"
                    | "TARGET"
                    | "HOST"
                    | "OUT_DIR"
                    | "OPT_LEVEL"
                    | "PROFILE"
                    | "DEBUG"
                    | "NUM_JOBS"
                    | "MAKEFLAGS"
                    | "MFLAGS"
                    | "DEP_TARGET_DIR"
            );
        if drop {
            cmd.env_remove(&*k);
        }
    }
}

/// Compiles the linker driver (only `std`) with the host rustc into `out_dir`, unless the
/// same source was already compiled there.
fn build_driver(out_dir: &Path) -> Result<PathBuf, Error> {
    let dir = out_dir.join("ptx-linker");
    std::fs::create_dir_all(&dir).map_err(|e| Error(format!("{}: {e}", dir.display())))?;
    let exe = dir.join(format!(
        "gpumetrics-ptx-linker{}",
        std::env::consts::EXE_SUFFIX
    ));
    let main = "#[allow(dead_code)]\nmod linker;\nfn main() {\n    std::process::exit(linker::main_with_args(std::env::args_os().skip(1).collect()))\n}\n";
    let stamp = dir.join("source.stamp");
    let want = format!("{:016x}", fnv(&[linker::SOURCE, main]));
    if exe.is_file() && std::fs::read_to_string(&stamp).is_ok_and(|s| s == want) {
        return Ok(exe);
    }
    write_if_changed(&dir.join("linker.rs"), linker::SOURCE)?;
    write_if_changed(&dir.join("main.rs"), main)?;
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(&rustc)
        .args([
            "--edition",
            "2024",
            "-O",
            "--crate-name",
            "gpumetrics_ptx_linker",
            "--crate-type",
            "bin",
        ])
        .arg(dir.join("main.rs"))
        .arg("-o")
        .arg(&exe)
        .output()
        .map_err(|e| {
            Error(format!(
                "cannot run {rustc:?} to build the PTX linker driver: {e}"
            ))
        })?;
    if !out.status.success() {
        return err(format!(
            "building the PTX linker driver failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    std::fs::write(&stamp, want).map_err(|e| Error(format!("{}: {e}", stamp.display())))?;
    Ok(exe)
}

fn write_if_changed(path: &Path, text: &str) -> Result<(), Error> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    std::fs::write(path, text).map_err(|e| Error(format!("cannot write {}: {e}", path.display())))
}

/// FNV-1a over the parts (a stable fingerprint, unlike `DefaultHasher`).
fn fnv(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain([0xff]) {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// `name` of the `[package]` table of a manifest (simple line scan).
fn package_name(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            in_package = l == "[package]";
        } else if in_package && let Some(v) = l.strip_prefix("name") {
            let v = v.trim_start().strip_prefix('=')?.trim();
            return Some(v.trim_matches('"').to_string());
        }
    }
    None
}

/// What the device build depends on: every crate of the kernel workspace (their `src`
/// directories, which cargo scans recursively, and manifests) and the workspace manifest,
/// lock file and cargo config.
fn watched_paths(crate_dir: &Path) -> Vec<PathBuf> {
    let mut root = crate_dir.to_path_buf();
    let mut dir = crate_dir.parent();
    while let Some(d) = dir {
        if std::fs::read_to_string(d.join("Cargo.toml")).is_ok_and(|t| t.contains("[workspace]")) {
            root = d.to_path_buf();
            break;
        }
        dir = d.parent();
    }
    if std::fs::read_to_string(crate_dir.join("Cargo.toml"))
        .is_ok_and(|t| t.contains("[workspace]"))
    {
        root = crate_dir.to_path_buf();
    }
    let mut out = vec![
        root.join("Cargo.toml"),
        root.join("Cargo.lock"),
        root.join(".cargo"),
    ];
    let mut stack = vec![(root.clone(), 0)];
    while let Some((d, depth)) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if !p.is_dir() || name.starts_with('.') || name == "target" || depth >= 3 {
                continue;
            }
            if p.join("Cargo.toml").is_file() {
                out.push(p.join("Cargo.toml"));
                out.push(p.join("src"));
            }
            stack.push((p, depth + 1));
        }
    }
    if root == crate_dir {
        out.push(crate_dir.join("src"));
    }
    // a path that does not exist would make cargo rerun the build script every time
    out.retain(|p| p.exists());
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_helpers() {
        assert_eq!(parse_sm("sm_90").unwrap(), 90);
        assert_eq!(parse_sm("86").unwrap(), 86);
        assert!(parse_sm("sm_90a").is_err());
        assert!(parse_sm("sm_50").is_err());
        assert_eq!(ptx_isa_for(70), 70);
        assert_eq!(ptx_isa_for(90), 78);
        assert_eq!(
            package_name("[package]\nname = \"gpumetrics-kernels\"\n[dependencies]\nname = \"x\"")
                .as_deref(),
            Some("gpumetrics-kernels")
        );
        assert_ne!(fnv(&["a", "b"]), fnv(&["ab"]));
    }
}
