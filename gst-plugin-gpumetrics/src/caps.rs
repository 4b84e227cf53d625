// SPDX-License-Identifier: MPL-2.0
//! Caps of the element's pads and their translation to the engine's [`FrameLayout`].

use gpumetrics_engine::{
    ChromaSiting, ColorFamily, Colorimetry, FrameLayout, Matrix, PixelFormat, PlaneOffsets,
    Primaries, Range, Transfer,
};

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

/// `caps` with the structures in CUDA memory first (the order a caps query answers in is
/// the order of preference: upstream elements that can give either, such as `cudaupload`
/// or `cudaconvert`, then hand over CUDA memory, which the CUDA backend reads in place).
pub fn cuda_memory_first(caps: &gst::Caps) -> gst::Caps {
    if caps.is_any() || caps.is_empty() {
        return caps.clone();
    }
    let mut cuda = gst::Caps::new_empty();
    let mut other = gst::Caps::new_empty();
    for (s, f) in caps.iter_with_features() {
        let target = if f.contains(CUDA_MEMORY_FEATURE) {
            cuda.get_mut().unwrap()
        } else {
            other.get_mut().unwrap()
        };
        target.append_structure_full(s.to_owned(), Some(f.to_owned()));
    }
    cuda.get_mut().unwrap().append(other);
    cuda
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

/// Where a buffer says its planes are: its `GstVideoMeta`, else `fallback` (e.g. the CUDA
/// memory's own layout), else the caps' default layout. A meta that describes another
/// format or size than the caps is refused. Nothing is checked against the buffer's size
/// here: that is [`PlaneOffsets::check`]'s job, on the mapped size.
pub fn stated_planes(
    buffer: &gst::BufferRef,
    info: &gst_video::VideoInfo,
    fallback: Option<PlaneOffsets>,
) -> Result<PlaneOffsets, String> {
    let n = info.n_planes() as usize;
    if let Some(meta) = buffer.meta::<gst_video::VideoMeta>() {
        if meta.format() != info.format()
            || meta.width() != info.width()
            || meta.height() != info.height()
        {
            return Err(format!(
                "the buffer's video meta describes a {}x{} {} frame, but the caps say {}x{} {}; \
                 the producer must send frames of its caps (renegotiate first)",
                meta.width(),
                meta.height(),
                meta.format().to_str(),
                info.width(),
                info.height(),
                info.format().to_str()
            ));
        }
        return Ok(plane_offsets(meta.offset(), meta.stride()));
    }
    if let Some(f) = fallback {
        return Ok(f);
    }
    Ok(plane_offsets(&info.offset()[..n], &info.stride()[..n]))
}

/// GStreamer's offsets and i32 strides as [`PlaneOffsets`], without allocating (this runs
/// for every frame).
fn plane_offsets(offsets: &[usize], strides: &[i32]) -> PlaneOffsets {
    let mut wide = [0i64; 4];
    let n = strides.len().min(wide.len());
    for (w, s) in wide.iter_mut().zip(&strides[..n]) {
        *w = *s as i64;
    }
    PlaneOffsets::new(offsets, &wide[..n])
}

/// The engine's colorimetry for negotiated video info (`colorimetry` and `chroma-site` of
/// the caps). Fields the caps leave unknown take the engine's defaults for the format
/// family (BT.709 limited range through BT.1886 for YUV, sRGB full range for RGB and gray;
/// BT.709 primaries; left-sited chroma). Transfers the engine cannot linearise map to
/// `Transfer::Other`, which it refuses with a reason.
pub fn colorimetry(info: &gst_video::VideoInfo, family: ColorFamily) -> Colorimetry {
    use gst_video::VideoColorPrimaries as P;
    use gst_video::VideoTransferFunction as T;
    use gst_video::{VideoChromaSite, VideoColorMatrix as M, VideoColorRange as R};
    let default = Colorimetry::default_for(family);
    let c = info.colorimetry();
    let matrix = match c.matrix() {
        M::Bt601 => Matrix::Bt601,
        M::Bt709 => Matrix::Bt709,
        M::Bt2020 => Matrix::Bt2020,
        M::Fcc => Matrix::Fcc,
        M::Smpte240m => Matrix::Smpte240m,
        _ => default.matrix,
    };
    let range = match c.range() {
        R::Range0_255 => Range::Full,
        R::Range16_235 => Range::Limited,
        _ => default.range,
    };
    // The SDR video transfers are shown through the BT.1886 display (as the reference
    // `yuvxyb` maps them), not inverted to camera light.
    let transfer = match c.transfer() {
        T::Unknown => default.transfer,
        T::Srgb => Transfer::Srgb,
        T::Bt709 | T::Bt601 | T::Smpte240m | T::Bt202010 | T::Bt202012 => Transfer::Bt1886,
        T::Gamma10 => Transfer::Linear,
        T::Gamma18 => Transfer::Gamma18,
        T::Gamma20 => Transfer::Gamma20,
        T::Gamma22 => Transfer::Gamma22,
        T::Gamma28 => Transfer::Gamma28,
        T::Adobergb => Transfer::AdobeRgb,
        T::Log100 => Transfer::Log100,
        T::Log316 => Transfer::Log316,
        T::Smpte2084 => Transfer::Pq,
        T::AribStdB67 => Transfer::Hlg,
        _ => Transfer::Other,
    };
    let primaries = match c.primaries() {
        P::Bt709 => Primaries::Bt709,
        P::Bt470m => Primaries::Bt470m,
        P::Bt470bg => Primaries::Bt470bg,
        P::Smpte170m | P::Smpte240m => Primaries::Smpte170m,
        P::Film => Primaries::Film,
        P::Bt2020 => Primaries::Bt2020,
        P::Adobergb => Primaries::AdobeRgb,
        P::Smptest428 => Primaries::Xyz,
        P::Smpterp431 => Primaries::DciP3,
        P::Smpteeg432 => Primaries::DisplayP3,
        P::Ebu3213 => Primaries::Ebu3213,
        _ => default.primaries,
    };
    let site = info.chroma_site();
    let siting = if site.is_empty() {
        default.siting
    } else {
        ChromaSiting {
            h_cosited: site.contains(VideoChromaSite::H_COSITED),
            v_cosited: site.contains(VideoChromaSite::V_COSITED),
        }
    };
    Colorimetry {
        matrix,
        range,
        transfer,
        primaries,
        siting,
    }
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

    #[test]
    fn cuda_memory_comes_first_when_preferred() {
        gst::init().unwrap();
        let t = template_caps();
        assert!(!is_cuda_memory(&t), "system memory first in the template");
        let c = cuda_memory_first(&t);
        assert_eq!(c.size(), t.size());
        assert!(is_cuda_memory(&c));
        assert!(
            !c.features(c.size() - 1)
                .unwrap()
                .contains(CUDA_MEMORY_FEATURE)
        );
        assert!(
            c.can_intersect(&t) && c.is_subset(&t) && t.is_subset(&c),
            "the same caps, in another order"
        );
    }

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

    #[test]
    fn colorimetry_from_caps() {
        gst::init().unwrap();
        let info =
            |s: &str| gst_video::VideoInfo::from_caps(&s.parse::<gst::Caps>().unwrap()).unwrap();
        let c = colorimetry(
            &info("video/x-raw,format=I420,width=64,height=48,colorimetry=bt2020,chroma-site=jpeg"),
            ColorFamily::Yuv,
        );
        assert_eq!((c.matrix, c.range), (Matrix::Bt2020, Range::Limited));
        assert_eq!(c.transfer, Transfer::Bt1886); // BT.2020 video is shown through BT.1886
        assert!(!c.siting.h_cosited && !c.siting.v_cosited);
        let c = colorimetry(
            &info(
                "video/x-raw,format=NV12,width=64,height=48,colorimetry=1:4:0:0,chroma-site=mpeg2",
            ),
            ColorFamily::Yuv,
        );
        assert_eq!((c.matrix, c.range), (Matrix::Bt601, Range::Full));
        assert!(c.siting.h_cosited && !c.siting.v_cosited);
        let c = colorimetry(
            &info("video/x-raw,format=P010_10LE,width=64,height=48,colorimetry=bt2100-pq"),
            ColorFamily::Yuv,
        );
        assert_eq!((c.transfer, c.primaries), (Transfer::Pq, Primaries::Bt2020));
        let c = colorimetry(
            &info("video/x-raw,format=P010_10LE,width=64,height=48,colorimetry=bt2100-hlg"),
            ColorFamily::Yuv,
        );
        assert_eq!(
            (c.transfer, c.primaries),
            (Transfer::Hlg, Primaries::Bt2020)
        );
        let c = colorimetry(
            &info("video/x-raw,format=I420,width=720,height=576,colorimetry=bt601"),
            ColorFamily::Yuv,
        );
        assert_eq!((c.matrix, c.transfer), (Matrix::Bt601, Transfer::Bt1886));
        assert_eq!(c.primaries, Primaries::Smpte170m);
        let c = colorimetry(
            &info("video/x-raw,format=RGB,width=4,height=4"),
            ColorFamily::Rgb,
        );
        assert_eq!((c.range, c.transfer), (Range::Full, Transfer::Srgb));
    }
}
