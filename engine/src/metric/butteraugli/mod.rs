//! Butteraugli (libjxl's current version, default parameters but the intensity target):
//! the stage sequence both backends run, the constants derived on the host, and the two
//! scores from the final diffmap's maximum and power sums (kernel side:
//! `gpumetrics_kernels::butteraugli`).

mod cpu;
mod cuda;

use super::{CpuMetric, CudaMetric, Entry, Field, Info, OptionKind, OptionSpec, Reference};
use crate::color::ChromaUpsampling;
use crate::metric::option::CHROMA_UPSAMPLING;
use crate::metric_set::MetricSet;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::butteraugli::blur::blur5_weights;
use gpumetrics_kernels::butteraugli::{
    MIN_SIZE, MIN_SIZE_FOR_SUBLEVEL, Params, REDUCE_VALUES, Taps, filter, plane,
};

pub const FIELD_MAX: &str = "butteraugli";
pub const FIELD_3NORM: &str = "butteraugli-3norm";
/// libjxl's default intensity target: the nits of linear 1.0 (Vship uses 203).
pub const DEFAULT_INTENSITY: f32 = 80.0;

pub(crate) const ENTRY: Entry = Entry {
    provides: &[Info {
        flag: MetricSet::BUTTERAUGLI,
        name: "butteraugli",
        title: "Butteraugli",
        description: "Butteraugli (libjxl) on display-referred linear light: max norm and \
                      3-norm; frames >= 8x8",
        fields: &[
            Field::new(FIELD_MAX, "Butteraugli (0 = identical)").lower_is_better(),
            Field::new(FIELD_3NORM, "Butteraugli (0 = identical)").lower_is_better(),
        ],
    }],
    options: &[INTENSITY, CHROMA_UPSAMPLING],
    configure: |o| {
        Ok(Box::new(Settings {
            intensity: o.float(&INTENSITY) as f32,
            upsampling: ChromaUpsampling::from_options(o),
        }))
    },
    notes: |s| note(s.plan, s.set).into_iter().collect(),
    check: |s| {
        if s.set.contains(MetricSet::BUTTERAUGLI) {
            s.plan.colorimetry[0].check_linearizable("reference")?;
            s.plan.colorimetry[1].check_linearizable("distorted")?;
        }
        Ok(())
    },
    cpu: |s| {
        wanted(s.plan, s.set)
            .then(|| Box::new(cpu::Butteraugli::new(s.plan, s.settings())) as Box<dyn CpuMetric>)
    },
    linear_light: Some(|s| wanted(s.plan, s.set).then(|| s.settings::<Settings>().upsampling)),
    events: None,
    reference: Reference::Full,
    cuda: |gpu, s| {
        if !wanted(s.plan, s.set) {
            return Ok(None);
        }
        Ok(Some(Box::new(cuda::Butteraugli::new(
            gpu,
            s.plan,
            s.settings(),
            s.linear_light.cloned(),
        )?) as Box<dyn CudaMetric>))
    },
};

/// `butteraugli-intensity`: the nits of linear-light 1.0.
const INTENSITY: OptionSpec = OptionSpec {
    name: "butteraugli-intensity",
    nick: "Butteraugli intensity target",
    doc: "Butteraugli: the luminance in nits of linear-light 1.0 (peak SDR white). 80 = \
          libjxl's default; Vship uses 203, which scores higher",
    kind: OptionKind::Float {
        min: 1.0,
        max: 10000.0,
        default: DEFAULT_INTENSITY as f64,
    },
};

/// Butteraugli's settings (from its options).
pub(crate) struct Settings {
    /// Intensity target in nits.
    intensity: f32,
    upsampling: ChromaUpsampling,
}

fn wanted(plan: &Plan, set: MetricSet) -> bool {
    set.contains(MetricSet::BUTTERAUGLI) && !level_sizes(plan).is_empty()
}

/// Why `butteraugli` is left out for this plan, if it is.
fn note(plan: &Plan, set: MetricSet) -> Option<String> {
    let (w, h) = (plan.reference.width, plan.reference.height);
    (set.contains(MetricSet::BUTTERAUGLI) && level_sizes(plan).is_empty()).then(|| {
        format!(
            "butteraugli needs frames of at least {MIN_SIZE}x{MIN_SIZE}; {w}x{h} frames get none"
        )
    })
}

/// Sizes of the compared levels: the frame, and its half (rounded up) when the frame is at
/// least 15×15; none below 8×8.
pub fn level_sizes(plan: &Plan) -> Vec<(u32, u32)> {
    let (w, h) = (plan.reference.width, plan.reference.height);
    if w < MIN_SIZE || h < MIN_SIZE {
        return Vec::new();
    }
    let mut out = vec![(w, h)];
    if w >= MIN_SIZE_FOR_SUBLEVEL && h >= MIN_SIZE_FOR_SUBLEVEL {
        out.push((w.div_ceil(2), h.div_ceil(2)));
    }
    out
}

/// Values between planes of a `w`×`h` level and between its padded planes (multiples of
/// 64, so every plane starts 256-byte aligned; the padded planes' layout is the kernel
/// crate's `padded_len`).
pub fn plane_lens(w: u32, h: u32) -> (u32, u32) {
    (
        (w * h).next_multiple_of(64),
        gpumetrics_kernels::butteraugli::padded_len(w, h),
    )
}

/// `f32` values a level needs: its planes, then its padded planes.
pub fn level_len(w: u32, h: u32) -> (usize, usize) {
    let (plane_len, padded_len) = plane_lens(w, h);
    (
        plane::COUNT as usize * plane_len as usize,
        plane::PADDED_COUNT as usize * padded_len as usize,
    )
}

/// The Gaussians in [`filter`] order: the constant tables the GPU's run kernels multiply by
/// (`blur::GAUSS_TABLES`, libjxl's weights for its sigmas, checked against the host's
/// `exp` by the kernels' tests), so the CPU backend and every GPU path use the same weights.
pub fn filters() -> [Taps; filter::COUNT] {
    std::array::from_fn(gpumetrics_kernels::butteraugli::blur::table_taps)
}

/// The per-pair constants for an intensity target (nits of linear 1.0), with libjxl's
/// default hf_asymmetry and xmul of 1.
pub fn params(intensity: f32) -> Params {
    const HF_ASYMMETRY: f64 = 1.0;
    // Malta weight and normaliser per input, in `plane::malta` order (band UHF, HF, MF;
    // channel X, Y), and whether it uses the five-sample filter.
    const MALTA: [(f64, f64, bool); 6] = [
        (173.5, 5.0, false),
        (1.100_390_325_55, 71.780_027_516_9, false),
        (6_923.994_761_09, 8_051.158_332_47, true),
        (18.723_741_438_7, 4_498_534.452_32, true),
        (8_246.753_213_53, 1_009_002.705_82, true),
        (37.081_987_039_9, 130_262_059.556, true),
    ];
    let mut malta = [[0.0f32; 3]; 6];
    for (i, (w, norm1, lf)) in MALTA.into_iter().enumerate() {
        // UHF is weighted by the asymmetry, HF by its square root, MF not at all.
        let asym = match i / 2 {
            0 => HF_ASYMMETRY,
            1 => HF_ASYMMETRY.sqrt(),
            _ => 1.0,
        };
        let (w_gt, w_lt) = (w * asym, w / asym);
        let mulli = if lf {
            0.611_612_573_796
        } else {
            0.399_058_176_37
        };
        const LEN: f64 = 3.75;
        let pre_gt = mulli * (0.5 * w_gt).sqrt() / (LEN * 2.0 + 1.0);
        let pre_lt = mulli * (0.33 * w_lt).sqrt() / (LEN * 2.0 + 1.0);
        malta[i] = [
            (pre_gt * norm1) as f32,
            (pre_lt * norm1) as f32,
            norm1 as f32,
        ];
    }
    Params {
        intensity,
        hf_asymmetry: HF_ASYMMETRY as f32,
        xmul: 1.0,
        blur5: blur5_weights(1.2, |x: f32| x.exp()),
        malta,
    }
}

/// One stage of a level, run for every pixel and every `z` of its count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    Blur5Row,
    Opsin,
    /// Row pass of Gaussian `filter` from planes `from + z` into scratch planes `z`.
    GaussRow {
        filter: u32,
        from: u32,
    },
    LfCol,
    MfCol,
    UhfCol,
    MaskCol,
    MaltaInputs,
    AcError,
    Diffmap,
}

/// The stages of one level, with their `z` counts, in order.
pub(crate) const STEPS: [(Step, u32); 13] = [
    (Step::Blur5Row, 6),
    (Step::Opsin, 2),
    (
        Step::GaussRow {
            filter: filter::LF,
            from: plane::xyb(0, 0),
        },
        6,
    ),
    (Step::LfCol, 2),
    (
        Step::GaussRow {
            filter: filter::HF,
            from: plane::mf(0, 0),
        },
        6,
    ),
    (Step::MfCol, 2),
    (
        Step::GaussRow {
            filter: filter::UHF,
            from: plane::hf(0, 0),
        },
        4,
    ),
    (Step::UhfCol, 2),
    (
        Step::GaussRow {
            filter: filter::MASK,
            from: plane::mask_in(0),
        },
        2,
    ),
    (Step::MaskCol, 1),
    (Step::MaltaInputs, 1),
    (Step::AcError, 2),
    (Step::Diffmap, 1),
];

/// Appends both fields from the final diffmap's maximum and Σd³, Σd⁶, Σd¹² over `pixels`.
fn push_fields(acc: &[f64; REDUCE_VALUES], pixels: u64, scores: &mut Scores) {
    let n = 1.0 / pixels as f64;
    let norm3 = ((n * acc[1]).powf(1.0 / 3.0)
        + (n * acc[2]).powf(1.0 / 6.0)
        + (n * acc[3]).powf(1.0 / 12.0))
        / 3.0;
    scores.push(FIELD_MAX, acc[0]);
    scores.push(FIELD_3NORM, norm3);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The GPU's run kernels are compiled for `HALVES`: the filter table must have them.
    #[test]
    fn filters_have_the_widths_the_run_kernels_are_built_for() {
        let halves = filters().map(|t| t.half as usize);
        assert_eq!(halves, gpumetrics_kernels::butteraugli::HALVES);
    }

    #[test]
    fn identical_sums_give_zero() {
        let mut s = Scores::new();
        push_fields(&[0.0; 4], 100, &mut s);
        assert_eq!(s.get(FIELD_MAX), Some(0.0));
        assert_eq!(s.get(FIELD_3NORM), Some(0.0));
    }

    #[test]
    fn three_norm_of_a_constant_is_the_constant() {
        let mut s = Scores::new();
        let d = 1.5f64;
        push_fields(
            &[d, 10.0 * d.powi(3), 10.0 * d.powi(6), 10.0 * d.powi(12)],
            10,
            &mut s,
        );
        assert!((s.get(FIELD_3NORM).unwrap() - d).abs() < 1e-12);
    }

    #[test]
    fn malta_weights_follow_libjxl() {
        let p = params(80.0);
        // UHF X: w 173.5, norm 5, nine-sample filter.
        let pre = 0.399_058_176_37 * (0.5f64 * 173.5).sqrt() / 8.5;
        assert_eq!(p.malta[0][0], (pre * 5.0) as f32);
        assert_eq!(p.malta[5][2], 130_262_059.556f64 as f32);
        let w = p.blur5;
        assert!((w[0] + 2.0 * w[1] + 2.0 * w[2] - 1.0).abs() < 1e-6);
    }
}
