// SPDX-License-Identifier: MPL-2.0
//! The files of examples/: monitor.py runs (Debian's /usr/bin/python3 with python3-gi, the
//! plugin cargo built with this test) and prints the element's windows, alerts and summary,
//! ended by --duration and by SIGINT; scores.py and scores.c (built here with `cc` and
//! pkg-config's gstreamer-1.0) print every pair's message and buffer meta, equal, and the
//! summary; grafana-dashboard.json is a dashboard whose queries use only the series the
//! element's Prometheus exporter serves.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

/// Debian's Python, which python3-gi installs into (another python3 on PATH may lack it).
const PYTHON: &str = "/usr/bin/python3";

/// Fails, naming the packages, where PyGObject with GStreamer is not installed.
fn require_pygobject() {
    let out = Command::new(PYTHON)
        .args([
            "-c",
            "import gi; gi.require_version('Gst', '1.0'); from gi.repository import Gst",
        ])
        .output();
    match out {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!(
            "{PYTHON} has no PyGObject with GStreamer: apt-get install python3-gi \
             gir1.2-gstreamer-1.0 (scripts/setup-deps.sh installs them): {}",
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => panic!(
            "{PYTHON} does not run ({e}): apt-get install python3 python3-gi \
             gir1.2-gstreamer-1.0 (scripts/setup-deps.sh installs them)"
        ),
    }
}

/// A directory holding only the plugin cargo built with this test (the cdylib in
/// target/<profile>/deps, next to the test executable), and a registry file for it.
struct Plugin {
    dir: tempfile::TempDir,
}

impl Plugin {
    fn new() -> Plugin {
        let exe = std::env::current_exe().unwrap();
        let name = format!(
            "{}gstgpumetrics{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        );
        let built = exe.parent().unwrap().join(&name);
        assert!(
            built.exists(),
            "{} is missing: cargo builds the plugin's cdylib with this test",
            built.display()
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("plugins")).unwrap();
        std::fs::copy(&built, dir.path().join("plugins").join(&name)).unwrap();
        Plugin { dir }
    }

    fn monitor(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(PYTHON);
        cmd.arg(examples().join("monitor.py"))
            .args(["--backend", "cpu"])
            .args(args);
        self.env(&mut cmd);
        cmd
    }

    /// `cmd` finds this plugin, and only it, in a registry of its own.
    fn env(&self, cmd: &mut Command) {
        cmd.env("GST_PLUGIN_PATH", self.dir.path().join("plugins"))
            .env("GST_REGISTRY", self.dir.path().join("registry.bin"))
            .env_remove("GST_PLUGIN_PATH_1_0")
            .env_remove("GST_REGISTRY_1_0");
    }
}

/// Waits for `child` (its output still piped) up to `limit`; kills it and fails on a hang.
fn finish(mut child: Child, limit: Duration) -> Output {
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "monitor.py still running after {limit:?}, killed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// The pairs of each window line (`window 00:00:01.000–00:00:02.000: 30 pairs, ...`, or
/// `1 pair`).
fn window_pairs(stdout: &str) -> Vec<u64> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("window ")?.split_once(": "))
        .map(|(_, rest)| {
            rest.split(" pair")
                .next()
                .unwrap()
                .parse()
                .unwrap_or_else(|_| panic!("{stdout}"))
        })
        .collect()
}

/// The pairs of the summary line (`summary: 97 pairs, psnr-y 22.066`).
fn summary_pairs(stdout: &str) -> u64 {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("summary: "))
        .unwrap_or_else(|| panic!("no summary line:\n{stdout}"));
    line.split(" pairs").next().unwrap().parse().unwrap()
}

/// What the default sources give: the distorted stream starts at 100 kbit/s, far below
/// 32 dB, so the default rule `psnr-y<32:500ms` is raised half a second in.
fn check_run(stdout: &str, stderr: &str, min_windows: usize) {
    let pairs = window_pairs(stdout);
    assert!(pairs.len() >= min_windows, "{stdout}\n{stderr}");
    assert!(pairs[0] > 0, "{stdout}");
    // Every pair in one window: the last one closed at EOS.
    assert_eq!(pairs.iter().sum::<u64>(), summary_pairs(stdout), "{stdout}");
    let first = stdout.lines().next().unwrap();
    assert!(
        first.starts_with("window 00:00:0") && first.contains(", psnr-y "),
        "{stdout}"
    );
    let raised: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("ALERT raised psnr-y<32:500ms: psnr-y = "))
        .collect();
    assert_eq!(raised.len(), 1, "{stderr}");
    assert!(stderr.contains("ending: EOS sent"), "{stderr}");
}

#[test]
fn monitor_py_prints_windows_and_alerts_and_ends_cleanly() {
    require_pygobject();
    let plugin = Plugin::new();

    // --duration: EOS after 3 s of the run.
    let child = plugin
        .monitor(&["--duration", "3"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = finish(child, Duration::from_secs(120));
    let (so, se) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "{}\n{so}\n{se}", out.status);
    check_run(&so, &se, 3);

    // Ctrl-C after the first window: the same clean end.
    let mut child = plugin
        .monitor(&[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, lines) = mpsc::channel();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let reader = std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let first = match lines.recv_timeout(Duration::from_secs(120)) {
        Ok(line) => line,
        Err(e) => {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "no window line ({e}):\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    };
    assert!(first.starts_with("window "), "{first}");
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = finish(child, Duration::from_secs(60));
    reader.join().unwrap();
    let so = std::iter::once(first)
        .chain(lines.iter())
        .collect::<Vec<_>>()
        .join("\n");
    let se = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{}\n{so}\n{se}", out.status);
    check_run(&so, &se, 2);
}

/// What scores.py and scores.c print for `frames` pairs of PSNR and SSIM: a `frame N:` line
/// (the message) and a `meta N:` line (the buffer meta) per pair with the same scores, then
/// the summary with the pooled PSNR.
fn check_scores(stdout: &str, frames: usize) {
    let records = |label: &str| -> Vec<String> {
        stdout
            .lines()
            .filter_map(|l| l.strip_prefix(label))
            .map(String::from)
            .collect()
    };
    let (messages, metas) = (records("frame "), records("meta "));
    assert_eq!(messages.len(), frames, "{stdout}");
    // The meta carries the message's scores (the order of the two threads' lines varies).
    let mut sorted = metas.clone();
    sorted.sort();
    let mut want = messages.clone();
    want.sort();
    assert_eq!(sorted, want, "{stdout}");
    for (i, m) in messages.iter().enumerate() {
        assert!(m.starts_with(&format!("{i}: psnr-y ")), "{m}");
        assert!(m.contains(", ssim "), "{m}");
    }
    assert!(
        stdout.contains(&format!("summary: {frames} pairs")),
        "{stdout}"
    );
    let psnr = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("psnr-y: mean "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(psnr.contains(", pooled "), "{psnr}");
    let ssim = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("ssim: mean "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(!ssim.contains("pooled"), "{ssim}");
}

fn run_example(mut cmd: Command, what: &str) -> String {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let out = finish(child, Duration::from_secs(120));
    let (so, se) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "{what}: {}\n{so}\n{se}", out.status);
    so
}

#[test]
fn scores_py_prints_messages_meta_and_summary() {
    require_pygobject();
    let plugin = Plugin::new();
    let mut cmd = Command::new(PYTHON);
    cmd.arg(examples().join("scores.py"))
        .args(["--frames", "8", "--backend", "cpu"]);
    plugin.env(&mut cmd);
    check_scores(&run_example(cmd, "scores.py"), 8);
}

#[test]
fn scores_c_builds_and_prints_messages_meta_and_summary() {
    let plugin = Plugin::new();
    let exe = plugin.dir.path().join("scores");
    // As its header says: cc with pkg-config's flags for gstreamer-1.0.
    let build = Command::new("sh")
        .arg("-c")
        .arg(r#"cc -Wall -Wextra -Werror -o "$1" "$2" $(pkg-config --cflags --libs gstreamer-1.0)"#)
        .arg("sh")
        .arg(&exe)
        .arg(examples().join("scores.c"))
        .output()
        .expect("sh runs");
    assert!(
        build.status.success(),
        "cc examples/scores.c (needs gcc, pkg-config and libgstreamer1.0-dev: \
         scripts/setup-deps.sh installs them): {}",
        String::from_utf8_lossy(&build.stderr)
    );
    let mut cmd = Command::new(&exe);
    cmd.args(["8", "psnr+ssim", "cpu"]);
    plugin.env(&mut cmd);
    check_scores(&run_example(cmd, "scores.c"), 8);
}

/// The series the element's exporter serves (`prometheus-address`), with their labels
/// (`channel` where the element has one, as `gpumetrics monitor` gives it), and the
/// series `gpumetrics monitor` adds per channel.
const SERIES: &[(&str, &[&str])] = &[
    ("gpumetrics_pairs_total", &["element", "channel"]),
    ("gpumetrics_unmatched_total", &["element", "channel", "pad"]),
    ("gpumetrics_skipped_total", &["element", "channel"]),
    ("gpumetrics_score", &["element", "channel", "field"]),
    ("gpumetrics_window_mean", &["element", "channel", "field"]),
    ("gpumetrics_alert_active", &["element", "channel", "rule"]),
    ("gpumetrics_alerts_total", &["element", "channel", "rule"]),
    (
        "gpumetrics_scoring_seconds_bucket",
        &["element", "channel", "le"],
    ),
    ("gpumetrics_scoring_seconds_sum", &["element", "channel"]),
    ("gpumetrics_scoring_seconds_count", &["element", "channel"]),
    ("gpumetrics_channel_up", &["channel"]),
    ("gpumetrics_channel_restarts_total", &["channel"]),
];

/// The `gpumetrics_*` names in a PromQL expression.
fn series_in(expr: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(at) = rest.find("gpumetrics_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        out.push(&tail[..end]);
        rest = &tail[end..];
    }
    out
}

/// The label names a PromQL expression uses: in `{...}` selectors and in `by (...)`.
fn labels_in(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(open) = rest.find(['{', '(']) {
        let by = rest[..open].trim_end().ends_with("by");
        let close = if rest.as_bytes()[open] == b'{' {
            '}'
        } else {
            ')'
        };
        let inner = &rest[open + 1..];
        let Some(end) = inner.find(close) else { break };
        if close == '}' {
            for matcher in inner[..end].split(',') {
                let name = matcher.split(['=', '!', '~']).next().unwrap().trim();
                if !name.is_empty() {
                    out.push(name.to_string());
                }
            }
        } else if by {
            out.extend(inner[..end].split(',').map(|l| l.trim().to_string()));
        }
        rest = &rest[open + 1..];
    }
    out
}

/// Every panel, nested ones (in rows) included.
fn panels(v: &Value) -> Vec<&Value> {
    let mut out = Vec::new();
    for p in v["panels"].as_array().into_iter().flatten() {
        out.push(p);
        out.extend(panels(p));
    }
    out
}

#[test]
fn grafana_dashboard_queries_only_the_exporters_series() {
    let path = examples().join("grafana-dashboard.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let dashboard: Value = serde_json::from_str(&text).unwrap();
    assert!(dashboard["title"].as_str().is_some_and(|t| !t.is_empty()));

    // A data-source variable and an element variable (from the exporter's series).
    let vars = dashboard["templating"]["list"].as_array().unwrap();
    let var = |name: &str| {
        vars.iter()
            .find(|v| v["name"] == name)
            .unwrap_or_else(|| panic!("no variable {name}"))
    };
    let ds = var("datasource");
    assert_eq!(
        (&ds["type"], &ds["query"]),
        (&"datasource".into(), &"prometheus".into())
    );
    let channel = var("channel");
    let q = channel["query"]["query"].as_str().unwrap();
    assert_eq!(q, "label_values(gpumetrics_channel_up, channel)");
    assert_eq!(channel["allValue"], ".*");
    let element = var("element");
    assert_eq!(element["type"], "query");
    let q = element["query"]
        .as_str()
        .or_else(|| element["query"]["query"].as_str())
        .unwrap();
    assert!(
        q.starts_with("label_values(") && q.ends_with(", element)"),
        "{q}"
    );
    for s in series_in(q) {
        assert!(SERIES.iter().any(|(n, _)| *n == s), "{q}: {s}");
    }

    let mut used = std::collections::HashSet::new();
    let mut queries = 0;
    for panel in panels(&dashboard) {
        if panel["type"] == "row" {
            continue;
        }
        let title = panel["title"].as_str().unwrap_or_default();
        assert_eq!(panel["datasource"]["uid"], "${datasource}", "{title}");
        let targets = panel["targets"]
            .as_array()
            .unwrap_or_else(|| panic!("{title}"));
        assert!(!targets.is_empty(), "{title}");
        for t in targets {
            let expr = t["expr"].as_str().unwrap_or_else(|| panic!("{title}: {t}"));
            queries += 1;
            let names = series_in(expr);
            assert!(!names.is_empty(), "{title}: {expr}");
            let mut allowed: Vec<&str> = vec!["le"];
            for n in names {
                let (_, labels) = SERIES.iter().find(|(s, _)| *s == n).unwrap_or_else(|| {
                    panic!("{title}: {expr}: `{n}` is no series of the exporter")
                });
                allowed.extend(labels.iter());
                used.insert(n);
            }
            for l in labels_in(expr) {
                assert!(
                    allowed.contains(&l.as_str()),
                    "{title}: {expr}: label `{l}`"
                );
            }
            // Every query follows the channel selector; an element's series the element's.
            assert!(expr.contains("channel=~\"$channel\""), "{title}: {expr}");
            if !expr.contains("gpumetrics_channel_") {
                assert!(expr.contains("element=~\"$element\""), "{title}: {expr}");
            }
        }
    }
    assert!(queries >= 8, "{queries}");
    // Every series is on the dashboard (the histogram through its buckets).
    for (s, _) in SERIES {
        if !s.ends_with("_sum") && !s.ends_with("_count") {
            assert!(used.contains(s), "no panel shows {s}");
        }
    }
    // The latency quantiles come from the histogram's buckets.
    assert!(text.contains("histogram_quantile(0.5,") && text.contains("histogram_quantile(0.99,"));
}

#[test]
fn the_monitor_examples_are_a_good_file_good_rules_and_a_unit_that_runs_it() {
    // monitor.toml: the service accepts it.
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("gpumetrics"))
        .args(["monitor", "--check"])
        .arg(examples().join("monitor.toml"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // prometheus-alerts.yml: Prometheus' own check, over the exporter's series only.
    let rules = examples().join("prometheus-alerts.yml");
    let check = std::process::Command::new("promtool")
        .args(["check", "rules"])
        .arg(&rules)
        .output()
        .expect("promtool runs (Debian's prometheus package: scripts/setup-deps.sh installs it)");
    assert!(
        check.status.success(),
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    let text = std::fs::read_to_string(&rules).unwrap();
    let exprs: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("expr:"))
        .collect();
    assert!(exprs.len() >= 3, "{text}");
    for expr in &exprs {
        let names = series_in(expr);
        assert!(!names.is_empty(), "{expr}");
        for n in names {
            assert!(SERIES.iter().any(|(s, _)| *s == n), "{expr}: {n}");
        }
    }
    assert!(
        exprs
            .iter()
            .any(|e| e.contains("gpumetrics_channel_up == 0"))
    );
    // The unit runs the service, reloads it with SIGHUP, and leaves a refused file alone.
    let unit = std::fs::read_to_string(examples().join("gpumetrics-monitor.service")).unwrap();
    let key = |k: &str| {
        unit.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .unwrap_or_else(|| panic!("no {k}= in the unit"))
            .to_string()
    };
    assert!(key("ExecStart").ends_with("gpumetrics monitor /etc/gpumetrics/monitor.toml"));
    assert!(key("ExecReload").contains("-HUP"));
    assert_eq!(key("Restart"), "on-failure");
    assert_eq!(key("RestartPreventExitStatus"), "2");
}

/// examples/heatmap.sh: the distorted video with gpumetrics' SSIM heat map blended over it
/// (`map=ssim map-style=heat` into `compositor`) written to a Matroska file, which decodes
/// to every frame, and differs from the same video without the map where the JPEG hurt.
#[test]
fn heatmap_sh_writes_a_video_that_decodes() {
    let plugin = Plugin::new();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("heat.mkv");
    let mut cmd = Command::new("sh");
    cmd.arg(examples().join("heatmap.sh"))
        .arg(&out)
        .args(["12", "cpu"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    plugin.env(&mut cmd);
    let run = finish(cmd.spawn().unwrap(), Duration::from_secs(120));
    assert!(
        run.status.success(),
        "heatmap.sh: {}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    // Decode it to raw frames with FFmpeg: 12 frames of 320x240.
    let decoded = common::decode_rgb24(&out);
    let frame = 320 * 240 * 3;
    assert_eq!(decoded.len(), 12 * frame);
    // The SMPTE bars' bottom-right noise, which the JPEG smears, is tinted by the map: its
    // pixels are greener on average than its grey noise would be.
    let f = &decoded[..frame];
    let (mut g, mut rb) = (0u64, 0u64);
    for y in 190..240 {
        for x in 250..320 {
            let p = &f[(y * 320 + x) * 3..];
            g += p[1] as u64;
            rb += (p[0] as u64 + p[2] as u64) / 2;
        }
    }
    assert!(
        g > rb + 20 * 50 * 70,
        "no heat over the noise: g {g}, r/b {rb}"
    );
}
