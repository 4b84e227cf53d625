// SPDX-License-Identifier: MPL-2.0
//! Caps of the element's pads and their translation to the engine's [`FrameLayout`].

use gpumetrics_engine::{FrameLayout, PixelFormat};

/// Caps feature of CUDA device memory (`video/x-raw(memory:CUDAMemory)`).
pub const CUDA_MEMORY_FEATURE: &str = "memory:CUDAMemory";

/// The GStreamer formats accepted on both sink pads (all formats the engine knows).
pub fn formats() -> Vec<gst_video::VideoFormat> {
    PixelFormat::ALL
        .iter()
        .map(|f| gst_video::VideoFormat::from_string(f.name()))
        .filter(|f| *f != gst_video::VideoFormat::Unknown)
        .collect()
}

/// Template caps of all pads: `video/x-raw` and `video/x-raw(memory:CUDAMemory)` with
/// [`formats`], any size and framerate.
pub fn template_caps() -> gst::Caps {
    let formats = formats();
    let mut caps = gst_video::VideoCapsBuilder::new()
        .format_list(formats.iter().copied())
        .build();
    let cuda = gst_video::VideoCapsBuilder::new()
        .features([CUDA_MEMORY_FEATURE])
        .format_list(formats.iter().copied())
        .build();
    caps.merge(cuda);
    caps
}

/// True when the caps carry the CUDA memory feature.
pub fn is_cuda_memory(caps: &gst::CapsRef) -> bool {
    caps.features(0)
        .is_some_and(|f| f.contains(CUDA_MEMORY_FEATURE))
}

/// The engine's layout for negotiated video info; `Err` names the unsupported format.
pub fn layout(info: &gst_video::VideoInfo) -> Result<FrameLayout, String> {
    let name = info.format().to_str();
    let format = PixelFormat::from_name(name).ok_or_else(|| {
        format!(
            "format {name} is not supported; convert it first (e.g. insert `videoconvert ! \
             video/x-raw,format=I420`)"
        )
    })?;
    Ok(FrameLayout {
        format,
        width: info.width(),
        height: info.height(),
    })
}

/// Frame duration from the caps' framerate, in nanoseconds (`None` for 0/1 or invalid).
pub fn frame_duration(info: &gst_video::VideoInfo) -> Option<u64> {
    let fps = info.fps();
    if fps.numer() <= 0 || fps.denom() <= 0 {
        return None;
    }
    gst::ClockTime::SECOND
        .nseconds()
        .checked_mul(fps.denom() as u64)
        .map(|n| n / fps.numer() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_lists_every_engine_format_with_and_without_cuda() {
        gst::init().unwrap();
        assert_eq!(formats().len(), PixelFormat::ALL.len());
        let caps = template_caps();
        assert_eq!(caps.size(), 2);
        assert!(!is_cuda_memory(&caps));
        let s = caps.structure(0).unwrap();
        let list = s.get::<gst::List>("format").unwrap();
        for f in ["GRAY8", "I420_10LE", "P010_10LE", "xBGR", "Y444_16LE"] {
            assert!(list.iter().any(|v| v.get::<&str>().unwrap() == f), "{f}");
        }
        let cuda = gst::Caps::builder_full()
            .structure_with_features(s.to_owned(), gst::CapsFeatures::new([CUDA_MEMORY_FEATURE]))
            .build();
        assert!(is_cuda_memory(&cuda));
        assert!(cuda.can_intersect(&caps));
    }

    #[test]
    fn layout_and_duration() {
        gst::init().unwrap();
        let info = gst_video::VideoInfo::builder(gst_video::VideoFormat::Nv12, 64, 48)
            .fps(gst::Fraction::new(30000, 1001))
            .build()
            .unwrap();
        let l = layout(&info).unwrap();
        assert_eq!((l.format, l.width, l.height), (PixelFormat::Nv12, 64, 48));
        assert_eq!(frame_duration(&info), Some(33_366_666));
        let rgb16 = gst_video::VideoInfo::builder(gst_video::VideoFormat::Rgb16, 4, 4)
            .build()
            .unwrap();
        assert!(layout(&rgb16).unwrap_err().contains("RGB16"));
    }
}
