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
//!    give the entries declared with `max_registers = N` ptxas's `.maxnreg N`
//!    ([`ptx::cap_registers`]), and write `OUT_DIR/kernels.rs` ([`codegen`]).
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
    dependency_dirs: Vec<(String, PathBuf)>,
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
            dependency_dirs: Vec::new(),
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

    /// Where the nested device build takes the kernel crate's dependency `package` from when
    /// the kernel crate's manifest asks a registry for it: `dir`, the folder of the copy the
    /// outer build has (a dependency's `links` metadata can tell the host's build script).
    ///
    /// The nested build resolves the kernel crate's dependencies itself, from crates.io. A
    /// packaged kernel crate whose sibling crates are not there (not published yet, or
    /// served by a local or private registry, as while `cargo package --workspace` verifies
    /// the packages) would not build otherwise; with this, the nested build has
    /// `patch.crates-io.<package>.path = <dir>`. Ignored while the kernel crate has the
    /// dependency by path (directly or from its workspace), as in a checkout.
    pub fn dependency_dir(mut self, package: impl Into<String>, dir: impl Into<PathBuf>) -> Self {
        self.dependency_dirs.push((package.into(), dir.into()));
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
        // The nested build's lock file starts as the workspace's, if the kernel crate is in
        // one: cargo resolves the whole workspace, and with the versions the outer build
        // locked it needs no registry index update (offline builds) and picks no others.
        let lock = target_dir.join("Cargo.lock");
        if let Some(ws_lock) = workspace_root(&crate_dir)
            .map(|r| r.join("Cargo.lock"))
            .and_then(|l| std::fs::read_to_string(l).ok())
        {
            std::fs::create_dir_all(&target_dir)
                .map_err(|e| Error(format!("{}: {e}", target_dir.display())))?;
            write_if_changed(&lock, &ws_lock)?;
        }
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
                toml_string(&lock.to_string_lossy())
            ))
            .arg("--config")
            .arg(format!(
                "target.{TARGET}.linker={}",
                toml_string(&driver.to_string_lossy())
            ))
            // The device build's profile, whatever workspace (if any) the kernel crate is
            // in: one fat-LTO codegen unit, so the linker driver sees every function.
            .args(DEVICE_PROFILE.iter().flat_map(|c| ["--config", *c]));
        // The dependencies a packaged kernel crate asks a registry for, where the outer
        // build has them (`dependency_dir`).
        let local: Vec<String> = path_dependencies(&manifest_text)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        for (package, dir) in &self.dependency_dirs {
            if !local.contains(package) {
                cmd.arg("--config").arg(format!(
                    "patch.crates-io.{}.path={}",
                    toml_string(package),
                    toml_string(&dir.to_string_lossy())
                ));
            }
        }
        cmd.args(["--", "-C", &format!("target-cpu=sm_{BASELINE_SM}")])
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
            // `-Zbuild-std` resolves the standard library with the same configuration, where
            // the `dependency_dir` patches are unused: cargo's warning about it is no news.
            let unused_patch = |l: &str| {
                l.contains("was not used in the crate graph")
                    && self
                        .dependency_dirs
                        .iter()
                        .any(|(p, _)| l.starts_with(&format!("warning: patch `{p} v")))
            };
            for line in stderr.lines().filter(|l| {
                l.starts_with("warning") && !l.contains("generated") && !unused_patch(l)
            }) {
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
            let mut text = text;
            for k in &found.kernels {
                if let Some(n) = k.max_registers {
                    text = ptx::cap_registers(&text, &k.name, n)
                        .map_err(|e| Error(format!("{}: max_registers: {e}", src.display())))?;
                }
            }
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

/// The root of the workspace the kernel crate belongs to: the crate's own folder if its
/// manifest has a `[workspace]` table, else the nearest folder above with one (as cargo
/// finds it); none for a registry copy.
fn workspace_root(crate_dir: &Path) -> Option<PathBuf> {
    let has_workspace = |d: &Path| {
        std::fs::read_to_string(d.join("Cargo.toml")).is_ok_and(|t| {
            t.lines()
                .any(|l| l.trim() == "[workspace]" || l.trim().starts_with("[workspace."))
        })
    };
    crate_dir
        .ancestors()
        .find(|d| has_workspace(d))
        .map(Path::to_path_buf)
}

/// The dependencies a manifest gives by path, as (table key, path as written): the
/// `path` of inline tables (`name = { path = "…" }`) and of `[dependencies.name]` tables in
/// every dependency table, and, with `workspace = true`, the key alone (path `None`, to be
/// looked up in the workspace's `[workspace.dependencies]`). A line scan, like
/// [`package_name`]: enough for the manifests cargo writes and people usually write.
fn path_dependencies(manifest: &str) -> Vec<(String, Option<String>)> {
    fn string_value(v: &str, key: &str) -> Option<String> {
        let i = v.find(key)?;
        let before = v[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_') {
            return None;
        }
        let rest = v[i + key.len()..]
            .trim_start()
            .strip_prefix('=')?
            .trim_start();
        let rest = rest.strip_prefix('"')?;
        Some(rest[..rest.find('"')?].to_string())
    }
    fn inherits(v: &str) -> bool {
        v.split([',', '{', '}'])
            .any(|p| p.trim().replace(' ', "") == "workspace=true")
    }
    let mut out = Vec::new();
    // Some(None): a dependency table; Some(Some(key)): the table of one dependency.
    let mut table: Option<Option<String>> = None;
    for line in manifest.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            let name = l.trim_matches(|c| c == '[' || c == ']').trim();
            let mut parts = name.rsplitn(2, '.');
            let last = parts.next().unwrap_or("");
            let head = parts.next().unwrap_or("");
            let dep_table = |t: &str| t.ends_with("dependencies") && !t.starts_with("workspace");
            table = if dep_table(name) {
                Some(None)
            } else if dep_table(head) {
                Some(Some(last.trim_matches('"').to_string()))
            } else {
                None
            };
            continue;
        }
        let Some((key, value)) = l.split_once('=') else {
            continue;
        };
        let key = key.trim().trim_matches('"');
        match &table {
            Some(None) => {
                if let Some(name) = key.strip_suffix(".workspace") {
                    out.push((name.trim_matches('"').to_string(), None));
                } else if let Some(path) = string_value(value, "path") {
                    out.push((key.to_string(), Some(path)));
                } else if inherits(value) {
                    out.push((key.to_string(), None));
                }
            }
            Some(Some(name)) => {
                if key == "path" {
                    if let Some(path) = string_value(l, "path") {
                        out.push((name.clone(), Some(path)));
                    }
                } else if key == "workspace" && value.trim() == "true" {
                    out.push((name.clone(), None));
                }
            }
            None => {}
        }
    }
    out
}

/// The paths of `[workspace.dependencies]` entries of a workspace manifest, by key.
fn workspace_dependency_paths(manifest: &str) -> Vec<(String, String)> {
    let mut in_table = false;
    let mut text = String::new();
    for line in manifest.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            in_table = l == "[workspace.dependencies]";
            // the entries, as a dependency table for `path_dependencies`
            text.push_str(if in_table {
                "[dependencies]\n"
            } else {
                "[other]\n"
            });
        } else if in_table {
            text.push_str(l);
            text.push('\n');
        }
    }
    path_dependencies(&text)
        .into_iter()
        .filter_map(|(k, p)| Some((k, p?)))
        .collect()
}

/// What the device build depends on: the kernel crate and the crates it depends on by path
/// (directly or through its workspace's `[workspace.dependencies]`), each crate's manifest
/// and `src` directory (which cargo scans recursively), and the workspace's manifest, lock
/// file and cargo config. Not the workspace's other members: a change to the host crates
/// does not rerun the device build.
fn watched_paths(crate_dir: &Path) -> Vec<PathBuf> {
    let root = workspace_root(crate_dir).unwrap_or_else(|| crate_dir.to_path_buf());
    let ws_deps = std::fs::read_to_string(root.join("Cargo.toml"))
        .map(|t| workspace_dependency_paths(&t))
        .unwrap_or_default();
    let mut out = vec![
        root.join("Cargo.toml"),
        root.join("Cargo.lock"),
        root.join(".cargo"),
    ];
    let mut seen = Vec::new();
    let mut stack = vec![crate_dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let dir = dir.canonicalize().unwrap_or(dir);
        if seen.contains(&dir) {
            continue;
        }
        seen.push(dir.clone());
        let manifest = dir.join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        out.push(manifest);
        out.push(dir.join("src"));
        for (key, path) in path_dependencies(&text) {
            match path {
                Some(p) => stack.push(dir.join(p)),
                None => {
                    if let Some((_, p)) = ws_deps.iter().find(|(k, _)| *k == key) {
                        stack.push(root.join(p));
                    }
                }
            }
        }
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

    #[test]
    fn path_dependencies_of_a_manifest() {
        let manifest = "[package]\nname = \"k\"\npath = \"no\"\n\
            [lib]\npath = \"src/lib.rs\"\n\
            [dependencies]\na = { path = \"../a\", version = \"0.1.0\" }\nb.workspace = true\n\
            c = { workspace = true, features = [\"x\"] }\nd = \"1\"\ne = { version = \"1\", subpath = \"x\" }\n\
            [dependencies.f]\nversion = \"1\"\npath = \"../f\"\n\
            [target.'cfg(unix)'.dependencies]\ng = { path = \"g\" }\n\
            [workspace.dependencies]\nh = { path = \"h\" }\n";
        let deps = path_dependencies(manifest);
        let some = |s: &str| Some(s.to_string());
        assert_eq!(
            deps,
            [
                ("a".to_string(), some("../a")),
                ("b".to_string(), None),
                ("c".to_string(), None),
                ("f".to_string(), some("../f")),
                ("g".to_string(), some("g")),
            ]
        );
        assert_eq!(
            workspace_dependency_paths(manifest),
            [("h".to_string(), "h".to_string())]
        );
    }

    /// The repository's engine kernels: the device build watches the kernel crate and the
    /// device crate, not the host crates of the workspace.
    #[test]
    fn watched_paths_of_the_kernel_crate() {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let repo = repo.canonicalize().unwrap();
        let paths = watched_paths(&repo.join("kernels/metrics"));
        for p in [
            "Cargo.toml",
            "Cargo.lock",
            "kernels/metrics/Cargo.toml",
            "kernels/metrics/src",
            "kernels/device/Cargo.toml",
            "kernels/device/src",
        ] {
            assert!(paths.contains(&repo.join(p)), "{p} not in {paths:?}");
        }
        assert!(
            !paths.iter().any(|p| p.starts_with(repo.join("engine"))),
            "{paths:?}"
        );
    }
}
