// SPDX-License-Identifier: MPL-2.0
//! PSNR of the element equals FFmpeg's `psnr` filter on the same frames, per plane and
//! average, within 0.001 dB (8-bit and 10-bit 4:2:0 at an odd size).
//!
//! Inputs and FFmpeg's values are committed under tests/data/psnr and produced by
//! tests/generate_psnr_reference.sh. Frames are fed through appsrc as tightly packed planes
//! with a GstVideoMeta giving those (non-default) strides and offsets, so the test also checks
//! that the element takes the layout from the meta.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use common::*;

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/psnr")
}

/// FFmpeg `metadata=print` output: per frame, key (e.g. `psnr-y`, `mse-avg`) -> value.
fn parse_ffmpeg(text: &str) -> Vec<BTreeMap<String, f64>> {
    let mut frames: Vec<BTreeMap<String, f64>> = vec![];
    for line in text.lines() {
        if line.starts_with("frame:") {
            frames.push(BTreeMap::new());
        } else if let Some(kv) = line.strip_prefix("lavfi.psnr.") {
            let (k, v) = kv.split_once('=').unwrap();
            // psnr.y -> psnr-y, mse_avg -> mse-avg
            let key = k.replace(['.', '_'], "-");
            frames.last_mut().unwrap().insert(key, v.parse().unwrap());
        }
    }
    frames
}

/// Tightly packed 4:2:0 frames of `file` as buffers with a VideoMeta for that layout.
fn load(
    file: &str,
    format: gst_video::VideoFormat,
    w: u32,
    h: u32,
    bps: usize,
) -> Vec<gst::Buffer> {
    let data = std::fs::read(data_dir().join(file)).unwrap();
    let (cw, ch) = (w.div_ceil(2) as usize, h.div_ceil(2) as usize);
    let (w, hh) = (w as usize, h as usize);
    let strides = [(w * bps) as i32, (cw * bps) as i32, (cw * bps) as i32];
    let y_size = w * hh * bps;
    let c_size = cw * ch * bps;
    let offsets = [0usize, y_size, y_size + c_size];
    let frame_size = y_size + 2 * c_size;
    assert_eq!(
        data.len() % frame_size,
        0,
        "{file}: not a whole number of frames"
    );
    data.chunks(frame_size)
        .enumerate()
        .map(|(i, chunk)| {
            let mut buf = gst::Buffer::from_mut_slice(chunk.to_vec());
            {
                let b = buf.get_mut().unwrap();
                b.set_pts(gst::ClockTime::from_mseconds(40 * i as u64));
                b.set_duration(gst::ClockTime::from_mseconds(40));
                gst_video::VideoMeta::add_full(
                    b,
                    gst_video::VideoFrameFlags::empty(),
                    format,
                    w as u32,
                    hh as u32,
                    &offsets,
                    &strides,
                )
                .unwrap();
            }
            buf
        })
        .collect()
}

fn check(pix: &str, format: gst_video::VideoFormat, bps: usize) {
    init();
    let (w, h) = (161, 121);
    let base = format!("{pix}_{w}x{h}");
    let expected = parse_ffmpeg(
        &std::fs::read_to_string(data_dir().join(format!("{base}.psnr.txt"))).unwrap(),
    );
    let reference = load(&format!("ref_{base}.yuv"), format, w, h, bps);
    let distorted = load(&format!("dist_{base}.yuv"), format, w, h, bps);
    assert_eq!(expected.len(), reference.len());
    let caps = format!(
        "video/x-raw,format={},width={w},height={h},framerate=25/1",
        format.to_str()
    );
    let run = run_buffers(&caps, "", reference, distorted);
    run.expect_ok();
    assert_eq!(run.frames.len(), expected.len());
    for (got, want) in run.frames.iter().zip(&expected) {
        assert!(want.len() >= 8, "{want:?}");
        for (key, &v) in want {
            let g = got
                .get(key)
                .unwrap_or_else(|| panic!("{base} frame {}: no field {key}", got.frame));
            if key.starts_with("psnr") {
                assert!(
                    (g - v).abs() <= 0.001,
                    "{base} frame {} {key}: gpumetrics {g} vs ffmpeg {v}",
                    got.frame
                );
            } else {
                // FFmpeg prints MSE from single precision with 6 decimals.
                assert!(
                    (g - v).abs() <= 1e-5 * v.abs().max(1.0),
                    "{base} frame {} {key}: gpumetrics {g} vs ffmpeg {v}",
                    got.frame
                );
            }
        }
    }
}

#[test]
fn psnr_matches_ffmpeg_8bit_i420() {
    check("yuv420p", gst_video::VideoFormat::I420, 1);
}

#[test]
fn psnr_matches_ffmpeg_10bit_i420_10le() {
    check("yuv420p10le", gst_video::VideoFormat::I42010le, 2);
}

#[test]
fn ffmpeg_reference_parser() {
    let f = parse_ffmpeg("frame:0 pts:0\nlavfi.psnr.mse.y=1.5\nlavfi.psnr.psnr_avg=20.25\n");
    assert_eq!(f.len(), 1);
    assert_eq!(f[0]["mse-y"], 1.5);
    assert_eq!(f[0]["psnr-avg"], 20.25);
}
