//! Distortion maps (issue 48, being built): per pixel, where in the picture a metric finds
//! its differences. An engine built with [`crate::EngineBuilder::map`] adds the map of
//! each pair to its scores ([`crate::Scores::map`]), computed on the host from the pair's
//! planes (the CUDA backend copies them there first: [`metric`]). Each map is defined in
//! docs/METRICS.md ("Distortion maps") and checked against its reference
//! (engine/tests/map_reference.rs, values made by tests/maps/generate.py):
//!
//! - [`squared_error`]: luma `(x − y)²` in the reference's sample units;
//! - [`ssim::map`]: the luma SSIM map whose mean over the pixels at least 5 from every edge
//!   is the `ssim` field, as scikit-image's `structural_similarity(..., full=True)` gives
//!   it (its Gaussian filters reflect at the edges, so the border has values too).
//!
//! [`Stats`] are what buffer meta and alerts will carry: the maximum and where it is, and
//! the share of pixels past a threshold.

pub(crate) mod metric;
pub mod ssim;

use gpumetrics_kernels::channel::{Channel, load, rescale};

use crate::format::ColorFamily;
use crate::frame::PlanePtrs;
use crate::plan::Plan;

/// The maps there are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MapKind {
    /// [`squared_error`].
    SquaredError,
    /// [`ssim::map`].
    Ssim,
    /// libjxl's Butteraugli diffmap (its maximum is the `butteraugli` field), made by the
    /// `butteraugli` metric as it measures the pair.
    Butteraugli,
}

impl MapKind {
    pub const ALL: [MapKind; 3] = [MapKind::SquaredError, MapKind::Ssim, MapKind::Butteraugli];

    /// As users write it (`squared-error`, `ssim`).
    pub fn name(self) -> &'static str {
        match self {
            MapKind::SquaredError => "squared-error",
            MapKind::Ssim => "ssim",
            MapKind::Butteraugli => "butteraugli",
        }
    }

    pub fn from_name(name: &str) -> Option<MapKind> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether larger values are worse (squared error), or smaller (SSIM).
    pub fn worse_above(self) -> bool {
        !matches!(self, MapKind::Ssim)
    }

    /// Whether the map module makes it from the frames ([`of_pair`]); else the metric of
    /// the same name makes it as it measures.
    pub(crate) fn made_from_frames(self) -> bool {
        !matches!(self, MapKind::Butteraugli)
    }
}

/// One channel of a frame as samples, the distorted side's rescaled to the reference's
/// depth (as PSNR compares them).
///
/// # Safety
/// `ptrs` must address planes validated for the plan's layouts.
unsafe fn samples(plan: &Plan, channel: usize, ptrs: &PlanePtrs, reference: bool) -> Vec<u16> {
    let (rc, dc) = &plan.channels[channel];
    let (spec, layout) = if reference {
        (rc, &plan.reference)
    } else {
        (dc, &plan.distorted)
    };
    let (w, h) = layout.channel_size(spec);
    let (from, to) = (layout.format.peak(), plan.reference.format.peak());
    let c: Channel = ptrs.channel(spec, from);
    let mut out = Vec::with_capacity(w as usize * h as usize);
    for y in 0..h {
        let row = (c.ptr + y as u64 * c.pitch as u64) as *const u8;
        for x in 0..w {
            // SAFETY: (x, y) lies inside the channel, which the caller's validation covers.
            out.push(rescale(unsafe { load(row, x, &c) }, from, to) as u16);
        }
    }
    out
}

/// The map `kind` of a pair: of luma for Y'CbCr and gray frames, the mean of the R, G and
/// B channels' maps for RGB ones (as the `ssim` field of RGB is their mean).
///
/// # Safety
/// `r` and `d` must address planes validated for the plan's layouts.
pub(crate) unsafe fn of_pair(
    kind: MapKind,
    plan: &Plan,
    r: &PlanePtrs,
    d: &PlanePtrs,
) -> DistortionMap {
    let channels = match plan.reference.format.family() {
        ColorFamily::Rgb => plan.channels.len(),
        _ => 1,
    };
    let peak = plan.reference.format.peak() as f64;
    let (w, h) = plan.reference.channel_size(&plan.channels[0].0);
    let (w, h) = (w as usize, h as usize);
    let mut sum: Option<DistortionMap> = None;
    for c in 0..channels {
        // SAFETY: the caller's.
        let (a, b) = unsafe { (samples(plan, c, r, true), samples(plan, c, d, false)) };
        let m = match kind {
            MapKind::SquaredError => squared_error(&a, &b, w, h),
            MapKind::Ssim => ssim::map(&a, &b, w, h, peak),
            MapKind::Butteraugli => unreachable!("the butteraugli metric makes its map"),
        };
        sum = Some(match sum {
            None => m,
            Some(mut s) => {
                s.values
                    .iter_mut()
                    .zip(&m.values)
                    .for_each(|(a, b)| *a += b);
                s
            }
        });
    }
    let mut m = sum.expect("a plan has a channel");
    if channels > 1 {
        let n = channels as f32;
        m.values.iter_mut().for_each(|v| *v /= n);
    }
    m
}

/// A map of one pair: one value per luma pixel, row by row.
#[derive(Clone, Debug, PartialEq)]
pub struct DistortionMap {
    pub width: usize,
    pub height: usize,
    pub values: Vec<f32>,
}

/// A map's statistics.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    /// The largest value and its pixel (the first in row order when several are equal).
    pub max: f32,
    pub max_x: usize,
    pub max_y: usize,
    /// The share of pixels whose value is past the threshold (above it, or below it for a
    /// map where lower is worse), 0..1.
    pub area: f64,
}

impl DistortionMap {
    /// The statistics, with pixels counted as past `threshold` when `worse_above` and
    /// above it, or when not and below it (SSIM: lower is worse).
    pub fn stats(&self, threshold: f32, worse_above: bool) -> Stats {
        let mut best = (f32::NEG_INFINITY, 0usize);
        let mut past = 0u64;
        for (i, &v) in self.values.iter().enumerate() {
            if v > best.0 {
                best = (v, i);
            }
            if (worse_above && v > threshold) || (!worse_above && v < threshold) {
                past += 1;
            }
        }
        let w = self.width.max(1);
        Stats {
            max: best.0,
            max_x: best.1 % w,
            max_y: best.1 / w,
            area: if self.values.is_empty() {
                0.0
            } else {
                past as f64 / self.values.len() as f64
            },
        }
    }
}

/// Luma `(x − y)²` of two planes of `width`×`height` samples (the distorted one already on
/// the reference's scale), as f32 (exact below 2^24: any 12-bit difference squared).
pub fn squared_error(
    reference: &[u16],
    distorted: &[u16],
    width: usize,
    height: usize,
) -> DistortionMap {
    assert_eq!(reference.len(), width * height);
    assert_eq!(distorted.len(), width * height);
    let values = reference
        .iter()
        .zip(distorted)
        .map(|(&r, &d)| {
            let e = r as i64 - d as i64;
            (e * e) as f32
        })
        .collect();
    DistortionMap {
        width,
        height,
        values,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squared_error_and_its_stats() {
        let r = [10u16, 20, 30, 40, 50, 60];
        let d = [10u16, 23, 30, 36, 50, 60];
        let m = squared_error(&r, &d, 3, 2);
        assert_eq!(m.values, [0.0, 9.0, 0.0, 16.0, 0.0, 0.0]);
        let s = m.stats(5.0, true);
        assert_eq!((s.max, s.max_x, s.max_y), (16.0, 0, 1));
        assert!((s.area - 2.0 / 6.0).abs() < 1e-12);
        let s = m.stats(1.0, false);
        assert!((s.area - 4.0 / 6.0).abs() < 1e-12);
    }
}
