// SPDX-License-Identifier: MPL-2.0
//! What each input is: its URI, size, frame rate, duration and coded format, found by
//! GStreamer's discoverer before the run. Knowing these up front lets the command refuse
//! differing sizes with an error that names `--scale`, pick an NVIDIA decoder for the
//! codec, and estimate the number of pairs for the progress display.
//!
//! Raw video has no container for the discoverer to read: a `.yuv` file is described by
//! `--width`, `--height`, `--pixel-format` and `--bitdepth` (as libvmaf's `vmaf` tool takes
//! them) and a y4m file by its own header ([`crate::raw`]); both are read by
//! `rawvideoparse`.

use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use gst::glib;
use gst_pbutils::prelude::*;

/// One input file or URI, as the discoverer saw it.
#[derive(Debug, Clone)]
pub struct Input {
    /// Which input this is (`reference` or `distorted`), for messages.
    pub role: &'static str,
    /// What the user gave (path or URI), for messages.
    pub given: String,
    pub uri: String,
    pub width: u32,
    pub height: u32,
    /// Frames per second; `None` for variable or unknown frame rate.
    pub framerate: Option<gst::Fraction>,
    pub duration: Option<gst::ClockTime>,
    /// Caps of the coded video stream (e.g. `video/x-h264, ...`).
    pub caps: Option<gst::Caps>,
    /// A live source (a network or capture URI, or what the discoverer found live): no
    /// duration, runs until Ctrl-C or the end of its stream.
    pub live: bool,
    /// Raw video (`.yuv`, y4m) and how `rawvideoparse` reads it; `None` for what
    /// `uridecodebin` decodes.
    pub raw: Option<crate::raw::Raw>,
}

impl Input {
    /// Duration of one frame, when the frame rate is known.
    pub fn frame_duration(&self) -> Option<gst::ClockTime> {
        let fr = self.framerate?;
        let (n, d) = (
            u64::try_from(fr.numer()).ok()?,
            u64::try_from(fr.denom()).ok()?,
        );
        if n == 0 || d == 0 {
            return None;
        }
        Some(gst::ClockTime::from_nseconds(
            gst::ClockTime::SECOND.nseconds() * d / n,
        ))
    }

    /// Frames in the input, estimated from duration and frame rate (none for a live input).
    pub fn estimated_frames(&self) -> Option<u64> {
        if self.live {
            return None;
        }
        let dur = self.duration?.nseconds();
        let fd = self.frame_duration()?.nseconds();
        Some((dur + fd / 2) / fd)
    }

    /// The name of the coded format's caps (e.g. `video/x-h264`).
    pub fn codec(&self) -> Option<String> {
        self.caps
            .as_ref()
            .and_then(|c| c.structure(0))
            .map(|s| s.name().to_string())
    }

    pub fn describe(&self) -> String {
        if let Some(raw) = &self.raw {
            return format!(
                "{}x{}, {:.3} fps, {} frames, {}",
                self.width,
                self.height,
                raw.framerate.numer() as f64 / raw.framerate.denom() as f64,
                raw.frames,
                raw.describe()
            );
        }
        let rate = self
            .framerate
            .map_or("variable frame rate".to_string(), |f| {
                format!("{:.3} fps", f.numer() as f64 / f.denom() as f64)
            });
        let dur = match self.duration {
            _ if self.live => "live".to_string(),
            Some(d) => format!("{:.3} s", d.nseconds() as f64 / 1e9),
            None => "unknown duration".to_string(),
        };
        format!(
            "{}x{}, {rate}, {dur}, {}",
            self.width,
            self.height,
            self.codec().unwrap_or_else(|| "unknown codec".into())
        )
    }
}

/// True for `scheme://...` (RFC 3986 scheme), which is taken as a URI rather than a path.
fn has_scheme(s: &str) -> bool {
    s.split_once("://").is_some_and(|(scheme, _)| {
        scheme.len() > 1
            && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    })
}

/// A path or URI as a URI; a path must exist and be readable.
pub fn to_uri(given: &str, role: &str) -> Result<String> {
    if has_scheme(given) {
        return Ok(given.to_string());
    }
    let path = Path::new(given);
    std::fs::File::open(path).with_context(|| format!("cannot read the {role} file {given}"))?;
    let abs = std::path::absolute(path)
        .with_context(|| format!("cannot resolve the {role} path {given}"))?;
    glib::filename_to_uri(&abs, None)
        .map(|u| u.to_string())
        .map_err(|e| anyhow!("cannot turn {given} into a URI: {e}"))
}

/// How long the discoverer waits for an input (a live one: for its first frames).
const DISCOVER_SECS: u64 = 30;

/// Opens the input and reads its first video stream's properties (of a live input, from
/// the first frames that arrive; the run then opens it again).
pub fn discover(given: &str, role: &'static str, raw: &crate::raw::RawArgs) -> Result<Input> {
    let uri = to_uri(given, role)?;
    if let Some(raw) = crate::raw::Raw::of(given, role, raw)? {
        return Ok(Input {
            role,
            given: given.to_string(),
            uri,
            width: raw.width,
            height: raw.height,
            framerate: Some(raw.framerate),
            duration: raw.duration(),
            caps: Some(raw.caps()),
            live: false,
            raw: Some(raw),
        });
    }
    let live_uri = crate::monitor::is_live_uri(&uri);
    let discoverer = gst_pbutils::Discoverer::new(gst::ClockTime::from_seconds(DISCOVER_SECS))
        .context("cannot create a GStreamer discoverer")?;
    let info = discoverer.discover_uri(&uri).map_err(|e| {
        if live_uri {
            anyhow!(
                "cannot read the {role} live input {given}: {e} (no decodable video within \
                 {DISCOVER_SECS} s: is the sender running, and is it video GStreamer can decode?)"
            )
        } else {
            anyhow!(
                "cannot decode the {role} input {given}: {e} (is it a video file GStreamer can \
                 decode? `gst-discoverer-1.0 {given}` shows what it sees)"
            )
        }
    })?;
    let Some(video) = info.video_streams().into_iter().next() else {
        bail!("the {role} input {given} has no video stream");
    };
    if video.is_image() {
        bail!("the {role} input {given} is a still image, not a video");
    }
    let fr = video.framerate();
    let framerate = (fr.numer() > 0 && fr.denom() > 0).then_some(fr);
    Ok(Input {
        role,
        given: given.to_string(),
        uri,
        width: video.width(),
        height: video.height(),
        framerate,
        duration: info.duration(),
        caps: video.caps(),
        live: live_uri || info.is_live(),
        raw: None,
    })
}
