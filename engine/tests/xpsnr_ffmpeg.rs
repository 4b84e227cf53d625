//! XPSNR against FFmpeg 9.0.2's `xpsnr` filter (issue 44): `xpsnr-y`, `xpsnr-u`, `xpsnr-v`
//! of every frame within 1e-3 dB of FFmpeg's (it prints 4 decimals: 5e-5 of rounding, the
//! rest is room for the f64 sums' order), and +inf where FFmpeg prints `inf` (identical
//! frames), on the CPU backend (`GPUMETRICS_TEST_BACKEND=cuda`: the CUDA one); and the
//! summary's `pooled` of each field within the same of FFmpeg's average (the last line of its
//! stats file: the XPSNR of the frames' mean root distortion).
//!
//! The reference program is named by `GPUMETRICS_REFERENCE_FFMPEG` (Debian 12's FFmpeg 5.1
//! has no `xpsnr`): `scripts/reference-ffmpeg.sh` installs the static FFmpeg 9.0.2 of PyPI's
//! imageio-ffmpeg 0.8.1 and prints its path. It reads the raw frames the engine measures
//! (`-f rawvideo ... -framerate R`) and writes its per-frame values to standard output
//! (`xpsnr=stats_file=-`). The filter measures the activity on its first input, the one it
//! calls "main": every case runs twice, as FFmpeg's documentation orders the inputs, the
//! distorted video first (`[dist][ref]xpsnr`, the engine's default), and as the XPSNR
//! authors' examples and ab-av1 do, the reference first (with `xpsnr-reference-activity`).
//!
//! The generator is this file: the clips of tests/data/vmaf/ (`pairs.txt`: 8, 10, 12 and
//! 16 bit, 4:2:0 and 4:4:4, 320×240, 333×199, 128×96, 1920×1080, a clip against itself)
//! decoded by Debian's `ffmpeg` (`common::ffmpeg`), and pairs made from them here: 4:2:2
//! 10-bit at 319×181 (a blur), 2532×1440 (above 2048×1152: activity on 2×2 groups, and a
//! last block column 12 samples wide, whose spatial activity FFmpeg drops), 3×2000 (one
//! block column: FFmpeg's smoothing gives its first block weight 0) and a gray 44×40 frame
//! too small to weight. Every pair runs at 25 frames per second (first-order temporal
//! difference); some also at 60 (second order), with `xpsnr-frame-rate` set to match.
//!
//! `GPUMETRICS_FFMPEG_CACHE=DIR` keeps both FFmpegs' outputs; carried to the GPU machine
//! (which has neither), the same variable runs this test there with
//! `GPUMETRICS_TEST_BACKEND=cuda`, and the ignored test
//! `xpsnr_cuda_engine_matches_the_cpu_engine` compares the two backends on the same frames.
//! `cargo test -p gpumetrics-engine --test xpsnr_ffmpeg -- --nocapture` prints the largest
//! difference per case and field.

mod common;

use std::path::{Path, PathBuf};

use common::{ffmpeg, scratch};
use gpumetrics_engine::{
    BackendChoice, Engine, EngineConfig, Frame, FrameLayout, HostFrame, OptionValue, Options,
    PixelFormat, Plane, Pooler, Scores,
};

/// Largest |engine − FFmpeg| per value (dB).
const TOLERANCE: f64 = 1e-3;
const FIELDS: [&str; 3] = ["xpsnr-y", "xpsnr-u", "xpsnr-v"];

/// One pair of clips: how each is decoded to raw frames, its layout, the frame rates it runs
/// at.
struct Case {
    name: String,
    /// Arguments of Debian's `ffmpeg` before `-f rawvideo -pix_fmt .. -`, per clip.
    reference: Vec<String>,
    distorted: Vec<String>,
    /// Size as decoded, and as measured (the top left part: the 333×199 clips are stored
    /// at 334×200).
    coded: (u32, u32),
    size: (u32, u32),
    pix_fmt: String,
    rates: Vec<u32>,
}

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/vmaf")
}

fn clip(name: &str) -> String {
    data().join(format!("{name}.mkv")).display().to_string()
}

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// The cases: every pair of tests/data/vmaf/pairs.txt, and those made here.
fn cases() -> Vec<Case> {
    let pairs = std::fs::read_to_string(data().join("pairs.txt")).expect("pairs.txt");
    let mut out: Vec<Case> = pairs
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (w, h): (u32, u32) = (f[3].parse().unwrap(), f[4].parse().unwrap());
            // Second order too on one clip per depth, and on the clip against itself.
            let also_60 = matches!(
                f[0],
                "x264_crf22_320x240_420p8"
                    | "x265_crf28_320x240_420p10"
                    | "x265_crf30_320x240_420p12"
                    | "avgblur_128x96_444p16"
                    | "self_320x240_420p8"
            );
            Case {
                name: f[0].into(),
                reference: args(&["-i", &clip(f[1])]),
                distorted: args(&["-i", &clip(f[2])]),
                coded: (w.next_multiple_of(2), h.next_multiple_of(2)),
                size: (w, h),
                pix_fmt: f[5].into(),
                rates: if also_60 { vec![25, 60] } else { vec![25] },
            }
        })
        .collect();
    let made = |name: &str, r: &str, d: &str, chain: &str, blur: &str, size, fmt: &str, rates| {
        let vf = |extra: &str| format!("{chain}{extra}");
        Case {
            name: name.into(),
            reference: args(&["-i", &clip(r), "-vf", &vf("")]),
            distorted: args(&["-i", &clip(d), "-vf", &vf(blur)]),
            coded: size,
            size,
            pix_fmt: fmt.into(),
            rates,
        }
    };
    out.push(made(
        "gblur_319x181_422p10",
        "ref_320x240_420p8",
        "ref_320x240_420p8",
        "scale=319:181,format=yuv422p10le",
        ",gblur=sigma=0.7",
        (319, 181),
        "yuv422p10le",
        vec![25, 60],
    ));
    out.push(made(
        "x264_crf30_2532x1440_420p8",
        "ref_1920x1080_420p8",
        "x264_crf30_1920x1080_420p8",
        "scale=2532:1440,format=yuv420p",
        "",
        (2532, 1440),
        "yuv420p",
        vec![25, 60],
    ));
    out.push(made(
        "x264_crf36_3x2000_420p8",
        "ref_320x240_420p8",
        "x264_crf36_320x240_420p8",
        "scale=3:2000,format=yuv420p",
        "",
        (3, 2000),
        "yuv420p",
        vec![25],
    ));
    out.push(made(
        "x264_crf36_44x40_gray",
        "ref_320x240_420p8",
        "x264_crf36_320x240_420p8",
        "crop=44:40:100:80,format=gray",
        "",
        (44, 40),
        "gray",
        vec![25],
    ));
    out
}

/// (format, bytes per sample, log2 chroma subsampling x and y, planes)
fn layout_of(pix_fmt: &str) -> (PixelFormat, usize, u32, u32, usize) {
    match pix_fmt {
        "yuv420p" => (PixelFormat::I420, 1, 1, 1, 3),
        "yuv420p10le" => (PixelFormat::I420_10Le, 2, 1, 1, 3),
        "yuv420p12le" => (PixelFormat::I420_12Le, 2, 1, 1, 3),
        "yuv422p10le" => (PixelFormat::I422_10Le, 2, 1, 0, 3),
        "yuv444p" => (PixelFormat::Y444, 1, 0, 0, 3),
        "yuv444p16le" => (PixelFormat::Y444_16Le, 2, 0, 0, 3),
        "gray" => (PixelFormat::Gray8, 1, 0, 0, 1),
        other => panic!("no layout for {other}"),
    }
}

/// A clip's frames: per frame its planes, tightly packed, cropped to the case's size.
type Frames = Vec<Vec<Vec<u8>>>;

fn decode(case: &Case, clip: &[String]) -> Frames {
    let mut a: Vec<&str> = clip.iter().map(String::as_str).collect();
    a.extend(["-f", "rawvideo", "-pix_fmt", &case.pix_fmt, "-"]);
    let raw = ffmpeg(&a);
    let (_, bps, sx, sy, planes) = layout_of(&case.pix_fmt);
    let ((cw, ch), (w, h)) = (case.coded, case.size);
    let dims = |(w, h): (u32, u32), p: usize| -> (usize, usize) {
        if p == 0 {
            (w as usize, h as usize)
        } else {
            (w.div_ceil(1 << sx) as usize, h.div_ceil(1 << sy) as usize)
        }
    };
    let frame_bytes: usize = (0..planes)
        .map(|p| {
            let (pw, ph) = dims((cw, ch), p);
            pw * ph * bps
        })
        .sum();
    assert!(
        !raw.is_empty() && raw.len().is_multiple_of(frame_bytes),
        "{}: {} bytes are no whole frames of {frame_bytes}",
        case.name,
        raw.len()
    );
    raw.chunks(frame_bytes)
        .map(|f| {
            let mut pos = 0;
            (0..planes)
                .map(|p| {
                    let ((pw, ph), (ow, oh)) = (dims((cw, ch), p), dims((w, h), p));
                    let mut out = Vec::with_capacity(ow * oh * bps);
                    for y in 0..oh {
                        let row = pos + y * pw * bps;
                        out.extend_from_slice(&f[row..row + ow * bps]);
                    }
                    pos += pw * ph * bps;
                    out
                })
                .collect()
        })
        .collect()
}

fn frame<'a>(planes: &'a [Vec<u8>], case: &Case) -> Frame<'a> {
    let (_, bps, sx, _, _) = layout_of(&case.pix_fmt);
    let planes: Vec<Plane> = planes
        .iter()
        .enumerate()
        .map(|(p, data)| {
            let w = if p == 0 {
                case.size.0
            } else {
                case.size.0.div_ceil(1 << sx)
            };
            Plane {
                data,
                stride: w as usize * bps,
            }
        })
        .collect();
    Frame::Host(HostFrame::new(&planes))
}

/// The backend this test measures on: the CPU, or `GPUMETRICS_TEST_BACKEND=cuda`.
fn backend() -> BackendChoice {
    match std::env::var("GPUMETRICS_TEST_BACKEND").as_deref() {
        Ok("cuda") => BackendChoice::Cuda,
        _ => BackendChoice::Cpu,
    }
}

/// The engine's record of every pair of `case` at `fps`.
fn measure(
    case: &Case,
    fps: u32,
    reference_first: bool,
    backend: BackendChoice,
    refs: &Frames,
    dists: &Frames,
) -> Vec<Scores> {
    let (format, ..) = layout_of(&case.pix_fmt);
    let layout = FrameLayout {
        format,
        width: case.size.0,
        height: case.size.1,
    };
    let options = Options::new()
        .with("xpsnr-frame-rate", OptionValue::Float(fps as f64))
        .unwrap()
        .with(
            "xpsnr-reference-activity",
            OptionValue::Bool(reference_first),
        )
        .unwrap();
    let cfg = EngineConfig {
        metrics: gpumetrics_engine::metric::xpsnr::FLAG,
        backend,
        options,
        ..Default::default()
    };
    let mut engine = Engine::new(&cfg, layout, layout).unwrap();
    refs.iter()
        .zip(dists)
        .map(|(r, d)| engine.compare(&frame(r, case), &frame(d, case)).unwrap())
        .collect()
}

/// The reference program, from `GPUMETRICS_REFERENCE_FFMPEG`, checked to be 9.0.2.
fn reference_program() -> String {
    let Some(path) = std::env::var_os("GPUMETRICS_REFERENCE_FFMPEG") else {
        panic!(
            "GPUMETRICS_REFERENCE_FFMPEG is not set: it names FFmpeg 9.0.2, whose xpsnr filter \
             is the reference (Debian 12's FFmpeg 5.1 has none). \
             `GPUMETRICS_REFERENCE_FFMPEG=$(scripts/reference-ffmpeg.sh) cargo test ...` \
             installs and names it; by hand: `pip install imageio-ffmpeg==0.8.1`, then \
             `python -c 'import imageio_ffmpeg; print(imageio_ffmpeg.get_ffmpeg_exe())'` \
             prints its path"
        )
    };
    let path = path.to_string_lossy().into_owned();
    let out = std::process::Command::new(&path)
        .arg("-version")
        .output()
        .unwrap_or_else(|e| panic!("GPUMETRICS_REFERENCE_FFMPEG={path}: {e}"));
    let version = String::from_utf8_lossy(&out.stdout);
    assert!(
        version.starts_with("ffmpeg version n9.0.2") || version.starts_with("ffmpeg version 9.0.2"),
        "GPUMETRICS_REFERENCE_FFMPEG={path} is not FFmpeg 9.0.2: {}",
        version.lines().next().unwrap_or("")
    );
    path
}

/// Runs the reference program with `args` and returns its standard output; with
/// `GPUMETRICS_FFMPEG_CACHE=DIR` kept in DIR under a hash of the arguments (the scratch
/// directory written as `SCRATCH`), as `common::ffmpeg` keeps Debian's FFmpeg's.
fn reference_ffmpeg(args: &[String]) -> Vec<u8> {
    let scratch_dir = scratch("").to_string_lossy().into_owned();
    let cached = std::env::var_os("GPUMETRICS_FFMPEG_CACHE").map(|dir| {
        // FNV-1a over a tag and the arguments.
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for a in std::iter::once("xpsnr reference 9.0.2").chain(args.iter().map(String::as_str)) {
            for b in a.replace(&scratch_dir, "SCRATCH").bytes().chain([0]) {
                h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
            }
        }
        PathBuf::from(dir).join(format!("{h:016x}.out"))
    });
    if let Some(out) = cached.as_ref().and_then(|p| std::fs::read(p).ok()) {
        return out;
    }
    let program = reference_program();
    let out = std::process::Command::new(&program)
        .args(["-hide_banner", "-v", "error", "-threads", "1"])
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    if let Some(p) = cached {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, &out.stdout).unwrap();
    }
    out.stdout
}

/// FFmpeg's values of (y, u, v), the chroma `None` for gray.
type Values = [Option<f64>; 3];

/// FFmpeg's per-frame values of `case` at `fps`, and its average over them (its summary
/// line). The frames go to it as raw files, the distorted first (or the reference).
fn ffmpeg_values(
    case: &Case,
    fps: u32,
    reference_first: bool,
    refs: &Frames,
    dists: &Frames,
) -> (Vec<Values>, Values) {
    let (w, h) = case.size;
    let input = |tag: &str, frames: &Frames| -> PathBuf {
        let path = scratch(&format!("xpsnr-{}-{tag}.raw", case.name));
        let bytes: Vec<u8> = frames.iter().flatten().flatten().copied().collect();
        std::fs::write(&path, bytes).unwrap();
        path
    };
    let (r, d) = (input("ref", refs), input("dist", dists));
    let mut a = Vec::new();
    let order = if reference_first { [&r, &d] } else { [&d, &r] };
    for path in order {
        a.extend(args(&[
            "-f",
            "rawvideo",
            "-pix_fmt",
            &case.pix_fmt,
            "-s",
            &format!("{w}x{h}"),
            "-framerate",
            &fps.to_string(),
            "-i",
            &path.display().to_string(),
        ]));
    }
    a.extend(args(&[
        "-lavfi",
        // A stats file that is not `-`: to `-` the filter writes its average's luma only.
        "[0:v][1:v]xpsnr=stats_file=/dev/stdout",
        "-f",
        "null",
        "-",
    ]));
    let out = reference_ffmpeg(&a);
    let _ = (std::fs::remove_file(&r), std::fs::remove_file(&d));
    // `n:    1  XPSNR y: 33.6285  XPSNR u: 33.6957  XPSNR v: 33.6101` (`inf` when equal),
    // and at the end `XPSNR average, 12 frames  y: 33.1234  u: ...  v: ...  (minimum: ..)`.
    let parse = |l: &str| {
        let mut v = [None; 3];
        let words: Vec<&str> = l.split_whitespace().collect();
        for pair in words.windows(2) {
            let c = match pair[0] {
                "y:" => 0,
                "u:" => 1,
                "v:" => 2,
                _ => continue,
            };
            v[c] = Some(
                pair[1]
                    .parse::<f64>()
                    .unwrap_or_else(|e| panic!("{l}: {e}")),
            );
        }
        v
    };
    let text = String::from_utf8(out).unwrap();
    let frames = text
        .lines()
        .filter(|l| l.starts_with("n:"))
        .map(parse)
        .collect();
    let average = text
        .lines()
        .find(|l| l.starts_with("XPSNR average"))
        .map(parse)
        .unwrap_or_else(|| panic!("no average in FFmpeg's output:\n{text}"));
    (frames, average)
}

/// Whether a value is FFmpeg's within the tolerance (both +inf for identical planes).
fn close(got: f64, want: f64) -> bool {
    if want.is_infinite() || got.is_infinite() {
        return got == want;
    }
    (got - want).abs() <= TOLERANCE
}

#[test]
fn xpsnr_equals_ffmpeg_9_per_frame() {
    let backend = backend();
    let mut failures = Vec::new();
    let mut largest = [0.0f64; 3];
    let (mut values, mut infinite) = (0usize, 0usize);
    let (mut pooled, mut largest_pooled) = (0usize, 0.0f64);
    for case in cases() {
        let refs = decode(&case, &case.reference);
        let dists = decode(&case, &case.distorted);
        assert_eq!(refs.len(), dists.len(), "{}: frame counts", case.name);
        let planes = layout_of(&case.pix_fmt).4;
        for (&fps, reference_first) in case.rates.iter().flat_map(|r| [(r, false), (r, true)]) {
            let first = if reference_first { "ref" } else { "dist" };
            let (want, average) = ffmpeg_values(&case, fps, reference_first, &refs, &dists);
            let got = measure(&case, fps, reference_first, backend, &refs, &dists);
            assert_eq!(got.len(), want.len(), "{} at {fps}: frames", case.name);
            // The summary's `pooled` is FFmpeg's average.
            let mut pool = Pooler::new();
            for g in &got {
                pool.push(g);
            }
            let summary = pool.summary();
            for (c, field) in FIELDS.iter().enumerate() {
                let g = summary.get(field).and_then(|s| s.pooled);
                match (g, average[c]) {
                    (None, None) => {}
                    (Some(g), Some(w)) if close(g, w) => {
                        pooled += 1;
                        if !w.is_infinite() {
                            largest_pooled = largest_pooled.max((g - w).abs());
                        }
                    }
                    (g, w) => failures.push(format!(
                        "{} at {fps} fps ({first} first) {field} pooled: {g:?} vs FFmpeg's \
                         average {w:?}",
                        case.name
                    )),
                }
            }
            let mut worst = [0.0f64; 3];
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                for (c, field) in FIELDS.iter().enumerate() {
                    let (g, w) = (g.get(field), w[c]);
                    if c >= planes {
                        assert_eq!((g, w), (None, None), "{} {field}", case.name);
                        continue;
                    }
                    let (Some(g), Some(w)) = (g, w) else {
                        failures.push(format!(
                            "{} at {fps} ({first} first) frame {i} {field}: {g:?} vs {w:?}",
                            case.name
                        ));
                        continue;
                    };
                    values += 1;
                    if w.is_infinite() && g == w {
                        infinite += 1;
                    } else if !g.is_infinite() {
                        worst[c] = worst[c].max((g - w).abs());
                    }
                    if !close(g, w) {
                        failures.push(format!(
                            "{} at {fps} fps ({first} first) frame {i} {field}: {g} vs FFmpeg {w}",
                            case.name
                        ));
                    }
                }
            }
            println!(
                "{:30} {fps:>2} fps {first:>4} first {:>2} frames  |diff| y {:.1e} u {:.1e} v {:.1e}",
                case.name,
                got.len(),
                worst[0],
                worst[1],
                worst[2]
            );
            for c in 0..3 {
                largest[c] = largest[c].max(worst[c]);
            }
        }
    }
    println!(
        "{values} values ({infinite} +inf on both sides); largest |engine - FFmpeg 9.0.2| \
         (4 decimals): y {:.1e}, u {:.1e}, v {:.1e}",
        largest[0], largest[1], largest[2]
    );
    println!(
        "{pooled} pooled values (FFmpeg's average); largest |engine - FFmpeg 9.0.2| {largest_pooled:.1e}"
    );
    assert!(infinite > 0, "the identical pair gives +inf");
    assert!(pooled > 50, "only {pooled} pooled values compared");
    assert!(
        failures.is_empty(),
        "{} values off by more than {TOLERANCE}:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The CUDA engine against the CPU engine on the same decoded frames (from
/// `GPUMETRICS_FFMPEG_CACHE` on the GPU machine): the same integer sums and the same order
/// of f64 additions on both, so equal values; the tolerance only reports.
#[test]
#[ignore = "needs a CUDA GPU (and GPUMETRICS_FFMPEG_CACHE carried from a run with FFmpeg)"]
fn xpsnr_cuda_engine_matches_the_cpu_engine() {
    let mut worst = 0.0f64;
    let mut failures = Vec::new();
    for case in cases() {
        let refs = decode(&case, &case.reference);
        let dists = decode(&case, &case.distorted);
        for (&fps, reference_first) in case.rates.iter().flat_map(|r| [(r, false), (r, true)]) {
            let gpu = measure(
                &case,
                fps,
                reference_first,
                BackendChoice::Cuda,
                &refs,
                &dists,
            );
            let cpu = measure(
                &case,
                fps,
                reference_first,
                BackendChoice::Cpu,
                &refs,
                &dists,
            );
            for (i, (g, c)) in gpu.iter().zip(&cpu).enumerate() {
                for field in FIELDS {
                    let (g, c) = (g.get(field), c.get(field));
                    let d = match (g, c) {
                        (Some(g), Some(c)) if g == c => 0.0,
                        (Some(g), Some(c)) => (g - c).abs(),
                        (None, None) => 0.0,
                        _ => f64::INFINITY,
                    };
                    worst = worst.max(d);
                    if d.is_nan() || d > 1e-9 {
                        failures.push(format!(
                            "{} at {fps} frame {i} {field}: cuda {g:?} cpu {c:?}",
                            case.name
                        ));
                    }
                }
            }
        }
    }
    println!("largest |cuda - cpu|: {worst:e}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
