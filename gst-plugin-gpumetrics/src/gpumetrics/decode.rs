// SPDX-License-Identifier: MPL-2.0
//! What the decoders upstream of each input report: a frame decoded with errors is still
//! scored (the score then measures the decoder's concealment too), and the summary says how
//! often it happened, per input, instead of nothing.
//!
//! Two signs are counted. Warning messages: a decoder that tolerates an error posts a
//! warning on the bus, which an element does not see; the element follows the pipeline's
//! bus through its `sync-message::warning` signal (emitted in the posting thread, whatever
//! the application does with the bus) from its start to its stop, and counts a warning when
//! its source is a decoder (klass `Decoder`) found upstream of `ref_sink` or `dist_sink`
//! (through bins' ghost pads). Corrupted frames: a decoder that outputs a frame it could not
//! decode cleanly flags it `GST_BUFFER_FLAG_CORRUPTED`; the element counts those as they
//! arrive ([`Decode::frame`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use gst::glib;
use gst::prelude::*;

use super::CAT;
use super::outputs::Input;
use crate::message::DecodeCounts;

/// Pads visited at most when looking upstream for a warning's source (a pipeline with a
/// loop, or thousands of elements, must not make a warning expensive).
const MAX_VISITED: usize = 512;

#[derive(Default)]
struct Counts {
    warnings: [AtomicU64; 2],
    corrupted: [AtomicU64; 2],
}

/// The counts of a run and the bus followed for them.
#[derive(Default)]
pub(crate) struct Decode {
    counts: Arc<Counts>,
    watch: Mutex<Option<(gst::Bus, glib::SignalHandlerId)>>,
}

impl Decode {
    /// From the element's start: counts from zero, and follows the warnings posted on the
    /// bus of the pipeline `element` is in (none outside a pipeline).
    pub(crate) fn start(&self, element: &gst::Element, pads: [&gst::Pad; 2]) {
        self.stop();
        for c in self.counts.warnings.iter().chain(&self.counts.corrupted) {
            c.store(0, Ordering::Relaxed);
        }
        let mut top = element.clone().upcast::<gst::Object>();
        while let Some(parent) = top.parent() {
            top = parent;
        }
        let Some(bus) = top.downcast_ref::<gst::Element>().and_then(|e| e.bus()) else {
            return;
        };
        let counts = self.counts.clone();
        let pads = pads.map(|p| p.downgrade());
        bus.enable_sync_message_emission();
        let id = bus.connect_sync_message(Some("warning"), move |_, msg| {
            let Some(decoder) = msg
                .src()
                .and_then(|s| s.downcast_ref::<gst::Element>())
                .filter(|e| is_decoder(e))
            else {
                return;
            };
            for (i, pad) in pads.iter().enumerate() {
                if let Some(pad) = pad.upgrade()
                    && is_upstream(&pad, decoder)
                {
                    counts.warnings[i].fetch_add(1, Ordering::Relaxed);
                    gst::debug!(
                        CAT,
                        obj = pad,
                        "decoder {} upstream posted a warning",
                        decoder.name()
                    );
                }
            }
        });
        *self.watch.lock().unwrap() = Some((bus, id));
    }

    /// At the element's stop: the bus is no longer followed (the counts stay readable).
    pub(crate) fn stop(&self) {
        if let Some((bus, id)) = self.watch.lock().unwrap().take() {
            bus.disconnect(id);
            bus.disable_sync_message_emission();
        }
    }

    /// A frame arriving on `side`: counted when its decoder flagged it corrupted.
    pub(crate) fn frame(&self, side: Input, buffer: &gst::BufferRef) {
        if buffer.flags().contains(gst::BufferFlags::CORRUPTED) {
            self.counts.corrupted[side as usize].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The counts so far.
    pub(crate) fn counts(&self) -> DecodeCounts {
        let load = |c: &[AtomicU64; 2]| c.each_ref().map(|a| a.load(Ordering::Relaxed));
        DecodeCounts {
            warnings: load(&self.counts.warnings),
            corrupted: load(&self.counts.corrupted),
        }
    }
}

impl Drop for Decode {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A decoder, by its element class (`Codec/Decoder/Video`, `Decoder/Video`, ...).
/// (Read from the element's class, not its factory: an element of a type registered in the
/// application has no factory, or one that is not a `GstElementFactory` to the bindings.)
fn is_decoder(element: &gst::Element) -> bool {
    element
        .element_class()
        .metadata(gst::ELEMENT_METADATA_KLASS)
        .is_some_and(|k| k.split('/').any(|part| part == "Decoder"))
}

/// Whether `target` feeds `sink` (a sink pad), through any elements and bins between.
fn is_upstream(sink: &gst::Pad, target: &gst::Element) -> bool {
    let mut todo = vec![sink.clone()];
    let mut visited = 0;
    while let Some(pad) = todo.pop() {
        visited += 1;
        if visited > MAX_VISITED {
            return false;
        }
        let Some(mut src) = pad.peer() else {
            continue;
        };
        // A bin's ghost source pad: the pad inside that it stands for.
        while let Some(inner) = src.downcast_ref::<gst::GhostPad>().and_then(|g| g.target()) {
            src = inner;
        }
        if let Some(element) = src.parent_element() {
            if &element == target {
                return true;
            }
            todo.extend(element.sink_pads());
        } else if let Some(ghost) = src
            .parent()
            .and_then(|p| p.downcast::<gst::GhostPad>().ok())
        {
            // The inside of a bin's ghost sink pad: continue outside the bin.
            todo.push(ghost.upcast());
        }
    }
    false
}
