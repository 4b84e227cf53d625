// SPDX-License-Identifier: MPL-2.0
//! Memory over a long run (issue 20): millions of small pairs through the element, with the
//! process's resident set sampled as they go. After the warm-up (the pooled summary's exact
//! phase, the first pairs' allocations) the RSS must stay flat: nothing may grow with the
//! run's length. A soak, not a CI test: `scripts/soak.sh` runs it and prints the table for
//! docs/BENCHMARKS.md.
//!
//! `SOAK_PAIRS` (default 2,000,000), `SOAK_METRICS` (default `psnr+ssim`: the metrics whose
//! CPU cost allows millions of pairs in minutes on two cores; `psnr+ssim+vmaf` at
//! `SOAK_SIZE=40` runs at about 600 pairs/s there), `SOAK_SIZE` (default 16),
//! `SOAK_WINDOW` (ns, default 1 s of the 1000 fps stream: windows on, as a monitor runs),
//! `SOAK_BACKEND` (default `cpu`).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::*;
use gst::prelude::*;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Resident set of this process in KiB (Linux).
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/self/status")
}

#[test]
#[ignore = "soak: minutes of CPU; run by scripts/soak.sh"]
fn rss_stays_flat_over_millions_of_pairs() {
    init();
    let pairs: u64 = env_or("SOAK_PAIRS", 2_000_000);
    let metrics: String = env_or("SOAK_METRICS", "psnr+ssim".to_string());
    let size: u32 = env_or("SOAK_SIZE", 16);
    let window: u64 = env_or("SOAK_WINDOW", 1_000_000_000);
    let backend: String = env_or("SOAK_BACKEND", "cpu".to_string());
    let caps = i420_caps(size, size, 1000);
    let stats = temp_path("soak.jsonl");
    // Different content on the inputs (finite, varying scores); the stats file and the
    // summary are on, the per-pair messages off (a test's bus would keep them).
    let desc = format!(
        "videotestsrc pattern=ball num-buffers={pairs} ! {caps} ! m.ref_sink \
         videotestsrc pattern=snow num-buffers={pairs} ! {caps} ! m.dist_sink \
         gpumetrics name=m backend={backend} metrics={metrics} post-messages=false \
         window={window} alerts=psnr-y<20:10ms stats-file={} ! fakesink name=out sync=false",
        stats.display()
    );
    let pipeline = gst::parse::launch(&desc)
        .unwrap()
        .downcast::<gst::Pipeline>()
        .unwrap();
    let count = Arc::new(AtomicU64::new(0));
    {
        let count = count.clone();
        let out = pipeline.by_name("out").unwrap();
        out.static_pad("sink")
            .unwrap()
            .add_probe(gst::PadProbeType::BUFFER, move |_, _| {
                count.fetch_add(1, Ordering::Relaxed);
                gst::PadProbeReturn::Ok
            });
    }
    let bus = pipeline.bus().unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let start = Instant::now();
    let step = (pairs / 20).max(1);
    let mut samples: Vec<(u64, u64, f64)> = Vec::new();
    let mut next = step;
    let mut done = false;
    let mut summary = None;
    while !done {
        while let Some(msg) = bus.pop() {
            if let Some(s) = gstgpumetrics::message::Summary::from_message(&msg) {
                summary = Some(s);
            }
            match msg.view() {
                gst::MessageView::Eos(_) => done = true,
                gst::MessageView::Error(e) => panic!("{} ({:?})", e.error(), e.debug()),
                _ => {}
            }
        }
        let n = count.load(Ordering::Relaxed);
        if n >= next || done {
            samples.push((n, rss_kib(), start.elapsed().as_secs_f64()));
            next += step;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    pipeline.set_state(gst::State::Null).unwrap();
    let summary = summary.expect("a summary at EOS");
    assert_eq!(summary.frames, pairs);
    let _ = std::fs::remove_file(&stats);

    println!(
        "soak: {pairs} pairs of {size}x{size}, metrics={metrics}, window={window} ns, \
         backend={backend}, {:.0} s",
        start.elapsed().as_secs_f64()
    );
    println!("| pairs | RSS (MiB) | since start (s) |");
    println!("|------:|----------:|----------------:|");
    for (n, rss, t) in &samples {
        println!("| {n} | {:.1} | {t:.1} |", *rss as f64 / 1024.0);
    }
    // Warm-up: the first 10 % (beyond the exact phase of the pooled summary, 65,536 values).
    let warm: Vec<&(u64, u64, f64)> = samples.iter().filter(|s| s.0 >= pairs / 10).collect();
    let lo = warm.iter().map(|s| s.1).min().unwrap();
    let hi = warm.iter().map(|s| s.1).max().unwrap();
    println!(
        "RSS after warm-up: {:.1} .. {:.1} MiB (spread {:.2} MiB)",
        lo as f64 / 1024.0,
        hi as f64 / 1024.0,
        (hi - lo) as f64 / 1024.0
    );
    assert!(hi - lo <= 2048, "RSS grew by {} KiB after warm-up", hi - lo);
}
