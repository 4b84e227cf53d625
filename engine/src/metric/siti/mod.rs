//! SI/TI: spatial and temporal information of one frame's luma (ITU-T P.910), equal to
//! FFmpeg 5.1's `siti` filter (kernel side: `gpumetrics_kernels::siti`, which says how).
//! A no-reference metric ([`Reference::None`]): `si`, `ti` on the distorted frame,
//! `ref-si`, `ref-ti` on the reference frame. TI needs the previous frame of the same
//! input: it is 0 on the first frame of a sequence (as FFmpeg's first frame), and after a
//! flush or caps change. No lag: a frame's fields are known when it is measured.
//! Both backends run the kernel crate's per-pixel functions; they differ only in the order
//! of the f64 additions (`gpumetrics_kernels::siti` says by how much).

mod cpu;
mod cuda;

use super::no_reference::{Input, NoReference};
use super::{Entry, Field, Info, Reference};
use crate::color::Range;
use crate::format::ColorFamily;
use crate::frame::PlanePtrs;
use crate::metric_set::MetricSet;
use crate::plan::Plan;
use gpumetrics_kernels::siti::Luma;

/// Its bit of the `metrics` flags (never changed once released).
pub const FLAG: MetricSet = MetricSet::bit(6);

/// SI is the deviation of a `(w − 2)·(h − 2)` gradient map: frames need both sides of at
/// least 3.
pub const MIN_SIDE: u32 = 3;

/// Names of each field, as `[distorted, reference]`.
const SI: [&str; 2] = ["si", "ref-si"];
const TI: [&str; 2] = ["ti", "ref-ti"];

/// SI and TI share a panel; they have no better direction (the default is kept).
const fn field(name: &'static str) -> Field {
    Field::new(name, "SI / TI").decimals(2)
}

pub(crate) const ENTRY: Entry = Entry {
    provides: &[Info {
        flag: FLAG,
        name: "siti",
        title: "SITI",
        description: "Spatial and temporal information of the luma (FFmpeg 5.1's siti), on \
                      each input",
        fields: &[field(SI[0]), field(TI[0]), field(SI[1]), field(TI[1])],
    }],
    options: &[],
    configure: super::no_settings,
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
        NoReference::boxed(s, |side| Some(cpu::Siti::new(side.layout(s.plan))))
    },
    linear_light: None,
    events: None,
    reference: Reference::None,
    cuda: |gpu, s| {
        if !s.set.contains(FLAG) || why_not(s.plan).is_some() {
            return Ok(None);
        }
        NoReference::cuda_boxed(gpu, s, 1, |gpu, side| {
            cuda::Siti::new(gpu, s.plan, side).map(Some)
        })
    },
};

/// Why a plan gets no SI/TI, if it does not.
fn why_not(plan: &Plan) -> Option<String> {
    let l = &plan.distorted;
    if l.format.family() == ColorFamily::Rgb {
        return Some(format!(
            "siti measures luma: {} frames get none (convert to a YUV format first)",
            l.format.name()
        ));
    }
    if l.width < MIN_SIDE || l.height < MIN_SIDE {
        return Some(format!(
            "siti needs frames of at least {MIN_SIDE}x{MIN_SIDE}; {}x{} frames get none",
            l.width, l.height
        ));
    }
    None
}

/// The kernel-side luma of `side`'s frame at `frame`: its depth, and whether it is full
/// range (the caps' colorimetry; FFmpeg reads the frame's range, limited when unset).
pub(crate) fn luma(plan: &Plan, side: Input, frame: &PlanePtrs) -> Luma {
    let layout = side.layout(plan);
    let format = layout.format;
    let y = &format.channels()[0];
    debug_assert_eq!(y.name, "y");
    Luma {
        chan: frame.channel(y, format.peak()),
        width: layout.width,
        height: layout.height,
        full_range: (side.colorimetry(plan).range == Range::Full) as u32,
        factor: 1 << (format.depth() - 8),
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::{BackendChoice, Engine, EngineConfig};
    use crate::format::{FrameLayout, PixelFormat};
    use crate::frame::{Frame, HostFrame, Plane};

    /// Population standard deviation, plainly in f64.
    fn std(v: &[f64]) -> f64 {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64).sqrt()
    }

    /// SI and TI of full-range gray frames, written out from P.910 directly.
    fn naive(w: usize, h: usize, cur: &[u8], prev: Option<&[u8]>) -> (f64, f64) {
        let p = |x: usize, y: usize| cur[y * w + x] as f64;
        let mut g = Vec::new();
        for y in 1..h - 1 {
            for x in 1..w - 1 {
                let gx = p(x - 1, y - 1) + 2.0 * p(x - 1, y) + p(x - 1, y + 1)
                    - p(x + 1, y - 1)
                    - 2.0 * p(x + 1, y)
                    - p(x + 1, y + 1);
                let gy = p(x - 1, y - 1) + 2.0 * p(x, y - 1) + p(x + 1, y - 1)
                    - p(x - 1, y + 1)
                    - 2.0 * p(x, y + 1)
                    - p(x + 1, y + 1);
                g.push((gx * gx + gy * gy).sqrt());
            }
        }
        let ti = match prev {
            None => 0.0,
            Some(q) => std(&cur
                .iter()
                .zip(q)
                .map(|(a, b)| *a as f64 - *b as f64)
                .collect::<Vec<_>>()),
        };
        (std(&g), ti)
    }

    fn gray(data: &[u8], w: usize) -> Frame<'_> {
        Frame::Host(HostFrame::new(&[Plane { data, stride: w }]))
    }

    #[test]
    fn si_ti_on_both_inputs_ti_restarts_with_the_sequence() {
        let (w, h) = (37usize, 23usize);
        let frames: Vec<Vec<u8>> = (0..3u64)
            .map(|k| {
                let mut r = rng(k + 1);
                (0..w * h).map(|_| r() as u8).collect()
            })
            .collect();
        let layout = FrameLayout {
            format: PixelFormat::Gray8,
            width: w as u32,
            height: h as u32,
        };
        let cfg = EngineConfig {
            metrics: super::FLAG,
            backend: BackendChoice::Cpu,
            ..Default::default()
        };
        let mut e = Engine::new(&cfg, layout, layout).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-4 * b.abs().max(1.0);
        // Reference frame k + 1 while distorted frame k.
        for k in 0..2 {
            let s = e
                .compare(&gray(&frames[k + 1], w), &gray(&frames[k], w))
                .unwrap();
            let names: Vec<_> = s.iter().map(|(n, _)| n).collect();
            assert_eq!(names, ["si", "ti", "ref-si", "ref-ti"]);
            let prev = |i: usize| (k > 0).then(|| frames[i - 1].as_slice());
            let (si, ti) = naive(w, h, &frames[k], prev(k));
            let (rsi, rti) = naive(w, h, &frames[k + 1], prev(k + 1));
            for (field, want) in [("si", si), ("ti", ti), ("ref-si", rsi), ("ref-ti", rti)] {
                let got = s.get(field).unwrap();
                assert!(close(got, want), "frame {k} {field}: {got} vs {want}");
            }
            assert!(si > 100.0 && (k == 0 || ti > 10.0), "{s:?}");
        }
        assert!(e.finish().expect("finishing again").is_empty());
        let s = e
            .compare(&gray(&frames[2], w), &gray(&frames[2], w))
            .unwrap();
        assert_eq!((s.get("ti"), s.get("ref-ti")), (Some(0.0), Some(0.0)));
        e.reset();
        let s = e
            .compare(&gray(&frames[1], w), &gray(&frames[0], w))
            .unwrap();
        assert_eq!(s.get("ti"), Some(0.0));
    }

    fn rng(seed: u64) -> impl FnMut() -> u64 {
        let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        }
    }

    #[test]
    fn limited_range_frames_are_stretched_first() {
        // A flat frame with one bright column: SI scales by 255/219 from limited range.
        let (w, h) = (8usize, 6usize);
        let data: Vec<u8> = (0..w * h)
            .map(|i| if i % w == 3 { 235 } else { 16 })
            .collect();
        let cfg = EngineConfig {
            metrics: super::FLAG,
            backend: BackendChoice::Cpu,
            ..Default::default()
        };
        let si = |format| {
            let layout = FrameLayout {
                format,
                width: w as u32,
                height: h as u32,
            };
            let mut e = Engine::new(&cfg, layout, layout).unwrap();
            e.compare(&gray(&data, w), &gray(&data, w))
                .unwrap()
                .get("si")
                .unwrap()
        };
        // Gray is full range by default, I420's luma limited: 16..235 becomes 0..255.
        let full: Vec<u8> = data
            .iter()
            .map(|&v| if v == 235 { 255 } else { 0 })
            .collect();
        let (want, _) = naive(w, h, &full, None);
        let chroma = vec![128u8; (w / 2) * (h / 2)];
        let layout = FrameLayout {
            format: PixelFormat::I420,
            width: w as u32,
            height: h as u32,
        };
        let mut e = Engine::new(&cfg, layout, layout).unwrap();
        let f = Frame::Host(HostFrame::new(&[
            Plane {
                data: &data,
                stride: w,
            },
            Plane {
                data: &chroma,
                stride: w / 2,
            },
            Plane {
                data: &chroma,
                stride: w / 2,
            },
        ]));
        let got = e.compare(&f, &f).unwrap().get("si").unwrap();
        assert!((got - want).abs() < 1e-4, "{got} vs {want}");
        assert!(si(PixelFormat::Gray8) < got);
    }

    #[test]
    fn rgb_and_tiny_frames_get_a_note() {
        let cfg = EngineConfig {
            metrics: super::FLAG | crate::metric_set::MetricSet::PSNR,
            backend: BackendChoice::Cpu,
            ..Default::default()
        };
        let at = |format, width, height| FrameLayout {
            format,
            width,
            height,
        };
        let e = Engine::new(&cfg, at(PixelFormat::Rgb, 8, 8), at(PixelFormat::Rgb, 8, 8)).unwrap();
        assert!(
            e.metric_notes()[0].contains("siti measures luma"),
            "{:?}",
            e.metric_notes()
        );
        let l = at(PixelFormat::I420, 2, 8);
        let e = Engine::new(&cfg, l, l).unwrap();
        assert!(
            e.metric_notes()[0].contains("at least 3x3"),
            "{:?}",
            e.metric_notes()
        );
    }
}
