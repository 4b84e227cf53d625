//! CAMBI: Netflix's contrast-aware multiscale banding index of one frame's luma, equal to
//! libvmaf 3.2.0's `--feature cambi` (kernel side: `gpumetrics_kernels::cambi`, which
//! lists the steps). A no-reference metric ([`Reference::None`]): `cambi` on the
//! distorted frame, `ref-cambi` on the reference frame. 0 is no banding; larger is more
//! visible banding (libvmaf caps it at `cambi-max-val`).
//!
//! The feature's options are the metric's, with libvmaf's defaults and ranges
//! (`cambi-enc-width`, `cambi-enc-height`, `cambi-enc-bitdepth`: 0 = the input's own, as
//! libvmaf's 0; `cambi-window-size`, `cambi-topk`, `cambi-tvi-threshold`,
//! `cambi-vis-lum-threshold`, `cambi-max-log-contrast`, `cambi-eotf`, `cambi-max-val`,
//! `cambi-high-res-speedup`). Its full-reference mode and heat maps are not offered.
//!
//! For the VMAF models that read CAMBI as a feature, `CambiSettings` holds every option
//! and `cpu::CambiCpu` scores one frame with them (see its documentation).

pub(crate) mod cpu;
pub(crate) mod cuda;

use super::no_reference::NoReference;
use super::{Choice, Entry, Field, Info, OptionKind, OptionSpec, Options, Reference};
use crate::error::EngineError;
use crate::format::{ColorFamily, FrameLayout};
use crate::metric_set::MetricSet;
use gpumetrics_kernels::cambi::{self as k, Contrast, MAX_DIFFS, MIN_SIDE, RECIP_LEN, SCALES};

pub(crate) use cpu::CambiCpu;
pub(crate) use cuda::CambiCuda;

/// Its bit of the `metrics` flags (never changed once released).
pub const FLAG: MetricSet = MetricSet::bit(11);

/// The field's names, as `[distorted, reference]`.
const CAMBI: [&str; 2] = ["cambi", "ref-cambi"];

const fn float(
    name: &'static str,
    nick: &'static str,
    doc: &'static str,
    min: f64,
    max: f64,
    default: f64,
) -> OptionSpec {
    OptionSpec {
        name,
        nick,
        doc,
        kind: OptionKind::Float { min, max, default },
    }
}

pub(crate) const ENC_WIDTH: OptionSpec = float(
    "cambi-enc-width",
    "CAMBI encoding width",
    "CAMBI: the width the video was encoded at (0: the input's; else 180 to 7680, a whole \
     number). The luma is decimated to the encoding size first; a size larger than the \
     input's is the input's. Set with cambi-enc-height.",
    0.0,
    7680.0,
    0.0,
);
pub(crate) const ENC_HEIGHT: OptionSpec = float(
    "cambi-enc-height",
    "CAMBI encoding height",
    "CAMBI: the height the video was encoded at (0: the input's; else 150 to 7680, a whole \
     number)",
    0.0,
    7680.0,
    0.0,
);
pub(crate) const ENC_BITDEPTH: OptionSpec = float(
    "cambi-enc-bitdepth",
    "CAMBI encoding bit depth",
    "CAMBI: the bit depth the video was encoded at (0: the input's; else 6 to 16). Below \
     10, the luma is anti-dithered (2x2 means) first.",
    0.0,
    16.0,
    0.0,
);
const WINDOW_SIZE: OptionSpec = float(
    "cambi-window-size",
    "CAMBI window size",
    "CAMBI: the window of the banding statistics at 4K (15 to 127, a whole number; scaled \
     to the encoding size, made odd)",
    15.0,
    127.0,
    65.0,
);
const TOPK: OptionSpec = float(
    "cambi-topk",
    "CAMBI top-k",
    "CAMBI: the fraction of the largest per-pixel values averaged into each scale's score",
    0.0001,
    1.0,
    0.6,
);
const TVI_THRESHOLD: OptionSpec = float(
    "cambi-tvi-threshold",
    "CAMBI visibility threshold",
    "CAMBI: a luma step is visible when it changes the luminance by more than this fraction \
     of it (threshold versus intensity)",
    0.0001,
    1.0,
    0.019,
);
const VIS_LUM_THRESHOLD: OptionSpec = float(
    "cambi-vis-lum-threshold",
    "CAMBI visible luminance",
    "CAMBI: luminance (cd/m²) below which banding is taken as invisible",
    0.0,
    300.0,
    0.0,
);
const MAX_LOG_CONTRAST: OptionSpec = float(
    "cambi-max-log-contrast",
    "CAMBI largest log contrast",
    "CAMBI: the largest luma step looked at is 2^this 10-bit codes (0 to 5, a whole number)",
    0.0,
    5.0,
    2.0,
);
const MAX_VAL: OptionSpec = float(
    "cambi-max-val",
    "CAMBI largest value",
    "CAMBI: larger values are clipped to this",
    0.0,
    1000.0,
    1000.0,
);
const HIGH_RES_SPEEDUP: OptionSpec = float(
    "cambi-high-res-speedup",
    "CAMBI high-resolution speed-up",
    "CAMBI: 1080, 1440 or 2160: at encoding sizes of at least that many pixels (1920x1080, \
     2560x1440, 3840x2160), halve the luma after the mask (faster, less exact); 0 or any \
     other value: never",
    0.0,
    2160.0,
    0.0,
);
const EOTF: OptionSpec = OptionSpec {
    name: "cambi-eotf",
    nick: "CAMBI EOTF",
    doc: "CAMBI: the transfer function of the visibility thresholds",
    kind: OptionKind::Choice {
        type_name: "GstGpuMetricsCambiEotf",
        values: &[
            Choice {
                nick: "bt1886",
                description: "BT.1886 (SDR, 300 cd/m² peak)",
            },
            Choice {
                nick: "pq",
                description: "PQ (SMPTE ST 2084, HDR)",
            },
        ],
        default: 0,
    },
};

/// The transfer function of CAMBI's visibility thresholds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Eotf {
    Bt1886,
    Pq,
}

impl Eotf {
    /// Luminance (cd/m²) of a normalised signal `v` (0..1).
    fn luminance(self, v: f64) -> f64 {
        match self {
            Eotf::Bt1886 => {
                let (gamma, white, black) = (2.4f64, 300.0f64, 0.01f64);
                let span = white.powf(1.0 / gamma) - black.powf(1.0 / gamma);
                let a = span.powf(gamma);
                let b = black.powf(1.0 / gamma) / span;
                a * (v + b).max(0.0).powf(gamma)
            }
            Eotf::Pq => {
                let m1 = 0.1593017578125f64;
                let m2 = 78.84375f64;
                let (c1, c2, c3) = (0.8359375f64, 18.8515625f64, 18.6875f64);
                let e = v.powf(1.0 / m2);
                let num = (e - c1).max(0.0);
                10000.0 * (num / (c2 - c3 * e)).powf(1.0 / m1)
            }
        }
    }

    /// Luminance of 10-bit limited-range code `sample` (clipped to 64..940).
    fn code(self, sample: i32) -> f64 {
        let (foot, head) = (64, 940);
        let s = sample.clamp(foot, head);
        self.luminance((s - foot) as f64 / (head - foot) as f64)
    }
}

/// Every option of libvmaf's CAMBI feature that changes its score (its defaults are
/// [`Default`]'s). What the VMAF models pass as their CAMBI feature options, and what the
/// standalone metric reads from its element properties.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct CambiSettings {
    /// `window_size`, 15..=127 (65).
    pub window_size: u32,
    /// `topk` / `cambi_topk`, 0.0001..=1 (0.6).
    pub topk: f64,
    /// `tvi_threshold`, 0.0001..=1 (0.019).
    pub tvi_threshold: f64,
    /// `cambi_vis_lum_threshold`, 0..=300 cd/m² (0).
    pub vis_lum_threshold: f64,
    /// `max_log_contrast`, 0..=5 (2).
    pub max_log_contrast: u32,
    /// `eotf` / `cambi_eotf` (BT.1886).
    pub eotf: Eotf,
    /// `enc_width`, `enc_height`: 0 (either) = the input's size.
    pub enc_width: u32,
    pub enc_height: u32,
    /// `enc_bitdepth`: 0 = the input's depth.
    pub enc_bitdepth: u32,
    /// `cambi_high_res_speedup`: 1080, 1440, 2160, else off (0).
    pub high_res_speedup: u32,
    /// `cambi_max_val`, 0..=1000 (1000).
    pub max_val: f64,
}

impl Default for CambiSettings {
    fn default() -> Self {
        CambiSettings {
            window_size: 65,
            topk: 0.6,
            tvi_threshold: 0.019,
            vis_lum_threshold: 0.0,
            max_log_contrast: 2,
            eotf: Eotf::Bt1886,
            enc_width: 0,
            enc_height: 0,
            enc_bitdepth: 0,
            high_res_speedup: 0,
            max_val: 1000.0,
        }
    }
}

impl CambiSettings {
    /// The options libvmaf's VMAF v1 models give their CAMBI feature
    /// (`cambi_high_res_speedup=1080`, `cambi_vis_lum_threshold=0.06`,
    /// `cambi_max_val=17.0`); the encoding size and depth stay the input's unless set.
    #[cfg(test)]
    pub(crate) fn vmaf_v1() -> Self {
        CambiSettings {
            high_res_speedup: 1080,
            vis_lum_threshold: 0.06,
            max_val: 17.0,
            ..Default::default()
        }
    }

    /// Sets one option from a VMAF model's CAMBI feature options (libvmaf's names and
    /// aliases); the ranges are checked by [`CambiSettings::validate`].
    pub(crate) fn set(&mut self, key: &str, value: &serde_json::Value) -> Result<(), String> {
        let number = || {
            value
                .as_f64()
                .ok_or_else(|| format!("{key} is not a number"))
        };
        let whole = || {
            let v = number()?;
            if v.fract() == 0.0 && (0.0..=u32::MAX as f64).contains(&v) {
                Ok(v as u32)
            } else {
                Err(format!("{key} = {v} is not a whole number"))
            }
        };
        match key {
            "window_size" => self.window_size = whole()?,
            "topk" | "cambi_topk" => self.topk = number()?,
            "tvi_threshold" => self.tvi_threshold = number()?,
            "cambi_vis_lum_threshold" => self.vis_lum_threshold = number()?,
            "max_log_contrast" => self.max_log_contrast = whole()?,
            "eotf" | "cambi_eotf" => {
                self.eotf = match value.as_str() {
                    Some("bt1886") => Eotf::Bt1886,
                    Some("pq") => Eotf::Pq,
                    _ => return Err(format!("{key} {value} is not bt1886 or pq")),
                }
            }
            "enc_width" => self.enc_width = whole()?,
            "enc_height" => self.enc_height = whole()?,
            "enc_bitdepth" => self.enc_bitdepth = whole()?,
            "cambi_high_res_speedup" => self.high_res_speedup = whole()?,
            "cambi_max_val" => self.max_val = number()?,
            _ => return Err(format!("feature option {key} of cambi is not supported")),
        }
        Ok(())
    }

    /// Checks the values against libvmaf's ranges (as [`CambiSettings::set`] leaves them).
    pub(crate) fn validate(&self) -> Result<(), String> {
        self.check()
    }

    /// Checks the values against libvmaf's ranges (the element's properties check the
    /// ranges already; a caller building settings in code is checked here).
    fn check(&self) -> Result<(), String> {
        let bad = |what: &str| Err(format!("cambi: {what}"));
        if !(15..=127).contains(&self.window_size) {
            return bad("window size outside 15 to 127");
        }
        if !(0.0001..=1.0).contains(&self.topk) || !(0.0001..=1.0).contains(&self.tvi_threshold) {
            return bad("topk and tvi threshold must be within 0.0001 to 1");
        }
        if !(0.0..=300.0).contains(&self.vis_lum_threshold)
            || !(0.0..=1000.0).contains(&self.max_val)
        {
            return bad("visible luminance outside 0 to 300 or largest value outside 0 to 1000");
        }
        if self.max_log_contrast > 5 {
            return bad("max log contrast above 5");
        }
        if self.enc_width != 0 && !(180..=7680).contains(&self.enc_width) {
            return bad("encoding width must be 0 or 180 to 7680");
        }
        if self.enc_height != 0 && !(150..=7680).contains(&self.enc_height) {
            return bad("encoding height must be 0 or 150 to 7680");
        }
        if self.enc_bitdepth != 0 && !(6..=16).contains(&self.enc_bitdepth) {
            return bad("encoding bit depth must be 0 or 6 to 16");
        }
        Ok(())
    }
}

/// `cambi-enc-width`, `cambi-enc-height` and `cambi-enc-bitdepth` (0: the input's), which
/// VMAF's v1 models read too (one set of properties for both).
pub(crate) fn encode_side(o: &Options) -> Result<(u32, u32, u32), EngineError> {
    Ok((
        whole(
            o,
            &ENC_WIDTH,
            |v| v == 0 || v >= 180,
            "0 or a whole number from 180",
        )?,
        whole(
            o,
            &ENC_HEIGHT,
            |v| v == 0 || v >= 150,
            "0 or a whole number from 150",
        )?,
        whole(
            o,
            &ENC_BITDEPTH,
            |v| v == 0 || v >= 6,
            "0 or a whole number from 6",
        )?,
    ))
}

/// A number option that libvmaf declares as an integer, with its own extra limit.
fn whole(
    o: &Options,
    spec: &'static OptionSpec,
    also: impl Fn(u32) -> bool,
    what: &str,
) -> Result<u32, EngineError> {
    let v = o.float(spec);
    if v.fract() != 0.0 || !also(v as u32) {
        return Err(EngineError::InvalidOption {
            option: spec.name,
            why: format!("{v} is not {what}"),
        });
    }
    Ok(v as u32)
}

fn configure(o: &Options) -> Result<super::Settings, EngineError> {
    let any = |_| true;
    let s = CambiSettings {
        window_size: whole(o, &WINDOW_SIZE, any, "a whole number")?,
        topk: o.float(&TOPK),
        tvi_threshold: o.float(&TVI_THRESHOLD),
        vis_lum_threshold: o.float(&VIS_LUM_THRESHOLD),
        max_log_contrast: whole(o, &MAX_LOG_CONTRAST, any, "a whole number")?,
        eotf: [Eotf::Bt1886, Eotf::Pq][o.choice(&EOTF)],
        enc_width: whole(
            o,
            &ENC_WIDTH,
            |v| v == 0 || v >= 180,
            "0 or a whole number from 180",
        )?,
        enc_height: whole(
            o,
            &ENC_HEIGHT,
            |v| v == 0 || v >= 150,
            "0 or a whole number from 150",
        )?,
        enc_bitdepth: whole(
            o,
            &ENC_BITDEPTH,
            |v| v == 0 || v >= 6,
            "0 or a whole number from 6",
        )?,
        high_res_speedup: whole(o, &HIGH_RES_SPEEDUP, any, "a whole number")?,
        max_val: o.float(&MAX_VAL),
    };
    Ok(Box::new(s))
}

pub(crate) const ENTRY: Entry = Entry {
    provides: &[Info {
        flag: FLAG,
        name: "cambi",
        title: "CAMBI banding",
        description: "Banding of the luma: Netflix's CAMBI (libvmaf 3.2.0's cambi feature), \
                      on each input",
        fields: &[field(CAMBI[0]), field(CAMBI[1])],
    }],
    options: &[
        ENC_WIDTH,
        ENC_HEIGHT,
        ENC_BITDEPTH,
        WINDOW_SIZE,
        TOPK,
        TVI_THRESHOLD,
        VIS_LUM_THRESHOLD,
        MAX_LOG_CONTRAST,
        EOTF,
        MAX_VAL,
        HIGH_RES_SPEEDUP,
    ],
    configure,
    notes: |s| {
        if !s.set.contains(FLAG) {
            return Vec::new();
        }
        // The reference has the distorted input's size and colour family (the plan
        // checks): one note covers both.
        why_not(&s.plan.distorted, s.settings::<CambiSettings>())
            .into_iter()
            .collect()
    },
    check: |_| Ok(()),
    cpu: |s| {
        if !s.set.contains(FLAG) {
            return None;
        }
        let settings = *s.settings::<CambiSettings>();
        NoReference::boxed(s, |side| {
            CambiCpu::new(side.layout(s.plan), &settings)
                .ok()
                .map(cpu::Single)
        })
    },
    linear_light: None,
    events: None,
    reference: Reference::None,
    cuda: |gpu, s| {
        if !s.set.contains(FLAG) {
            return Ok(None);
        }
        let settings = *s.settings::<CambiSettings>();
        NoReference::cuda_boxed(gpu, s, s.in_flight, |gpu, side| {
            Ok(cuda::CambiCuda::new(gpu, side.layout(s.plan), &settings)?
                .ok()
                .map(cuda::Single::new))
        })
    },
};

/// More banding is worse.
const fn field(name: &'static str) -> Field {
    Field::new(name, "CAMBI (banding)")
        .decimals(5)
        .lower_is_better()
}

/// Why frames of `layout` get no CAMBI with `settings`, if they do not.
pub(crate) fn why_not(layout: &FrameLayout, settings: &CambiSettings) -> Option<String> {
    if layout.format.family() == ColorFamily::Rgb {
        return Some(format!(
            "cambi measures luma: {} frames get none (convert to a YUV format first)",
            layout.format.name()
        ));
    }
    Geometry::new(layout.width, layout.height, layout.format.depth(), settings).err()
}

/// What CAMBI makes of a frame size and depth with its settings: libvmaf's `init`.
#[derive(Clone, Debug)]
pub(crate) struct Geometry {
    /// The input's luma size and depth.
    pub width: u32,
    pub height: u32,
    pub depth: u32,
    /// The encoding size the luma is decimated to.
    pub enc_width: u32,
    pub enc_height: u32,
    /// Anti-dithering (encoding depth below 10).
    pub anti_dither: bool,
    /// The c-values' window (odd).
    pub window: u32,
    /// The mask's threshold ([`k::mask_index`], of the encoding size).
    pub mask_index: u32,
    /// The contrast steps' visibility: `tvi[d − 1]` and the lowest visible value.
    pub diffs: u32,
    pub tvi: [u32; MAX_DIFFS],
    pub vlt: u32,
    pub band_base: u32,
    pub band_size: u32,
    pub topk: f64,
    pub max_val: f64,
    /// Each scale's size (scale 0 is the encoding size, halved when the high-resolution
    /// speed-up applies).
    pub scales: [(u32, u32); SCALES],
}

/// libvmaf's window adjustment: the 4K window scaled by `(w + h) / 6000` (integers), halved
/// (rounded up) with the speed-up, made odd.
fn adjust_window(window: u32, w: u32, h: u32, speedup: bool) -> u32 {
    let mut ws = ((window * (w + h)) / 375) >> 4;
    ws &= 0xffff;
    if speedup {
        ws = (ws + 1) >> 1;
    }
    ws | 1
}

impl Geometry {
    pub(crate) fn new(
        width: u32,
        height: u32,
        depth: u32,
        s: &CambiSettings,
    ) -> Result<Geometry, String> {
        s.check()?;
        let mut enc = if s.enc_width == 0 || s.enc_height == 0 {
            (width, height)
        } else {
            (s.enc_width, s.enc_height)
        };
        if enc.0 > width || enc.1 > height {
            enc = (width, height);
        }
        if (enc.0 < MIN_SIDE && enc.1 < MIN_SIDE) || (width < MIN_SIDE && height < MIN_SIDE) {
            return Err(format!(
                "cambi needs frames with a side of at least {MIN_SIDE} (as libvmaf); {}x{} \
                 frames (encoding size {}x{}) get none",
                width, height, enc.0, enc.1
            ));
        }
        let pixels = enc.0 as u64 * enc.1 as u64;
        let speedup = match s.high_res_speedup {
            1080 => pixels >= 1920 * 1080,
            1440 => pixels >= 2560 * 1440,
            2160 => pixels >= 3840 * 2160,
            _ => false,
        };
        let window = adjust_window(s.window_size, enc.0, enc.1, speedup);
        let input_window = adjust_window(s.window_size, width, height, speedup);
        if window.max(input_window).pow(2) as usize >= RECIP_LEN {
            return Err(format!(
                "cambi's window ({} at {}x{}) is too large for libvmaf's table; use a smaller \
                 cambi-window-size or cambi-high-res-speedup",
                window.max(input_window),
                width,
                height
            ));
        }
        let mut scales = [(0, 0); SCALES];
        let (mut w, mut h) = enc;
        for (i, sc) in scales.iter_mut().enumerate() {
            if i > 0 || speedup {
                w = w.div_ceil(2);
                h = h.div_ceil(2);
            }
            *sc = (w, h);
        }
        let half = window / 2;
        let (lw, lh) = scales[SCALES - 1];
        if lw < half || lh < half {
            return Err(format!(
                "cambi's window ({window}) is larger than the coarsest scale ({lw}x{lh}) of \
                 {}x{} frames: they get none",
                enc.0, enc.1
            ));
        }
        let diffs = 1u32 << s.max_log_contrast;
        let mut tvi = [0u32; MAX_DIFFS];
        for (d, t) in tvi.iter_mut().enumerate().take(diffs as usize) {
            *t = tvi_for_diff(d as i32 + 1, s.tvi_threshold, s.eotf);
        }
        let vlt = vlt_luma(s.vis_lum_threshold, s.eotf);
        let (band_base, band_size) = Contrast::band(vlt, tvi[diffs as usize - 1], diffs);
        let enc_depth = if s.enc_bitdepth == 0 {
            depth
        } else {
            s.enc_bitdepth
        };
        Ok(Geometry {
            width,
            height,
            depth,
            enc_width: enc.0,
            enc_height: enc.1,
            anti_dither: enc_depth < 10,
            window,
            mask_index: k::mask_index(enc.0, enc.1),
            diffs,
            tvi,
            vlt,
            band_base,
            band_size,
            topk: s.topk,
            max_val: s.max_val,
            scales,
        })
    }

    /// The kernels' view of the contrast steps.
    pub(crate) fn contrast<'a>(&self, recip: &'a [f32]) -> Contrast<'a> {
        Contrast {
            diffs: self.diffs,
            tvi: self.tvi,
            vlt: self.vlt,
            band_base: self.band_base,
            band_size: self.band_size,
            recip,
        }
    }
}

/// libvmaf's reciprocal table: `1/n` printed with 9 significant digits, read as f32 (42 of
/// its entries are one f32 off the exact reciprocal; the c-values use it as it is).
pub(crate) fn reciprocals() -> Vec<f32> {
    (0..RECIP_LEN)
        .map(|n| {
            if n == 0 {
                0.0
            } else {
                format!("{:.8e}", 1.0 / n as f64).parse().expect("a float")
            }
        })
        .collect()
}

/// Whether a step of `diff` codes above 10-bit code `sample` changes the luminance by more
/// than `threshold` of it.
fn visible(sample: i32, diff: i32, threshold: f64, eotf: Eotf) -> bool {
    let l = eotf.code(sample);
    eotf.code(sample + diff) - l > threshold * l
}

/// The largest 10-bit code at which a step of `diff` codes is still visible, found by
/// bisection between the limited range's ends as libvmaf does (0 if no step is visible,
/// 1023 if every one is).
fn tvi_for_diff(diff: i32, threshold: f64, eotf: Eotf) -> u32 {
    #[derive(PartialEq)]
    enum At {
        Below,
        Here,
        Above,
    }
    let probe = |s: i32| {
        if !visible(s, diff, threshold, eotf) {
            At::Above
        } else if visible(s + 1, diff, threshold, eotf) {
            At::Below
        } else {
            At::Here
        }
    };
    let (mut lo, mut hi) = (64, 940 - diff - 1);
    match probe(lo) {
        At::Above => return 0,
        At::Here => return lo as u32,
        At::Below => {}
    }
    match probe(hi) {
        At::Below => return 1023,
        At::Here => return hi as u32,
        At::Above => {}
    }
    // libvmaf's loop has no other exit; the bound only keeps an odd threshold from
    // hanging (the interval halves: 64 rounds are far more than 10 bits need).
    let mut mid = lo;
    for _ in 0..64 {
        mid = lo + (hi - lo) / 2;
        match probe(mid) {
            At::Above => hi = mid,
            At::Below => lo = mid,
            At::Here => return mid as u32,
        }
    }
    mid as u32
}

/// The lowest 10-bit code whose luminance reaches `threshold` (0 when the range's foot
/// does).
fn vlt_luma(threshold: f64, eotf: Eotf) -> u32 {
    let mut s = 64;
    while eotf.code(s) < threshold && s < 1023 {
        s += 1;
    }
    if s == 64 { 0 } else { s as u32 }
}

#[cfg(test)]
mod tests;
