//! SSIMULACRA2 on real decoded video against the `ssimulacra2` crate's own video path: its
//! `Yuv` input, converted by `yuvxyb` (what `ssimulacra2_rs video` measures). Issue 11.
//!
//! Generator, run at test time: FFmpeg renders `testsrc2` (and a dark version of it, all
//! values below a fifth of full scale), converts it to the case's Y'CbCr (matrix, range, bit
//! depth, subsampling), encodes it with x264 or x265 at a low quality and decodes it again.
//! The reference frames are the converted source, the distorted frames the decoded ones.
//! Both the engine (CPU backend; the GPU runs the same conversion code, checked on the GPU
//! machine) and the crate score every pair; the case's colorimetry is given to both.
//!
//! * 4:4:4 (8 and 10 bit): BT.709 and BT.601 in limited and full range, BT.2020 10-bit,
//!   PQ and HLG (BT.2020 primaries), bright and dark content: equal within 0.05. For PQ and
//!   HLG the crate's R'G'B' is clipped to [0, 1] before its EOTF, as the engine does (see
//!   [`crate_score`]); the crate's unclipped `Yuv` input is printed beside it.
//! * 4:2:0 and 4:2:2: the engine upsamples chroma with Catmull-Rom at the caps' siting, the
//!   crate repeats the nearest sample. The gap is measured per clip and held to a tight band
//!   (`CASES_SUB`); and the engine given the crate's nearest-upsampled 4:4:4 frame equals the
//!   crate within 0.05, so the upsampling is the only difference.
//!
//! `cargo test -p gpumetrics-engine --test ssimulacra2_video -- --nocapture` prints the
//! table of scores that the README's "Colour" section reports.

mod common;

use common::{ffmpeg, scratch};

use gpumetrics_engine::{
    BackendChoice, ChromaSiting, Colorimetry, Engine, EngineConfig, Frame, FrameLayout, HostFrame,
    Matrix, MetricSet, PixelFormat, Plane, Primaries, Range, Transfer,
};
use ssimulacra2::{
    ColorPrimaries, MatrixCoefficients, Pixel, Rgb, TransferCharacteristic, Yuv, YuvConfig,
    compute_frame_ssimulacra2,
};

const TOLERANCE: f64 = 0.05;
const W: u32 = 320;
const H: u32 = 180;
const FRAMES: usize = 3;

#[derive(Clone, Copy, Debug)]
struct Case {
    name: &'static str,
    codec: &'static str,
    /// FFmpeg's pixel format and our format of the same layout.
    pix_fmt: &'static str,
    format: PixelFormat,
    /// FFmpeg's `out_color_matrix` and `out_range`.
    ff_matrix: &'static str,
    full: bool,
    matrix: Matrix,
    transfer: Transfer,
    primaries: Primaries,
    content: Content,
}

/// What the clips show.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Content {
    /// FFmpeg's `testsrc2`: saturated colours, sharp edges, motion.
    Synthetic,
    /// The same at a fifth of full scale: a dark scene.
    Dark,
    /// A photograph (`tests/data/ssimulacra2/natural.jpg`) panned by 8 pixels a frame.
    Natural,
}

impl Case {
    fn bits(&self) -> u8 {
        self.format.depth() as u8
    }

    fn sub(&self) -> (u8, u8) {
        let (x, y) = self.format.subsampling();
        (x as u8, y as u8)
    }

    fn colorimetry(&self) -> Colorimetry {
        Colorimetry {
            matrix: self.matrix,
            range: if self.full {
                Range::Full
            } else {
                Range::Limited
            },
            transfer: self.transfer,
            primaries: self.primaries,
            siting: ChromaSiting::default(),
        }
    }

    /// The same colorimetry in the crate's terms.
    fn crate_config(&self, sub: (u8, u8)) -> YuvConfig {
        YuvConfig {
            bit_depth: self.bits(),
            subsampling_x: sub.0,
            subsampling_y: sub.1,
            full_range: self.full,
            matrix_coefficients: match self.matrix {
                Matrix::Bt601 => MatrixCoefficients::BT470BG,
                Matrix::Bt709 => MatrixCoefficients::BT709,
                Matrix::Bt2020 => MatrixCoefficients::BT2020NonConstantLuminance,
                Matrix::Fcc => MatrixCoefficients::BT470M,
                Matrix::Smpte240m => MatrixCoefficients::ST240M,
            },
            transfer_characteristics: match self.transfer {
                Transfer::Bt1886 if self.bits() > 8 => TransferCharacteristic::BT2020Ten,
                Transfer::Bt1886 => TransferCharacteristic::BT1886,
                Transfer::Pq => TransferCharacteristic::PerceptualQuantizer,
                Transfer::Hlg => TransferCharacteristic::HybridLogGamma,
                Transfer::Srgb => TransferCharacteristic::SRGB,
                t => panic!("no case uses {t:?}"),
            },
            color_primaries: match self.primaries {
                Primaries::Bt709 => ColorPrimaries::BT709,
                Primaries::Bt470bg => ColorPrimaries::BT470BG,
                Primaries::Smpte170m => ColorPrimaries::ST170M,
                Primaries::Bt2020 => ColorPrimaries::BT2020,
                p => panic!("no case uses {p:?}"),
            },
        }
    }
}

/// (reference, distorted) raw frames of a case: the converted source and its decoded encode.
fn clips(c: &Case) -> (Vec<u8>, Vec<u8>) {
    let size = format!("{W}x{H}");
    let photo = common::natural_source().to_str().unwrap().to_string();
    let testsrc = format!("testsrc2=size={size}:rate=25");
    let (input, first): (Vec<&str>, String) = match c.content {
        Content::Natural => (
            vec!["-loop", "1", "-framerate", "25", "-i", &photo],
            format!("crop={W}:{H}:x=40+8*n:y=100,"),
        ),
        Content::Synthetic => (vec!["-f", "lavfi", "-i", &testsrc], String::new()),
        Content::Dark => (
            vec!["-f", "lavfi", "-i", &testsrc],
            "format=rgb24,colorlevels=romax=0.2:gomax=0.2:bomax=0.2,".into(),
        ),
    };
    let range = if c.full { "pc" } else { "tv" };
    let vf = format!(
        "{first}scale=out_color_matrix={}:out_range={range},format={}",
        c.ff_matrix, c.pix_fmt
    );
    let src = scratch(&format!("{}.yuv", c.name));
    let frames = FRAMES.to_string();
    let mut args = vec!["-y"];
    args.extend(input);
    args.extend([
        "-vf",
        &vf,
        "-frames:v",
        &frames,
        "-f",
        "rawvideo",
        src.to_str().unwrap(),
    ]);
    ffmpeg(&args);
    let enc = scratch(&format!("{}.mkv", c.name));
    let quality = "30";
    let mut args = vec![
        "-y",
        "-f",
        "rawvideo",
        "-pix_fmt",
        c.pix_fmt,
        "-s",
        &size,
        "-r",
        "25",
        "-i",
        src.to_str().unwrap(),
        "-c:v",
        c.codec,
        "-preset",
        "veryfast",
        "-crf",
        quality,
        "-pix_fmt",
        c.pix_fmt,
    ];
    if c.codec == "libx265" {
        args.extend(["-x265-params", "log-level=error"]);
    }
    args.push(enc.to_str().unwrap());
    ffmpeg(&args);
    let dist = ffmpeg(&[
        "-i",
        enc.to_str().unwrap(),
        "-f",
        "rawvideo",
        "-pix_fmt",
        c.pix_fmt,
        "-",
    ]);
    (std::fs::read(&src).unwrap(), dist)
}

/// Plane sizes (width, height in samples) of a case's frames.
fn plane_sizes(sub: (u8, u8)) -> [(usize, usize); 3] {
    let (cw, ch) = (
        (W as usize).div_ceil(1 << sub.0),
        (H as usize).div_ceil(1 << sub.1),
    );
    [(W as usize, H as usize), (cw, ch), (cw, ch)]
}

/// The planes of frame `i` of a planar raw stream.
fn frame_planes(data: &[u8], bytes: usize, sub: (u8, u8), i: usize) -> [&[u8]; 3] {
    let sizes = plane_sizes(sub);
    let frame: usize = sizes.iter().map(|(w, h)| w * h * bytes).sum();
    let mut at = i * frame;
    sizes.map(|(w, h)| {
        let p = &data[at..at + w * h * bytes];
        at += w * h * bytes;
        p
    })
}

fn planes<'a>(p: [&'a [u8]; 3], sizes: [(usize, usize); 3], bytes: usize) -> [Plane<'a>; 3] {
    std::array::from_fn(|i| Plane {
        data: p[i],
        stride: sizes[i].0 * bytes,
    })
}

fn engine_score(c: &Case, format: PixelFormat, r: [&[u8]; 3], d: [&[u8]; 3]) -> f64 {
    engine_score_with(c, c.colorimetry(), "catmull-rom", format, r, d)
}

fn engine_score_with(
    c: &Case,
    colorimetry: Colorimetry,
    upsampling: &str,
    format: PixelFormat,
    r: [&[u8]; 3],
    d: [&[u8]; 3],
) -> f64 {
    let layout = FrameLayout {
        format,
        width: W,
        height: H,
    };
    let config = EngineConfig {
        metrics: MetricSet::SSIMULACRA2,
        backend: BackendChoice::Cpu,
        options: common::upsampling_options(upsampling),
        ..Default::default()
    };
    let mut e = Engine::builder(&config, layout, layout)
        .colorimetry(colorimetry, colorimetry)
        .build()
        .unwrap();
    let bytes = if c.bits() > 8 { 2 } else { 1 };
    let sub = {
        let (x, y) = format.subsampling();
        (x as u8, y as u8)
    };
    let sizes = plane_sizes(sub);
    let (rp, dp) = (planes(r, sizes, bytes), planes(d, sizes, bytes));
    let (rh, dh) = (HostFrame::new(&rp), HostFrame::new(&dp));
    let s = e.compare(&Frame::Host(rh), &Frame::Host(dh)).unwrap();
    s.get("ssimulacra2").unwrap()
}

fn crate_yuv<T: Pixel>(p: [&[u8]; 3], sub: (u8, u8), config: YuvConfig) -> Yuv<T> {
    let bytes = std::mem::size_of::<T>();
    let sizes = plane_sizes(sub);
    let planes: [ssimulacra2::Plane<T>; 3] = std::array::from_fn(|i| {
        let (w, h) = sizes[i];
        let dec = if i == 0 { (0, 0) } else { sub };
        let mut plane = ssimulacra2::Plane::new(w, h, dec.0 as usize, dec.1 as usize, 0, 0);
        plane.copy_from_raw_u8(p[i], w * bytes, bytes);
        plane
    });
    Yuv::new(ssimulacra2::Frame { planes }, config).unwrap()
}

/// The crate's score of a pair, through its own conversion of the case's Y'CbCr (`yuvxyb`:
/// its matrix to R'G'B', its EOTF, its primaries). For PQ and HLG the R'G'B' is clipped to
/// [0, 1] in between, as a display (and the engine) does: the crate's `Yuv` input takes
/// out-of-range R'G'B' through the PQ EOTF's pole and HLG's exponential (`unclipped`).
fn crate_score(c: &Case, sub: (u8, u8), r: [&[u8]; 3], d: [&[u8]; 3]) -> f64 {
    let clip = matches!(c.transfer, Transfer::Pq | Transfer::Hlg);
    crate_score_with(c, sub, clip, r, d)
}

/// [`crate_score`] without the clip: the crate's `Yuv` input as it is.
fn crate_score_unclipped(c: &Case, sub: (u8, u8), r: [&[u8]; 3], d: [&[u8]; 3]) -> f64 {
    crate_score_with(c, sub, false, r, d)
}

fn crate_score_with(c: &Case, sub: (u8, u8), clip: bool, r: [&[u8]; 3], d: [&[u8]; 3]) -> f64 {
    let config = c.crate_config(sub);
    let rgb = |p| {
        let mut rgb = if c.bits() > 8 {
            Rgb::try_from(crate_yuv::<u16>(p, sub, config))
        } else {
            Rgb::try_from(crate_yuv::<u8>(p, sub, config))
        }
        .unwrap();
        if clip {
            for v in rgb.data_mut().iter_mut().flatten() {
                *v = v.clamp(0.0, 1.0);
            }
        }
        rgb
    };
    compute_frame_ssimulacra2(rgb(r), rgb(d)).unwrap()
}

/// A subsampled frame made 4:4:4 by repeating the nearest chroma sample, as the crate reads
/// it.
fn as_planes(v: &[Vec<u8>; 3]) -> [&[u8]; 3] {
    [&v[0][..], &v[1][..], &v[2][..]]
}

fn nearest_444(p: [&[u8]; 3], bytes: usize, sub: (u8, u8)) -> [Vec<u8>; 3] {
    let (cw, _) = plane_sizes(sub)[1];
    let up = |plane: &[u8]| {
        let mut out = Vec::with_capacity(W as usize * H as usize * bytes);
        for y in 0..H as usize {
            for x in 0..W as usize {
                let at = ((y >> sub.1) * cw + (x >> sub.0)) * bytes;
                out.extend_from_slice(&plane[at..at + bytes]);
            }
        }
        out
    };
    [p[0].to_vec(), up(p[1]), up(p[2])]
}

#[allow(clippy::too_many_arguments)]
const fn case(
    name: &'static str,
    codec: &'static str,
    pix_fmt: &'static str,
    format: PixelFormat,
    ff_matrix: &'static str,
    full: bool,
    matrix: Matrix,
    transfer: Transfer,
    primaries: Primaries,
    content: Content,
) -> Case {
    Case {
        name,
        codec,
        pix_fmt,
        format,
        ff_matrix,
        full,
        matrix,
        transfer,
        primaries,
        content,
    }
}

use Matrix as M;
use PixelFormat as F;
use Primaries as P;
use Transfer as T;
const S: Content = Content::Synthetic;
const D: Content = Content::Dark;
const N: Content = Content::Natural;

/// Every colour case at 4:4:4.
const CASES_444: &[Case] = &[
    case(
        "bt709-tv-8",
        "libx264",
        "yuv444p",
        F::Y444,
        "bt709",
        false,
        M::Bt709,
        T::Bt1886,
        P::Bt709,
        S,
    ),
    case(
        "bt709-tv-8-dark",
        "libx264",
        "yuv444p",
        F::Y444,
        "bt709",
        false,
        M::Bt709,
        T::Bt1886,
        P::Bt709,
        D,
    ),
    case(
        "bt709-pc-8",
        "libx264",
        "yuv444p",
        F::Y444,
        "bt709",
        true,
        M::Bt709,
        T::Bt1886,
        P::Bt709,
        S,
    ),
    case(
        "bt709-tv-10",
        "libx265",
        "yuv444p10le",
        F::Y444_10Le,
        "bt709",
        false,
        M::Bt709,
        T::Bt1886,
        P::Bt709,
        S,
    ),
    case(
        "bt601-tv-8",
        "libx264",
        "yuv444p",
        F::Y444,
        "bt601",
        false,
        M::Bt601,
        T::Bt1886,
        P::Smpte170m,
        S,
    ),
    case(
        "bt601-pc-8-dark",
        "libx264",
        "yuv444p",
        F::Y444,
        "bt601",
        true,
        M::Bt601,
        T::Bt1886,
        P::Bt470bg,
        D,
    ),
    case(
        "bt2020-tv-10",
        "libx265",
        "yuv444p10le",
        F::Y444_10Le,
        "bt2020",
        false,
        M::Bt2020,
        T::Bt1886,
        P::Bt2020,
        S,
    ),
    case(
        "pq-tv-10",
        "libx265",
        "yuv444p10le",
        F::Y444_10Le,
        "bt2020",
        false,
        M::Bt2020,
        T::Pq,
        P::Bt2020,
        S,
    ),
    case(
        "pq-tv-10-dark",
        "libx265",
        "yuv444p10le",
        F::Y444_10Le,
        "bt2020",
        false,
        M::Bt2020,
        T::Pq,
        P::Bt2020,
        D,
    ),
    case(
        "hlg-tv-10",
        "libx265",
        "yuv444p10le",
        F::Y444_10Le,
        "bt2020",
        false,
        M::Bt2020,
        T::Hlg,
        P::Bt2020,
        S,
    ),
    case(
        "natural-bt709-tv-8",
        "libx264",
        "yuv444p",
        F::Y444,
        "bt709",
        false,
        M::Bt709,
        T::Bt1886,
        P::Bt709,
        N,
    ),
    case(
        "natural-pq-tv-10",
        "libx265",
        "yuv444p10le",
        F::Y444_10Le,
        "bt2020",
        false,
        M::Bt2020,
        T::Pq,
        P::Bt2020,
        N,
    ),
];

/// Subsampled cases, each with the band that engine − crate (Catmull-Rom against nearest
/// chroma) stays in on its frames: the measured extremes of its three frames, widened by
/// 0.05 and rounded out to 0.01 (`-- --nocapture` prints the gaps). Tight, so that an
/// upsampling or siting error moves a clip out of its band: chroma shifted by half a sample
/// horizontally takes every clip out of its band.
const CASES_SUB: &[(Case, [f64; 2])] = &[
    (
        case(
            "bt709-tv-8-420",
            "libx264",
            "yuv420p",
            F::I420,
            "bt709",
            false,
            M::Bt709,
            T::Bt1886,
            P::Bt709,
            S,
        ),
        [3.48, 6.41],
    ),
    (
        case(
            "bt709-tv-8-420-dark",
            "libx264",
            "yuv420p",
            F::I420,
            "bt709",
            false,
            M::Bt709,
            T::Bt1886,
            P::Bt709,
            D,
        ),
        [2.03, 3.40],
    ),
    (
        case(
            "bt601-pc-8-422",
            "libx264",
            "yuv422p",
            F::Y42b,
            "bt601",
            true,
            M::Bt601,
            T::Bt1886,
            P::Smpte170m,
            S,
        ),
        [2.21, 5.36],
    ),
    (
        case(
            "bt709-tv-10-420",
            "libx265",
            "yuv420p10le",
            F::I420_10Le,
            "bt709",
            false,
            M::Bt709,
            T::Bt1886,
            P::Bt709,
            S,
        ),
        [0.81, 2.68],
    ),
    (
        case(
            "bt2020-tv-10-422",
            "libx265",
            "yuv422p10le",
            F::I422_10Le,
            "bt2020",
            false,
            M::Bt2020,
            T::Bt1886,
            P::Bt2020,
            S,
        ),
        [1.02, 1.31],
    ),
    (
        case(
            "pq-tv-10-420",
            "libx265",
            "yuv420p10le",
            F::I420_10Le,
            "bt2020",
            false,
            M::Bt2020,
            T::Pq,
            P::Bt2020,
            S,
        ),
        [8.15, 12.08],
    ),
    (
        case(
            "hlg-tv-10-420",
            "libx265",
            "yuv420p10le",
            F::I420_10Le,
            "bt2020",
            false,
            M::Bt2020,
            T::Hlg,
            P::Bt2020,
            S,
        ),
        [5.58, 8.39],
    ),
    (
        case(
            "natural-bt709-8-420",
            "libx264",
            "yuv420p",
            F::I420,
            "bt709",
            false,
            M::Bt709,
            T::Bt1886,
            P::Bt709,
            N,
        ),
        [1.57, 2.09],
    ),
    (
        case(
            "natural-bt709-10-420",
            "libx265",
            "yuv420p10le",
            F::I420_10Le,
            "bt709",
            false,
            M::Bt709,
            T::Bt1886,
            P::Bt709,
            N,
        ),
        [2.11, 2.50],
    ),
    (
        case(
            "natural-bt601-8-422",
            "libx264",
            "yuv422p",
            F::Y42b,
            "bt601",
            false,
            M::Bt601,
            T::Bt1886,
            P::Smpte170m,
            N,
        ),
        [0.57, 0.70],
    ),
];

#[test]
fn yuv_444_equals_the_crates_video_path() {
    let mut worst = 0.0f64;
    println!(
        "{:<20} {:>5} {:>10} {:>10} {:>9} {:>12}",
        "case", "frame", "engine", "crate", "|diff|", "unclipped"
    );
    for c in CASES_444 {
        let (r, d) = clips(c);
        let bytes = if c.bits() > 8 { 2 } else { 1 };
        for i in 0..FRAMES {
            let (rp, dp) = (
                frame_planes(&r, bytes, c.sub(), i),
                frame_planes(&d, bytes, c.sub(), i),
            );
            let ours = engine_score(c, c.format, rp, dp);
            let theirs = crate_score(c, c.sub(), rp, dp);
            // PQ and HLG: what the crate's `Yuv` input gives without the display's clip.
            let unclipped = crate_score_unclipped(c, c.sub(), rp, dp);
            let diff = (ours - theirs).abs();
            println!(
                "{:<20} {i:>5} {ours:>10.4} {theirs:>10.4} {diff:>9.2e} {unclipped:>12.4}",
                c.name
            );
            assert!(
                diff <= TOLERANCE,
                "{}: frame {i}: {ours} vs {theirs}",
                c.name
            );
            assert!(theirs < 99.0, "{}: the encode must be distorted", c.name);
            worst = worst.max(diff);
        }
    }
    println!("largest |diff| at 4:4:4: {worst:.2e}");
}

#[test]
fn subsampled_yuv_differs_only_by_the_chroma_upsampling() {
    let mut worst = 0.0f64;
    println!(
        "{:<22} {:>5} {:>10} {:>10} {:>9} {:>12} {:>9}",
        "case", "frame", "engine", "crate", "gap", "engine 444n", "|diff|"
    );
    for (c, [lo, hi]) in CASES_SUB {
        let (r, d) = clips(c);
        let bytes = if c.bits() > 8 { 2 } else { 1 };
        let full = match c.format {
            F::I420 => F::Y444,
            F::Y42b => F::Y444,
            _ => F::Y444_10Le,
        };
        for i in 0..FRAMES {
            let (rp, dp) = (
                frame_planes(&r, bytes, c.sub(), i),
                frame_planes(&d, bytes, c.sub(), i),
            );
            let ours = engine_score(c, c.format, rp, dp);
            let theirs = crate_score(c, c.sub(), rp, dp);
            // The crate's own reading of the subsampled frame, given to the engine as 4:4:4.
            let (rn, dn) = (
                nearest_444(rp, bytes, c.sub()),
                nearest_444(dp, bytes, c.sub()),
            );
            let nearest = engine_score(c, full, as_planes(&rn), as_planes(&dn));
            // The engine's nearest upsampling on the subsampled frame itself.
            let own_nearest = engine_score_with(c, c.colorimetry(), "nearest", c.format, rp, dp);
            let (gap, diff_n) = (ours - theirs, (nearest - theirs).abs());
            println!(
                "{:<22} {i:>5} {ours:>10.4} {theirs:>10.4} {gap:>9.4} {nearest:>12.4} {diff_n:>9.2e}",
                c.name
            );
            assert!(
                diff_n <= TOLERANCE,
                "{}: frame {i}: {nearest} vs {theirs}",
                c.name
            );
            assert_eq!(
                own_nearest, nearest,
                "{}: chroma-upsampling=nearest",
                c.name
            );
            assert!(
                (*lo..=*hi).contains(&gap),
                "{}: frame {i}: engine {ours} − crate {theirs} = {gap}, outside the clip's \
                 measured band [{lo}, {hi}]",
                c.name
            );
            worst = worst.max(gap.abs());
        }
    }
    println!("largest |gap| with Catmull-Rom chroma: {worst:.3}");
}
