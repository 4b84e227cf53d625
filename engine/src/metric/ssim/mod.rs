//! SSIM and MS-SSIM fields from per-channel, per-scale sums of the ssim and cs map values
//! (kernel side: `gpumetrics_kernels::ssim`).

mod cpu;
mod cuda;

use super::{CpuMetric, CudaMetric, Entry, Field, Info, OptionKind, OptionSpec, Reference};
use crate::format::ColorFamily;
use crate::frame::PlanePtrs;
use crate::metric_set::MetricSet;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::channel::MAX_CHANNELS;
use gpumetrics_kernels::psnr::PsnrPlanes;
use gpumetrics_kernels::ssim::FloatSsim;
use gpumetrics_kernels::ssim::float::{
    MS_ALPHAS, MS_BETAS, MS_SCALES, SUMS as FLOAT_SUMS, down, mean as float_mean, ms_fits,
};
use gpumetrics_kernels::ssim::{MS_MIN_SIDE, MS_WEIGHTS, RESULT_LEN, SCALES, half, valid};

/// SSIM and MS-SSIM: one pass computes both (MS-SSIM's first scale is the SSIM map).
pub(crate) const ENTRY: Entry = Entry {
    provides: &[
        Info {
            flag: MetricSet::SSIM,
            name: "ssim",
            title: "SSIM",
            description: "SSIM (11x11 Gaussian window) of luma, or of R, G, B; chroma and ssim-all \
                          with ssim-chroma",
            fields: &SSIM_FIELDS,
        },
        Info {
            flag: MetricSet::MS_SSIM,
            name: "ms-ssim",
            title: "MS-SSIM",
            description: "MS-SSIM (5 scales) of luma, or the mean over R, G, B; frames > 160x160",
            fields: &[score("ms-ssim")],
        },
        Info {
            flag: AOM_SSIM,
            name: "aom-ssim-db",
            title: "AOM-SSIM-dB",
            description: "Luma SSIM in dB as libvmaf's float_ssim in the AOM CTC (scale=1, \
                          enable_db, clip_db)",
            fields: &[Field::new("aom-ssim-db", "SSIM (dB)").unit("dB").harmonic()],
        },
        Info {
            flag: AOM_MS_SSIM,
            name: "aom-ms-ssim-db",
            title: "AOM-MS-SSIM-dB",
            description: "Luma MS-SSIM in dB as libvmaf's float_ms_ssim in the AOM CTC \
                          (enable_db, clip_db); frames >= 176x176",
            fields: &[Field::new("aom-ms-ssim-db", "SSIM (dB)")
                .unit("dB")
                .harmonic()],
        },
    ],
    options: &[CHROMA],
    configure: |o| {
        Ok(Box::new(Settings {
            chroma: o.bool(&CHROMA),
        }))
    },
    notes: |s| notes(s.plan, s.set, s.settings::<Settings>().chroma),
    check: |_| Ok(()),
    cpu: |s| {
        let chroma = s.settings::<Settings>().chroma;
        Job::new(s.plan, s.set, chroma)
            .map(|job| Box::new(cpu::Ssim { job, set: s.set }) as Box<dyn CpuMetric>)
    },
    linear_light: None,
    events: None,
    reference: Reference::Full,
    cuda: |gpu, s| match Job::new(s.plan, s.set, s.settings::<Settings>().chroma) {
        None => Ok(None),
        Some(job) => Ok(Some(
            Box::new(cuda::Ssim::new(gpu, s.plan, job, s.set)?) as Box<dyn CudaMetric>
        )),
    },
};

/// `aom-ssim-db`: luma SSIM as libvmaf's `float_ssim` with `scale=1:enable_db:clip_db`.
pub const AOM_SSIM: MetricSet = MetricSet::bit(16);

/// `aom-ms-ssim-db`: luma MS-SSIM as libvmaf's `float_ms_ssim` with `enable_db:clip_db`.
pub const AOM_MS_SSIM: MetricSet = MetricSet::bit(18);

/// `ssim-chroma`: SSIM on the chroma planes of YUV input too.
const CHROMA: OptionSpec = OptionSpec {
    name: "ssim-chroma",
    nick: "SSIM on chroma",
    doc: "YUV input: also compute ssim-u, ssim-v and the plane-size weighted ssim-all (ssim is \
          luma either way; RGB input always has R, G, B)",
    kind: OptionKind::Bool { default: false },
};

/// SSIM's settings (from its options).
pub(crate) struct Settings {
    /// SSIM on chroma planes too.
    chroma: bool,
}

/// A 0..1 score of the SSIM family.
const fn score(name: &'static str) -> Field {
    Field::new(name, "SSIM, MS-SSIM (0..1)")
        .decimals(5)
        .harmonic()
        .unit_interval()
}

/// In record order: per channel (YUV or RGB), `ssim`, `ssim-all`.
const SSIM_FIELDS: [Field; 8] = [
    score("ssim-y"),
    score("ssim-u"),
    score("ssim-v"),
    score("ssim-r"),
    score("ssim-g"),
    score("ssim-b"),
    score("ssim"),
    score("ssim-all"),
];

/// Scales to compute per plan channel: 0 (none), 1 (SSIM) or `SCALES` (MS-SSIM, whose
/// first scale is the SSIM map as well).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Job {
    pub levels: [u32; MAX_CHANNELS],
    /// Scales of libvmaf's float SSIM of luma (`gpumetrics_kernels::ssim::float`): 0, 1
    /// (`aom-ssim-db`) or [`MS_SCALES`] (`aom-ms-ssim-db`, whose first scale is
    /// `aom-ssim-db`'s); their sums at [`float_sums`].
    pub float: u32,
}

/// Where a result slot holds the sums (l, c, s, l·c·s) of libvmaf's float SSIM at `scale`.
pub(crate) const fn float_sums(scale: usize) -> usize {
    RESULT_LEN + scale * FLOAT_SUMS
}
/// f64 values per result slot: the SSIM/MS-SSIM sums and the float ones.
pub(crate) const SUMS: usize = float_sums(MS_SCALES);

/// The sizes of libvmaf's MS-SSIM scales of a w×h frame.
pub(crate) fn float_sizes(w: u32, h: u32) -> [(u32, u32); MS_SCALES] {
    let mut out = [(w, h); MS_SCALES];
    for s in 1..MS_SCALES {
        out[s] = (down(out[s - 1].0), down(out[s - 1].1));
    }
    out
}

impl Job {
    /// `None` when neither metric is enabled or no channel is large enough; `chroma`: SSIM
    /// on the chroma planes of YUV input too.
    pub(crate) fn new(plan: &Plan, metrics: MetricSet, chroma: bool) -> Option<Job> {
        let (want_ssim, want_ms) = (
            metrics.contains(MetricSet::SSIM),
            metrics.contains(MetricSet::MS_SSIM),
        );
        let rgb = plan.reference.format.family() == ColorFamily::Rgb;
        let mut job = Job::default();
        for (i, (c, _)) in plan.channels.iter().enumerate() {
            let (w, h) = plan.reference.channel_size(c);
            let luma_like = i == 0 || rgb;
            let ssim = want_ssim && (luma_like || chroma);
            let ms = want_ms && luma_like && w.min(h) > MS_MIN_SIDE;
            job.levels[i] = if valid(w) == 0 || valid(h) == 0 {
                0
            } else if ms {
                SCALES as u32
            } else {
                // MS-SSIM left out (too small, see `notes`): SSIM alone, if wanted.
                ssim as u32
            };
        }
        let (w, h) = (plan.reference.width, plan.reference.height);
        let yuv = plan.reference.format.family() != ColorFamily::Rgb;
        job.float = if yuv && metrics.contains(AOM_MS_SSIM) && ms_fits(w, h) {
            MS_SCALES as u32
        } else if yuv && metrics.contains(AOM_SSIM) && valid(w) > 0 && valid(h) > 0 {
            1
        } else {
            0
        };
        (job.float > 0 || job.levels.iter().any(|&l| l > 0)).then_some(job)
    }

    /// The kernel-side channel pairs of a pair of frames.
    pub(crate) fn planes(&self, plan: &Plan, r: &PlanePtrs, d: &PlanePtrs) -> PsnrPlanes {
        plan.psnr_planes(r, d)
    }

    /// libvmaf's float SSIM of the luma of `planes` (its pair 0) at scale 0, its horizontal
    /// pass in `rows` ([`FloatSsim::rows`]).
    pub(crate) fn float_ssim(plan: &Plan, planes: &PsnrPlanes, rows: u64) -> FloatSsim {
        let bits = plan.reference.format.depth();
        FloatSsim {
            pair: planes.pairs[0],
            divisor: (1u32 << (bits - 8)) as f32,
            _pad: 0,
            rows,
        }
    }

    pub(crate) fn max_levels(&self) -> u32 {
        self.levels.iter().copied().max().unwrap_or(0)
    }
}

/// (width, height) of a channel at each MS-SSIM scale.
pub(crate) fn scale_sizes(w: u32, h: u32) -> [(u32, u32); SCALES] {
    let mut out = [(w, h); SCALES];
    for s in 1..SCALES {
        out[s] = (half(out[s - 1].0), half(out[s - 1].1));
    }
    out
}

/// Index of (channel, scale, ssim = 0 | cs = 1) in a result slot.
pub(crate) fn slot_index(channel: usize, scale: usize, which: usize) -> usize {
    (channel * SCALES + scale) * 2 + which
}

/// Why a requested metric is left out for this plan, if it is (logged once by the caller).
pub fn notes(plan: &Plan, metrics: MetricSet, chroma: bool) -> Vec<String> {
    let mut out = Vec::new();
    let (w, h) = (plan.reference.width, plan.reference.height);
    if metrics.contains(MetricSet::SSIM) && (valid(w) == 0 || valid(h) == 0) {
        out.push(format!(
            "ssim needs frames of at least 11x11 (the Gaussian window); {w}x{h} frames get none"
        ));
    } else if metrics.contains(MetricSet::SSIM) && chroma {
        let small = plan.channels.iter().any(|(c, _)| {
            let (cw, ch) = plan.reference.channel_size(c);
            valid(cw) == 0 || valid(ch) == 0
        });
        if small {
            out.push(format!(
                "ssim on chroma needs chroma planes of at least 11x11; {w}x{h} frames get no \
                 chroma ssim and no ssim-all"
            ));
        }
    }
    if metrics.contains(AOM_MS_SSIM) && plan.reference.format.family() == ColorFamily::Rgb {
        out.push("aom-ms-ssim-db reads luma (as libvmaf): RGB inputs get none".into());
    } else if metrics.contains(AOM_MS_SSIM) && !ms_fits(w, h) {
        out.push(format!(
            "aom-ms-ssim-db needs frames of at least 176x176 (as libvmaf: 5 scales of an \
             11-pixel window); {w}x{h} frames get none"
        ));
    }
    if metrics.contains(AOM_SSIM) && plan.reference.format.family() == ColorFamily::Rgb {
        out.push("aom-ssim-db reads luma (as libvmaf): RGB inputs get none".into());
    } else if metrics.contains(AOM_SSIM)
        && !metrics.contains(MetricSet::SSIM)
        && (valid(w) == 0 || valid(h) == 0)
    {
        out.push(format!(
            "aom-ssim-db needs frames of at least 11x11 (the Gaussian window); {w}x{h} frames \
             get none"
        ));
    }
    if metrics.contains(MetricSet::MS_SSIM) && w.min(h) <= MS_MIN_SIDE {
        out.push(format!(
            "ms-ssim needs both sides larger than {MS_MIN_SIDE} pixels (5 scales of an 11-pixel \
             window); {w}x{h} frames get none"
        ));
    }
    out
}

/// Field name of a channel's SSIM.
fn name(channel: &str) -> &'static str {
    match channel {
        "y" => "ssim-y",
        "u" => "ssim-u",
        "v" => "ssim-v",
        "r" => "ssim-r",
        "g" => "ssim-g",
        "b" => "ssim-b",
        _ => unreachable!("unknown channel {channel}"),
    }
}

/// Appends `ssim-<channel>`, `ssim`, `ssim-all` (when more than one plane is computed) and
/// `ms-ssim`, as METRICS.md defines them, from the sums of one result slot of `job`.
pub(crate) fn push_fields(
    plan: &Plan,
    job: &Job,
    metrics: MetricSet,
    sums: &[f64; SUMS],
    s: &mut Scores,
) {
    let rgb = plan.reference.format.family() == ColorFamily::Rgb;
    let mean = |i: usize, scale: usize, which: usize| {
        let (c, _) = &plan.channels[i];
        let (w, h) = plan.reference.channel_size(c);
        let (sw, sh) = scale_sizes(w, h)[scale];
        sums[slot_index(i, scale, which)] / (valid(sw) as f64 * valid(sh) as f64)
    };
    if job.float > 0 {
        // libvmaf's cap: the dB of half a squared error over the frame at the full peak.
        let (w, h) = (plan.reference.width, plan.reference.height);
        let peak = plan.reference.format.peak() as f64;
        let cap = (10.0 * (peak * peak / (0.5 / (w as f64 * h as f64))).log10()).ceil();
        let db = |v: f64| (-10.0 * (1.0 - v).log10()).min(cap);
        if metrics.contains(AOM_SSIM) {
            s.push("aom-ssim-db", db(float_mean(sums[float_sums(0) + 3], w, h)));
        }
        if metrics.contains(AOM_MS_SSIM) && job.float == MS_SCALES as u32 {
            let sizes = float_sizes(w, h);
            let mut ms = 1.0f64;
            for (k, &(sw, sh)) in sizes.iter().enumerate() {
                let at = float_sums(k);
                let [l, c, cs] = [0, 1, 2].map(|i| float_mean(sums[at + i], sw, sh));
                ms *= l.powf(MS_ALPHAS[k] as f64)
                    * c.powf(MS_BETAS[k] as f64)
                    * cs.powf(MS_BETAS[k] as f64);
            }
            s.push("aom-ms-ssim-db", db(ms));
        }
    }
    if metrics.contains(MetricSet::SSIM) && job.levels[0] > 0 {
        let mut per = Vec::new();
        for (i, (c, _)) in plan.channels.iter().enumerate() {
            if job.levels[i] > 0 {
                let v = mean(i, 0, 0);
                s.push(name(c.name), v);
                let (w, h) = plan.reference.channel_size(c);
                per.push((v, w as f64 * h as f64));
            }
        }
        let computed_all = job.levels[..plan.channels.len()].iter().all(|&l| l > 0);
        if rgb {
            s.push(
                "ssim",
                per.iter().map(|p| p.0).sum::<f64>() / per.len() as f64,
            );
        } else {
            s.push("ssim", per[0].0);
        }
        if per.len() > 1 && computed_all {
            let total: f64 = per.iter().map(|p| p.1).sum();
            s.push(
                "ssim-all",
                per.iter().map(|p| p.0 * p.1).sum::<f64>() / total,
            );
        }
    }
    if metrics.contains(MetricSet::MS_SSIM) && job.levels[0] == SCALES as u32 {
        let channels: Vec<usize> = (0..plan.channels.len())
            .filter(|&i| job.levels[i] == SCALES as u32)
            .collect();
        let ms: f64 = channels
            .iter()
            .map(|&i| {
                (0..SCALES)
                    .map(|scale| {
                        // cs at every scale but the last, ssim there.
                        let v = mean(i, scale, usize::from(scale < SCALES - 1));
                        v.max(0.0).powf(MS_WEIGHTS[scale])
                    })
                    .product::<f64>()
            })
            .sum::<f64>()
            / channels.len() as f64;
        s.push("ms-ssim", ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{FrameLayout, PixelFormat};

    /// A plan and whether SSIM covers chroma.
    fn plan(format: PixelFormat, w: u32, h: u32, chroma: bool) -> (Plan, bool) {
        let l = FrameLayout {
            format,
            width: w,
            height: h,
        };
        (Plan::new(l, l).unwrap(), chroma)
    }

    fn job(p: &(Plan, bool), set: MetricSet) -> Option<Job> {
        Job::new(&p.0, set, p.1)
    }

    fn fields(p: &(Plan, bool), set: MetricSet, sums: &[f64; SUMS], s: &mut Scores) {
        let job = job(p, set).unwrap();
        push_fields(&p.0, &job, set, sums, s);
    }

    #[test]
    fn jobs_follow_the_channel_rules() {
        let both = MetricSet::SSIM | MetricSet::MS_SSIM;
        let p = plan(PixelFormat::I420, 400, 300, false);
        assert_eq!(job(&p, both).unwrap().levels, [5, 0, 0]);
        assert_eq!(job(&p, MetricSet::SSIM).unwrap().levels, [1, 0, 0]);
        let p = plan(PixelFormat::I420, 400, 300, true);
        assert_eq!(job(&p, both).unwrap().levels, [5, 1, 1]);
        let p = plan(PixelFormat::Rgb, 400, 300, false);
        assert_eq!(job(&p, MetricSet::MS_SSIM).unwrap().levels, [5, 5, 5]);
        let p = plan(PixelFormat::I420, 400, 160, false);
        assert_eq!(job(&p, MetricSet::MS_SSIM), None);
        assert_eq!(job(&p, both).unwrap().levels, [1, 0, 0]);
        assert_eq!(notes(&p.0, both, p.1).len(), 1);
        let p = plan(PixelFormat::I420, 30, 16, true);
        assert_eq!(job(&p, MetricSet::SSIM).unwrap().levels, [1, 0, 0]);
        assert_eq!(job(&p, MetricSet::PSNR), None);
    }

    #[test]
    fn fields_weight_planes_and_scales() {
        let p = plan(PixelFormat::I420, 20, 20, true);
        let mut sums = [0.0; SUMS];
        // Luma 10x10 valid, chroma 10x10 planes: 0x0 valid -> chroma left out.
        sums[slot_index(0, 0, 0)] = 50.0;
        let mut s = Scores::new();
        fields(&p, MetricSet::SSIM, &sums, &mut s);
        assert_eq!(s.get("ssim-y"), Some(0.5));
        assert_eq!(s.get("ssim"), Some(0.5));
        assert_eq!(s.get("ssim-all"), None);

        let p = plan(PixelFormat::Y444, 12, 12, true);
        let mut sums = [0.0; SUMS];
        for (i, v) in [4.0, 2.0, 0.0].into_iter().enumerate() {
            sums[slot_index(i, 0, 0)] = v;
        }
        let mut s = Scores::new();
        fields(&p, MetricSet::SSIM, &sums, &mut s);
        assert_eq!(s.get("ssim"), Some(1.0));
        assert_eq!(s.get("ssim-u"), Some(0.5));
        assert_eq!(s.get("ssim-all"), Some(0.5));

        let p = plan(PixelFormat::Gray8, 200, 170, false);
        let mut sums = [0.0; SUMS];
        let sizes = scale_sizes(200, 170);
        for (scale, &(w, h)) in sizes.iter().enumerate() {
            let n = valid(w) as f64 * valid(h) as f64;
            sums[slot_index(0, scale, 0)] = 0.5 * n;
            sums[slot_index(0, scale, 1)] = 0.8 * n;
        }
        let mut s = Scores::new();
        fields(&p, MetricSet::MS_SSIM, &sums, &mut s);
        let want = MS_WEIGHTS[..4]
            .iter()
            .map(|w| 0.8f64.powf(*w))
            .product::<f64>()
            * 0.5f64.powf(MS_WEIGHTS[4]);
        assert!((s.get("ms-ssim").unwrap() - want).abs() < 1e-15);
        assert_eq!(s.get("ssim"), None);
        assert_eq!(sizes[4], (13, 11));
    }
}
