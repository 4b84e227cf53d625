//! PSNR-HVS: `psnr-hvs-y`, `psnr-hvs-u`, `psnr-hvs-v` and their combination `psnr-hvs`,
//! libvmaf 3.2.0's `psnr_hvs` feature (Xiph's PSNR-HVS: 8×8 DCT blocks every 7 samples,
//! contrast sensitivity and masking; kernel side `gpumetrics_kernels::psnr_hvs`, which says
//! how, and how libvmaf's single-precision sum is reproduced).
//!
//! As libvmaf: YUV only (it refuses 4:0:0; RGB has no such tables), chroma planes of the
//! luma size rounded down (libvmaf's picture sizes, so an odd side loses its last chroma
//! sample), at most 12 bits per sample (refused above, as libvmaf refuses), and identical
//! planes give +inf.

mod cpu;
mod cuda;

use super::{Entry, Field, Info, Reference};
use crate::error::EngineError;
use crate::format::{ColorFamily, FrameLayout};
use crate::frame::PlanePtrs;
use crate::metric_set::MetricSet;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::channel::MAX_CHANNELS;
use gpumetrics_kernels::psnr_hvs::{COEFFS, HvsPlane, HvsPlanes, SIDE, blocks_along};

/// Its bit of the `metrics` flags (never changed once released).
pub const FLAG: MetricSet = MetricSet::bit(13);

/// The deepest samples libvmaf's `psnr_hvs` takes.
const MAX_DEPTH: u32 = 12;

/// The per-plane fields, in plane order (Y, Cb, Cr), then the combination.
const PLANE_FIELDS: [&str; MAX_CHANNELS] = ["psnr-hvs-y", "psnr-hvs-u", "psnr-hvs-v"];
const COMBINED: &str = "psnr-hvs";

const fn db(name: &'static str) -> Field {
    Field::new(name, "PSNR-HVS (dB)").unit("dB").harmonic()
}

pub(crate) const ENTRY: Entry = Entry {
    provides: &[Info {
        flag: FLAG,
        name: "psnr-hvs",
        title: "PSNR-HVS",
        description: "PSNR-HVS as libvmaf's psnr_hvs: DCT-domain PSNR weighted by contrast \
                      sensitivity, with masking, per YUV plane and combined; up to 12 bits",
        fields: &[
            db(PLANE_FIELDS[0]),
            db(PLANE_FIELDS[1]),
            db(PLANE_FIELDS[2]),
            db(COMBINED),
        ],
    }],
    options: &[],
    configure: super::no_settings,
    notes: |s| {
        if !s.set.contains(FLAG) {
            return Vec::new();
        }
        why_not(s.plan).into_iter().collect()
    },
    check: |s| {
        if !s.set.contains(FLAG) || s.plan.reference.format.family() != ColorFamily::Yuv {
            return Ok(());
        }
        for (input, layout) in [
            ("reference", &s.plan.reference),
            ("distorted", &s.plan.distorted),
        ] {
            let depth = layout.format.depth();
            if depth > MAX_DEPTH {
                return Err(EngineError::Unsupported(format!(
                    "psnr-hvs reads at most {MAX_DEPTH} bits per sample (as libvmaf's \
                     psnr_hvs, which refuses deeper input): the {input} input is {} ({depth} \
                     bits)",
                    layout.format.name()
                )));
            }
        }
        Ok(())
    },
    cpu: |s| {
        (s.set.contains(FLAG) && why_not(s.plan).is_none())
            .then(|| Box::new(cpu::PsnrHvs::default()) as Box<dyn super::CpuMetric>)
    },
    linear_light: None,
    events: None,
    reference: Reference::Full,
    cuda: |gpu, s| {
        if !s.set.contains(FLAG) || why_not(s.plan).is_some() {
            return Ok(None);
        }
        Ok(Some(Box::new(cuda::PsnrHvs::new(gpu, s.plan)?)))
    },
};

/// The size of each plane as libvmaf measures it: luma, then Cb and Cr at the luma size
/// shifted down by the subsampling (rounded down, where the frame's chroma planes round
/// up).
fn plane_sizes(l: &FrameLayout) -> [(u32, u32); MAX_CHANNELS] {
    let (sx, sy) = l.format.subsampling();
    let chroma = (l.width >> sx, l.height >> sy);
    [(l.width, l.height), chroma, chroma]
}

/// Why a plan gets no `psnr-hvs`, if it gets none.
fn why_not(plan: &Plan) -> Option<String> {
    if plan.reference.format.family() != ColorFamily::Yuv {
        return Some(
            "psnr-hvs compares Y, Cb and Cr planes (as libvmaf's psnr_hvs): gray and RGB \
             inputs get no psnr-hvs (convert them to a YUV format first)"
                .to_string(),
        );
    }
    let sizes = plane_sizes(&plan.reference);
    sizes.iter().any(|&(w, h)| w < SIDE || h < SIDE).then(|| {
        let (l, c) = (sizes[0], sizes[1]);
        format!(
            "psnr-hvs needs planes of at least {SIDE}x{SIDE} samples (its DCT blocks); \
                 {}x{} frames (chroma {}x{}) get none",
            l.0, l.1, c.0, c.1
        )
    })
}

/// The kernel-side description of a YUV pair at these plane addresses, without the
/// device buffers' addresses (`cuda.rs` sets them).
fn planes(plan: &Plan, r: &PlanePtrs, d: &PlanePtrs) -> HvsPlanes {
    let base = plan.psnr_planes(r, d);
    let mut out = HvsPlanes {
        count: base.count,
        ..Default::default()
    };
    let sizes = plane_sizes(&plan.reference);
    for (c, p) in out.planes.iter_mut().enumerate().take(base.count as usize) {
        let (width, height) = sizes[c];
        let mut pair = base.pairs[c];
        // Never beyond the frame's own plane, which the backend validated.
        debug_assert!(width <= pair.width && height <= pair.height);
        pair.width = width;
        pair.height = height;
        *p = HvsPlane {
            pair,
            blocks_x: blocks_along(width),
            blocks: blocks_along(width) * blocks_along(height),
            table: c as u32,
            ..Default::default()
        };
    }
    out
}

/// libvmaf's score of a plane from its (emulated single-precision) sum of error terms: the
/// mean term over the squared peak, each step rounded to f32 as libvmaf does it.
fn plane_score(sum: f64, blocks: u32, peak: u32) -> f64 {
    let samples = blocks as u64 * COEFFS as u64;
    (sum as f32 / samples as f32 / (peak * peak) as f32) as f64
}

/// A score in dB: `−10·log10(score)`, +inf for 0 (identical planes).
fn decibels(score: f64) -> f64 {
    10.0 * -score.log10()
}

/// Appends the fields from the planes' sums (`sums[c]` for `planes.planes[c]`): per plane,
/// then libvmaf's combination of the three scores, 0.8·Y + 0.1·(Cb + Cr), in dB.
fn push_fields(plan: &Plan, planes: &HvsPlanes, sums: &[f64], scores: &mut Scores) {
    let peak = plan.reference.format.peak();
    let mut s = [0.0; MAX_CHANNELS];
    for (c, p) in planes.planes.iter().enumerate().take(planes.count as usize) {
        s[c] = plane_score(sums[c], p.blocks, peak);
        scores.push(PLANE_FIELDS[c], decibels(s[c]));
    }
    scores.push(COMBINED, decibels(s[0] * 0.8 + 0.1 * (s[1] + s[2])));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::PixelFormat;
    use crate::metric::{Configured, Options};

    fn plan(format: PixelFormat, width: u32, height: u32) -> Plan {
        let l = FrameLayout {
            format,
            width,
            height,
        };
        Plan::new(l, l).unwrap()
    }

    #[test]
    fn chroma_sizes_round_down_as_libvmafs() {
        let l = plan(PixelFormat::I420, 333, 199).reference;
        assert_eq!(plane_sizes(&l), [(333, 199), (166, 99), (166, 99)]);
        let l = plan(PixelFormat::Y42b, 333, 199).reference;
        assert_eq!(plane_sizes(&l)[2], (166, 199));
        assert_eq!(
            plane_sizes(&plan(PixelFormat::Y444, 9, 8).reference)[1],
            (9, 8)
        );
    }

    #[test]
    fn what_gets_no_field_and_what_is_refused() {
        assert!(why_not(&plan(PixelFormat::I420, 16, 16)).is_none());
        // 4:2:0 chroma of 7 samples: no block fits.
        let why = why_not(&plan(PixelFormat::I420, 15, 16)).unwrap();
        assert!(
            why.contains("at least 8x8") && why.contains("chroma 7x8"),
            "{why}"
        );
        for f in [PixelFormat::Gray8, PixelFormat::Rgb] {
            assert!(why_not(&plan(f, 64, 64)).unwrap().contains("YUV"));
        }
        let check = |reference: PixelFormat, distorted: PixelFormat| {
            let at = |format| FrameLayout {
                format,
                width: 32,
                height: 32,
            };
            let plan = Plan::new(at(reference), at(distorted)).unwrap();
            let c = Configured::all(FLAG, &Options::new()).unwrap();
            let e = c.iter().find(|c| c.entry.provides[0].flag == FLAG).unwrap();
            (e.entry.check)(&e.setup(&plan, FLAG))
        };
        assert!(check(PixelFormat::I420_12Le, PixelFormat::I420).is_ok());
        let e = check(PixelFormat::Y444, PixelFormat::Y444_16Le)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("at most 12 bits") && e.contains("distorted"),
            "{e}"
        );
        assert!(check(PixelFormat::P016Le, PixelFormat::P016Le).is_err());
    }

    #[test]
    fn scores_are_libvmafs_formula() {
        let p = plan(PixelFormat::I420, 64, 64);
        let hvs = {
            let f = crate::frame::PlanePtrs::default();
            planes(&p, &f, &f)
        };
        // 9×9 luma blocks, 4×4 per chroma plane.
        assert_eq!((hvs.planes[0].blocks, hvs.planes[1].blocks), (81, 16));
        let luma = 81.0 * 64.0 * 255.0 * 255.0 * 1e-3;
        let mut s = Scores::new();
        push_fields(&p, &hvs, &[luma, 0.0, 0.0], &mut s);
        assert!((s.get("psnr-hvs-y").unwrap() - 30.0).abs() < 1e-5);
        assert_eq!(s.get("psnr-hvs-u"), Some(f64::INFINITY));
        // 0.8 · 1e-3 combined.
        let want = -10.0 * (0.8e-3f64).log10();
        assert!((s.get("psnr-hvs").unwrap() - want).abs() < 1e-5);
        let mut s = Scores::new();
        push_fields(&p, &hvs, &[0.0; 3], &mut s);
        assert_eq!(s.get("psnr-hvs"), Some(f64::INFINITY));
    }
}
