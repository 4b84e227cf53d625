//! Black: the fraction of a frame's luma samples at or below a pixel threshold, equal to
//! FFmpeg 5.1's `blackdetect` per-frame `picture_black_ratio` (kernel side:
//! `gpumetrics_kernels::black`). A no-reference metric ([`Reference::None`]): `black` on the
//! distorted frame, `ref-black` on the reference frame. No state across frames; the black
//! intervals (blackdetect's `black_start` / `black_end`, from the picture threshold and the
//! minimum duration) are `events`'s, which `crate::events` builds.
//!
//! The threshold's range, as FFmpeg 5.1 decides it (confirmed with Debian 12's ffmpeg
//! 5.1.9): full range only for the formats FFmpeg calls `yuvj` (8-bit planar YUV: I420,
//! YV12, Y42B, Y444) with a full-range colorimetry; every other frame, full-range NV12,
//! 10-bit full range and gray included, gets the limited-range threshold, because 5.1 reads
//! the pixel format, not the frame's range (later FFmpeg versions read the range).

mod cpu;
mod cuda;
pub(crate) mod events;

use super::no_reference::{Input, NoReference};
use super::{Entry, Field, Info, OptionKind, OptionSpec, Reference};
use crate::color::Range;
use crate::format::{ColorFamily, PixelFormat};
use crate::frame::PlanePtrs;
use crate::metric_set::MetricSet;
use crate::plan::Plan;
use gpumetrics_kernels::black::{self, BlackLuma};

/// Its bit of the `metrics` flags (never changed once released).
pub const FLAG: MetricSet = MetricSet::bit(9);

/// Names of the field, as `[distorted, reference]`.
pub(crate) const BLACK: [&str; 2] = ["black", "ref-black"];

/// `black-pixel-threshold`: blackdetect's `pix_th`.
pub const PIXEL_THRESHOLD: OptionSpec = OptionSpec {
    name: "black-pixel-threshold",
    nick: "Black pixel threshold",
    doc: "Black: a luma sample is black at or below this fraction of the luma range \
          (FFmpeg blackdetect's pix_th: limited range 16 + pix_th * 219, scaled to the depth)",
    kind: OptionKind::Float {
        min: 0.0,
        max: 1.0,
        default: 0.10,
    },
};

/// `black-picture-threshold`: blackdetect's `pic_th`, read by the event detector.
pub const PICTURE_THRESHOLD: OptionSpec = OptionSpec {
    name: "black-picture-threshold",
    nick: "Black picture threshold",
    doc: "Black events: a frame is black when at least this fraction of its luma samples is \
          (FFmpeg blackdetect's pic_th)",
    kind: OptionKind::Float {
        min: 0.0,
        max: 1.0,
        default: 0.98,
    },
};

/// `black-min-duration`: blackdetect's `d`, read by the event detector.
pub const MIN_DURATION: OptionSpec = OptionSpec {
    name: "black-min-duration",
    nick: "Black minimum duration",
    doc: "Black events: the shortest black interval reported, in seconds (FFmpeg \
          blackdetect's d)",
    kind: OptionKind::Float {
        min: 0.0,
        max: 1e9,
        default: 2.0,
    },
};

/// The metric's settings: the pixel threshold, and the events' picture threshold and
/// shortest interval (ns).
pub(crate) struct Settings {
    pixel_threshold: f64,
    pub(crate) picture_threshold: f64,
    pub(crate) min_duration: u64,
}

pub(crate) const ENTRY: Entry = Entry {
    provides: &[Info {
        flag: FLAG,
        name: "black",
        title: "black intervals",
        description: "Fraction of black luma samples (FFmpeg 5.1's blackdetect picture ratio), \
                      on each input; black intervals as events",
        fields: &[field(BLACK[0]), field(BLACK[1])],
    }],
    options: &[PIXEL_THRESHOLD, PICTURE_THRESHOLD, MIN_DURATION],
    configure: |o| {
        Ok(Box::new(Settings {
            pixel_threshold: o.float(&PIXEL_THRESHOLD),
            picture_threshold: o.float(&PICTURE_THRESHOLD),
            min_duration: seconds_to_ns(o.float(&MIN_DURATION)),
        }))
    },
    notes: |s| {
        if !s.set.contains(FLAG) {
            return Vec::new();
        }
        why_not(s.plan).into_iter().collect()
    },
    check: |_| Ok(()),
    cpu: |s| {
        if !s.set.contains(FLAG) || why_not(s.plan).is_some() {
            return None;
        }
        let settings: &Settings = s.settings();
        NoReference::boxed(s, |side| {
            measurable(side.layout(s.plan).format)
                .then(|| cpu::Black::new(threshold_of(s.plan, side, settings)))
        })
    },
    reference: Reference::None,
    cuda: |gpu, s| {
        if !s.set.contains(FLAG) || why_not(s.plan).is_some() {
            return Ok(None);
        }
        let settings: &Settings = s.settings();
        NoReference::cuda_boxed(gpu, s, 1, |gpu, side| {
            if !measurable(side.layout(s.plan).format) {
                return Ok(None);
            }
            cuda::Black::new(gpu, s.plan, side, threshold_of(s.plan, side, settings)).map(Some)
        })
    },
    linear_light: None,
    events: Some(events::HOOK),
};

/// The ratio's field: 0..1, 6 decimals as FFmpeg prints it; more black is worse.
const fn field(name: &'static str) -> Field {
    Field::new(name, "Black (0..1)")
        .decimals(6)
        .lower_is_better()
        .unit_interval()
}

/// Whether frames of `format` have a luma plane to measure.
fn measurable(format: PixelFormat) -> bool {
    format.family() != ColorFamily::Rgb
}

/// Why a plan gets no black ratio, if it does not.
fn why_not(plan: &Plan) -> Option<String> {
    let format = plan.distorted.format;
    (!measurable(format)).then(|| {
        format!(
            "black measures luma: {} frames get none (convert to a YUV format first)",
            format.name()
        )
    })
}

/// Whether FFmpeg 5.1 takes `format` with `range` as full range: only its `yuvj` formats
/// (8-bit planar YUV) are; see the module's documentation.
pub fn ffmpeg_full_range(format: PixelFormat, range: Range) -> bool {
    use PixelFormat::*;
    range == Range::Full && matches!(format, I420 | Yv12 | Y42b | Y444)
}

/// `side`'s integer pixel threshold.
fn threshold_of(plan: &Plan, side: Input, settings: &Settings) -> u32 {
    let format = side.layout(plan).format;
    let full = ffmpeg_full_range(format, side.colorimetry(plan).range);
    black::threshold(settings.pixel_threshold, format.depth(), full)
}

/// The kernel-side luma of `side`'s frame at `frame`, with its threshold.
fn luma(plan: &Plan, side: Input, frame: &PlanePtrs, threshold: u32) -> BlackLuma {
    let layout = side.layout(plan);
    let format = layout.format;
    let y = &format.channels()[0];
    debug_assert_eq!(y.name, "y");
    BlackLuma {
        chan: frame.channel(y, format.peak()),
        width: layout.width,
        height: layout.height,
        threshold,
        _pad: 0,
    }
}

/// `seconds` in ns, truncated as blackdetect truncates `d` to its time base.
pub(crate) fn seconds_to_ns(seconds: f64) -> u64 {
    (seconds * 1e9) as u64
}

#[cfg(test)]
mod tests {
    use crate::color::{Colorimetry, Range};
    use crate::engine::{BackendChoice, Engine, EngineConfig};
    use crate::format::{FrameLayout, PixelFormat};
    use crate::frame::{Frame, HostFrame, Plane};
    use crate::metric::{OptionValue, Options};

    fn engine(format: PixelFormat, w: u32, h: u32, range: Range, options: Options) -> Engine {
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
        let c = Colorimetry {
            range,
            ..Colorimetry::default_for(format.family())
        };
        Engine::builder(&cfg, layout, layout)
            .colorimetry(c, c)
            .build()
            .unwrap()
    }

    fn gray(data: &[u8], stride: usize) -> Frame<'_> {
        Frame::Host(HostFrame::new(&[Plane { data, stride }]))
    }

    #[test]
    fn ratio_on_both_inputs_flat_black_and_tiny_frames() {
        for (w, h) in [(1u32, 1u32), (2, 2), (33, 17)] {
            let n = (w * h) as usize;
            let mut e = engine(PixelFormat::Gray8, w, h, Range::Full, Options::new());
            let black = vec![0u8; n];
            let flat = vec![128u8; n];
            let s = e
                .compare(&gray(&flat, w as usize), &gray(&black, w as usize))
                .unwrap();
            let names: Vec<_> = s.iter().map(|(n, _)| n).collect();
            assert_eq!(names, ["black", "ref-black"]);
            assert_eq!((s.get("black"), s.get("ref-black")), (Some(1.0), Some(0.0)));
        }
        // One black sample of four (the threshold is 37: gray is limited range for 5.1).
        let mut e = engine(PixelFormat::Gray8, 2, 2, Range::Full, Options::new());
        let d = [37u8, 38, 200, 255];
        let s = e.compare(&gray(&d, 2), &gray(&d, 2)).unwrap();
        assert_eq!(s.get("black"), Some(0.25));
    }

    #[test]
    fn thresholds_follow_ffmpeg_5_1_per_format_and_option() {
        // 16-bit limited: 16·256 + 0.1·219·256 = 9702.4 → 9702 (full range would be 6553,
        // but 5.1 takes only 8-bit planar YUV as full range).
        let samples: [u16; 4] = [9702, 9703, 0, 65535];
        let bytes: Vec<u8> = samples.iter().flat_map(|s| s.to_le_bytes()).collect();
        for range in [Range::Limited, Range::Full] {
            let mut e = engine(PixelFormat::Gray16Le, 4, 1, range, Options::new());
            let s = e.compare(&gray(&bytes, 8), &gray(&bytes, 8)).unwrap();
            assert_eq!(s.get("black"), Some(0.5), "{range:?}");
        }
        // 8-bit I420: full range (a yuvj format) 25, limited 37.
        let y = [25u8, 26, 37, 38];
        let c = [128u8];
        let frame = Frame::Host(HostFrame::new(&[
            Plane {
                data: &y,
                stride: 2,
            },
            Plane {
                data: &c,
                stride: 1,
            },
            Plane {
                data: &c,
                stride: 1,
            },
        ]));
        let ratio = |range, options| {
            engine(PixelFormat::I420, 2, 2, range, options)
                .compare(&frame, &frame)
                .unwrap()
                .get("black")
                .unwrap()
        };
        assert_eq!(ratio(Range::Full, Options::new()), 0.25);
        assert_eq!(ratio(Range::Limited, Options::new()), 0.75);
        let o = Options::new()
            .with("black-pixel-threshold", OptionValue::Float(0.0))
            .unwrap();
        assert_eq!(ratio(Range::Limited, o.clone()), 0.0);
        assert_eq!(ratio(Range::Full, o), 0.0);
        assert!(super::ffmpeg_full_range(PixelFormat::Y444, Range::Full));
        assert!(!super::ffmpeg_full_range(PixelFormat::Nv12, Range::Full));
        assert!(!super::ffmpeg_full_range(PixelFormat::Gray8, Range::Full));
    }

    #[test]
    fn rgb_gets_a_note() {
        let mut o = Options::new();
        o.parse("black-min-duration", "0.5").unwrap();
        let e = engine(PixelFormat::Rgb, 8, 8, Range::Full, o);
        assert!(
            e.metric_notes()[0].contains("black measures luma"),
            "{:?}",
            e.metric_notes()
        );
        assert_eq!(super::seconds_to_ns(2.0), 2_000_000_000);
    }
}
