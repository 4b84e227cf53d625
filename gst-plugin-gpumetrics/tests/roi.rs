// SPDX-License-Identifier: MPL-2.0
//! The `roi` property: measuring a rectangle equals cropping both inputs first (`videocrop`,
//! then the element on the whole frames) for every metric and each kind of layout; a
//! rectangle that does not fit the frames is an element error naming the frame and the
//! nearest valid rectangle; one that is no rectangle fails the start; a rectangle too small
//! for MS-SSIM leaves it out with the usual warning.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use gst::prelude::*;

/// The frames of every comparison, and the rectangle: an odd number of chroma samples from
/// the left and the top, its sides above MS-SSIM's 160, touching no edge.
const W: u32 = 256;
const H: u32 = 208;
const ROI: (u32, u32, u32, u32) = (34, 22, 178, 170);

const ALL: &str = "psnr+ssim+ms-ssim+ssimulacra2+butteraugli+vmaf";

/// Where the rectangle is taken: by the element (`roi`), by `videocrop` on both inputs, or
/// nowhere (the whole frames).
#[derive(Clone, Copy, Debug)]
enum Crop {
    Roi,
    Videocrop,
    Whole,
}

/// The reference: a moving zone plate drawn between two colours, so that every plane has
/// texture across and down the frame (a rectangle read at the wrong place in any plane
/// gives other scores), in `format`.
fn source(format: &str) -> String {
    format!(
        "videotestsrc pattern=zone-plate kx2=20 ky2=20 kt=1 foreground-color=0xffff2000 \
         background-color=0xff0030ff num-buffers=4 ! \
         video/x-raw,format={format},width={W},height={H},framerate=30/1"
    )
}

/// [`source`] against itself scaled to 0.7 and back (a spatial distortion whose error
/// depends on the position, as the resampling phase does), both cut to `roi`
/// as `crop` says, into the element with `props` and the device memory caps step `upload`
/// (empty, or e.g. `cudaupload !`) in front of each sink pad.
fn pipeline(
    format: &str,
    roi: (u32, u32, u32, u32),
    crop: Crop,
    props: &str,
    upload: &str,
) -> String {
    let (x, y, w, h) = roi;
    let videocrop = match crop {
        Crop::Videocrop => format!(
            "videocrop left={x} top={y} right={} bottom={} !",
            W - x - w,
            H - y - h
        ),
        _ => String::new(),
    };
    let property = match crop {
        Crop::Roi => format!("roi=\"{x},{y},{w},{h}\""),
        _ => String::new(),
    };
    format!(
        "{} ! tee name=t \
         t. ! queue ! {videocrop} {upload} m.ref_sink \
         t. ! queue ! videoscale ! video/x-raw,width=179,height=146 ! videoscale ! \
         video/x-raw,width={W},height={H} ! {videocrop} {upload} m.dist_sink \
         gpumetrics name=m backend=cpu {property} {props} ! appsink name=out",
        source(format),
    )
}

/// How far two runs' records are apart: values compared, bitwise equal, the largest
/// relative difference and its field.
#[derive(Debug, Default)]
struct Difference {
    values: usize,
    bitwise: usize,
    max_relative: f64,
    worst: String,
}

/// The two runs measured the same pairs with the same fields; their difference.
fn difference(a: &Run, b: &Run) -> Difference {
    a.expect_ok();
    b.expect_ok();
    assert!(!a.frames.is_empty(), "no pair was measured: {a:#?}");
    assert_eq!(a.frames.len(), b.frames.len());
    let mut d = Difference::default();
    for (fa, fb) in a.frames.iter().zip(&b.frames) {
        let names = |f: &gstgpumetrics::message::FrameScores| {
            f.fields().map(|f| f.name).collect::<Vec<_>>()
        };
        assert_eq!(names(fa), names(fb), "frame {}", fa.frame);
        for ((field, va), (_, vb)) in fa.scores.iter().zip(&fb.scores) {
            let name = field.name;
            d.values += 1;
            if va.to_bits() == vb.to_bits() {
                d.bitwise += 1;
                continue;
            }
            let relative = (va - vb).abs() / va.abs().max(vb.abs());
            assert!(
                relative.is_finite(),
                "frame {} {name}: {va} vs {vb}",
                fa.frame
            );
            if relative > d.max_relative {
                d.max_relative = relative;
                d.worst = format!("{name} of pair {}", fa.frame);
            }
        }
    }
    d
}

/// Where the frames are measured: system memory on the CPU backend (the tests' backend),
/// or CUDA memory (`cudaupload`, after any `videocrop`) on the CUDA backend.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Memory {
    System,
    Cuda,
}

/// Measures `format` with the rectangle taken by the element and by `videocrop`: the same
/// fields, equal within 1e-12 relative (the count of bitwise equal values is printed); every
/// frame of the `roi` run read where it lies (`memory-stats`: none copied); other scores than
/// the whole frames', so the rectangle was measured. Returns the fields of the first pair.
fn roi_equals_videocrop(format: &str, props: &str, memory: Memory) -> Vec<String> {
    let desc = |crop| match memory {
        Memory::System => pipeline(format, ROI, crop, props, ""),
        // cudaupload passes system memory through unless CUDA memory is asked for: its
        // output caps list system memory first.
        Memory::Cuda => pipeline(
            format,
            ROI,
            crop,
            props,
            "cudaupload ! video/x-raw(memory:CUDAMemory) !",
        )
        .replace("backend=cpu", "backend=cuda"),
    };
    let (roi, stats) = run_reading_memory_stats(&desc(Crop::Roi));
    let cropped = run(&desc(Crop::Videocrop));
    let d = difference(&roi, &cropped);
    println!(
        "{memory:?} {format} {props}: roi vs videocrop: {} values over {} pairs, {} bitwise \
         equal, largest relative difference {:e} {}; {stats}",
        d.values,
        roi.frames.len(),
        d.bitwise,
        d.max_relative,
        d.worst
    );
    assert!(d.max_relative <= 1e-12, "{memory:?} {format}: {d:?}");
    let read = match memory {
        Memory::System => "system-frames",
        Memory::Cuda => "device-frames",
    };
    assert_eq!(stats.get::<u64>(read), Ok(8), "{stats}");
    assert_eq!(stats.get::<u64>("downloaded-frames"), Ok(0), "{stats}");
    let whole = run(&desc(Crop::Whole));
    whole.expect_ok();
    let psnr = |r: &Run| r.frames[0].get("psnr-avg").or(r.frames[0].get("psnr-y"));
    assert!(psnr(&roi).is_some());
    assert_ne!(
        psnr(&whole),
        psnr(&roi),
        "{format}: the rectangle scored as the whole frame"
    );
    roi.frames[0].fields().map(|f| f.name.to_string()).collect()
}

#[track_caller]
fn assert_fields(fields: &[String], wanted: &[&str], format: &str) {
    for w in wanted {
        assert!(
            fields.iter().any(|f| f == w),
            "{format}: no {w} in {fields:?}"
        );
    }
}

#[test]
fn roi_equals_videocrop_for_every_metric_in_yuv() {
    for format in ["I420", "NV12", "Y42B", "Y444", "I420_10LE"] {
        let fields = roi_equals_videocrop(
            format,
            &format!("metrics={ALL} ssim-chroma=true"),
            Memory::System,
        );
        assert_fields(
            &fields,
            &[
                "psnr-u",
                "ssim-v",
                "ms-ssim",
                "ssimulacra2",
                "butteraugli",
                "vmaf",
            ],
            format,
        );
    }
}

#[test]
fn roi_equals_videocrop_for_every_metric_in_rgb_and_gray() {
    for format in ["RGB", "BGRx", "GRAY8"] {
        let fields = roi_equals_videocrop(format, &format!("metrics={ALL}"), Memory::System);
        assert_fields(
            &fields,
            &["ssim", "ms-ssim", "ssimulacra2", "butteraugli"],
            format,
        );
        let psnr = if format == "GRAY8" {
            "psnr-y"
        } else {
            "psnr-g"
        };
        assert_fields(&fields, &[psnr], format);
    }
}

/// A rectangle shifted by one chroma sample reads other samples in every plane: the
/// comparison above can tell a misplaced rectangle (or chroma offset) from the right one.
#[test]
fn a_shifted_rectangle_gives_other_scores() {
    let (x, y, w, h) = ROI;
    let props = "metrics=psnr+ssim ssim-chroma=true";
    for format in ["I420", "NV12", "Y42B", "RGB"] {
        let cropped = run(&pipeline(format, ROI, Crop::Videocrop, props, ""));
        cropped.expect_ok();
        let planes = if format == "RGB" { "rgb" } else { "yuv" };
        for shifted in [(x + 2, y, w, h), (x, y + 2, w, h)] {
            let roi = run(&pipeline(format, shifted, Crop::Roi, props, ""));
            roi.expect_ok();
            assert_eq!(roi.frames.len(), cropped.frames.len());
            for plane in planes.chars() {
                let differs = roi.frames.iter().zip(&cropped.frames).any(|(a, b)| {
                    ["psnr", "ssim"].iter().any(|m| {
                        let field = format!("{m}-{plane}");
                        let v = a.get(&field);
                        assert!(v.is_some(), "{format}: no {field}");
                        v != b.get(&field)
                    })
                });
                assert!(
                    differs,
                    "{format} {shifted:?}: plane {plane} scores as before"
                );
            }
        }
    }
}

/// The pipeline of [`pipeline`] with `roi` set as written, at I420 or `format`.
fn run_roi(format: &str, roi: &str) -> Run {
    run(&format!(
        "videotestsrc num-buffers=2 ! video/x-raw,format={format},width={W},height={H} ! \
         tee name=t t. ! queue ! m.ref_sink t. ! queue ! m.dist_sink \
         gpumetrics name=m backend=cpu roi=\"{roi}\" ! appsink name=out"
    ))
}

#[track_caller]
fn assert_refused(run: &Run, wanted: &str) {
    let (msg, _) = run.error.clone().expect("the roi must be refused");
    assert!(msg.contains(wanted), "{msg}");
    assert!(run.frames.is_empty(), "measured: {:?}", run.frames);
}

#[test]
fn rectangles_that_do_not_fit_are_element_errors_with_the_nearest_valid_one() {
    let cases = [
        (
            "I420",
            "200,100,100,100",
            "roi 200,100,100,100 lies outside the I420 256x208 frame (it ends at x 300, y 200): \
             the nearest valid rectangle is 200,100,56,100",
        ),
        (
            "I420",
            "300,0,10,10",
            "roi 300,0,10,10 lies outside the I420 256x208 frame (it ends at x 310, y 10): the \
             nearest valid rectangle is 254,0,2,10",
        ),
        (
            "I420",
            "10,10,0,20",
            "roi 10,10,0,20 is empty in the I420 256x208 frame: the nearest valid rectangle is \
             10,10,2,20",
        ),
        (
            "I420",
            "3,3,101,50",
            "roi 3,3,101,50 is not aligned to the 4:2:0 chroma subsampling of I420 256x208 (x, \
             y, width and height must be multiples of the subsampling, except a side that ends \
             at the frame's edge): the nearest valid rectangle is 2,2,102,52",
        ),
        (
            "NV12",
            "4,4,64,33",
            "roi 4,4,64,33 is not aligned to the 4:2:0 chroma subsampling of NV12 256x208",
        ),
        (
            "Y42B",
            "3,3,101,50",
            "roi 3,3,101,50 is not aligned to the 4:2:2 chroma subsampling of Y42B 256x208 (x \
             and width must be multiples of the subsampling, except a side that ends at the \
             frame's edge): the nearest valid rectangle is 2,3,102,50",
        ),
    ];
    for (format, roi, wanted) in cases {
        assert_refused(&run_roi(format, roi), wanted);
    }
    // Without chroma subsampling any rectangle inside the frame is valid.
    for format in ["Y444", "RGB"] {
        let run = run_roi(format, "3,3,101,51");
        run.expect_ok();
        assert_eq!(run.frames.len(), 2);
    }
    // Odd sides are valid where they end at the frame's edge.
    let run = run(
        "videotestsrc num-buffers=2 ! video/x-raw,format=I420,width=101,height=51 ! \
         tee name=t t. ! queue ! m.ref_sink t. ! queue ! m.dist_sink \
         gpumetrics name=m backend=cpu roi=\"40,20,61,31\" ! appsink name=out",
    );
    run.expect_ok();
    assert_eq!(run.frames.len(), 2);
}

/// A `roi` that is no rectangle: the state change to PAUSED fails, the message quotes the
/// value and the expected form.
#[test]
fn a_syntax_error_fails_the_start() {
    init();
    for text in ["10,10,20", "a,b,c,d", "-2,0,10,10", "1,2,3,4,5", "0;0;8;8"] {
        let pipeline = gst::parse::launch(&format!(
            "videotestsrc num-buffers=2 ! video/x-raw,width=64,height=48 ! m.ref_sink \
             videotestsrc num-buffers=2 ! video/x-raw,width=64,height=48 ! m.dist_sink \
             gpumetrics name=m backend=cpu roi=\"{text}\" ! fakesink"
        ))
        .unwrap()
        .downcast::<gst::Pipeline>()
        .unwrap();
        assert!(
            pipeline.set_state(gst::State::Paused).is_err(),
            "{text}: the start must fail"
        );
        let msg = pipeline
            .bus()
            .unwrap()
            .timed_pop_filtered(gst::ClockTime::from_seconds(5), &[gst::MessageType::Error])
            .expect("an element error");
        let gst::MessageView::Error(e) = msg.view() else {
            unreachable!()
        };
        assert_eq!(msg.src().map(|s| s.name()).as_deref(), Some("m"));
        assert_eq!(
            e.error().to_string(),
            format!(
                "roi \"{text}\" is not x,y,width,height: four non-negative integers in pixels \
                 of the reference separated by commas, e.g. roi=0,0,640,360"
            )
        );
        pipeline.set_state(gst::State::Null).unwrap();
    }
}

/// The metrics' size limits apply to the rectangle: 160x160 is too small for MS-SSIM, which
/// is left out with its warning while SSIM is measured.
#[test]
fn a_rectangle_too_small_for_ms_ssim_leaves_it_out_with_the_warning() {
    let run = run(&pipeline(
        "I420",
        (34, 22, 160, 160),
        Crop::Roi,
        "metrics=ssim+ms-ssim",
        "",
    ));
    run.expect_ok();
    assert_eq!(run.frames.len(), 4);
    for f in &run.frames {
        assert!(f.get("ssim").is_some_and(|s| s < 1.0), "{f:?}");
        assert_eq!(f.get("ms-ssim"), None, "{f:?}");
    }
    let warned: Vec<_> = run
        .warnings
        .iter()
        .filter(|w| w.contains("ms-ssim"))
        .collect();
    assert_eq!(warned.len(), 1, "{:?}", run.warnings);
    assert!(warned[0].contains("160x160 frames get none"), "{warned:?}");
    // The whole frames (256x208) are large enough.
    let whole = run_roi("I420", "0,0,256,208");
    whole.expect_ok();
}

/// The inputs must still be of one size: two rectangles of equal size in frames of
/// different sizes are refused as without a `roi`.
#[test]
fn frames_of_different_sizes_are_refused_with_a_roi_too() {
    let run = run(&format!(
        "videotestsrc num-buffers=2 ! video/x-raw,format=I420,width={W},height={H} ! m.ref_sink \
         videotestsrc num-buffers=2 ! video/x-raw,format=I420,width=128,height=96 ! m.dist_sink \
         gpumetrics name=m backend=cpu roi=\"0,0,64,48\" ! appsink name=out"
    ));
    let (msg, _) = run.error.clone().expect("different sizes must be refused");
    assert!(msg.contains("256x208") && msg.contains("128x96"), "{msg}");
    assert!(run.frames.is_empty());
}

/// The same comparison on the CUDA backend with the frames in CUDA memory (`cudaupload`):
/// the rectangle is read in place from device memory (every frame counted as a device
/// frame), equal to cropping on the host before the upload.
#[test]
#[ignore = "GPU-only: needs cudaupload and a CUDA device (scripts/gpu-all.sh element)"]
fn roi_equals_videocrop_in_cuda_memory() {
    require_gstcuda();
    assert!(
        gst::ElementFactory::find("cudaupload").is_some(),
        "GPU-only test: no cudaupload element (nvcodec plugin without a CUDA device?)"
    );
    for format in ["I420", "NV12", "Y42B", "Y444", "I420_10LE", "BGRx"] {
        let fields = roi_equals_videocrop(
            format,
            &format!("metrics={ALL} ssim-chroma=true"),
            Memory::Cuda,
        );
        assert_fields(&fields, &["ms-ssim", "ssimulacra2", "butteraugli"], format);
    }
}

/// Runs `desc` and reads the element's `memory-stats` when EOS reaches the appsink (before
/// the stop resets them).
fn run_reading_memory_stats(desc: &str) -> (Run, gst::Structure) {
    let stats = Arc::new(Mutex::new(None));
    let seen = stats.clone();
    let run = run_prepared(
        desc,
        Duration::from_secs(60),
        move |p| {
            let m = p.by_name("m").unwrap();
            let sink = p.by_name("out").unwrap().static_pad("sink").unwrap();
            sink.add_probe(gst::PadProbeType::EVENT_DOWNSTREAM, move |_, info| {
                if let Some(gst::PadProbeData::Event(e)) = &info.data
                    && e.type_() == gst::EventType::Eos
                {
                    *seen.lock().unwrap() = Some(m.property::<gst::Structure>("memory-stats"));
                }
                gst::PadProbeReturn::Ok
            });
        },
        |_| {},
    );
    let stats = stats
        .lock()
        .unwrap()
        .take()
        .expect("EOS reached the appsink");
    (run, stats)
}
