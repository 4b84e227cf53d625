// SPDX-License-Identifier: MPL-2.0
//! `prometheus-address` against a real Prometheus server: each test starts
//! /usr/bin/prometheus (Debian's `prometheus`, which scripts/setup-deps.sh installs) on a free
//! loopback port with a temporary storage directory and a scrape config pointing at the
//! element's endpoint every second, runs live pipelines, and reads the series back through
//! Prometheus' query API (`/api/v1/query`), polling until they arrive or a deadline passes.
//! Without the binary the tests fail saying how to install it: a check that cannot run is
//! not a pass.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::init;
use gst::prelude::*;

const PROMETHEUS: &str = "/usr/bin/prometheus";

/// How long Prometheus may take to start, scrape and answer (a loaded CI machine).
const PATIENCE: Duration = Duration::from_secs(60);

/// A loopback port that was free a moment ago.
fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// GET `path` from `address` over HTTP/1.0 (so that the reply is not chunked): the status
/// code and the body.
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
        .unwrap_or_else(|| panic!("GET {address}{path}: no status in {head:?}"));
    Ok((status, body.to_string()))
}

/// `text` percent-encoded for a query string.
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// One sample of an instant query: its labels (`__name__` included) and its value as
/// Prometheus writes it (`"12.5"`, `"+Inf"`).
#[derive(Debug, Clone)]
struct Sample {
    labels: BTreeMap<String, String>,
    value: String,
}

impl Sample {
    fn label(&self, name: &str) -> &str {
        self.labels.get(name).map_or("", String::as_str)
    }

    /// The value as a number (Go's spelling of the infinities included).
    fn number(&self) -> f64 {
        match self.value.as_str() {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v
                .parse()
                .unwrap_or_else(|_| panic!("not a number: {self:?}")),
        }
    }
}

/// A Prometheus server of this test, killed (and its directory removed) when dropped, also
/// when the test panics.
struct Prometheus {
    child: Child,
    dir: PathBuf,
    address: String,
}

impl Prometheus {
    /// Starts Prometheus on a free loopback port, scraping `targets` every second, and
    /// waits until it is ready.
    fn start(targets: &[&str]) -> Prometheus {
        assert!(
            std::path::Path::new(PROMETHEUS).exists(),
            "{PROMETHEUS} is missing: this test needs Debian's prometheus package; run \
             scripts/setup-deps.sh (or apt-get install prometheus)"
        );
        let port = free_port();
        let dir = std::env::temp_dir().join(format!(
            "gpumetrics-prometheus-{}-{port}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let targets = targets
            .iter()
            .map(|t| format!("'{t}'"))
            .collect::<Vec<_>>()
            .join(", ");
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
                 scrape_configs:\n  - job_name: gpumetrics\n    static_configs:\n      \
                 - targets: [{targets}]\n"
            ),
        )
        .unwrap();
        let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
        let address = format!("127.0.0.1:{port}");
        let child = Command::new(PROMETHEUS)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={address}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {PROMETHEUS}: {e}"));
        let mut server = Prometheus {
            child,
            dir,
            address,
        };
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Ok((200, _)) = http_get(&server.address, "/-/ready") {
                return server;
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("prometheus exited ({status}):\n{}", server.log());
            }
            assert!(
                Instant::now() < deadline,
                "prometheus not ready after {PATIENCE:?}:\n{}",
                server.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("prometheus.log")).unwrap_or_default()
    }

    /// The samples of the instant query `promql`.
    fn query(&self, promql: &str) -> Vec<Sample> {
        let path = format!("/api/v1/query?query={}", percent_encode(promql));
        let (status, body) = http_get(&self.address, &path).expect("prometheus answers");
        assert_eq!(status, 200, "{promql}: {body}");
        let json: serde_json::Value = serde_json::from_str(&body).expect("a JSON reply");
        assert_eq!(json["status"], "success", "{promql}: {body}");
        json["data"]["result"]
            .as_array()
            .expect("a vector")
            .iter()
            .map(|r| Sample {
                labels: r["metric"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                    .collect(),
                value: r["value"][1].as_str().unwrap().to_string(),
            })
            .collect()
    }

    /// Queries `promql` until `done` accepts the samples (then returns them), failing
    /// with the last answer and the scrape targets' health after [`PATIENCE`].
    fn wait_for(&self, promql: &str, done: impl Fn(&[Sample]) -> bool) -> Vec<Sample> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let samples = self.query(promql);
            if done(&samples) {
                return samples;
            }
            if Instant::now() > deadline {
                let targets = http_get(&self.address, "/api/v1/targets")
                    .map(|(_, b)| b)
                    .unwrap_or_default();
                panic!(
                    "{promql}: not there after {PATIENCE:?}; last answer {samples:#?}\n\
                     targets: {targets}\nprometheus log:\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A playing pipeline, set to NULL when dropped (also when the test panics).
struct Playing(gst::Pipeline);

impl Playing {
    /// A live pipeline of one `gpumetrics` named `name` on `address`: 160x120 colour bars
    /// (`smpte75`, the same in every frame) against the same bars mirrored (`flip`: finite
    /// PSNR) or unchanged (+inf), with `props`.
    fn start(name: &str, address: &str, flip: bool, props: &[(&str, &str)]) -> Playing {
        init();
        let dist = if flip {
            "videoflip video-direction=horiz"
        } else {
            "identity"
        };
        let pipeline = gst::parse::launch(&format!(
            "videotestsrc is-live=true pattern=smpte75 \
               ! video/x-raw,format=I420,width=160,height=120,framerate=30/1 ! tee name=t \
             t. ! queue ! {name}.ref_sink \
             t. ! queue ! {dist} ! {name}.dist_sink \
             gpumetrics name={name} backend=cpu metrics=psnr+ssim ! fakesink"
        ))
        .unwrap()
        .downcast::<gst::Pipeline>()
        .unwrap();
        let element = pipeline.by_name(name).unwrap();
        element.set_property("prometheus-address", address);
        for (property, value) in props {
            element.set_property_from_str(property, value);
        }
        let playing = Playing(pipeline);
        let started = playing.0.set_state(gst::State::Playing);
        playing.assert_no_error();
        started.expect("the pipeline plays");
        playing
    }

    fn assert_no_error(&self) {
        let bus = self.0.bus().unwrap();
        while let Some(msg) = bus.pop_filtered(&[gst::MessageType::Error]) {
            if let gst::MessageView::Error(e) = msg.view() {
                panic!("pipeline error: {} ({:?})", e.error(), e.debug());
            }
        }
    }

    fn stop(self) {
        self.assert_no_error();
        // Drop sets NULL.
    }
}

impl Drop for Playing {
    fn drop(&mut self) {
        let _ = self.0.set_state(gst::State::Null);
    }
}

/// The samples of `samples` whose label `name` is `value`.
fn with<'a>(samples: &'a [Sample], name: &str, value: &str) -> Vec<&'a Sample> {
    samples.iter().filter(|s| s.label(name) == value).collect()
}

fn the<'a>(samples: &'a [Sample], name: &str, value: &str) -> &'a Sample {
    match with(samples, name, value)[..] {
        [s] => s,
        _ => panic!("one sample with {name}={value:?} expected: {samples:#?}"),
    }
}

#[track_caller]
fn assert_refused(address: &str) {
    match TcpStream::connect(address) {
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused, "{e}"),
        Ok(_) => panic!("{address} still accepts connections"),
    }
}

#[test]
fn a_live_element_is_scraped_with_its_series_labels_and_values() {
    let address = format!("127.0.0.1:{}", free_port());
    let pipeline = Playing::start(
        "live",
        &address,
        true,
        &[("window", "500000000"), ("alerts", "psnr-y<1000,ssim>2")],
    );
    let prometheus = Prometheus::start(&[&address]);

    // Pairs: counted, and the count grows from one scrape to a later one.
    let first = prometheus.wait_for("gpumetrics_pairs_total", |s| {
        s.len() == 1 && s[0].number() > 0.0
    });
    let s = &first[0];
    assert_eq!(
        (s.label("element"), s.label("job"), s.label("instance")),
        ("live", "gpumetrics", address.as_str()),
        "{s:?}"
    );
    let before = s.number();
    prometheus.wait_for(r#"gpumetrics_pairs_total{element="live"}"#, |s| {
        s.len() == 1 && s[0].number() > before
    });

    // The latest pair's fields: every field of psnr and ssim, PSNR finite (flipped bars).
    let scores = prometheus.wait_for(r#"gpumetrics_score{element="live"}"#, |s| s.len() >= 8);
    let fields: Vec<&str> = scores.iter().map(|s| s.label("field")).collect();
    for field in [
        "psnr-y", "psnr-u", "psnr-v", "psnr-avg", "mse-y", "ssim-y", "ssim",
    ] {
        assert!(fields.contains(&field), "{field} missing: {scores:#?}");
    }
    let psnr = the(&scores, "field", "psnr-y").number();
    assert!(psnr.is_finite() && psnr > 0.0, "{scores:#?}");
    let ssim = the(&scores, "field", "ssim").number();
    assert!(ssim > 0.0 && ssim < 1.0, "{scores:#?}");

    // The last complete 500 ms window: the same static content, so the same mean.
    let means = prometheus.wait_for(r#"gpumetrics_window_mean{element="live"}"#, |s| {
        !with(s, "field", "psnr-y").is_empty()
    });
    let mean = the(&means, "field", "psnr-y").number();
    assert!((mean - psnr).abs() < 1e-9 * psnr, "{mean} vs {psnr}");

    // The rules from the start, the one that fires at 1, raised once.
    let active = prometheus.wait_for(r#"gpumetrics_alert_active{element="live"}"#, |s| {
        s.len() == 2
            && with(s, "rule", "psnr-y<1000")
                .iter()
                .any(|s| s.value == "1")
    });
    assert_eq!(the(&active, "rule", "ssim>2").value, "0", "{active:#?}");
    let raised = prometheus.query(r#"gpumetrics_alerts_total{element="live"}"#);
    assert_eq!(
        the(&raised, "rule", "psnr-y<1000").value,
        "1",
        "{raised:#?}"
    );
    assert_eq!(the(&raised, "rule", "ssim>2").value, "0", "{raised:#?}");

    // Frames without a partner per pad (none expected from one tee), and no subsampling.
    let unmatched = prometheus.query(r#"gpumetrics_unmatched_total{element="live"}"#);
    for pad in ["ref_sink", "dist_sink"] {
        assert!(the(&unmatched, "pad", pad).number() >= 0.0);
    }
    let skipped = prometheus.query(r#"gpumetrics_skipped_total{element="live"}"#);
    assert_eq!(the(&skipped, "element", "live").value, "0", "{skipped:#?}");

    // The scoring-time histogram: every scored pair observed, each within its buckets.
    // One query, so that counts, buckets and sum are of one scrape.
    let histogram = prometheus
        .query(r#"{__name__=~"gpumetrics_scoring_seconds_(count|sum|bucket)",element="live"}"#);
    let series = |name: &str| -> Vec<&Sample> {
        let name = format!("gpumetrics_scoring_seconds_{name}");
        histogram
            .iter()
            .filter(|s| s.label("__name__") == name)
            .collect()
    };
    let count = match series("count")[..] {
        [c] => c.number(),
        _ => panic!("one count expected: {histogram:#?}"),
    };
    assert!(count > 0.0, "{histogram:#?}");
    let buckets = series("bucket");
    assert_eq!(buckets.len(), 14, "{buckets:#?}");
    // Cumulative counts by upper bound (`le` as a number: its spelling is the scraper's).
    let le = |bound: f64| {
        let b = buckets.iter().find(|s| {
            let v = s.label("le");
            (if v == "+Inf" {
                f64::INFINITY
            } else {
                v.parse().unwrap()
            }) == bound
        });
        b.unwrap_or_else(|| panic!("no bucket le={bound}: {buckets:#?}"))
            .number()
    };
    assert!(
        le(0.0001) <= le(1.0) && le(1.0) <= le(f64::INFINITY),
        "{buckets:#?}"
    );
    assert_eq!(le(f64::INFINITY), count, "{buckets:#?}");
    assert!(
        matches!(series("sum")[..], [s] if s.number() > 0.0),
        "{histogram:#?}"
    );

    eprintln!(
        "seen: pairs {before} then more, psnr-y {psnr}, window mean {mean}, ssim {ssim}, \
         {count} scoring times"
    );

    // The element stops: its endpoint goes, the port is free.
    pipeline.stop();
    assert_refused(&address);
}

#[test]
fn elements_of_one_process_share_one_endpoint_until_the_last_one_stops() {
    let address = format!("127.0.0.1:{}", free_port());
    let flipped = Playing::start("flipped", &address, true, &[]);
    let same = Playing::start("same", &address, false, &[]);
    let prometheus = Prometheus::start(&[&address]);

    // One target, both elements' series in it.
    let pairs = prometheus.wait_for("gpumetrics_pairs_total", |s| {
        s.len() == 2 && s.iter().all(|s| s.number() > 0.0)
    });
    for element in ["flipped", "same"] {
        let series = the(&pairs, "element", element);
        assert_eq!(series.label("instance"), address);
        // Where each element measures: backend=cpu.
        assert_eq!(series.label("device"), "cpu");
    }
    let psnr = prometheus.wait_for(r#"gpumetrics_score{field="psnr-y"}"#, |s| s.len() == 2);
    assert_eq!(the(&psnr, "element", "same").value, "+Inf", "{psnr:#?}");
    assert!(the(&psnr, "element", "flipped").number().is_finite());

    // One stops: the endpoint stays for the other, without the series of the one gone.
    flipped.stop();
    let (status, body) = http_get(&address, "/metrics").expect("the endpoint stays");
    assert_eq!(status, 200, "{body}");
    assert!(!body.contains("element=\"flipped\""), "{body}");
    assert!(
        body.contains("gpumetrics_pairs_total{element=\"same\",device=\"cpu\"}"),
        "{body}"
    );
    let before = the(&pairs, "element", "same").number();
    prometheus.wait_for("gpumetrics_pairs_total", |s| {
        s.len() == 1 && s[0].label("element") == "same" && s[0].number() > before
    });

    // The last one stops: the endpoint goes.
    same.stop();
    assert_refused(&address);
}

#[test]
fn a_port_another_process_listens_on_fails_the_start_naming_the_address() {
    // Prometheus is the other process: its own port.
    let prometheus = Prometheus::start(&[]);
    let address = prometheus.address.clone();
    let run = common::run(&format!(
        "videotestsrc num-buffers=2 ! video/x-raw,format=I420,width=64,height=48 ! tee name=t \
         t. ! queue ! m.ref_sink t. ! queue ! m.dist_sink \
         gpumetrics name=m backend=cpu prometheus-address={address} ! fakesink"
    ));
    let (msg, _) = run.error.expect("the start fails");
    assert!(
        msg.contains(&format!("prometheus-address '{address}'")) && msg.contains("in use"),
        "{msg}"
    );
    assert!(run.frames.is_empty(), "{:?}", run.frames);
    // Prometheus still serves its port.
    assert_eq!(http_get(&address, "/-/ready").unwrap().0, 200);
}
