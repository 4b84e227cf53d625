//! Maps made from a pair's frames on the host ([`of_pair`]): the planes read as samples
//! on the reference's scale, luma (or each of R, G, B), then the map of [`MapKind`].

use gpumetrics_kernels::channel::{Channel, load, rescale};

use super::kind::{DistortionMap, MapKind, squared_error};
use super::ssim;
use crate::format::ColorFamily;
use crate::frame::PlanePtrs;
use crate::plan::Plan;

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
    let mut out = vec![0u16; w as usize * h as usize];
    // Rows in parallel (a 1080p luma plane is 2 M samples, on the pair's path).
    use rayon::prelude::*;
    out.par_chunks_mut(w.max(1) as usize)
        .enumerate()
        .for_each(|(y, out)| {
            let row = (c.ptr + y as u64 * c.pitch as u64) as *const u8;
            for (x, o) in out.iter_mut().enumerate() {
                // SAFETY: (x, y) lies inside the channel, which the caller's validation
                // covers.
                *o = rescale(unsafe { load(row, x as u32, &c) }, from, to) as u16;
            }
        });
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
            MapKind::Butteraugli | MapKind::Cvvdp | MapKind::Ssimulacra2 => {
                unreachable!("the metric of the same name makes its map")
            }
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
