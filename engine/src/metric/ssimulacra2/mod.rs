//! SSIMULACRA2 (version 2.1) from per-scale map sums (kernel side:
//! `gpumetrics_kernels::ssimulacra2`): norms, the 108-weight sum and the final mapping, in
//! f64.

mod cpu;
mod cuda;
pub mod map;

use super::{CpuMetric, CudaMetric, Entry, Field, Info, Reference};
use crate::color::ChromaUpsampling;
use crate::metric::option::CHROMA_UPSAMPLING;
use crate::metric_set::MetricSet;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::ssimulacra2::math::{
    MAX_SCALES, MIN_SIZE, SUMS_PER_PLANE, SUMS_PER_SCALE, half,
};

pub const FIELD: &str = "ssimulacra2";

pub(crate) const ENTRY: Entry = Entry {
    provides: &[Info {
        flag: MetricSet::SSIMULACRA2,
        name: "ssimulacra2",
        title: "SSIMULACRA2",
        description: "SSIMULACRA2 (version 2.1) on display-referred linear light from the caps' \
                      colorimetry; frames >= 8x8",
        fields: &[Field::new(FIELD, "SSIMULACRA2 (100 = identical)")],
    }],
    options: &[CHROMA_UPSAMPLING],
    configure: |o| Ok(Box::new(ChromaUpsampling::from_options(o))),
    notes: |s| note(s.plan, s.set).into_iter().collect(),
    check: |s| {
        if s.set.contains(MetricSet::SSIMULACRA2) {
            s.plan.colorimetry[0].check_linearizable("reference")?;
            s.plan.colorimetry[1].check_linearizable("distorted")?;
        }
        Ok(())
    },
    cpu: |s| {
        let upsampling = *s.settings::<ChromaUpsampling>();
        s.set
            .contains(MetricSet::SSIMULACRA2)
            .then(|| Box::new(cpu::Ssimu2 { upsampling }) as Box<dyn CpuMetric>)
    },
    linear_light: Some(|s| {
        (s.set.contains(MetricSet::SSIMULACRA2) && note(s.plan, s.set).is_none())
            .then(|| *s.settings::<ChromaUpsampling>())
    }),
    events: None,
    reference: Reference::Full,
    cuda: |gpu, s| {
        if !s.set.contains(MetricSet::SSIMULACRA2) {
            return Ok(None);
        }
        let upsampling = *s.settings::<ChromaUpsampling>();
        Ok(Some(Box::new(cuda::Ssimu2::new(
            gpu,
            s.plan,
            upsampling,
            s.linear_light.cloned(),
        )?) as Box<dyn CudaMetric>))
    },
};

/// Weights of the 108 sub-scores, in the reference's order (plane X, Y, B; scale; norm L1,
/// L4; map ssim, artifact, detail lost).
#[rustfmt::skip]
pub const WEIGHTS: [f64; 108] = [
    0.0, 0.0007376606707406586, 0.0, 0.0, 0.0007793481682867309, 0.0,
    0.0, 0.0004371155730107379, 0.0, 1.1041726426657346, 0.00066284834129271, 0.00015231632783718752,
    0.0, 0.0016406437456599754, 0.0, 1.8422455520539298, 11.441172603757666, 0.0,
    0.0007989109436015163, 0.000176816438078653, 0.0, 1.8787594979546387, 10.94906990605142, 0.0,
    0.0007289346991508072, 0.9677937080626833, 0.0, 0.00014003424285435884, 0.9981766977854967, 0.00031949755934435053,
    0.0004550992113792063, 0.0, 0.0, 0.0013648766163243398, 0.0, 0.0,
    0.0, 0.0, 0.0, 7.466890328078848, 0.0, 17.445833984131262,
    0.0006235601634041466, 0.0, 0.0, 6.683678146179332, 0.00037724407979611296, 1.027889937768264,
    225.20515300849274, 0.0, 0.0, 19.213238186143016, 0.0011401524586618361, 0.001237755635509985,
    176.39317598450694, 0.0, 0.0, 24.43300999870476, 0.28520802612117757, 0.0004485436923833408,
    0.0, 0.0, 0.0, 34.77906344483772, 44.835625328877896, 0.0,
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0008680556573291698, 0.0, 0.0, 0.0, 0.0,
    0.0, 0.0005313191874358747, 0.0, 0.00016533814161379112, 0.0, 0.0,
    0.0, 0.0, 0.0, 0.0004179171803251336, 0.0017290828234722833, 0.0,
    0.0020827005846636437, 0.0, 0.0, 8.826982764996862, 23.19243343998926, 0.0,
    95.1080498811086, 0.9863978034400682, 0.9834382792465353, 0.0012286405048278493, 171.2667255897307, 0.9807858872435379,
    0.0, 0.0, 0.0, 0.0005130064588990679, 0.0, 0.00010854057858411537,
];

/// Raw sums of one frame pair: per scale, [`SUMS_PER_SCALE`] sums (plane·6 + map·2 +
/// norm: Σd, Σd⁴ per map), and its pixel count.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sums {
    pub scales: usize,
    pub pixels: [u64; MAX_SCALES],
    pub sums: [[f64; SUMS_PER_SCALE]; MAX_SCALES],
}

/// Sizes of the scales that are scored for a `width`×`height` image: halved (rounded up)
/// while the previous scale is at least 8×8, as the reference checks the size before it
/// downsamples (so 8×8 gives 8×8 and 4×4); none for an image below 8×8.
pub fn scale_sizes(width: u32, height: u32) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    let (mut w, mut h) = (width, height);
    while out.len() < MAX_SCALES && w >= MIN_SIZE && h >= MIN_SIZE {
        if !out.is_empty() {
            (w, h) = (half(w), half(h));
        }
        out.push((w, h));
    }
    out
}

/// The score from the sums ([`weighted_sum`], then the reference's mapping:
/// [`map::score_of_sum`]).
pub fn score(s: &Sums) -> f64 {
    map::score_of_sum(weighted_sum(s))
}

/// The weighted sum of the pair's 108 norms. Weights are taken in order over the scales
/// present, as the reference implementations (libjxl `tools/ssimulacra2.cc`, the
/// `ssimulacra2` crate) do: with fewer than six scales, plane Y starts at weight
/// `6 * scales`, not at 36.
pub fn weighted_sum(s: &Sums) -> f64 {
    let mut sum = 0.0f64;
    let mut i = 0;
    for c in 0..3 {
        for (sums, &pixels) in s.sums[..s.scales].iter().zip(&s.pixels) {
            let n = pixels as f64;
            let p = &sums[c * SUMS_PER_PLANE..][..SUMS_PER_PLANE];
            for norm in 0..2 {
                for map in 0..3 {
                    let v = p[map * 2 + norm] / n;
                    let v = if norm == 0 { v } else { v.sqrt().sqrt() };
                    sum = WEIGHTS[i].mul_add(v.abs(), sum);
                    i += 1;
                }
            }
        }
    }
    sum
}

/// Why `ssimulacra2` is left out for this plan, if it is.
fn note(plan: &Plan, metrics: MetricSet) -> Option<String> {
    let (w, h) = (plan.reference.width, plan.reference.height);
    (metrics.contains(MetricSet::SSIMULACRA2) && scale_sizes(w, h).is_empty())
        .then(|| format!("ssimulacra2 needs frames of at least 8x8; {w}x{h} frames get none"))
}

/// Appends `ssimulacra2`, unless the frames are too small to have a scale.
fn push_fields(s: &Sums, scores: &mut Scores) {
    if s.scales > 0 {
        scores.push(FIELD, score(s));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_stop_below_eight_pixels() {
        assert_eq!(scale_sizes(1920, 1080).len(), 6);
        assert_eq!(scale_sizes(1920, 1080)[5], (60, 34));
        assert_eq!(scale_sizes(8, 8), vec![(8, 8), (4, 4)]);
        assert_eq!(scale_sizes(17, 100), vec![(17, 100), (9, 50), (5, 25)]);
        assert!(scale_sizes(7, 100).is_empty());
    }

    #[test]
    fn zero_error_is_exactly_100() {
        let s = Sums {
            scales: 6,
            pixels: [10; 6],
            ..Default::default()
        };
        assert_eq!(score(&s), 100.0);
        let mut worse = s;
        worse.sums[1][1] = 1.0; // weight 9: plane X, scale 1, L4 of the SSIM map
        assert!(score(&worse) < 100.0);
    }

    #[test]
    fn weights_are_the_reference_table() {
        assert_eq!(WEIGHTS.iter().filter(|w| **w == 0.0).count(), 56);
        assert_eq!(WEIGHTS[48], 225.205_153_008_492_74);
    }
}
