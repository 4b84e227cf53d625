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

/// A video file decoded by Debian's `ffmpeg` to packed 8-bit RGB frames, one after the
/// other; panics with its stderr when it does not decode.
pub fn decode_rgb24(path: &std::path::Path) -> Vec<u8> {
    let out = StdCommand::new("ffmpeg")
        .args(["-v", "error", "-i"])
        .arg(path)
        .args(["-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
        .output()
        .expect("ffmpeg runs (scripts/setup-deps.sh installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The `frame` records of the command's `--format jsonl` output.
pub fn frame_records(jsonl: &str) -> Vec<serde_json::Value> {
    jsonl
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l["type"] == "frame")
        .collect()
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

/// A network path that delays: each UDP packet sent to [`Relay::port`] reaches `to` on
/// 127.0.0.1 `delay` later (a distorted copy that arrives late, for live alignment).
/// Stops when dropped.
pub struct Relay {
    pub port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Relay {
    pub fn start(to: u16, delay: std::time::Duration) -> Relay {
        use std::sync::atomic::Ordering;
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        socket
            .set_read_timeout(Some(std::time::Duration::from_millis(5)))
            .unwrap();
        let port = socket.local_addr().unwrap().port();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let done = stop.clone();
        std::thread::spawn(move || {
            let out = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            let mut held = std::collections::VecDeque::new();
            let mut buf = [0u8; 65536];
            while !done.load(Ordering::SeqCst) {
                if let Ok(n) = socket.recv(&mut buf) {
                    held.push_back((std::time::Instant::now() + delay, buf[..n].to_vec()));
                }
                while held
                    .front()
                    .is_some_and(|(due, _)| *due <= std::time::Instant::now())
                {
                    let (_, data) = held.pop_front().unwrap();
                    let _ = out.send_to(&data, ("127.0.0.1", to));
                }
            }
        });
        Relay { port, stop }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// One live picture sent twice as MPEG-TS over UDP: to `reference` at 1.5 Mbit/s and,
/// through a 150 kbit/s encoder, to `distorted` (a moving ball: content to align by).
pub fn twice(reference: u16, distorted: u16) -> Sender {
    let stream = |bitrate: u32, port: u16| {
        format!(
            "t. ! queue ! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=25 \
             bitrate={bitrate} ! mpegtsmux ! udpsink host=127.0.0.1 port={port} sync=false"
        )
    };
    Sender::launch(
        &format!(
            "videotestsrc is-live=true pattern=ball ! video/x-raw,format=I420,width=320,\
             height=180,framerate=25/1 ! tee name=t {} {}",
            stream(1500, reference),
            stream(150, distorted)
        ),
        true,
    )
}

/// The delay of the distorted copy in the live alignment tests, and a frame of them.
pub const ALIGN_DELAY: f64 = 1.3;
pub const ALIGN_FRAME: f64 = 0.04;
/// How far the offset the element reports may be from the relay's delay: the running
/// times it compares are those the demuxers give, each recovered from its stream's clock
/// references as they arrive, which shifts each stream by up to about a frame (the element
/// test measures the true offset from the frames' own indices, within a frame).
pub const ALIGN_SLACK: f64 = 2.0 * ALIGN_FRAME;
