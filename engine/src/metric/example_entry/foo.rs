//! CONTRIBUTING.md's example of a full-reference metric, `foo`, as the `mod.rs` of its
//! folder (`engine/src/metric/foo/`) would hold it, with its `cpu.rs` folded in. CONTRIBUTING.md
//! shows this file from its first `use` on, verbatim (`super::contributing_shows_the_examples`
//! checks it); the engine's tests compile and run it, and it is never registered.

use crate::format::{ColorFamily, FrameLayout};
use crate::frame::PlanePtrs;
use crate::metric::temporal::Sequenced;
use crate::metric::{CpuMetric, Entry, Field, Info, OptionKind, OptionSpec, Reference};
use crate::metric_set::MetricSet;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::channel::{Channel, load, rescale};

/// Its bit of the `metrics` flags, never changed once released. A real metric takes the
/// next free bit; this example's is one that no metric takes (the example's test checks).
pub const FLAG: MetricSet = MetricSet::bit(31);

/// `foo-threshold`: the element's property `foo-threshold` and the command's
/// `--foo-threshold`, with this type, range, default and doc.
const THRESHOLD: OptionSpec = OptionSpec {
    name: "foo-threshold",
    nick: "Foo threshold",
    doc: "Foo: luma differences of up to this many codes count as none",
    kind: OptionKind::Float {
        min: 0.0,
        max: 255.0,
        default: 0.0,
    },
};

/// Its settings, parsed from the options once per engine by `configure`.
pub(crate) struct Settings {
    threshold: f64,
}

pub(crate) const ENTRY: Entry = Entry {
    provides: &[Info {
        flag: FLAG,
        name: "foo",
        title: "Foo",
        description: "Mean absolute luma difference above foo-threshold",
        fields: &[Field::new("foo", "Foo (codes)")
            .decimals(3)
            .lower_is_better()],
    }],
    options: &[THRESHOLD],
    configure: |o| {
        Ok(Box::new(Settings {
            threshold: o.float(&THRESHOLD),
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
        let threshold = s.settings::<Settings>().threshold;
        Some(Box::new(Foo { threshold }) as Box<dyn CpuMetric>)
    },
    linear_light: None,
    events: None,
    reference: Reference::Full,
    // This example has no kernels, so it gives no `foo` on the CUDA backend. A real metric
    // returns its `cuda.rs` state here, its buffers allocated once, as PSNR does:
    // `Ok(Some(Box::new(cuda::Foo::new(gpu, s.plan)?)))`.
    cuda: |_gpu, _s| Ok(None),
};

/// Why a plan gets no `foo`, if it does not: `notes` reports it (the element posts it once
/// as a warning), and `cpu` and `cuda` then build nothing.
fn why_not(plan: &Plan) -> Option<String> {
    (plan.reference.format.family() == ColorFamily::Rgb)
        .then(|| "foo measures luma: RGB frames get none (convert them to YUV)".to_string())
}

/// The luma of a frame, as the kernel crate reads a channel.
fn luma(layout: &FrameLayout, frame: &PlanePtrs) -> Channel {
    frame.channel(&layout.format.channels()[0], layout.format.peak())
}

/// The CPU state (`cpu.rs`): a pair's sums, then the formula.
struct Foo {
    threshold: f64,
}

/// No pair held back: a temporal metric implements `Sequenced` (see VMAF).
impl Sequenced for Foo {}

impl CpuMetric for Foo {
    fn measure(&mut self, plan: &Plan, r: &PlanePtrs, d: &PlanePtrs, scores: &mut Scores) {
        let (rc, dc) = (luma(&plan.reference, r), luma(&plan.distorted, d));
        let (w, h) = (plan.reference.width, plan.reference.height);
        let mut sum = 0.0;
        for y in 0..h {
            for x in 0..w {
                // SAFETY: the backend validated both frames against the plan's layouts.
                let (a, b) = unsafe {
                    let row = |c: &Channel| (c.ptr + y as u64 * c.pitch as u64) as *const u8;
                    (load(row(&rc), x, &rc), load(row(&dc), x, &dc))
                };
                let diff = a.abs_diff(rescale(b, dc.max, rc.max)) as f64;
                if diff > self.threshold {
                    sum += diff;
                }
            }
        }
        scores.push("foo", sum / (w as f64 * h as f64));
    }
}
