//! PSNR: fields from per-channel sums of squared errors (kernel side:
//! `gpumetrics_kernels::psnr`), equal to FFmpeg's `psnr` filter; and from the same sums
//! `aom-psnr`, libvmaf 3.2.0's `psnr` as the AOM CTC configures it (`reduced_hbd_peak`,
//! `min_sse=0.5`, and its aggregate APSNR in the summary).

mod cpu;
mod cuda;

use super::{Entry, Field, Info, Reference};
use crate::format::ColorFamily;
use crate::metric_set::MetricSet;
use crate::plan::Plan;
use crate::scores::Scores;

/// `aom-psnr`: libvmaf's `psnr` with the AOM CTC's options (one of the `aom-ctc` set).
pub const AOM_FLAG: MetricSet = MetricSet::bit(15);

pub(crate) const ENTRY: Entry = Entry {
    provides: &[
        Info {
            flag: MetricSet::PSNR,
            name: "psnr",
            title: "PSNR",
            description: "PSNR and MSE per plane, and their plane-weighted average",
            fields: &FIELDS,
        },
        Info {
            flag: AOM_FLAG,
            name: "aom-psnr",
            title: "AOM-PSNR",
            description: "PSNR per YUV plane as libvmaf's psnr in the AOM CTC (peak 255 scaled \
                          to the bit depth, capped at a squared error of 0.5), APSNR in the \
                          summary",
            fields: &AOM_FIELDS,
        },
    ],
    options: &[],
    configure: super::no_settings,
    notes: |s| {
        if s.set.contains(AOM_FLAG) && s.plan.reference.format.family() == ColorFamily::Rgb {
            vec!["aom-psnr reads YUV (as libvmaf): RGB inputs get no aom-psnr".into()]
        } else {
            Vec::new()
        }
    },
    check: |_| Ok(()),
    cpu: |s| {
        wanted(s.plan, s.set).map(|set| Box::new(cpu::Psnr { set }) as Box<dyn super::CpuMetric>)
    },
    linear_light: None,
    events: None,
    reference: Reference::Full,
    cuda: |gpu, s| {
        let Some(set) = wanted(s.plan, s.set) else {
            return Ok(None);
        };
        Ok(Some(Box::new(cuda::Psnr::new(gpu, s.plan, set)?)))
    },
};

/// The metrics of this entry that `set` asks for and the plan can have; `None` if none.
fn wanted(plan: &Plan, set: MetricSet) -> Option<MetricSet> {
    let mut out = MetricSet::default();
    if set.contains(MetricSet::PSNR) {
        out = out | MetricSet::PSNR;
    }
    if set.contains(AOM_FLAG) && plan.reference.format.family() != ColorFamily::Rgb {
        out = out | AOM_FLAG;
    }
    (!out.is_empty()).then_some(out)
}

/// An AOM CTC PSNR: its summary's `pooled` is libvmaf's APSNR (`aom-apsnr-*`).
const fn aom(name: &'static str) -> Field {
    Field::new(name, "PSNR (dB)").unit("dB").harmonic()
}

const AOM_FIELDS: [Field; 3] = [aom("aom-psnr-y"), aom("aom-psnr-u"), aom("aom-psnr-v")];

const fn psnr(name: &'static str) -> Field {
    Field::new(name, "PSNR (dB)")
        .unit("dB")
        .harmonic()
        .mse_pooled()
}

const fn mse(name: &'static str) -> Field {
    Field::new(name, "MSE").unplotted().lower_is_better()
}

/// Per channel (YUV or RGB, whichever the input has) then the average, in record order.
const FIELDS: [Field; 14] = [
    psnr("psnr-y"),
    mse("mse-y"),
    psnr("psnr-u"),
    mse("mse-u"),
    psnr("psnr-v"),
    mse("mse-v"),
    psnr("psnr-r"),
    mse("mse-r"),
    psnr("psnr-g"),
    mse("mse-g"),
    psnr("psnr-b"),
    mse("mse-b"),
    psnr("psnr-avg"),
    mse("mse-avg"),
];

/// Field names per channel, as `(psnr, mse)`.
fn names(channel: &str) -> (&'static str, &'static str) {
    match channel {
        "y" => ("psnr-y", "mse-y"),
        "u" => ("psnr-u", "mse-u"),
        "v" => ("psnr-v", "mse-v"),
        "r" => ("psnr-r", "mse-r"),
        "g" => ("psnr-g", "mse-g"),
        "b" => ("psnr-b", "mse-b"),
        _ => unreachable!("unknown channel {channel}"),
    }
}

/// 10·log10(peak²/mse); +inf for identical channels.
pub fn psnr_db(mse: f64, peak: f64) -> f64 {
    if mse == 0.0 {
        f64::INFINITY
    } else {
        10.0 * (peak * peak / mse).log10()
    }
}

/// Which samples of the channels a pass of the entry sums.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Extent {
    /// Every sample (FFmpeg's planes, rounded up at odd sizes).
    Whole,
    /// libvmaf's planes: a subsampled plane is half the frame's width (height) rounded
    /// down, so at odd sizes its last column (row) is left out.
    RoundedDown,
}

/// A channel's size in `extent`.
fn channel_size(plan: &Plan, c: &crate::format::ChannelSpec, extent: Extent) -> (u32, u32) {
    match extent {
        Extent::Whole => plan.reference.channel_size(c),
        Extent::RoundedDown => (
            plan.reference.width >> c.sub_x,
            plan.reference.height >> c.sub_y,
        ),
    }
}

/// The passes (sums of squared errors per channel) that the metrics of `set` need, in
/// order: FFmpeg's whole planes for `psnr`, libvmaf's for `aom-psnr` when they differ.
pub(crate) fn passes(plan: &Plan, set: MetricSet) -> Vec<Extent> {
    let differ = plan.channels.iter().any(|(c, _)| {
        channel_size(plan, c, Extent::Whole) != channel_size(plan, c, Extent::RoundedDown)
    });
    let mut out = Vec::new();
    if set.contains(MetricSet::PSNR) {
        out.push(Extent::Whole);
    }
    if set.contains(AOM_FLAG) && (differ || out.is_empty()) {
        out.push(if differ {
            Extent::RoundedDown
        } else {
            Extent::Whole
        });
    }
    out
}

/// The kernel-side channel pairs of one pass.
pub(crate) fn planes(
    plan: &Plan,
    extent: Extent,
    r: &crate::frame::PlanePtrs,
    d: &crate::frame::PlanePtrs,
) -> gpumetrics_kernels::psnr::PsnrPlanes {
    let mut planes = plan.psnr_planes(r, d);
    for (pair, (c, _)) in planes.pairs.iter_mut().zip(&plan.channels) {
        (pair.width, pair.height) = channel_size(plan, c, extent);
    }
    planes
}

/// Appends the fields of the metrics of `set` from the sums of squared errors of each of
/// its [`passes`] (per channel).
pub(crate) fn push_all(plan: &Plan, set: MetricSet, sse: &[&[u64]], scores: &mut Scores) {
    if set.contains(MetricSet::PSNR) {
        push_fields(plan, sse[0], scores);
    }
    if set.contains(AOM_FLAG) {
        let last = sse.len() - 1;
        push_aom_fields(plan, sse[last], scores);
    }
}

/// libvmaf's peak of `psnr` with `reduced_hbd_peak`: 255·2^(bits − 8).
pub fn aom_peak(bits: u32) -> f64 {
    (255u64 << (bits - 8)) as f64
}

/// libvmaf's cap of a plane's PSNR with `min_sse`: the PSNR of a squared error of
/// `min_sse` over the plane, rounded up, where libvmaf counts a subsampled plane's samples
/// as half the frame's width and height rounded down (its planes are rounded up).
pub fn aom_cap(peak: f64, min_sse: f64, samples: u64) -> f64 {
    (10.0 * (peak * peak / (min_sse / samples as f64)).log10()).ceil()
}

/// libvmaf's `min_sse` in the AOM CTC.
pub const AOM_MIN_SSE: f64 = 0.5;

const AOM_NAMES: [&str; 3] = ["aom-psnr-y", "aom-psnr-u", "aom-psnr-v"];

/// Appends `aom-psnr-y/u/v` (Y'CbCr only; gray: luma alone, as libvmaf's 4:0:0), each with
/// its squared error for the summary's APSNR ([`crate::scores::PoolTerms::Apsnr`]).
pub(crate) fn push_aom_fields(plan: &Plan, sse: &[u64], scores: &mut Scores) {
    let bits = plan.reference.format.depth();
    let peak = aom_peak(bits);
    for ((c, _), &sse) in plan.channels.iter().zip(sse).take(3) {
        let i = usize::from(c.name == "u") + 2 * usize::from(c.name == "v");
        let (w, h) = channel_size(plan, c, Extent::RoundedDown);
        let n = w as u64 * h as u64;
        let cap = aom_cap(peak, AOM_MIN_SSE, n);
        let mse = sse as f64 / n as f64;
        let psnr = (10.0 * (peak * peak / mse.max(1e-16)).log10()).min(cap);
        scores.push(AOM_NAMES[i], psnr);
        let terms = crate::scores::PoolTerms::Apsnr {
            sse: sse as f64,
            samples: n as f64,
            peak,
        };
        scores.push_pool_terms(AOM_NAMES[i], terms);
    }
}

/// libvmaf's aggregate APSNR of a plane from its squared errors and samples summed over the
/// frames: the PSNR of their ratio, capped at that of half a squared error over them all
/// (rounded up), which identical frames get.
pub fn apsnr(sse: f64, samples: f64, peak: f64) -> f64 {
    let value = 10.0 * ((peak * peak).log10() + samples.log10() - sse.log10());
    let cap = (10.0 * (peak * peak * samples * 2.0).log10()).ceil();
    value.min(cap)
}

/// Appends `psnr-*`/`mse-*` per channel and the plane-size weighted `psnr-avg`/`mse-avg`,
/// as FFmpeg's `psnr` filter reports them.
pub(crate) fn push_fields(plan: &Plan, sse: &[u64], scores: &mut Scores) {
    let peak = plan.reference.format.peak() as f64;
    let samples: Vec<u64> = plan.channel_samples().collect();
    let total: u64 = samples.iter().sum();
    let mut weighted = 0.0;
    for (((r, _), &sse), &n) in plan.channels.iter().zip(sse).zip(&samples) {
        let mse = sse as f64 / n as f64;
        let (psnr_name, mse_name) = names(r.name);
        scores.push(psnr_name, psnr_db(mse, peak));
        scores.push(mse_name, mse);
        weighted += mse * n as f64 / total as f64;
    }
    scores.push("psnr-avg", psnr_db(weighted, peak));
    scores.push("mse-avg", weighted);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{FrameLayout, PixelFormat};

    #[test]
    fn fields_follow_ffmpeg_weighting() {
        let l = FrameLayout {
            format: PixelFormat::I420,
            width: 4,
            height: 4,
        };
        let plan = Plan::new(l, l).unwrap();
        let mut s = Scores::new();
        push_fields(&plan, &[16 * 4, 0, 4 * 10], &mut s);
        assert_eq!(s.get("mse-y"), Some(4.0));
        assert_eq!(s.get("psnr-u"), Some(f64::INFINITY));
        assert_eq!(s.get("mse-v"), Some(10.0));
        let avg = (4.0 * 16.0 + 10.0 * 4.0) / 24.0;
        assert_eq!(s.get("mse-avg"), Some(avg));
        assert!(
            (s.get("psnr-avg").unwrap() - 10.0 * (255.0f64 * 255.0 / avg).log10()).abs() < 1e-12
        );
    }
}
