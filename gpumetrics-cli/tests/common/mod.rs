//! Helpers shared by the command's test binaries: the generated clips' folder, FFmpeg as
//! their generator, and the command on the CPU backend. Each binary uses a part of them.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command as StdCommand;

use assert_cmd::Command;

/// A test binary's generated clips: the folder lives as long as the value.
pub struct Clips {
    pub _dir: tempfile::TempDir,
    pub path: PathBuf,
}

impl Clips {
    /// The path of clip `name`.
    pub fn get(&self, name: &str) -> String {
        self.path.join(name).to_string_lossy().into_owned()
    }
}

/// Runs Debian's `ffmpeg` quietly with `args`; panics with its stderr when it fails.
pub fn ffmpeg(args: &[&str]) {
    let out = StdCommand::new("ffmpeg")
        .args(["-v", "error", "-y"])
        .args(args)
        .output()
        .expect("ffmpeg runs (scripts/setup-deps.sh installs it)");
    assert!(
        out.status.success(),
        "ffmpeg {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The built `gpumetrics` command on the CPU backend with `args`.
pub fn gpumetrics(args: &[&str]) -> Command {
    let mut cmd = Command::cargo_bin("gpumetrics").unwrap();
    cmd.args(["--backend", "cpu"]).args(args);
    cmd
}
