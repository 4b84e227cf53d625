//! The PTX linker driver that rustc calls for `nvptx64-nvidia-cuda` (the `llbc` linker
//! flavour), replacing `llvm-bitcode-linker`.
//!
//! This file only uses `std`: `gpumetrics-build` compiles it into a stand-alone executable at
//! build time (it is also a module of the library, for its unit tests). rustc calls it as
//!
//! ```text
//! --export-symbol <kernel>... <crate>.o <deps>/libcompiler_builtins-*.rlib -L <dir>
//! --target nvptx64-nvidia-cuda --target-cpu sm_70 --target-feature=+ptx70 -L <dir>
//! -o <out>.ptx -O3 --debug [-C link-arg=... arguments]
//! ```
//!
//! The objects are LLVM bitcode (deleted once we return); rlibs are `ar` archives holding
//! bitcode members. The driver runs, with the tools of the rustup `llvm-tools` component:
//!
//! 1. `llvm-link` of the objects and of extra `.ll` modules (`--gpumetrics-ll=<file>`, e.g. the
//!    generated shared-memory definitions), then `llvm-link --only-needed` of the archives'
//!    bitcode members (only what is referenced, e.g. compiler_builtins routines);
//! 2. `opt -passes='internalize,default<O3>'` keeping only the exported kernels public, so
//!    everything else is inlined and dropped;
//! 3. `llc -mcpu=<cpu> -mattr=<features>` to `<out>.ptx`, and once more per extra target given
//!    as `--gpumetrics-extra-target=sm_90:+ptx78` to `<out stem>.sm_90.ptx`.
//!
//! Our own arguments (passed with `-C link-arg=`): `--gpumetrics-llvm-bin=<dir>` (where the
//! tools are; else `$GPUMETRICS_LLVM_BIN`), `--gpumetrics-ll=<file>`,
//! `--gpumetrics-extra-target=<cpu>:<features>`.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// This file's text: `gpumetrics-build` compiles it into the driver executable.
#[allow(dead_code)]
pub const SOURCE: &str = include_str!("linker.rs");

/// One extra `llc` run: `cpu` (`sm_90`) with `features` (`+ptx78`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraTarget {
    /// `-mcpu` value.
    pub cpu: String,
    /// `-mattr` value.
    pub features: String,
}

/// The parsed linker command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkArgs {
    /// Symbols to keep public: the kernels.
    pub exports: Vec<String>,
    /// Bitcode objects, linked completely.
    pub objects: Vec<PathBuf>,
    /// Archives (rlibs); their bitcode members are linked only where needed.
    pub archives: Vec<PathBuf>,
    /// `-L` directories (unused: every input comes as a path).
    pub lib_dirs: Vec<PathBuf>,
    /// `--target`.
    pub target: Option<String>,
    /// `--target-cpu`, default `sm_70`.
    pub target_cpu: Option<String>,
    /// `--target-feature` values, joined with `,` for `llc -mattr`.
    pub target_features: Vec<String>,
    /// `-o`.
    pub output: Option<PathBuf>,
    /// `-O<level>`: `0`..`3`, `s`, `z`.
    pub opt_level: Option<String>,
    /// `--debug` was given (accepted; the PTX carries no debug info).
    pub debug: bool,
    /// `--gpumetrics-llvm-bin`.
    pub llvm_bin: Option<PathBuf>,
    /// `--gpumetrics-ll`.
    pub extra_modules: Vec<PathBuf>,
    /// `--gpumetrics-extra-target`.
    pub extra_targets: Vec<ExtraTarget>,
}

/// Parses rustc's `llbc` linker arguments plus ours. Unknown options are errors, so that a
/// change of rustc's interface is noticed instead of silently ignored.
pub fn parse_args<I: IntoIterator<Item = String>>(args: I) -> Result<LinkArgs, String> {
    let mut a = LinkArgs::default();
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| -> Result<String, String> {
            match &inline {
                Some(v) => Ok(v.clone()),
                None => it
                    .next()
                    .ok_or_else(|| format!("linker argument {name} needs a value")),
            }
        };
        match flag.as_str() {
            "--export-symbol" => a.exports.push(value("--export-symbol")?),
            "--target" => a.target = Some(value("--target")?),
            "--target-cpu" => a.target_cpu = Some(value("--target-cpu")?),
            "--target-feature" => {
                a.target_features.extend(
                    value("--target-feature")?
                        .split(',')
                        .filter(|s| !s.is_empty())
                        .map(str::to_string),
                );
            }
            "-o" => a.output = Some(value("-o")?.into()),
            "--debug" => a.debug = true,
            "--gpumetrics-llvm-bin" => a.llvm_bin = Some(value("--gpumetrics-llvm-bin")?.into()),
            // changes with the driver and generated inputs, so that cargo relinks
            "--gpumetrics-fingerprint" => drop(value("--gpumetrics-fingerprint")?),
            "--gpumetrics-ll" => a.extra_modules.push(value("--gpumetrics-ll")?.into()),
            "--gpumetrics-extra-target" => {
                let v = value("--gpumetrics-extra-target")?;
                let (cpu, features) = v.split_once(':').ok_or_else(|| {
                    format!("--gpumetrics-extra-target={v}: expected <cpu>:<features>, e.g. sm_90:+ptx78")
                })?;
                a.extra_targets.push(ExtraTarget {
                    cpu: cpu.into(),
                    features: features.into(),
                });
            }
            _ if arg.starts_with("-L") => {
                let dir = if arg.len() > 2 {
                    arg[2..].to_string()
                } else {
                    value("-L")?
                };
                a.lib_dirs.push(dir.into());
            }
            _ if arg.starts_with("-O") && arg.len() == 3 => {
                let level = &arg[2..];
                if !matches!(level, "0" | "1" | "2" | "3" | "s" | "z") {
                    return Err(format!("unknown optimisation level {arg}"));
                }
                a.opt_level = Some(level.to_string());
            }
            _ if arg.starts_with('-') => return Err(format!("unknown linker argument `{arg}`")),
            _ => {
                let p = PathBuf::from(&arg);
                let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
                if ext == "rlib" || ext == "a" {
                    a.archives.push(p);
                } else {
                    a.objects.push(p);
                }
            }
        }
    }
    if a.output.is_none() {
        return Err("no output given (-o)".into());
    }
    if a.objects.is_empty() {
        return Err("no bitcode object to link".into());
    }
    if let Some(t) = &a.target
        && t != "nvptx64-nvidia-cuda"
    {
        return Err(format!(
            "unsupported target `{t}` (only nvptx64-nvidia-cuda)"
        ));
    }
    Ok(a)
}

/// True for raw LLVM bitcode (`BC\xC0\xDE`) or the bitcode wrapper (`0x0B17C0DE`).
pub fn is_bitcode(data: &[u8]) -> bool {
    data.starts_with(b"BC\xC0\xDE") || data.starts_with(&[0xDE, 0xC0, 0x17, 0x0B])
}

/// The members of a System V / GNU `ar` archive that are LLVM bitcode, as (name, bytes).
/// Symbol tables (`/`, `__.SYMDEF`), the long-name table (`//`) and other members such as
/// `lib.rmeta` are skipped.
pub fn bitcode_members(archive: &[u8]) -> Result<Vec<(String, Vec<u8>)>, String> {
    const MAGIC: &[u8] = b"!<arch>\n";
    if !archive.starts_with(MAGIC) {
        return Err("not an ar archive".into());
    }
    let mut out = Vec::new();
    let mut long_names: &[u8] = &[];
    let mut pos = MAGIC.len();
    while pos + 60 <= archive.len() {
        let header = &archive[pos..pos + 60];
        if &header[58..60] != b"`\n" {
            return Err(format!("bad ar member header at offset {pos}"));
        }
        let field =
            |r: std::ops::Range<usize>| String::from_utf8_lossy(&header[r]).trim_end().to_string();
        let raw_name = field(0..16);
        let size: usize = field(48..58)
            .parse()
            .map_err(|_| format!("bad ar member size at offset {pos}"))?;
        let start = pos + 60;
        let end = start
            .checked_add(size)
            .filter(|&e| e <= archive.len())
            .ok_or("truncated ar archive")?;
        let data = &archive[start..end];
        let mut name = raw_name.clone();
        if raw_name == "//" {
            long_names = data;
        } else if let Some(off) = raw_name
            .strip_prefix('/')
            .and_then(|o| o.parse::<usize>().ok())
        {
            let rest = long_names.get(off..).ok_or("bad ar long-name offset")?;
            let len = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
            name = String::from_utf8_lossy(&rest[..len])
                .trim_end_matches('/')
                .to_string();
        } else if let Some(n) = raw_name.strip_prefix("#1/") {
            // BSD: the name precedes the data.
            let n: usize = n.parse().map_err(|_| "bad BSD ar name length")?;
            let (nm, rest) = data.split_at(n.min(data.len()));
            name = String::from_utf8_lossy(nm)
                .trim_end_matches('\0')
                .to_string();
            if is_bitcode(rest) {
                out.push((name, rest.to_vec()));
            }
            pos = end + (end & 1);
            continue;
        } else {
            name = name.trim_end_matches('/').to_string();
        }
        if raw_name != "/" && raw_name != "//" && is_bitcode(data) {
            out.push((name, data.to_vec()));
        }
        pos = end + (end & 1);
    }
    Ok(out)
}

/// Where an extra target's PTX goes: `<dir>/<stem>.<cpu>.ptx`.
pub fn extra_output(output: &Path, cpu: &str) -> PathBuf {
    let stem = output
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("kernels");
    output.with_file_name(format!("{stem}.{cpu}.ptx"))
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let shown = format!("{cmd:?}");
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {shown}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{shown} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

/// Runs the whole link described by `a`.
pub fn link(a: &LinkArgs) -> Result<(), String> {
    let output = a.output.as_ref().ok_or("no output")?;
    let bin = match &a.llvm_bin {
        Some(b) => b.clone(),
        None => std::env::var_os("GPUMETRICS_LLVM_BIN").map(PathBuf::from).ok_or(
            "the LLVM tools directory is unknown: pass -C link-arg=--gpumetrics-llvm-bin=<dir> or set \
             GPUMETRICS_LLVM_BIN (gpumetrics-build does this)",
        )?,
    };
    let tool = |name: &str| -> Result<PathBuf, String> {
        let p = bin.join(name);
        if p.is_file() {
            Ok(p)
        } else {
            Err(format!(
                "{} not found; install it with: rustup component add llvm-tools --toolchain nightly",
                p.display()
            ))
        }
    };
    let (llvm_link, opt, llc) = (tool("llvm-link")?, tool("opt")?, tool("llc")?);

    let tmp = output.with_extension("gpumetrics-link");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| format!("cannot create {}: {e}", tmp.display()))?;

    // 1. link
    let linked = tmp.join("linked.bc");
    let mut cmd = Command::new(&llvm_link);
    cmd.args(&a.objects)
        .args(&a.extra_modules)
        .arg("-o")
        .arg(&linked);
    run(&mut cmd)?;
    let mut members = Vec::new();
    for (i, ar) in a.archives.iter().enumerate() {
        let data = std::fs::read(ar).map_err(|e| format!("cannot read {}: {e}", ar.display()))?;
        let found = bitcode_members(&data).map_err(|e| format!("{}: {e}", ar.display()))?;
        for (j, (_name, bytes)) in found.into_iter().enumerate() {
            let p = tmp.join(format!("ar{i}-{j}.bc"));
            std::fs::write(&p, bytes).map_err(|e| format!("cannot write {}: {e}", p.display()))?;
            members.push(p);
        }
    }
    let linked = if members.is_empty() {
        linked
    } else {
        let all = tmp.join("linked-all.bc");
        let mut cmd = Command::new(&llvm_link);
        cmd.arg(&linked)
            .arg("--only-needed")
            .args(&members)
            .arg("-o")
            .arg(&all);
        run(&mut cmd)?;
        all
    };

    // 2. internalize everything but the kernels, optimise
    let level = a.opt_level.as_deref().unwrap_or("3");
    let optimised = tmp.join("opt.bc");
    let mut cmd = Command::new(&opt);
    cmd.arg(format!("-passes=internalize,default<O{level}>"))
        .arg(format!(
            "-internalize-public-api-list={}",
            a.exports.join(",")
        ))
        .arg(&linked)
        .arg("-o")
        .arg(&optimised);
    run(&mut cmd)?;

    // 3. PTX per target
    let llc_level = match level {
        "s" | "z" => "2",
        l => l,
    };
    let base = ExtraTarget {
        cpu: a.target_cpu.clone().unwrap_or_else(|| "sm_70".into()),
        features: a.target_features.join(","),
    };
    let mut jobs = vec![(base, output.clone())];
    for t in &a.extra_targets {
        jobs.push((t.clone(), extra_output(output, &t.cpu)));
    }
    for (t, out) in jobs {
        let mut cmd = Command::new(&llc);
        cmd.arg(format!("-mcpu={}", t.cpu));
        if !t.features.is_empty() {
            cmd.arg(format!("-mattr={}", t.features));
        }
        cmd.arg(format!("-O{llc_level}"))
            .arg(&optimised)
            .arg("-o")
            .arg(&out);
        run(&mut cmd)?;
        let ptx = std::fs::read_to_string(&out)
            .map_err(|e| format!("cannot read {}: {e}", out.display()))?;
        let mut missing = String::new();
        for e in &a.exports {
            if !ptx.contains(&format!(".entry {e}(")) {
                let _ = write!(missing, " {e}");
            }
        }
        if !missing.is_empty() {
            return Err(format!(
                "{}: exported kernels missing from the PTX:{missing}",
                out.display()
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(())
}

/// Entry point of the executable: parses `args` (without the program name), links, and
/// returns the process exit code, reporting errors on stderr.
pub fn main_with_args(args: Vec<OsString>) -> i32 {
    let args: Result<Vec<String>, _> = args.into_iter().map(OsString::into_string).collect();
    let result = args
        .map_err(|a| format!("non-UTF-8 argument {a:?}"))
        .and_then(parse_args)
        .and_then(|a| link(&a));
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("gpumetrics-ptx-linker: error: {e}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn parses_rustc_command_line() {
        let a = parse_args(args(
            "--export-symbol k1 --export-symbol k2 /t/d/crate.cgu.0.rcgu.o /t/d/libcompiler_builtins-1.rlib \
             -L /t/raw-dylibs --target nvptx64-nvidia-cuda --target-cpu sm_70 --target-feature=+ptx70 \
             -L /sysroot/self-contained -o /t/d/out.ptx -O3 --debug --gpumetrics-ll=/o/shared.ll \
             --gpumetrics-llvm-bin=/bin/llvm --gpumetrics-extra-target=sm_90:+ptx78",
        ))
        .unwrap();
        assert_eq!(a.exports, ["k1", "k2"]);
        assert_eq!(a.objects, [PathBuf::from("/t/d/crate.cgu.0.rcgu.o")]);
        assert_eq!(
            a.archives,
            [PathBuf::from("/t/d/libcompiler_builtins-1.rlib")]
        );
        assert_eq!(a.lib_dirs.len(), 2);
        assert_eq!(a.target_cpu.as_deref(), Some("sm_70"));
        assert_eq!(a.target_features, ["+ptx70"]);
        assert_eq!(a.output, Some(PathBuf::from("/t/d/out.ptx")));
        assert_eq!(a.opt_level.as_deref(), Some("3"));
        assert!(a.debug);
        assert_eq!(a.extra_modules, [PathBuf::from("/o/shared.ll")]);
        assert_eq!(a.llvm_bin, Some(PathBuf::from("/bin/llvm")));
        assert_eq!(
            a.extra_targets,
            [ExtraTarget {
                cpu: "sm_90".into(),
                features: "+ptx78".into()
            }]
        );
        assert_eq!(
            extra_output(a.output.as_ref().unwrap(), "sm_90"),
            PathBuf::from("/t/d/out.sm_90.ptx")
        );
    }

    #[test]
    fn separate_and_joined_values() {
        let a = parse_args(args(
            "--target-cpu=sm_80 --target-feature +ptx71,+foo -L/x a.o -o x.ptx",
        ))
        .unwrap();
        assert_eq!(a.target_cpu.as_deref(), Some("sm_80"));
        assert_eq!(a.target_features, ["+ptx71", "+foo"]);
        assert_eq!(a.lib_dirs, [PathBuf::from("/x")]);
    }

    #[test]
    fn rejects_bad_command_lines() {
        assert!(parse_args(args("a.o")).unwrap_err().contains("-o"));
        assert!(parse_args(args("-o x.ptx")).unwrap_err().contains("object"));
        assert!(
            parse_args(args("a.o -o x.ptx --frobnicate"))
                .unwrap_err()
                .contains("--frobnicate")
        );
        assert!(parse_args(args("a.o -o")).unwrap_err().contains("value"));
        assert!(parse_args(args("a.o -o x --target x86_64-unknown-linux-gnu")).is_err());
        assert!(parse_args(args("a.o -o x --gpumetrics-extra-target=sm_90")).is_err());
        assert!(parse_args(args("a.o -o x -O9")).is_err());
    }

    fn ar_member(name: &str, data: &[u8]) -> Vec<u8> {
        let mut v = format!(
            "{name:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
            0,
            0,
            0,
            644,
            data.len()
        )
        .into_bytes();
        v.extend_from_slice(data);
        if data.len() % 2 == 1 {
            v.push(b'\n');
        }
        v
    }

    #[test]
    fn extracts_bitcode_members() {
        let long = "compiler_builtins-abc.compiler_builtins.1234-cgu.001.rcgu.o/\n";
        let mut ar = b"!<arch>\n".to_vec();
        ar.extend(ar_member("/", b"\0\0\0\0"));
        ar.extend(ar_member("//", long.as_bytes()));
        ar.extend(ar_member("lib.rmeta/", b"rust metadata"));
        ar.extend(ar_member("/0", b"BC\xC0\xDEodd"));
        ar.extend(ar_member("short.o/", b"BC\xC0\xDE1234"));
        let m = bitcode_members(&ar).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(
            m[0].0,
            "compiler_builtins-abc.compiler_builtins.1234-cgu.001.rcgu.o"
        );
        assert_eq!(m[0].1, b"BC\xC0\xDEodd");
        assert_eq!(m[1].0, "short.o");
        assert!(bitcode_members(b"not an archive").is_err());
        let mut bad = b"!<arch>\n".to_vec();
        bad.extend(ar_member("x.o/", b"BC\xC0\xDE"));
        bad.truncate(bad.len() - 2);
        assert!(bitcode_members(&bad).is_err());
    }
}
