// SPDX-License-Identifier: MPL-2.0
//! Distortion maps through the element (`map`, `map-style`; issue 48): the SSIM
//! references' natural image pairs (tests/data/ssim/) pushed as GRAY8 and I420 buffers give
//! src frames of the documented caps and scales, read back here against scikit-image's SSIM
//! map (tests/data/maps/values.json) and NumPy's squared error, with the pairs' timestamps
//! and meta; a map without a reference is an element error.

mod common;

use common::*;
use gpumetrics_engine::map::MapKind;
use gpumetrics_engine::map::render::{gray16, heat_position, heat_rgba};
use gst::prelude::*;
use serde_json::Value;

fn repo(path: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(path)
}

fn case(name: &str) -> Value {
    let text = std::fs::read_to_string(repo("tests/data/maps/values.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap()
        .clone()
}

/// A raw file of tests/data/ssim/ as `n` buffers of `info`'s layout (25 fps).
fn buffers(info: &gst_video::VideoInfo, file: &str, n: u64) -> Vec<gst::Buffer> {
    let raw = std::fs::read(repo(&format!("tests/data/ssim/{file}"))).unwrap();
    let (w, h) = (info.width() as usize, info.height() as usize);
    (0..n)
        .map(|t| {
            let mut buf = gst::Buffer::with_size(info.size()).unwrap();
            {
                let b = buf.get_mut().unwrap();
                b.set_pts(gst::ClockTime::from_mseconds(40 * t));
                b.set_duration(gst::ClockTime::from_mseconds(40));
                let mut map = b.map_writable().unwrap();
                let data = map.as_mut_slice();
                let mut src = 0;
                for p in 0..info.n_planes() as usize {
                    let (pw, ph) = if p == 0 {
                        (w, h)
                    } else {
                        (w.div_ceil(2), h.div_ceil(2))
                    };
                    let (off, stride) = (info.offset()[p], info.stride()[p] as usize);
                    for y in 0..ph {
                        data[off + y * stride..][..pw].copy_from_slice(&raw[src..src + pw]);
                        src += pw;
                    }
                }
            }
            buf
        })
        .collect()
}

fn run_map(format: gst_video::VideoFormat, c: &Value, props: &str) -> Run {
    init();
    let (w, h) = (
        c["width"].as_u64().unwrap() as u32,
        c["height"].as_u64().unwrap() as u32,
    );
    let info = gst_video::VideoInfo::builder(format, w, h)
        .fps(gst::Fraction::new(25, 1))
        .build()
        .unwrap();
    let caps = info.to_caps().unwrap().to_string();
    run_buffers(
        &caps,
        &format!("metrics=psnr {props}"),
        buffers(&info, c["reference"].as_str().unwrap(), 2),
        buffers(&info, c["distorted"].as_str().unwrap(), 2),
    )
}

/// Pixel (x, y) of an output frame: its bytes at the caps' layout.
fn pixel(run: &Run, frame: usize, x: usize, y: usize, bytes: usize) -> Vec<u8> {
    let info = gst_video::VideoInfo::from_caps(run.out_caps.as_ref().unwrap()).unwrap();
    let map = run.out[frame].map_readable().unwrap();
    let at = y * info.stride()[0] as usize + x * bytes;
    map[at..at + bytes].to_vec()
}

#[test]
fn the_ssim_map_leaves_as_gray16_on_its_scale() {
    let c = case("camera-q10");
    let run = run_map(gst_video::VideoFormat::Gray8, &c, "map=ssim");
    run.expect_ok();
    let caps = run.out_caps.as_ref().unwrap().structure(0).unwrap();
    assert_eq!(caps.get::<&str>("format").unwrap(), "GRAY16_LE");
    assert_eq!(caps.get::<i32>("width").unwrap(), 251);
    assert_eq!(caps.get::<i32>("height").unwrap(), 187);
    assert_eq!(run.out.len(), 2);
    assert_eq!(run.out[1].pts(), Some(gst::ClockTime::from_mseconds(40)));
    // The scores go on as without a map.
    assert!(run.frames[0].get("psnr-y").is_some());
    for p in c["ssim"]["pixels"].as_array().unwrap() {
        let (x, y) = (
            p[0].as_u64().unwrap() as usize,
            p[1].as_u64().unwrap() as usize,
        );
        let want = gray16(MapKind::Ssim, p[2].as_f64().unwrap() as f32, 255.0) as i32;
        let got = pixel(&run, 0, x, y, 2);
        let got = u16::from_le_bytes([got[0], got[1]]) as i32;
        assert!((got - want).abs() <= 1, "({x}, {y}): {got} vs {want}");
    }
}

#[test]
fn the_ssim_map_as_heat_is_rgba_on_the_colour_scale() {
    let c = case("moon-q15");
    let run = run_map(gst_video::VideoFormat::Gray8, &c, "map=ssim map-style=heat");
    run.expect_ok();
    let caps = run.out_caps.as_ref().unwrap().structure(0).unwrap();
    assert_eq!(caps.get::<&str>("format").unwrap(), "RGBA");
    for p in c["ssim"]["pixels"].as_array().unwrap() {
        let (x, y) = (
            p[0].as_u64().unwrap() as usize,
            p[1].as_u64().unwrap() as usize,
        );
        let want = heat_rgba(heat_position(
            MapKind::Ssim,
            p[2].as_f64().unwrap() as f32,
            255.0,
        ));
        let got = pixel(&run, 1, x, y, 4);
        for k in 0..4 {
            assert!(
                (got[k] as i32 - want[k] as i32).abs() <= 1,
                "({x}, {y}): {got:?} vs {want:?}"
            );
        }
    }
}

#[test]
fn the_squared_error_map_of_i420_is_luma_on_its_scale() {
    let c = case("coffee-crf42");
    let run = run_map(gst_video::VideoFormat::I420, &c, "map=squared-error");
    run.expect_ok();
    let (w, h) = (320usize, 240usize);
    let read = |f: &str| std::fs::read(repo(&format!("tests/data/ssim/{f}"))).unwrap();
    let (r, d) = (
        read(c["reference"].as_str().unwrap()),
        read(c["distorted"].as_str().unwrap()),
    );
    let mut nonzero = 0;
    for y in (0..h).step_by(3) {
        for x in (0..w).step_by(5) {
            let e = r[y * w + x] as f32 - d[y * w + x] as f32;
            let want = gray16(MapKind::SquaredError, e * e, 255.0);
            let got = pixel(&run, 0, x, y, 2);
            assert_eq!(u16::from_le_bytes([got[0], got[1]]), want, "({x}, {y})");
            nonzero += (want > 0) as u32;
        }
    }
    assert!(
        nonzero > 100,
        "an H.264 encode differs somewhere: {nonzero}"
    );
}

#[test]
fn a_map_without_a_reference_is_an_element_error() {
    init();
    let run = run(
        "videotestsrc num-buffers=2 ! video/x-raw,format=I420,width=64,height=48 ! m.dist_sink \
         gpumetrics name=m backend=cpu metrics=blur map=ssim ! fakesink",
    );
    let (message, _) = run.error.expect("an error");
    assert!(message.contains("ssim map"), "{message}");
}

/// Map frames that downstream cannot take (GRAY16_LE into RGBA-only caps): an element error
/// naming the caps and the fix, not a bare not-negotiated from somewhere upstream.
#[test]
fn map_frames_downstream_refuses_are_an_element_error() {
    init();
    let run = run(
        "videotestsrc num-buffers=2 ! video/x-raw,format=I420,width=64,height=48 ! tee name=t \
         t. ! queue ! m.ref_sink t. ! queue ! m.dist_sink \
         gpumetrics name=m backend=cpu metrics=psnr map=ssim map-style=gray16 ! \
         video/x-raw,format=RGBA ! fakesink",
    );
    let (message, debug) = run.error.expect("an error");
    assert!(message.contains("map frames' caps"), "{message}");
    assert!(
        debug.contains("map-style=gray16") && debug.contains("videoconvert"),
        "{debug}"
    );
}

/// `map=butteraugli` with the metric: the diffmap on the gray16 scale, its brightest pixel
/// the `butteraugli` field; without the metric, an element error that says to add it.
#[test]
fn the_butteraugli_map_comes_with_its_metric() {
    let run = a_metrics_map_comes_with_it(MapKind::Butteraugli);
    for record in &run.frames {
        let field = record.get("butteraugli").unwrap();
        let peak = record.get("butteraugli-peak").unwrap();
        assert_eq!(
            gray16(MapKind::Butteraugli, field as f32, 255.0),
            gray16(MapKind::Butteraugli, peak as f32, 255.0),
            "{field} {peak}"
        );
    }
}

/// A metric's map (`map=NAME` with `metrics=NAME`) in GRAY16_LE: each frame's brightest
/// value is the record's `NAME-peak` on the map's documented scale ([`gray16`]), the
/// record has the metric's field, and the map without its metric is refused. Returns the
/// run with the map.
fn a_metrics_map_comes_with_it(kind: MapKind) -> Run {
    let name = kind.name();
    let c = case("coffee-crf42");
    let run = run_map(
        gst_video::VideoFormat::I420,
        &c,
        &format!("metrics={name} map={name}"),
    );
    run.expect_ok();
    let info = gst_video::VideoInfo::from_caps(run.out_caps.as_ref().unwrap()).unwrap();
    assert_eq!(info.format(), gst_video::VideoFormat::Gray16Le);
    for (f, record) in run.frames.iter().enumerate() {
        let data = run.out[f].map_readable().unwrap();
        let mut brightest = 0u16;
        for y in 0..info.height() as usize {
            for x in 0..info.width() as usize {
                let at = y * info.stride()[0] as usize + 2 * x;
                brightest = brightest.max(u16::from_le_bytes([data[at], data[at + 1]]));
            }
        }
        let peak = record
            .get(&format!("{name}-peak"))
            .expect("the map's peak in the record");
        assert!(peak > 0.0, "{peak}");
        assert_eq!(brightest, gray16(kind, peak as f32, 255.0), "{peak}");
        assert!(record.get(name).is_some());
    }
    let refused = run_map(gst_video::VideoFormat::I420, &c, &format!("map={name}"));
    let (message, _) = refused.error.expect("an error");
    assert!(message.contains(&format!("add {name}")), "{message}");
    run
}

/// ColorVideoVDP's heat map (1 − JOD/10 per pixel) comes with its metric, on its scale
/// (65,535 per unit, clamped: past 10 JOD lost a pixel's value passes 1, as the
/// reference's does).
#[test]
fn the_cvvdp_map_comes_with_its_metric() {
    a_metrics_map_comes_with_it(MapKind::Cvvdp);
}

/// `map=ssimulacra2`: each pixel's share of the weighted sum the score is mapped from, on
/// its scale (v / 20).
#[test]
fn the_ssimulacra2_map_comes_with_its_metric() {
    a_metrics_map_comes_with_it(MapKind::Ssimulacra2);
}

/// The map's statistics in each record (and so in the meta, the stats file and alerts):
/// `ssim-peak` (its lowest value), where it is, and `ssim-area`, the share of pixels below
/// `map-threshold`; an alert rule may watch them.
#[test]
fn records_carry_the_maps_statistics_for_alerts() {
    let c = case("camera-q10");
    let run = run_map(
        gst_video::VideoFormat::Gray8,
        &c,
        "map=ssim map-threshold=0.95 alerts=ssim-area>0.01",
    );
    run.expect_ok();
    let f = &run.frames[0];
    let (w, h) = (251usize, 187usize);
    let lowest = c["ssim"]["pixels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p[2].as_f64().unwrap())
        .fold(f64::INFINITY, f64::min);
    let peak = f.get("ssim-peak").unwrap();
    assert!(
        peak <= lowest + 1e-5,
        "the lowest value: {peak} vs {lowest} sampled"
    );
    let (x, y) = (f.get("ssim-peak-x").unwrap(), f.get("ssim-peak-y").unwrap());
    assert!((x as usize) < w && (y as usize) < h);
    let area = f.get("ssim-area").unwrap();
    assert!(area > 0.01 && area < 1.0, "a JPEG at quality 10: {area}");
    assert!(run.summary().field("ssim-area").is_some());
    assert!(
        run.warnings.iter().any(|w| w.contains("ssim-area")),
        "the alert is raised: {:?}",
        run.warnings
    );
}

/// The bytes of each row of `frame`'s first plane, without padding (through its video meta
/// where it has one: CUDA memory's pitch differs from GStreamer's default stride).
fn rows(frame: &gst::Buffer, caps: &gst::Caps) -> Vec<u8> {
    use gst_video::prelude::*;
    let info = gst_video::VideoInfo::from_caps(caps).unwrap();
    let f = gst_video::VideoFrameRef::from_buffer_ref_readable(frame.as_ref(), &info).unwrap();
    let (stride, row) = (
        f.plane_stride()[0] as usize,
        info.width() as usize * info.format_info().pixel_stride()[0] as usize,
    );
    let data = f.plane_data(0).unwrap();
    (0..info.height() as usize)
        .flat_map(|y| data[y * stride..][..row].iter().copied())
        .collect()
}

/// On a GPU with a peer that takes CUDA memory downstream, the map frames leave in CUDA
/// memory (caps `memory:CUDAMemory`, every buffer a GstCudaMemory, drawn there by the GPU)
/// and hold, byte for byte, what the frames in system memory hold; a peer that takes any
/// caps (`appsink`) gets system memory. Heat (RGBA) goes to `cudadownload`. GRAY16_LE goes
/// to a CUDA-memory capsfilter (GStreamer 1.22's `cudadownload` does not list it): where
/// GstCuda cannot allocate GRAY16_LE (1.22's pool refused it on the first GPU run that got
/// this far), the element offers system memory only and, the capsfilter taking none,
/// posts its caps error; elsewhere the frames must be in CUDA memory as for heat.
#[test]
#[ignore = "GPU-only: needs a GstCuda that reaches a CUDA device (scripts/gpu-all.sh element)"]
fn map_frames_leave_in_cuda_memory_when_downstream_takes_it() {
    require_gstcuda();
    let c = case("camera-q10");
    let (w, h) = (
        c["width"].as_u64().unwrap() as u32,
        c["height"].as_u64().unwrap() as u32,
    );
    let info = gst_video::VideoInfo::builder(gst_video::VideoFormat::Gray8, w, h)
        .fps(gst::Fraction::new(25, 1))
        .build()
        .unwrap();
    let caps = info.to_caps().unwrap().to_string();
    for style in ["gray16", "heat"] {
        let props = format!("metrics=psnr backend=cuda map=ssim map-style={style}");
        let mut runs = Vec::new();
        let cuda_peer = match style {
            "heat" => "cudadownload !",
            // Unquoted: gst_parse_launch takes the features in the caps as they are (a
            // quoted string there is a syntax error; the shell's quotes never reach it).
            _ => "video/x-raw(memory:CUDAMemory) !",
        };
        for downstream in ["", cuda_peer] {
            let desc = format!(
                "appsrc name=ref format=time caps=\"{caps}\" ! m.ref_sink \
                 appsrc name=dist format=time caps=\"{caps}\" ! m.dist_sink \
                 gpumetrics name=m {props} ! {downstream} appsink name=out"
            );
            let seen = std::sync::Arc::new(std::sync::Mutex::new((None, Vec::new())));
            let (r, d) = (
                buffers(&info, c["reference"].as_str().unwrap(), 2),
                buffers(&info, c["distorted"].as_str().unwrap(), 2),
            );
            let probe_seen = seen.clone();
            let run = run_prepared(
                &desc,
                std::time::Duration::from_secs(30),
                move |p| {
                    let src = p.by_name("m").unwrap().static_pad("src").unwrap();
                    src.add_probe(
                        gst::PadProbeType::BUFFER | gst::PadProbeType::EVENT_DOWNSTREAM,
                        move |_, info| {
                            let mut s = probe_seen.lock().unwrap();
                            match &info.data {
                                Some(gst::PadProbeData::Buffer(b)) => {
                                    s.1.push(gstgpumetrics::gstcuda::is_cuda_buffer(b.as_ref()))
                                }
                                Some(gst::PadProbeData::Event(e)) => {
                                    if let gst::EventView::Caps(c) = e.view() {
                                        s.0 = Some(c.caps_owned());
                                    }
                                }
                                _ => {}
                            }
                            gst::PadProbeReturn::Ok
                        },
                    );
                },
                move |p| {
                    let p2 = p.clone();
                    let t = std::thread::spawn(move || push_all(&p2, "ref", r));
                    push_all(p, "dist", d);
                    t.join().unwrap();
                },
            );
            if style == "gray16"
                && !downstream.is_empty()
                && run.error.as_ref().is_some_and(|(text, _)| {
                    text.contains("downstream of src takes none of the map frames' caps")
                })
            {
                // GstCuda cannot allocate these frames: refused with the element's error.
                let (src_caps, buffers) = seen.lock().unwrap().clone();
                assert!(src_caps.is_none() && buffers.is_empty(), "{src_caps:?}");
                continue;
            }
            run.expect_ok();
            assert_eq!(run.out.len(), 2, "{style} {downstream}");
            let (src_caps, cuda_buffers) = seen.lock().unwrap().clone();
            let src_caps = src_caps.expect("src sent caps");
            let in_cuda = src_caps
                .features(0)
                .unwrap()
                .contains(gstgpumetrics::caps::CUDA_MEMORY_FEATURE);
            let want_cuda = !downstream.is_empty();
            assert_eq!(in_cuda, want_cuda, "{style} {downstream}: {src_caps}");
            assert_eq!(cuda_buffers, vec![want_cuda; 2], "{style} {downstream}");
            let out_caps = run.out_caps.clone().unwrap();
            runs.push(
                run.out
                    .iter()
                    .map(|b| rows(b, &out_caps))
                    .collect::<Vec<_>>(),
            );
        }
        if style == "heat" || runs.len() == 2 {
            assert_eq!(runs.len(), 2, "{style}: both memories ran");
            assert_eq!(
                runs[0], runs[1],
                "{style}: the same frames in both memories"
            );
        }
    }
}
