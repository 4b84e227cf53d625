//! PSNR: fields from per-channel sums of squared errors (kernel side:
//! `gpumetrics_kernels::psnr`), equal to FFmpeg's `psnr` filter.

mod cpu;
mod cuda;

use super::{Entry, Field, Info, Reference};
use crate::metric_set::MetricSet;
use crate::plan::Plan;
use crate::scores::Scores;

pub(crate) const ENTRY: Entry = Entry {
    provides: &[Info {
        flag: MetricSet::PSNR,
        name: "psnr",
        title: "PSNR",
        description: "PSNR and MSE per plane, and their plane-weighted average",
        fields: &FIELDS,
    }],
    options: &[],
    configure: super::no_settings,
    notes: |_| Vec::new(),
    check: |_| Ok(()),
    cpu: |s| {
        s.set
            .contains(MetricSet::PSNR)
            .then(|| Box::new(cpu::Psnr) as Box<dyn super::CpuMetric>)
    },
    events: None,
    reference: Reference::Full,
    cuda: |gpu, s| {
        if !s.set.contains(MetricSet::PSNR) {
            return Ok(None);
        }
        Ok(Some(Box::new(cuda::Psnr::new(gpu, s.plan)?)))
    },
};

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
