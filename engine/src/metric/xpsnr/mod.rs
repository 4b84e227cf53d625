//! XPSNR: per plane, the PSNR of the SSE weighted block by block by the inverse of one
//! input's spatial and temporal activity, equal to FFmpeg 9.0.2's `xpsnr` filter (kernel
//! side: `gpumetrics_kernels::xpsnr`, which says how, and which of FFmpeg's quirks are part
//! of the values).
//!
//! FFmpeg measures the activity on its first input, the one it calls "main". Its filter
//! documentation, like its `psnr`'s, has the distorted video there (`[dist][ref]xpsnr`), and
//! so does this metric by default: the distorted frames' activity. The XPSNR authors' own
//! examples (and ab-av1) put the reference first instead, which weights by the reference's
//! activity: `xpsnr-reference-activity` does that.
//!
//! The temporal activity needs the previous frames of that input (one, or two from 32
//! frames per second up): each backend keeps them, as FFmpeg does, from the first pair of a
//! sequence on (before it they count as zeros, so a sequence's first pair has the largest
//! temporal activity), and forgets them at the end of a sequence (EOS, caps change) and at
//! a flush. No pair is held back: a pair's fields are known when it is measured.
//!
//! The frames carry no frame rate, and FFmpeg takes the choice between the first-order and
//! the second-order temporal difference from the stream's rate: `xpsnr-frame-rate` says
//! it (FFmpeg's rule: its integer part from 32 up is second order).

mod cpu;
mod cuda;

use super::{Entry, Field, Info, OptionKind, OptionSpec, Reference};
use crate::format::ColorFamily;
use crate::frame::PlanePtrs;
use crate::metric_set::MetricSet;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::channel::ChannelPair;
use gpumetrics_kernels::xpsnr::{Grid, XpsnrPlanes};

/// Its bit of the `metrics` flags (never changed once released).
pub const FLAG: MetricSet = MetricSet::bit(12);

/// Frame rates from here up take the second-order temporal difference (FFmpeg compares the
/// integer part of the stream's rate with 32).
pub const SECOND_ORDER_FPS: f64 = 32.0;

/// `xpsnr-frame-rate`: the video's frame rate, which decides the temporal difference.
pub const FRAME_RATE: OptionSpec = OptionSpec {
    name: "xpsnr-frame-rate",
    nick: "XPSNR frame rate",
    doc: "XPSNR: the video's frame rate in frames per second, which the frames do not carry: \
          from 32 up the temporal activity is the second-order difference of the last three \
          frames, below it the first-order difference of the last two (FFmpeg's xpsnr takes \
          the rate from the stream; 25 is its rate for raw video without one)",
    kind: OptionKind::Float {
        min: 0.0,
        max: 1000.0,
        default: 25.0,
    },
};

/// `xpsnr-reference-activity`: which input's activity weights the errors.
pub const REFERENCE_ACTIVITY: OptionSpec = OptionSpec {
    name: "xpsnr-reference-activity",
    nick: "XPSNR reference activity",
    doc: "XPSNR: weight by the reference's spatial and temporal activity (FFmpeg's xpsnr with \
          the reference as its first input, as the XPSNR authors' examples and ab-av1 run it) \
          instead of the distorted video's (FFmpeg's xpsnr with the distorted video first, \
          as its documentation names the inputs: main, then reference)",
    kind: OptionKind::Bool { default: false },
};

/// Whose activity weights the errors: FFmpeg's first input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Activity {
    Distorted,
    Reference,
}

/// The metric's settings: which temporal difference, whose activity.
pub(crate) struct Settings {
    second_order: bool,
    activity: Activity,
}

pub(crate) const ENTRY: Entry = Entry {
    provides: &[Info {
        flag: FLAG,
        name: "xpsnr",
        title: "XPSNR",
        description: "Extended perceptually weighted PSNR per plane (FFmpeg 9.0.2's xpsnr)",
        fields: &FIELDS,
    }],
    options: &[FRAME_RATE, REFERENCE_ACTIVITY],
    configure: |o| {
        Ok(Box::new(Settings {
            second_order: o.float(&FRAME_RATE) >= SECOND_ORDER_FPS,
            activity: if o.bool(&REFERENCE_ACTIVITY) {
                Activity::Reference
            } else {
                Activity::Distorted
            },
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
        let st = s.settings::<Settings>();
        Some(
            Box::new(cpu::Xpsnr::new(s.plan, st.second_order, st.activity))
                as Box<dyn super::CpuMetric>,
        )
    },
    linear_light: None,
    events: None,
    reference: Reference::Full,
    cuda: |gpu, s| {
        if !s.set.contains(FLAG) || why_not(s.plan).is_some() {
            return Ok(None);
        }
        let st = s.settings::<Settings>();
        Ok(Some(Box::new(cuda::Xpsnr::new(
            gpu,
            s.plan,
            st.second_order,
            st.activity,
        )?)))
    },
};

const fn xpsnr(name: &'static str) -> Field {
    Field::new(name, "XPSNR (dB)").unit("dB").harmonic()
}

/// Per plane: luma, then the chroma planes (gray video: luma alone).
const FIELDS: [Field; 3] = [xpsnr("xpsnr-y"), xpsnr("xpsnr-u"), xpsnr("xpsnr-v")];

/// Why a plan gets no XPSNR, if it does not.
fn why_not(plan: &Plan) -> Option<String> {
    (plan.reference.format.family() == ColorFamily::Rgb).then(|| {
        format!(
            "xpsnr measures YUV and gray video: {} frames get none (convert them to YUV \
             first)",
            plan.reference.format.name()
        )
    })
}

/// The layout of the input whose activity weights the errors (the kernels' "reference"
/// side: its depth is the one the other input's samples are brought to).
fn source(plan: &Plan, activity: Activity) -> &crate::format::FrameLayout {
    match activity {
        Activity::Reference => &plan.reference,
        Activity::Distorted => &plan.distorted,
    }
}

/// The plan's grid: its luma size, its chroma size, its planes and the activity source's
/// depth.
pub(crate) fn grid(plan: &Plan, second_order: bool, activity: Activity) -> Grid {
    let r = source(plan, activity);
    let chroma = match plan.channels.get(1) {
        Some((c, _)) => r.channel_size(c),
        None => (r.width, r.height),
    };
    Grid::new(
        r.width,
        r.height,
        chroma,
        plan.channels.len() as u32,
        r.format.depth(),
        second_order,
    )
}

/// The kernel-side planes of a pair at these addresses: the kernels' `reference` side is
/// the input whose activity weights the errors, the other input's samples are brought to
/// its depth (as PSNR's).
pub(crate) fn planes(plan: &Plan, r: &PlanePtrs, d: &PlanePtrs, activity: Activity) -> XpsnrPlanes {
    let mut out = XpsnrPlanes::default();
    for (slot, (rc, dc)) in out.pairs.iter_mut().zip(&plan.channels) {
        let (width, height) = plan.reference.channel_size(rc);
        let reference = r.channel(rc, plan.reference.format.peak());
        let distorted = d.channel(dc, plan.distorted.format.peak());
        let (reference, distorted) = match activity {
            Activity::Reference => (reference, distorted),
            Activity::Distorted => (distorted, reference),
        };
        *slot = ChannelPair {
            reference,
            distorted,
            width,
            height,
        };
    }
    out
}

/// XPSNR of a plane of `samples` samples from its distortion (`gpumetrics_kernels::xpsnr::
/// distortion`), as FFmpeg's per-frame value: 10·log10(samples · peak² / (√d)²), +inf when
/// d is 0.
pub fn xpsnr_db(distortion: u64, samples: u64, peak: u64) -> f64 {
    let root = (distortion as f64).sqrt();
    if root < 1.0 {
        return f64::INFINITY;
    }
    10.0 * ((samples * peak * peak) as f64 / (root * root)).log10()
}

/// Appends `xpsnr-*` per plane of the plan from the planes' distortions.
pub(crate) fn push_fields(
    plan: &Plan,
    activity: Activity,
    distortion: &[u64],
    scores: &mut Scores,
) {
    let peak = source(plan, activity).format.peak() as u64;
    for (((r, _), &d), n) in plan
        .channels
        .iter()
        .zip(distortion)
        .zip(plan.channel_samples())
    {
        let name = match r.name {
            "y" => "xpsnr-y",
            "u" => "xpsnr-u",
            "v" => "xpsnr-v",
            other => unreachable!("xpsnr: no field for channel {other}"),
        };
        scores.push(name, xpsnr_db(d, n, peak));
        let terms = crate::scores::PoolTerms::Xpsnr {
            root: (d as f64).sqrt(),
            scale: (n * peak * peak) as f64,
        };
        scores.push_pool_terms(name, terms);
    }
}

/// FFmpeg's average of a plane's XPSNR over `frames` frames (its summary line), from the sum
/// of the frames' √distortion and their samples · peak²: the XPSNR of the mean √distortion
/// when that sum is at least the number of frames, else the mean of the frames' values
/// (`mean`; +inf when a frame's is).
pub fn ffmpeg_average(root_sum: f64, scale: f64, frames: f64, mean: f64) -> f64 {
    if root_sum >= frames {
        let average = root_sum / frames;
        10.0 * (scale / (average * average)).log10()
    } else {
        mean
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{BackendChoice, Engine, EngineConfig};
    use crate::format::{FrameLayout, PixelFormat};
    use crate::frame::{Frame, HostFrame, Plane};
    use crate::metric::{OptionValue, Options};

    fn engine(format: PixelFormat, w: u32, h: u32, options: Options) -> Engine {
        let cfg = EngineConfig {
            metrics: FLAG,
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

    /// An I420 frame of `w`×`h` (even) from a luma pattern; chroma flat at `c`.
    fn i420(w: usize, h: usize, luma: impl Fn(usize, usize) -> u8, c: u8) -> Vec<u8> {
        let mut f: Vec<u8> = (0..w * h).map(|i| luma(i % w, i / w)).collect();
        f.resize(w * h + w * h / 2, c);
        f
    }

    fn frame(data: &[u8], w: usize, h: usize) -> Frame<'_> {
        let (y, c) = data.split_at(w * h);
        let (u, v) = c.split_at(w * h / 4);
        Frame::Host(HostFrame::new(&[
            Plane { data: y, stride: w },
            Plane {
                data: u,
                stride: w / 2,
            },
            Plane {
                data: v,
                stride: w / 2,
            },
        ]))
    }

    #[test]
    fn values_follow_ffmpeg_formula() {
        // 1080p 8-bit luma: 10·log10(1920·1080·255² / 4096).
        let want = 10.0 * (1920.0 * 1080.0 * 65025.0 / 4096.0f64).log10();
        assert!((xpsnr_db(4096, 1920 * 1080, 255) - want).abs() < 1e-12);
        assert_eq!(xpsnr_db(0, 100, 255), f64::INFINITY);
        assert!(xpsnr_db(1, 100, 255).is_finite());
    }

    #[test]
    fn identical_frames_are_infinite_and_the_history_restarts() {
        let (w, h) = (64usize, 48usize);
        let a = i420(w, h, |x, y| ((x * 7 + y * 3) % 200) as u8, 128);
        let b = i420(
            w,
            h,
            |x, y| ((x * 7 + y * 3) % 200 + (x + y) % 3) as u8,
            130,
        );
        let moved = i420(w, h, |x, y| ((x * 7 + y * 5) % 200) as u8, 128);
        let mut e = engine(PixelFormat::I420, w as u32, h as u32, Options::new());
        let s = e.compare(&frame(&a, w, h), &frame(&a, w, h)).unwrap();
        let names: Vec<_> = s.iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["xpsnr-y", "xpsnr-u", "xpsnr-v"]);
        assert!(s.iter().all(|(_, v)| v == f64::INFINITY), "{s:?}");
        // The same pair after a still reference frame, and after a moving one: the
        // temporal activity weighs the errors less when the reference moves.
        let first = e.compare(&frame(&a, w, h), &frame(&b, w, h)).unwrap();
        let y = |s: &Scores| s.get("xpsnr-y").unwrap();
        assert!(y(&first).is_finite());
        e.compare(&frame(&moved, w, h), &frame(&moved, w, h))
            .unwrap();
        let after_motion = e.compare(&frame(&a, w, h), &frame(&b, w, h)).unwrap();
        assert!(y(&after_motion) > y(&first), "{after_motion:?} {first:?}");
        // A flush forgets the previous frames: the first pair of a fresh engine again.
        e.reset();
        let fresh = engine(PixelFormat::I420, w as u32, h as u32, Options::new())
            .compare(&frame(&a, w, h), &frame(&b, w, h))
            .unwrap();
        assert_eq!(
            e.compare(&frame(&a, w, h), &frame(&b, w, h)).unwrap(),
            fresh
        );
    }

    #[test]
    fn the_frame_rate_picks_the_temporal_difference() {
        let (w, h) = (64usize, 48usize);
        let frames: Vec<Vec<u8>> = (0..3)
            .map(|k| i420(w, h, |x, y| ((x * (3 + k) + y) % 250) as u8, 128))
            .collect();
        let noisy = i420(w, h, |x, y| ((x * 5 + y) % 250 + (x ^ y) % 4) as u8, 128);
        let run = |fps: f64| {
            let o = Options::new()
                .with("xpsnr-frame-rate", OptionValue::Float(fps))
                .unwrap();
            let mut e = engine(PixelFormat::I420, w as u32, h as u32, o);
            for f in &frames {
                e.compare(&frame(f, w, h), &frame(f, w, h)).unwrap();
            }
            e.compare(&frame(&frames[2], w, h), &frame(&noisy, w, h))
                .unwrap()
        };
        assert_eq!(run(25.0), run(31.99));
        assert_eq!(run(32.0), run(60.0));
        assert_ne!(run(25.0), run(60.0));
    }

    #[test]
    fn gray_frames_have_luma_alone_and_rgb_none() {
        let cfg = EngineConfig {
            metrics: FLAG,
            backend: BackendChoice::Cpu,
            ..Default::default()
        };
        let gray = FrameLayout {
            format: PixelFormat::Gray8,
            width: 40,
            height: 30,
        };
        let mut e = Engine::new(&cfg, gray, gray).unwrap();
        let (a, b) = ([10u8; 1200], [12u8; 1200]);
        fn one(d: &[u8]) -> Frame<'_> {
            Frame::Host(HostFrame::new(&[Plane {
                data: d,
                stride: 40,
            }]))
        }
        // 1200 samples: too small to weight, so the plain PSNR of an error of 2.
        let s = e.compare(&one(&a), &one(&b)).unwrap();
        let want = 10.0 * (255.0f64 * 255.0 / 4.0).log10();
        assert_eq!(s.len(), 1);
        assert!((s.get("xpsnr-y").unwrap() - want).abs() < 1e-12, "{s:?}");
        let rgb = FrameLayout {
            format: PixelFormat::Rgb,
            width: 4,
            height: 4,
        };
        let plan = Plan::new(rgb, rgb).unwrap();
        assert!(why_not(&plan).unwrap().contains("RGB"));
    }
}
