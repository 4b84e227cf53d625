// SPDX-License-Identifier: MPL-2.0
//! Shared helpers of the element tests: plugin registration, pipeline runner that collects
//! the element's messages and output buffers, synthetic frames.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

use gst::prelude::*;
use gstgpumetrics::message::{FrameScores, Summary};

pub fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        gst::init().unwrap();
        gstgpumetrics::plugin_register_static().expect("register gpumetrics plugin");
    });
}

/// What a pipeline run produced.
#[derive(Debug, Default)]
pub struct Run {
    /// `gpumetrics` messages in posting order.
    pub frames: Vec<FrameScores>,
    /// `gpumetrics-summary` messages.
    pub summaries: Vec<Summary>,
    /// `gpumetrics-event` messages (black and freeze intervals).
    pub events: Vec<gstgpumetrics::message::EventRecord>,
    /// First error: (message, debug).
    pub error: Option<(String, String)>,
    /// Element warnings of the gpumetrics element, in posting order.
    pub warnings: Vec<String>,
    /// Buffers that reached the appsink named `out`, if there is one.
    pub out: Vec<gst::Buffer>,
    /// Caps of the appsink named `out` at the end.
    pub out_caps: Option<gst::Caps>,
    pub eos: bool,
}

impl Run {
    pub fn summary(&self) -> &Summary {
        assert_eq!(
            self.summaries.len(),
            1,
            "exactly one summary expected: {self:#?}"
        );
        &self.summaries[0]
    }

    pub fn expect_ok(&self) -> &Self {
        assert!(self.error.is_none(), "pipeline error: {:?}", self.error);
        assert!(self.eos, "pipeline did not reach EOS");
        self
    }
}

/// Runs `desc` to EOS or error (or `timeout`), calling `feed` once the pipeline is PLAYING
/// (e.g. to push into appsrc elements). Collects messages of the element and the buffers of
/// an appsink named `out`.
/// Backend the tests run on: `cpu`, or `$GPUMETRICS_TEST_BACKEND` (e.g. `cuda` on a GPU
/// machine, to check that both backends give the numbers the tests expect).
pub fn test_backend() -> String {
    std::env::var("GPUMETRICS_TEST_BACKEND").unwrap_or_else(|_| "cpu".into())
}

/// For a GPU-only (`#[ignore]`d) test: the GstCuda API, or a failure saying why it is
/// unusable, so that such a test run without CUDA fails instead of passing having run nothing.
#[track_caller]
pub fn require_gstcuda() -> &'static gstgpumetrics::gstcuda::Api {
    init();
    gstgpumetrics::gstcuda::api()
        .unwrap_or_else(|why| panic!("GPU-only test: GstCuda is unusable here: {why}"))
}

pub fn run_with(
    desc: &str,
    timeout: Duration,
    feed: impl FnOnce(&gst::Pipeline) + Send + 'static,
) -> Run {
    run_prepared(desc, timeout, |_| {}, feed)
}

/// [`run_with`], calling `setup` on the pipeline before it starts (e.g. to add pad probes).
pub fn run_prepared(
    desc: &str,
    timeout: Duration,
    setup: impl FnOnce(&gst::Pipeline),
    feed: impl FnOnce(&gst::Pipeline) + Send + 'static,
) -> Run {
    init();
    let desc = &desc.replace("backend=cpu", &format!("backend={}", test_backend()));
    let pipeline = gst::parse::launch(desc)
        .unwrap_or_else(|e| panic!("parse {desc}: {e}"))
        .downcast::<gst::Pipeline>()
        .unwrap();
    let out = Arc::new(Mutex::new(Vec::new()));
    if let Some(sink) = pipeline.by_name("out") {
        let sink = sink.downcast::<gst_app::AppSink>().unwrap();
        sink.set_property("sync", false);
        let out = out.clone();
        sink.set_callbacks(
            gst_app::AppSinkCallbacks::builder()
                .new_sample(move |s| {
                    let sample = s.pull_sample().map_err(|_| gst::FlowError::Eos)?;
                    out.lock().unwrap().push(sample.buffer_owned().unwrap());
                    Ok(gst::FlowSuccess::Ok)
                })
                .build(),
        );
    }
    setup(&pipeline);
    let bus = pipeline.bus().unwrap();
    // A failing state change posts its error on the bus, collected below.
    let _ = pipeline.set_state(gst::State::Playing);
    let feeder = {
        let p = pipeline.clone();
        std::thread::spawn(move || feed(&p))
    };
    let mut run = Run::default();
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let Some(msg) = bus.timed_pop(gst::ClockTime::from_mseconds(left.as_millis() as u64))
        else {
            break;
        };
        if let Some(f) = FrameScores::from_message(&msg) {
            run.frames.push(f);
            continue;
        }
        if let Some(s) = Summary::from_message(&msg) {
            run.summaries.push(s);
            continue;
        }
        if let Some(e) = gstgpumetrics::message::EventRecord::from_message(&msg) {
            run.events.push(e);
            continue;
        }
        match msg.view() {
            gst::MessageView::Eos(_) => {
                run.eos = true;
                break;
            }
            gst::MessageView::Warning(w) if w.src().is_some_and(|s| s.name() == "m") => {
                run.warnings.push(w.error().to_string());
            }
            gst::MessageView::Error(e) => {
                run.error = Some((
                    e.error().to_string(),
                    e.debug().map(|d| d.to_string()).unwrap_or_default(),
                ));
                break;
            }
            _ => {}
        }
    }
    if let Some(sink) = pipeline.by_name("out") {
        run.out_caps = sink.static_pad("sink").unwrap().current_caps();
    }
    // READY first: a summary posted on stop is collected before NULL flushes the bus.
    let _ = pipeline.set_state(gst::State::Ready);
    // Also the pairs measured after an error, which must not exist.
    while let Some(msg) = bus.pop() {
        if let Some(s) = Summary::from_message(&msg) {
            run.summaries.push(s);
        } else if let Some(f) = FrameScores::from_message(&msg) {
            run.frames.push(f);
        }
    }
    pipeline.set_state(gst::State::Null).unwrap();
    let _ = feeder.join();
    run.out = std::mem::take(&mut *out.lock().unwrap());
    run
}

pub fn run(desc: &str) -> Run {
    run_with(desc, Duration::from_secs(30), |_| {})
}

pub const MS: u64 = 1_000_000;

/// A solid I420 frame (w x h) with plane values y, u, v, at `pts_ms` lasting `dur_ms`.
pub fn solid_i420(w: u32, h: u32, yuv: [u8; 3], pts_ms: u64, dur_ms: u64) -> gst::Buffer {
    init();
    let info = gst_video::VideoInfo::builder(gst_video::VideoFormat::I420, w, h)
        .build()
        .unwrap();
    let mut buf = gst::Buffer::with_size(info.size()).unwrap();
    {
        let b = buf.get_mut().unwrap();
        b.set_pts(gst::ClockTime::from_nseconds(pts_ms * MS));
        b.set_duration(gst::ClockTime::from_nseconds(dur_ms * MS));
        let mut map = b.map_writable().unwrap();
        let data = map.as_mut_slice();
        for (p, value) in yuv.iter().enumerate() {
            let start = info.offset()[p];
            let end = if p < 2 {
                info.offset()[p + 1]
            } else {
                info.size()
            };
            data[start..end].fill(*value);
        }
    }
    buf
}

pub fn i420_caps(w: u32, h: u32, fps: i32) -> String {
    format!("video/x-raw,format=I420,width={w},height={h},framerate={fps}/1")
}

/// Pushes `buffers` into the appsrc `name` of `pipeline`, then EOS.
pub fn push_all(pipeline: &gst::Pipeline, name: &str, buffers: Vec<gst::Buffer>) {
    let src = pipeline
        .by_name(name)
        .unwrap()
        .downcast::<gst_app::AppSrc>()
        .unwrap();
    for b in buffers {
        if src.push_buffer(b).is_err() {
            return;
        }
    }
    let _ = src.end_of_stream();
}

/// A pipeline with two appsrc (`ref`, `dist`) of the given caps into gpumetrics (name `m`,
/// extra properties `props`) and an appsink `out`.
pub fn appsrc_pipeline(ref_caps: &str, dist_caps: &str, props: &str) -> String {
    format!(
        "appsrc name=ref format=time caps=\"{ref_caps}\" ! m.ref_sink \
         appsrc name=dist format=time caps=\"{dist_caps}\" ! m.dist_sink \
         gpumetrics name=m backend=cpu {props} ! appsink name=out"
    )
}

/// Runs two appsrc inputs with the given buffers through gpumetrics.
pub fn run_buffers(
    caps: &str,
    props: &str,
    reference: Vec<gst::Buffer>,
    distorted: Vec<gst::Buffer>,
) -> Run {
    run_with(
        &appsrc_pipeline(caps, caps, props),
        Duration::from_secs(30),
        move |p| {
            let p2 = p.clone();
            let t = std::thread::spawn(move || push_all(&p2, "ref", reference));
            push_all(p, "dist", distorted);
            t.join().unwrap();
        },
    )
}

/// A unique path in the temp dir.
pub fn temp_path(name: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    std::env::temp_dir().join(format!("gpumetrics-test-{}-{n}-{name}", std::process::id()))
}

pub fn psnr(peak: f64, mse: f64) -> f64 {
    10.0 * (peak * peak / mse).log10()
}

// ---- The process's resources and the Prometheus endpoint (restart and soak tests).

/// Threads of this process (Linux).
pub fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

/// Open fds of this process (the directory's own fd is counted every time alike).
pub fn fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Resident memory of this process, in KiB.
pub fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    // The page size of the process's mappings (4 KiB on x86_64, up to 64 KiB on arm64).
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let page_kib: u64 = smaps
        .lines()
        .find_map(|l| l.strip_prefix("KernelPageSize:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(4);
    pages * page_kib
}

/// GET /metrics from `address` (a Prometheus endpoint that answers 200): the body, without
/// the `device` labels ([`without_device`]).
pub fn scrape(address: &str) -> String {
    without_device(&scrape_with_device(address))
}

/// `text` without the series' `device` label (`,device="…"`, after `element` and
/// `channel`): the lines that tests compare then read the same whichever backend and GPU
/// ran them (tests/prometheus.rs checks the label itself).
pub fn without_device(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(",device=\"") {
        out.push_str(&rest[..i]);
        let after = &rest[i + ",device=\"".len()..];
        match after.find('"') {
            Some(end) => rest = &after[end + 1..],
            None => {
                rest = after;
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

/// GET /metrics from `address`, the body as the endpoint wrote it.
pub fn scrape_with_device(address: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(address).expect("the endpoint listens");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET /metrics HTTP/1.0\r\nHost: {address}\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("a head and a body");
    assert!(
        head.starts_with("HTTP/1.") && head.contains(" 200 "),
        "{head}"
    );
    body.to_string()
}
