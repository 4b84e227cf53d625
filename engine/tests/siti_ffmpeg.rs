//! SI/TI against FFmpeg 5.1's `siti` filter (Debian 12's `ffmpeg`), per frame, on both
//! inputs (`si`/`ti` on the distorted clip, `ref-si`/`ref-ti` on the reference clip).
//!
//! The generator is this file: each case is two synthetic lavfi sources (testsrc2,
//! mandelbrot, black segments, temporal noise) at odd sizes, 8 and 10 bit, 4:2:0 and 4:2:2,
//! limited and full range. FFmpeg decodes each to raw frames and, through the same filter
//! chain, prints its `lavfi.siti.si` / `lavfi.siti.ti` (`siti,metadata=print:file=-`); the
//! engine's CPU backend measures the raw frames. `GPUMETRICS_FFMPEG_CACHE=DIR` keeps
//! FFmpeg's outputs (common::ffmpeg).
//!
//! FFmpeg prints two decimals, so a value is checked within the brief's tolerance (1e-3
//! absolute + 0.5 % relative) plus half the printed step (0.005); the test also prints how
//! many values print exactly as FFmpeg's, and the largest difference.

mod common;

use common::ffmpeg;
use gpumetrics_engine::metric::siti::FLAG;
use gpumetrics_engine::{
    BackendChoice, Colorimetry, Engine, EngineConfig, Frame, FrameLayout, HostFrame, PixelFormat,
    Plane, Range,
};

struct Case {
    name: &'static str,
    /// lavfi sources of the distorted and the reference clip.
    distorted: &'static str,
    reference: &'static str,
    /// The filter chain both go through before `siti` (and before the raw output): it
    /// scales to the case's size (testsrc2 and color make even sizes only) and format.
    chain: &'static str,
    pix_fmt: &'static str,
    width: u32,
    height: u32,
    full_range: bool,
}

const CASES: &[Case] = &[
    Case {
        name: "8-bit 4:2:0 97x61, testsrc2 vs mandelbrot",
        distorted: "testsrc2=s=97x61:r=10:d=1",
        reference: "mandelbrot=s=97x61:r=10",
        chain: "scale=97:61,format=yuv420p",
        pix_fmt: "yuv420p",
        width: 97,
        height: 61,
        full_range: false,
    },
    Case {
        name: "10-bit 4:2:0 97x61, noisy testsrc2 vs black then testsrc2",
        distorted: "testsrc2=s=97x61:r=10:d=1,noise=alls=30:allf=t",
        reference: "color=c=black:s=97x61:r=10:d=0.4[a];testsrc2=s=97x61:r=10:d=0.6[b];[a][b]concat=n=2",
        chain: "scale=97:61,format=yuv420p10le",
        pix_fmt: "yuv420p10le",
        width: 97,
        height: 61,
        full_range: false,
    },
    Case {
        name: "8-bit 4:2:2 64x37 full range, testsrc2 then black vs mandelbrot",
        distorted: "testsrc2=s=64x37:r=10:d=0.5[a];color=c=black:s=64x37:r=10:d=0.5[b];[a][b]concat=n=2",
        reference: "mandelbrot=s=64x37:r=10",
        chain: "scale=64:37:out_range=full,format=yuvj422p",
        pix_fmt: "yuvj422p",
        width: 64,
        height: 37,
        full_range: true,
    },
    Case {
        name: "10-bit 4:2:2 33x17 full range, mandelbrot vs noisy testsrc2",
        distorted: "mandelbrot=s=33x17:r=10",
        reference: "testsrc2=s=33x17:r=10:d=1,noise=alls=60:allf=t+u",
        chain: "scale=33:17:out_range=full,format=yuv422p10le",
        pix_fmt: "yuv422p10le",
        width: 33,
        height: 17,
        full_range: true,
    },
];

/// Frames per clip.
const FRAMES: usize = 10;

fn layout_of(pix_fmt: &str) -> (PixelFormat, usize, u32) {
    match pix_fmt {
        "yuv420p" => (PixelFormat::I420, 1, 1),
        "yuv420p10le" => (PixelFormat::I420_10Le, 2, 1),
        "yuvj422p" => (PixelFormat::Y42b, 1, 0),
        "yuv422p10le" => (PixelFormat::I422_10Le, 2, 0),
        other => panic!("no layout for {other}"),
    }
}

/// `source` through `chain`, as tightly packed raw frames split into planes.
fn raw_frames(source: &str, case: &Case) -> Vec<[Vec<u8>; 3]> {
    let frames = FRAMES.to_string();
    let raw = ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        source,
        "-vf",
        case.chain,
        "-frames:v",
        &frames,
        "-f",
        "rawvideo",
        "-",
    ]);
    let (_, bps, sub_y) = layout_of(case.pix_fmt);
    let (w, h) = (case.width as usize, case.height as usize);
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(1 << sub_y));
    let sizes = [w * h * bps, cw * ch * bps, cw * ch * bps];
    let frame_bytes: usize = sizes.iter().sum();
    assert_eq!(raw.len(), frame_bytes * FRAMES, "{}: {source}", case.name);
    raw.chunks(frame_bytes)
        .map(|f| {
            let (y, rest) = f.split_at(sizes[0]);
            let (u, v) = rest.split_at(sizes[1]);
            [y.to_vec(), u.to_vec(), v.to_vec()]
        })
        .collect()
}

/// FFmpeg's printed (si, ti) per frame of `source` through `chain`.
fn ffmpeg_siti(source: &str, case: &Case) -> Vec<(String, String)> {
    let frames = FRAMES.to_string();
    let chain = format!("{},siti,metadata=print:file=-", case.chain);
    let out = ffmpeg(&[
        "-f",
        "lavfi",
        "-i",
        source,
        "-vf",
        &chain,
        "-frames:v",
        &frames,
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
    let (si, ti) = (values("lavfi.siti.si="), values("lavfi.siti.ti="));
    assert_eq!(
        (si.len(), ti.len()),
        (FRAMES, FRAMES),
        "{}: {text}",
        case.name
    );
    si.into_iter().zip(ti).collect()
}

fn host<'a>(planes: &'a [Vec<u8>; 3], case: &Case) -> Frame<'a> {
    let (_, bps, _) = layout_of(case.pix_fmt);
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

#[test]
fn siti_equals_ffmpeg_5_1_on_both_inputs() {
    let (mut compared, mut same_print, mut largest) = (0, 0, (0.0f64, String::new()));
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
        let config = EngineConfig {
            metrics: FLAG,
            backend: BackendChoice::Cpu,
            ..Default::default()
        };
        let mut engine = Engine::builder(&config, layout, layout)
            .colorimetry(colorimetry, colorimetry)
            .build()
            .unwrap();
        let dist = raw_frames(case.distorted, case);
        let refs = raw_frames(case.reference, case);
        let want_dist = ffmpeg_siti(case.distorted, case);
        let want_ref = ffmpeg_siti(case.reference, case);
        for i in 0..FRAMES {
            let s = engine
                .compare(&host(&refs[i], case), &host(&dist[i], case))
                .unwrap();
            let expected = [
                ("si", &want_dist[i].0),
                ("ti", &want_dist[i].1),
                ("ref-si", &want_ref[i].0),
                ("ref-ti", &want_ref[i].1),
            ];
            for (field, printed) in expected {
                let got = s
                    .get(field)
                    .unwrap_or_else(|| panic!("{}: no {field}", case.name));
                let want: f64 = printed.parse().unwrap();
                let diff = (got - want).abs();
                compared += 1;
                same_print += (format!("{got:.2}") == *printed) as usize;
                if diff > largest.0 {
                    largest = (
                        diff,
                        format!("{} frame {i} {field}: {got} vs {printed}", case.name),
                    );
                }
                assert!(
                    diff <= 1e-3 + 0.005 * want.abs() + 0.005,
                    "{} frame {i} {field}: engine {got}, FFmpeg {printed}",
                    case.name
                );
            }
            if i == 0 {
                assert_eq!((s.get("ti"), s.get("ref-ti")), (Some(0.0), Some(0.0)));
            }
        }
    }
    println!(
        "siti: {compared} values, {same_print} print as FFmpeg's; largest difference {:.4} ({})",
        largest.0, largest.1
    );
}
