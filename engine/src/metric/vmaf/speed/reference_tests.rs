//! SpEED chroma against libvmaf v3.2.0 on real clips: per-frame `speed_chroma_uv` of the
//! vmaf_v1.0.16 option sets and libvmaf's defaults.
//!
//! Data: tests/data/speed/ (made by tests/generate_speed_reference.sh): lossless reference
//! clips and x264/x265 distortions (8, 10 and 12 bit; 4:2:0, 4:2:2 and 4:4:4; 643x481
//! cropped from 644x482; 1280x720 and 1920x1080; a clip against itself; 16-bit 4:4:4 FFV1
//! with a blur), decoded here with FFmpeg, and libvmaf's per-frame CSV for each pair (6
//! decimals, one column per option set: the vmaf_v1.0.16 models', libvmaf's defaults, and
//! sets that reach the other resamplers, kernelscales and variance weighting modes).
//! A unit test rather than one in engine/tests: `SpeedChroma` is crate-internal until the
//! VMAF metric reads it. `cargo test -p gpumetrics-engine --lib speed -- --nocapture`
//! prints the largest difference per pair and option set.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{PrescaleMethod, SpeedChroma, SpeedOptions};
use crate::format::{FrameLayout, PixelFormat};
use crate::frame::{HostFrame, Plane};
use crate::plan::Plan;

/// The brief's bound; the CSV's 6 decimals alone allow 5e-7, and the largest difference
/// seen is that (the steps follow libvmaf's float and double operations one for one).
const TOLERANCE: f64 = 1e-3;
/// What the clips actually reach (the CSV's rounding, plus a margin): an implementation that
/// rounds differently anywhere in the eigenvalue or QR steps, or computes mode 5's weights
/// in f32 only (the self clip's 4e-6), misses it.
const TIGHT: f64 = 1e-6;

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/speed")
}

/// The options of a CSV column (see `sets` in the generator).
fn options(column: &str) -> SpeedOptions {
    let d = SpeedOptions::default;
    let mode = |weight_var_mode| SpeedOptions {
        weight_var_mode,
        ..d()
    };
    let scaled = |prescale, prescale_method| SpeedOptions {
        prescale,
        prescale_method,
        ..d()
    };
    match column {
        "3d0h" => SpeedOptions::v1_3d0h(),
        "1d5h_2160" => SpeedOptions::v1_1d5h_2160(),
        "3d0h_2160" => SpeedOptions::v1_3d0h_2160(),
        "5d0h" => SpeedOptions::v1_5d0h(),
        "default" => d(),
        "nearest_0.5" => scaled(0.5, PrescaleMethod::Nearest),
        "bicubic_0.6" => scaled(0.6, PrescaleMethod::Bicubic),
        "bilinear_1.5" => scaled(1.5, PrescaleMethod::Bilinear),
        "ks_2" => SpeedOptions {
            kernelscale: 2.0,
            sigma_nn: 0.5,
            ..d()
        },
        "ks_0.5" => SpeedOptions {
            kernelscale: 0.5,
            nn_floor: 0.3,
            ..d()
        },
        "wvm_1" => SpeedOptions {
            max_val: 3.0,
            ..mode(1)
        },
        "wvm_2" => mode(2),
        "wvm_3" => mode(3),
        "wvm_4" => mode(4),
        "wvm_6" => mode(6),
        other => panic!("no options for the CSV column {other}"),
    }
}

/// (format, bytes per sample, chroma shifts)
fn layout_of(pix_fmt: &str) -> (PixelFormat, usize, (u32, u32)) {
    match pix_fmt {
        "yuv420p" => (PixelFormat::I420, 1, (1, 1)),
        "yuv420p10le" => (PixelFormat::I420_10Le, 2, (1, 1)),
        "yuv420p12le" => (PixelFormat::I420_12Le, 2, (1, 1)),
        "yuv444p16le" => (PixelFormat::Y444_16Le, 2, (0, 0)),
        "yuv422p" => (PixelFormat::Y42b, 1, (1, 0)),
        "yuv444p" => (PixelFormat::Y444, 1, (0, 0)),
        other => panic!("no layout for {other}"),
    }
}

/// A clip's frames decoded by FFmpeg at the coded (even) size and cropped to w×h: per frame
/// the three planes, tightly packed, chroma planes rounded up as GStreamer's are.
fn decode(clip: &str, w: u32, h: u32, pix_fmt: &str) -> Vec<[Vec<u8>; 3]> {
    let path = data().join(format!("{clip}.mkv"));
    let out = Command::new("ffmpeg")
        .args(["-hide_banner", "-v", "error", "-threads", "1", "-i"])
        .arg(&path)
        .args(["-f", "rawvideo", "-pix_fmt", pix_fmt, "-"])
        .output()
        .expect("ffmpeg is needed (scripts/setup-deps.sh installs it)");
    assert!(
        out.status.success(),
        "ffmpeg {clip}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (_, bps, (sx, sy)) = layout_of(pix_fmt);
    let (w, h) = (w as usize, h as usize);
    let (ew, eh) = (w.next_multiple_of(2), h.next_multiple_of(2));
    let chroma = (w.div_ceil(1 << sx), h.div_ceil(1 << sy), ew >> sx, eh >> sy);
    let planes = [(w, h, ew, eh), chroma, chroma];
    let frame_bytes: usize = planes.iter().map(|p| p.2 * p.3 * bps).sum();
    assert_eq!(out.stdout.len() % frame_bytes, 0, "{clip}: partial frame");
    out.stdout
        .chunks(frame_bytes)
        .map(|f| {
            let mut pos = 0;
            planes.map(|(cw, ch, pw, ph)| {
                let mut plane = Vec::with_capacity(cw * ch * bps);
                for y in 0..ch {
                    let row = pos + y * pw * bps;
                    plane.extend_from_slice(&f[row..row + cw * bps]);
                }
                pos += pw * ph * bps;
                plane
            })
        })
        .collect()
}

/// libvmaf's CSV: the header's option set names and per frame one value per set.
fn reference(pair: &str) -> (Vec<String>, Vec<Vec<f64>>) {
    let text = std::fs::read_to_string(data().join(format!("{pair}.csv"))).unwrap();
    let mut lines = text.lines();
    let header = lines
        .next()
        .unwrap()
        .split(',')
        .skip(1)
        .map(String::from)
        .collect();
    let rows = lines
        .map(|l| l.split(',').skip(1).map(|v| v.parse().unwrap()).collect())
        .collect();
    (header, rows)
}

#[test]
fn speed_chroma_matches_libvmaf() {
    let pairs = std::fs::read_to_string(data().join("pairs.txt")).expect("pairs.txt");
    let mut checked = 0;
    let mut worst_all = 0.0f64;
    for line in pairs.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (pair, rclip, dclip, pix) = (f[0], f[1], f[2], f[5]);
        let (w, h): (u32, u32) = (f[3].parse().unwrap(), f[4].parse().unwrap());
        let (format, bps, (sx, _)) = layout_of(pix);
        let layout = FrameLayout {
            format,
            width: w,
            height: h,
        };
        let plan = Plan::new(layout, layout).unwrap();
        let (refs, dists) = (decode(rclip, w, h, pix), decode(dclip, w, h, pix));
        let (header, want) = reference(pair);
        assert_eq!(refs.len(), want.len(), "{pair}: frames");
        assert_eq!(dists.len(), want.len(), "{pair}: frames");
        let cw = (w as usize).div_ceil(1 << sx);
        let ptrs = |p: &[Vec<u8>; 3]| {
            HostFrame::new(&[
                Plane {
                    data: &p[0],
                    stride: w as usize * bps,
                },
                Plane {
                    data: &p[1],
                    stride: cw * bps,
                },
                Plane {
                    data: &p[2],
                    stride: cw * bps,
                },
            ])
            .validate(&layout, "test")
            .unwrap()
        };
        for (col, name) in header.iter().enumerate() {
            let opts = options(name);
            let mut speed = SpeedChroma::new(&plan, opts).unwrap();
            let mut worst = 0.0f64;
            let start = std::time::Instant::now();
            for (i, (r, d)) in refs.iter().zip(&dists).enumerate() {
                let got = speed.score(&ptrs(r), &ptrs(d));
                let diff = (got - want[i][col]).abs();
                assert!(
                    diff <= TOLERANCE,
                    "{pair} {name} frame {i}: {got} vs libvmaf {}",
                    want[i][col]
                );
                worst = worst.max(diff);
                checked += 1;
            }
            let ms = start.elapsed().as_secs_f64() * 1e3 / want.len() as f64;
            println!("{pair:32} {name:12} max |diff| {worst:.2e}  ({ms:.1} ms/frame)");
            worst_all = worst_all.max(worst);
        }
    }
    assert!(checked >= 400, "{checked} frame scores");
    assert!(worst_all <= TIGHT, "largest difference {worst_all:e}");
}

#[test]
fn scores_do_not_depend_on_previous_frames() {
    // libvmaf's chroma extractor keeps nothing between frames: scoring a pair again, after
    // others, gives the same number.
    let (w, h) = (640, 480);
    let (refs, dists) = (
        decode("ref_640x480_420p8", w, h, "yuv420p"),
        decode("x264_crf38_640x480_420p8", w, h, "yuv420p"),
    );
    let layout = FrameLayout {
        format: PixelFormat::I420,
        width: w,
        height: h,
    };
    let plan = Plan::new(layout, layout).unwrap();
    let ptrs = |p: &[Vec<u8>; 3]| {
        HostFrame::new(&[
            Plane {
                data: &p[0],
                stride: 640,
            },
            Plane {
                data: &p[1],
                stride: 320,
            },
            Plane {
                data: &p[2],
                stride: 320,
            },
        ])
        .validate(&layout, "test")
        .unwrap()
    };
    let mut s = SpeedChroma::new(&plan, SpeedOptions::v1_3d0h()).unwrap();
    let first = s.score(&ptrs(&refs[0]), &ptrs(&dists[0]));
    s.score(&ptrs(&refs[1]), &ptrs(&dists[1]));
    assert_eq!(s.score(&ptrs(&refs[0]), &ptrs(&dists[0])), first);
    let all = s.scores(&ptrs(&refs[0]), &ptrs(&dists[0]));
    assert_eq!(all.uv, first);
    assert!(all.u > 0.0 && all.v > 0.0 && all.u != all.v, "{all:?}");
    assert_eq!(all.uv, ((all.u as f32 + all.v as f32) / 2.0) as f64);
    // Against itself: libvmaf's small residue of mode 5, not 0.
    let own = s.score(&ptrs(&refs[0]), &ptrs(&refs[0]));
    assert!(own > 0.0 && own < 1e-4, "{own}");
    assert!(first > 1.0, "{first}");
}

#[test]
fn a_distorted_input_of_another_depth_is_rescaled_to_the_references() {
    // The reference at 8 bits, the distorted at 10 bits holding the same samples scaled by
    // 1023/255 (rounded): rescaled back, they are the 8-bit distorted exactly, so the score
    // is the all-8-bit one. (libvmaf needs equal depths; this is the engine's rule, VMAF's
    // luma's.)
    let (w, h) = (640u32, 480u32);
    let refs = decode("ref_640x480_420p8", w, h, "yuv420p");
    let dists = decode("x264_crf24_640x480_420p8", w, h, "yuv420p");
    let l8 = FrameLayout {
        format: PixelFormat::I420,
        width: w,
        height: h,
    };
    let l10 = FrameLayout {
        format: PixelFormat::I420_10Le,
        ..l8
    };
    let widen = |p: &[Vec<u8>; 3]| -> [Vec<u8>; 3] {
        p.clone().map(|plane| {
            plane
                .iter()
                .flat_map(|&u| (((u as u32 * 1023 + 127) / 255) as u16).to_le_bytes())
                .collect()
        })
    };
    let frame = |p: &[Vec<u8>; 3], bps: usize, layout: &FrameLayout| {
        HostFrame::new(&[
            Plane {
                data: &p[0],
                stride: 640 * bps,
            },
            Plane {
                data: &p[1],
                stride: 320 * bps,
            },
            Plane {
                data: &p[2],
                stride: 320 * bps,
            },
        ])
        .validate(layout, "test")
        .unwrap()
    };
    let opts = SpeedOptions::v1_3d0h();
    let mut same = SpeedChroma::new(&Plan::new(l8, l8).unwrap(), opts).unwrap();
    let mut mixed = SpeedChroma::new(&Plan::new(l8, l10).unwrap(), opts).unwrap();
    let d10 = widen(&dists[0]);
    let want = same.score(&frame(&refs[0], 1, &l8), &frame(&dists[0], 1, &l8));
    let got = mixed.score(&frame(&refs[0], 1, &l8), &frame(&d10, 2, &l10));
    assert!(want > 1.0, "{want}");
    assert_eq!(got, want);
}
