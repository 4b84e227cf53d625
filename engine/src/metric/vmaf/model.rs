//! libvmaf JSON models (`model_dict`) and their prediction, as libvmaf 3.2.0 reads and
//! evaluates them (`read_json_model.c`, `predict.c`, `svm.cpp`): feature normalisation
//! (linear rescale), libsvm ν-SVR with an RBF kernel, denormalisation, the optional score
//! transform (only when the model says `"enabled": true`, as libvmaf's default), clipping.
//! Numbers are parsed correctly rounded (serde_json's `float_roundtrip`, as libvmaf's
//! `strtod`): the default fast parser is one ulp off for some of the 4k model's slopes,
//! which moved its scores by 1e-12.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Map, Value};

use super::adm::AdmOptions;
use super::motion::MotionOptions;
use super::speed::SpeedOptions;
use crate::metric::cambi::CambiSettings;

/// The built-in models (libvmaf 3.2.0's `model/` files, BSD-2-Clause-Patent: see
/// `engine/models/LICENSE`): the v0 family, and the v1 models (`vmaf_v1.0.16/` and the
/// high-frame-rate `vmaf_v1.0.16_hfr/`), each named as libvmaf names it.
pub const BUILT_IN: &[(&str, &str)] = &[
    (
        "vmaf_v0.6.1",
        include_str!("../../../models/vmaf_v0.6.1.json"),
    ),
    (
        "vmaf_v0.6.1neg",
        include_str!("../../../models/vmaf_v0.6.1neg.json"),
    ),
    (
        "vmaf_4k_v0.6.1",
        include_str!("../../../models/vmaf_4k_v0.6.1.json"),
    ),
    (
        "vmaf_v1.0.16_3d0h",
        include_str!("../../../models/vmaf_v1.0.16_3d0h.json"),
    ),
    (
        "vmaf_v1.0.16_5d0h",
        include_str!("../../../models/vmaf_v1.0.16_5d0h.json"),
    ),
    (
        "vmaf_v1.0.16_1d5h_2160",
        include_str!("../../../models/vmaf_v1.0.16_1d5h_2160.json"),
    ),
    (
        "vmaf_v1.0.16_3d0h_2160",
        include_str!("../../../models/vmaf_v1.0.16_3d0h_2160.json"),
    ),
    (
        "vmaf_v1.0.16_hfr_3d0h",
        include_str!("../../../models/vmaf_v1.0.16_hfr_3d0h.json"),
    ),
    (
        "vmaf_v1.0.16_hfr_5d0h",
        include_str!("../../../models/vmaf_v1.0.16_hfr_5d0h.json"),
    ),
    (
        "vmaf_v1.0.16_hfr_1d5h_2160",
        include_str!("../../../models/vmaf_v1.0.16_hfr_1d5h_2160.json"),
    ),
    (
        "vmaf_v1.0.16_hfr_3d0h_2160",
        include_str!("../../../models/vmaf_v1.0.16_hfr_3d0h_2160.json"),
    ),
];

/// The default model.
pub const DEFAULT_MODEL: &str = "vmaf_v0.6.1";

/// An elementary feature this engine computes (libvmaf's integer extractors, and CAMBI and
/// SpEED chroma for the v1 models).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feature {
    Adm2,
    AdmScale(usize),
    /// ADM's v1 output: adm2 and aim blended by `adm_dlm_weight`.
    Adm3,
    /// ADM's additive impairment measure.
    Aim,
    Motion2,
    /// motion2 blended, clipped and (for the HFR models) averaged.
    Motion3,
    VifScale(usize),
    /// CAMBI's banding index of the distorted frame.
    Cambi,
    /// SpEED's chroma (U and V) score.
    SpeedChromaUv,
}

/// The libvmaf feature extractor that computes a feature: features of one extractor share
/// its options.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Extractor {
    Adm,
    Vif,
    Motion,
    Cambi,
    Speed,
}

impl Feature {
    /// From a libvmaf feature name (the model's `feature_names`, or its alias).
    pub fn from_name(name: &str) -> Option<Feature> {
        match name {
            "Cambi_feature_cambi_score" | "cambi" => return Some(Feature::Cambi),
            "Speed_chroma_feature_speed_chroma_uv_score" | "speed_chroma_uv" => {
                return Some(Feature::SpeedChromaUv);
            }
            _ => {}
        }
        let name = name
            .strip_prefix("VMAF_integer_feature_")
            .map(|s| s.strip_suffix("_score").unwrap_or(s))
            .or_else(|| name.strip_prefix("integer_"))?;
        Some(match name {
            "adm2" => Feature::Adm2,
            "adm3" => Feature::Adm3,
            "aim" => Feature::Aim,
            "motion2" => Feature::Motion2,
            "motion3" => Feature::Motion3,
            _ => {
                if let Some(k) = name.strip_prefix("vif_scale") {
                    Feature::VifScale(scale_index(k)?)
                } else if let Some(k) = name.strip_prefix("adm_scale") {
                    Feature::AdmScale(scale_index(k)?)
                } else {
                    return None;
                }
            }
        })
    }

    /// The extractor that computes it.
    pub fn extractor(self) -> Extractor {
        match self {
            Feature::Adm2 | Feature::AdmScale(_) | Feature::Adm3 | Feature::Aim => Extractor::Adm,
            Feature::Motion2 | Feature::Motion3 => Extractor::Motion,
            Feature::VifScale(_) => Extractor::Vif,
            Feature::Cambi => Extractor::Cambi,
            Feature::SpeedChromaUv => Extractor::Speed,
        }
    }
}

fn scale_index(s: &str) -> Option<usize> {
    s.parse().ok().filter(|&k| k < 4)
}

/// One input of the model.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelFeature {
    pub feature: Feature,
    pub slope: f64,
    pub intercept: f64,
}

/// libvmaf's optional score transform.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Transform {
    pub p0: Option<f64>,
    pub p1: Option<f64>,
    pub p2: Option<f64>,
    pub knots: Vec<(f64, f64)>,
    pub out_lte_in: bool,
    pub out_gte_in: bool,
}

/// A support vector: its coefficient and its sparse components (1-based index, value).
#[derive(Clone, Debug, PartialEq)]
struct SupportVector {
    coef: f64,
    nodes: Vec<(u32, f64)>,
}

/// A VMAF model: what it reads and how it predicts.
#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    pub name: String,
    pub features: Vec<ModelFeature>,
    /// libvmaf's `adm_enhn_gain_limit` and `vif_enhn_gain_limit` for this model's features.
    pub adm_gain_limit: f64,
    pub vif_gain_limit: f64,
    /// The motion extractor's options.
    pub(crate) motion: MotionOptions,
    /// The ADM and SpEED extractors' options.
    pub(crate) adm: AdmOptions,
    pub(crate) speed: SpeedOptions,
    /// The CAMBI extractor's options (the encode side's come from the properties).
    pub(crate) cambi: CambiSettings,
    /// libvmaf's `chroma_correction_parameter`: a frame whose SpEED chroma score is 0 gets
    /// `c·(1 − adm3)` instead.
    chroma_correction: Option<f64>,
    linear_rescale: bool,
    slope: f64,
    intercept: f64,
    clip: Option<(f64, f64)>,
    transform: Option<Transform>,
    gamma: f64,
    rho: f64,
    svs: Vec<SupportVector>,
}

/// libvmaf's default enhancement gain limit (ADM and VIF).
pub const DEFAULT_GAIN_LIMIT: f64 = 100.0;

fn err(name: &str, why: impl std::fmt::Display) -> String {
    format!("VMAF model {name}: {why}")
}

fn number(v: &Value, name: &str, what: &str) -> Result<f64, String> {
    v.as_f64()
        .ok_or_else(|| err(name, format!("{what} is not a number")))
}

impl Model {
    /// A built-in model by name ([`BUILT_IN`]).
    pub fn built_in(name: &str) -> Option<Arc<Model>> {
        static MODELS: OnceLock<Vec<Arc<Model>>> = OnceLock::new();
        let models = MODELS.get_or_init(|| {
            BUILT_IN
                .iter()
                .map(|(n, json)| {
                    Arc::new(Model::from_json(n, json).expect("built-in model parses"))
                })
                .collect()
        });
        models.iter().find(|m| m.name == name).cloned()
    }

    /// The default model, `vmaf_v0.6.1`.
    pub fn default_model() -> Arc<Model> {
        Model::built_in(DEFAULT_MODEL).expect("the default model is built in")
    }

    /// A built-in model's name, or a path to a libvmaf JSON model file. Files are parsed once
    /// per distinct content.
    pub fn load(name_or_path: &str) -> Result<Arc<Model>, String> {
        if let Some(m) = Model::built_in(name_or_path) {
            return Ok(m);
        }
        let text = std::fs::read_to_string(name_or_path).map_err(|e| {
            format!(
                "VMAF model {name_or_path:?} is neither a built-in model ({}) nor a readable \
                 file: {e}",
                BUILT_IN
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })?;
        static FILES: OnceLock<Mutex<HashMap<String, Arc<Model>>>> = OnceLock::new();
        let mut files = FILES
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(m) = files.get(&text) {
            return Ok(m.clone());
        }
        let m = Arc::new(Model::from_json(name_or_path, &text)?);
        files.insert(text, m.clone());
        Ok(m)
    }

    /// Parses a libvmaf JSON model (its `model_dict`, as libvmaf reads it).
    pub fn from_json(name: &str, json: &str) -> Result<Model, String> {
        let root: Value = serde_json::from_str(json).map_err(|e| err(name, e))?;
        let dict = root
            .get("model_dict")
            .ok_or_else(|| err(name, "no model_dict"))?;
        let get = |k: &str| dict.get(k);
        match get("model_type").and_then(Value::as_str) {
            Some("LIBSVMNUSVR") => {}
            other => {
                return Err(err(
                    name,
                    format!("model_type {other:?} is not supported (only LIBSVMNUSVR)"),
                ));
            }
        }
        let linear_rescale = match get("norm_type").and_then(Value::as_str) {
            Some("linear_rescale") => true,
            Some("none") | None => false,
            Some(o) => return Err(err(name, format!("norm_type {o:?} is not supported"))),
        };
        let names: Vec<&str> = get("feature_names")
            .and_then(Value::as_array)
            .ok_or_else(|| err(name, "no feature_names"))?
            .iter()
            .map(|v| {
                v.as_str()
                    .ok_or_else(|| err(name, "a feature name is not a string"))
            })
            .collect::<Result<_, _>>()?;
        let numbers = |k: &str| -> Result<Vec<f64>, String> {
            match get(k) {
                None => Ok(Vec::new()),
                Some(v) => v
                    .as_array()
                    .ok_or_else(|| err(name, format!("{k} is not an array")))?
                    .iter()
                    .map(|x| number(x, name, k))
                    .collect(),
            }
        };
        let (slopes, intercepts) = (numbers("slopes")?, numbers("intercepts")?);
        if linear_rescale
            && (slopes.len() != names.len() + 1 || intercepts.len() != names.len() + 1)
        {
            return Err(err(
                name,
                "slopes/intercepts need one value per feature plus one",
            ));
        }
        let opts = get("feature_opts_dicts").and_then(Value::as_array);
        // Each extractor's options, from the first of its features that gives them: libvmaf
        // would run one extractor per distinct set, which this engine does not.
        let mut extractors: HashMap<Extractor, Map<String, Value>> = HashMap::new();
        let mut features = Vec::new();
        for (i, n) in names.iter().enumerate() {
            let feature = Feature::from_name(n).ok_or_else(|| {
                err(
                    name,
                    format!(
                        "feature {n} is not computed here (gpumetrics computes libvmaf's integer \
                         features adm2, adm3, aim, adm_scale0..3, vif_scale0..3, motion2, motion3, \
                         and cambi and speed_chroma_uv)"
                    ),
                )
            })?;
            let o = opts
                .and_then(|o| o.get(i))
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            match extractors.get(&feature.extractor()) {
                Some(prev) if *prev != o => {
                    return Err(err(
                        name,
                        "features of one extractor with different options",
                    ));
                }
                Some(_) => {}
                None => {
                    extractors.insert(feature.extractor(), o);
                }
            }
            features.push(ModelFeature {
                feature,
                slope: slopes.get(i + 1).copied().unwrap_or(1.0),
                intercept: intercepts.get(i + 1).copied().unwrap_or(0.0),
            });
        }
        let mut take = |e: Extractor| extractors.remove(&e).unwrap_or_default();
        let gain_limit = |o: &Map<String, Value>, key: &str| -> Result<f64, String> {
            let mut v = DEFAULT_GAIN_LIMIT;
            for (k, x) in o {
                if k == key || k == "egl" {
                    v = number(x, name, k)?;
                }
            }
            if !(1.0..=DEFAULT_GAIN_LIMIT).contains(&v) {
                return Err(err(
                    name,
                    format!("enhancement gain limit {v} is outside 1..=100"),
                ));
            }
            Ok(v)
        };
        let adm_map = take(Extractor::Adm);
        let adm_gain_limit = gain_limit(&adm_map, "adm_enhn_gain_limit")?;
        let mut adm = AdmOptions::default();
        for (k, v) in &adm_map {
            let key = if k == "egl" { "adm_enhn_gain_limit" } else { k };
            let x = match v {
                Value::Bool(b) => *b as u8 as f64,
                _ => number(v, name, k)?,
            };
            adm.set(key, x).map_err(|why| err(name, why))?;
        }
        adm.validate().map_err(|why| err(name, why))?;
        let mut cambi = CambiSettings::default();
        for (k, v) in take(Extractor::Cambi) {
            cambi.set(&k, &v).map_err(|why| err(name, why))?;
        }
        cambi.validate().map_err(|why| err(name, why))?;
        let mut speed = SpeedOptions::default();
        for (k, v) in take(Extractor::Speed) {
            speed.set(&k, &v).map_err(|why| err(name, why))?;
        }
        let vif = take(Extractor::Vif);
        let vif_gain_limit = gain_limit(&vif, "vif_enhn_gain_limit")?;
        if let Some(k) = vif
            .keys()
            .find(|k| *k != "vif_enhn_gain_limit" && *k != "egl")
        {
            return Err(err(
                name,
                format!("feature option {k} of VIF is not supported"),
            ));
        }
        let mut motion = MotionOptions::default();
        for (k, v) in take(Extractor::Motion) {
            match motion.set(&k, &v) {
                Ok(true) => {}
                Ok(false) => {
                    return Err(err(
                        name,
                        format!("feature option {k} of motion is not supported"),
                    ));
                }
                Err(why) => return Err(err(name, why)),
            }
        }
        let chroma_correction = match get("chroma_correction_parameter") {
            None | Some(Value::Null) => None,
            Some(v) => Some(number(v, name, "chroma_correction_parameter")?),
        };
        let clip = match get("score_clip") {
            None => None,
            Some(v) => {
                let a = v
                    .as_array()
                    .filter(|a| a.len() == 2)
                    .ok_or_else(|| err(name, "score_clip is not [min, max]"))?;
                Some((
                    number(&a[0], name, "score_clip")?,
                    number(&a[1], name, "score_clip")?,
                ))
            }
        };
        let transform = match get("score_transform").and_then(Value::as_object) {
            Some(t) if t.get("enabled").and_then(Value::as_bool) == Some(true) => {
                let p = |k: &str| -> Result<Option<f64>, String> {
                    t.get(k).map(|v| number(v, name, k)).transpose()
                };
                let knots = match t.get("knots").and_then(Value::as_array) {
                    None => Vec::new(),
                    Some(a) => a
                        .iter()
                        .map(|k| {
                            let k = k
                                .as_array()
                                .filter(|k| k.len() == 2)
                                .ok_or_else(|| err(name, "a knot is not [x, y]"))?;
                            Ok((number(&k[0], name, "knot")?, number(&k[1], name, "knot")?))
                        })
                        .collect::<Result<_, String>>()?,
                };
                let flag = |k: &str| t.get(k).and_then(Value::as_str) == Some("true");
                Some(Transform {
                    p0: p("p0")?,
                    p1: p("p1")?,
                    p2: p("p2")?,
                    knots,
                    out_lte_in: flag("out_lte_in"),
                    out_gte_in: flag("out_gte_in"),
                })
            }
            _ => None,
        };
        let svm = get("model")
            .and_then(Value::as_str)
            .ok_or_else(|| err(name, "no libsvm model string"))?;
        let (gamma, rho, svs) = parse_libsvm(svm).map_err(|e| err(name, e))?;
        Ok(Model {
            name: name.to_string(),
            features,
            adm_gain_limit,
            vif_gain_limit,
            motion,
            adm,
            speed,
            cambi,
            chroma_correction,
            linear_rescale,
            slope: slopes.first().copied().unwrap_or(1.0),
            intercept: intercepts.first().copied().unwrap_or(0.0),
            clip,
            transform,
            gamma,
            rho,
            svs,
        })
    }

    /// The score of one frame from its features, in the model's feature order.
    pub fn predict(&self, features: &[f64]) -> f64 {
        debug_assert_eq!(features.len(), self.features.len());
        let mut x: Vec<f64> = self
            .features
            .iter()
            .zip(features)
            .map(|(f, &v)| self.normalise(f, v))
            .collect();
        if let Some(c) = self.chroma_correction {
            self.correct_chroma(c, &mut x);
        }
        let mut sum = 0.0;
        for sv in &self.svs {
            sum += sv.coef * (-self.gamma * rbf_distance(&x, &sv.nodes)).exp();
        }
        sum -= self.rho;
        let mut y = if self.linear_rescale {
            (sum - self.intercept) / self.slope
        } else {
            sum
        };
        if let Some(t) = &self.transform {
            y = t.apply(y);
        }
        if let Some((lo, hi)) = self.clip {
            y = if y < lo { lo } else { y };
            y = if y > hi { hi } else { y };
        }
        y
    }

    /// Whether the model reads features of the v0 models (adm2, the ADM and VIF scales,
    /// motion2) and of the v1 models (adm3, aim, motion3, CAMBI, SpEED chroma).
    pub fn generations(&self) -> (bool, bool) {
        let v1 = |f: &ModelFeature| {
            matches!(
                f.feature,
                Feature::Adm3
                    | Feature::Aim
                    | Feature::Motion3
                    | Feature::Cambi
                    | Feature::SpeedChromaUv
            )
        };
        (
            self.features.iter().any(|f| !v1(f)),
            self.features.iter().any(v1),
        )
    }

    /// Whether it reads `feature`.
    pub fn reads(&self, feature: Feature) -> bool {
        self.features.iter().any(|f| f.feature == feature)
    }

    /// Whether it reads a VIF scale (the v1 models do not: VIF is then skipped).
    pub fn reads_vif(&self) -> bool {
        self.features
            .iter()
            .any(|f| matches!(f.feature, Feature::VifScale(_)))
    }

    fn normalise(&self, f: &ModelFeature, v: f64) -> f64 {
        if self.linear_rescale {
            f.slope * v + f.intercept
        } else {
            v
        }
    }

    fn denormalise(&self, f: &ModelFeature, v: f64) -> f64 {
        if self.linear_rescale {
            (v - f.intercept) / f.slope
        } else {
            v
        }
    }

    /// libvmaf's chroma-from-luma step on the normalised inputs: where SpEED chroma is
    /// exactly 0 (after the round trip through the normalisation, as libvmaf compares it),
    /// it is replaced by `c − c·adm3` (adm3 likewise round-tripped), normalised again.
    fn correct_chroma(&self, c: f64, x: &mut [f64]) {
        let find = |want: Feature| self.features.iter().position(|f| f.feature == want);
        let (Some(adm3), Some(chroma)) = (find(Feature::Adm3), find(Feature::SpeedChromaUv)) else {
            return;
        };
        if self.denormalise(&self.features[chroma], x[chroma]) != 0.0 {
            return;
        }
        let guide = self.denormalise(&self.features[adm3], x[adm3]);
        x[chroma] = self.normalise(&self.features[chroma], -c * guide + c);
    }
}

/// libsvm's RBF squared distance between the dense `x` (indices 1..) and a sparse support
/// vector, summed in libsvm's merge order.
fn rbf_distance(x: &[f64], sv: &[(u32, f64)]) -> f64 {
    let mut sum = 0.0;
    let (mut i, mut j) = (0usize, 0usize);
    while i < x.len() && j < sv.len() {
        let xi = i as u32 + 1;
        let (yi, yv) = sv[j];
        if xi == yi {
            let d = x[i] - yv;
            sum += d * d;
            i += 1;
            j += 1;
        } else if xi > yi {
            sum += yv * yv;
            j += 1;
        } else {
            sum += x[i] * x[i];
            i += 1;
        }
    }
    for &v in &x[i..] {
        sum += v * v;
    }
    for &(_, v) in &sv[j..] {
        sum += v * v;
    }
    sum
}

impl Transform {
    /// libvmaf's `transform()`: polynomial, piecewise-linear, rectification.
    fn apply(&self, y_in: f64) -> f64 {
        let mut y = y_in;
        if self.p0.is_some() || self.p1.is_some() || self.p2.is_some() {
            let mut out = 0.0;
            if let Some(p0) = self.p0 {
                out += p0;
            }
            if let Some(p1) = self.p1 {
                out += p1 * y;
            }
            if let Some(p2) = self.p2 {
                out += p2 * y * y;
            }
            y = out;
        }
        if self.knots.len() > 1 {
            y = piecewise_linear(y, &self.knots);
        }
        if self.out_lte_in && y > y_in {
            y = y_in;
        }
        if self.out_gte_in && y < y_in {
            y = y_in;
        }
        y
    }
}

/// libvmaf's `piecewise_linear_mapping`.
fn piecewise_linear(x: f64, knots: &[(f64, f64)]) -> f64 {
    let n_seg = knots.len() - 1;
    let mut y = 0.0;
    for idx in 0..n_seg {
        let (p1, p2) = (knots[idx], knots[idx + 1]);
        if !(p1.0 < p2.0 && p1.1 <= p2.1) {
            return 0.0;
        }
        let in_seg = p1.0 <= x && x <= p2.0;
        let f = |x: f64| {
            if p1.1 == p2.1 {
                p1.1
            } else {
                let (slope, offset) = if p1.0 == 0.0 {
                    ((p2.1 - p1.1) / p2.0, p1.1)
                } else {
                    let a = (p2.1 - p1.1) / (p2.0 - p1.0);
                    (a, p1.1 - p1.0 * a)
                };
                slope * x + offset
            }
        };
        if in_seg || (idx == 0 && x < p1.0) || (idx == n_seg - 1 && x > p2.0) {
            y = f(x);
        }
    }
    y
}

/// The ν-SVR/ε-SVR RBF model of a libsvm model string: (γ, ρ, support vectors).
fn parse_libsvm(text: &str) -> Result<(f64, f64, Vec<SupportVector>), String> {
    let mut lines = text.lines();
    let (mut gamma, mut rho) = (None, None);
    for line in lines.by_ref() {
        let mut w = line.split_whitespace();
        match (w.next(), w.next()) {
            (Some("SV"), _) => break,
            (Some("svm_type"), Some(t)) if t != "nu_svr" && t != "epsilon_svr" => {
                return Err(format!(
                    "svm_type {t} is not supported (only nu_svr, epsilon_svr)"
                ));
            }
            (Some("kernel_type"), Some(k)) if k != "rbf" => {
                return Err(format!("kernel_type {k} is not supported (only rbf)"));
            }
            (Some("gamma"), Some(g)) => gamma = g.parse::<f64>().ok(),
            (Some("rho"), Some(r)) => rho = r.parse::<f64>().ok(),
            _ => {}
        }
    }
    let mut svs = Vec::new();
    for line in lines {
        let mut w = line.split_whitespace();
        let Some(coef) = w.next() else { continue };
        let coef: f64 = coef
            .parse()
            .map_err(|_| format!("bad support vector line {line:?}"))?;
        let nodes = w
            .map(|n| {
                let (i, v) = n.split_once(':').ok_or(())?;
                Ok((i.parse().map_err(|_| ())?, v.parse().map_err(|_| ())?))
            })
            .collect::<Result<Vec<(u32, f64)>, ()>>()
            .map_err(|_| format!("bad support vector line {line:?}"))?;
        svs.push(SupportVector { coef, nodes });
    }
    match (gamma, rho) {
        (Some(g), Some(r)) if !svs.is_empty() => Ok((g, r, svs)),
        _ => Err("the libsvm model lacks gamma, rho or support vectors".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_models_parse_with_their_options() {
        let m = Model::built_in("vmaf_v0.6.1").unwrap();
        assert_eq!(m.features.len(), 6);
        assert_eq!(m.features[0].feature, Feature::Adm2);
        assert_eq!(m.features[5].feature, Feature::VifScale(3));
        assert_eq!(m.svs.len(), 211);
        assert!(
            m.transform.is_none(),
            "libvmaf applies it only when enabled"
        );
        assert_eq!((m.adm_gain_limit, m.vif_gain_limit), (100.0, 100.0));
        let neg = Model::built_in("vmaf_v0.6.1neg").unwrap();
        assert_eq!((neg.adm_gain_limit, neg.vif_gain_limit), (1.0, 1.0));
        assert_eq!(Model::built_in("vmaf_4k_v0.6.1").unwrap().svs.len(), 262);
        assert!(Model::built_in("vmaf_v0.6.2").is_none());
    }

    #[test]
    fn v1_models_parse_with_each_extractors_options() {
        use super::super::speed::SpeedOptions;
        for (name, speed, view, height) in [
            ("vmaf_v1.0.16_3d0h", SpeedOptions::v1_3d0h(), 3.0, 1080),
            ("vmaf_v1.0.16_5d0h", SpeedOptions::v1_5d0h(), 5.0, 1080),
            (
                "vmaf_v1.0.16_1d5h_2160",
                SpeedOptions::v1_1d5h_2160(),
                1.5,
                2160,
            ),
            (
                "vmaf_v1.0.16_3d0h_2160",
                SpeedOptions::v1_3d0h_2160(),
                3.0,
                2160,
            ),
            ("vmaf_v1.0.16_hfr_5d0h", SpeedOptions::v1_5d0h(), 5.0, 1080),
        ] {
            let m = Model::built_in(name).unwrap();
            let f: Vec<Feature> = m.features.iter().map(|f| f.feature).collect();
            assert_eq!(
                f,
                [
                    Feature::Cambi,
                    Feature::SpeedChromaUv,
                    Feature::Adm3,
                    Feature::Motion3
                ],
                "{name}"
            );
            assert_eq!(m.generations(), (false, true));
            assert!(!m.reads_vif());
            assert_eq!(m.cambi, CambiSettings::vmaf_v1(), "{name}");
            assert_eq!(m.speed, speed, "{name}");
            assert_eq!(
                (m.adm.norm_view_dist, m.adm.ref_display_height),
                (view, height)
            );
            assert_eq!(
                (m.adm.dlm_weight, m.adm.csf_mode, m.adm.min_val),
                (0.7, 2, 0.5)
            );
            assert_eq!(m.motion.max_val, 18.0);
            assert_eq!(m.motion.five_frame_window, name.contains("_hfr_"));
            assert_eq!(m.motion.lag(), if name.contains("_hfr_") { 2 } else { 1 });
            assert_eq!(m.chroma_correction, Some(120.0));
        }
        let top = Model::built_in("vmaf_v1.0.16_3d0h_2160").unwrap();
        assert_eq!(top.clip, Some((0.0, 110.0)));
        // The v0 models keep libvmaf's defaults.
        let v0 = Model::default_model();
        assert_eq!(v0.generations(), (true, false));
        assert_eq!(v0.motion, MotionOptions::default());
        assert_eq!(v0.adm, AdmOptions::default());
    }

    #[test]
    fn chroma_correction_replaces_a_zero_chroma_score() {
        let m = Model::built_in("vmaf_v1.0.16_3d0h").unwrap();
        // cambi, speed_chroma_uv, adm3, motion3: a zero chroma score takes 120·(1 − adm3).
        let corrected = m.predict(&[0.5, 0.0, 0.95, 3.0]);
        let explicit = m.predict(&[0.5, 120.0 * (1.0 - 0.95), 0.95, 3.0]);
        assert!(
            (corrected - explicit).abs() < 1e-9,
            "{corrected} {explicit}"
        );
        assert_ne!(corrected, m.predict(&[0.5, 1e-3, 0.95, 3.0]));
    }

    #[test]
    fn unsupported_models_are_refused_with_a_reason() {
        let json = BUILT_IN[0]
            .1
            .replace("VMAF_integer_feature_adm2_score", "VMAF_feature_adm2_score");
        let e = Model::from_json("x", &json).unwrap_err();
        assert!(e.contains("VMAF_feature_adm2_score"), "{e}");
        assert!(
            Model::load("/nonexistent/model.json")
                .unwrap_err()
                .contains("vmaf_v0.6.1")
        );
    }

    #[test]
    fn prediction_is_clipped_and_rises_with_quality() {
        let m = Model::default_model();
        let good = m.predict(&[0.99, 4.0, 0.9, 0.99, 0.99, 0.99]);
        let bad = m.predict(&[0.7, 4.0, 0.2, 0.5, 0.6, 0.7]);
        assert!(good > bad, "{good} {bad}");
        assert!((0.0..=100.0).contains(&good) && (0.0..=100.0).contains(&bad));
    }

    #[test]
    fn transform_and_knots_follow_libvmaf() {
        let t = Transform {
            p0: Some(1.0),
            p1: Some(2.0),
            p2: Some(0.5),
            knots: Vec::new(),
            out_lte_in: false,
            out_gte_in: true,
        };
        assert_eq!(t.apply(2.0), 1.0 + 4.0 + 2.0);
        assert_eq!(piecewise_linear(5.0, &[(0.0, 0.0), (10.0, 20.0)]), 10.0);
        assert_eq!(piecewise_linear(-1.0, &[(0.0, 0.0), (10.0, 20.0)]), -2.0);
    }

    #[test]
    fn feature_names_and_aliases() {
        assert_eq!(
            Feature::from_name("integer_motion2"),
            Some(Feature::Motion2)
        );
        assert_eq!(
            Feature::from_name("VMAF_integer_feature_vif_scale2_score"),
            Some(Feature::VifScale(2))
        );
        assert_eq!(
            Feature::from_name("integer_adm_scale3"),
            Some(Feature::AdmScale(3))
        );
        assert_eq!(Feature::from_name("VMAF_feature_motion2_score"), None);
        assert_eq!(Feature::from_name("integer_vif_scale4"), None);
    }
}
