//! The v1 models' features beyond ADM and motion on the CPU backend: SpEED chroma and
//! CAMBI, and the sizes libvmaf refuses for them (both backends). The CUDA backend runs the
//! same kernel functions as kernels (`speed::SpeedChromaCuda`, `cambi::CambiCuda`).

use super::model::{Feature, Model};
use super::speed::SpeedChroma;
use super::{Frame, speed};
use crate::format::ColorFamily;
use crate::frame::PlanePtrs;
use crate::metric::cambi::{self, CambiCpu, CambiSettings};
use crate::plan::Plan;

/// Why libvmaf would not run `model` on the plan's frames, if it would not: the chroma
/// that SpEED reads, the sizes it and CAMBI accept.
pub(crate) fn why_not(plan: &Plan, model: &Model, cambi: &CambiSettings) -> Option<String> {
    let l = &plan.reference;
    if model.reads(Feature::Cambi)
        && let Some(why) = cambi::why_not(&plan.distorted, cambi)
    {
        return Some(format!("VMAF model {} reads CAMBI: {why}", model.name));
    }
    if model.reads(Feature::SpeedChromaUv) {
        if l.format.family() != ColorFamily::Yuv {
            return Some(format!(
                "VMAF model {} reads the chroma planes (SpEED chroma): {} frames have none \
                 (use a YUV format, e.g. I420)",
                model.name,
                l.format.name()
            ));
        }
        if let Err(why) = speed::check(l.width, l.height, l.format.subsampling(), &model.speed) {
            return Some(format!(
                "VMAF model {} cannot measure {}x{} {} frames: {why}",
                model.name,
                l.width,
                l.height,
                l.format.name()
            ));
        }
    }
    None
}

/// The host-side features a model reads, with their buffers (allocated once per plan).
pub(crate) struct HostFeatures {
    speed: Option<SpeedChroma>,
    /// CAMBI of the distorted frame.
    cambi: Option<CambiCpu>,
}

impl HostFeatures {
    /// `None` when the model reads none of them.
    pub(crate) fn new(
        plan: &Plan,
        model: &Model,
        cambi: &CambiSettings,
    ) -> Result<Option<HostFeatures>, String> {
        let speed = if model.reads(Feature::SpeedChromaUv) {
            Some(SpeedChroma::new(plan, model.speed)?)
        } else {
            None
        };
        let cambi = if model.reads(Feature::Cambi) {
            Some(CambiCpu::new(&plan.distorted, cambi)?)
        } else {
            None
        };
        Ok((speed.is_some() || cambi.is_some()).then_some(HostFeatures { speed, cambi }))
    }

    /// Fills the pair's host-side features from its frames (host planes of the plan's
    /// layouts, validated or downloaded).
    pub(crate) fn measure(&mut self, r: &PlanePtrs, d: &PlanePtrs, f: &mut Frame) {
        if let Some(s) = &mut self.speed {
            f.speed_chroma_uv = s.score(r, d);
        }
        if let Some(c) = &mut self.cambi {
            f.cambi = c.score(d);
        }
    }
}
