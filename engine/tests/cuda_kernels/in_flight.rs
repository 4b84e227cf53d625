//! Pairs in flight ([`EngineBuilder::in_flight`]): the CUDA engine with two (and with the
//! most) pairs in flight gives the same records, field for field and bit for bit (SSIM's
//! within its atomic sums' rounding), as the same engine with one,
//! over a sequence with moving, black and frozen frames, an end of sequence in the middle
//! and a flush with a pair in flight; with device frames (all kept until the end) and host
//! frames (copied when pushed). The metrics: the no-reference ones and CAMBI alone, next to
//! PSNR, next to PSNR and VMAF (which holds a pair back), and every metric together; all of
//! them queue a pair's work ahead (`CudaMetric::queue`).

use std::sync::Arc;

use cudarc::driver::{CudaStream, DevicePtr, DriverError};
use gpumetrics_engine::cuda::Kernels;
use gpumetrics_engine::{
    BackendChoice, Engine, EngineConfig, Frame, FrameLayout, MAX_IN_FLIGHT, MetricSet, PixelFormat,
    Scores,
};

use crate::Outcome;
use crate::common::{self, Rng};

#[test]
#[ignore = "needs a CUDA GPU"]
fn pairs_in_flight_score_as_one_at_a_time() {
    crate::run("in flight (engine)", check);
}

fn set(names: &[&str]) -> MetricSet {
    names.iter().fold(MetricSet::default(), |s, n| {
        s | MetricSet::named(n).expect("a registered metric")
    })
}

/// Frame `i` of the test sequence (`w`×`h`, `format`): smooth random pictures, black ones
/// (4–5) and repeats of frame 5 with one byte changed (6–7: frozen).
fn sequence(r: &mut Rng, format: PixelFormat, w: u32, h: u32, n: usize) -> Vec<common::OwnedFrame> {
    let wide = format.depth() > 8;
    let mut frames: Vec<common::OwnedFrame> = Vec::new();
    for i in 0..n {
        let f = match i {
            4 | 5 => common::OwnedFrame::new(format, w, h, |_| 0),
            6 | 7 => {
                let mut f = common::OwnedFrame::new(format, w, h, |b| frames[5].data[b]);
                let at = r.next_u32() as usize % f.data.len();
                f.data[at] = 1;
                f
            }
            _ => {
                let seed = r.bytes(64);
                common::OwnedFrame::new(format, w, h, |b| {
                    let v = seed[(b / 7) % 64].wrapping_add((b % 7) as u8 * 3);
                    if wide && b % 2 == 1 { v & 3 } else { v }
                })
            }
        };
        frames.push(f);
    }
    frames
}

/// The records of `engine` over `pairs`, as segments: cut at the end of sequence after
/// pair `finish_at` and at the flush before pair `reset_at` (which also returns how many
/// pairs it dropped).
fn run(
    engine: &mut Engine,
    pairs: &[(Frame, Frame)],
    single: bool,
    finish_at: usize,
    reset_at: usize,
) -> (Vec<Vec<Scores>>, usize) {
    let mut segments = vec![Vec::new()];
    let mut dropped = 0;
    for (i, (r, d)) in pairs.iter().enumerate() {
        if i == reset_at {
            dropped = engine.reset();
            segments.push(Vec::new());
        }
        let got = match single {
            true => engine.push_single(d),
            false => engine.push(r, d),
        };
        segments
            .last_mut()
            .unwrap()
            .extend(got.expect("a pushed pair"));
        if i == finish_at {
            let rest = engine.finish().expect("finishing the sequence");
            segments.last_mut().unwrap().extend(rest);
        }
    }
    let rest = engine.finish().expect("finishing the sequence");
    segments.last_mut().unwrap().extend(rest);
    (segments, dropped)
}

/// Whether two records have the same fields with the same values: bit for bit, except
/// that SSIM's and MS-SSIM's sums are added with f64 atomics on the GPU, whose order (and
/// so the last bits) varies from run to run whatever the pairs in flight: their fields may
/// differ by [`ATOMIC_ORDER`] relative.
fn same_record(x: &Scores, y: &Scores) -> bool {
    let (a, b): (Vec<_>, Vec<_>) = (x.iter().collect(), y.iter().collect());
    a.len() == b.len()
        && a.iter().zip(&b).all(|(&(n, u), &(m, v))| {
            let atomic =
                n.starts_with("ms-ssim") || (n.starts_with("ssim") && !n.starts_with("ssimulacra"));
            n == m
                && (u.to_bits() == v.to_bits()
                    || (atomic && (u - v).abs() <= ATOMIC_ORDER * u.abs().max(v.abs())))
        })
}

/// See [`same_record`].
const ATOMIC_ORDER: f64 = 1e-13;

fn check(_k: &Kernels, _s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    let ctx = cudarc::driver::CudaContext::new(0)?;
    let stream = ctx.default_stream();
    let nr = ["blur", "blockiness", "siti", "black", "freeze", "cambi"];
    let cases: [(&str, MetricSet, bool); 4] = [
        ("no-reference, one input", set(&nr), true),
        ("psnr + no-reference", set(&["psnr"]) | set(&nr), false),
        (
            "psnr + vmaf + siti + freeze",
            set(&["psnr", "vmaf", "siti", "freeze"]),
            false,
        ),
        ("every metric", MetricSet::ALL, false),
    ];
    let (mut elements, mut bad, mut notes) = (0usize, 0usize, Vec::new());
    for (format, w, h) in [
        (PixelFormat::I420, 320, 180),
        (PixelFormat::I420_10Le, 198, 120),
    ] {
        let n = 14;
        let refs = sequence(r, format, w, h, n);
        let dists = sequence(r, format, w, h, n);
        let on_device: Vec<_> = refs
            .iter()
            .chain(&dists)
            .map(|f| stream.clone_htod(&f.data))
            .collect::<Result<_, _>>()?;
        stream.synchronize()?;
        let ptrs: Vec<u64> = on_device.iter().map(|b| b.device_ptr(&stream).0).collect();
        let device: Vec<(Frame, Frame)> = (0..n)
            .map(|i| (refs[i].device(ptrs[i]), dists[i].device(ptrs[n + i])))
            .collect();
        let host: Vec<(Frame, Frame)> = (0..n).map(|i| (refs[i].host(), dists[i].host())).collect();
        let layout = FrameLayout {
            format,
            width: w,
            height: h,
        };
        for (label, metrics, single) in cases {
            let cfg = EngineConfig {
                metrics,
                backend: BackendChoice::Cuda,
                ..Default::default()
            };
            let build = |pairs: usize| {
                let b = match single {
                    true => Engine::single_builder(&cfg, layout),
                    false => Engine::builder(&cfg, layout, layout),
                };
                b.in_flight(pairs).build().expect("a CUDA engine")
            };
            for (memory, pairs, depth) in [
                ("device", &device, 2),
                ("host", &host, 2),
                ("device", &device, MAX_IN_FLIGHT),
            ] {
                let (mut one, mut more) = (build(1), build(depth));
                assert_eq!((one.in_flight(), more.in_flight()), (1, depth));
                let (a, dropped_a) = run(&mut one, pairs, single, 4, 11);
                let (b, dropped_b) = run(&mut more, pairs, single, 4, 11);
                let what = format!(
                    "{} {w}x{h} {label}, {memory} frames, {depth} in flight",
                    format.name()
                );
                // The flush drops the pairs in flight before it too (depth − 1 more).
                let extra = depth - 1;
                let mut same = dropped_b == dropped_a + extra
                    && a.len() == 2
                    && b.len() == 2
                    && b[0].len() + extra == a[0].len()
                    && a[1].len() == b[1].len()
                    && a[1].len() == n - 11;
                for (sa, sb) in a.iter().zip(&b) {
                    for (x, y) in sa.iter().zip(sb) {
                        elements += 1;
                        if !same_record(x, y) {
                            same = false;
                            notes.push(format!("{what}: {:?} != {:?}", x, y));
                        }
                    }
                }
                if !same {
                    bad += 1;
                    notes.push(format!(
                        "{what}: segments {:?} / {:?} records, dropped {dropped_a} / {dropped_b}",
                        a.iter().map(Vec::len).collect::<Vec<_>>(),
                        b.iter().map(Vec::len).collect::<Vec<_>>()
                    ));
                }
            }
        }
        notes.push(format!("{} {w}x{h}: {} records", format.name(), elements));
    }
    Ok(Outcome {
        elements,
        max_err: bad as f64,
        tolerance: 0.0,
        note: notes.join("; "),
    })
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn engines_sharing_scratch_score_as_one_alone() {
    crate::run("scratch shared by engines", sharing);
}

/// Engines of one context with the same layout share Butteraugli's, SSIMULACRA2's and VMAF's
/// scratch arenas (`cuda::scratch`): six engines, each on a thread of its own with two
/// pairs in flight and each on a sequence of its own (host frames),
/// give the records that each sequence gets from an engine measuring it alone.
fn sharing(_k: &Kernels, _s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    let (format, w, h, n, engines) = (PixelFormat::I420, 352, 288, 10, 6);
    let metrics = set(&["ssimulacra2", "butteraugli", "vmaf", "psnr"]);
    let cfg = EngineConfig {
        metrics,
        backend: BackendChoice::Cuda,
        ..Default::default()
    };
    let layout = FrameLayout {
        format,
        width: w,
        height: h,
    };
    let sequences: Vec<(Vec<common::OwnedFrame>, Vec<common::OwnedFrame>)> = (0..engines)
        .map(|_| (sequence(r, format, w, h, n), sequence(r, format, w, h, n)))
        .collect();
    let records =
        |e: &mut Engine, (refs, dists): &(Vec<common::OwnedFrame>, Vec<common::OwnedFrame>)| {
            let mut out = Vec::new();
            for (rf, df) in refs.iter().zip(dists) {
                out.extend(e.push(&rf.host(), &df.host()).expect("a pushed pair"));
            }
            out.extend(e.finish().expect("finishing the sequence"));
            out
        };
    // Alone: one engine after the other, each dropped (with its scratch) before the next.
    let alone: Vec<Vec<Scores>> = sequences
        .iter()
        .map(|seq| {
            let mut e = Engine::builder(&cfg, layout, layout)
                .build()
                .expect("a CUDA engine");
            records(&mut e, seq)
        })
        .collect();
    // Together: every engine built first (they share two arenas per metric), then all
    // measuring at once.
    let mut built: Vec<Engine> = (0..engines)
        .map(|_| {
            Engine::builder(&cfg, layout, layout)
                .in_flight(2)
                .build()
                .expect("a CUDA engine")
        })
        .collect();
    let together: Vec<Vec<Scores>> = std::thread::scope(|scope| {
        let handles: Vec<_> = built
            .iter_mut()
            .zip(&sequences)
            .map(|(e, seq)| scope.spawn(move || records(e, seq)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("an engine's thread"))
            .collect()
    });
    let (mut elements, mut bad, mut notes) = (0usize, 0usize, Vec::new());
    for (i, (a, b)) in alone.iter().zip(&together).enumerate() {
        if a.len() != n || b.len() != n {
            bad += 1;
            notes.push(format!("engine {i}: {} / {} records", a.len(), b.len()));
        }
        for (x, y) in a.iter().zip(b) {
            elements += 1;
            if !same_record(x, y) {
                bad += 1;
                notes.push(format!("engine {i}: {x:?} != {y:?}"));
            }
        }
    }
    notes.push(format!("{engines} engines, {elements} records"));
    Ok(Outcome {
        elements,
        max_err: bad as f64,
        tolerance: 0.0,
        note: notes.join("; "),
    })
}
