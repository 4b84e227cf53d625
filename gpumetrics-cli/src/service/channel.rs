// SPDX-License-Identifier: MPL-2.0
//! One channel of the service: a thread that builds the channel's pipeline (as the command
//! builds a run: [`lineup`], [`backend`], [`Decodings`], [`pipeline::build_run`]), runs it,
//! and rebuilds it when it fails.
//!
//! The channel is **up** from its first frame; it is **down** when no frame came for its
//! `signal-timeout` (a new build has [`FIRST_FRAME_GRACE`] more for its first frame), when its source cannot be opened or decoded, when the pipeline posts
//! an error, or when its input ends. Down, it says so (an event, `gpumetrics_channel_up`
//! 0, the `no-signal` alert raised), stops the pipeline and builds it again after a
//! backoff of 1 s that doubles up to 30 s, until frames flow again (the alert cleared, the
//! backoff back to 1 s). Nothing of one channel reaches another: each has its thread,
//! pipeline and element.
//!
//! Stopping a channel ends its pipeline cleanly: the gates send EOS, the element posts its
//! last window and summary (said as events) before the pipeline is set to NULL.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use gst::prelude::*;
use gstgpumetrics::{Channels, Output};
use serde_json::json;

use super::config::Channel;
use super::events::{self, Events};
use crate::decoding::Decodings;
use crate::notes::Notes;
use crate::{backend, lineup, measure, pipeline, run};

/// The first wait before a channel that went down is built again.
pub const BACKOFF_FIRST: Duration = Duration::from_secs(1);
/// The longest wait between two builds.
pub const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// How long a stopping channel may take to post its last window and summary.
const DRAIN: Duration = Duration::from_secs(5);
/// How often the channel's thread looks at its stop flag and the time without frames.
const POLL: gst::ClockTime = gst::ClockTime::from_mseconds(50);
/// The service's rule raised while a channel is down.
const NO_SIGNAL: &str = "no-signal";
/// What a new build of a channel's pipeline has beyond `signal-timeout` for its first
/// frame: joining a live stream waits for its next key frame, and the decoder and the
/// element start.
pub const FIRST_FRAME_GRACE: Duration = Duration::from_secs(3);

/// What the channels of a service share.
pub struct Shared {
    pub events: Arc<Events>,
    /// `[prometheus] address` and the service's hold on its endpoint.
    pub prometheus: Option<(String, Arc<Channels>)>,
    /// One CUDA context per GPU for every channel on it (made when the first channel of a
    /// device is built), set on each channel's pipeline: its decoders and element share
    /// it instead of each pipeline making its own, which would time-slice the GPU.
    pub cuda: std::sync::Mutex<Vec<(u32, gstgpumetrics::gstcuda::Context, gst::Context)>>,
}

impl Shared {
    pub fn new(events: Arc<Events>, prometheus: Option<(String, Arc<Channels>)>) -> Shared {
        Shared {
            events,
            prometheus,
            cuda: Default::default(),
        }
    }

    /// The service's `no-signal` alert of channel `name` raised or cleared: an `alert`
    /// event and the alert series.
    fn no_signal(&self, name: &str, raised: bool) {
        let state = if raised { "raised" } else { "cleared" };
        self.events.emit(
            Some(name),
            "alert",
            events::keys([("rule", json!(NO_SIGNAL)), ("state", json!(state))]),
        );
        if let Some((_, s)) = &self.prometheus {
            s.alert(name, NO_SIGNAL, raised);
        }
    }

    /// The `gst.cuda.context` of device `device`; none without libgstcuda or a device.
    fn cuda_context(&self, device: u32) -> Option<gst::Context> {
        let api = gstgpumetrics::gstcuda::api().ok()?;
        let mut contexts = self.cuda.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, _, c)) = contexts.iter().find(|(d, _, _)| *d == device) {
            return Some(c.clone());
        }
        let context = gstgpumetrics::gstcuda::Context::new(api, device)?;
        let gst_context = context.to_gst_context(api)?;
        contexts.push((device, context, gst_context.clone()));
        Some(gst_context)
    }
}

/// A running channel.
pub struct Handle {
    pub spec: Channel,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Handle {
    /// Starts the channel's thread.
    pub fn start(spec: Channel, shared: Arc<Shared>) -> std::io::Result<Handle> {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::Builder::new()
            .name(format!("channel {}", spec.name))
            .spawn({
                let (spec, stop) = (spec.clone(), stop.clone());
                move || supervise(&spec, &shared, &stop)
            })?;
        Ok(Handle {
            spec,
            stop,
            thread: Some(thread),
        })
    }

    /// Asks the channel to stop (its pipeline drains); [`Handle::join`] waits for it.
    pub fn ask_stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    /// Stops the channel and waits for its thread.
    pub fn join(mut self) {
        self.ask_stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// How one build of the pipeline ended.
enum Ended {
    /// The service stopped the channel.
    Stopped,
    /// The channel went down, with why; whether frames had flowed.
    Down { reason: String, flowed: bool },
}

/// The channel's life: builds, runs, and rebuilds with backoff until stopped.
fn supervise(spec: &Channel, shared: &Shared, stop: &AtomicBool) {
    let name = spec.name.as_str();
    let service = shared.prometheus.as_ref().map(|(_, c)| c.clone());
    if let Some(s) = &service {
        s.set_up(name, false);
        s.alert(name, NO_SIGNAL, false);
    }
    shared.events.emit(
        Some(name),
        "started",
        events::keys([
            ("distorted", json!(spec.distorted)),
            ("reference", json!(spec.reference)),
        ]),
    );
    let mut backoff = BACKOFF_FIRST;
    let mut no_signal = false;
    let mut builds = 0u64;
    loop {
        builds += 1;
        if builds > 1 {
            shared.events.emit(
                Some(name),
                "restart",
                events::keys([("build", json!(builds))]),
            );
            if let Some(s) = &service {
                s.restarted(name);
            }
        }
        let ended = run_once(spec, shared, stop, &mut no_signal);
        let (reason, flowed) = match ended {
            Ended::Stopped => break,
            // Stopped while it was going down: nothing to say of it.
            Ended::Down { .. } if stop.load(Ordering::SeqCst) => break,
            Ended::Down { reason, flowed } => (reason, flowed),
        };
        if let Some(s) = &service {
            s.set_up(name, false);
        }
        if flowed {
            backoff = BACKOFF_FIRST;
        }
        shared.events.emit(
            Some(name),
            "down",
            events::keys([
                ("reason", json!(reason)),
                ("retry_in", json!(backoff.as_secs_f64())),
            ]),
        );
        if !no_signal {
            no_signal = true;
            shared.no_signal(name, true);
        }
        if wait(stop, backoff) {
            break;
        }
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
    shared
        .events
        .emit(Some(name), "stopped", Default::default());
}

/// Waits `how_long`, or until `stop`; whether it stopped.
fn wait(stop: &AtomicBool, how_long: Duration) -> bool {
    let until = Instant::now() + how_long;
    while Instant::now() < until {
        if stop.load(Ordering::SeqCst) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50).min(until - Instant::now()));
    }
    stop.load(Ordering::SeqCst)
}

/// One build of the channel's pipeline, run until it goes down or the channel stops.
fn run_once(spec: &Channel, shared: &Shared, stop: &AtomicBool, no_signal: &mut bool) -> Ended {
    let name = spec.name.as_str();
    let down = |reason: String| Ended::Down {
        reason,
        flowed: false,
    };
    // The command's notes (inputs, decoders) are its own: a service says events.
    let notes = Notes { quiet: true };
    // The inputs are opened (the discoverer waits for a live stream's first frames, up to
    // its timeout) on a thread of their own, so that the channel stops at once meanwhile.
    let (tx, rx) = std::sync::mpsc::channel();
    let opening = spec.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("open {name}"))
        .spawn(move || {
            let opened = opening.arguments().and_then(|(args, plan)| {
                let notes = Notes { quiet: true };
                lineup::open(&args, &notes)
                    .map(|lineup| (args, plan, lineup))
                    .map_err(|f| format!("{:#}", f.error))
            });
            let _ = tx.send(opened);
        });
    if let Err(e) = spawned {
        return down(format!("cannot start a thread: {e}"));
    }
    let (args, plan, lineup) = loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Ok(opened)) => break opened,
            Ok(Err(e)) => return down(e),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if stop.load(Ordering::SeqCst) {
                    return Ended::Stopped;
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return down("opening the inputs failed".into());
            }
        }
    };
    let (args, plan) = (&args, &plan);
    let device = match backend::choose(args, &notes) {
        Ok(c) => c,
        Err(e) => return down(format!("{e:#}")),
    };
    let cuda = device.as_ref().map(|_| ()).map_err(Clone::clone);
    let device = device.map_or(0, |d| d.index);
    if let Some((_, s)) = &shared.prometheus {
        // As the element labels its own series: the CUDA device's index, or `cpu`.
        let label = match cuda {
            Ok(()) => device.to_string(),
            Err(_) => "cpu".to_string(),
        };
        s.set_device(name, &label);
    }
    let decodings = match Decodings::choose(args, &lineup, &cuda, &notes) {
        Ok(d) => d,
        Err(e) => return down(format!("{e:#}")),
    };
    let mut config = measure::config(args, plan, &lineup, &decodings, 0, device);
    config.monitoring.prometheus = shared.prometheus.as_ref().map(|(a, _)| a.clone());
    config.monitoring.channel = Some(name.to_string());
    config.monitoring.stats_file = spec.stats_file.clone();
    // The records come from the element's subscription; no bus message per pair.
    config.monitoring.post_messages = Some(false);
    let each: Vec<pipeline::Distorted> = lineup
        .distorted
        .iter()
        .zip(&decodings.distorted)
        .zip(&lineup.scale_to)
        .map(|((input, decoding), scale_to)| pipeline::Distorted {
            input,
            device,
            decoding: decoding.clone(),
            scale_to: *scale_to,
            convert_to: None,
        })
        .collect();
    let reference = lineup.reference.as_ref().zip(decodings.reference.as_ref());
    // The gates' own stop: set when the channel stops, so that they send EOS.
    let gates_stop = Arc::new(AtomicBool::new(false));
    let built = match pipeline::build_run(&config, reference, &each, gates_stop.clone()) {
        Ok(b) => b,
        Err(e) => return down(format!("{e:#}")),
    };
    if args.backend != gpumetrics_engine::BackendChoice::Cpu
        && let Some(context) = shared.cuda_context(device)
    {
        built.pipeline.set_context(&context);
    }
    let ended = watch(spec, shared, stop, &built, &gates_stop, no_signal);
    let _ = built.pipeline.set_state(gst::State::Null);
    ended
}

/// Runs the built pipeline: its records said as events, its frames watched.
fn watch(
    spec: &Channel,
    shared: &Shared,
    stop: &AtomicBool,
    built: &pipeline::BuiltRun,
    gates_stop: &Arc<AtomicBool>,
    no_signal: &mut bool,
) -> Ended {
    let name = spec.name.as_str();
    let service = shared.prometheus.as_ref().map(|(_, c)| c.clone());
    let events = &shared.events;
    let Some(bus) = built.pipeline.bus() else {
        return Ended::Down {
            reason: "the pipeline has no bus".into(),
            flowed: false,
        };
    };
    let feed = match run::subscribe(&built.elements) {
        Ok(f) => f,
        Err(e) => {
            return Ended::Down {
                reason: format!("{e:#}"),
                flowed: false,
            };
        }
    };
    if let Err(e) = run::start(&built.pipeline) {
        return Ended::Down {
            reason: format!("{e:#}"),
            flowed: false,
        };
    }
    let started = Instant::now();
    let mut last_frame: Option<Instant> = None;
    let mut stopping: Option<Instant> = None;
    let mut aligned = None;
    let mut take = |output: Output, flowing: &mut Option<Instant>| match output {
        // A channel takes no `map` (config::NOT_KEYS).
        Output::Map(_) => {}
        Output::Frame(_) => {
            if flowing.is_none() {
                events.emit(
                    Some(name),
                    "up",
                    events::keys([("after", json!(started.elapsed().as_secs_f64()))]),
                );
                if let Some(s) = &service {
                    s.set_up(name, true);
                }
                if *no_signal {
                    *no_signal = false;
                    shared.no_signal(name, false);
                }
            }
            *flowing = Some(Instant::now());
        }
        Output::Window(w) => events.emit(Some(name), "window", events::window(&w)),
        Output::Event(e) => events.emit(Some(name), &e.event, events::interval(&e)),
        Output::Alert(a) => events.emit(Some(name), "alert", events::alert(&a)),
        Output::Align(a) => {
            // Changes only: the element repeats its state every second.
            if crate::monitor::align_line(&a, &mut aligned).is_some() {
                events.emit(Some(name), "align", events::align(&a));
            }
        }
        Output::Summary(s) => events.emit(Some(name), "summary", events::summary(&s)),
    };
    loop {
        if stop.load(Ordering::SeqCst) && stopping.is_none() {
            // The gates send EOS at their next frame; a source without frames gets EOS sent
            // to the pipeline.
            stopping = Some(Instant::now());
            gates_stop.store(true, Ordering::SeqCst);
            built.pipeline.send_event(gst::event::Eos::new());
        }
        let msg = bus.timed_pop(POLL);
        while let Ok((_, output)) = feed.try_recv() {
            take(output, &mut last_frame);
        }
        if let Some(t) = stopping
            && t.elapsed() > DRAIN
        {
            return Ended::Stopped;
        }
        if stopping.is_none() {
            let (quiet_since, allowed) = match last_frame {
                Some(t) => (t, spec.signal_timeout),
                None => (started, spec.signal_timeout + FIRST_FRAME_GRACE),
            };
            if quiet_since.elapsed() > allowed {
                return Ended::Down {
                    reason: format!(
                        "no signal: no frame for {} s{}",
                        allowed.as_secs_f64(),
                        if last_frame.is_some() {
                            ""
                        } else {
                            " since the pipeline started"
                        }
                    ),
                    flowed: last_frame.is_some(),
                };
            }
        }
        let Some(msg) = msg else { continue };
        let reason = match msg.view() {
            gst::MessageView::Error(e) => crate::advice::error_text(e),
            gst::MessageView::Eos(_) => "the input ended".to_string(),
            _ => continue,
        };
        // What the element had measured is said before the channel goes down or stops.
        while let Ok((_, output)) = feed.try_recv() {
            take(output, &mut last_frame);
        }
        if stopping.is_some() {
            return Ended::Stopped;
        }
        return Ended::Down {
            reason,
            flowed: last_frame.is_some(),
        };
    }
}
