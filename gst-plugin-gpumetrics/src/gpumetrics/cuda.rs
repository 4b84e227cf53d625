// SPDX-License-Identifier: MPL-2.0
//! The CUDA context the element shares with its neighbours (`gst.cuda.context`): found
//! (downstream, upstream, then the application) or created when the element goes to READY
//! ([`SharedContext::ensure`]), offered to whoever asks ([`SharedContext::answer`]), and
//! the context the inputs' CUDA memory actually lives in ([`memory_context`]), which the
//! engine moves to when upstream decided on another one.
//!
//! Everything here needs libgstcuda ([`crate::gstcuda`]); without it the element works on
//! system memory and these do nothing.

use std::sync::Mutex;

use gst::prelude::*;

use super::CAT;
use crate::gstcuda;

/// The GstCudaContext shared with the neighbours. Never locked while the element's state
/// is waited for.
#[derive(Default)]
pub(crate) struct SharedContext {
    slot: Mutex<Option<gstcuda::Context>>,
    /// The device the element runs on, once [`SharedContext::ensure`] knows it: a context
    /// of another device is not taken (several GPUs: the pipeline's contexts may be
    /// another element's, on another device).
    device: Mutex<Option<u32>>,
}

impl SharedContext {
    pub(crate) fn get(&self) -> Option<gstcuda::Context> {
        self.slot.lock().unwrap().clone()
    }

    fn is_set(&self) -> bool {
        self.slot.lock().unwrap().is_some()
    }

    /// Forgets the context (the element goes to NULL).
    pub(crate) fn clear(&self) {
        *self.slot.lock().unwrap() = None;
        *self.device.lock().unwrap() = None;
    }

    /// A context set on the element (`set_context`): taken when it is a
    /// `gst.cuda.context` and the element has none yet.
    pub(crate) fn offer(&self, element: &gst::Element, context: &gst::Context) {
        if context.context_type() != gstcuda::CONTEXT_TYPE {
            return;
        }
        let Ok(api) = gstcuda::api() else {
            return;
        };
        let want = *self.device.lock().unwrap();
        let mut slot = self.slot.lock().unwrap();
        if slot.is_none() {
            let offered = gstcuda::Context::from_gst_context(api, element.upcast_ref(), context);
            if let (Some(c), Some(want)) = (&offered, want)
                && c.device_id() != want
            {
                gst::debug!(
                    CAT,
                    obj = element,
                    "not taking a CUDA context of device {}: the element runs on device {want}",
                    c.device_id()
                );
                return;
            }
            *slot = offered;
            if let Some(c) = slot.as_ref() {
                gst::debug!(
                    CAT,
                    obj = element,
                    "got CUDA context of device {}",
                    c.device_id()
                );
            }
        }
    }

    /// Finds the GstCudaContext of the neighbours on `device_id` (a context query on each of
    /// `pads`' peers, then the application via need-context) or creates one on it and
    /// announces it (have-context), so that NVDEC decoders feeding the element decode into
    /// the context its kernels run in and two instances on one GPU share it. Does nothing
    /// when the element has one, or without libgstcuda.
    pub(crate) fn ensure(&self, element: &gst::Element, pads: &[gst::Pad], device_id: u32) {
        if self.is_set() {
            return;
        }
        *self.device.lock().unwrap() = Some(device_id);
        let api = match gstcuda::api() {
            Ok(api) => api,
            Err(why) => {
                gst::info!(
                    CAT,
                    obj = element,
                    "no GstCuda ({why}): CUDA memory cannot be shared"
                );
                return;
            }
        };
        // set_context (our offer) fills the slot: it is not held across these calls.
        for pad in pads {
            let mut q = gst::query::Context::new(gstcuda::CONTEXT_TYPE);
            if pad.peer_query(&mut q)
                && let Some(c) = q.context_owned()
            {
                element.set_context(&c);
                if self.is_set() {
                    gst::debug!(CAT, obj = pad, "using the CUDA context of this pad's peer");
                    return;
                }
            }
        }
        let msg = gst::message::NeedContext::builder(gstcuda::CONTEXT_TYPE)
            .src(element)
            .build();
        let _ = element.post_message(msg);
        if self.is_set() {
            return;
        }
        let Some(ctx) = gstcuda::Context::new(api, device_id) else {
            gst::info!(
                CAT,
                obj = element,
                "cannot create a CUDA context on device {device_id}"
            );
            return;
        };
        gst::info!(
            CAT,
            obj = element,
            "created a CUDA context on device {device_id}"
        );
        *self.slot.lock().unwrap() = Some(ctx.clone());
        if let Some(c) = ctx.to_gst_context(api) {
            element.set_context(&c);
            let msg = gst::message::HaveContext::builder(c).src(element).build();
            let _ = element.post_message(msg);
        }
    }

    /// Answers a `gst.cuda.context` query with the shared context; `false` for any other
    /// query or without one.
    pub(crate) fn answer(&self, element: &gst::Element, query: &mut gst::QueryRef) -> bool {
        let gst::QueryView::Context(q) = query.view() else {
            return false;
        };
        if q.context_type() != gstcuda::CONTEXT_TYPE {
            return false;
        }
        let Ok(api) = gstcuda::api() else {
            return false;
        };
        self.get()
            .is_some_and(|c| c.answer_query(api, element.upcast_ref(), query))
    }
}

/// The CUDA context the inputs' memory lives in: `None` when neither input is CUDA memory
/// of a known context (or without libgstcuda); an error when they live in two.
pub(crate) fn memory_context(
    reference: &gst::BufferRef,
    distorted: &gst::BufferRef,
) -> Result<Option<gstcuda::Context>, gst::ErrorMessage> {
    let Ok(api) = gstcuda::api() else {
        return Ok(None);
    };
    let of = |b: &gst::BufferRef| {
        (b.n_memory() == 1)
            .then(|| gstcuda::Context::of_memory(api, b.peek_memory(0)))
            .flatten()
    };
    let (r, d) = (of(reference), of(distorted));
    if let (Some(r), Some(d)) = (&r, &d)
        && r.handle(api) != d.handle(api)
    {
        return Err(gst::error_msg!(
            gst::StreamError::Failed,
            (
                "ref_sink and dist_sink carry CUDA memory of different CUDA contexts (devices {} \
                 and {}); decode both on one GPU (one context is shared when both decoders are \
                 on the same device) or insert `cudadownload` before one pad",
                r.device_id(),
                d.device_id()
            )
        ));
    }
    Ok(r.or(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// System memory has no CUDA context, and a context query of another type is not
    /// answered (with or without libgstcuda).
    #[test]
    fn system_memory_and_other_queries() {
        gst::init().unwrap();
        let b = gst::Buffer::with_size(16).unwrap();
        assert!(memory_context(&b, &b).unwrap().is_none());
        let shared = SharedContext::default();
        let element = gst::Bin::new().upcast::<gst::Element>();
        let mut q = gst::query::Context::new("gst.other.context");
        assert!(!shared.answer(&element, q.query_mut()));
        let mut q = gst::query::Context::new(gstcuda::CONTEXT_TYPE);
        assert!(!shared.answer(&element, q.query_mut()), "no context yet");
        let other = gst::Context::new("gst.other.context", true);
        shared.offer(&element, &other);
        assert!(shared.get().is_none());
    }
}
