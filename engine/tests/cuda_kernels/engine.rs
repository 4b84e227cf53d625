//! The engine-level checks the pipeline kernels share: a metric's field from the CUDA backend
//! against the CPU backend's on the same frames.

use gpumetrics_engine::{
    BackendChoice, Colorimetry, Engine, EngineConfig, EngineError, Frame, FrameLayout, HostFrame,
    MetricSet, PixelFormat, Transfer,
};

use crate::common::{self, Rng};
use crate::{Outcome, rel_err};

/// A metric's field from the CUDA and the CPU backend on a 173×97 random pair (RGB and
/// I420): the kernels as the engine launches them, against the host build of the same code.
pub(crate) fn engine_pipeline(
    r: &mut Rng,
    metric: MetricSet,
    field: &str,
    tolerance: f64,
    relative: bool,
) -> Outcome {
    let mut out = Comparison::new(tolerance, relative);
    for format in [PixelFormat::Rgb, PixelFormat::I420] {
        let (layout, len) = random_layout(format);
        let (w, h) = (layout.width, layout.height);
        // Smooth random image (noise blurred by averaging) and a noisier copy.
        let base = r.bytes(len);
        let a: Vec<u8> = (0..len)
            .map(|i| ((base[i] as u32 + base[(i + 1) % len] as u32 + 2 * 128) / 4) as u8)
            .collect();
        let noise = r.bytes(len);
        let b: Vec<u8> = a
            .iter()
            .zip(&noise)
            .map(|(v, n)| v.saturating_add(n % 16).saturating_sub(8))
            .collect();
        let planes = |d| common::images::planes(format, w, h, d);
        let (pa, pb) = (planes(&a), planes(&b));
        let (fa, fb) = (
            Frame::Host(HostFrame::new(&pa)),
            Frame::Host(HostFrame::new(&pb)),
        );
        let c = Colorimetry::default_for(format.family());
        out.add(format.name(), both(metric, field, layout, c, &fa, &fb));
    }
    out.outcome()
}

/// A metric's field from both backends on the pair of
/// `common::synthetic::out_of_range_frames` (I420 and P010, 96×64: legal codes whose R'G'B'
/// goes above 1 and below 0) tagged BT.2100 PQ and HLG: the GPU clips R'G'B' before the
/// EOTF as the CPU does (without the clip, the CPU's SSIMULACRA2 was −4e8 there).
pub(crate) fn out_of_range_pipeline(
    metric: MetricSet,
    field: &str,
    tolerance: f64,
    relative: bool,
) -> Outcome {
    let mut out = Comparison::new(tolerance, relative);
    for format in [PixelFormat::I420, PixelFormat::P010_10Le] {
        with_out_of_range_pair(format, |layout, fa, fb| {
            for (name, transfer) in [("pq", Transfer::Pq), ("hlg", Transfer::Hlg)] {
                let label = format!("{} {name}", format.name());
                out.add(
                    &label,
                    both(
                        metric,
                        field,
                        layout,
                        common::synthetic::bt2100(transfer),
                        fa,
                        fb,
                    ),
                );
            }
        });
    }
    out.outcome()
}

/// The 173×97 layout of the random pairs in `format` (RGB or 8-bit 4:2:0) and its bytes.
fn random_layout(format: PixelFormat) -> (FrameLayout, usize) {
    let (w, h) = (173usize, 97usize);
    let len = match format {
        PixelFormat::Rgb => 3 * w * h,
        _ => w * h + 2 * w.div_ceil(2) * h.div_ceil(2),
    };
    let layout = FrameLayout {
        format,
        width: w as u32,
        height: h as u32,
    };
    (layout, len)
}

/// `run` on the 96×64 pair of `common::synthetic::out_of_range_frames` in `format` (legal
/// codes whose R'G'B' leaves [0, 1]), as host frames of that layout.
fn with_out_of_range_pair(format: PixelFormat, run: impl FnOnce(FrameLayout, &Frame, &Frame)) {
    let (w, h) = (96usize, 64usize);
    let layout = FrameLayout {
        format,
        width: w as u32,
        height: h as u32,
    };
    let (a, b, strides, offsets) = common::synthetic::out_of_range_frames(format, w, h);
    let (pa, pb) = (
        common::synthetic::planes(&offsets, &strides, &a),
        common::synthetic::planes(&offsets, &strides, &b),
    );
    run(
        layout,
        &Frame::Host(HostFrame::new(&pa)),
        &Frame::Host(HostFrame::new(&pb)),
    );
}

/// `field` of `metric` from the CUDA and the CPU backend on (a, b), both tagged `c`.
fn both(
    metric: MetricSet,
    field: &str,
    layout: FrameLayout,
    c: Colorimetry,
    a: &Frame,
    b: &Frame,
) -> [Result<f64, EngineError>; 2] {
    [BackendChoice::Cuda, BackendChoice::Cpu].map(|backend| {
        let cfg = EngineConfig {
            metrics: metric,
            backend,
            ..Default::default()
        };
        Engine::builder(&cfg, layout, layout)
            .colorimetry(c, c)
            .build()
            .and_then(|mut e| e.compare(a, b))
            .map(|s| s.get(field).unwrap_or(f64::NAN))
    })
}

/// The worst CUDA-versus-CPU error over several frame pairs, with a note per pair.
struct Comparison {
    tolerance: f64,
    relative: bool,
    max_err: f64,
    elements: usize,
    notes: Vec<String>,
}

impl Comparison {
    fn new(tolerance: f64, relative: bool) -> Self {
        Comparison {
            tolerance,
            relative,
            max_err: 0.0,
            elements: 0,
            notes: Vec::new(),
        }
    }

    /// One pair's [cuda, cpu] scores; an error or a NaN counts as an infinite error.
    fn add(&mut self, label: &str, [cuda, cpu]: [Result<f64, EngineError>; 2]) {
        self.elements += 1;
        match (cuda, cpu) {
            (Ok(g), Ok(c)) => {
                let e = if self.relative {
                    rel_err(g, c)
                } else {
                    (g - c).abs()
                };
                self.max_err = self.max_err.max(if e.is_nan() { f64::INFINITY } else { e });
                self.notes.push(format!("{label} cuda {g:.5} cpu {c:.5}"));
            }
            (g, c) => {
                self.max_err = f64::INFINITY;
                self.notes.push(format!("{label} {g:?} {c:?}"));
            }
        }
    }

    fn outcome(self) -> Outcome {
        Outcome {
            elements: self.elements,
            max_err: self.max_err,
            tolerance: self.tolerance,
            note: self.notes.join(", "),
        }
    }
}

/// `a` and `b` as one outcome: the larger error, both notes (under `b_label`).
pub(crate) fn merge(a: Outcome, b: Outcome, b_label: &str) -> Outcome {
    Outcome {
        elements: a.elements + b.elements,
        max_err: a.max_err.max(b.max_err),
        tolerance: a.tolerance.min(b.tolerance),
        note: format!("{}; {b_label}: {}", a.note, b.note),
    }
}

/// Each of `fields` (a metric and one of its fields) from one CUDA engine measuring
/// `together`, against the same field from an engine measuring its metric alone: equal bit
/// for bit (tolerance 0), over four random pairs of each of RGB and I420 173×97 with two
/// pairs in flight, and over `common::synthetic::out_of_range_frames` (P010, tagged PQ). For
/// stages that metrics share when they run together (`crate::cuda::linear_light`).
pub(crate) fn together_equals_alone(
    r: &mut Rng,
    together: MetricSet,
    fields: &[(MetricSet, &str)],
) -> Outcome {
    let mut out = Comparison::new(0.0, false);
    for format in [PixelFormat::Rgb, PixelFormat::I420] {
        let (layout, len) = random_layout(format);
        let data: Vec<Vec<u8>> = (0..8).map(|_| r.bytes(len)).collect();
        let planes: Vec<_> = data
            .iter()
            .map(|d| common::images::planes(format, layout.width, layout.height, d))
            .collect();
        let frames: Vec<Frame> = planes
            .iter()
            .map(|p| Frame::Host(HostFrame::new(p)))
            .collect();
        let pairs: Vec<(&Frame, &Frame)> = frames.chunks(2).map(|p| (&p[0], &p[1])).collect();
        let c = Colorimetry::default_for(format.family());
        compare_sequences(&mut out, format.name(), together, fields, layout, c, &pairs);
    }
    with_out_of_range_pair(PixelFormat::P010_10Le, |layout, fa, fb| {
        let pairs = [(fa, fb), (fb, fa), (fa, fb)];
        let c = common::synthetic::bt2100(Transfer::Pq);
        compare_sequences(&mut out, "p010 pq", together, fields, layout, c, &pairs);
    });
    out.outcome()
}

/// One comparison per pair and field of [`together_equals_alone`].
fn compare_sequences(
    out: &mut Comparison,
    label: &str,
    together: MetricSet,
    fields: &[(MetricSet, &str)],
    layout: FrameLayout,
    c: Colorimetry,
    pairs: &[(&Frame, &Frame)],
) {
    let run = |metrics: MetricSet| -> Result<Vec<gpumetrics_engine::Scores>, EngineError> {
        let cfg = EngineConfig {
            metrics,
            backend: BackendChoice::Cuda,
            ..Default::default()
        };
        let mut e = Engine::builder(&cfg, layout, layout)
            .colorimetry(c, c)
            .in_flight(2)
            .build()?;
        let mut scores = Vec::new();
        for (tag, (reference, distorted)) in pairs.iter().enumerate() {
            let frames = gpumetrics_engine::Frames::Pair {
                reference,
                distorted,
            };
            e.submit(frames, tag as u64)?;
            scores.extend(std::iter::from_fn(|| e.poll()).map(|(_, s)| s));
        }
        e.end()?;
        scores.extend(std::iter::from_fn(|| e.poll()).map(|(_, s)| s));
        Ok(scores)
    };
    let both = run(together);
    for &(metric, field) in fields {
        let alone = run(metric);
        for i in 0..pairs.len() {
            let get = |r: &Result<Vec<gpumetrics_engine::Scores>, EngineError>| match r {
                Ok(s) => s
                    .get(i)
                    .and_then(|s| s.get(field))
                    .ok_or_else(|| EngineError::Unsupported(format!("no {field} for pair {i}"))),
                Err(e) => Err(EngineError::Unsupported(e.to_string())),
            };
            out.add(
                &format!("{label} pair {i} {field} together/alone"),
                [get(&both), get(&alone)],
            );
        }
    }
}
