// SPDX-License-Identifier: MPL-2.0
//! `align=auto` in the element: each frame's thumbnail as it arrives, for the engine's
//! [`Aligner`], which says which frames pair ([`gpumetrics_engine::align`]). The element
//! carries out its steps (`imp.rs`: `align_step`).
//!
//! Thumbnails are made where the frame is: on the GPU from CUDA memory when the backend
//! runs there (a few kilobytes come back), else from the mapped frame on the CPU.

use gpumetrics_engine::Frame;
use gpumetrics_engine::align::{self, Thumbnail};

use super::input::{self, MemoryStats, PadCaps};

pub(crate) use gpumetrics_engine::align::{Aligner, Incoming, Step};

/// The thumbnail of `buffer`, a frame of `caps` on pad `pad` (mapped for the CPU).
pub(crate) fn thumbnail(
    buffer: &gst::Buffer,
    caps: &PadCaps,
    pad: &str,
    log: &impl gst::glib::prelude::IsA<gst::Object>,
) -> Result<Thumbnail, String> {
    // The frames measured are counted when they are measured, not here.
    let mut uncounted = MemoryStats::default();
    let mapped = input::map_input(buffer, caps, false, pad, &mut uncounted, log)?;
    match input::frame(&mapped, caps, pad)? {
        Frame::Host(h) => align::of_host(&h, &caps.measured()).map_err(|e| format!("{pad}: {e}")),
        Frame::Device(_) => Err(format!(
            "{pad}: a device frame where a host frame was mapped"
        )),
    }
}
