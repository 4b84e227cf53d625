// SPDX-License-Identifier: MPL-2.0
//! The element's subscription ([`GpuMetrics::subscribe`]): the same records as its bus
//! messages (frames, windows, events, alert changes, the summary), in the same order, each
//! in the channel before the messages after it; for each of several elements; at EOS.

mod common;

use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};

use gst::prelude::*;
use gstgpumetrics::message::{AlertChange, EventRecord, FrameScores, Summary, Window};
use gstgpumetrics::{GpuMetrics, Output};

use common::{init, test_backend};

/// The record a bus message of the element carries, as the subscription gives it.
fn output_of(msg: &gst::MessageRef) -> Option<Output> {
    FrameScores::from_message(msg)
        .map(Output::Frame)
        .or_else(|| Window::from_message(msg).map(Output::Window))
        .or_else(|| EventRecord::from_message(msg).map(Output::Event))
        .or_else(|| AlertChange::from_message(msg).map(Output::Alert))
        .or_else(|| Summary::from_message(msg).map(Output::Summary))
}

/// What one element's subscription and bus gave.
#[derive(Debug, Default)]
struct Seen {
    fed: Vec<Output>,
    posted: Vec<Output>,
    /// Messages posted before the subscription had their record.
    early: Vec<Output>,
}

/// Runs `desc` to EOS with the elements named in `names` subscribed before it starts:
/// per element, what its subscription delivered and what it posted. A bus sync handler
/// (called where the message is posted) checks that the subscription had each record
/// already.
fn run(desc: &str, names: &[&str]) -> Vec<Seen> {
    init();
    let desc = desc.replace("backend=cpu", &format!("backend={}", test_backend()));
    let pipeline = gst::parse::launch(&desc)
        .unwrap_or_else(|e| panic!("parse {desc}: {e}"))
        .downcast::<gst::Pipeline>()
        .unwrap();
    let elements: Vec<GpuMetrics> = names
        .iter()
        .map(|n| {
            pipeline
                .by_name(n)
                .unwrap()
                .downcast::<GpuMetrics>()
                .unwrap()
        })
        .collect();
    let feeds: Arc<Vec<Mutex<Receiver<Output>>>> =
        Arc::new(elements.iter().map(|e| Mutex::new(e.subscribe())).collect());
    let seen: Arc<Mutex<Vec<Seen>>> =
        Arc::new(Mutex::new(names.iter().map(|_| Seen::default()).collect()));
    let bus = pipeline.bus().unwrap();
    {
        let (feeds, seen) = (feeds.clone(), seen.clone());
        let elements = elements.clone();
        bus.set_sync_handler(move |_, msg| {
            let which = elements
                .iter()
                .position(|e| msg.src() == Some(e.upcast_ref::<gst::Object>()));
            if let (Some(which), Some(output)) = (which, output_of(msg)) {
                let s = &mut seen.lock().unwrap()[which];
                s.fed.extend(feeds[which].lock().unwrap().try_iter());
                if s.fed.len() <= s.posted.len() {
                    s.early.push(output.clone());
                }
                s.posted.push(output);
            }
            gst::BusSyncReply::Pass
        });
    }
    pipeline.set_state(gst::State::Playing).unwrap();
    let mut eos = false;
    while let Some(msg) = bus.timed_pop(gst::ClockTime::from_seconds(60)) {
        match msg.view() {
            gst::MessageView::Eos(_) => {
                eos = true;
                break;
            }
            gst::MessageView::Error(e) => panic!("{} ({:?})", e.error(), e.debug()),
            _ => {}
        }
    }
    assert!(eos, "no EOS");
    let mut seen = std::mem::take(&mut *seen.lock().unwrap());
    // Everything was delivered before EOS: the stop adds nothing (the summary was made).
    for (s, feed) in seen.iter_mut().zip(feeds.iter()) {
        s.fed.extend(feed.lock().unwrap().try_iter());
    }
    pipeline.set_state(gst::State::Null).unwrap();
    bus.unset_sync_handler();
    for (name, feed) in names.iter().zip(feeds.iter()) {
        let late: Vec<Output> = feed.lock().unwrap().try_iter().collect();
        assert!(late.is_empty(), "{name}: delivered after EOS: {late:?}");
    }
    seen
}

fn count(outputs: &[Output], f: impl Fn(&Output) -> bool) -> usize {
    outputs.iter().filter(|o| f(o)).count()
}

const CAPS: &str = "video/x-raw,format=I420,width=64,height=48,framerate=25/1";

/// Two elements in one pipeline: a pair of inputs with windows and an alert, and one input
/// alone with a black interval still open at EOS. Each subscription has the element's
/// records and nothing else, exactly as its messages, with the summary last.
#[test]
fn the_subscription_delivers_what_the_bus_carries_for_every_element() {
    let seen = run(
        &format!(
            "videotestsrc num-buffers=30 pattern=ball ! {CAPS} ! a.ref_sink \
             videotestsrc num-buffers=30 pattern=snow ! {CAPS} ! a.dist_sink \
             gpumetrics name=a backend=cpu metrics=psnr window=200000000 \
               alerts=\"psnr-y<100\" ! fakesink sync=false \
             videotestsrc num-buffers=20 pattern=black ! {CAPS} ! b.dist_sink \
             gpumetrics name=b backend=cpu metrics=black black-min-duration=0.2 \
               ! fakesink sync=false"
        ),
        &["a", "b"],
    );
    for (name, s) in ["a", "b"].iter().zip(&seen) {
        assert_eq!(s.fed, s.posted, "{name}");
        assert!(
            s.early.is_empty(),
            "{name}: posted before delivered: {:?}",
            s.early
        );
        assert!(
            matches!(s.fed.last(), Some(Output::Summary(_))),
            "{name}: the summary last: {:?}",
            s.fed.last()
        );
        assert_eq!(count(&s.fed, |o| matches!(o, Output::Summary(_))), 1);
    }
    let a = &seen[0].fed;
    assert_eq!(count(a, |o| matches!(o, Output::Frame(_))), 30);
    let frames: Vec<u64> = a
        .iter()
        .filter_map(|o| match o {
            Output::Frame(f) => Some(f.frame),
            _ => None,
        })
        .collect();
    assert_eq!(frames, (0..30).collect::<Vec<_>>());
    // 1.2 s in windows of 0.2 s; the last at EOS.
    assert_eq!(count(a, |o| matches!(o, Output::Window(_))), 6, "{a:?}");
    assert_eq!(count(a, |o| matches!(o, Output::Alert(_))), 1, "{a:?}");
    assert!(matches!(&a[0], Output::Frame(f) if f.get("psnr-y").is_some()));
    let b = &seen[1].fed;
    assert_eq!(count(b, |o| matches!(o, Output::Frame(_))), 20);
    let events: Vec<(&str, u64, Option<u64>)> = b
        .iter()
        .filter_map(|o| match o {
            Output::Event(e) => Some((e.state.as_str(), e.running_time, e.duration)),
            _ => None,
        })
        .collect();
    // Black from the start to the end of the last frame (0.8 s): ended at EOS.
    assert_eq!(
        events,
        [("start", 0, None), ("end", 800_000_000, Some(800_000_000))]
    );
    assert!(matches!(&b[b.len() - 2], Output::Event(e) if e.state == "end"));
    let Some(Output::Summary(s)) = b.last() else {
        unreachable!()
    };
    assert_eq!(s.frames, 20);
}

/// With `post-messages` off the bus has no per-pair message, the subscription still has
/// every pair's record; a second subscriber gets the same; one that is dropped loses
/// nothing for the others.
#[test]
fn records_are_delivered_without_post_messages_to_every_subscriber() {
    init();
    let pipeline = gst::parse::launch(
        &format!(
            "videotestsrc num-buffers=10 pattern=ball ! {CAPS} ! tee name=t \
             t. ! queue ! m.ref_sink t. ! queue ! m.dist_sink \
             gpumetrics name=m backend=cpu post-messages=false ! fakesink sync=false"
        )
        .replace("backend=cpu", &format!("backend={}", test_backend())),
    )
    .unwrap()
    .downcast::<gst::Pipeline>()
    .unwrap();
    let m = pipeline
        .by_name("m")
        .unwrap()
        .downcast::<GpuMetrics>()
        .unwrap();
    let first = m.subscribe();
    drop(m.subscribe());
    let second = m.subscribe();
    let bus = pipeline.bus().unwrap();
    pipeline.set_state(gst::State::Playing).unwrap();
    let mut posted = Vec::new();
    let msg = loop {
        let msg = bus
            .timed_pop(gst::ClockTime::from_seconds(60))
            .expect("EOS");
        posted.extend(output_of(&msg));
        if matches!(
            msg.view(),
            gst::MessageView::Eos(_) | gst::MessageView::Error(_)
        ) {
            break msg;
        }
    };
    pipeline.set_state(gst::State::Null).unwrap();
    assert!(matches!(msg.view(), gst::MessageView::Eos(_)), "{msg:?}");
    assert_eq!(posted.len(), 1, "the summary only: {posted:?}");
    let fed: Vec<Output> = first.try_iter().collect();
    assert_eq!(fed.len(), 11, "{fed:?}");
    assert!(fed[..10].iter().all(|o| matches!(o, Output::Frame(_))));
    assert_eq!(fed.last(), posted.last());
    assert_eq!(second.try_iter().collect::<Vec<_>>(), fed);
}
