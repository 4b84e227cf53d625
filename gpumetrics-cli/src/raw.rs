// SPDX-License-Identifier: MPL-2.0
//! Raw video inputs: `.yuv` files described on the command line (`--width`, `--height`,
//! `--pixel-format`, `--bitdepth`, `--framerate`, as libvmaf's `vmaf` tool takes them) and
//! y4m files, which describe themselves in a one-line header.
//!
//! Both are read by `filesrc ! queue ! rawvideoparse` with every plane's stride and offset
//! given, rows packed without padding as FFmpeg and libvmaf write them (GStreamer's default
//! strides round rows up to 4 bytes, which would misread an odd width). y4m is parsed here
//! rather than by GStreamer 1.22's `y4mdec`: that one reads only 8-bit colour spaces (a
//! `C420p10` file comes out as I420 and then fails with "Failed to parse YUV4MPEG frame"),
//! and libav's y4m demuxer (`avdemux_yuv4mpegpipe`) outputs no buffer there. Each y4m frame
//! is `FRAME\n` then the planes: `rawvideoparse` reads frames of that size with the planes
//! 6 bytes in, and a probe drops the file header in front of the first one.
//!
//! Raw frames carry no colour description: the caps have none, so GStreamer's default for
//! the size (limited range) applies; y4m's `XCOLORRANGE` and chroma siting are not read.
//! Only the linear-light metrics (SSIMULACRA2, Butteraugli) depend on it.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use gst::prelude::*;

/// The help heading of the raw input options.
const RAW: &str = "Raw input (.yuv)";

/// The options that describe `.yuv` inputs.
#[derive(clap::Args, Debug, Clone)]
pub struct RawArgs {
    /// Width of the .yuv inputs, in pixels.
    #[arg(long, value_name = "PIXELS", value_parser = clap::value_parser!(u32).range(1..), help_heading = RAW)]
    pub width: Option<u32>,

    /// Height of the .yuv inputs, in pixels.
    #[arg(long, value_name = "PIXELS", value_parser = clap::value_parser!(u32).range(1..), help_heading = RAW)]
    pub height: Option<u32>,

    /// Sample layout of the .yuv inputs: 420, 422, 444 or 400 (planar, as libvmaf's vmaf
    /// tool; with --bitdepth), or a GStreamer format name (I420, I420_10LE, NV12, Y444,
    /// GRAY8, ...; the depth is the format's).
    #[arg(long, value_name = "FORMAT", help_heading = RAW)]
    pub pixel_format: Option<String>,

    /// Bits per sample of the .yuv inputs with a numeric --pixel-format: 8, 10, 12 or 16
    /// (above 8 bits, two bytes per sample, little-endian).
    #[arg(long, value_name = "BITS", value_parser = ["8", "10", "12", "16"], help_heading = RAW)]
    pub bitdepth: Option<String>,

    /// Frame rate of the .yuv inputs, N or N/D (a raw file has none; FFmpeg's rawvideo
    /// default). Frames are timed by it, and paired by those times.
    #[arg(long, value_name = "FPS", default_value = "25", value_parser = parse_framerate, help_heading = RAW)]
    pub framerate: gst::Fraction,
}

impl Default for RawArgs {
    /// No raw options: what a command line without them gives.
    fn default() -> Self {
        RawArgs {
            width: None,
            height: None,
            pixel_format: None,
            bitdepth: None,
            framerate: gst::Fraction::new(25, 1),
        }
    }
}

fn parse_framerate(s: &str) -> Result<gst::Fraction, String> {
    let (n, d) = s.split_once('/').unwrap_or((s, "1"));
    match (n.trim().parse::<i32>(), d.trim().parse::<i32>()) {
        (Ok(n), Ok(d)) if n > 0 && d > 0 => Ok(gst::Fraction::new(n, d)),
        _ => Err(format!(
            "`{}` is not a frame rate: give N or N/D with positive integers (25, 30000/1001)",
            gstgpumetrics::quote::quoted(s)
        )),
    }
}

/// A `.yuv` file (by its name, as libvmaf's tool and FFmpeg's `rawvideo` take them).
pub fn is_yuv(given: &str) -> bool {
    Path::new(given)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("yuv"))
}

impl RawArgs {
    /// The raw options given on the command line, as written (for messages).
    fn given(&self) -> Vec<&'static str> {
        [
            (self.width.is_some(), "--width"),
            (self.height.is_some(), "--height"),
            (self.pixel_format.is_some(), "--pixel-format"),
            (self.bitdepth.is_some(), "--bitdepth"),
        ]
        .into_iter()
        .filter_map(|(given, flag)| given.then_some(flag))
        .collect()
    }

    /// Usage errors, before anything is opened: a `.yuv` input lacking its description,
    /// a description of no `.yuv` input, or one GStreamer has no format for.
    /// `framerate_given`: `--framerate` was on the command line.
    pub fn check(&self, inputs: &[&str], framerate_given: bool) -> Result<(), String> {
        let yuv: Vec<&str> = inputs.iter().copied().filter(|i| is_yuv(i)).collect();
        if yuv.is_empty() {
            let mut given = self.given();
            if framerate_given {
                given.push("--framerate");
            }
            if !given.is_empty() {
                let one = given.len() == 1;
                return Err(format!(
                    "{} {} .yuv inputs, and no input is a .yuv file (other files, y4m \
                     included, describe themselves): leave {} out, or name the raw file \
                     *.yuv",
                    given.join(", "),
                    if one { "describes" } else { "describe" },
                    if one { "it" } else { "them" }
                ));
            }
            return Ok(());
        }
        let missing: Vec<&str> = [
            (self.width.is_none(), "--width"),
            (self.height.is_none(), "--height"),
            (self.pixel_format.is_none(), "--pixel-format"),
        ]
        .into_iter()
        .filter_map(|(missing, flag)| missing.then_some(flag))
        .collect();
        if !missing.is_empty() {
            return Err(format!(
                "{} is raw video without a header: give {} (e.g. --width 1920 --height 1080 \
                 --pixel-format 420 --bitdepth 8, as libvmaf's vmaf tool)",
                yuv.join(" and "),
                missing.join(", ")
            ));
        }
        self.format().map(drop)
    }

    /// The GStreamer format of the `.yuv` inputs (after [`RawArgs::check`]).
    fn format(&self) -> Result<String, String> {
        let pf = self.pixel_format.as_deref().unwrap_or_default();
        let depth = self
            .bitdepth
            .as_deref()
            .map(|d| d.parse::<u32>().unwrap_or(0));
        match (chroma_of(pf), depth) {
            (Some(chroma), Some(depth)) => planar_format(chroma, depth).map(str::to_string),
            (Some(_), None) => Err(format!(
                "--pixel-format {pf} needs --bitdepth (8, 10, 12 or 16)"
            )),
            (None, _) => {
                let info = gst_video::VideoFormat::from_string(pf);
                if info == gst_video::VideoFormat::Unknown {
                    return Err(format!(
                        "--pixel-format {pf}: neither 420, 422, 444, 400 nor a GStreamer \
                         video format name (I420, I420_10LE, NV12, Y444, GRAY8, ...)"
                    ));
                }
                let finfo = gst_video::VideoFormatInfo::from_format(info);
                if let Some(depth) = depth
                    && depth != finfo.depth()[0]
                {
                    return Err(format!(
                        "--bitdepth {depth} contradicts --pixel-format {pf} ({} bits): leave \
                         --bitdepth out with a GStreamer format name",
                        finfo.depth()[0]
                    ));
                }
                Ok(pf.to_string())
            }
        }
    }
}

/// libvmaf's and y4m's chroma names: 420, 422, 444, 400 (y4m's `mono`).
fn chroma_of(name: &str) -> Option<&'static str> {
    match name {
        "420" => Some("420"),
        "422" => Some("422"),
        "444" => Some("444"),
        "400" | "mono" => Some("400"),
        _ => None,
    }
}

/// The GStreamer format of planar `chroma` samples of `depth` bits (little-endian above 8).
fn planar_format(chroma: &str, depth: u32) -> Result<&'static str, String> {
    Ok(match (chroma, depth) {
        ("420", 8) => "I420",
        ("420", 10) => "I420_10LE",
        ("420", 12) => "I420_12LE",
        ("422", 8) => "Y42B",
        ("422", 10) => "I422_10LE",
        ("422", 12) => "I422_12LE",
        ("444", 8) => "Y444",
        ("444", 10) => "Y444_10LE",
        ("444", 12) => "Y444_12LE",
        ("444", 16) => "Y444_16LE",
        ("400", 8) => "GRAY8",
        ("400", 16) => "GRAY16_LE",
        _ => {
            return Err(format!(
                "GStreamer has no planar {chroma} format of {depth} bits (it has 420 and 422 \
                 at 8, 10 and 12 bits, 444 at 8, 10, 12 and 16, 400 at 8 and 16): convert the \
                 file with ffmpeg first"
            ));
        }
    })
}

/// What a y4m header says.
#[derive(Debug, Clone, PartialEq)]
struct Y4mHeader {
    width: u32,
    height: u32,
    framerate: gst::Fraction,
    /// The `C` tag as written (`420jpeg` when absent).
    colorspace: String,
    format: &'static str,
    /// Bytes of the header line, its newline included.
    len: u64,
}

const Y4M_MAGIC: &[u8] = b"YUV4MPEG2 ";
const Y4M_FRAME: &[u8] = b"FRAME\n";

impl Y4mHeader {
    /// Parses the header line at the start of `bytes` (the first bytes of the file).
    fn parse(bytes: &[u8]) -> Result<Y4mHeader, String> {
        let end = bytes
            .iter()
            .position(|&b| b == b'\n')
            .ok_or("its header line does not end within 4 KiB")?;
        let line = std::str::from_utf8(&bytes[Y4M_MAGIC.len()..end])
            .map_err(|_| "its header is not text")?;
        let (mut width, mut height, mut framerate) = (None, None, None);
        let mut colorspace = "420jpeg".to_string();
        for tag in line.split_ascii_whitespace() {
            let (key, value) = tag.split_at(1);
            match key {
                "W" => width = value.parse::<u32>().ok().filter(|&w| w > 0),
                "H" => height = value.parse::<u32>().ok().filter(|&h| h > 0),
                "F" => {
                    let (n, d) = value.split_once(':').unwrap_or((value, "1"));
                    framerate = match (n.parse::<i32>(), d.parse::<i32>()) {
                        (Ok(n), Ok(d)) if n > 0 && d > 0 => Some(gst::Fraction::new(n, d)),
                        _ => return Err(format!("its frame rate `F{value}` is not N:D")),
                    };
                }
                "C" => colorspace = value.to_string(),
                // Interlacing, aspect ratio, extensions: they do not change the samples.
                _ => {}
            }
        }
        let (Some(width), Some(height)) = (width, height) else {
            return Err("its header lacks the width (W) or height (H)".into());
        };
        // 420jpeg, 420mpeg2, 420paldv: 8-bit 4:2:0 sited differently; 420p10, 444p16, ...
        let (chroma, depth) = match colorspace.split_once('p') {
            Some((c, d)) if chroma_of(c).is_some() && d.parse::<u32>().is_ok() => {
                (c, d.parse().unwrap_or(0))
            }
            _ if colorspace.starts_with("420") => ("420", 8),
            _ => (colorspace.as_str(), 8),
        };
        let chroma = chroma_of(chroma).ok_or_else(|| {
            format!(
                "its colour space C{colorspace} is not one of 420, 422, 444 or mono (8 to 16 \
                 bits)"
            )
        })?;
        let format = planar_format(chroma, depth)?;
        Ok(Y4mHeader {
            width,
            height,
            framerate: framerate.unwrap_or(gst::Fraction::new(25, 1)),
            colorspace,
            format,
            len: end as u64 + 1,
        })
    }
}

/// Where the description of a raw input came from.
#[derive(Debug, Clone, PartialEq)]
enum Origin {
    Yuv,
    /// The y4m `C` tag.
    Y4m(String),
}

/// A raw input and how `rawvideoparse` reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Raw {
    path: PathBuf,
    origin: Origin,
    /// GStreamer format name (`I420_10LE`).
    pub format: String,
    pub width: u32,
    pub height: u32,
    pub framerate: gst::Fraction,
    /// Bytes in front of the first frame (y4m's header line).
    skip: u64,
    /// Bytes in front of every frame's planes (y4m's `FRAME\n`).
    frame_header: u64,
    /// Per plane: stride and offset in a frame (rows packed, without padding).
    strides: Vec<i32>,
    offsets: Vec<i32>,
    /// Bytes of one frame's samples.
    frame_bytes: u64,
    pub frames: u64,
}

impl Raw {
    /// The raw description of `given` when it is a `.yuv` file (described by `args`) or a
    /// y4m file (by its header); `None` for anything else.
    pub fn of(given: &str, role: &str, args: &RawArgs) -> Result<Option<Raw>> {
        // A local file, given as a path or a file:// URI; other URIs are never raw here.
        let path = if given.starts_with("file://") {
            match gst::glib::filename_from_uri(given) {
                Ok((path, _)) => path,
                Err(_) => return Ok(None),
            }
        } else if given.contains("://") {
            return Ok(None);
        } else {
            PathBuf::from(given)
        };
        let path = path.as_path();
        if !path.is_file() {
            return Ok(None);
        }
        let mut head = Vec::with_capacity(4096);
        std::fs::File::open(path)
            .and_then(|f| f.take(4096).read_to_end(&mut head))
            .with_context(|| format!("cannot read the {role} file {given}"))?;
        let len = std::fs::metadata(path)
            .with_context(|| format!("cannot read the {role} file {given}"))?
            .len();
        let (origin, format, width, height, framerate, skip, frame_header) =
            if head.starts_with(Y4M_MAGIC) {
                let h = Y4mHeader::parse(&head)
                    .map_err(|e| anyhow!("the {role} input {given} is a y4m file, but {e}"))?;
                let at = h.len as usize;
                if len > h.len && !head[at..].starts_with(Y4M_FRAME) {
                    bail!(
                        "the {role} input {given}: its first frame does not start with a plain \
                         `FRAME` line (frame parameters are not read): rewrite it with \
                         `ffmpeg -i {given} out.y4m`"
                    );
                }
                let origin = Origin::Y4m(h.colorspace);
                let skip = h.len;
                (
                    origin,
                    h.format.to_string(),
                    h.width,
                    h.height,
                    h.framerate,
                    skip,
                    6,
                )
            } else if is_yuv(given) {
                let format = args.format().map_err(|e| anyhow!(e))?;
                let (Some(w), Some(h)) = (args.width, args.height) else {
                    bail!("the {role} input {given} needs --width and --height");
                };
                (Origin::Yuv, format, w, h, args.framerate, 0, 0)
            } else {
                return Ok(None);
            };
        let (strides, offsets, frame_bytes) = packed_planes(&format, width, height)?;
        let mut raw = Raw {
            path: path.to_path_buf(),
            origin,
            format,
            width,
            height,
            framerate,
            skip,
            frame_header,
            strides,
            offsets,
            frame_bytes,
            frames: 0,
        };
        let step = raw.frame_bytes + raw.frame_header;
        let body = len.saturating_sub(raw.skip);
        if body == 0 {
            bail!("the {role} input {given} has no frames");
        }
        if body % step != 0 {
            let what = match &raw.origin {
                Origin::Yuv => "check --width, --height, --pixel-format and --bitdepth",
                Origin::Y4m(_) => "the file is truncated or its frames carry parameters",
            };
            bail!(
                "the {role} input {given} holds {body} bytes of frames, not a whole number of \
                 {}x{} {} frames of {step} bytes ({:.2} frames): {what}",
                raw.width,
                raw.height,
                raw.format,
                body as f64 / step as f64
            );
        }
        raw.frames = body / step;
        Ok(Some(raw))
    }

    pub fn duration(&self) -> Option<gst::ClockTime> {
        let (n, d) = (self.framerate.numer() as u64, self.framerate.denom() as u64);
        let ns = gst::ClockTime::SECOND.nseconds().checked_mul(d)?;
        Some(gst::ClockTime::from_nseconds(
            self.frames.checked_mul(ns)? / n,
        ))
    }

    /// The caps `rawvideoparse` gives the frames.
    pub fn caps(&self) -> gst::Caps {
        gst::Caps::builder("video/x-raw")
            .field("format", &self.format)
            .field("width", self.width as i32)
            .field("height", self.height as i32)
            .field("framerate", self.framerate)
            .build()
    }

    /// `raw I420_10LE (y4m C420p10)`.
    pub fn describe(&self) -> String {
        match &self.origin {
            Origin::Yuv => format!("raw {} (.yuv)", self.format),
            Origin::Y4m(c) => format!("raw {} (y4m C{c})", self.format),
        }
    }

    /// `filesrc ! queue ! rawvideoparse` in a bin with one `src` pad. The queue makes
    /// `rawvideoparse` work in push mode, where the probe that drops y4m's header sees
    /// every byte.
    pub fn source(&self) -> Result<gst::Element> {
        let make = |f: &str| {
            gst::ElementFactory::make(f).build().map_err(|_| {
                anyhow!(
                    "the GStreamer element `{f}` is missing: install the GStreamer plugins \
                     (scripts/setup-deps.sh lists them)"
                )
            })
        };
        let bin = gst::Bin::new();
        let src = make("filesrc")?;
        src.set_property("location", &self.path);
        let queue = make("queue")?;
        let parse = make("rawvideoparse")?;
        parse.set_property("format", gst_video::VideoFormat::from_string(&self.format));
        parse.set_property("width", self.width as i32);
        parse.set_property("height", self.height as i32);
        parse.set_property("framerate", self.framerate);
        parse.set_property("frame-size", (self.frame_bytes + self.frame_header) as u32);
        parse.set_property(
            "plane-strides",
            gst::Array::new(self.strides.iter().copied()),
        );
        let header = self.frame_header as i32;
        parse.set_property(
            "plane-offsets",
            gst::Array::new(self.offsets.iter().map(|o| o + header)),
        );
        bin.add_many([&src, &queue, &parse])?;
        gst::Element::link_many([&src, &queue, &parse])?;
        if self.skip > 0 {
            let left = std::sync::atomic::AtomicUsize::new(self.skip as usize);
            let pad = src.static_pad("src").context("filesrc has no src pad")?;
            pad.add_probe(gst::PadProbeType::BUFFER, move |_, info| {
                use std::sync::atomic::Ordering::Relaxed;
                let Some(buffer) = info.buffer_mut() else {
                    return gst::PadProbeReturn::Ok;
                };
                let (size, skip) = (buffer.size(), left.load(Relaxed));
                if size <= skip {
                    left.store(skip - size, Relaxed);
                    return gst::PadProbeReturn::Drop;
                }
                left.store(0, Relaxed);
                match buffer.copy_region(gst::BufferCopyFlags::MEMORY, skip..size) {
                    Ok(rest) => *buffer = rest,
                    Err(_) => return gst::PadProbeReturn::Drop,
                }
                gst::PadProbeReturn::Remove
            });
        }
        let out = parse
            .static_pad("src")
            .context("rawvideoparse has no src pad")?;
        bin.add_pad(&gst::GhostPad::with_target(&out)?)?;
        Ok(bin.upcast())
    }
}

/// Per plane of `format` at `width`x`height`: the stride and offset of rows packed without
/// padding, and the frame's size.
fn packed_planes(format: &str, width: u32, height: u32) -> Result<(Vec<i32>, Vec<i32>, u64)> {
    let vf = gst_video::VideoFormat::from_string(format);
    let info = gst_video::VideoFormatInfo::from_format(vf);
    if vf == gst_video::VideoFormat::Unknown
        || info.flags().contains(gst_video::VideoFormatFlags::TILED)
    {
        bail!("the raw format {format} cannot be read here (a tiled or unknown format)");
    }
    let (mut strides, mut offsets, mut at) = (Vec::new(), Vec::new(), 0u64);
    for plane in 0..info.n_planes() {
        let Some(c) = (0..info.n_components()).find(|&c| info.plane()[c as usize] == plane) else {
            bail!("the raw format {format} cannot be read here (plane {plane} has no component)");
        };
        let pstride = info.pixel_stride()[c as usize];
        if pstride <= 0 {
            bail!("the raw format {format} cannot be read here (its samples are packed in blocks)");
        }
        let stride = info.scale_width(c as u8, width) as u64 * pstride as u64;
        let rows = info.scale_height(c as u8, height) as u64;
        let stride32 = i32::try_from(stride).context("the frame is too wide")?;
        strides.push(stride32);
        offsets.push(i32::try_from(at).context("the frame is too large")?);
        at += stride * rows;
    }
    Ok((strides, offsets, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn y4m_headers() {
        let h = Y4mHeader::parse(b"YUV4MPEG2 W64 H48 F25:1 Ip A1:1 C420p10 XYSCSS=420P10\nFRAME\n")
            .unwrap();
        assert_eq!((h.width, h.height, h.format), (64, 48, "I420_10LE"));
        assert_eq!(h.framerate, gst::Fraction::new(25, 1));
        assert_eq!(h.len, 54);
        let h = Y4mHeader::parse(b"YUV4MPEG2 W3 H2 F30000:1001\n").unwrap();
        assert_eq!((h.format, h.colorspace.as_str()), ("I420", "420jpeg"));
        for (c, f) in [
            ("444", "Y444"),
            ("422p12", "I422_12LE"),
            ("mono", "GRAY8"),
            ("444p16", "Y444_16LE"),
        ] {
            let line = format!("YUV4MPEG2 W8 H8 F1:1 C{c}\n");
            assert_eq!(Y4mHeader::parse(line.as_bytes()).unwrap().format, f, "{c}");
        }
        let e = Y4mHeader::parse(b"YUV4MPEG2 W8 F1:1\n").unwrap_err();
        assert!(e.contains("height"), "{e}");
        let e = Y4mHeader::parse(b"YUV4MPEG2 W8 H8 C411\n").unwrap_err();
        assert!(e.contains("C411"), "{e}");
        let e = Y4mHeader::parse(b"YUV4MPEG2 W8 H8 C420p16\n").unwrap_err();
        assert!(e.contains("no planar 420 format of 16 bits"), "{e}");
    }

    #[test]
    fn planes_are_packed_without_padding() {
        gst::init().unwrap();
        // Odd sizes: GStreamer's default strides would round the rows up to 4 bytes.
        let (s, o, n) = packed_planes("I420", 63, 47).unwrap();
        assert_eq!(
            (s, o, n),
            (
                vec![63, 32, 32],
                vec![0, 63 * 47, 63 * 47 + 32 * 24],
                63 * 47 + 2 * 32 * 24
            )
        );
        let (s, _, n) = packed_planes("I420_10LE", 5, 3).unwrap();
        assert_eq!((s, n), (vec![10, 6, 6], 30 + 2 * 12));
        let (s, o, n) = packed_planes("NV12", 6, 4).unwrap();
        assert_eq!((s, o, n), (vec![6, 6], vec![0, 24], 36));
    }

    fn args(pf: Option<&str>, depth: Option<&str>) -> RawArgs {
        RawArgs {
            width: Some(64),
            height: Some(48),
            pixel_format: pf.map(String::from),
            bitdepth: depth.map(String::from),
            framerate: gst::Fraction::new(25, 1),
        }
    }

    #[test]
    fn raw_options_are_checked() {
        gst::init().unwrap();
        assert_eq!(args(Some("420"), Some("10")).format().unwrap(), "I420_10LE");
        assert_eq!(args(Some("NV12"), None).format().unwrap(), "NV12");
        assert!(
            args(Some("420"), None)
                .format()
                .unwrap_err()
                .contains("needs --bitdepth")
        );
        assert!(
            args(Some("I420"), Some("10"))
                .format()
                .unwrap_err()
                .contains("contradicts")
        );
        assert!(
            args(Some("yuv420p"), None)
                .format()
                .unwrap_err()
                .contains("neither")
        );
        let e = args(Some("420"), Some("8"))
            .check(&["a.mp4", "b.mp4"], false)
            .unwrap_err();
        assert!(
            e.contains("--width, --height, --pixel-format, --bitdepth describe"),
            "{e}"
        );
        let e = RawArgs::default().check(&["a.mp4"], true).unwrap_err();
        assert!(e.starts_with("--framerate describes .yuv inputs"), "{e}");
        let e = RawArgs::default()
            .check(&["a.YUV", "b.mp4"], false)
            .unwrap_err();
        assert!(
            e.contains("a.YUV is raw video") && e.contains("--width, --height, --pixel-format"),
            "{e}"
        );
        assert!(RawArgs::default().check(&["a.mp4", "b.y4m"], false).is_ok());
        assert!(parse_framerate("30000/1001").is_ok());
        assert!(parse_framerate("0").is_err() && parse_framerate("x").is_err());
    }
}
