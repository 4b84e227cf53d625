//! Blur: FFmpeg 5.1's `blurdetect` on one frame's luma, `lavfi.blur` with its default
//! parameters and `planes=1` (kernel side: `gpumetrics_kernels::blur`, which says how the
//! edges and widths are found). A no-reference metric ([`Reference::None`]): `blur` on the
//! distorted frame, `ref-blur` on the reference frame. FFmpeg's options are the metric's
//! (`blur-low`, `blur-high`, `blur-radius`, `blur-block-pct`, `blur-block-width`,
//! `blur-block-height`, with its defaults and ranges). Deeper than 8-bit luma is first
//! brought to 8 bits as FFmpeg's automatic scaler does (`gpumetrics_kernels::luma8`).
//!
//! The backends give, per block, the exact sum and the count of its edge widths; the
//! pooling (blocks with a summed width of at least 2, their means sorted, the sharpest
//! `blur-block-pct` percent averaged in f32) is `pool`, here once. A frame without such
//! a block is 0/0 in FFmpeg (`nan`): its record has no `blur` field.

mod cpu;
mod cuda;

use super::no_reference::{Input, NoReference};
use super::{Entry, Field, Info, OptionKind, OptionSpec, Options, Reference};
use crate::color::Range;
use crate::error::EngineError;
use crate::format::ColorFamily;
use crate::frame::PlanePtrs;
use crate::metric_set::MetricSet;
use crate::plan::Plan;
use gpumetrics_kernels::blur::{self, Params};
use gpumetrics_kernels::luma8::{self, Luma8};

/// Its bit of the `metrics` flags (never changed once released).
pub const FLAG: MetricSet = MetricSet::bit(7);

/// The field's names, as `[distorted, reference]`.
const BLUR: [&str; 2] = ["blur", "ref-blur"];

/// FFmpeg's float options hold an f32: the defaults are the f32 of 15/255 and 30/255.
const LOW: OptionSpec = OptionSpec {
    name: "blur-low",
    nick: "Blur low threshold",
    doc: "Blur: blurdetect's low threshold of the edge detection (0..1; an edge pixel's \
          suppressed gradient above low·255 next to one above the high threshold)",
    kind: OptionKind::Float {
        min: 0.0,
        max: 1.0,
        default: (15.0f64 / 255.0) as f32 as f64,
    },
};
const HIGH: OptionSpec = OptionSpec {
    name: "blur-high",
    nick: "Blur high threshold",
    doc: "Blur: blurdetect's high threshold of the edge detection (0..1)",
    kind: OptionKind::Float {
        min: 0.0,
        max: 1.0,
        default: (30.0f64 / 255.0) as f32 as f64,
    },
};
const RADIUS: OptionSpec = OptionSpec {
    name: "blur-radius",
    nick: "Blur search radius",
    doc: "Blur: blurdetect's search radius for the edge width, in pixels (a whole number)",
    kind: OptionKind::Float {
        min: 1.0,
        max: 100.0,
        default: 50.0,
    },
};
const BLOCK_PCT: OptionSpec = OptionSpec {
    name: "blur-block-pct",
    nick: "Blur block percentage",
    doc: "Blur: the percentage of the sharpest blocks averaged into the frame's value (a \
          whole number)",
    kind: OptionKind::Float {
        min: 1.0,
        max: 100.0,
        default: 80.0,
    },
};
const BLOCK_WIDTH: OptionSpec = OptionSpec {
    name: "blur-block-width",
    nick: "Blur block width",
    doc: "Blur: the width of the blocks whose mean edge widths are pooled (a whole number; \
          -1, or a block height below 1: one block of the whole frame)",
    kind: OptionKind::Float {
        min: -1.0,
        max: 2147483647.0,
        default: -1.0,
    },
};
const BLOCK_HEIGHT: OptionSpec = OptionSpec {
    name: "blur-block-height",
    nick: "Blur block height",
    doc: "Blur: the height of the blocks (a whole number; -1, or a block width below 1: \
          one block of the whole frame)",
    kind: OptionKind::Float {
        min: -1.0,
        max: 2147483647.0,
        default: -1.0,
    },
};

/// Blur's settings, from its options.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Settings {
    low: u32,
    high: u32,
    radius: u32,
    pct: u32,
    block_w: i64,
    block_h: i64,
}

/// A number option that FFmpeg declares as an integer: whole numbers only.
pub(crate) fn whole(o: &Options, spec: &'static OptionSpec) -> Result<i64, EngineError> {
    let v = o.float(spec);
    if v.fract() != 0.0 {
        return Err(EngineError::InvalidOption {
            option: spec.name,
            why: format!("{v} is not a whole number (FFmpeg's option is an integer)"),
        });
    }
    Ok(v as i64)
}

/// A threshold as FFmpeg makes it 8-bit: its f32, times 255, plus 0.5, truncated.
fn threshold(v: f64) -> u32 {
    ((v as f32) as f64 * 255.0 + 0.5) as u8 as u32
}

fn configure(o: &Options) -> Result<super::Settings, EngineError> {
    Ok(Box::new(Settings {
        low: threshold(o.float(&LOW)),
        high: threshold(o.float(&HIGH)),
        radius: whole(o, &RADIUS)? as u32,
        pct: whole(o, &BLOCK_PCT)? as u32,
        block_w: whole(o, &BLOCK_WIDTH)?,
        block_h: whole(o, &BLOCK_HEIGHT)?,
    }))
}

pub(crate) const ENTRY: Entry = Entry {
    provides: &[Info {
        flag: FLAG,
        name: "blur",
        title: "blur",
        description: "Blur of the luma: mean edge width of the sharpest blocks (FFmpeg 5.1's \
                      blurdetect), on each input",
        fields: &[field(BLUR[0]), field(BLUR[1])],
    }],
    options: &[LOW, HIGH, RADIUS, BLOCK_PCT, BLOCK_WIDTH, BLOCK_HEIGHT],
    configure,
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
        let settings = *s.settings::<Settings>();
        NoReference::boxed(s, |side| {
            Some(cpu::Blur::new(side.layout(s.plan), settings))
        })
    },
    linear_light: None,
    events: None,
    reference: Reference::None,
    cuda: |gpu, s| {
        if !s.set.contains(FLAG) || why_not(s.plan).is_some() {
            return Ok(None);
        }
        let settings = *s.settings::<Settings>();
        NoReference::cuda_boxed(gpu, s, s.in_flight, |gpu, side| {
            cuda::Blur::new(gpu, s.plan, side, settings).map(Some)
        })
    },
};

/// Wider edges are blurrier.
const fn field(name: &'static str) -> Field {
    Field::new(name, "Blur (edge width, pixels)")
        .decimals(4)
        .lower_is_better()
}

/// Why a plan gets no blur, if it does not.
fn why_not(plan: &Plan) -> Option<String> {
    let l = &plan.distorted;
    if l.format.family() == ColorFamily::Rgb {
        return Some(format!(
            "blur measures luma: {} frames get none (convert to a YUV format first)",
            l.format.name()
        ));
    }
    None
}

/// The 8-bit view of `side`'s luma at `frame`: its depth, and its range (the caps'
/// colorimetry) and colour family, which pick libswscale's way for deeper samples.
pub(crate) fn luma8(plan: &Plan, side: Input, frame: &PlanePtrs) -> Luma8 {
    let layout = side.layout(plan);
    let format = layout.format;
    let y = &format.channels()[0];
    debug_assert_eq!(y.name, "y");
    Luma8 {
        chan: frame.channel(y, format.peak()),
        width: layout.width,
        height: layout.height,
        shift: format.depth() - 8,
        range: match (side.colorimetry(plan).range, format.family()) {
            (Range::Full, ColorFamily::Gray) => luma8::Range::FullGray,
            (Range::Full, _) => luma8::Range::FullYuv,
            _ => luma8::Range::Limited,
        } as u32,
    }
}

impl Settings {
    /// The kernels' parameters for a frame.
    fn params(&self, luma: Luma8) -> Params {
        let (block_w, block_h, cols, rows) =
            blur::layout(luma.width, luma.height, self.block_w, self.block_h);
        Params {
            luma,
            low: self.low,
            high: self.high,
            radius: self.radius,
            block_w,
            block_h,
            cols,
            rows,
            chunks: blur::chunks(block_w, block_h),
        }
    }
}

/// The frame's blur from each block's (exact sum, count) of edge widths, as FFmpeg pools
/// them: blocks whose sum is at least 2 give their mean (f64, kept as f32), the means are
/// sorted ascending and the first ⌈n · pct/100⌉ (in f32, as FFmpeg) averaged in f32.
/// `None` where FFmpeg divides 0 by 0.
pub(crate) fn pool(
    blocks: impl Iterator<Item = (f64, u32)>,
    pct: u32,
    means: &mut Vec<f32>,
) -> Option<f32> {
    means.clear();
    means.extend(
        blocks
            .filter(|&(sum, _)| sum >= 2.0)
            .map(|(sum, count)| (sum / count as f64) as f32),
    );
    means.sort_unstable_by(f32::total_cmp);
    let keep = ((means.len() as f32) * ((pct as f64 / 100.0) as f32)).ceil() as usize;
    let keep = keep.min(means.len());
    if keep == 0 {
        return None;
    }
    let total: f32 = means[..keep].iter().fold(0.0f32, |a, &m| a + m);
    Some(total / keep as f32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{BackendChoice, Engine, EngineConfig};
    use crate::format::{FrameLayout, PixelFormat};
    use crate::frame::{Frame, HostFrame, Plane};

    fn gray(data: &[u8], w: usize) -> Frame<'_> {
        Frame::Host(HostFrame::new(&[Plane { data, stride: w }]))
    }

    fn engine(w: u32, h: u32, options: Options) -> Engine {
        let layout = FrameLayout {
            format: PixelFormat::Gray8,
            width: w,
            height: h,
        };
        let cfg = EngineConfig {
            metrics: FLAG,
            backend: BackendChoice::Cpu,
            options,
            ..Default::default()
        };
        Engine::new(&cfg, layout, layout).unwrap()
    }

    #[test]
    fn thresholds_and_defaults_are_ffmpegs() {
        assert_eq!(threshold((15.0f64 / 255.0) as f32 as f64), 15);
        assert_eq!(threshold((30.0f64 / 255.0) as f32 as f64), 30);
        assert_eq!(threshold(1.0), 255);
        assert_eq!(threshold(0.0), 0);
        let o = Options::new().with("blur-radius", crate::metric::OptionValue::Float(2.5));
        let e = configure(&o.unwrap()).err().unwrap().to_string();
        assert!(e.starts_with("blur-radius: "), "{e}");
    }

    #[test]
    fn pooling_sorts_and_keeps_the_sharpest() {
        let mut m = Vec::new();
        // Means 3, 1, 2 and one block below 2 in all: 80 % of 3 blocks is 3 (ceil 2.4).
        let blocks = [(6.0, 2), (1.5, 1), (4.0, 4), (2.0, 1)];
        assert_eq!(
            pool(blocks.into_iter(), 80, &mut m),
            Some((1.0 + 2.0 + 3.0) / 3.0)
        );
        assert_eq!(pool(blocks.into_iter(), 50, &mut m), Some(1.5));
        assert_eq!(pool(blocks.into_iter(), 1, &mut m), Some(1.0));
        assert_eq!(pool([(1.0, 1)].into_iter(), 80, &mut m), None);
        assert_eq!(pool(std::iter::empty(), 80, &mut m), None);
    }

    #[test]
    fn flat_black_and_tiny_frames_have_no_blur() {
        for (w, h) in [(64usize, 48usize), (1, 1), (3, 2), (4, 4)] {
            for v in [0u8, 128] {
                let d = vec![v; w * h];
                let mut e = engine(w as u32, h as u32, Options::new());
                let s = e.compare(&gray(&d, w), &gray(&d, w)).unwrap();
                assert_eq!(
                    (s.get("blur"), s.get("ref-blur")),
                    (None, None),
                    "{w}x{h} {v}"
                );
            }
        }
    }

    #[test]
    fn a_sharp_edge_is_narrower_than_a_soft_one() {
        let (w, h) = (64usize, 32usize);
        let step: Vec<u8> = (0..w * h)
            .map(|i| if i % w < 32 { 20 } else { 220 })
            .collect();
        let ramp: Vec<u8> = (0..w * h)
            .map(|i| (20 + (i % w).saturating_sub(16).min(32) * 200 / 32) as u8)
            .collect();
        let mut e = engine(w as u32, h as u32, Options::new());
        let s = e.compare(&gray(&ramp, w), &gray(&step, w)).unwrap();
        let (sharp, soft) = (s.get("blur").unwrap(), s.get("ref-blur").unwrap());
        assert!(sharp > 0.0 && soft > sharp + 3.0, "{sharp} {soft}");
        let names: Vec<_> = s.iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["blur", "ref-blur"]);
    }

    #[test]
    fn rgb_frames_get_a_note() {
        let layout = FrameLayout {
            format: PixelFormat::Rgb,
            width: 8,
            height: 8,
        };
        let cfg = EngineConfig {
            metrics: FLAG | MetricSet::PSNR,
            backend: BackendChoice::Cpu,
            ..Default::default()
        };
        let e = Engine::new(&cfg, layout, layout).unwrap();
        assert!(
            e.metric_notes()[0].contains("blur measures luma"),
            "{:?}",
            e.metric_notes()
        );
    }
}
