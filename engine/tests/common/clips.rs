//! The real clips of tests/data/vmaf/ (pairs.txt: 8, 10, 12 and 16 bit, 4:2:0 and 4:4:4, an
//! odd size, 1080p and a clip against itself), decoded by FFmpeg, run through the engine,
//! and the libvmaf feature values of tests/data/features/ that
//! tests/generate_libvmaf_features.sh made from them: what every test of a metric defined
//! by a libvmaf feature extractor needs, so that such a test is its comparison alone.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use gpumetrics_engine::{
    BackendChoice, Engine, EngineConfig, EngineError, Frame, FrameLayout, HostFrame, MetricSet,
    Options, PixelFormat, Plane, Scores,
};

fn data(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data")
        .join(dir)
}

/// One (reference, distorted) pair of clips.
#[derive(Clone, Debug)]
pub struct Pair {
    pub name: String,
    pub reference: String,
    pub distorted: String,
    pub width: u32,
    pub height: u32,
    /// FFmpeg's name of the frames' format (`yuv420p10le`).
    pub pix_fmt: String,
}

/// The pairs of tests/data/vmaf/pairs.txt.
pub fn pairs() -> Vec<Pair> {
    std::fs::read_to_string(data("vmaf").join("pairs.txt"))
        .expect("tests/data/vmaf/pairs.txt")
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Pair {
                name: f[0].into(),
                reference: f[1].into(),
                distorted: f[2].into(),
                width: f[3].parse().unwrap(),
                height: f[4].parse().unwrap(),
                pix_fmt: f[5].into(),
            }
        })
        .collect()
}

/// (the engine's format, bytes per sample, chroma subsampling shift) of an FFmpeg format.
pub fn layout_of(pix_fmt: &str) -> (PixelFormat, usize, u32) {
    match pix_fmt {
        "yuv420p" => (PixelFormat::I420, 1, 1),
        "yuv420p10le" => (PixelFormat::I420_10Le, 2, 1),
        "yuv444p" => (PixelFormat::Y444, 1, 0),
        "yuv420p12le" => (PixelFormat::I420_12Le, 2, 1),
        "yuv444p16le" => (PixelFormat::Y444_16Le, 2, 0),
        other => panic!("no layout for {other}"),
    }
}

/// The backend a comparison runs on: the CPU, or `GPUMETRICS_TEST_BACKEND=cuda` (on the GPU
/// machine, frames in system memory; with `GPUMETRICS_FFMPEG_CACHE` carried from a run
/// here, since FFmpeg is not there).
pub fn backend() -> BackendChoice {
    match std::env::var("GPUMETRICS_TEST_BACKEND").as_deref() {
        Ok("cuda") => BackendChoice::Cuda,
        _ => BackendChoice::Cpu,
    }
}

/// A clip's frames, decoded at its (even) coded size and cropped to w×h: per frame the
/// three planes, tightly packed.
pub fn decode(clip: &str, w: u32, h: u32, pix_fmt: &str) -> Vec<[Vec<u8>; 3]> {
    let path = data("vmaf").join(format!("{clip}.mkv"));
    let raw = super::ffmpeg(&[
        "-i",
        path.to_str().unwrap(),
        "-f",
        "rawvideo",
        "-pix_fmt",
        pix_fmt,
        "-",
    ]);
    let (_, bps, s) = layout_of(pix_fmt);
    let (ew, eh) = (
        w.next_multiple_of(2) as usize,
        h.next_multiple_of(2) as usize,
    );
    let (w, h) = (w as usize, h as usize);
    let planes = [
        (w, h, ew, eh),
        (w.div_ceil(1 << s), h.div_ceil(1 << s), ew >> s, eh >> s),
        (w.div_ceil(1 << s), h.div_ceil(1 << s), ew >> s, eh >> s),
    ];
    let frame_bytes: usize = planes.iter().map(|p| p.2 * p.3 * bps).sum();
    assert_eq!(raw.len() % frame_bytes, 0, "{clip}: partial frame");
    raw.chunks(frame_bytes)
        .map(|f| {
            let mut pos = 0;
            planes.map(|(cw, ch, pw, ph)| {
                let mut out = Vec::with_capacity(cw * ch * bps);
                for y in 0..ch {
                    let row = pos + y * pw * bps;
                    out.extend_from_slice(&f[row..row + cw * bps]);
                }
                pos += pw * ph * bps;
                out
            })
        })
        .collect()
}

/// A decoded frame as a host frame of width `w`.
pub fn host(planes: &[Vec<u8>; 3], w: u32, bps: usize, s: u32) -> Frame<'_> {
    let cw = (w as usize).div_ceil(1 << s);
    Frame::Host(HostFrame::new(&[
        Plane {
            data: &planes[0],
            stride: w as usize * bps,
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

/// The engine's records of every frame of `pair` with `metrics` and `options` on
/// [`backend`]; the engine's error when it refuses the pair.
pub fn scores(
    pair: &Pair,
    metrics: MetricSet,
    options: Options,
) -> Result<Vec<Scores>, EngineError> {
    let refs = decode(&pair.reference, pair.width, pair.height, &pair.pix_fmt);
    let dists = decode(&pair.distorted, pair.width, pair.height, &pair.pix_fmt);
    let (format, bps, s) = layout_of(&pair.pix_fmt);
    let layout = FrameLayout {
        format,
        width: pair.width,
        height: pair.height,
    };
    let cfg = EngineConfig {
        metrics,
        backend: backend(),
        options,
        ..Default::default()
    };
    let mut engine = Engine::new(&cfg, layout, layout)?;
    let mut out = Vec::new();
    for (r, d) in refs.iter().zip(&dists) {
        out.extend(engine.push(&host(r, pair.width, bps, s), &host(d, pair.width, bps, s))?);
    }
    out.extend(engine.finish()?);
    Ok(out)
}

/// libvmaf's values of one pair in tests/data/features/<name>.csv: per frame, column →
/// value (`inf` as +inf); or libvmaf's error when it refused the pair.
pub type FeatureValues = Result<Vec<HashMap<String, f64>>, String>;

/// tests/data/features/<name>.csv (tests/generate_libvmaf_features.sh), by pair name.
pub fn libvmaf_features(name: &str) -> HashMap<String, FeatureValues> {
    let path = data("features").join(format!("{name}.csv"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    let mut out: HashMap<String, FeatureValues> = HashMap::new();
    for line in lines.filter(|l| !l.is_empty()) {
        let cells: Vec<&str> = line.split(',').collect();
        let pair = cells[0].to_string();
        if cells[1] == "refused" {
            out.insert(pair, Err(cells[2..].join(",")));
            continue;
        }
        let frame: usize = cells[1].parse().expect("a frame number");
        let row: HashMap<String, f64> = header[2..]
            .iter()
            .zip(&cells[2..])
            .map(|(h, v)| {
                (
                    h.to_string(),
                    v.parse().unwrap_or_else(|e| panic!("{v}: {e}")),
                )
            })
            .collect();
        let rows = out
            .entry(pair)
            .or_insert_with(|| Ok(Vec::new()))
            .as_mut()
            .expect("a pair is refused or scored, not both");
        assert_eq!(rows.len(), frame, "{name}.csv: frames out of order");
        rows.push(row);
    }
    out
}
