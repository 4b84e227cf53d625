//! Blur and blockiness against FFmpeg 5.1's `blurdetect` and `blockdetect` (Debian 12's
//! `ffmpeg`), per frame, on both inputs (`blur`/`blockiness` on the distorted clip,
//! `ref-blur`/`ref-blockiness` on the reference clip).
//!
//! The generator is this file: each clip is made by FFmpeg from lavfi sources (testsrc2,
//! mandelbrot, black segments, 10-bit noise, Gaussian and box blur, a nearest-neighbour
//! down-up scale) or the natural photograph of the SSIMULACRA2 tests (a frozen segment),
//! some through an MPEG-2 round trip at the coarsest quantiser (real blocking), at odd
//! sizes, 8, 10, 12 and 16 bit, 4:2:0, 4:2:2 and gray, limited and full range, with
//! FFmpeg's default options and one case with other block and period options. Each clip
//! is written as raw frames; FFmpeg reads them back through
//! `blurdetect,blockdetect,metadata=print` (converting deeper luma to 8 bit on the way, as
//! its scaler does) and the engine's CPU backend measures the same raw frames.
//! `GPUMETRICS_FFMPEG_CACHE=DIR` keeps FFmpeg's outputs (common::ffmpeg).
//!
//! FFmpeg prints `%f` (6 decimals): a value is checked within 1e-3 absolute + 0.5 %
//! relative plus half the printed step; a frame FFmpeg prints as `nan` must have no field,
//! one it prints as `inf` the value +inf.
//! The test prints how many values print exactly as FFmpeg's and the largest difference.

mod common;

use common::{ffmpeg, natural_source, scratch};
use gpumetrics_engine::metric::{blockiness, blur};
use gpumetrics_engine::{
    BackendChoice, Colorimetry, Engine, EngineConfig, Frame, FrameLayout, HostFrame, Options,
    PixelFormat, Plane, Range,
};

/// How one clip is made from its source ([`input_args`]).
struct Clip {
    /// The filter chain after scaling to the case's size, before the raw output.
    chain: &'static str,
    /// Through an MPEG-2 round trip at quantiser 31 (real blocking).
    encode: bool,
}

struct Case {
    name: &'static str,
    distorted: Clip,
    reference: Clip,
    pix_fmt: &'static str,
    width: u32,
    height: u32,
    frames: usize,
    full_range: bool,
    /// blurdetect's and blockdetect's options, and the engine's same options.
    blur_args: &'static str,
    block_args: &'static str,
    options: &'static [(&'static str, f64)],
}

const fn lavfi(chain: &'static str) -> Clip {
    Clip {
        chain,
        encode: false,
    }
}

/// Sources by case, kept apart from the `Clip` table so the strings stay readable.
fn input_args(name: &str, which: usize) -> Vec<String> {
    let natural = natural_source().to_string_lossy().into_owned();
    let l = |s: &str| vec!["-f".to_string(), "lavfi".into(), "-i".into(), s.to_string()];
    let photo = |r: u32| {
        vec![
            "-loop".to_string(),
            "1".into(),
            "-framerate".into(),
            r.to_string(),
            "-i".into(),
            natural.clone(),
        ]
    };
    match (name, which) {
        ("testsrc2 vs mandelbrot", 0) => l("testsrc2=s=97x61:r=10"),
        ("testsrc2 vs mandelbrot", _) => l("mandelbrot=s=97x61:r=10"),
        ("blurred vs mpeg2", 0) => l("testsrc2=s=160x90:r=25"),
        ("blurred vs mpeg2", _) => l("testsrc2=s=160x90:r=25"),
        ("noise vs black", 0) => l("testsrc2=s=97x61:r=10"),
        ("noise vs black", _) => {
            l("color=c=black:s=97x61:r=10:d=0.4[a];testsrc2=s=97x61:r=10:d=1[b];[a][b]concat=n=2")
        }
        ("natural", 0) => photo(25),
        ("natural", _) => photo(25),
        ("options", 0) => l("testsrc2=s=64x37:r=10"),
        ("options", _) => l("mandelbrot=s=64x37:r=10"),
        ("10-bit full range", 0) => l("testsrc2=s=97x61:r=10"),
        ("10-bit full range", _) => l("mandelbrot=s=97x61:r=10"),
        ("16-bit gray", 0) => l("testsrc2=s=97x61:r=10"),
        ("16-bit gray", _) => l("mandelbrot=s=97x61:r=10"),
        ("12-bit", 0) => l("mandelbrot=s=33x17:r=10"),
        ("12-bit", _) => l("testsrc2=s=34x18:r=10"),
        ("hd", 0) => l("testsrc2=s=1280x720:r=25"),
        ("hd", _) => l("mandelbrot=s=1280x720:r=25"),
        other => panic!("no input for {other:?}"),
    }
}

const NO_OPTIONS: &[(&str, f64)] = &[];

const CASES: &[Case] = &[
    Case {
        name: "testsrc2 vs mandelbrot",
        distorted: lavfi("format=yuv420p"),
        reference: lavfi("format=yuv420p"),
        pix_fmt: "yuv420p",
        width: 97,
        height: 61,
        frames: 10,
        full_range: false,
        blur_args: "",
        block_args: "",
        options: NO_OPTIONS,
    },
    Case {
        // Gaussian blur vs real MPEG-2 blocking (q 31).
        name: "blurred vs mpeg2",
        distorted: lavfi("gblur=sigma=2.5,format=yuv420p"),
        reference: Clip {
            encode: true,
            ..lavfi("format=yuv420p")
        },
        pix_fmt: "yuv420p",
        width: 160,
        height: 90,
        frames: 12,
        full_range: false,
        blur_args: "",
        block_args: "",
        options: NO_OPTIONS,
    },
    Case {
        // 10-bit luma with low bits of its own (noise added at 10 bit), against black
        // frames (no edges: no blur; flat profiles: no blockiness) then testsrc2.
        name: "noise vs black",
        distorted: lavfi(
            "format=yuv420p10le,geq=lum='clip(lum(X\\,Y)+(random(1)-0.5)*48\\,0\\,1023)':cb='cb(X\\,Y)':cr='cr(X\\,Y)'",
        ),
        reference: lavfi("format=yuv420p10le"),
        pix_fmt: "yuv420p10le",
        width: 97,
        height: 61,
        frames: 10,
        full_range: false,
        blur_args: "",
        block_args: "",
        options: NO_OPTIONS,
    },
    Case {
        // A natural photograph, frozen (the same frame repeated): box-blurred vs
        // MPEG-2 at q 31, 4:2:2 10-bit.
        name: "natural",
        distorted: lavfi("scale=160:90,boxblur=2,format=yuv422p10le"),
        reference: Clip {
            encode: true,
            ..lavfi("scale=160:90,format=yuv420p")
        },
        pix_fmt: "yuv422p10le",
        width: 160,
        height: 90,
        frames: 6,
        full_range: false,
        blur_args: "",
        block_args: "",
        options: NO_OPTIONS,
    },
    Case {
        // Full range 8 bit (read as it is), nearest-neighbour down-up scaling (blocks of
        // 2×2 and 3×3), other block and period options.
        name: "options",
        distorted: lavfi(
            "scale=21:12:flags=neighbor,scale=64:37:flags=neighbor:out_range=full,format=yuvj422p",
        ),
        reference: lavfi("scale=out_range=full,format=yuvj422p"),
        pix_fmt: "yuvj422p",
        width: 64,
        height: 37,
        frames: 8,
        full_range: true,
        blur_args: "=block_width=16:block_height=12:block_pct=50:radius=20:low=0.05:high=0.2",
        block_args: "=period_min=2:period_max=12",
        options: &[
            ("blur-block-width", 16.0),
            ("blur-block-height", 12.0),
            ("blur-block-pct", 50.0),
            ("blur-radius", 20.0),
            ("blur-low", 0.05),
            ("blur-high", 0.2),
            ("blockiness-period-min", 2.0),
            ("blockiness-period-max", 12.0),
        ],
    },
    Case {
        // Full-range 10 bit: FFmpeg's scaler converts it to limited-range 8 bit.
        name: "10-bit full range",
        distorted: lavfi(
            "format=yuv420p10le,geq=lum='clip(lum(X\\,Y)+(random(1)-0.5)*64\\,0\\,1023)':cb='cb(X\\,Y)':cr='cr(X\\,Y)'",
        ),
        reference: lavfi("gblur=sigma=1.5,format=yuv420p10le"),
        pix_fmt: "yuv420p10le",
        width: 97,
        height: 61,
        frames: 6,
        full_range: true,
        blur_args: "",
        block_args: "",
        options: NO_OPTIONS,
    },
    Case {
        // Full-range 16-bit gray: FFmpeg's unscaled copy keeps it full range.
        name: "16-bit gray",
        distorted: lavfi(
            "format=gray16le,geq=lum='clip(lum(X\\,Y)+(random(1)-0.5)*4096\\,0\\,65535)'",
        ),
        reference: lavfi("boxblur=1,format=gray16le"),
        pix_fmt: "gray16le",
        width: 97,
        height: 61,
        frames: 4,
        full_range: true,
        blur_args: "",
        block_args: "",
        options: NO_OPTIONS,
    },
    Case {
        // 12-bit at odd sizes, noisy (the dither's table for a shift of 4).
        name: "12-bit",
        distorted: lavfi(
            "format=yuv420p12le,geq=lum='clip(lum(X\\,Y)+(random(1)-0.5)*200\\,0\\,4095)':cb='cb(X\\,Y)':cr='cr(X\\,Y)'",
        ),
        reference: lavfi("scale=33:17,format=yuv420p12le"),
        pix_fmt: "yuv420p12le",
        width: 33,
        height: 17,
        frames: 4,
        full_range: false,
        blur_args: "",
        block_args: "",
        options: NO_OPTIONS,
    },
    Case {
        name: "hd",
        distorted: Clip {
            encode: true,
            ..lavfi("format=yuv420p")
        },
        reference: lavfi("format=yuv420p"),
        pix_fmt: "yuv420p",
        width: 1280,
        height: 720,
        frames: 2,
        full_range: false,
        blur_args: "",
        block_args: "",
        options: NO_OPTIONS,
    },
];

/// (format, bytes per sample, log2 of the vertical chroma subsampling).
fn layout_of(pix_fmt: &str) -> (PixelFormat, usize, u32) {
    match pix_fmt {
        "yuv420p" => (PixelFormat::I420, 1, 1),
        "yuv420p10le" => (PixelFormat::I420_10Le, 2, 1),
        "yuv420p12le" => (PixelFormat::I420_12Le, 2, 1),
        "yuvj422p" => (PixelFormat::Y42b, 1, 0),
        "yuv422p10le" => (PixelFormat::I422_10Le, 2, 0),
        // No chroma planes (see `chroma`).
        "gray16le" => (PixelFormat::Gray16Le, 2, 0),
        other => panic!("no layout for {other}"),
    }
}

/// The clip as raw frames in `case.pix_fmt`, written to a scratch file (returned with the
/// frames split into planes).
fn make_clip(case: &Case, which: usize) -> (String, Vec<[Vec<u8>; 3]>) {
    let clip = if which == 0 {
        &case.distorted
    } else {
        &case.reference
    };
    let input = input_args(case.name, which);
    let frames = case.frames.to_string();
    let tag = format!("{}-{which}", case.name.replace(' ', "_"));
    let size = format!("scale={}:{}", case.width, case.height);
    let mut args: Vec<String> = input.clone();
    let raw_path = scratch(&format!("{tag}.raw"))
        .to_string_lossy()
        .into_owned();
    if clip.encode {
        let m2v = scratch(&format!("{tag}.m2v"))
            .to_string_lossy()
            .into_owned();
        let chain = format!("{size},{}", clip.chain);
        args.extend(
            [
                "-vf",
                &chain,
                "-frames:v",
                &frames,
                "-c:v",
                "mpeg2video",
                "-q:v",
                "31",
                "-qmin",
                "31",
                "-g",
                "6",
                "-f",
                "mpeg2video",
                "-y",
                &m2v,
            ]
            .map(String::from),
        );
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        ffmpeg(&a);
        args = ["-i", &m2v].map(String::from).to_vec();
        let fmt = format!("format={}", case.pix_fmt);
        args.extend(["-vf", &fmt].map(String::from));
    } else {
        let chain = format!("{size},{},format={}", clip.chain, case.pix_fmt);
        args.extend(["-vf", &chain].map(String::from));
    }
    args.extend(["-frames:v", &frames, "-f", "rawvideo", "-y", &raw_path].map(String::from));
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    ffmpeg(&a);
    let raw = std::fs::read(&raw_path).unwrap();
    let (_, bps, sub_y) = layout_of(case.pix_fmt);
    let (w, h) = (case.width as usize, case.height as usize);
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(1 << sub_y));
    let c = if chroma(case) { cw * ch * bps } else { 0 };
    let sizes = [w * h * bps, c, c];
    let frame_bytes: usize = sizes.iter().sum();
    assert_eq!(
        raw.len(),
        frame_bytes * case.frames,
        "{} clip {which}",
        case.name
    );
    let frames = raw
        .chunks(frame_bytes)
        .map(|f| {
            let (y, rest) = f.split_at(sizes[0]);
            let (u, v) = rest.split_at(sizes[1]);
            [y.to_vec(), u.to_vec(), v.to_vec()]
        })
        .collect();
    (raw_path, frames)
}

/// FFmpeg's printed (blur, block) per frame of the raw clip at `path`.
fn ffmpeg_values(case: &Case, path: &str) -> Vec<(String, String)> {
    let size = format!("{}x{}", case.width, case.height);
    let range = if case.full_range { "pc" } else { "tv" };
    let chain = format!(
        "blurdetect{},blockdetect{},metadata=print:file=-",
        case.blur_args, case.block_args
    );
    let out = ffmpeg(&[
        "-f",
        "rawvideo",
        "-pix_fmt",
        case.pix_fmt,
        "-s",
        &size,
        "-color_range",
        range,
        "-i",
        path,
        "-vf",
        &chain,
        "-f",
        "null",
        "-",
    ]);
    let text = String::from_utf8(out).unwrap();
    let values = |key: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.strip_prefix(key))
            .map(str::to_string)
            .collect()
    };
    let (blur, block) = (values("lavfi.blur="), values("lavfi.block="));
    assert_eq!(
        (blur.len(), block.len()),
        (case.frames, case.frames),
        "{}: {text}",
        case.name
    );
    blur.into_iter().zip(block).collect()
}

/// Whether the case's format has chroma planes.
fn chroma(case: &Case) -> bool {
    !case.pix_fmt.starts_with("gray")
}

fn host<'a>(planes: &'a [Vec<u8>; 3], case: &Case) -> Frame<'a> {
    let (_, bps, _) = layout_of(case.pix_fmt);
    if !chroma(case) {
        return Frame::Host(HostFrame::new(&[Plane {
            data: &planes[0],
            stride: case.width as usize * bps,
        }]));
    }
    let cw = (case.width as usize).div_ceil(2);
    Frame::Host(HostFrame::new(&[
        Plane {
            data: &planes[0],
            stride: case.width as usize * bps,
        },
        Plane {
            data: &planes[1],
            stride: cw * bps,
        },
        Plane {
            data: &planes[2],
            stride: cw * bps,
        },
    ]))
}

#[derive(Default)]
struct Tally {
    compared: usize,
    same_print: usize,
    absent: usize,
    infinite: usize,
    largest: (f64, String),
}

impl Tally {
    /// Checks one field against FFmpeg's printed value.
    fn check(&mut self, what: String, got: Option<f64>, printed: &str) {
        // 0/0 (`nan`, `-nan`): no field.
        if printed.contains("nan") {
            assert_eq!(
                got, None,
                "{what}: FFmpeg prints {printed}, the engine {got:?}"
            );
            self.absent += 1;
            return;
        }
        // x/0 (blockdetect on a grid of flat blocks): +inf, as FFmpeg.
        if printed == "inf" {
            assert_eq!(got, Some(f64::INFINITY), "{what}: FFmpeg prints inf");
            self.infinite += 1;
            return;
        }
        let want: f64 = printed.parse().unwrap();
        let got = got.unwrap_or_else(|| panic!("{what}: no field, FFmpeg prints {printed}"));
        let diff = (got - want).abs();
        self.compared += 1;
        self.same_print += (format!("{got:.6}") == printed) as usize;
        if diff > self.largest.0 {
            self.largest = (diff, format!("{what}: {got} vs {printed}"));
        }
        assert!(
            diff <= 1e-3 + 0.005 * want.abs() + 5e-7,
            "{what}: engine {got}, FFmpeg {printed}"
        );
    }
}

#[test]
fn blur_and_blockiness_equal_ffmpeg_5_1_on_both_inputs() {
    let mut tally = [Tally::default(), Tally::default()];
    for case in CASES {
        let (format, _, _) = layout_of(case.pix_fmt);
        let layout = FrameLayout {
            format,
            width: case.width,
            height: case.height,
        };
        let colorimetry = Colorimetry {
            range: if case.full_range {
                Range::Full
            } else {
                Range::Limited
            },
            ..Colorimetry::default()
        };
        let mut options = Options::new();
        for &(name, v) in case.options {
            options = options
                .with(name, gpumetrics_engine::OptionValue::Float(v))
                .unwrap();
        }
        let config = EngineConfig {
            metrics: blur::FLAG | blockiness::FLAG,
            backend: BackendChoice::Cpu,
            options,
            ..Default::default()
        };
        let mut engine = Engine::builder(&config, layout, layout)
            .colorimetry(colorimetry, colorimetry)
            .build()
            .unwrap();
        let (dist_path, dist) = make_clip(case, 0);
        let (ref_path, refs) = make_clip(case, 1);
        let want_dist = ffmpeg_values(case, &dist_path);
        let want_ref = ffmpeg_values(case, &ref_path);
        for i in 0..case.frames {
            let s = engine
                .compare(&host(&refs[i], case), &host(&dist[i], case))
                .unwrap();
            let at = |f: &str| format!("{} frame {i} {f}", case.name);
            tally[0].check(at("blur"), s.get("blur"), &want_dist[i].0);
            tally[0].check(at("ref-blur"), s.get("ref-blur"), &want_ref[i].0);
            tally[1].check(at("blockiness"), s.get("blockiness"), &want_dist[i].1);
            tally[1].check(
                at("ref-blockiness"),
                s.get("ref-blockiness"),
                &want_ref[i].1,
            );
        }
    }
    for (name, t) in ["blur", "blockiness"].iter().zip(&tally) {
        println!(
            "{name}: {} values, {} print as FFmpeg's, {} nan (no field), {} inf; largest \
             difference {:.6} ({})",
            t.compared, t.same_print, t.absent, t.infinite, t.largest.0, t.largest.1
        );
        assert!(t.compared > 0);
    }
}
