// SPDX-License-Identifier: MPL-2.0
//! The in-process feed ([`crate::GpuMetrics::subscribe`]): every record the element posts
//! or writes, handed as an [`Output`] value to the subscribers of the element, at the points
//! where the bus sink posts it and just before it does (so that a subscriber that also
//! watches the bus has a record before the messages that follow it).
//!
//! The subscribers are kept on the element (object data), and read when the element
//! starts: a subscription made before it starts receives all of the run.

use std::sync::{Arc, Mutex};

use gst::glib;
use gst::prelude::*;

use super::{Env, Pair, Sink};
use crate::gpumetrics::Output;
use crate::message::{AlertChange, AlignRecord, EventRecord, Summary, Window};

/// A subscriber: takes each output, in order; `false` ends its subscription.
pub(crate) type Subscriber = Box<dyn FnMut(&Output) -> bool + Send>;

/// The subscribers of one element.
#[derive(Default)]
pub(crate) struct Subscribers(Mutex<Vec<Subscriber>>);

impl Subscribers {
    /// Hands `output` to every subscriber, in the order they subscribed; drops those that
    /// ended their subscription.
    fn deliver(&self, output: Output) {
        let mut list = self.0.lock().unwrap_or_else(|e| e.into_inner());
        list.retain_mut(|s| s(&output));
    }
}

/// The object data key of an element's subscribers (an `Arc<Subscribers>`, only ever).
fn key() -> glib::Quark {
    glib::Quark::from_str("gpumetrics-record-feed")
}

/// Makes the subscribers of two threads that subscribe at once the same list.
static ATTACH: Mutex<()> = Mutex::new(());

/// The subscribers of `element`, if any was added.
pub(crate) fn subscribers(element: &gst::Element) -> Option<Arc<Subscribers>> {
    let _attach = ATTACH.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: this module alone uses the key, always with an `Arc<Subscribers>`.
    unsafe {
        element
            .qdata::<Arc<Subscribers>>(key())
            .map(|p| p.as_ref().clone())
    }
}

/// Adds `subscriber` to `element`'s.
pub(crate) fn subscribe(element: &gst::Element, subscriber: Subscriber) {
    let list = {
        let _attach = ATTACH.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: as in `subscribers`; the list lives as long as the element (or the feed
        // of its run, which holds it too).
        unsafe {
            match element.qdata::<Arc<Subscribers>>(key()) {
                Some(p) => p.as_ref().clone(),
                None => {
                    let list = Arc::new(Subscribers::default());
                    element.set_qdata(key(), list.clone());
                    list
                }
            }
        }
    };
    list.0
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(subscriber);
}

/// The sink that hands the outputs to the subscribers.
pub(crate) struct Feed(pub(crate) Arc<Subscribers>);

impl Sink for Feed {
    /// Every pair's record, with or without `post-messages` (a subscriber asked for them).
    fn record(&mut self, _: &Env<'_>, pair: &mut Pair<'_>) -> Result<(), gst::ErrorMessage> {
        self.0.deliver(Output::Frame(pair.record.clone()));
        if let Some(map) = pair.scores.map() {
            // The values come to the host here (a map in device memory): a subscriber
            // reads them after the pair has left, when the engine may be gone.
            let values = map.values().map_err(|e| {
                gst::error_msg!(
                    gst::CoreError::Failed,
                    ("reading the {} map: {e}", map.kind().name())
                )
            })?;
            self.0.deliver(Output::Map(crate::gpumetrics::MapRecord {
                frame: pair.record.frame,
                kind: map.kind(),
                map: values,
            }));
        }
        Ok(())
    }

    fn window(&mut self, _: &Env<'_>, window: &Window) -> Result<(), gst::ErrorMessage> {
        self.0.deliver(Output::Window(window.clone()));
        Ok(())
    }

    fn event(&mut self, _: &Env<'_>, event: &EventRecord) -> Result<(), gst::ErrorMessage> {
        self.0.deliver(Output::Event(event.clone()));
        Ok(())
    }

    fn align(&mut self, _: &Env<'_>, a: &AlignRecord) -> Result<(), gst::ErrorMessage> {
        self.0.deliver(Output::Align(a.clone()));
        Ok(())
    }

    fn alert(&mut self, _: &Env<'_>, change: &AlertChange) -> Result<(), gst::ErrorMessage> {
        self.0.deliver(Output::Alert(change.clone()));
        Ok(())
    }

    fn summary(&mut self, _: &Env<'_>, summary: &Summary) -> Result<(), gst::ErrorMessage> {
        self.0.deliver(Output::Summary(summary.clone()));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::super::tests::pair_of;
    use super::*;
    use crate::gpumetrics::settings::Settings;

    /// Every subscriber gets every output, in order; one whose receiver is gone is dropped
    /// without disturbing the others.
    #[test]
    fn every_subscriber_gets_everything_in_order() {
        gst::init().unwrap();
        let element = gst::Bin::new().upcast::<gst::Element>();
        assert!(subscribers(&element).is_none());
        let (tx_a, rx_a) = mpsc::channel();
        let (tx_b, rx_b) = mpsc::channel();
        subscribe(&element, Box::new(move |o| tx_a.send(o.clone()).is_ok()));
        subscribe(&element, Box::new(move |o| tx_b.send(o.clone()).is_ok()));
        let list = subscribers(&element).unwrap();
        assert_eq!(list.0.lock().unwrap().len(), 2);
        let mut feed = Feed(list.clone());
        let settings = Settings::default();
        let env = Env {
            element: &element,
            settings: &settings,
        };
        let (record, scores, mut buffer) = pair_of(3, 31.0);
        let mut pair = Pair {
            record: &record,
            scores: &scores,
            buffer: &mut buffer,
            arrived: std::time::Instant::now(),
        };
        feed.record(&env, &mut pair).unwrap();
        drop(rx_b);
        let window = Window {
            start: 0,
            end: 1,
            stats: Summary::default(),
        };
        feed.window(&env, &window).unwrap();
        assert_eq!(list.0.lock().unwrap().len(), 1, "b's receiver is gone");
        feed.summary(&env, &Summary::default()).unwrap();
        let got: Vec<Output> = rx_a.try_iter().collect();
        assert_eq!(
            got,
            [
                Output::Frame(record),
                Output::Window(window),
                Output::Summary(Summary::default())
            ]
        );
    }
}
