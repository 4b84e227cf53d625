//! ColorVideoVDP on the CPU: the engine's frames read as the reference reads video (display-
//! encoded RGB from Y'CbCr by the input's matrix and range, chroma upsampled bilinearly;
//! RGB and gray as they are), then [`Model`] pair after pair.

use super::model::{DklFrame, Model};
use super::yuv::{self, Ycbcr};
use crate::color::{Colorimetry, Matrix, Range};
use crate::format::{ChannelSpec, ColorFamily, FrameLayout};
use crate::frame::PlanePtrs;
use crate::metric::CpuMetric;
use crate::plan::Plan;
use crate::scores::{PoolTerms, Scores};
use gpumetrics_kernels::channel::{Channel, load};

pub(super) struct CvvdpCpu {
    display: String,
    fps: f64,
    model: Model,
}

impl CvvdpCpu {
    pub(super) fn new(plan: &Plan, display: &str) -> Result<CvvdpCpu, String> {
        let fps = plan.frame_rate.unwrap_or(super::DEFAULT_FPS);
        Ok(CvvdpCpu {
            display: display.to_string(),
            fps,
            model: model(plan, display, fps)?,
        })
    }
}

fn model(plan: &Plan, display: &str, fps: f64) -> Result<Model, String> {
    let (w, h) = (plan.reference.width, plan.reference.height);
    Model::new(display, w as usize, h as usize, fps)
}

/// One side's frame as display-encoded RGB, row by row.
///
/// # Safety
/// `ptrs` must address planes valid for `layout` (the backend validated them).
unsafe fn display_rgb(
    layout: &FrameLayout,
    colorimetry: &Colorimetry,
    specs: &[&ChannelSpec],
    ptrs: &PlanePtrs,
) -> Vec<[f32; 3]> {
    let peak = layout.format.peak();
    let (w, h) = (layout.width as usize, layout.height as usize);
    let channel = |c: &ChannelSpec| -> (Channel, usize, usize) {
        let (cw, ch) = layout.channel_size(c);
        (ptrs.channel(c, peak), cw as usize, ch as usize)
    };
    // SAFETY (of the closures' reads): (x, y) stays inside the channel's size, which the
    // caller's validation covers.
    let at = |c: &Channel| {
        let c = *c;
        move |x: usize, y: usize| unsafe {
            load(
                (c.ptr as usize + y * c.pitch as usize) as *const u8,
                x as u32,
                &c,
            )
        }
    };
    match layout.format.family() {
        ColorFamily::Yuv => {
            let (y, _, _) = channel(specs[0]);
            let (cb, cw, ch) = channel(specs[1]);
            let (cr, _, _) = channel(specs[2]);
            let matrix = match colorimetry.matrix {
                Matrix::Bt709 => yuv::BT709,
                Matrix::Bt2020 => yuv::BT2020,
                Matrix::Bt601 => yuv::BT601,
                Matrix::Fcc => yuv::matrix(0.30, 0.11),
                Matrix::Smpte240m => yuv::matrix(0.212, 0.087),
            };
            let conversion = Ycbcr {
                bits: layout.format.depth(),
                full_range: colorimetry.range == Range::Full,
                matrix,
                sub_x: 1 << specs[1].sub_x,
                sub_y: 1 << specs[1].sub_y,
                chroma_width: cw,
                chroma_height: ch,
            };
            conversion.rgb(w, h, at(&y), at(&cb), at(&cr))
        }
        ColorFamily::Rgb | ColorFamily::Gray => {
            let scale = 1.0 / peak as f32;
            let channels: Vec<Channel> = specs.iter().map(|c| channel(c).0).collect();
            // RGB in the format's order of r, g, b; gray is the same sample three times.
            let order: [usize; 3] = if channels.len() == 1 {
                [0, 0, 0]
            } else {
                ["r", "g", "b"].map(|n| specs.iter().position(|c| c.name == n).unwrap_or(0))
            };
            let readers: Vec<_> = channels.iter().map(at).collect();
            (0..w * h)
                .map(|i| order.map(|k| readers[k](i % w, i / w) as f32 * scale))
                .collect()
        }
    }
}

/// No pairs held back; the temporal channels keep the frames before, from the start of
/// the sequence.
impl crate::metric::temporal::Sequenced for CvvdpCpu {
    fn finish(&mut self, plan: &Plan, _late: &mut [Scores]) {
        self.reset_for(plan);
    }

    fn reset(&mut self) {
        self.model.restart();
    }
}

impl CvvdpCpu {
    fn reset_for(&mut self, plan: &Plan) {
        match model(plan, &self.display, self.fps) {
            Ok(m) => self.model = m,
            Err(_) => self.model.restart(),
        }
    }

    fn dkl(&self, plan: &Plan, side: usize, ptrs: &PlanePtrs) -> DklFrame {
        let layout = if side == 0 {
            &plan.reference
        } else {
            &plan.distorted
        };
        let specs: Vec<&ChannelSpec> = plan
            .channels
            .iter()
            .map(|(r, d)| if side == 0 { r } else { d })
            .collect();
        // SAFETY: the backend validated both frames against the plan's layouts.
        let rgb = unsafe { display_rgb(layout, &plan.colorimetry[side], &specs, ptrs) };
        self.model.dkl(&rgb)
    }
}

impl CpuMetric for CvvdpCpu {
    fn measure(&mut self, plan: &Plan, r: &PlanePtrs, d: &PlanePtrs, scores: &mut Scores) {
        let (test, reference) = (self.dkl(plan, 1, d), self.dkl(plan, 0, r));
        let step = self.model.push(test, reference);
        scores.push(super::FIELD, step.jod as f64);
        scores.push_pool_terms(
            super::FIELD,
            PoolTerms::Cvvdp {
                sum: step.term,
                frames: 1,
                image: step.image.map_or(f64::NAN, f64::from),
            },
        );
    }
}
