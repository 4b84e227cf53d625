// SPDX-License-Identifier: MPL-2.0
//! `align=auto` in the element: each frame's thumbnail as it arrives, for the engine's
//! [`Aligner`], which says which frames pair ([`gpumetrics_engine::align`]). The element
//! carries out its steps (`imp.rs`: `align_step`).
//!
//! Thumbnails are made where the frame is: on the GPU, in the context of its memory, from
//! CUDA memory when the backend may use CUDA (4.6 KB of cell sums come back, the frame stays
//! on the device), else from the frame mapped for the CPU.

use gpumetrics_engine::Frame;
use gpumetrics_engine::align::cuda::Thumbnailer;
use gpumetrics_engine::align::{self, Thumbnail};

use super::input::{self, MemoryStats, PadCaps};
use crate::gstcuda;

pub(crate) use gpumetrics_engine::align::{Aligner, Incoming, Step};

/// Makes the thumbnails of a run: the GPU's thumbnailer is made at the first CUDA frame
/// (again when the frames' context changes).
#[derive(Default)]
pub(crate) struct Thumbnails {
    gpu: Option<Thumbnailer>,
}

impl Thumbnails {
    /// The thumbnail of `buffer`, a frame of `caps` on pad `pad`: on the GPU when it is
    /// CUDA memory of a known context and `device` (the backend may run on CUDA).
    pub(crate) fn of(
        &mut self,
        buffer: &gst::Buffer,
        caps: &PadCaps,
        pad: &str,
        device: bool,
        log: &impl gst::glib::prelude::IsA<gst::Object>,
    ) -> Result<Thumbnail, String> {
        let named = |e: gpumetrics_engine::EngineError| format!("{pad}: {e}");
        let context = match gstcuda::api() {
            Ok(api) if device && buffer.n_memory() == 1 && gstcuda::is_cuda_buffer(buffer) => {
                gstcuda::Context::of_memory(api, buffer.peek_memory(0)).map(|c| (api, c))
            }
            _ => None,
        };
        // The frames measured are counted when they are measured, not here.
        let mut uncounted = MemoryStats::default();
        let mapped = input::map_input(buffer, caps, context.is_some(), pad, &mut uncounted, log)?;
        match input::frame(&mapped, caps, pad)? {
            Frame::Host(h) => align::of_host(&h, &caps.measured()).map_err(named),
            Frame::Device(d) => {
                let (api, ctx) = context.ok_or_else(|| format!("{pad}: no CUDA context"))?;
                if self
                    .gpu
                    .as_ref()
                    .is_none_or(|t| t.context_handle() != ctx.handle(api))
                {
                    // SAFETY: the handle stays valid while the context object lives, and
                    // the thumbnailer keeps a reference to it.
                    let ext = unsafe {
                        gpumetrics_engine::cuda::ExternalContext::new(
                            ctx.handle(api),
                            ctx.device_id(),
                            Box::new(ctx.clone().into_object()),
                        )
                    };
                    self.gpu = Some(Thumbnailer::new(ext).map_err(named)?);
                }
                let gpu = self.gpu.as_mut().expect("made above");
                gpu.of(&d, &caps.measured()).map_err(named)
            }
        }
    }
}
