//! ADM's float steps (libvmaf v3.2.0 `integer_adm.c`): its options, the contrast
//! sensitivity factors of each scale under them, the kernels' per-scale parameters, and the
//! features (adm2, aim, adm3, the scales) from the kernels' integer sums.
//!
//! The factors are computed here on the host with the host's libm, in libvmaf's mix of
//! `float` and `double` steps; the kernels get them in fixed point.

use std::f64::consts::PI;

use gpumetrics_kernels::vmaf::adm::{self, ceil_log2, region};

use super::{Frame, Sums, adm_sizes};

/// libvmaf's contrast sensitivity functions (`adm_csf_mode`).
pub(crate) const CSF_WATSON97: i32 = 0;
pub(crate) const CSF_BARTEN: i32 = 1;
pub(crate) const CSF_BARTEN_WATSON_BLEND: i32 = 2;
pub(crate) const CSF_BARTEN_WATSON_BLEND_MAE: i32 = 3;

/// The luminance (cd/m²) libvmaf evaluates Barten's CSF at.
const CSF_LUMINANCE: f64 = 100.0;

/// libvmaf 3.2.0's integer ADM options, with its names (less the `adm_` prefix), types and
/// defaults (`Default`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct AdmOptions {
    /// `adm_enhn_gain_limit`, 1..=100 (default 100; the `neg` models use 1).
    pub enhn_gain_limit: f64,
    /// `adm_norm_view_dist`: viewing distance over display height, 0.75..=24 (default 3).
    pub norm_view_dist: f64,
    /// `adm_ref_display_height` in pixels, 1..=4320 (default 1080).
    pub ref_display_height: i32,
    /// `adm_csf_mode`: 0 Watson97 (default), 1 Barten, 2 Barten-Watson blend, 3 the
    /// blend's MAE-fitted tables (see the `CSF_*` constants).
    pub csf_mode: i32,
    /// `adm_csf_scale`: Barten's factor for h and v, 0..=50 (default 1).
    pub csf_scale: f64,
    /// `adm_csf_diag_scale`: Barten's factor for d, 0..=50 (default 1).
    pub csf_diag_scale: f64,
    /// `adm_noise_weight`: the noise floor's weight per pixel in the numerators and
    /// denominators, 0..=1500 (default 1/32).
    pub noise_weight: f64,
    /// `adm_dlm_weight`: adm3's weight of DLM (adm2) against 1 − AIM, 0..=1 (default 0.5).
    pub dlm_weight: f64,
    /// `adm_min_val`: adm3's lower clip, 0..=1 (default 0).
    pub min_val: f64,
    /// `adm_skip_aim`: leave AIM out (aim 0; default false).
    pub skip_aim: bool,
    /// `adm_skip_scale0`: leave scale 0 out (its num 0, den 1e-10; default false).
    pub skip_scale0: bool,
}

impl Default for AdmOptions {
    fn default() -> AdmOptions {
        AdmOptions {
            enhn_gain_limit: 100.0,
            norm_view_dist: 3.0,
            ref_display_height: 1080,
            csf_mode: CSF_WATSON97,
            csf_scale: 1.0,
            csf_diag_scale: 1.0,
            noise_weight: 0.03125,
            dlm_weight: 0.5,
            min_val: 0.0,
            skip_aim: false,
            skip_scale0: false,
        }
    }
}

impl AdmOptions {
    /// libvmaf's ranges of the options; also refuses the blended CSFs (modes 2 and 3) for a
    /// viewing distance and display height they have no table for (libvmaf would go on
    /// with a factor of −22, its `-EINVAL`).
    pub(crate) fn validate(&self) -> Result<(), String> {
        let range = |name: &str, v: f64, lo: f64, hi: f64| {
            if v.is_nan() || v < lo || v > hi {
                Err(format!("adm_{name} must be in [{lo}, {hi}], not {v}"))
            } else {
                Ok(())
            }
        };
        range("enhn_gain_limit", self.enhn_gain_limit, 1.0, 100.0)?;
        range("norm_view_dist", self.norm_view_dist, 0.75, 24.0)?;
        range(
            "ref_display_height",
            self.ref_display_height as f64,
            1.0,
            4320.0,
        )?;
        range("csf_mode", self.csf_mode as f64, 0.0, 3.0)?;
        range("csf_scale", self.csf_scale, 0.0, 50.0)?;
        range("csf_diag_scale", self.csf_diag_scale, 0.0, 50.0)?;
        range("noise_weight", self.noise_weight, 0.0, 1500.0)?;
        range("dlm_weight", self.dlm_weight, 0.0, 1.0)?;
        range("min_val", self.min_val, 0.0, 1.0)?;
        let blend = matches!(
            self.csf_mode,
            CSF_BARTEN_WATSON_BLEND | CSF_BARTEN_WATSON_BLEND_MAE
        );
        if blend
            && blend_table(self.csf_mode, self.norm_view_dist, self.ref_display_height).is_none()
        {
            return Err(format!(
                "adm_csf_mode {} has factors only for view distance/display height 3/1080, \
                 5/1080, 1.5/2160, 3/2160, 5/2160, 3/720, 5/720, 3/480, 5/480, not {}/{}",
                self.csf_mode, self.norm_view_dist, self.ref_display_height
            ));
        }
        Ok(())
    }

    /// Sets the option of libvmaf's name `name` (`adm_…`, as in a model's feature options)
    /// to `value` (booleans: 0 or 1; integers: integral values); not validated.
    pub(crate) fn set(&mut self, name: &str, value: f64) -> Result<(), String> {
        let int = || {
            if value.fract() == 0.0 && value.abs() <= i32::MAX as f64 {
                Ok(value as i32)
            } else {
                Err(format!("{name} must be an integer, not {value}"))
            }
        };
        let boolean = || match value {
            0.0 => Ok(false),
            1.0 => Ok(true),
            _ => Err(format!(
                "{name} must be 0 or 1 (false or true), not {value}"
            )),
        };
        match name {
            "adm_enhn_gain_limit" => self.enhn_gain_limit = value,
            "adm_norm_view_dist" => self.norm_view_dist = value,
            "adm_ref_display_height" => self.ref_display_height = int()?,
            "adm_csf_mode" => self.csf_mode = int()?,
            "adm_csf_scale" => self.csf_scale = value,
            "adm_csf_diag_scale" => self.csf_diag_scale = value,
            "adm_noise_weight" => self.noise_weight = value,
            "adm_dlm_weight" => self.dlm_weight = value,
            "adm_min_val" => self.min_val = value,
            "adm_skip_aim" => self.skip_aim = boolean()?,
            "adm_skip_scale0" => self.skip_scale0 = boolean()?,
            _ => return Err(format!("unknown ADM option {name}")),
        }
        Ok(())
    }

    /// Whether libvmaf uses its hard-coded scale-0 factors (Watson97 at a distance × height
    /// of 3 × 1080).
    fn default_scale0(&self) -> bool {
        self.csf_mode == CSF_WATSON97
            && (self.norm_view_dist * self.ref_display_height as f64 - 3.0 * 1080.0).abs() < 1e-8
    }
}

/// The display's resolution in pixels per degree, as libvmaf rounds it to `float`.
fn pixels_per_degree(dist: f64, height: i32) -> f32 {
    (dist * height as f64 * PI / 180.0) as f32
}

/// Watson et al. 1997's quantisation step of DWT level `lambda`, orientation `theta`
/// (libvmaf's `dwt_quant_step`, float with its double intermediates).
fn quant_step(lambda: usize, theta: usize, dist: f64, height: i32) -> f32 {
    const A: f32 = 0.495;
    const K: f32 = 0.466;
    const F0: f32 = 0.401;
    const G: [f32; 4] = [1.501, 1.0, 0.534, 1.0];
    const AMP: [[f32; 4]; 6] = [
        [0.62171, 0.67234, 0.72709, 0.67234],
        [0.34537, 0.41317, 0.49428, 0.41317],
        [0.18004, 0.22727, 0.28688, 0.22727],
        [0.091401, 0.11792, 0.15214, 0.11792],
        [0.045943, 0.059758, 0.077727, 0.059758],
        [0.023013, 0.030018, 0.039156, 0.030018],
    ];
    let r = pixels_per_degree(dist, height);
    let temp =
        (2.0f64.powf((lambda + 1) as f64) * F0 as f64 * G[theta] as f64 / r as f64).log10() as f32;
    (2.0 * A as f64 * 10.0f64.powf((K * temp * temp) as f64) / AMP[lambda][theta] as f64) as f32
}

/// Barten's CSF as HDR-VDP 2.2.1 simplifies it (libvmaf's `barten_csf`): the neural CSF with
/// parameters interpolated in log luminance between HDR-VDP's measured levels, times the
/// optical MTF and the rod/cone sensitivity, at the nominal frequency of DWT level
/// `lambda` (half the display's pixels per degree at level 0), times `scale`.
fn barten_csf(lambda: usize, dist: f64, height: i32, luminance: f64, scale: f64) -> f32 {
    const LEVELS: [f32; 6] = [0.002, 0.02, 0.2, 2.0, 20.0, 150.0];
    const PARAMS: [[f32; 5]; 6] = [
        [0.0160737, 0.991265, 3.74038, 0.50722, 4.46044],
        [0.383873, 0.800889, 3.54104, 0.682505, 4.94958],
        [0.929301, 0.476505, 4.37453, 0.750315, 5.28678],
        [1.29776, 0.405782, 4.40602, 0.935314, 5.61425],
        [1.49222, 0.334278, 3.79542, 1.07327, 6.4635],
        [1.46213, 0.394533, 2.7755, 1.16577, 7.45665],
    ];
    const SA: [f32; 4] = [30.162, 4.0627, 1.6596, 0.2712];
    // C's float table from double literals: rounded through f64.
    const MTF_A: [f32; 4] = [
        0.424838596301290f64 as f32,
        0.572435103936480f64 as f32,
        0.000167576239164937f64 as f32,
        0.00255872352306433f64 as f32,
    ];
    const MTF_B: [f32; 4] = [0.028, 0.37, 37.0, 360.0];

    let r = pixels_per_degree(dist, height);
    let freq = (r as f64 / 2.0f64.powf((lambda + 1) as f64)) as f32;
    let (lo, hi) = (LEVELS[0] as f64, LEVELS[5] as f64);
    let lum = if luminance > hi {
        hi
    } else if luminance < lo {
        lo
    } else {
        luminance
    };
    let (mut left, mut right) = (0, 0);
    for i in 0..5 {
        if lum >= LEVELS[i] as f64 && lum <= LEVELS[i + 1] as f64 {
            (left, right) = (i, i + 1);
            break;
        }
    }
    let left_pos = (LEVELS[left] as f64).log10() as f32;
    let right_pos = (LEVELS[right] as f64).log10() as f32;
    let pos = lum.log10() as f32;
    let p = |k: usize| {
        let (lv, rv) = (PARAMS[left][k], PARAMS[right][k]);
        lv + ((rv - lv) / (right_pos - left_pos)) * (pos - left_pos)
    };
    let (p0, p1, p2, p3) = (p(1), p(2), p(3), p(4));
    let a = (1.0f64 + ((p0 * freq) as f64).powf(p1 as f64)) as f32;
    let e = 1.0 - (-((freq / 7.0) as f64).powf(2.0)).exp();
    let b = (1.0f64 / e.powf(p2 as f64)) as f32;
    let neural = (p3 as f64 / ((a * b) as f64).powf(0.5)) as f32;

    let mut mtf = 0.0f32;
    for i in 0..4 {
        mtf = (mtf as f64 + MTF_A[i] as f64 * ((-MTF_B[i] * freq) as f64).exp()) as f32;
    }
    let l = luminance as f32;
    let rod_cone =
        (SA[0] as f64 * (((SA[1] / l) as f64).powf(SA[2] as f64) + 1.0).powf(-SA[3] as f64)) as f32;
    ((neural * mtf * rod_cone) as f64 * scale) as f32
}

/// libvmaf's Barten–Watson blend tables, [h/v, d][scale], by (distance, height).
type BlendTable = [[f32; 4]; 2];

const BLEND: [(f64, i32, BlendTable); 9] = [
    (
        3.0,
        1080,
        [
            [0.01183, 0.025026, 0.04295, 0.058621],
            [0.004302, 0.011778, 0.023918, 0.035901],
        ],
    ),
    (
        5.0,
        1080,
        [
            [0.004212, 0.014809, 0.029642, 0.047464],
            [0.000984, 0.005852, 0.0146, 0.027574],
        ],
    ),
    (
        1.5,
        2160,
        [
            [0.01183, 0.025026, 0.04295, 0.058621],
            [0.004302, 0.011778, 0.023918, 0.035901],
        ],
    ),
    (
        3.0,
        2160,
        [
            [0.00226, 0.01183, 0.025026, 0.04295],
            [0.000479, 0.004302, 0.011778, 0.023918],
        ],
    ),
    (
        5.0,
        2160,
        [
            [0.000092, 0.004212, 0.014809, 0.029642],
            [0.000050, 0.000984, 0.005852, 0.0146],
        ],
    ),
    (
        3.0,
        720,
        [
            [0.018715, 0.035637, 0.052798, 0.061509],
            [0.007999, 0.018396, 0.031851, 0.037718],
        ],
    ),
    (
        5.0,
        720,
        [
            [0.010144, 0.022561, 0.040309, 0.05672],
            [0.003463, 0.010282, 0.021839, 0.034641],
        ],
    ),
    (
        3.0,
        480,
        [
            [0.027961, 0.045875, 0.060275, 0.056234],
            [0.013572, 0.026277, 0.036959, 0.034511],
        ],
    ),
    (
        5.0,
        480,
        [
            [0.016781, 0.032822, 0.05032, 0.061594],
            [0.00691, 0.016545, 0.029917, 0.037777],
        ],
    ),
];

const BLEND_MAE: [(f64, i32, BlendTable); 9] = [
    (
        3.0,
        1080,
        [
            [0.011249, 0.022606, 0.035930, 0.045673],
            [0.004097, 0.010921, 0.021430, 0.031313],
        ],
    ),
    (
        5.0,
        1080,
        [
            [0.004052, 0.013939, 0.026298, 0.038833],
            [0.000927, 0.005544, 0.013415, 0.024515],
        ],
    ),
    (
        1.5,
        2160,
        [
            [0.011249, 0.022606, 0.035930, 0.045673],
            [0.004097, 0.010921, 0.021430, 0.031313],
        ],
    ),
    (
        3.0,
        2160,
        [
            [0.002166, 0.011249, 0.022606, 0.035930],
            [0.000447, 0.004097, 0.010921, 0.021430],
        ],
    ),
    (
        5.0,
        2160,
        [
            [0.000077, 0.004052, 0.013939, 0.026298],
            [0.000045, 0.000927, 0.005544, 0.013415],
        ],
    ),
    (
        3.0,
        720,
        [
            [0.017329, 0.030870, 0.042134, 0.047410],
            [0.007509, 0.016707, 0.028072, 0.032722],
        ],
    ),
    (
        5.0,
        720,
        [
            [0.009689, 0.020577, 0.034162, 0.044523],
            [0.003302, 0.009579, 0.019661, 0.030318],
        ],
    ),
    (
        3.0,
        480,
        [
            [0.024969, 0.037825, 0.046676, 0.043974],
            [0.012511, 0.023424, 0.032139, 0.030166],
        ],
    ),
    (
        5.0,
        480,
        [
            [0.015665, 0.028766, 0.040612, 0.047483],
            [0.006514, 0.015107, 0.026476, 0.032776],
        ],
    ),
];

/// The blend table of a blended CSF mode for an exact distance and height.
fn blend_table(mode: i32, dist: f64, height: i32) -> Option<&'static BlendTable> {
    let tables = if mode == CSF_BARTEN_WATSON_BLEND_MAE {
        &BLEND_MAE
    } else {
        &BLEND
    };
    tables
        .iter()
        .find(|(d, h, _)| *d == dist && *h == height)
        .map(|(_, _, t)| t)
}

/// The contrast sensitivity factors of h, v, d at an ADM scale (libvmaf's `rfactor1`).
fn rfactor(o: &AdmOptions, scale: usize) -> [f32; 3] {
    let (dist, height) = (o.norm_view_dist, o.ref_display_height);
    let (f1, f2) = match o.csf_mode {
        CSF_BARTEN => (
            barten_csf(scale, dist, height, CSF_LUMINANCE, o.csf_scale),
            barten_csf(scale, dist, height, CSF_LUMINANCE, o.csf_diag_scale),
        ),
        CSF_BARTEN_WATSON_BLEND | CSF_BARTEN_WATSON_BLEND_MAE => {
            match blend_table(o.csf_mode, dist, height) {
                Some(t) => (t[0][scale], t[1][scale]),
                None => (-22.0, -22.0),
            }
        }
        _ => (
            1.0 / quant_step(scale, 1, dist, height),
            1.0 / quant_step(scale, 2, dist, height),
        ),
    };
    [f1, f1, f2]
}

/// The fixed-point factors the kernels multiply by (libvmaf's `i_rfactor`): scale 0 in
/// Q21, Q21, Q23 as `uint16_t` (its hard-coded constants for the default Watson97 view),
/// scales 1–3 in Q32 as `uint32_t`, converted as x86-64 C converts (through a wider signed
/// integer, keeping the low bits when the factor is too large).
pub(crate) fn fixed_rfactor(o: &AdmOptions, scale: usize) -> [u32; 3] {
    let rf = rfactor(o, scale);
    if scale == 0 {
        if o.default_scale0() {
            [36453, 36453, 49417]
        } else {
            let q = |r: f32, bits: i32| (r as f64 * 2f64.powi(bits)) as i64 as u16 as u32;
            [q(rf[0], 21), q(rf[1], 21), q(rf[2], 23)]
        }
    } else {
        rf.map(|r| (r as f64 * 4294967296.0) as i64 as u32)
    }
}

/// The kernels' parameters of ADM scale `scale` under the options, with `bands`/`maps` to
/// be filled in.
pub(crate) fn adm_scale(o: &AdmOptions, scale: usize) -> adm::Scale {
    adm::Scale {
        gain_limit: o.enhn_gain_limit,
        rfactor: fixed_rfactor(o, scale),
        scale: scale as u32,
        aim: u32::from(!o.skip_aim),
        ..Default::default()
    }
}

/// One scale's terms: the DLM numerator, the denominator, the AIM numerator.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct ScaleTerms {
    num: f32,
    den: f32,
    aim: f32,
}

/// libvmaf's ADM num, den and AIM num of one scale (band size w×h) from its sums
/// (`s`: DLM numerator h, v, d and denominator h, v, d; `aim`: AIM numerator h, v, d).
fn scale_terms(
    o: &AdmOptions,
    scale: usize,
    w: u32,
    h: u32,
    s: &[i64; 6],
    aim: &[i64; 3],
) -> ScaleTerms {
    let (left, top, right, bottom) = region(w, h);
    let noise =
        |weight: f64| ((((bottom - top) * (right - left)) as f64 * weight) as f32).powf(1.0 / 3.0);
    let add = noise(o.noise_weight);
    let aim_add = noise(0.0);
    let rf = rfactor(o, scale);
    let (num_sh, den_sh) = adm::row_shifts(&adm::Scale {
        bands: gpumetrics_kernels::vmaf::Plane {
            width: w,
            height: h,
            ..Default::default()
        },
        scale: scale as u32,
        ..Default::default()
    });
    let cube_root = |v: f32| v.powf(1.0 / 3.0);
    let numerator = |f: &dyn Fn(usize) -> f32, add: f32| {
        (cube_root(f(0)) + add) + (cube_root(f(1)) + add) + (cube_root(f(2)) + add)
    };
    let shift_csf;
    let mut t = ScaleTerms::default();
    if scale == 0 {
        let cub = ceil_log2(w).wrapping_sub(4);
        let conv = |v: i64, k: usize| {
            let bits = if k == 2 {
                57u32.wrapping_sub(cub + 1)
            } else {
                52u32.wrapping_sub(cub)
            };
            (v as f64 / 2f64.powf(bits.wrapping_sub(num_sh) as f64)) as f32
        };
        t.num = numerator(&|k| conv(s[k], k), add);
        t.aim = numerator(&|k| conv(aim[k], k), aim_add);
        shift_csf = 2f64.powf(18u32.wrapping_sub(den_sh) as f64);
    } else {
        let cub = ceil_log2(w);
        const FINAL: [u32; 3] = [45, 39, 36];
        let shift =
            2f64.powf(FINAL[scale - 1].wrapping_sub(cub).wrapping_sub(num_sh) as f64) as f32;
        t.num = numerator(&|k| s[k] as f32 / shift, add);
        t.aim = numerator(&|k| aim[k] as f32 / shift, aim_add);
        const CONVERT: [u32; 3] = [32, 27, 23];
        let den_cub = ceil_log2(right - left);
        shift_csf = 2f64.powf(
            CONVERT[scale - 1]
                .wrapping_sub(den_sh)
                .wrapping_sub(den_cub) as f64,
        );
    }
    let csf = |k: usize| ((s[3 + k] as u64 as f64 / shift_csf) * (rf[k] as f64).powf(3.0)) as f32;
    t.den = numerator(&csf, add);
    t
}

/// ADM's features of a w×h frame from its sums: `adm2`, `aim`, `adm3` and `adm_scale`.
pub(crate) fn features(o: &AdmOptions, w: u32, h: u32, sums: &Sums, f: &mut Frame) {
    let (mut num, mut den, mut aim) = (0.0f64, 0.0f64, 0.0f64);
    for (k, &(bw, bh)) in adm_sizes(w, h).iter().enumerate() {
        let t = if k == 0 && o.skip_scale0 {
            ScaleTerms {
                num: 0.0,
                den: 1e-10,
                aim: 0.0,
            }
        } else {
            scale_terms(o, k, bw, bh, &sums.adm[k], &sums.adm_aim[k])
        };
        num += t.num as f64;
        den += t.den as f64;
        aim += t.aim as f64;
        f.adm_scale[k] = t.num as f64 / t.den as f64;
    }
    let limit = 1e-10 * (w * h) as f64 / (1920.0 * 1080.0);
    let num = if num < limit { 0.0 } else { num };
    let den = if den < limit { 0.0 } else { den };
    // libvmaf leaves aim unset when den is 0 (a flat reference without noise floor): 0 here.
    (f.adm2, f.aim) = if den == 0.0 {
        (1.0, 0.0)
    } else {
        (num / den, aim / den)
    };
    let adm3 = f.adm2 * o.dlm_weight + (1.0 - f.aim) * (1.0 - o.dlm_weight);
    f.adm3 = if adm3 > o.min_val { adm3 } else { o.min_val };
}

/// ADM's features of one pair, from [`luma_features`].
#[doc(hidden)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LumaFeatures {
    /// `VMAF_integer_feature_adm2_score`, `…_aim_score`, `…_adm3_score`.
    pub adm2: f64,
    pub aim: f64,
    pub adm3: f64,
    /// `integer_adm_scale0..3`.
    pub scale: [f64; 4],
}

/// A test hook: libvmaf 3.2.0's integer ADM features of one pair of `bpc`-bit lumas (w×h
/// samples each, rows packed) under libvmaf-named options (`("adm_csf_mode", 2.0)`, …),
/// on the CPU backend's kernel functions (the GPU backend runs the same ones). One call
/// allocates its buffers; the engine's VMAF allocates them once per plan.
#[doc(hidden)]
pub fn luma_features(
    options: &[(&str, f64)],
    width: u32,
    height: u32,
    bpc: u32,
    reference: &[u16],
    distorted: &[u16],
) -> Result<LumaFeatures, String> {
    let mut o = AdmOptions::default();
    for &(name, value) in options {
        o.set(name, value)?;
    }
    o.validate()?;
    let min = gpumetrics_kernels::vmaf::MIN_SIDE_EXCLUSIVE;
    if width <= min || height <= min || width > 1 << 15 || height > 1 << 15 {
        return Err(format!(
            "ADM needs sides in ({min}, 32768], not {width}x{height}"
        ));
    }
    if !(8..=16).contains(&bpc) {
        return Err(format!("ADM needs 8 to 16 bits per sample, not {bpc}"));
    }
    let n = width as usize * height as usize;
    if reference.len() != n || distorted.len() != n {
        return Err(format!(
            "{width}x{height} lumas need {n} samples each, not {} and {}",
            reference.len(),
            distorted.len()
        ));
    }
    if reference
        .iter()
        .chain(distorted)
        .any(|&v| (v as u32) >> bpc != 0)
    {
        return Err(format!("samples must fit in {bpc} bits"));
    }
    let adm = super::cpu::Adm::new(width, height, o);
    let luma = [reference.to_vec(), distorted.to_vec()];
    let mut sums = Sums::default();
    adm.sums(&luma, width, height, bpc, &mut sums);
    let mut f = Frame::default();
    features(&o, width, height, &sums, &mut f);
    Ok(LumaFeatures {
        adm2: f.adm2,
        aim: f.aim,
        adm3: f.adm3,
        scale: f.adm_scale,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    type Factors = (i32, f64, i32, f64, f64, [[f32; 2]; 4]);

    /// libvmaf 3.2.0's factor1/factor2 (h and v, d) per scale, for (csf mode, view distance,
    /// display height, csf scale, csf diag scale), printed to 9 significant digits (exact
    /// for `f32`) by tests/tools/adm_csf_factors.c built against the libvmaf source.
    #[rustfmt::skip]
    #[allow(clippy::excessive_precision)]
    const LIBVMAF_FACTORS: [Factors; 20] = [
        (0, 3.0, 1080, 1.0, 1.0, [[0.0173815377, 0.005890687], [0.0319848284, 0.0142990677], [0.0433726609, 0.0243969075], [0.0456734113, 0.0313127376]]),
        (0, 5.0, 1080, 1.0, 1.0, [[0.00683917431, 0.00203585601], [0.0145245008, 0.00570335798], [0.0227308422, 0.0112305162], [0.027625151, 0.0166351926]]),
        (0, 1.5, 2160, 1.0, 1.0, [[0.0173815377, 0.005890687], [0.0319848284, 0.0142990677], [0.0433726609, 0.0243969075], [0.0456734113, 0.0313127376]]),
        (0, 3.0, 2160, 1.0, 1.0, [[0.00477876095, 0.00135816401], [0.0106813973, 0.00400452316], [0.0175937079, 0.00829917472], [0.0225040857, 0.0129383225]]),
        (1, 3.0, 1080, 1.0, 1.0, [[1.21049654, 1.21049654], [5.0422225, 5.0422225], [14.6270647, 14.6270647], [26.9758816, 26.9758816]]),
        (1, 3.0, 1080, 0.5, 2.0, [[0.605248272, 2.42099309], [2.52111125, 10.084445], [7.31353235, 29.2541294], [13.4879408, 53.9517632]]),
        (1, 5.0, 1080, 1.0, 1.0, [[0.33359158, 0.33359158], [1.81255984, 1.81255984], [6.96737146, 6.96737146], [17.9846687, 17.9846687]]),
        (1, 5.0, 1080, 0.5, 2.0, [[0.16679579, 0.667183161], [0.906279922, 3.62511969], [3.48368573, 13.9347429], [8.99233437, 35.9693375]]),
        (1, 1.5, 2160, 1.0, 1.0, [[1.21049654, 1.21049654], [5.0422225, 5.0422225], [14.6270647, 14.6270647], [26.9758816, 26.9758816]]),
        (1, 1.5, 2160, 0.5, 2.0, [[0.605248272, 2.42099309], [2.52111125, 10.084445], [7.31353235, 29.2541294], [13.4879408, 53.9517632]]),
        (1, 3.0, 2160, 1.0, 1.0, [[0.195260555, 0.195260555], [1.21049654, 1.21049654], [5.0422225, 5.0422225], [14.6270647, 14.6270647]]),
        (1, 3.0, 2160, 0.5, 2.0, [[0.0976302773, 0.390521109], [0.605248272, 2.42099309], [2.52111125, 10.084445], [7.31353235, 29.2541294]]),
        (2, 3.0, 1080, 1.0, 1.0, [[0.0118300002, 0.00430200016], [0.0250259992, 0.0117779998], [0.0429500006, 0.0239179991], [0.0586210005, 0.0359009989]]),
        (2, 5.0, 1080, 1.0, 1.0, [[0.00421199994, 0.000984000042], [0.0148090003, 0.00585199986], [0.0296420008, 0.0146000003], [0.0474639982, 0.0275740009]]),
        (2, 1.5, 2160, 1.0, 1.0, [[0.0118300002, 0.00430200016], [0.0250259992, 0.0117779998], [0.0429500006, 0.0239179991], [0.0586210005, 0.0359009989]]),
        (2, 3.0, 2160, 1.0, 1.0, [[0.00225999998, 0.000479000009], [0.0118300002, 0.00430200016], [0.0250259992, 0.0117779998], [0.0429500006, 0.0239179991]]),
        (3, 3.0, 1080, 1.0, 1.0, [[0.0112490002, 0.00409700023], [0.0226060003, 0.0109209996], [0.0359300002, 0.0214300007], [0.0456730016, 0.0313129984]]),
        (3, 5.0, 1080, 1.0, 1.0, [[0.00405200012, 0.000927000016], [0.0139389997, 0.00554399984], [0.0262979995, 0.0134150004], [0.0388329998, 0.0245149992]]),
        (3, 1.5, 2160, 1.0, 1.0, [[0.0112490002, 0.00409700023], [0.0226060003, 0.0109209996], [0.0359300002, 0.0214300007], [0.0456730016, 0.0313129984]]),
        (3, 3.0, 2160, 1.0, 1.0, [[0.00216599996, 0.000446999999], [0.0112490002, 0.00409700023], [0.0226060003, 0.0109209996], [0.0359300002, 0.0214300007]]),
    ];

    #[test]
    fn csf_factors_equal_libvmaf_for_every_mode() {
        for &(mode, dist, height, scf, scfd, expected) in &LIBVMAF_FACTORS {
            let o = AdmOptions {
                csf_mode: mode,
                norm_view_dist: dist,
                ref_display_height: height,
                csf_scale: scf,
                csf_diag_scale: scfd,
                ..AdmOptions::default()
            };
            assert_eq!(o.validate(), Ok(()));
            for (scale, &[f1, f2]) in expected.iter().enumerate() {
                let got = rfactor(&o, scale);
                assert_eq!(
                    got,
                    [f1, f1, f2],
                    "mode {mode} {dist}/{height} scale {scale}"
                );
            }
        }
    }

    #[test]
    fn fixed_factors_are_the_float_factors_in_fixed_point() {
        // Scale 0 at the default view: libvmaf's hard-coded constants, which its float
        // formula misses by a few units in Q21/Q23 (36451 and 49415); also at 1.5/2160
        // (the same distance × height), but not for other CSFs.
        let o = AdmOptions::default();
        let rf = rfactor(&o, 0);
        assert_eq!(fixed_rfactor(&o, 0), [36453, 36453, 49417]);
        assert!(((rf[0] as f64 * 2f64.powi(21)) as i64 - 36453).abs() <= 4);
        assert!(((rf[2] as f64 * 2f64.powi(23)) as i64 - 49417).abs() <= 4);
        let near = AdmOptions {
            norm_view_dist: 1.5,
            ref_display_height: 2160,
            ..o
        };
        assert_eq!(fixed_rfactor(&near, 0), [36453, 36453, 49417]);
        let blend = AdmOptions {
            csf_mode: CSF_BARTEN_WATSON_BLEND,
            ..o
        };
        // 0.01183 · 2^21 and 0.004302 · 2^23, truncated.
        assert_eq!(fixed_rfactor(&blend, 0), [24809, 24809, 36087]);
        let far = AdmOptions {
            norm_view_dist: 5.0,
            ..o
        };
        let rf = rfactor(&far, 0);
        assert_eq!(
            fixed_rfactor(&far, 0),
            [
                (rf[0] as f64 * 2097152.0) as u32,
                (rf[1] as f64 * 2097152.0) as u32,
                (rf[2] as f64 * 8388608.0) as u32
            ]
        );
        // Scales 1-3: Q32 of the float factors (the reference tests check the features).
        for s in 1..4 {
            let q = fixed_rfactor(&o, s);
            assert_eq!(q[0], q[1]);
            assert_eq!(q[0], (rfactor(&o, s)[0] as f64 * 4294967296.0) as u32);
        }
        // Barten's factors above 1 wrap in Q32 as libvmaf's conversion does on x86-64.
        let barten = AdmOptions {
            csf_mode: CSF_BARTEN,
            ..o
        };
        let r1 = rfactor(&barten, 1)[0] as f64 * 4294967296.0;
        assert_eq!(fixed_rfactor(&barten, 1)[0], (r1 as u64 % (1 << 32)) as u32);
    }

    #[test]
    fn options_are_validated_as_libvmaf_ranges() {
        let o = AdmOptions::default();
        assert_eq!(o.validate(), Ok(()));
        let bad = [
            AdmOptions {
                enhn_gain_limit: 0.5,
                ..o
            },
            AdmOptions {
                norm_view_dist: 30.0,
                ..o
            },
            AdmOptions {
                ref_display_height: 0,
                ..o
            },
            AdmOptions { csf_mode: 4, ..o },
            AdmOptions {
                csf_scale: -1.0,
                ..o
            },
            AdmOptions {
                csf_diag_scale: 51.0,
                ..o
            },
            AdmOptions {
                noise_weight: f64::NAN,
                ..o
            },
            AdmOptions {
                dlm_weight: 1.5,
                ..o
            },
            AdmOptions { min_val: -0.1, ..o },
            AdmOptions {
                csf_mode: CSF_BARTEN_WATSON_BLEND,
                norm_view_dist: 4.0,
                ..o
            },
        ];
        for b in bad {
            assert!(b.validate().is_err(), "{b:?}");
        }
        let v1 = AdmOptions {
            csf_mode: CSF_BARTEN_WATSON_BLEND_MAE,
            norm_view_dist: 5.0,
            ref_display_height: 2160,
            ..o
        };
        assert_eq!(v1.validate(), Ok(()));
    }

    #[test]
    fn adm3_is_the_clipped_blend_of_adm2_and_one_minus_aim() {
        let o = AdmOptions {
            dlm_weight: 0.7,
            min_val: 0.5,
            ..AdmOptions::default()
        };
        let (w, h) = (64, 64);
        let mut sums = Sums::default();
        for k in 0..4 {
            sums.adm[k] = [1 << 20, 1 << 20, 1 << 20, 1 << 30, 1 << 30, 1 << 30];
            sums.adm_aim[k] = [1 << 10; 3];
        }
        let mut f = Frame::default();
        features(&o, w, h, &sums, &mut f);
        assert!(f.aim > 0.0 && f.adm2 > 0.0);
        let blend = f.adm2 * 0.7 + (1.0 - f.aim) * 0.3;
        assert_eq!(f.adm3, blend.max(0.5));
        // Skipping AIM leaves aim 0; skipping scale 0 makes its feature 0.
        sums.adm_aim = [[0; 3]; 4];
        let skip = AdmOptions {
            skip_scale0: true,
            ..o
        };
        features(&skip, w, h, &sums, &mut f);
        assert_eq!((f.aim, f.adm_scale[0]), (0.0, 0.0));
        assert_eq!(f.adm3, (f.adm2 * 0.7 + 0.3).max(0.5));
    }

    #[test]
    fn cos_1deg_matches_libvmaf() {
        let c = ((1.0f64 * std::f64::consts::PI / 180.0).cos()
            * (1.0f64 * std::f64::consts::PI / 180.0).cos()) as f32;
        assert_eq!(c, gpumetrics_kernels::vmaf::adm::COS_1DEG_SQ);
    }
}
