// SPDX-License-Identifier: MPL-2.0
//! The inputs: what a sink pad's caps say ([`PadCaps`], made once per caps event, with the
//! `roi` checked against them), each buffer mapped the way the backend reads it
//! ([`map_input`]: CUDA memory in place, else for the CPU) and checked into the engine's
//! [`Frame`] ([`frame`]: the whole buffer, then its `roi` rectangle in place), counting how
//! frames were read ([`MemoryStats`], the `memory-stats` property).
//!
//! Errors name the pad once, first (a frame's are the text of a stream/format element
//! error).

use gpumetrics_engine::{
    Colorimetry, DeviceFrame, EngineError, Frame, FrameLayout, HostFrame, PlaneOffsets,
};

use super::CAT;
use crate::roi::{Rect, Roi};
use crate::{caps, gstcuda};

/// One sink pad's negotiated caps, as the engine reads them.
#[derive(Debug, Clone)]
pub(crate) struct PadCaps {
    pub info: gst_video::VideoInfo,
    /// The engine's layout of `info`: the whole frames, as the buffers are checked.
    pub layout: FrameLayout,
    /// The `roi` rectangle in these frames (None: the whole frame is measured).
    pub roi: Option<Roi>,
    /// The caps' `colorimetry` and `chroma-site` as the engine converts them.
    pub colorimetry: Colorimetry,
    /// 1/framerate in ns.
    pub frame_duration: Option<u64>,
}

impl PadCaps {
    /// The caps of pad `pad` with the `roi` rectangle, or the element error that refuses
    /// them (a rectangle that does not fit these frames: the message names the frame and
    /// the nearest valid rectangle).
    pub(crate) fn new(
        caps: &gst::CapsRef,
        pad: &str,
        roi: Option<Rect>,
    ) -> Result<PadCaps, gst::ErrorMessage> {
        let info = gst_video::VideoInfo::from_caps(caps).map_err(|_| {
            gst::error_msg!(
                gst::CoreError::Negotiation,
                ("{pad}: invalid video caps {caps}")
            )
        })?;
        let layout = caps::layout(&info)
            .map_err(|e| gst::error_msg!(gst::StreamError::Format, ("{pad}: {e}")))?;
        let roi = roi
            .map(|r| Roi::new(r, &layout))
            .transpose()
            .map_err(|e| gst::error_msg!(gst::LibraryError::Settings, ("{pad}: {e}")))?;
        Ok(PadCaps {
            colorimetry: caps::colorimetry(&info, layout.format.family()),
            frame_duration: caps::frame_duration(&info),
            layout,
            roi,
            info,
        })
    }

    /// The layout the engine measures: the `roi` rectangle's, else the whole frames'.
    pub(crate) fn measured(&self) -> FrameLayout {
        self.roi.map_or(self.layout, |r| r.layout())
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

/// The engine's view of a mapped input of pad `pad`, after checking every plane of the
/// whole frame against the mapping: the `roi` rectangle of it, in place (same memory, same
/// strides), when one is set.
pub(crate) fn frame<'a>(m: &'a Mapped<'a>, caps: &PadCaps, pad: &str) -> Result<Frame<'a>, String> {
    let frame = match m {
        Mapped::Host { map, planes } => {
            HostFrame::from_mapped(map.as_slice(), &caps.layout, planes, pad).map(Frame::Host)
        }
        Mapped::Device(d) => DeviceFrame::from_mapped(d.base, d.size, &caps.layout, &d.planes, pad)
            .map(Frame::Device),
    };
    let frame = frame.map_err(|e| match e {
        // The engine's frame checks name the input (`pad`) first.
        EngineError::InvalidFrame(text) => text,
        other => format!("{pad}: {other}"),
    })?;
    Ok(match &caps.roi {
        Some(roi) => roi.crop(frame),
        None => frame,
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
        let c = PadCaps::new(&i420(16, 8), "ref_sink", None).unwrap();
        assert_eq!((c.layout.width, c.layout.height), (16, 8));
        assert_eq!(c.layout.format.name(), "I420");
        assert_eq!(c.frame_duration, Some(40_000_000));
        assert_eq!(c.describe(), "I420 16x8");
        let uyvy = gst_video::VideoInfo::builder(gst_video::VideoFormat::Uyvy, 16, 8)
            .build()
            .unwrap()
            .to_caps()
            .unwrap();
        let e = PadCaps::new(&uyvy, "dist_sink", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"dist_sink: format UYVY"), "{e}");
        let bad = gst::Caps::builder("video/x-raw").build();
        let e = PadCaps::new(&bad, "ref_sink", None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"ref_sink: invalid video caps"), "{e}");
    }

    #[test]
    fn system_memory_is_mapped_counted_and_checked_naming_the_pad_once() {
        gst::init().unwrap();
        let log = gst::Bin::new();
        let caps = PadCaps::new(&i420(16, 8), "ref_sink", None).unwrap();
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
    fn the_roi_is_checked_with_the_caps_and_cut_from_the_checked_buffer() {
        gst::init().unwrap();
        let log = gst::Bin::new();
        let rect = |x, y, width, height| Rect {
            x,
            y,
            width,
            height,
        };
        let caps = PadCaps::new(&i420(16, 8), "ref_sink", Some(rect(2, 4, 6, 4))).unwrap();
        assert_eq!(caps.layout.width, 16, "the buffers are checked in full");
        assert_eq!((caps.measured().width, caps.measured().height), (6, 4));
        assert_eq!(caps.describe(), "I420 16x8");
        let e = PadCaps::new(&i420(16, 8), "dist_sink", Some(rect(1, 4, 6, 4)))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "\"dist_sink: roi 1,4,6,4 is not aligned to the 4:2:0 chroma subsampling of \
                 I420 16x8"
            ),
            "{e}"
        );
        assert!(e.contains("the nearest valid rectangle is 0,4,8,4"), "{e}");
        let mut stats = MemoryStats::default();
        let data: Vec<u8> = (0..16 * 8 * 3 / 2).map(|i| i as u8).collect();
        let whole = gst::Buffer::from_slice(data.clone());
        let m = map_input(&whole, &caps, false, "ref_sink", &mut stats, &log).unwrap();
        let Ok(Frame::Host(f)) = frame(&m, &caps, "ref_sink") else {
            panic!("a host frame");
        };
        let [y, u, v] = f.planes() else {
            panic!("three planes");
        };
        // Row 4, column 2 of luma; row 2, column 1 of each chroma plane; the caps' strides.
        assert_eq!((y.data[0], y.stride), (data[4 * 16 + 2], 16));
        assert_eq!((u.data[0], u.stride), (data[128 + 2 * 8 + 1], 8));
        assert_eq!((v.data[0], v.stride), (data[128 + 32 + 2 * 8 + 1], 8));
        // The whole buffer is still checked: one byte short of the whole frame is refused,
        // although the rectangle's bytes are all there.
        let short = gst::Buffer::from_slice(data[..data.len() - 1].to_vec());
        let m = map_input(&short, &caps, false, "ref_sink", &mut stats, &log).unwrap();
        let Err(e) = frame(&m, &caps, "ref_sink") else {
            panic!("a short buffer was accepted");
        };
        assert!(
            e.starts_with("ref_sink: plane 2 of the 16x8 I420 buffer"),
            "{e}"
        );
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
