//! Test images made at test time: the natural photograph scaled to any size, distorted by
//! FFmpeg (JPEG, x264, blur, noise), as raw frames and as engine planes.

use std::path::Path;

use gpumetrics_engine::{PixelFormat, Plane};

use super::{ffmpeg, natural_source as source, scratch};

/// Raw frame of `file` scaled to w×h (lanczos) in `pix_fmt` (with BT.709 limited range
/// for YUV).
pub fn decode(file: &Path, w: u32, h: u32, extra_vf: &str, pix_fmt: &str) -> Vec<u8> {
    raw_frame(
        file,
        &format!(
            "scale={w}:{h}:flags=lanczos:out_color_matrix=bt709:out_range=tv{extra_vf},format={pix_fmt}"
        ),
    )
}

/// The first frame of `file` through the filter chain `vf`, as raw video.
fn raw_frame(file: &Path, vf: &str) -> Vec<u8> {
    let file = file.to_str().unwrap();
    ffmpeg(&[
        "-i",
        file,
        "-vf",
        vf,
        "-frames:v",
        "1",
        "-f",
        "rawvideo",
        "-",
    ])
}

#[derive(Clone, Copy, Debug)]
pub enum Distortion {
    Jpeg(u32),
    X264(u32),
    /// x265 Main 10 (4:2:0, 10 bit) at this CRF.
    X265Main10(u32),
    Blur,
    Noise,
}

/// The distorted version of the source at w×h, decoded to `pix_fmt`.
pub fn distorted(d: Distortion, w: u32, h: u32, pix_fmt: &str) -> Vec<u8> {
    let src = source();
    match d {
        Distortion::Jpeg(q) => {
            let f = scratch(&format!("{w}x{h}-q{q}.jpg"));
            ffmpeg(&[
                "-y",
                "-i",
                src.to_str().unwrap(),
                "-vf",
                &format!("scale={w}:{h}:flags=lanczos"),
                "-q:v",
                &q.to_string(),
                "-frames:v",
                "1",
                f.to_str().unwrap(),
            ]);
            decode(&f, w, h, "", pix_fmt)
        }
        Distortion::X264(crf) => encoded(w, h, "libx264", "yuv420p", crf, pix_fmt),
        Distortion::X265Main10(crf) => encoded(w, h, "libx265", "yuv420p10le", crf, pix_fmt),
        Distortion::Blur => decode(&src, w, h, ",gblur=sigma=1.2", pix_fmt),
        Distortion::Noise => decode(&src, w, h, ",noise=alls=24:allf=u", pix_fmt),
    }
}

/// The source at w×h encoded as one `codec` frame in `enc_fmt`, decoded to `pix_fmt`. Odd
/// sizes are padded to even ones for the encoder (4:2:0) and cropped back after decoding.
fn encoded(w: u32, h: u32, codec: &str, enc_fmt: &str, crf: u32, pix_fmt: &str) -> Vec<u8> {
    let f = scratch(&format!("{w}x{h}-{codec}-{enc_fmt}-crf{crf}.mkv"));
    let vf = format!("scale={w}:{h}:flags=lanczos,pad=ceil(iw/2)*2:ceil(ih/2)*2,format={enc_fmt}");
    let crf = crf.to_string();
    let src = source();
    let mut args = vec!["-y", "-i", src.to_str().unwrap(), "-vf", &vf, "-c:v", codec];
    args.extend(["-preset", "veryfast", "-crf", &crf, "-frames:v", "1"]);
    if codec == "libx265" {
        args.extend(["-x265-params", "log-level=error"]);
    }
    args.push(f.to_str().unwrap());
    ffmpeg(&args);
    let vf = format!(
        "format=yuv444p16le,crop={w}:{h}:0:0,scale=out_color_matrix=bt709:out_range=tv,format={pix_fmt}"
    );
    raw_frame(&f, &vf)
}

/// The Y′, Cb and Cr planes of a planar frame laid out one after the other without
/// padding: luma `w`×`h`, chroma `chroma` (width, height), `bytes` per sample.
pub fn ycbcr_planes(
    data: &[u8],
    w: usize,
    h: usize,
    (cw, ch): (usize, usize),
    bytes: usize,
) -> Vec<Plane<'_>> {
    let (y, c) = (w * h * bytes, cw * ch * bytes);
    vec![
        Plane {
            data: &data[..y],
            stride: w * bytes,
        },
        Plane {
            data: &data[y..y + c],
            stride: cw * bytes,
        },
        Plane {
            data: &data[y + c..],
            stride: cw * bytes,
        },
    ]
}

/// Planes of a raw frame of `format` as ffmpeg writes it (no padding).
pub fn planes(format: PixelFormat, w: u32, h: u32, data: &[u8]) -> Vec<Plane<'_>> {
    let (w, h) = (w as usize, h as usize);
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    match format {
        PixelFormat::Rgb => vec![Plane {
            data,
            stride: 3 * w,
        }],
        PixelFormat::Y444_10Le => (0..3)
            .map(|p| Plane {
                data: &data[p * 2 * w * h..],
                stride: 2 * w,
            })
            .collect(),
        PixelFormat::I420 => vec![
            Plane { data, stride: w },
            Plane {
                data: &data[w * h..],
                stride: cw,
            },
            Plane {
                data: &data[w * h + cw * ch..],
                stride: cw,
            },
        ],
        PixelFormat::Nv12 => vec![
            Plane { data, stride: w },
            Plane {
                data: &data[w * h..],
                stride: 2 * cw,
            },
        ],
        PixelFormat::P010_10Le => vec![
            Plane {
                data,
                stride: 2 * w,
            },
            Plane {
                data: &data[2 * w * h..],
                stride: 4 * cw,
            },
        ],
        PixelFormat::Gray8 => vec![Plane { data, stride: w }],
        other => unreachable!("{other:?}"),
    }
}
