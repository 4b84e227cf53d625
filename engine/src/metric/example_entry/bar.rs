//! CONTRIBUTING.md's example of a no-reference metric, `bar`, as the `mod.rs` of its folder
//! (`engine/src/metric/bar/`) would hold it, with its `cpu.rs` folded in. CONTRIBUTING.md
//! shows this file from its first `use` on, verbatim (`super::contributing_shows_the_examples`
//! checks it); the engine's tests compile and run it, and it is never registered.

use crate::frame::PlanePtrs;
use crate::metric::no_reference::{CpuSingle, Input, NoReference};
use crate::metric::temporal::Restart;
use crate::metric::{Entry, Field, Info, Reference, no_settings};
use crate::metric_set::MetricSet;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::channel::load;

/// Its bit of the `metrics` flags (as `foo`'s: one that no metric takes).
pub const FLAG: MetricSet = MetricSet::bit(30);

/// The field on the distorted frame and on the reference frame: both are declared in the
/// entry, and a side's measurement picks its own with `Input::name`.
const BAR: [&str; 2] = ["bar", "ref-bar"];

pub(crate) const ENTRY: Entry = Entry {
    provides: &[Info {
        flag: FLAG,
        name: "bar",
        title: "Bar",
        description: "Mean of the first channel (luma, or R), on each input",
        fields: &[field(BAR[0]), field(BAR[1])],
    }],
    options: &[],
    configure: no_settings,
    notes: |_| Vec::new(),
    check: |_| Ok(()),
    // `NoReference` measures the distorted frame, then the reference frame when there is
    // one, each side with a state of its own.
    cpu: |s| {
        if !s.set.contains(FLAG) {
            return None;
        }
        NoReference::boxed(s, |_side| Some(Bar))
    },
    linear_light: None,
    events: None,
    reference: Reference::None,
    // A real metric: `NoReference::cuda_boxed(gpu, s, 1, |gpu, side| {
    // cuda::Bar::new(gpu, s.plan, side).map(Some) })`, as SI/TI does.
    cuda: |_gpu, _s| Ok(None),
};

const fn field(name: &'static str) -> Field {
    Field::new(name, "Bar (codes)").decimals(2)
}

/// One side's CPU state (`cpu.rs`): no state across frames.
struct Bar;

/// Forgets what a frame left for the next (SI/TI's previous frame): nothing here.
impl Restart for Bar {
    fn restart(&mut self) {}
}

impl CpuSingle for Bar {
    fn measure(&mut self, plan: &Plan, side: Input, frame: &PlanePtrs, out: &mut Scores) {
        let layout = side.layout(plan);
        let c = frame.channel(&layout.format.channels()[0], layout.format.peak());
        let mut sum = 0u64;
        for y in 0..layout.height {
            let row = (c.ptr + y as u64 * c.pitch as u64) as *const u8;
            for x in 0..layout.width {
                // SAFETY: the backend validated the frame against the side's layout.
                sum += unsafe { load(row, x, &c) } as u64;
            }
        }
        let samples = layout.width as f64 * layout.height as f64;
        out.push(side.field(BAR), sum as f64 / samples);
    }
}
