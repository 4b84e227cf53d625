// SPDX-License-Identifier: MPL-2.0
//! The inputs: what a sink pad's caps say ([`PadCaps`], made once per caps event), each
//! buffer mapped the way the backend reads it ([`map_input`]: CUDA memory in place, else
//! for the CPU) and checked into the engine's [`Frame`] ([`frame`]), counting how frames
//! were read ([`MemoryStats`], the `memory-stats` property).
//!
//! Errors name the pad once, first (a frame's are the text of a stream/format element
//! error).

use gpumetrics_engine::{
    Colorimetry, DeviceFrame, EngineError, Frame, FrameLayout, HostFrame, PlaneOffsets,
};

use super::CAT;
use crate::{caps, gstcuda};

/// One sink pad's negotiated caps, as the engine reads them.
#[derive(Debug, Clone)]
pub(crate) struct PadCaps {
    pub info: gst_video::VideoInfo,
    /// The engine's layout of `info`.
    pub layout: FrameLayout,
    /// The caps' `colorimetry` and `chroma-site` as the engine converts them.
    pub colorimetry: Colorimetry,
    /// 1/framerate in ns.
    pub frame_duration: Option<u64>,
}

impl PadCaps {
    /// The caps of pad `pad`, or the element error that refuses them.
    pub(crate) fn new(caps: &gst::CapsRef, pad: &str) -> Result<PadCaps, gst::ErrorMessage> {
        let info = gst_video::VideoInfo::from_caps(caps).map_err(|_| {
            gst::error_msg!(
                gst::CoreError::Negotiation,
                ("{pad}: invalid video caps {caps}")
            )
        })?;
        let layout = caps::layout(&info)
            .map_err(|e| gst::error_msg!(gst::StreamError::Format, ("{pad}: {e}")))?;
        Ok(PadCaps {
            colorimetry: caps::colorimetry(&info, layout.format.family()),
            frame_duration: caps::frame_duration(&info),
            layout,
            info,
        })
    }

    /// `I420 64x48`, for messages.
    pub(crate) fn describe(&self) -> String {
        format!(
            "{} {}x{}",
            self.info.format().to_str(),
            self.info.width(),
            self.info.height()
        )
    }
}

/// Frames by the way they were read: in place in device memory (zero-copy), CUDA memory
/// mapped for the CPU (a device-to-host copy by GStreamer), system memory.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MemoryStats {
    pub device: u64,
    pub downloaded: u64,
    pub system: u64,
}

impl MemoryStats {
    /// The `memory-stats` property's structure.
    pub(crate) fn to_structure(self) -> gst::Structure {
        gst::Structure::builder("gpumetrics-memory")
            .field("device-frames", self.device)
            .field("downloaded-frames", self.downloaded)
            .field("system-frames", self.system)
            .build()
    }
}

/// One input frame, mapped the way the backend reads it (on the stack for one pair).
pub(crate) enum Mapped<'a> {
    /// The whole buffer mapped for reading, and where it says its planes are.
    Host {
        map: gst::BufferMap<'a, gst::buffer::Readable>,
        planes: PlaneOffsets,
    },
    Device(gstcuda::DeviceMap<'a>),
}

/// Maps one input of pad `pad`: CUDA memory in place when the backend reads device memory
/// (`device`), else for the CPU (GStreamer downloads CUDA memory then, which is counted
/// and logged once on `log`). The plane layout the buffer states (its video meta, or the
/// caps) is checked against the caps here and against the mapped size in [`frame`].
pub(crate) fn map_input<'a>(
    buffer: &'a gst::Buffer,
    caps: &PadCaps,
    device: bool,
    pad: &str,
    stats: &mut MemoryStats,
    log: &impl gst::glib::prelude::IsA<gst::Object>,
) -> Result<Mapped<'a>, String> {
    let named = |e: String| format!("{pad}: {e}");
    let cuda = gstcuda::is_cuda_buffer(buffer);
    if cuda
        && device
        && let Ok(api) = gstcuda::api()
    {
        let m = gstcuda::DeviceMap::map(api, buffer.as_ref(), &caps.info).map_err(named)?;
        stats.device += 1;
        return Ok(Mapped::Device(m));
    }
    let planes = caps::stated_planes(buffer.as_ref(), &caps.info, None).map_err(named)?;
    // The whole buffer in one mapping (several memories are merged by GStreamer), so every
    // plane offset is relative to one slice whose length is the mapped size.
    let map = buffer
        .map_readable()
        .map_err(|_| map_error(pad, cuda, buffer.as_ref()))?;
    if cuda {
        if stats.downloaded == 0 {
            gst::warning!(
                CAT,
                obj = log,
                "{pad}: CUDA memory is copied to the host for the CPU backend"
            );
        }
        stats.downloaded += 1;
    } else {
        stats.system += 1;
    }
    Ok(Mapped::Host { map, planes })
}

fn map_error(pad: &str, cuda: bool, buffer: &gst::BufferRef) -> String {
    let (size, memories) = (buffer.size(), buffer.n_memory());
    if cuda {
        format!(
            "{pad}: cannot map a CUDA memory buffer ({size} bytes in {memories} memories) for \
             the CPU backend; use backend=cuda (reads it in place) or insert `cudadownload` \
             before {pad}"
        )
    } else {
        format!(
            "{pad}: cannot map the buffer ({size} bytes in {memories} memories) for reading; \
             the producer's memory is not readable by the CPU"
        )
    }
}

/// The engine's view of a mapped input of pad `pad`, after checking every plane against
/// the mapping.
pub(crate) fn frame<'a>(m: &'a Mapped<'a>, caps: &PadCaps, pad: &str) -> Result<Frame<'a>, String> {
    let frame = match m {
        Mapped::Host { map, planes } => {
            HostFrame::from_mapped(map.as_slice(), &caps.layout, planes, pad).map(Frame::Host)
        }
        Mapped::Device(d) => DeviceFrame::from_mapped(d.base, d.size, &caps.layout, &d.planes, pad)
            .map(Frame::Device),
    };
    frame.map_err(|e| match e {
        // The engine's frame checks name the input (`pad`) first.
        EngineError::InvalidFrame(text) => text,
        other => format!("{pad}: {other}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i420(width: u32, height: u32) -> gst::Caps {
        gst_video::VideoInfo::builder(gst_video::VideoFormat::I420, width, height)
            .fps(gst::Fraction::new(25, 1))
            .build()
            .unwrap()
            .to_caps()
            .unwrap()
    }

    #[test]
    fn caps_are_read_once_with_their_layout_and_duration() {
        gst::init().unwrap();
        let c = PadCaps::new(&i420(16, 8), "ref_sink").unwrap();
        assert_eq!((c.layout.width, c.layout.height), (16, 8));
        assert_eq!(c.layout.format.name(), "I420");
        assert_eq!(c.frame_duration, Some(40_000_000));
        assert_eq!(c.describe(), "I420 16x8");
        let uyvy = gst_video::VideoInfo::builder(gst_video::VideoFormat::Uyvy, 16, 8)
            .build()
            .unwrap()
            .to_caps()
            .unwrap();
        let e = PadCaps::new(&uyvy, "dist_sink").unwrap_err().to_string();
        assert!(e.contains("\"dist_sink: format UYVY"), "{e}");
        let bad = gst::Caps::builder("video/x-raw").build();
        let e = PadCaps::new(&bad, "ref_sink").unwrap_err().to_string();
        assert!(e.contains("\"ref_sink: invalid video caps"), "{e}");
    }

    #[test]
    fn system_memory_is_mapped_counted_and_checked_naming_the_pad_once() {
        gst::init().unwrap();
        let log = gst::Bin::new();
        let caps = PadCaps::new(&i420(16, 8), "ref_sink").unwrap();
        let mut stats = MemoryStats::default();
        let whole = gst::Buffer::from_mut_slice(vec![0u8; 16 * 8 * 3 / 2]);
        let m = map_input(&whole, &caps, true, "ref_sink", &mut stats, &log).unwrap();
        assert!(matches!(frame(&m, &caps, "ref_sink"), Ok(Frame::Host(_))));
        assert_eq!(
            stats,
            MemoryStats {
                system: 1,
                ..Default::default()
            }
        );
        // A buffer shorter than its caps: refused by the engine's check, the pad named once.
        let short = gst::Buffer::from_mut_slice(vec![0u8; 100]);
        let m = map_input(&short, &caps, false, "dist_sink", &mut stats, &log).unwrap();
        let Err(e) = frame(&m, &caps, "dist_sink") else {
            panic!("a short buffer was accepted");
        };
        assert!(e.starts_with("dist_sink: "), "{e}");
        assert_eq!(e.matches("dist_sink").count(), 1, "{e}");
        assert_eq!(stats.system, 2);
        // A video meta of another size: refused before mapping, the pad named once.
        let mut meta = gst::Buffer::from_mut_slice(vec![0u8; 16 * 8 * 3 / 2]);
        gst_video::VideoMeta::add(
            meta.get_mut().unwrap(),
            gst_video::VideoFrameFlags::empty(),
            gst_video::VideoFormat::I420,
            8,
            8,
        )
        .unwrap();
        let Err(e) = map_input(&meta, &caps, false, "ref_sink", &mut stats, &log) else {
            panic!("a meta of another size was accepted");
        };
        assert!(e.starts_with("ref_sink: the buffer's video meta"), "{e}");
        assert_eq!(e.matches("ref_sink").count(), 1, "{e}");
        assert_eq!(stats.system, 2, "a refused buffer is not counted");
    }

    #[test]
    fn memory_stats_structure() {
        gst::init().unwrap();
        let s = MemoryStats {
            device: 1,
            downloaded: 2,
            system: 3,
        }
        .to_structure();
        assert_eq!(s.name(), "gpumetrics-memory");
        assert_eq!(s.get::<u64>("downloaded-frames").unwrap(), 2);
    }
}
