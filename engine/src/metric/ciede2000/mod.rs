//! CIEDE2000: `ciede2000`, libvmaf 3.2.0's `ciede` feature, `45 − 20·log10(mean ΔE00)` over
//! the pixels of a YUV pair read as BT.709 limited range (kernel side:
//! `gpumetrics_kernels::ciede2000`, which says how). Higher is better; identical frames
//! give +inf, as libvmaf does.
//!
//! libvmaf takes YUV only (it refuses 4:0:0), so gray and RGB inputs get no field (a note
//! says so). Its 4:2:2 path reads chroma as if it were 4:4:4 across and 4:2:0 down, past
//! the end of each chroma row: here 4:2:2 chroma is repeated from the nearest sample, as
//! for 4:2:0, and so differs from libvmaf there (docs/METRICS.md).

mod cpu;
mod cuda;

use super::{Entry, Field, Info, Reference};
use crate::format::ColorFamily;
use crate::frame::PlanePtrs;
use crate::metric_set::MetricSet;
use crate::plan::Plan;
use gpumetrics_kernels::ciede2000::{CiedePlanes, FRACTION_BITS};

/// Its bit of the `metrics` flags (never changed once released).
pub const FLAG: MetricSet = MetricSet::bit(14);

/// Its one field.
const FIELD: &str = "ciede2000";

pub(crate) const ENTRY: Entry = Entry {
    provides: &[Info {
        flag: FLAG,
        name: "ciede2000",
        title: "CIEDE2000",
        description: "CIEDE2000 colour difference as libvmaf's ciede: 45 − 20·log10(mean \
                      ΔE00), BT.709 YUV",
        fields: &[Field::new(FIELD, "CIEDE2000 (dB)").unit("dB")],
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
        (s.set.contains(FLAG) && why_not(s.plan).is_none())
            .then(|| Box::new(cpu::Ciede2000) as Box<dyn super::CpuMetric>)
    },
    linear_light: None,
    events: None,
    reference: Reference::Full,
    cuda: |gpu, s| {
        if !s.set.contains(FLAG) || why_not(s.plan).is_some() {
            return Ok(None);
        }
        Ok(Some(Box::new(cuda::Ciede2000::new(gpu, s.plan)?)))
    },
};

/// Why a plan gets no `ciede2000`, if it gets none.
fn why_not(plan: &Plan) -> Option<String> {
    (plan.reference.format.family() != ColorFamily::Yuv).then(|| {
        "ciede2000 reads YUV (as libvmaf's ciede, BT.709): gray and RGB inputs get no \
         ciede2000 (convert them to a YUV format first)"
            .to_string()
    })
}

/// The kernel-side description of a YUV pair at these plane addresses.
fn planes(plan: &Plan, r: &PlanePtrs, d: &PlanePtrs) -> CiedePlanes {
    let p = plan.psnr_planes(r, d);
    debug_assert_eq!(p.count, 3, "ciede2000 runs on YUV plans only");
    let (sub_x, sub_y) = plan.reference.format.subsampling();
    CiedePlanes {
        y: p.pairs[0],
        u: p.pairs[1],
        v: p.pairs[2],
        sub_x,
        sub_y,
        depth: plan.reference.format.depth(),
        _pad: 0,
    }
}

/// libvmaf's score of a frame, `45 − 20·log10(mean ΔE00)`, from the fixed-point ΔE00 sum
/// over `pixels` luma pixels: +inf for identical frames.
pub fn score(sum: u64, pixels: u64) -> f64 {
    let mean = sum as f64 / (1u64 << FRACTION_BITS) as f64 / pixels as f64;
    45.0 - 20.0 * mean.log10()
}

/// Appends the field from the frame's fixed-point ΔE00 sum.
fn push(plan: &Plan, sum: u64, scores: &mut crate::scores::Scores) {
    let pixels = plan.reference.width as u64 * plan.reference.height as u64;
    scores.push(FIELD, score(sum, pixels));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn score_is_libvmafs_formula() {
        let one = 1u64 << FRACTION_BITS;
        assert_eq!(score(0, 100), f64::INFINITY);
        assert!((score(one * 100, 100) - 45.0).abs() < 1e-12);
        assert!((score(one * 1000, 100) - 25.0).abs() < 1e-12);
    }
}
