//! Blockiness: FFmpeg 5.1's `blockdetect` on one frame's luma, `lavfi.block` with its
//! default parameters and `planes=1` (kernel side: `gpumetrics_kernels::blockiness`). A
//! no-reference metric ([`Reference::None`]): `blockiness` on the distorted frame,
//! `ref-blockiness` on the reference frame. Options: `blockiness-period-min`,
//! `blockiness-period-max` (FFmpeg's `period_min`, `period_max`).
//!
//! FFmpeg adds each frame's gradient profiles to those of the frames before it and never
//! clears them: its value for a frame depends on the whole sequence so far (a flat frame
//! repeats the value of the frame before). The state here does the same, per input, and
//! starts again with a sequence (a flush, the end of a stream, a caps change), as a new
//! FFmpeg filter instance would. A frame whose value is NaN (flat profiles: FFmpeg prints
//! `nan`) has no `blockiness` field; one whose profile is zero off the grid is +inf, as
//! FFmpeg prints it (`inf`).

mod cpu;
mod cuda;

use super::blur::{luma8, whole};
use super::no_reference::{Input, NoReference};
use super::{Entry, Field, Info, OptionKind, OptionSpec, Options, Reference};
use crate::error::EngineError;
use crate::format::ColorFamily;
use crate::frame::PlanePtrs;
use crate::metric_set::MetricSet;
use crate::plan::Plan;
use gpumetrics_kernels::blockiness::Params;
use gpumetrics_kernels::luma8::Luma8;

/// Its bit of the `metrics` flags (never changed once released).
pub const FLAG: MetricSet = MetricSet::bit(8);

/// The field's names, as `[distorted, reference]`.
const BLOCKINESS: [&str; 2] = ["blockiness", "ref-blockiness"];

const PERIOD_MIN: OptionSpec = OptionSpec {
    name: "blockiness-period-min",
    nick: "Blockiness minimum period",
    doc: "Blockiness: the smallest block grid period searched, in pixels (a whole number)",
    kind: OptionKind::Float {
        min: 2.0,
        max: 32.0,
        default: 3.0,
    },
};
const PERIOD_MAX: OptionSpec = OptionSpec {
    name: "blockiness-period-max",
    nick: "Blockiness maximum period",
    doc: "Blockiness: the largest block grid period searched, in pixels (a whole number)",
    kind: OptionKind::Float {
        min: 2.0,
        max: 64.0,
        default: 24.0,
    },
};

/// Blockiness's settings, from its options.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Settings {
    period_min: u32,
    period_max: u32,
}

fn configure(o: &Options) -> Result<super::Settings, EngineError> {
    Ok(Box::new(Settings {
        period_min: whole(o, &PERIOD_MIN)? as u32,
        period_max: whole(o, &PERIOD_MAX)? as u32,
    }))
}

pub(crate) const ENTRY: Entry = Entry {
    provides: &[Info {
        flag: FLAG,
        name: "blockiness",
        title: "blockiness",
        description: "Blockiness of the luma: block grid strength, accumulated over the \
                      sequence (FFmpeg 5.1's blockdetect), on each input",
        fields: &[field(BLOCKINESS[0]), field(BLOCKINESS[1])],
    }],
    options: &[PERIOD_MIN, PERIOD_MAX],
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
            Some(cpu::Blockiness::new(side.layout(s.plan), settings))
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
        NoReference::cuda_boxed(gpu, s, 1, |gpu, side| {
            cuda::Blockiness::new(gpu, s.plan, side, settings).map(Some)
        })
    },
};

/// Stronger grids are worse.
const fn field(name: &'static str) -> Field {
    Field::new(name, "Blockiness (grid / non-grid gradient)")
        .decimals(4)
        .lower_is_better()
}

/// Why a plan gets no blockiness, if it does not.
fn why_not(plan: &Plan) -> Option<String> {
    let l = &plan.distorted;
    if l.format.family() == ColorFamily::Rgb {
        return Some(format!(
            "blockiness measures luma: {} frames get none (convert to a YUV format first)",
            l.format.name()
        ));
    }
    None
}

impl Settings {
    /// The kernels' parameters for `side`'s frame at `frame`.
    fn params(&self, plan: &Plan, side: Input, frame: &PlanePtrs, first: bool) -> Params {
        Params {
            first: first as u32,
            ..self.params_for(luma8(plan, side, frame))
        }
    }

    /// The kernels' parameters for a frame's luma (not the first of a sequence).
    fn params_for(&self, luma: Luma8) -> Params {
        Params {
            luma,
            period_min: self.period_min,
            period_max: self.period_max,
            first: 0,
            _pad: 0,
        }
    }
}

/// The field's value: FFmpeg's, unless it is NaN (+inf, a grid with flat blocks, is kept
/// as FFmpeg prints it, as PSNR's +inf of identical planes).
fn value(v: f32) -> Option<f64> {
    (!v.is_nan()).then_some(v as f64)
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

    fn engine(w: u32, h: u32) -> Engine {
        let layout = FrameLayout {
            format: PixelFormat::Gray8,
            width: w,
            height: h,
        };
        let cfg = EngineConfig {
            metrics: FLAG,
            backend: BackendChoice::Cpu,
            ..Default::default()
        };
        Engine::new(&cfg, layout, layout).unwrap()
    }

    /// 8×8 blocks of pseudo-random levels, with a little texture inside each.
    fn blocky(w: usize, h: usize, seed: u32) -> Vec<u8> {
        (0..w * h)
            .map(|i| {
                let (x, y) = ((i % w) as u32, (i / w) as u32);
                let b = (x / 8 * 7919 + y / 8 * 104_729 + seed).wrapping_mul(2_654_435_761);
                ((b >> 24) % 200 + (x * 3 + y * 5) % 7) as u8
            })
            .collect()
    }

    #[test]
    fn a_block_grid_scores_high_and_flat_frames_repeat_it() {
        let (w, h) = (64usize, 48usize);
        let mut e = engine(w as u32, h as u32);
        let flat = vec![128u8; w * h];
        // A flat first frame: 0/0, no field on either input.
        let s = e.compare(&gray(&flat, w), &gray(&flat, w)).unwrap();
        assert_eq!((s.get("blockiness"), s.get("ref-blockiness")), (None, None));
        let d = blocky(w, h, 1);
        let s = e.compare(&gray(&flat, w), &gray(&d, w)).unwrap();
        let b = s.get("blockiness").unwrap();
        assert!(b > 3.0, "{b}");
        assert_eq!(s.get("ref-blockiness"), None);
        // FFmpeg's profiles add up over the sequence: a flat frame changes nothing.
        let s = e.compare(&gray(&flat, w), &gray(&flat, w)).unwrap();
        assert_eq!(s.get("blockiness"), Some(b));
        // A new sequence starts from nothing.
        e.reset();
        let s = e.compare(&gray(&flat, w), &gray(&flat, w)).unwrap();
        assert_eq!(s.get("blockiness"), None);
    }

    #[test]
    fn tiny_and_black_frames() {
        // Too small for any period: 0, as FFmpeg prints.
        for (w, h) in [(1usize, 1usize), (8, 8), (5, 6)] {
            let d = blocky(w, h, 3);
            let mut e = engine(w as u32, h as u32);
            let s = e.compare(&gray(&d, w), &gray(&d, w)).unwrap();
            assert_eq!(s.get("blockiness"), Some(0.0), "{w}x{h}");
        }
        let black = vec![0u8; 40 * 30];
        let mut e = engine(40, 30);
        let s = e.compare(&gray(&black, 40), &gray(&black, 40)).unwrap();
        assert_eq!(s.get("blockiness"), None);
    }

    #[test]
    fn periods_are_whole_numbers() {
        let o = Options::new()
            .with(
                "blockiness-period-max",
                crate::metric::OptionValue::Float(7.5),
            )
            .unwrap();
        let e = configure(&o).err().unwrap().to_string();
        assert!(e.starts_with("blockiness-period-max: "), "{e}");
        assert_eq!(value(f32::NAN), None);
        assert_eq!(value(f32::INFINITY), Some(f64::INFINITY));
        assert_eq!(value(1.5), Some(1.5));
    }
}
