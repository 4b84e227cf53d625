//! Freeze: the mean absolute difference of a frame against the last frame that was not
//! frozen, equal to FFmpeg 5.1's `freezedetect` measure (kernel side:
//! `gpumetrics_kernels::freeze`, which says over which samples). A no-reference metric
//! ([`Reference::None`]): `freeze-diff` on the distorted frame, `ref-freeze-diff` on the
//! reference frame, each input with its own reference frame.
//!
//! As in freezedetect, the first frame of a sequence (and the first after a flush or caps
//! change) is the reference frame and has no value: its field is absent. Every later frame
//! is measured against the reference frame; it is frozen when its value is at most
//! `freeze-noise`, and when it is not frozen it becomes the reference frame. The freeze
//! intervals (`freeze_start` / `freeze_end`, with the minimum duration) are `events`'s.
//! No lag: a frame's field is known when it is measured.

mod cpu;
mod cuda;
pub(crate) mod events;

use super::no_reference::{Input, NoReference};
use super::{Entry, Field, Info, OptionKind, OptionSpec, Options, Reference};
use crate::frame::PlanePtrs;
use crate::metric_set::MetricSet;
use crate::plan::Plan;
use gpumetrics_kernels::freeze::FreezeFrame;

/// Its bit of the `metrics` flags (never changed once released).
pub const FLAG: MetricSet = MetricSet::bit(10);

/// Names of the field, as `[distorted, reference]`.
pub(crate) const DIFF: [&str; 2] = ["freeze-diff", "ref-freeze-diff"];

/// `freeze-noise`: freezedetect's `n`, the largest difference of a frozen frame.
pub const NOISE: OptionSpec = OptionSpec {
    name: "freeze-noise",
    nick: "Freeze noise tolerance",
    doc: "Freeze: a frame whose mean absolute difference with the reference frame (0..1 of \
          the sample range) is at most this is frozen; a frame that is not frozen becomes \
          the reference frame (FFmpeg freezedetect's n)",
    kind: OptionKind::Float {
        min: 0.0,
        max: 1.0,
        default: 0.001,
    },
};

/// `freeze-min-duration`: freezedetect's `d`, read by the event detector.
pub const MIN_DURATION: OptionSpec = OptionSpec {
    name: "freeze-min-duration",
    nick: "Freeze minimum duration",
    doc: "Freeze events: the shortest frozen interval reported, in seconds (FFmpeg \
          freezedetect's d)",
    kind: OptionKind::Float {
        min: 0.0,
        max: 1e9,
        default: 2.0,
    },
};

/// The metric's settings: the noise tolerance that decides which frame is the reference,
/// and the events' shortest interval (µs, as freezedetect compares).
pub(crate) struct Settings {
    pub(crate) noise: f64,
    pub(crate) min_us: u64,
}

pub(crate) const ENTRY: Entry = Entry {
    provides: &[Info {
        flag: FLAG,
        name: "freeze",
        title: "freeze intervals",
        description: "Mean absolute difference with the last frame that was not frozen (FFmpeg \
                      5.1's freezedetect), on each input; frozen intervals as events",
        fields: &[field(DIFF[0]), field(DIFF[1])],
    }],
    options: &[NOISE, MIN_DURATION],
    configure: |o| Ok(Box::new(settings(o))),
    notes: |_| Vec::new(),
    check: |_| Ok(()),
    cpu: |s| {
        if !s.set.contains(FLAG) {
            return None;
        }
        let noise = s.settings::<Settings>().noise;
        NoReference::boxed(s, |side| Some(cpu::Freeze::new(s.plan, side, noise)))
    },
    reference: Reference::None,
    cuda: |gpu, s| {
        if !s.set.contains(FLAG) {
            return Ok(None);
        }
        let noise = s.settings::<Settings>().noise;
        NoReference::cuda_boxed(gpu, s, 1, |gpu, side| {
            cuda::Freeze::new(gpu, s.plan, side, noise).map(Some)
        })
    },
    linear_light: None,
    events: Some(events::HOOK),
};

/// The difference's field: 0..1 of the sample range, 6 decimals (the default noise
/// tolerance is 0.001); a frozen picture is worse.
const fn field(name: &'static str) -> Field {
    Field::new(name, "Freeze difference (0..1)").decimals(6)
}

fn settings(o: &Options) -> Settings {
    Settings {
        noise: o.float(&NOISE),
        min_us: (o.float(&MIN_DURATION) * 1e6).round() as u64,
    }
}

/// The kernel-side frame of `side` at `frame`: every colour channel of the format (alpha
/// and padding bytes are never read), widths rounded up, chroma heights rounded down, as
/// freezedetect reads the planes.
pub(crate) fn frame(plan: &Plan, side: Input, frame: &PlanePtrs) -> FreezeFrame {
    let layout = side.layout(plan);
    let format = layout.format;
    let mut f = FreezeFrame {
        planes: format.channels().len() as u32,
        ..Default::default()
    };
    for (i, c) in format.channels().iter().enumerate() {
        f.chans[i] = frame.channel(c, format.peak());
        f.width[i] = layout.channel_size(c).0;
        f.height[i] = layout.height >> c.sub_y;
    }
    f.with_offsets()
}

/// Whether a frame whose value is `diff` is frozen (the kernel crate's, which the GPU's
/// `freeze_decide` uses too).
pub(crate) use gpumetrics_kernels::freeze::is_frozen;

#[cfg(test)]
mod tests {
    use crate::engine::{BackendChoice, Engine, EngineConfig};
    use crate::format::{FrameLayout, PixelFormat};
    use crate::frame::{Frame, HostFrame, Plane};
    use crate::metric::{OptionValue, Options};

    fn engine(format: PixelFormat, w: u32, h: u32, options: Options) -> Engine {
        let cfg = EngineConfig {
            metrics: super::FLAG,
            backend: BackendChoice::Cpu,
            options,
            ..Default::default()
        };
        let layout = FrameLayout {
            format,
            width: w,
            height: h,
        };
        Engine::new(&cfg, layout, layout).unwrap()
    }

    fn gray(data: &[u8], stride: usize) -> Frame<'_> {
        Frame::Host(HostFrame::new(&[Plane { data, stride }]))
    }

    /// A planar YUV frame: luma of row stride `ys`, both chroma planes `c` of stride `cs`.
    fn yuv<'a>(y: &'a [u8], c: &'a [u8], ys: usize, cs: usize) -> Frame<'a> {
        Frame::Host(HostFrame::new(&[
            Plane {
                data: y,
                stride: ys,
            },
            Plane {
                data: c,
                stride: cs,
            },
            Plane {
                data: c,
                stride: cs,
            },
        ]))
    }

    #[test]
    fn first_frame_has_no_value_then_the_reference_is_the_last_unfrozen_frame() {
        let mut e = engine(PixelFormat::Gray8, 2, 2, Options::new());
        let a = [0u8; 4];
        // Differences of 1 per sample: 1/256 = 0.0039 > 0.001, not frozen.
        let b = [1u8; 4];
        // Against b: one sample off by 1, 0.25/256 = 0.00098 <= 0.001: frozen.
        let c = [1u8, 1, 1, 2];
        let s = e.compare(&gray(&a, 2), &gray(&a, 2)).unwrap();
        assert!(s.is_empty(), "{s:?}");
        let s = e.compare(&gray(&a, 2), &gray(&b, 2)).unwrap();
        assert_eq!(s.get("freeze-diff"), Some(1.0 / 256.0));
        assert_eq!(s.get("ref-freeze-diff"), Some(0.0));
        let s = e.compare(&gray(&a, 2), &gray(&c, 2)).unwrap();
        assert_eq!(s.get("freeze-diff"), Some(0.25 / 256.0));
        // c was frozen: the reference stays b, so c again measures 0.25/256, and b 0.
        let s = e.compare(&gray(&a, 2), &gray(&c, 2)).unwrap();
        assert_eq!(s.get("freeze-diff"), Some(0.25 / 256.0));
        let s = e.compare(&gray(&a, 2), &gray(&b, 2)).unwrap();
        assert_eq!(s.get("freeze-diff"), Some(0.0));
        let names: Vec<_> = s.iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["freeze-diff", "ref-freeze-diff"]);
        // A flush forgets the reference.
        e.reset();
        assert!(e.compare(&gray(&a, 2), &gray(&c, 2)).unwrap().is_empty());
        // A noise of 0: only equal frames are frozen, so c becomes the reference after b.
        let o = Options::new()
            .with("freeze-noise", OptionValue::Float(0.0))
            .unwrap();
        let mut e = engine(PixelFormat::Gray8, 2, 2, o);
        for (d, want) in [
            (&b, None),
            (&c, Some(0.25)),
            (&c, Some(0.0)),
            (&b, Some(0.25)),
        ] {
            let s = e.compare(&gray(&a, 2), &gray(d, 2)).unwrap();
            assert_eq!(s.get("freeze-diff"), want.map(|v| v / 256.0));
        }
    }

    #[test]
    fn every_plane_chroma_rows_rounded_down_ten_bit_scale() {
        // 3x3 I420_10LE: luma 3x3, chroma 2 wide and 3 >> 1 = 1 row (of 2): 9 + 2 + 2 = 13.
        let (w, h) = (3usize, 3usize);
        let le = |v: &[u16]| -> Vec<u8> { v.iter().flat_map(|s| s.to_le_bytes()).collect() };
        let y0 = le(&[100; 9]);
        let c0 = le(&[512; 4]);
        let mut y1 = vec![100u16; 9];
        y1[8] = 200; // +100
        let y1 = le(&y1);
        // Chroma: +8 in the first row (measured), +500 in the second (left out).
        let c1 = le(&[520, 512, 1012, 1012]);
        let mut e = engine(PixelFormat::I420_10Le, w as u32, h as u32, Options::new());
        let f0 = yuv(&y0, &c0, w * 2, 4);
        let f1 = yuv(&y1, &c1, w * 2, 4);
        assert!(e.compare(&f0, &f0).unwrap().is_empty());
        let s = e.compare(&f0, &f1).unwrap();
        let want = (100.0 + 8.0 + 8.0) / 13.0 / 1024.0;
        assert_eq!(s.get("freeze-diff"), Some(want));
        assert_eq!(s.get("ref-freeze-diff"), Some(0.0));
    }

    #[test]
    fn tiny_and_rgb_frames_are_measured() {
        // 1x1 I420: chroma has 1 >> 1 = 0 rows, only the luma sample counts.
        let mut e = engine(PixelFormat::I420, 1, 1, Options::new());
        let (y0, y1, c) = ([10u8], [74u8], [128u8]);
        let (a, b) = (yuv(&y0, &c, 1, 1), yuv(&y1, &c, 1, 1));
        assert!(e.compare(&a, &a).unwrap().is_empty());
        assert_eq!(e.compare(&a, &b).unwrap().get("freeze-diff"), Some(0.25));
        // RGB: the three channels (alpha would not be read).
        let mut e = engine(PixelFormat::Rgba, 1, 1, Options::new());
        let (p, q) = ([0u8, 0, 0, 0], [30u8, 0, 0, 255]);
        assert!(e.compare(&gray(&p, 4), &gray(&p, 4)).unwrap().is_empty());
        let s = e.compare(&gray(&p, 4), &gray(&q, 4)).unwrap();
        assert_eq!(s.get("freeze-diff"), Some(30.0 / 3.0 / 256.0));
    }
}
