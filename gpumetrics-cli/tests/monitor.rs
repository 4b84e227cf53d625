// SPDX-License-Identifier: MPL-2.0
//! `gpumetrics monitor CONFIG` with real parts: live MPEG-TS senders on loopback UDP
//! (gst-launch-1.0 with x264enc, one per channel), the service's events read from its
//! stdout, and its endpoint scraped by Debian's Prometheus server (/usr/bin/prometheus,
//! which scripts/setup-deps.sh installs; without it the test fails saying so).
//!
//! The scenario of the issue: three channels start and come up; one sender stops and its
//! channel goes down within signal-timeout + 1 s while the others keep measuring; the
//! sender restarts and the channel comes up again with a restart counted; a fourth channel
//! is added to the file and SIGHUP starts it; SIGINT stops every channel with its summary
//! and the service exits 0. Every wait is bounded.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;
use common::{Sender, free_udp_port};

const PROMETHEUS: &str = "/usr/bin/prometheus";
/// The channels' `signal-timeout`.
const SIGNAL_TIMEOUT: Duration = Duration::from_secs(2);
/// How long anything may take to happen on a loaded 2-core machine.
const PATIENCE: Duration = Duration::from_secs(90);

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A live test picture as MPEG-TS over UDP to `port` (small, so that four senders and
/// four channels fit a 2-core machine).
fn sender(port: u16, pattern: &str) -> Sender {
    Sender::launch(
        &format!(
            "videotestsrc is-live=true pattern={pattern} ! video/x-raw,format=I420,width=128,\
         height=72,framerate=15/1 ! x264enc tune=zerolatency speed-preset=ultrafast \
         key-int-max=15 bitrate=300 ! mpegtsmux ! udpsink host=127.0.0.1 port={port}"
        ),
        false,
    )
}

/// GET `path` from `address` (HTTP/1.0): status and body.
fn http_get(address: &str, path: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(address)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n")?;
    let mut text = String::new();
    s.read_to_string(&mut text)?;
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Ok((status, body.to_string()))
}

/// A Prometheus server scraping `target` every second; killed when dropped.
struct Prometheus {
    child: Child,
    dir: tempfile::TempDir,
    address: String,
}

impl Prometheus {
    fn start(target: &str) -> Prometheus {
        assert!(
            Path::new(PROMETHEUS).exists(),
            "{PROMETHEUS} is missing: this test needs Debian's prometheus package; run \
             scripts/setup-deps.sh (or apt-get install prometheus)"
        );
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  \
                 - job_name: gpumetrics\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let address = format!("127.0.0.1:{}", free_port());
        let log = std::fs::File::create(dir.path().join("log")).unwrap();
        let child = Command::new(PROMETHEUS)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={address}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {PROMETHEUS}: {e}"));
        let server = Prometheus {
            child,
            dir,
            address,
        };
        let deadline = Instant::now() + PATIENCE;
        while !matches!(http_get(&server.address, "/-/ready"), Ok((200, _))) {
            assert!(
                Instant::now() < deadline,
                "prometheus not ready: {}",
                std::fs::read_to_string(server.dir.path().join("log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        server
    }

    /// `promql`'s samples as (labels, value), once `done` accepts them.
    fn wait_for(
        &self,
        promql: &str,
        done: impl Fn(&[(serde_json::Map<String, Value>, f64)]) -> bool,
    ) -> Vec<(serde_json::Map<String, Value>, f64)> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let query: String = promql
                .bytes()
                .map(|b| match b {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' => (b as char).to_string(),
                    _ => format!("%{b:02X}"),
                })
                .collect();
            let (status, body) = http_get(&self.address, &format!("/api/v1/query?query={query}"))
                .expect("prometheus answers");
            assert_eq!(status, 200, "{body}");
            let json: Value = serde_json::from_str(&body).unwrap();
            let samples: Vec<_> = json["data"]["result"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    (
                        r["metric"].as_object().unwrap().clone(),
                        r["value"][1].as_str().unwrap().parse().unwrap(),
                    )
                })
                .collect();
            if done(&samples) {
                return samples;
            }
            assert!(Instant::now() < deadline, "{promql}: {samples:?}");
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The service under test, killed when dropped; its events as they come.
struct Service {
    child: Child,
    events: mpsc::Receiver<Value>,
    /// Every event received, when, and whether a wait took it.
    seen: Vec<(Value, Instant, bool)>,
    /// When it started: every event is after.
    born: Instant,
}

impl Service {
    fn start(config: &Path) -> Service {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("gpumetrics"))
            .args(["monitor", config.to_str().unwrap()])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let (tx, events) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let event: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("an event line is JSON ({e}): {line}"));
                if tx.send(event).is_err() {
                    break;
                }
            }
        });
        Service {
            child,
            events,
            seen: Vec::new(),
            born: Instant::now(),
        }
    }

    /// The first event of `channel` named `event` that no earlier wait took, received at
    /// or after `since` (waiting for it): the event and when it came.
    fn wait_since(
        &mut self,
        channel: Option<&str>,
        event: &str,
        since: Instant,
    ) -> (Value, Instant) {
        let matches = |e: &Value| e["event"] == event && e["channel"].as_str() == channel;
        if let Some(entry) = self
            .seen
            .iter_mut()
            .find(|(e, at, taken)| !*taken && *at >= since && matches(e))
        {
            entry.2 = true;
            return (entry.0.clone(), entry.1);
        }
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(e) = self.events.recv_timeout(left) else {
                let seen: Vec<String> = self.seen.iter().map(|(e, _, _)| e.to_string()).collect();
                panic!(
                    "no {event} event of {channel:?} in {PATIENCE:?}; seen:\n{}",
                    seen.join("\n")
                );
            };
            let at = Instant::now();
            let found = matches(&e);
            self.seen.push((e.clone(), at, found));
            if found {
                return (e, at);
            }
        }
    }

    /// [`Service::wait_since`] any time.
    fn wait(&mut self, channel: Option<&str>, event: &str) -> (Value, Instant) {
        self.wait_since(channel, event, self.born)
    }

    fn signal(&self, name: &str) {
        let ok = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -{name}");
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn channel(name: &str, port: u16) -> String {
    format!("[[channel]]\nname = \"{name}\"\ndistorted = \"udp://127.0.0.1:{port}\"\n")
}

fn write_config(path: &PathBuf, prometheus: &str, channels: &[String]) {
    let text = format!(
        "[prometheus]\naddress = \"{prometheus}\"\n\n[defaults]\nbackend = \"cpu\"\n\
         metrics = \"blur,black\"\nwindow = \"1s\"\nsignal-timeout = \"{}s\"\n\n{}",
        SIGNAL_TIMEOUT.as_secs(),
        channels.join("\n")
    );
    std::fs::write(path, text).unwrap();
}

#[test]
fn channels_go_down_come_back_are_added_on_sighup_and_stop_on_sigint() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("monitor.toml");
    let endpoint = format!("127.0.0.1:{}", free_port());
    let ports = [
        free_udp_port(),
        free_udp_port(),
        free_udp_port(),
        free_udp_port(),
    ];
    let names = ["a", "b", "c", "d"];
    let mut senders: Vec<Option<Sender>> = ports
        .iter()
        .zip(["smpte", "ball", "snow", "bar"])
        .map(|(&p, pattern)| Some(sender(p, pattern)))
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    // e's input is no video: it cannot be opened, goes down and is rebuilt with backoff,
    // beside the others.
    let not_video = dir.path().join("not-video.txt");
    std::fs::write(&not_video, "no video here\n").unwrap();
    let e = format!(
        "[[channel]]\nname = \"e\"\ndistorted = \"{}\"\n",
        not_video.display()
    );
    let mut three: Vec<String> = (0..3).map(|i| channel(names[i], ports[i])).collect();
    three.push(e.clone());
    write_config(&config, &endpoint, &three);
    let prometheus = Prometheus::start(&endpoint);
    let mut service = Service::start(&config);
    for name in &names[..3] {
        service.wait(Some(name), "up");
    }
    prometheus.wait_for("gpumetrics_channel_up", |s| {
        s.len() == 4
            && s.iter()
                .all(|(l, v)| *v == if l["channel"] == "e" { 0.0 } else { 1.0 })
    });
    // A channel that runs says its device, as its element's series do; e never chose one.
    let up = prometheus.wait_for("gpumetrics_channel_up", |s| {
        s.iter().filter(|(l, _)| l.contains_key("device")).count() == 3
    });
    let pairs = prometheus.wait_for("gpumetrics_pairs_total{channel=\"a\"}", |s| s.len() == 1);
    for (l, _) in &up {
        match l["channel"].as_str().unwrap() {
            "e" => assert!(!l.contains_key("device"), "{l:?}"),
            "a" => assert_eq!(l["device"], pairs[0].0["device"], "{l:?}"),
            _ => {}
        }
    }
    let (down, _) = service.wait(Some("e"), "down");
    assert!(
        down["reason"].as_str().unwrap().contains("not-video.txt"),
        "{down}"
    );
    prometheus.wait_for("gpumetrics_channel_restarts_total{channel=\"e\"}", |s| {
        s.len() == 1 && s[0].1 >= 1.0
    });
    // The elements' series carry the channel label.
    prometheus.wait_for("gpumetrics_pairs_total{channel=\"b\"}", |s| {
        s.len() == 1 && s[0].1 > 0.0
    });

    // b's sender stops: b is down within signal-timeout + 1 s; a and c go on.
    senders[1] = None;
    let stopped = Instant::now();
    let (down, at) = service.wait(Some("b"), "down");
    assert!(
        at - stopped <= SIGNAL_TIMEOUT + Duration::from_secs(1),
        "down after {:?}: {down}",
        at - stopped
    );
    assert!(
        down["reason"].as_str().unwrap().contains("no signal"),
        "{down}"
    );
    service.wait(Some("b"), "alert");
    prometheus.wait_for("gpumetrics_channel_up{channel=\"b\"}", |s| {
        s.len() == 1 && s[0].1 == 0.0
    });
    prometheus.wait_for(
        "gpumetrics_alerts_total{channel=\"b\",rule=\"no-signal\"}",
        |s| s.len() == 1 && s[0].1 >= 1.0,
    );
    // a and c measured windows meanwhile, and none of them went down.
    for name in ["a", "c"] {
        service.wait_since(Some(name), "window", stopped);
    }

    // b's sender comes back: b is up again, with its rebuilds counted.
    senders[1] = Some(sender(ports[1], "ball"));
    service.wait(Some("b"), "up");
    prometheus.wait_for("gpumetrics_channel_restarts_total{channel=\"b\"}", |s| {
        s.len() == 1 && s[0].1 >= 1.0
    });
    prometheus.wait_for("gpumetrics_channel_up{channel=\"b\"}", |s| {
        s.len() == 1 && s[0].1 == 1.0
    });

    // A fourth channel in the file, and SIGHUP: it starts; the others run on.
    let mut four: Vec<String> = (0..4).map(|i| channel(names[i], ports[i])).collect();
    four.push(e.clone());
    write_config(&config, &endpoint, &four);
    service.signal("HUP");
    let (reloaded, _) = service.wait(None, "reloaded");
    assert_eq!(reloaded["added"], serde_json::json!(["d"]), "{reloaded}");
    assert_eq!(reloaded["removed"], serde_json::json!([]), "{reloaded}");
    assert_eq!(reloaded["changed"], serde_json::json!([]), "{reloaded}");
    service.wait(Some("d"), "up");

    // c removed and a changed, SIGHUP: c stops and its series go; a restarts; b and d run on.
    let mut next: Vec<String> = [0, 1, 3]
        .iter()
        .map(|&i| channel(names[i], ports[i]))
        .collect();
    next[0].push_str("subsample = 2\n");
    next.push(e.clone());
    write_config(&config, &endpoint, &next);
    service.signal("HUP");
    let (reloaded, _) = service.wait(None, "reloaded");
    assert_eq!(reloaded["added"], serde_json::json!([]), "{reloaded}");
    assert_eq!(reloaded["removed"], serde_json::json!(["c"]), "{reloaded}");
    assert_eq!(reloaded["changed"], serde_json::json!(["a"]), "{reloaded}");
    service.wait(Some("a"), "up");
    prometheus.wait_for("gpumetrics_channel_up", |s| {
        let mut names: Vec<&str> = s
            .iter()
            .filter_map(|(l, _)| l["channel"].as_str())
            .collect();
        names.sort();
        names == ["a", "b", "d", "e"]
    });
    prometheus.wait_for("gpumetrics_pairs_total{channel=\"c\"}", |s| s.is_empty());

    // A file refused on reload: said, and the channels run on as they were.
    let good = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{good}window = \"soon\"\n")).unwrap();
    service.signal("HUP");
    let (refused, _) = service.wait(None, "reload-refused");
    assert!(
        refused["error"].as_str().unwrap().contains("window"),
        "{refused}"
    );
    let after = Instant::now();
    for name in ["a", "b", "d"] {
        service.wait_since(Some(name), "window", after);
    }
    std::fs::write(&config, good).unwrap();

    // SIGINT: every channel stops with its summary, and the service exits 0.
    service.signal("INT");
    let (_, _) = service.wait(None, "stopped");
    let status = {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(s) = service.child.try_wait().unwrap() {
                break s;
            }
            assert!(Instant::now() < deadline, "the service did not exit");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    assert_eq!(status.code(), Some(0));
    let all: Vec<Value> = service
        .seen
        .iter()
        .map(|(e, _, _)| e.clone())
        .chain(service.events.iter())
        .collect();
    // Every channel ended with a summary: c when it was removed, a when it changed.
    for name in names {
        assert!(
            all.iter()
                .any(|e| e["channel"] == name && e["event"] == "summary"),
            "no summary of {name}"
        );
        assert!(
            all.iter()
                .any(|e| e["channel"] == name && e["event"] == "stopped"),
            "{name} did not stop"
        );
    }
    for name in ["a", "c", "d"] {
        assert!(
            !all.iter()
                .any(|e| e["channel"] == name && e["event"] == "down"),
            "{name} went down: {all:?}"
        );
    }
    drop(senders);
}

#[test]
fn a_bad_file_is_refused_before_anything_starts_with_its_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("monitor.toml");
    std::fs::write(
        &config,
        "[[channel]]\nname = \"a\"\ndistorted = \"udp://127.0.0.1:5000\"\nwindow = \"soon\"\n",
    )
    .unwrap();
    let out = Command::new(assert_cmd::cargo::cargo_bin("gpumetrics"))
        .args(["monitor", config.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{}:4: window: ", config.display())),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    let check = Command::new(assert_cmd::cargo::cargo_bin("gpumetrics"))
        .args(["monitor", "--check", config.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(check.status.code(), Some(2));
    // The command's help names the service; the service's help says its signals.
    let help = |args: &[&str]| {
        let out = Command::new(assert_cmd::cargo::cargo_bin("gpumetrics"))
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}");
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    assert!(help(&["--help"]).contains("gpumetrics monitor CONFIG"));
    let monitor = help(&["monitor", "--help"]);
    assert!(
        monitor.contains("SIGHUP") && monitor.contains("--check"),
        "{monitor}"
    );
}

/// A channel with `align = "auto"` on a live reference and its distorted copy 1.3 s late
/// (a delaying relay): its `align` event says the offset (within a frame), then it
/// measures; SIGINT stops it with its summary, which counts the frames before the lock.
#[test]
fn a_channel_with_align_auto_locks_on_the_delay() {
    let (reference, distorted) = (free_udp_port(), free_udp_port());
    let relay = common::Relay::start(distorted, Duration::from_secs_f64(common::ALIGN_DELAY));
    let sender = common::twice(reference, relay.port);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("monitor.toml");
    std::fs::write(
        &config,
        format!(
            "[defaults]\nbackend = \"cpu\"\nmetrics = \"psnr\"\nwindow = \"1s\"\n\n[[channel]]\nname = \"al\"\n\
             reference = \"udp://127.0.0.1:{reference}\"\n\
             distorted = \"udp://127.0.0.1:{distorted}\"\nalign = \"auto\"\n"
        ),
    )
    .unwrap();
    let mut service = Service::start(&config);
    let (locked, at) = service.wait(Some("al"), "align");
    assert_eq!(locked["state"], "locked", "{locked}");
    let offset = locked["offset"].as_f64().unwrap();
    assert!(
        (offset - common::ALIGN_DELAY).abs() <= common::ALIGN_SLACK,
        "{locked}"
    );
    assert_eq!(
        locked["offset_frames"].as_i64(),
        Some((offset / common::ALIGN_FRAME).round() as i64)
    );
    service.wait_since(Some("al"), "window", at);
    service.signal("INT");
    let (summary, _) = service.wait(Some("al"), "summary");
    assert!(summary["pairs"].as_u64().unwrap() > 0, "{summary}");
    drop(sender);
}
