//! VMAF (libvmaf 3.2.0): the integer VIF, ADM and motion features (kernel side:
//! `gpumetrics_kernels::vmaf`, integer sums that are equal on the CPU and the GPU), the
//! float steps from those sums to libvmaf's feature values (here, once), and the model's
//! prediction ([`model`]).
//!
//! Motion is temporal: a pair's motion2 is min(its motion score, the next pair's), and
//! motion3 blends it (and averages it with the previous pair's for the HFR models), so the
//! metric is a `Window` over each pair's features, of lag 1 (2 with the five-frame window
//! of the HFR models; `super::temporal` holds the pairs; `motion` says how).

#[doc(hidden)]
pub mod adm;
mod cpu;
mod cuda;
mod host;
pub mod model;
mod motion;
mod speed;

use std::sync::Arc;

use super::cambi::CambiSettings;
use super::temporal::{Temporal, Window};
use super::{Entry, Field, Info, OptionKind, OptionSpec, Options, Reference};
use crate::error::EngineError;
use crate::format::ColorFamily;
use crate::metric_set::MetricSet;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::vmaf::MIN_SIDE_EXCLUSIVE;

pub use model::{Feature, Model};

/// VMAF's settings (from its options), and its [`Window`]: a pair's fields from its
/// features and the next pair's motion.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Settings {
    /// The model (`vmaf-model`).
    model: Arc<Model>,
    /// Also report the elementary features (`vmaf-features`).
    features: bool,
    /// `cambi-enc-width`, `cambi-enc-height`, `cambi-enc-bitdepth` (0: the input's), for
    /// the models that read CAMBI.
    cambi_enc: (u32, u32, u32),
    /// The field of the model's score: `vmaf`, or `vmaf-neg` for the second model.
    field: &'static str,
}

impl Settings {
    /// The settings of `vmaf-neg`: libvmaf's `vmaf_v0.6.1neg` on its own features (those of
    /// its enhancement gain limits), without the feature fields.
    fn neg(&self) -> Settings {
        Settings {
            model: Model::built_in(NEG_MODEL).expect("vmaf_v0.6.1neg is built in"),
            features: false,
            cambi_enc: self.cambi_enc,
            field: "vmaf-neg",
        }
    }

    /// The model's CAMBI settings with the encode side's properties.
    fn cambi(&self) -> CambiSettings {
        let mut c = self.model.cambi;
        let (w, h, d) = self.cambi_enc;
        if w != 0 {
            c.enc_width = w;
        }
        if h != 0 {
            c.enc_height = h;
        }
        if d != 0 {
            c.enc_bitdepth = d;
        }
        c
    }
}

/// `vmaf-model`: a built-in model's name or a libvmaf JSON model file.
const MODEL: OptionSpec = OptionSpec {
    name: "vmaf-model",
    nick: "VMAF model",
    doc: "VMAF model: vmaf_v0.6.1 (default), vmaf_v0.6.1neg, vmaf_4k_v0.6.1; VMAF v1: \
          vmaf_v1.0.16_3d0h (1080p at 3H), vmaf_v1.0.16_5d0h (phone), vmaf_v1.0.16_1d5h_2160 \
          (4K at 1.5H), vmaf_v1.0.16_3d0h_2160 (4K at 3H, 0..110), and the same four as \
          vmaf_v1.0.16_hfr_* for high frame rates; or the path of a libvmaf JSON model file",
    kind: OptionKind::Text {
        default: model::DEFAULT_MODEL,
    },
};

/// `vmaf-features`: report the elementary features too.
const FEATURES: OptionSpec = OptionSpec {
    name: "vmaf-features",
    nick: "VMAF features",
    doc: "With vmaf: also report the model's elementary features: vmaf-adm2, \
          vmaf-adm-scale0..3, vmaf-vif-scale0..3, vmaf-motion2 for the v0 models; \
          vmaf-cambi, vmaf-speed-chroma-uv, vmaf-adm3, vmaf-aim, vmaf-motion3 for the v1 models",
    kind: OptionKind::Bool { default: false },
};

fn configure(o: &Options) -> Result<super::Settings, EngineError> {
    let model = Model::load(&o.text(&MODEL)).map_err(|why| EngineError::InvalidOption {
        option: MODEL.name,
        why,
    })?;
    Ok(Box::new(Settings {
        model,
        features: o.bool(&FEATURES),
        cambi_enc: super::cambi::encode_side(o)?,
        field: "vmaf",
    }))
}

/// The feature fields of the v0 models, in record order.
pub const FEATURE_FIELDS: [&str; 10] = [
    "vmaf-adm2",
    "vmaf-adm-scale0",
    "vmaf-adm-scale1",
    "vmaf-adm-scale2",
    "vmaf-adm-scale3",
    "vmaf-vif-scale0",
    "vmaf-vif-scale1",
    "vmaf-vif-scale2",
    "vmaf-vif-scale3",
    "vmaf-motion2",
];

/// The feature fields of the v1 models, in record order.
pub const V1_FEATURE_FIELDS: [&str; 5] = [
    "vmaf-cambi",
    "vmaf-speed-chroma-uv",
    "vmaf-adm3",
    "vmaf-aim",
    "vmaf-motion3",
];

/// A feature field.
const fn feature(name: &'static str) -> Field {
    Field::new(name, "VMAF features").decimals(5).harmonic()
}

/// `vmaf`, then the features with `vmaf-features`, in record order.
const FIELDS: [Field; 16] = [
    Field::new("vmaf", "VMAF (0..100)").harmonic(),
    feature(FEATURE_FIELDS[0]),
    feature(FEATURE_FIELDS[1]),
    feature(FEATURE_FIELDS[2]),
    feature(FEATURE_FIELDS[3]),
    feature(FEATURE_FIELDS[4]),
    feature(FEATURE_FIELDS[5]),
    feature(FEATURE_FIELDS[6]),
    feature(FEATURE_FIELDS[7]),
    feature(FEATURE_FIELDS[8]),
    feature(FEATURE_FIELDS[9]),
    feature(V1_FEATURE_FIELDS[0]),
    feature(V1_FEATURE_FIELDS[1]),
    feature(V1_FEATURE_FIELDS[2]),
    feature(V1_FEATURE_FIELDS[3]),
    feature(V1_FEATURE_FIELDS[4]),
];

/// `vmaf-neg`: the VMAF NEG model beside the `vmaf-model` one (the AOM CTC reports both).
pub const NEG_FLAG: MetricSet = MetricSet::bit(17);

/// The model of `vmaf-neg`.
pub const NEG_MODEL: &str = "vmaf_v0.6.1neg";

pub(crate) const ENTRY: Entry = Entry {
    provides: &[
        Info {
            flag: MetricSet::VMAF,
            name: "vmaf",
            title: "VMAF",
            description: "VMAF (libvmaf 3.2.0 integer features and models, v0 and v1; holds \
                          one pair back, two for the HFR models)",
            fields: &FIELDS,
        },
        Info {
            flag: NEG_FLAG,
            name: "vmaf-neg",
            title: "VMAF-NEG",
            description: "VMAF NEG (libvmaf's vmaf_v0.6.1neg), beside vmaf in the same run \
                          (holds one pair back)",
            fields: &[Field::new("vmaf-neg", "VMAF (0..100)").harmonic()],
        },
    ],
    options: &[
        MODEL,
        FEATURES,
        super::cambi::ENC_WIDTH,
        super::cambi::ENC_HEIGHT,
        super::cambi::ENC_BITDEPTH,
    ],
    configure,
    notes: |s| {
        let (plan, set) = (s.plan, s.set);
        if wants(set) && plan.reference.format.family() == ColorFamily::Rgb {
            vec![
                "vmaf measures luma: RGB inputs get no vmaf (convert them to a YUV format \
                  first)"
                    .to_string(),
            ]
        } else if wants(set) && !fits(plan) {
            vec![format!(
                "vmaf needs frames larger than {MIN_SIDE_EXCLUSIVE}x{MIN_SIDE_EXCLUSIVE} (as \
                 libvmaf); {}x{} frames get no vmaf",
                plan.reference.width, plan.reference.height
            )]
        } else {
            Vec::new()
        }
    },
    check: |s| {
        if !fits(s.plan) {
            return Ok(());
        }
        for settings in models(s.settings(), s.set) {
            if let Some(why) = host::why_not(s.plan, &settings.model, &settings.cambi()) {
                return Err(EngineError::Unsupported(why));
            }
        }
        Ok(())
    },
    cpu: |s| {
        if !fits(s.plan) {
            return None;
        }
        // `check` refused the plans whose host features cannot be made.
        let states: Vec<Box<dyn super::CpuMetric>> = models(s.settings(), s.set)
            .into_iter()
            .map(|settings| {
                let frames =
                    cpu::Vmaf::new(s.plan, settings.model.clone(), &settings.cambi()).ok()?;
                Some(Box::new(Temporal::new(Scorer::new(&settings), frames))
                    as Box<dyn super::CpuMetric>)
            })
            .collect::<Option<_>>()?;
        Models::of(states, Vec::new()).map(|m| m as Box<dyn super::CpuMetric>)
    },
    linear_light: None,
    events: None,
    reference: Reference::Full,
    cuda: |gpu, s| {
        if !fits(s.plan) {
            return Ok(None);
        }
        let models = models(s.settings(), s.set);
        if let [first, second] = &models[..]
            && shares_features(&first.model, &second.model)
        {
            let Some(frames) = cuda::Vmaf::new(
                gpu,
                s.plan,
                first.model.clone(),
                &first.cambi(),
                Some(&second.model),
            )?
            else {
                return Ok(None);
            };
            let both = Both([Scorer::new(first), Scorer::new(second)]);
            let state: Box<dyn super::CudaMetric> =
                Box::new(Temporal::new(both, cuda::Shared(frames)));
            return Ok(Models::of(vec![state], vec![None]).map(|m| m as Box<dyn super::CudaMetric>));
        }
        let mut states: Vec<Box<dyn super::CudaMetric>> = Vec::new();
        let mut lanes = Vec::new();
        for (i, settings) in models.into_iter().enumerate() {
            // The second model on a stream of its own, beside the first.
            let lane = if i == 0 {
                None
            } else {
                let branch = crate::cuda::Branch::new(&gpu.stream)?;
                let lane = crate::cuda::Gpu {
                    ctx: gpu.ctx.clone(),
                    stream: branch.stream.clone(),
                    kernels: gpu.kernels.clone(),
                };
                Some((branch, lane))
            };
            let on = lane.as_ref().map_or(gpu, |(_, g)| g);
            let Some(frames) =
                cuda::Vmaf::new(on, s.plan, settings.model.clone(), &settings.cambi(), None)?
            else {
                return Ok(None);
            };
            states.push(Box::new(Temporal::new(Scorer::new(&settings), frames)));
            lanes.push(lane);
        }
        Ok(Models::of(states, lanes).map(|m| m as Box<dyn super::CudaMetric>))
    },
};

/// Whether `set` asks for a VMAF model's score.
fn wants(set: MetricSet) -> bool {
    set.contains(MetricSet::VMAF) || set.contains(NEG_FLAG)
}

/// Whether `second` reads the features `first` reads but for their enhancement gain limits
/// (`vmaf-neg` beside `vmaf_v0.6.1`): the same VIF, ADM and motion options otherwise, and
/// no side features (SpEED chroma, CAMBI). On the GPU one pass then measures both
/// ([`cuda::Shared`]): the filtering, the wavelets and motion once, the stages that apply
/// the limits once per model.
fn shares_features(first: &Model, second: &Model) -> bool {
    let plain = |m: &Model| {
        m.generations() == (true, false)
            && !m.reads(Feature::SpeedChromaUv)
            && !m.reads(Feature::Cambi)
    };
    let adm = adm::AdmOptions {
        enhn_gain_limit: first.adm.enhn_gain_limit,
        ..second.adm
    };
    plain(first) && plain(second) && adm == first.adm && first.motion == second.motion
}

/// The settings of each model `set` asks for: `vmaf`'s, then `vmaf-neg`'s.
fn models(settings: &Settings, set: MetricSet) -> Vec<Settings> {
    let mut out = Vec::new();
    if set.contains(MetricSet::VMAF) {
        out.push(settings.clone());
    }
    if set.contains(NEG_FLAG) {
        out.push(settings.neg());
    }
    out
}

/// The states of the models of one run (`vmaf`, `vmaf-neg`): one metric state to the
/// engine, fields in the models' order. On the CPU they measure a pair one after the other;
/// on the GPU the second has a stream of its own (a [`crate::cuda::Branch`] of the first's,
/// which starts after the work queued there for the pair, so after its uploads), and both
/// models' kernels overlap.
struct Models<M: ?Sized> {
    states: Vec<Box<M>>,
    /// Per state, on the GPU: `None` on the metric's stream, or its own stream (the branch
    /// and the GPU on it, on which the state was made and is queued).
    lanes: Vec<Option<(crate::cuda::Branch, crate::cuda::Gpu)>>,
}

impl<M: ?Sized> Models<M> {
    /// `None` without a state; `lanes` empty on the CPU.
    fn of(
        states: Vec<Box<M>>,
        lanes: Vec<Option<(crate::cuda::Branch, crate::cuda::Gpu)>>,
    ) -> Option<Box<Self>> {
        (!states.is_empty()).then(|| Box::new(Models { states, lanes }))
    }
}

impl<M: ?Sized + super::temporal::Sequenced> super::temporal::Sequenced for Models<M> {
    fn lag(&self) -> usize {
        self.states.iter().map(|m| m.lag()).max().unwrap_or(0)
    }

    fn align(&mut self, lag: usize) {
        for m in &mut self.states {
            m.align(lag);
        }
    }

    fn finish(&mut self, plan: &Plan, late: &mut [Scores]) {
        for m in &mut self.states {
            m.finish(plan, late);
        }
    }

    fn reset(&mut self) {
        for m in &mut self.states {
            m.reset();
        }
    }

    fn window_start(&mut self) {
        for m in &mut self.states {
            m.window_start();
        }
    }
}

impl super::CpuMetric for Models<dyn super::CpuMetric> {
    fn measure(
        &mut self,
        plan: &Plan,
        r: &crate::frame::PlanePtrs,
        d: &crate::frame::PlanePtrs,
        scores: &mut Scores,
    ) {
        for m in &mut self.states {
            m.measure(plan, r, d, scores);
        }
    }
}

impl super::CudaMetric for Models<dyn super::CudaMetric> {
    fn queue(
        &mut self,
        gpu: &crate::cuda::Gpu,
        plan: &Plan,
        r: &crate::frame::PlanePtrs,
        d: &crate::frame::PlanePtrs,
        uploaded: Option<&cudarc::driver::CudaEvent>,
    ) -> Result<(), EngineError> {
        for (i, m) in self.states.iter_mut().enumerate() {
            match self.lanes.get(i).and_then(Option::as_ref) {
                None => m.queue(gpu, plan, r, d, uploaded)?,
                Some((branch, lane)) => {
                    branch
                        .start_after(&gpu.stream)
                        .map_err(|e| EngineError::Cuda(format!("ordering vmaf-neg: {e}")))?;
                    m.queue(lane, plan, r, d, uploaded)?;
                }
            }
        }
        Ok(())
    }

    fn drop_queued(&mut self) {
        for m in &mut self.states {
            m.drop_queued();
        }
    }

    fn independent(&self) -> bool {
        self.states.iter().all(|m| m.independent())
    }

    fn read(&mut self, plan: &Plan, scores: &mut Scores) -> Result<(), EngineError> {
        self.states
            .iter_mut()
            .try_for_each(|m| m.read(plan, scores))
    }
}

fn fits(plan: &Plan) -> bool {
    plan.reference.width > MIN_SIDE_EXCLUSIVE
        && plan.reference.height > MIN_SIDE_EXCLUSIVE
        && plan.reference.format.family() != ColorFamily::Rgb
}

/// Bits per luma sample of the plan's reference (the distorted luma is rescaled to it).
fn luma_bpc(plan: &Plan) -> u32 {
    plan.reference.format.depth()
}

/// The integer sums of one pair, from either backend.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Sums {
    /// Per VIF scale: num_log, den_log, num_non_log, den_non_log.
    pub vif: [[i64; 4]; 4],
    /// Per ADM scale: numerator h, v, d (row-shifted), denominator h, v, d (as u64 bits).
    pub adm: [[i64; 6]; 4],
    /// Per ADM scale: AIM numerator h, v, d (row-shifted; zeros when AIM is skipped).
    pub adm_aim: [[i64; 3]; 4],
}

/// A pair's features without motion2.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Frame {
    pub adm2: f64,
    /// libvmaf's `VMAF_integer_feature_aim_score` and `VMAF_integer_feature_adm3_score`.
    pub aim: f64,
    pub adm3: f64,
    pub adm_scale: [f64; 4],
    pub vif_scale: [f64; 4],
    /// The motion score: to the previous reference frame, or the one before it with the
    /// five-frame window (0 without one).
    pub motion: f64,
    /// CAMBI of the distorted frame and SpEED chroma, for the models that read them.
    pub cambi: f64,
    pub speed_chroma_uv: f64,
}

/// Sizes of the four VIF scales and the four ADM band levels of a w×h frame.
pub(crate) fn vif_sizes(w: u32, h: u32) -> [(u32, u32); 4] {
    [(w, h), (w / 2, h / 2), (w / 4, h / 4), (w / 8, h / 8)]
}

pub(crate) fn adm_sizes(w: u32, h: u32) -> [(u32, u32); 4] {
    let mut out = [(0, 0); 4];
    let (mut w, mut h) = (w, h);
    for o in &mut out {
        w = w.div_ceil(2);
        h = h.div_ceil(2);
        *o = (w, h);
    }
    out
}

/// libvmaf's VIF feature of one scale from its sums.
fn vif_feature(s: &[i64; 4]) -> f64 {
    let [num_log, den_log, num_non_log, den_non_log] = *s;
    let num = (num_log as f64 / 2048.0
        + (den_non_log as f64 - (num_non_log as f64 / 16384.0) / 65025.0)) as f32;
    let den = (den_log as f64 / 2048.0 + den_non_log as f64) as f32;
    (num / den) as f64
}

/// A pair's features (motion aside) from its sums.
pub(crate) fn frame_features(
    plan: &Plan,
    sums: &Sums,
    motion: f64,
    adm_options: &adm::AdmOptions,
) -> Frame {
    let (w, h) = (plan.reference.width, plan.reference.height);
    let mut f = Frame {
        motion,
        ..Default::default()
    };
    for k in 0..4 {
        f.vif_scale[k] = vif_feature(&sums.vif[k]);
    }
    adm::features(adm_options, w, h, sums, &mut f);
    f
}

/// Appends a pair's fields, given its motion2 and motion3.
fn push_fields(opts: &Settings, f: &Frame, motion2: f64, motion3: f64, scores: &mut Scores) {
    let value = |feature: Feature| match feature {
        Feature::Adm2 => f.adm2,
        Feature::AdmScale(k) => f.adm_scale[k],
        Feature::Adm3 => f.adm3,
        Feature::Aim => f.aim,
        Feature::VifScale(k) => f.vif_scale[k],
        Feature::Motion2 => motion2,
        Feature::Motion3 => motion3,
        Feature::Cambi => f.cambi,
        Feature::SpeedChromaUv => f.speed_chroma_uv,
    };
    let inputs: Vec<f64> = opts
        .model
        .features
        .iter()
        .map(|m| value(m.feature))
        .collect();
    scores.push(opts.field, opts.model.predict(&inputs));
    if opts.features {
        let (v0, v1) = opts.model.generations();
        if v0 {
            let values = [
                f.adm2,
                f.adm_scale[0],
                f.adm_scale[1],
                f.adm_scale[2],
                f.adm_scale[3],
                f.vif_scale[0],
                f.vif_scale[1],
                f.vif_scale[2],
                f.vif_scale[3],
                motion2,
            ];
            for (name, v) in FEATURE_FIELDS.iter().zip(values) {
                scores.push(name, v);
            }
        }
        if v1 {
            let values = [f.cambi, f.speed_chroma_uv, f.adm3, f.aim, motion3];
            for (name, v) in V1_FEATURE_FIELDS.iter().zip(values) {
                scores.push(name, v);
            }
        }
    }
}

/// The metric's [`Window`]: a pair's fields from its features and its neighbours' motion
/// scores, with motion's state across the pairs of a sequence.
pub(crate) struct Scorer {
    settings: Settings,
    motion: motion::Motion,
}

impl Scorer {
    fn new(settings: &Settings) -> Scorer {
        Scorer {
            settings: settings.clone(),
            motion: motion::Motion::default(),
        }
    }
}

impl Window for Scorer {
    type Frame = Frame;

    fn lag(&self) -> usize {
        self.settings.model.motion.lag()
    }

    fn fields(&mut self, _: &Plan, f: &Frame, following: &[Frame], out: &mut Scores) {
        let mut next = [0.0; 2];
        let n = following.len().min(next.len());
        for (slot, g) in next.iter_mut().zip(following) {
            *slot = g.motion;
        }
        let (motion2, motion3) =
            self.motion
                .next(&self.settings.model.motion, f.motion, &next[..n]);
        push_fields(&self.settings, f, motion2, motion3, out);
    }

    fn restart(&mut self) {
        self.motion.restart();
    }
}

/// Two models' scorers over the features of one pass ([`cuda::Shared`]): the first
/// model's fields, then the second's, as [`Models`] gives them.
pub(crate) struct Both([Scorer; 2]);

impl Window for Both {
    type Frame = [Frame; 2];

    fn lag(&self) -> usize {
        self.0.iter().map(Window::lag).max().unwrap_or(0)
    }

    fn fields(&mut self, plan: &Plan, f: &[Frame; 2], following: &[[Frame; 2]], out: &mut Scores) {
        for (i, scorer) in self.0.iter_mut().enumerate() {
            // The scorer reads the motion of at most two following pairs.
            let mut next = [Frame::default(); 2];
            let n = following.len().min(next.len());
            for (slot, g) in next.iter_mut().zip(following) {
                *slot = g[i];
            }
            scorer.fields(plan, &f[i], &next[..n], out);
        }
    }

    fn restart(&mut self) {
        self.0.iter_mut().for_each(Window::restart);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn motion2_is_the_smaller_neighbour_and_the_last_pair_keeps_its_own() {
        let l = crate::FrameLayout {
            format: crate::PixelFormat::Gray8,
            width: 64,
            height: 64,
        };
        let plan = Plan::new(l, l).unwrap();
        let settings = Settings {
            model: Model::default_model(),
            features: true,
            cambi_enc: (0, 0, 0),
            field: "vmaf",
        };
        let mut scorer = Scorer::new(&settings);
        assert_eq!(scorer.lag(), 1);
        let frame = |m| Frame {
            motion: m,
            ..Default::default()
        };
        let motions = [0.0, 5.0, 3.0, 4.0].map(frame);
        let out: Vec<f64> = (0..motions.len())
            .map(|i| {
                let mut s = Scores::new();
                let following = &motions[i + 1..(i + 2).min(motions.len())];
                scorer.fields(&plan, &motions[i], following, &mut s);
                assert_eq!(s.get("vmaf-motion3"), None, "a v0 model");
                s.get("vmaf-motion2").unwrap()
            })
            .collect();
        assert_eq!(out, [0.0, 3.0, 3.0, 4.0]);
        // A new sequence starts from pair 0 again.
        scorer.restart();
        let mut s = Scores::new();
        scorer.fields(&plan, &motions[1], &motions[2..3], &mut s);
        assert_eq!(s.get("vmaf-motion2"), Some(0.0));
    }
}
