//! ColorVideoVDP on the CPU: the engine's frames read as the reference reads video (display-
//! encoded RGB from Y'CbCr by the input's matrix and range, chroma upsampled bilinearly;
//! RGB and gray as they are, by the kernels' [`display_rgb`](cvvdp::display_rgb)), then
//! [`Model`] pair after pair.

use super::model::{DklFrame, Model};
use super::yuv::{self, Ycbcr};
use crate::color::{Colorimetry, Matrix, Range};
use crate::format::{ChannelSpec, ColorFamily, FrameLayout};
use crate::frame::PlanePtrs;
use crate::map::{DistortionMap, MapKind};
use crate::metric::CpuMetric;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::cvvdp::{self, Source};

pub(super) struct CvvdpCpu {
    display: String,
    fps: f64,
    model: Model,
    /// The windows' second instance ([`super::Shadowing`]), made at the first window that
    /// needs it and restarted at the next ones.
    shadow: Option<Model>,
    shadowing: super::Shadowing,
}

impl CvvdpCpu {
    pub(super) fn new(plan: &Plan, display: &str) -> Result<CvvdpCpu, String> {
        let fps = plan.frame_rate.unwrap_or(super::DEFAULT_FPS);
        Ok(CvvdpCpu {
            display: display.to_string(),
            fps,
            model: model_at(plan, display, fps)?,
            shadow: None,
            shadowing: super::Shadowing::default(),
        })
    }
}

fn model_at(plan: &Plan, display: &str, fps: f64) -> Result<Model, String> {
    let (w, h) = (plan.reference.width, plan.reference.height);
    Model::new(display, w as usize, h as usize, fps)
}

/// The model of `plan`'s frames on display `display` at the plan's frame rate (30 fps
/// when it declares none).
pub(super) fn model(plan: &Plan, display: &str) -> Result<Model, String> {
    model_at(plan, display, plan.frame_rate.unwrap_or(super::DEFAULT_FPS))
}

/// How the kernels read one side's frame as display-encoded RGB: Y'CbCr by the input's
/// matrix and range, chroma upsampled bilinearly; RGB and gray as they are (`ptrs` host or
/// device addresses).
pub(super) fn source(
    layout: &FrameLayout,
    colorimetry: &Colorimetry,
    specs: &[&ChannelSpec],
    ptrs: &PlanePtrs,
) -> Source {
    let peak = layout.format.peak();
    let (w, h) = (layout.width as usize, layout.height as usize);
    let channel = |c: &ChannelSpec| ptrs.channel(c, peak);
    match layout.format.family() {
        ColorFamily::Yuv => {
            let (cw, ch) = layout.channel_size(specs[1]);
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
                chroma_width: cw as usize,
                chroma_height: ch as usize,
            };
            conversion.source(w, h, [0, 1, 2].map(|i| channel(specs[i])))
        }
        ColorFamily::Rgb | ColorFamily::Gray => {
            // RGB in the format's order of r, g, b; gray is the same sample three times.
            let order: [usize; 3] = if specs.len() == 1 {
                [0, 0, 0]
            } else {
                ["r", "g", "b"].map(|n| specs.iter().position(|c| c.name == n).unwrap_or(0))
            };
            Source {
                c: order.map(|k| channel(specs[k])),
                width: w as u32,
                height: h as u32,
                family: cvvdp::FAMILY_RGB,
                sub_x: 1,
                sub_y: 1,
                chroma_width: w as u32,
                chroma_height: h as u32,
                y_scale: 1.0 / peak as f32,
                ..Source::default()
            }
        }
    }
}

/// No pairs held back; the temporal channels keep the frames before, from the start of
/// the sequence.
impl crate::metric::temporal::Sequenced for CvvdpCpu {
    fn finish(&mut self, plan: &Plan, _late: &mut [Scores]) {
        self.reset_for(plan);
        self.shadowing.clear();
    }

    fn reset(&mut self) {
        self.model.restart();
        self.shadowing.clear();
    }

    fn window_start(&mut self) {
        self.shadowing.start();
    }
}

impl CvvdpCpu {
    fn reset_for(&mut self, plan: &Plan) {
        match model_at(plan, &self.display, self.fps) {
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
        let source = source(layout, &plan.colorimetry[side], &specs, ptrs);
        // SAFETY: the backend validated both frames against the plan's layouts.
        let rgb = unsafe { yuv::rgb(&source) };
        self.model.dkl(&rgb)
    }
}

impl CpuMetric for CvvdpCpu {
    fn measure(&mut self, plan: &Plan, r: &PlanePtrs, d: &PlanePtrs, scores: &mut Scores) {
        let (test, reference) = (self.dkl(plan, 1, d), self.dkl(plan, 0, r));
        let taps = self.model.taps()[0].len();
        let window = match self.shadowing.next(self.model.is_fresh(), taps) {
            Some(restart) => {
                if restart {
                    match &mut self.shadow {
                        Some(m) => m.restart(),
                        None => self.shadow = model_at(plan, &self.display, self.fps).ok(),
                    }
                }
                self.shadow
                    .as_mut()
                    .map(|m| m.push(test.clone(), reference.clone()))
            }
            None => None,
        };
        let map = plan.map == Some(MapKind::Cvvdp);
        let (step, heat) = self.model.push_with_map(test, reference, map);
        if let Some(values) = heat {
            let (width, height) = (
                plan.reference.width as usize,
                plan.reference.height as usize,
            );
            let map = DistortionMap {
                width,
                height,
                values,
            };
            scores.set_map(crate::map::PairMap::on_host(MapKind::Cvvdp, map));
        }
        super::push(&step, scores);
        if let Some(w) = window {
            super::push_window(&w, scores);
        }
    }
}
