//! Helpers shared by the command's test binaries: the generated clips' folder, FFmpeg as
//! their generator, the command on the CPU backend, and live senders over loopback UDP.
//! Each binary uses a part of them.
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

/// A UDP port free on 127.0.0.1 now.
pub fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A gst-launch-1.0 running `launch` (a live sender: videotestsrc, x264enc, mpegtsmux,
/// udpsink). Killed when dropped.
pub struct Sender(pub std::process::Child);

impl Sender {
    /// With `report`, its stderr is piped, for the report of a sender that ended at once
    /// (read it only then: a long run would fill the pipe); else it is dropped.
    pub fn launch(launch: &str, report: bool) -> Sender {
        let stderr = if report {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        };
        let child = StdCommand::new("gst-launch-1.0")
            .arg("-q")
            .args(launch.split_whitespace())
            .stdout(std::process::Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "gst-launch-1.0 runs ({e}; gstreamer1.0-tools and the x264enc of \
                     gstreamer1.0-plugins-ugly: scripts/setup-deps.sh installs them)"
                )
            });
        Sender(child)
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
