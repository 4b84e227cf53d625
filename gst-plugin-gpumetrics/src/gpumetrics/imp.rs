// SPDX-License-Identifier: MPL-2.0
//! The `gpumetrics` element as a GStreamer subclass (a `GstAggregator` with two always sink
//! pads): the GObject, element and aggregator glue over the sibling modules, which hold
//! each concern ([`super::settings`] and [`super::options`] the properties,
//! [`super::input`] the caps and the mapping of frames, [`super::cuda`] the CUDA context,
//! [`super::scorer`] the engine, [`super::queue`] the buffers waiting for their scores,
//! [`super::outputs`] where the scores go).
//!
//! Data flow per aggregate() call: look at the head buffer of both sink pads, let
//! [`crate::pairing::decide`] say what to do, then either compare the pair (engine), drop an
//! unmatched reference frame, pass an unmatched distorted frame on without scores, or finish
//! (summary + EOS). The distorted buffer always leaves through `src` unchanged (same memory);
//! it is only made writable to attach the scores meta.
//!
//! Locks: `settings`, `state` and `outputs` are never held together; the outputs (which
//! post messages) are called without the state lock, since a bus sync handler may read
//! properties.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, Mutex, MutexGuard};

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::prelude::*;
use gst_base::subclass::prelude::*;

use super::align::{Aligner, Incoming, Step, Thumbnails};
use super::cuda::{self, SharedContext};
use super::decode::Decode;
use super::input::{self, MemoryStats, PadCaps};
use super::outputs::{Env, Input, Outputs, Pair};
use super::queue::{PairInfo, Queue, Ready};
use super::scorer::{self, Request, Scorer};
use super::settings::{self, Settings};
use super::stall::{self, Stalls};
use super::{Backend, CAT, MapStyle};
use crate::caps;
use crate::gstcuda;
use crate::message::{AlignRecord, FrameScores};
use crate::pairing::{self, Decision, Head, PadState};
use crate::quote::quoted;
use crate::roi::Rect;

/// Warnings and latency found under the state lock, posted once it is released.
#[derive(Debug, Default)]
struct Notices {
    /// Warnings already posted in this run (each is posted once).
    warned: Vec<String>,
    /// Warnings to post.
    pending: Vec<String>,
    /// Latency to report (ns): that of the engine built last (0 resets an earlier one's).
    latency: Option<u64>,
}

impl Notices {
    /// Queues `text` as an element warning unless this run already posted it.
    fn warn_once(&mut self, text: String) {
        if !self.warned.contains(&text) {
            self.warned.push(text.clone());
            self.pending.push(text);
        }
    }

    fn take(&mut self) -> (Vec<String>, Option<u64>) {
        (std::mem::take(&mut self.pending), self.latency.take())
    }
}

/// Which inputs a run measures: decided when the first distorted frame arrives (see
/// [`GpuMetrics::decide_inputs`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Inputs {
    #[default]
    Undecided,
    /// ref_sink is linked: pairs are compared.
    Both,
    /// Only dist_sink is linked: its frames are measured alone (no-reference metrics).
    DistortedOnly,
}

/// How long the first distorted frame waits for ref_sink to be linked before the run
/// measures dist_sink alone: decodebin and other elements with dynamic pads link ref_sink
/// while the pipeline prerolls, possibly after the first distorted frame has arrived.
const LINK_GRACE: std::time::Duration = std::time::Duration::from_millis(1000);

/// A run, from start to stop.
#[derive(Default)]
struct State {
    /// Both inputs, or dist_sink alone.
    inputs: Inputs,
    /// The `roi` rectangle of the run (parsed at start, checked against each pad's caps).
    roi: Option<Rect>,
    /// Negotiated caps of ref_sink and dist_sink (applying to the frames after them).
    reference: Option<PadCaps>,
    distorted: Option<PadCaps>,
    /// The engine for the current caps.
    scorer: Scorer,
    /// Distorted buffers on their way to src: measured pairs waiting for their scores and
    /// unmatched buffers behind them.
    queue: Queue<gst::Buffer>,
    /// How frames reached the backend (the `memory-stats` property).
    memory: MemoryStats,
    /// Index of the next compared pair.
    frame: u64,
    /// `window`: the window of the last pair submitted to the engine (its running time
    /// over the window's length), so that the engine hears where windows start
    /// (`Engine::start_window`) as the outputs' windows fall.
    engine_window: Option<u64>,
    /// A frame of this run was seen (decides whether stop() has something to summarise).
    active: bool,
    /// An element error was posted: no further pair is measured in this run.
    failed: bool,
    /// The summary of this run was posted (again after a flushing seek).
    summary_posted: bool,
    /// Running time where the frames seen so far end: the live deadline of an input that
    /// stalls after the other one ended.
    last_end: Option<u64>,
    /// The first frame taken from ref_sink and from dist_sink (what a run that paired
    /// nothing says).
    first: [Option<Head>; 2],
    /// A live input's stall in progress and the other input's frames held for it.
    stalls: Stalls<gst::Buffer>,
    /// `align=auto`: the alignment of the inputs and the frames it holds.
    aligner: Option<Aligner<gst::Buffer>>,
    /// `align=auto`: where the frames' thumbnails are made.
    thumbnails: Thumbnails,
    /// Where the `prometheus-address` endpoint listens (`prometheus-bound-address`): kept
    /// here, not read from the outputs, whose lock is held while they post messages.
    prometheus_bound: Option<String>,
    notices: Notices,
}

pub struct GpuMetrics {
    ref_pad: gst_base::AggregatorPad,
    dist_pad: gst_base::AggregatorPad,
    settings: Mutex<Settings>,
    state: Mutex<State>,
    /// The run's outputs: made in start(), ended in stop().
    outputs: Mutex<Option<Outputs>>,
    /// The GstCudaContext shared with the neighbours (gst.cuda.context).
    cuda: SharedContext,
    /// What the inputs' decoders report (warnings, corrupted frames), for the summary.
    decode: Decode,
    /// Between start() and stop(): the properties that are not `GST_PARAM_MUTABLE_PLAYING`
    /// are in effect for the run and refuse changes.
    running: AtomicBool,
    /// With a `map`: the pool of its frames (made at the first map, remade when the size
    /// or style changes, ended in stop()).
    map_frames: Mutex<Option<super::map_render::Frames>>,
    /// The CUDA context whose memory the map frames go out in, when src negotiated
    /// `memory:CUDAMemory` for them (set with src's caps).
    map_memory: Mutex<Option<crate::gstcuda::Context>>,
}

#[glib::object_subclass]
impl ObjectSubclass for GpuMetrics {
    const NAME: &'static str = "GstGpuMetrics";
    type Type = super::GpuMetrics;
    type ParentType = gst_base::Aggregator;

    fn with_class(klass: &Self::Class) -> Self {
        let templ = klass.pad_template("ref_sink").unwrap();
        let ref_pad = gst::PadBuilder::<gst_base::AggregatorPad>::from_template(&templ).build();
        let templ = klass.pad_template("dist_sink").unwrap();
        let dist_pad = gst::PadBuilder::<gst_base::AggregatorPad>::from_template(&templ).build();
        GpuMetrics {
            ref_pad,
            dist_pad,
            settings: Mutex::new(Settings::default()),
            state: Mutex::new(State::default()),
            outputs: Mutex::new(None),
            cuda: SharedContext::default(),
            decode: Decode::default(),
            running: AtomicBool::new(false),
            map_frames: Mutex::new(None),
            map_memory: Mutex::new(None),
        }
    }
}

impl ObjectImpl for GpuMetrics {
    fn properties() -> &'static [glib::ParamSpec] {
        settings::properties()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        if self.running.load(Ordering::SeqCst)
            && !pspec.flags().contains(gst::PARAM_FLAG_MUTABLE_PLAYING)
        {
            // The run was set up with the value in effect (outputs, engine, pairing): a new
            // one would apply to part of the run only, or never. Refused, so that reading
            // the property back gives what is in effect.
            let current = self.settings.lock().unwrap().get(pspec.name());
            gst::element_imp_warning!(
                self,
                gst::CoreError::StateChange,
                (
                    "Property '{}' can be changed only in the NULL or READY state: the new \
                     value {} is ignored while the element runs (it keeps {}). Set it \
                     before starting the pipeline, or set the pipeline to READY first",
                    pspec.name(),
                    shown(value),
                    shown(&current)
                )
            );
            return;
        }
        self.settings.lock().unwrap().set(pspec.name(), value);
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        if pspec.name() == settings::MEMORY_STATS {
            return self.state.lock().unwrap().memory.to_structure().to_value();
        }
        if pspec.name() == settings::PROMETHEUS_BOUND_ADDRESS {
            let state = self.state.lock().unwrap();
            return state.prometheus_bound.as_deref().unwrap_or("").to_value();
        }
        self.settings.lock().unwrap().get(pspec.name())
    }

    fn constructed(&self) {
        self.parent_constructed();
        let obj = self.obj();
        obj.add_pad(&self.ref_pad).unwrap();
        obj.add_pad(&self.dist_pad).unwrap();
        // The first distorted frame decides whether ref_sink takes part, on dist_sink's
        // streaming thread, before the aggregator queues it (the aggregator's own thread
        // must not wait for the link, nor send ref_sink its EOS).
        let weak = obj.downgrade();
        self.dist_pad.add_probe(
            gst::PadProbeType::BUFFER | gst::PadProbeType::BUFFER_LIST,
            move |_, _| {
                if let Some(obj) = weak.upgrade() {
                    obj.imp().decide_inputs();
                }
                gst::PadProbeReturn::Ok
            },
        );
        // An application that removes a sink pad would leave the element waiting for its
        // frames forever: end the run with an error that names the pad.
        obj.connect_pad_removed(|obj, pad| {
            let imp = obj.imp();
            if pad != imp.ref_pad.upcast_ref::<gst::Pad>()
                && pad != imp.dist_pad.upcast_ref::<gst::Pad>()
            {
                return;
            }
            imp.state.lock().unwrap().failed = true;
            gst::element_imp_error!(
                imp,
                gst::CoreError::Pad,
                (
                    "{} was removed from the element: gpumetrics compares ref_sink with \
                     dist_sink and needs both for the whole run. To end one input, send EOS \
                     on it (or unlink its upstream element) instead of removing the pad",
                    pad.name()
                )
            );
        });
    }
}

impl GstObjectImpl for GpuMetrics {}

/// A property value as a warning quotes it: a string as `"text"`, bounded
/// ([`crate::quote`]), anything else as GLib prints it.
fn shown(value: &glib::Value) -> String {
    match value.get::<Option<String>>() {
        Ok(Some(s)) => format!("\"{}\"", quoted(&s)),
        Ok(None) => "NULL".into(),
        Err(_) => quoted(&format!("{value:?}")).to_string(),
    }
}

/// The element's long description (`gst-inspect-1.0`'s "Description"), naming the
/// registered metrics by their titles: full-reference ones, then no-reference ones, each in
/// registry order, so that a new metric needs no edit here.
fn description() -> String {
    let no_reference = gpumetrics_engine::metric::no_reference();
    let (nr, full): (Vec<_>, Vec<_>) =
        gpumetrics_engine::metric::all().partition(|i| no_reference.contains(i.flag));
    let titles = |infos: Vec<&gpumetrics_engine::metric::Info>| {
        infos.iter().map(|i| i.title).collect::<Vec<_>>().join(", ")
    };
    let sets = gpumetrics_engine::metric::SETS
        .iter()
        .map(|s| s.name)
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "Compares the distorted video (dist_sink) with the reference video (ref_sink) frame \
         by frame and reports quality metrics ({}) and no-reference checks on each input ({}; \
         these also on dist_sink alone, when ref_sink is not linked), or a standard set of \
         them in one pass ({}), as 'gpumetrics' element \
         messages, GstGpuMetricsMeta buffer meta and an optional stats file, plus a pooled \
         'gpumetrics-summary' message at EOS. Frames are paired by running time (or by \
         sequence). The distorted stream is passed through on src unchanged. Runs on NVIDIA \
         GPUs (CUDA) or the CPU.",
        titles(full),
        titles(nr),
        sets
    )
}

impl ElementImpl for GpuMetrics {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static ELEMENT_METADATA: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "GPU video quality metrics",
                "Filter/Analyzer/Video",
                &description(),
                "gpumetrics developers",
            )
        });
        Some(&*ELEMENT_METADATA)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static PAD_TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            let caps = caps::template_caps();
            let sink = |name| {
                gst::PadTemplate::with_gtype(
                    name,
                    gst::PadDirection::Sink,
                    gst::PadPresence::Always,
                    &caps,
                    gst_base::AggregatorPad::static_type(),
                )
                .unwrap()
            };
            let src = gst::PadTemplate::with_gtype(
                "src",
                gst::PadDirection::Src,
                gst::PadPresence::Always,
                &caps,
                gst_base::AggregatorPad::static_type(),
            )
            .unwrap();
            // ref_sink: the reference (original) video. dist_sink: the distorted video
            // (encoded/processed), passed on through src with its caps.
            vec![sink("ref_sink"), sink("dist_sink"), src]
        });
        PAD_TEMPLATES.as_ref()
    }

    fn set_context(&self, context: &gst::Context) {
        self.cuda.offer(self.obj().upcast_ref(), context);
        self.parent_set_context(context)
    }

    fn change_state(
        &self,
        transition: gst::StateChange,
    ) -> Result<gst::StateChangeSuccess, gst::StateChangeError> {
        if transition == gst::StateChange::NullToReady {
            let (backend, device_id) = {
                let mut s = self.settings.lock().unwrap();
                if s.device_id == settings::AUTO_DEVICE_ID && s.backend != Backend::Cpu {
                    let chosen = gpumetrics_engine::devices::auto();
                    gst::info!(
                        CAT,
                        imp = self,
                        "device-id=-1: {}",
                        if chosen.found {
                            format!("chose CUDA {}", chosen.reason)
                        } else {
                            chosen.reason.clone()
                        }
                    );
                    s.chosen_device = Some(chosen.device);
                }
                (s.backend, s.device())
            };
            if backend != Backend::Cpu {
                let obj = self.obj();
                let pads = [
                    obj.src_pad().clone().upcast::<gst::Pad>(),
                    self.ref_pad.clone().upcast(),
                    self.dist_pad.clone().upcast(),
                ];
                self.cuda.ensure(obj.upcast_ref(), &pads, device_id);
            }
        }
        let ret = self.parent_change_state(transition)?;
        if transition == gst::StateChange::ReadyToNull {
            self.cuda.clear();
            self.settings.lock().unwrap().chosen_device = None;
        }
        Ok(ret)
    }
}

impl GpuMetrics {
    fn fixed_tolerance(&self) -> Option<u64> {
        self.settings.lock().unwrap().pairing_tolerance
    }

    fn pad_name(&self, pad: &gst_base::AggregatorPad) -> &'static str {
        if pad == &self.ref_pad {
            "ref_sink"
        } else {
            "dist_sink"
        }
    }

    fn running_time(pad: &gst_base::AggregatorPad, buffer: &gst::BufferRef) -> Option<u64> {
        let segment = pad.segment();
        let segment = segment.downcast_ref::<gst::ClockTime>()?;
        segment.to_running_time(buffer.pts()?).map(|t| t.nseconds())
    }

    /// What aggregate() finds at the head of one pad.
    fn head(&self, pad: &gst_base::AggregatorPad, caps_duration: Option<u64>) -> PadState {
        let head = pad.peek_buffer().map(|b| Head {
            running_time: Self::running_time(pad, &b),
            duration: b.duration().map(|d| d.nseconds()).or(caps_duration),
        });
        PadState {
            head,
            eos: pad.is_eos(),
        }
    }

    /// Makes the engine the one for this pair: built for the current caps of both pads
    /// (each pad's caps event is handled when its frames before it are gone), rebuilt when
    /// they changed or when the inputs' CUDA memory lives in another context than the
    /// engine's (upstream decided on another one). The pairs the replaced engine held are
    /// scored as its sequence's last. Returns whether CUDA memory is read in place. On
    /// failure the element error is posted.
    fn prepare_engine(
        &self,
        st: &mut State,
        settings: &Settings,
        reference: &gst::Buffer,
        distorted: &gst::Buffer,
    ) -> Result<bool, gst::FlowError> {
        if st.inputs == Inputs::DistortedOnly {
            // One input: its caps stand for both (the engine measures it alone).
            st.reference = st.distorted.clone();
        }
        let current = match (&st.reference, &st.distorted) {
            (Some(r), Some(d)) => st.scorer.is_for(r, d),
            (None, None) if st.inputs == Inputs::DistortedOnly => {
                gst::element_imp_error!(
                    self,
                    gst::CoreError::Negotiation,
                    ("Received buffers before caps on dist_sink")
                );
                return Err(gst::FlowError::NotNegotiated);
            }
            _ => {
                gst::element_imp_error!(
                    self,
                    gst::CoreError::Negotiation,
                    ("Received buffers before caps on both sink pads")
                );
                return Err(gst::FlowError::NotNegotiated);
            }
        };
        if !current {
            if st.scorer.engine().is_some() {
                let finished = st.scorer.retire();
                self.take_scores(st, finished, true)?;
                gst::info!(
                    CAT,
                    imp = self,
                    "caps changed after {} pairs: ref_sink {}, dist_sink {}",
                    st.frame,
                    st.reference
                        .as_ref()
                        .map(PadCaps::describe)
                        .unwrap_or_default(),
                    st.distorted
                        .as_ref()
                        .map(PadCaps::describe)
                        .unwrap_or_default()
                );
            }
            self.build_engine(st, settings)?;
        }
        let Ok(api) = gstcuda::api() else {
            return Ok(false);
        };
        if !st.scorer.on_cuda() {
            return Ok(false);
        }
        let memory = cuda::memory_context(reference, distorted).map_err(|e| {
            self.post_error_message(e);
            gst::FlowError::Error
        })?;
        if let Some(want) = memory
            && st.scorer.runs_outside(&want, api)
        {
            gst::info!(
                CAT,
                imp = self,
                "running in the CUDA context of the upstream memory (device {})",
                want.device_id()
            );
            let finished = st.scorer.retire();
            self.take_scores(st, finished, true)?;
            st.scorer.use_context(want);
            self.build_engine(st, settings)?;
        }
        Ok(st.scorer.on_cuda())
    }

    /// Builds the engine for the current caps; its notes become warnings (once per run).
    fn build_engine(&self, st: &mut State, settings: &Settings) -> Result<(), gst::FlowError> {
        let (Some(reference), Some(distorted)) = (&st.reference, &st.distorted) else {
            return Err(gst::FlowError::NotNegotiated);
        };
        let obj = self.obj();
        let req = Request {
            element: obj.upcast_ref(),
            settings,
            reference,
            distorted,
            single: st.inputs == Inputs::DistortedOnly,
            shared: self.cuda.get(),
            pairs: st.frame,
        };
        match st.scorer.build(&req) {
            Ok(built) => {
                for note in built.notes {
                    st.notices.warn_once(note);
                }
                st.notices.latency = Some(built.latency);
                Ok(())
            }
            Err(f) => {
                self.post_failure(f);
                Err(gst::FlowError::NotNegotiated)
            }
        }
    }

    /// Posts an engine build failure as the element's error, with its details.
    fn post_failure(&self, f: scorer::Failure) {
        let (text, debug, details) = (f.text, f.debug, f.details);
        match f.code {
            scorer::Code::Stream(code) => {
                gst::element_imp_error!(self, code, ("{text}"), ["{debug}"], details: details)
            }
            scorer::Code::Settings => gst::element_imp_error!(
                self,
                gst::LibraryError::Settings,
                ("{text}"),
                ["{debug}"],
                details: details
            ),
        }
    }

    /// Measures one pair; its distorted buffer leaves with its scores, or waits in the
    /// queue while the engine holds the pair back or has it in flight (then the engine's
    /// scores of an earlier pair let that one leave).
    fn compare_and_push(
        &self,
        reference: Option<gst::Buffer>,
        distorted: gst::Buffer,
        dist_rt: Option<u64>,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let arrived = std::time::Instant::now();
        let settings = self.settings.lock().unwrap().clone();
        let mut state = self.state.lock().unwrap();
        state.active = true;
        let st = &mut *state;
        let device = {
            let r = reference.as_ref().unwrap_or(&distorted);
            self.prepare_engine(st, &settings, r, &distorted)?
        };
        let Some(every_frame) = st.scorer.engine().map(|e| e.needs_every_frame()) else {
            return Err(gst::FlowError::NotNegotiated);
        };
        let pair = PairInfo {
            frame: st.frame,
            running_time: dist_rt,
            arrived,
            // `subsample`: every N-th matched pair is scored, from the first.
            skip: !st
                .frame
                .is_multiple_of(u64::from(settings.subsample.max(1))),
        };
        st.frame += 1;
        if pair.skip && !every_frame {
            // No metric needs every frame (none holds pairs back or filters over the frames
            // before): a skipped pair costs nothing. It queues behind
            // the pairs in flight, which are completed now rather than at the next scored
            // pair, `subsample` frames later.
            st.queue.push_skipped(distorted, pair);
            return self.settle_and_deliver(state, true);
        }
        if st.scorer.engine().is_none() {
            return Err(gst::FlowError::NotNegotiated);
        }
        let (Some(rc), Some(dc)) = (&st.reference, &st.distorted) else {
            return Err(gst::FlowError::NotNegotiated);
        };
        let invalid = |e: String| {
            gst::element_imp_error!(self, gst::StreamError::Format, ("{e}"));
            gst::FlowError::Error
        };
        // The pair's tag is its index: the queue keeps its buffers under it until the
        // engine hands back its scores.
        let tag = pair.frame;
        // A pair in a later window than the last one (the outputs' windows never go back
        // but after a flush): the engine restarts its windows' spans there.
        if let (Some(t), true) = (dist_rt, settings.window > 0) {
            let w = t / settings.window;
            if st.engine_window.is_none_or(|last| w > last) {
                st.engine_window = Some(w);
                if let Some(engine) = st.scorer.engine() {
                    engine.start_window();
                }
            }
        }
        let scored = {
            let obj = self.obj();
            let memory = &mut st.memory;
            let dm = input::map_input(&distorted, dc, device, "dist_sink", memory, &*obj)
                .map_err(invalid)?;
            let df = input::frame(&dm, dc, "dist_sink").map_err(invalid)?;
            match &reference {
                Some(reference) => {
                    let rm = input::map_input(reference, rc, device, "ref_sink", memory, &*obj)
                        .map_err(invalid)?;
                    let rf = input::frame(&rm, rc, "ref_sink").map_err(invalid)?;
                    st.scorer.submit(Some(&rf), &df, tag)
                }
                None => st.scorer.submit(None, &df, tag),
            }
        };
        if let Err(e) = scored {
            // This pair is not measured. A frame the engine refused before queueing
            // anything leaves the pairs before it in the engine; a device error dropped
            // them, and their buffers leave without scores.
            if st.scorer.engine().is_none_or(|e| e.held() == 0) {
                st.queue.finish();
            }
            gst::element_imp_error!(
                self,
                scorer::stream_error(&e),
                (
                    "Measuring frame {} failed: {}",
                    pair.frame,
                    super::advice::Advised(&e)
                ),
                details: super::advice::details(&e)
            );
            return Err(gst::FlowError::Error);
        }
        // With pairs in flight the engine may still read the reference frame (CUDA memory
        // is read in place): its buffer is kept with the pair until then.
        st.queue.push_pair(tag, distorted, reference, pair);
        let taken = self.take_scores(st, scored, false);
        let delivered = self.deliver(state, true);
        taken.and(delivered)
    }

    /// Lets the buffers that are ready leave: each measured pair's record goes to the
    /// outputs, then its buffer (and any unmatched one behind it) is pushed. With `push`
    /// false (stopping), the buffers are dropped after their record. Posts the queued
    /// warnings and latency first.
    /// Pair's `map` as a frame of `style`, from the pool of map frames of its size.
    fn render_map(
        &self,
        map: &gpumetrics_engine::map::PairMap,
        style: MapStyle,
        peak: f64,
    ) -> Result<gst::Buffer, glib::BoolError> {
        let memory = self.map_memory.lock().unwrap().clone();
        let mut frames = self.map_frames.lock().unwrap();
        let fits = frames
            .as_ref()
            .is_some_and(|f| f.fits(style, map.width(), map.height(), memory.as_ref()));
        if !fits {
            // The old pool stops first: in CUDA memory its allocations are freed before
            // the new pool's are made.
            *frames = None;
            *frames = Some(super::map_render::Frames::new(
                style,
                map.width() as u32,
                map.height() as u32,
                memory.as_ref(),
            )?);
        }
        frames.as_ref().expect("made above").render(map, peak)
    }

    fn deliver(
        &self,
        mut state: MutexGuard<'_, State>,
        push: bool,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let ready = state.queue.ready();
        let (warnings, latency) = state.notices.take();
        drop(state);
        self.post_warnings(warnings);
        if let Some(l) = latency {
            let l = gst::ClockTime::from_nseconds(l);
            self.obj().set_latency(l, Some(l));
        }
        if ready.is_empty() {
            return Ok(gst::FlowSuccess::Ok);
        }
        let settings = self.settings.lock().unwrap().clone();
        let obj = self.obj();
        let env = Env {
            element: obj.upcast_ref(),
            settings: &settings,
        };
        let mut result = Ok(gst::FlowSuccess::Ok);
        let failed = |e: gst::ErrorMessage| {
            self.post_error_message(e);
            gst::FlowError::Error
        };
        // With a `map`, a scored pair leaves as its map frame (the reference's sample scale
        // sets the squared error's), and frames without a scored pair have none to leave as.
        let map_peak = settings.map.kind().map(|_| {
            let state = self.state.lock().unwrap();
            state
                .reference
                .as_ref()
                .map_or(255.0, |c| c.layout.format.peak() as f64)
        });
        for r in ready {
            let mut outputs = self.outputs.lock().unwrap();
            let was_scored = matches!(r, Ready::Scored { .. });
            let buffer = match r {
                Ready::Unmatched {
                    buffer,
                    side,
                    running_time,
                } => {
                    if let Some(o) = outputs.as_mut() {
                        o.unmatched(&env, side, running_time).map_err(failed)?;
                    }
                    buffer
                }
                Ready::Stall(event) => {
                    if let Some(o) = outputs.as_mut() {
                        o.stall(&env, &event).map_err(failed)?;
                    }
                    None
                }
                Ready::Unaligned {
                    buffer,
                    running_time,
                } => {
                    if let Some(o) = outputs.as_mut() {
                        o.unaligned(&env, Some(running_time)).map_err(failed)?;
                    }
                    Some(buffer)
                }
                Ready::Align(record) => {
                    if let Some(o) = outputs.as_mut() {
                        o.align(&env, &record).map_err(failed)?;
                    }
                    None
                }
                Ready::Skipped {
                    buffer,
                    pair,
                    scores,
                } => {
                    if let Some(o) = outputs.as_mut() {
                        o.skipped(&env, pair.running_time, scores.as_ref())
                            .map_err(failed)?;
                    }
                    Some(buffer)
                }
                Ready::Scored {
                    mut buffer,
                    pair,
                    mut scores,
                } => {
                    if let Some(o) = outputs.as_mut() {
                        o.prepare(&env, pair.running_time, &mut scores)
                            .map_err(failed)?;
                    }
                    if let (Some(peak), Some(map)) = (map_peak, scores.map()) {
                        let mut frame =
                            self.render_map(map, settings.map_style, peak)
                                .map_err(|e| {
                                    failed(gst::error_msg!(
                                        gst::CoreError::Failed,
                                        ("rendering the {} map: {e}", map.kind().name())
                                    ))
                                })?;
                        {
                            let f = frame.get_mut().expect("a new buffer is writable");
                            f.set_pts(buffer.pts());
                            f.set_dts(buffer.dts());
                            f.set_duration(buffer.duration());
                            f.set_offset(buffer.offset());
                        }
                        buffer = frame;
                    }
                    let record = FrameScores::of_scores(
                        pair.frame,
                        buffer.pts(),
                        pair.running_time.map(gst::ClockTime::from_nseconds),
                        buffer.duration(),
                        &scores,
                    );
                    if let Some(o) = outputs.as_mut() {
                        let mut pair = Pair {
                            record: &record,
                            scores: &scores,
                            buffer: &mut buffer,
                            arrived: pair.arrived,
                        };
                        o.record(&env, &mut pair).map_err(failed)?;
                    }
                    Some(buffer)
                }
            };
            drop(outputs);
            // A frame without a scored pair has no map: with `map` set, src carries map
            // frames only (a scored pair whose map is missing would be the engine's fault).
            let buffer = buffer.filter(|_| map_peak.is_none() || was_scored);
            if let Some(buffer) = buffer
                && push
                && result.is_ok()
            {
                result = self.push(buffer);
            }
        }
        result
    }

    /// At the end of a run (EOS; on stop without pushing): scores the pairs still held
    /// back or in flight, if any, and lets them leave.
    fn drain_held(&self, push: bool) -> Result<gst::FlowSuccess, gst::FlowError> {
        let mut state = self.state.lock().unwrap();
        let mut taken = Ok(());
        if state.queue.waiting() > 0 {
            let finished = state.scorer.finish();
            taken = self.take_scores(&mut state, finished, true);
        }
        let delivered = self.deliver(state, push);
        taken.and(delivered)
    }

    /// Nothing is pushed to the engine for now (a frame without a partner, a pair
    /// `subsample` skips, an input late): the pairs in flight are completed, so that their
    /// buffers and those queued behind them leave now rather than at the next push (the
    /// latency stays that of the latency query); pairs held back for temporal metrics stay
    /// in their sequence. Then lets what is ready leave.
    fn settle_and_deliver(
        &self,
        mut state: MutexGuard<'_, State>,
        push: bool,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let settled = state.scorer.settle();
        let taken = self.take_scores(&mut state, settled, false);
        let delivered = self.deliver(state, push);
        taken.and(delivered)
    }

    /// Gives the waiting pairs what the engine handed back, each under its tag (and with
    /// `end`, the end of a sequence: any pair left leaves without scores), and releases
    /// the reference buffers the engine no longer reads. When the GPU failed on a pair,
    /// the element error names the oldest pair waiting and every waiting pair leaves
    /// without scores (the engine dropped them), so that no buffer is lost; no pair is
    /// measured after it.
    fn take_scores(
        &self,
        st: &mut State,
        result: scorer::Scored,
        end: bool,
    ) -> Result<(), gst::FlowError> {
        match result {
            Ok(scored) => {
                for (tag, scores) in scored {
                    let matched = st.queue.score(tag, scores);
                    debug_assert!(matched, "the engine handed back a tag it was not given");
                }
                if end {
                    st.queue.finish();
                }
                let scorer = &st.scorer;
                st.queue.release_unread(|tag| scorer.reads(tag));
            }
            Err(e) => {
                let frame = st.queue.oldest_waiting().unwrap_or(st.frame);
                st.queue.finish();
                st.failed = true;
                gst::element_imp_error!(
                    self,
                    scorer::stream_error(&e),
                    (
                        "Measuring frame {frame} failed: {}",
                        super::advice::Advised(&e)
                    ),
                    details: super::advice::details(&e)
                );
                return Err(gst::FlowError::Error);
            }
        }
        Ok(())
    }

    /// Posts queued warnings as element warnings (outside the state lock: a bus sync
    /// handler may read our properties).
    fn post_warnings(&self, warnings: Vec<String>) {
        for text in warnings {
            gst::warning!(CAT, imp = self, "{text}");
            gst::element_imp_warning!(self, gst::StreamError::Format, ("{text}"));
        }
    }

    fn push(&self, buffer: gst::Buffer) -> Result<gst::FlowSuccess, gst::FlowError> {
        if let Some(pts) = buffer.pts() {
            let end = pts.saturating_add(buffer.duration().unwrap_or(gst::ClockTime::ZERO));
            self.obj().set_position(end);
        }
        self.obj().finish_buffer(buffer)
    }

    /// Hands the run's summary to the outputs (message, stats file), once per run.
    fn finish_run(&self) {
        let (memory, first) = {
            let mut state = self.state.lock().unwrap();
            if state.summary_posted {
                return;
            }
            state.summary_posted = true;
            (state.memory, state.first)
        };
        let settings = self.settings.lock().unwrap().clone();
        let obj = self.obj();
        let env = Env {
            element: obj.upcast_ref(),
            settings: &settings,
        };
        let decode = self.decode.counts();
        let Some((summary, result)) = self.outputs.lock().unwrap().as_mut().map(|o| {
            o.set_decode(decode);
            o.summary(&env)
        }) else {
            return;
        };
        for side in [Input::Reference, Input::Distorted] {
            let pad = side_pad_name(side);
            let (w, c) = (
                decode.warnings[side as usize],
                decode.corrupted[side as usize],
            );
            if w + c > 0 {
                gst::warning!(
                    CAT,
                    imp = self,
                    "{pad}: its decoder reported errors ({w} warning messages, {c} frames \
                     flagged corrupted): the scores of those frames measure its concealment too"
                );
            }
        }
        gst::info!(
            CAT,
            imp = self,
            "summary: {} pairs, {} unmatched reference, {} unmatched distorted frames",
            summary.frames,
            summary.unmatched_ref,
            summary.unmatched_dist
        );
        gst::info!(
            CAT,
            imp = self,
            "frames read in device memory (zero-copy): {}, CUDA memory copied to the host: {}, \
             system memory: {}",
            memory.device,
            memory.downloaded,
            memory.system
        );
        if summary.frames == 0 && summary.unmatched_ref + summary.unmatched_dist > 0 {
            let text = nothing_paired(first, &settings, &summary);
            gst::warning!(CAT, imp = self, "{text}");
            gst::element_imp_warning!(self, gst::StreamError::Failed, ("{text}"));
        }
        if let Err(e) = result {
            self.post_error_message(e);
        }
    }

    /// New caps on one pad. They apply to the frames that follow on that pad only: the two
    /// inputs are checked against each other per pair (see [`Self::prepare_engine`]), so
    /// that a change on both inputs, whose caps events are handled at different times,
    /// works.
    fn on_caps(&self, pad: &gst_base::AggregatorPad, caps: &gst::Caps) -> bool {
        let roi = self.state.lock().unwrap().roi;
        let caps_of = match PadCaps::new(caps, self.pad_name(pad), roi) {
            Ok(c) => c,
            Err(e) => {
                self.post_error_message(e);
                self.state.lock().unwrap().failed = true;
                return false;
            }
        };
        gst::debug!(CAT, obj = pad, "caps {caps}");
        // With a `map`, src carries map frames of the measured picture's size.
        let map_caps = {
            let s = self.settings.lock().unwrap();
            s.map.kind().map(|_| {
                let m = caps_of.measured();
                (s.map_style, m.width, m.height, caps_of.info.clone())
            })
        };
        let mut state = self.state.lock().unwrap();
        if pad == &self.ref_pad {
            state.reference = Some(caps_of);
        } else {
            state.distorted = Some(caps_of);
        }
        drop(state);
        if pad == &self.dist_pad {
            match map_caps {
                Some((style, width, height, input)) => {
                    let takes = self.obj().src_pad().peer_query_caps(None);
                    let (caps, memory) = self.map_src_caps(style, width, height, &input, &takes);
                    gst::debug!(CAT, imp = self, "map frames: {caps}");
                    if !takes.can_intersect(&caps) {
                        // Said here, with the fix, instead of a bare not-negotiated later.
                        let nick = glib::EnumValue::from_value(&style.to_value())
                            .map_or(String::new(), |(_, v)| v.nick().to_owned());
                        gst::element_imp_error!(
                            self,
                            gst::CoreError::Negotiation,
                            ("downstream of src takes none of the map frames' caps"),
                            [
                                "map-style={} gives {caps}; downstream takes {takes}. Put \
                                 videoconvert after gpumetrics (and cudaupload after it for \
                                 CUDA memory), or choose the other map-style",
                                nick
                            ]
                        );
                        self.state.lock().unwrap().failed = true;
                        return false;
                    }
                    *self.map_memory.lock().unwrap() = memory;
                    self.obj().set_src_caps(&caps);
                }
                None => self.obj().set_src_caps(caps),
            }
        }
        true
    }

    /// The caps of the map frames on src, and the CUDA context whose memory they go out
    /// in: CUDA memory when the element has a CUDA context, src's peer names CUDA memory
    /// among the caps it takes (`cudadownload`, `nvh264enc`, CUDA filters) and GstCuda can
    /// allocate frames of the style, else system memory. A peer that takes any caps
    /// (`appsink`, `fakesink`) gets system memory, which every reader can map, as NVDEC's
    /// decoders decide. `takes`: the caps src's peer takes.
    fn map_src_caps(
        &self,
        style: MapStyle,
        width: u32,
        height: u32,
        input: &gst_video::VideoInfo,
        takes: &gst::Caps,
    ) -> (gst::Caps, Option<crate::gstcuda::Context>) {
        let system = super::map_render::caps(style, width, height, input, false);
        let Some(ctx) = self.cuda.get() else {
            return (system, None);
        };
        let cuda = super::map_render::caps(style, width, height, input, true);
        if takes.is_any() || !takes.can_intersect(&cuda) {
            return (system, None);
        }
        // GstCuda allocates only the formats it knows (1.22's pool refuses GRAY16_LE): a
        // pool of these frames is tried once here, so that what cannot be allocated is
        // never offered (then downstream gets system memory, or the caps error below).
        match super::map_render::Frames::new(style, width, height, Some(&ctx)) {
            Ok(_) => (cuda, Some(ctx)),
            Err(e) => {
                gst::info!(
                    CAT,
                    imp = self,
                    "no {} map frames in CUDA memory ({e}): system memory",
                    super::map_render::format(style).to_str()
                );
                (system, None)
            }
        }
    }

    fn pad_of(&self, side: Input) -> &gst_base::AggregatorPad {
        match side {
            Input::Reference => &self.ref_pad,
            Input::Distorted => &self.dist_pad,
        }
    }

    /// Takes the head frame of `side` for pairing: its oldest held frame when its frames
    /// are `held`, else its pad's (noting where that one ends).
    fn take(&self, side: Input, held: Option<Input>, input: &PadState) -> Option<gst::Buffer> {
        if held == Some(side) {
            return self.state.lock().unwrap().stalls.pop().map(|(_, b, _)| b);
        }
        let b = self.pad_of(side).pop_buffer();
        self.note_end(side, input);
        b
    }

    /// The running time the data flow has reached: the clock's less the latency (where a
    /// frame due now is in the streams). `None` without a clock.
    fn data_time(&self) -> Option<u64> {
        let obj = self.obj();
        let now = obj.current_running_time()?;
        let latency = obj.latency().unwrap_or(gst::ClockTime::ZERO);
        Some(now.saturating_sub(latency).nseconds())
    }

    /// A stalled input that delivers again, or ended, ends its stall.
    fn end_stall_if_resumed(&self, r: &PadState, d: &PadState) {
        let Some(stall) = self.state.lock().unwrap().stalls.current() else {
            return;
        };
        let pad = if stall.input == Input::Reference {
            r
        } else {
            d
        };
        if pad.head.is_some() || pad.eos {
            self.end_stall(pad.head.and_then(|h| h.running_time));
        }
    }

    /// Ends the stall in progress, if any, where the data flow is now (without a clock: at
    /// `fallback`, else where the frames seen end), in order with the frames before it.
    fn end_stall(&self, fallback: Option<u64>) {
        let now = self.data_time();
        let mut state = self.state.lock().unwrap();
        let at = now.or(fallback).or(state.last_end).unwrap_or(0);
        if let Some(e) = state.stalls.end(at) {
            gst::info!(
                CAT,
                imp = self,
                "{}: the stall ends at running time {} after {}",
                side_pad_name(e.input),
                gst::ClockTime::from_nseconds(e.running_time),
                gst::ClockTime::from_nseconds(e.duration.unwrap_or(0))
            );
            state.queue.push_stall(e);
        }
    }

    /// Live, at a timeout, with one input (X) empty and the other (Y) with a frame: what a
    /// stall asks for, or `None` when pairing decides (X ended, or both have frames).
    /// - X missed the deadline of Y's frame: X stalled (the start event), Y's frame is held;
    /// - while X is stalled, or Y has held frames, Y's new frames are held at once (a live
    ///   upstream is never blocked);
    /// - the oldest held frame whose `stall-budget` is spent is counted unmatched.
    fn stall_step(
        &self,
        (r, d): (PadState, PadState),
        (rp, dp): (PadState, PadState),
        held: Option<(Input, Head)>,
        fixed: Option<u64>,
        budget: u64,
    ) -> Option<Result<gst::FlowSuccess, gst::FlowError>> {
        let x = match (r.head, d.head) {
            (None, Some(_)) if !r.eos => Input::Reference,
            (Some(_), None) if !d.eos => Input::Distorted,
            _ => return None,
        };
        let y = other(x);
        let (y_now, y_pad) = match y {
            Input::Reference => (r.head?, rp),
            Input::Distorted => (d.head?, dp),
        };
        let tol = fixed.unwrap_or_else(|| pairing::tolerance(y_now.duration, None));
        let now = self.data_time();
        let passed = |deadline: u64| now.is_none_or(|n| n >= deadline);
        let mut state = self.state.lock().unwrap();
        if held.is_none() && state.stalls.current().is_none_or(|s| s.input != x) {
            // Y's frame waits on its pad: has X missed its deadline?
            let due = y_now.running_time.map_or(0, |t| t.saturating_add(tol));
            if !passed(due) {
                return Some(Err(gst_base::AGGREGATOR_FLOW_NEED_DATA));
            }
            let at = y_now.running_time.or(state.last_end).unwrap_or(0);
            if let Some(e) = state.stalls.start(x, at) {
                gst::info!(
                    CAT,
                    imp = self,
                    "{} stalled: no frame by the deadline of the {} frame at running time {}; \
                     its frames are held for up to stall-budget {}",
                    side_pad_name(x),
                    side_pad_name(y),
                    gst::ClockTime::from_nseconds(at),
                    gst::ClockTime::from_nseconds(budget)
                );
                state.active = true;
                state.queue.push_stall(e);
            }
        }
        if let Some(head) = y_pad.head {
            drop(state);
            let b = self.pad_of(y).pop_buffer()?;
            self.note_end(y, &y_pad);
            let mut state = self.state.lock().unwrap();
            if let Some((old, h)) = state.stalls.hold(y, b, head) {
                gst::debug!(
                    CAT,
                    imp = self,
                    "{} held frames: the oldest is unmatched",
                    stall::MAX_HELD
                );
                push_unmatched(&mut state, y, old, h.running_time);
            }
            return Some(self.settle_and_deliver(state, true));
        }
        // The oldest held frame: is its budget spent?
        let deadline = state.stalls.deadline(tol, budget)?;
        if !passed(deadline) {
            return Some(Err(gst_base::AGGREGATOR_FLOW_NEED_DATA));
        }
        let (side, b, h) = state.stalls.pop()?;
        gst::debug!(
            CAT,
            imp = self,
            "{} frame at {:?} waited stall-budget for its partner: unmatched",
            side_pad_name(side),
            h.running_time
        );
        push_unmatched(&mut state, side, b, h.running_time);
        Some(self.settle_and_deliver(state, true))
    }

    /// Head frames of both pads and the frame durations of their caps.
    fn heads(&self) -> (PadState, PadState) {
        let (rd, dd) = {
            let state = self.state.lock().unwrap();
            let duration = |c: &Option<PadCaps>| c.as_ref().and_then(|c| c.frame_duration);
            (duration(&state.reference), duration(&state.distorted))
        };
        (self.head(&self.ref_pad, rd), self.head(&self.dist_pad, dd))
    }

    /// Notes where a popped frame ends in running time (the stalled-input deadline), and
    /// the first frame of each input.
    fn note_end(&self, side: Input, input: &PadState) {
        let mut state = self.state.lock().unwrap();
        let first = &mut state.first[side as usize];
        if first.is_none() {
            *first = input.head;
        }
        if let Some(Head {
            running_time: Some(t),
            duration,
        }) = input.head
        {
            let end = t.saturating_add(duration.unwrap_or(0));
            state.last_end = Some(state.last_end.map_or(end, |e| e.max(end)));
        }
    }
}

/// The heads that pairing sees: an input's held frames come before its pad's.
fn with_held(held: Option<(Input, Head)>, r: PadState, d: PadState) -> (PadState, PadState) {
    let put = |side: Input, pad: PadState| match held {
        Some((s, h)) if s == side => PadState {
            head: Some(h),
            eos: pad.eos,
        },
        _ => pad,
    };
    (put(Input::Reference, r), put(Input::Distorted, d))
}

fn other(side: Input) -> Input {
    match side {
        Input::Reference => Input::Distorted,
        Input::Distorted => Input::Reference,
    }
}

fn side_pad_name(side: Input) -> &'static str {
    match side {
        Input::Reference => "ref_sink",
        Input::Distorted => "dist_sink",
    }
}

/// A frame without a partner, in order with the pairs before it (a distorted one leaves
/// without scores).
fn push_unmatched(state: &mut State, side: Input, buffer: gst::Buffer, running_time: Option<u64>) {
    state.active = true;
    let buffer = (side == Input::Distorted).then_some(buffer);
    state.queue.push_unmatched(buffer, side, running_time);
}

/// Why a run with frames compared none: each input's first frame and the tolerance in
/// force.
fn nothing_paired(
    first: [Option<Head>; 2],
    settings: &Settings,
    summary: &crate::message::Summary,
) -> String {
    let time = |h: &Option<Head>| match h {
        None => "no frame".to_string(),
        Some(Head {
            running_time: Some(t),
            duration,
        }) => format!(
            "first frame at running time {} (duration {})",
            gst::ClockTime::from_nseconds(*t),
            duration.map_or("unknown".into(), |d| gst::ClockTime::from_nseconds(d)
                .to_string())
        ),
        Some(_) => "first frame without a timestamp".to_string(),
    };
    let tolerance = match settings.pairing_tolerance {
        Some(t) => format!("pairing-tolerance {}", gst::ClockTime::from_nseconds(t)),
        None => {
            let t = pairing::tolerance(
                first[0].and_then(|h| h.duration),
                first[1].and_then(|h| h.duration),
            );
            format!(
                "automatic pairing tolerance {} (half the shorter frame duration, {} when no \
                 duration is known)",
                gst::ClockTime::from_nseconds(t),
                gst::ClockTime::from_nseconds(pairing::FALLBACK_TOLERANCE)
            )
        }
    };
    format!(
        "No frame pair was compared ({} reference and {} distorted frames had no partner): \
         ref_sink: {}; dist_sink: {}; {tolerance}. Frames pair when their running times are \
         within the tolerance: check the inputs' timestamps and segments, set \
         pairing-tolerance, or pairing=sequence for inputs that are not timed alike",
        summary.unmatched_ref,
        summary.unmatched_dist,
        time(&first[0]),
        time(&first[1])
    )
}

impl AggregatorImpl for GpuMetrics {
    fn start(&self) -> Result<(), gst::ErrorMessage> {
        // From here the run's settings are fixed (see set_property).
        self.running.store(true, Ordering::SeqCst);
        let settings = self.settings.lock().unwrap().clone();
        // A `roi` that is no rectangle fails the start; one that does not fit the frames
        // fails their caps (PadCaps::new).
        let roi = settings
            .roi
            .as_deref()
            .map(Rect::parse)
            .transpose()
            .map_err(|e| gst::error_msg!(gst::LibraryError::Settings, ("{e}")))?;
        let outputs = Outputs::new(&settings, self.obj().upcast_ref())?;
        let prometheus_bound = outputs.prometheus_bound().map(|a| a.to_string());
        if let (Some(asked), Some(bound)) = (&settings.prometheus_address, &prometheus_bound) {
            // With port 0 the system chose the port: this line and the property say which.
            gst::info!(
                CAT,
                imp = self,
                "prometheus-address {asked}: serving http://{bound}/metrics \
                 (prometheus-bound-address {bound})"
            );
        }
        *self.outputs.lock().unwrap() = Some(outputs);
        self.decode.start(
            self.obj().upcast_ref(),
            [self.ref_pad.upcast_ref(), self.dist_pad.upcast_ref()],
        );
        let aligner =
            (settings.align == super::Align::Auto).then(|| Aligner::new(settings.align_range));
        *self.state.lock().unwrap() = State {
            roi,
            prometheus_bound,
            aligner,
            ..State::default()
        };
        gst::debug!(CAT, imp = self, "started");
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        let active = self.state.lock().unwrap().active;
        if active {
            // Stopped before EOS: the held pairs still get their records, the frames held
            // for a stalled input are unmatched, and the summary is posted if it was not.
            self.end_stall(None);
            {
                let mut state = self.state.lock().unwrap();
                while let Some((side, b, h)) = state.stalls.pop() {
                    push_unmatched(&mut state, side, b, h.running_time);
                }
                // The frames the alignment holds are not measured any more.
                let held = state.aligner.as_mut().map(Aligner::finish);
                for step in held.into_iter().flatten() {
                    match step {
                        Step::Pair {
                            distorted,
                            distorted_time,
                            ..
                        }
                        | Step::UnmatchedDistorted {
                            buffer: distorted,
                            running_time: distorted_time,
                        } => push_unmatched(
                            &mut state,
                            Input::Distorted,
                            distorted,
                            Some(distorted_time),
                        ),
                        Step::UnmatchedReference { running_time, .. } => state
                            .queue
                            .push_unmatched(None, Input::Reference, Some(running_time)),
                        Step::Unaligned {
                            buffer,
                            running_time,
                        } => state.queue.push_unaligned(buffer, running_time),
                        Step::Change(c) => state.queue.push_align(AlignRecord::of(&c)),
                        Step::SequenceEnd => {}
                    }
                }
            }
            let _ = self.drain_held(false);
            self.finish_run();
        }
        // The map frames' pool ends with the run (frames downstream still holds go when
        // it releases them).
        self.map_frames.lock().unwrap().take();
        let outputs = self.outputs.lock().unwrap().take();
        if let Some(outputs) = outputs {
            outputs.end();
        }
        self.decode.stop();
        *self.state.lock().unwrap() = State::default();
        self.running.store(false, Ordering::SeqCst);
        gst::debug!(CAT, imp = self, "stopped");
        Ok(())
    }

    fn flush(&self) -> Result<gst::FlowSuccess, gst::FlowError> {
        // A flushing seek: pooled statistics continue; the next EOS posts an updated summary.
        // The pairs the engine holds back were measured: they are scored as the last of
        // their sequence and recorded (messages, stats file, summary), and only their
        // buffers go with the flushed data. Temporal metrics start a new sequence.
        let now = self.data_time();
        let mut state = self.state.lock().unwrap();
        state.summary_posted = false;
        let held = state.queue.waiting();
        let mut taken = Ok(());
        if held > 0 {
            let finished = state.scorer.finish();
            taken = self.take_scores(&mut state, finished, true);
            gst::info!(
                CAT,
                imp = self,
                "flush: {held} measured pair(s) held back by the engine are recorded; their \
                 buffers are flushed"
            );
        }
        let dropped = state.scorer.reset();
        debug_assert_eq!(dropped, 0, "finish() left no pair held");
        // Running time may start over: the next pair starts a window wherever it falls.
        state.engine_window = None;
        // A stall in progress ends here (every start has its end); the frames held for it
        // go with the flushed data, like the pads' own.
        let at = now.or(state.last_end).unwrap_or(0);
        if let Some(e) = state.stalls.end(at) {
            state.queue.push_stall(e);
        }
        if state.aligner.is_some() {
            // The held frames go with the flushed data; the search starts over.
            let range = self.settings.lock().unwrap().align_range;
            state.aligner = Some(Aligner::new(range));
        }
        let flushed = state.stalls.clear().len();
        if flushed > 0 {
            gst::debug!(CAT, imp = self, "flush: {flushed} held frame(s) flushed");
        }
        let delivered = self.deliver(state, false);
        if let Some(o) = self.outputs.lock().unwrap().as_mut() {
            o.flush();
        }
        self.parent_flush()?;
        taken.and(delivered)
    }

    fn negotiate(&self) -> bool {
        // The output caps are the dist_sink caps, set when they arrive.
        true
    }

    fn clip(&self, pad: &gst_base::AggregatorPad, buffer: gst::Buffer) -> Option<gst::Buffer> {
        // GAP events arrive as empty GAP buffers: no frame at that time, nothing to compare.
        // The partner frame (if any) ends up unmatched.
        if buffer.flags().contains(gst::BufferFlags::GAP) && buffer.size() == 0 {
            // (not a frame: no decoder output to count either)
            gst::log!(CAT, obj = pad, "skipping gap at {:?}", buffer.pts());
            return None;
        }
        let side = if pad == &self.ref_pad {
            Input::Reference
        } else {
            Input::Distorted
        };
        self.decode.frame(side, &buffer);
        let Some(pts) = buffer.pts() else {
            return Some(buffer);
        };
        let segment = pad.segment();
        let Some(segment) = segment.downcast_ref::<gst::ClockTime>() else {
            return Some(buffer);
        };
        // Saturating: a PTS near the end of the clock range must not overflow.
        let stop = buffer.duration().map(|d| pts.saturating_add(d));
        if segment.clip(pts, stop).is_none() {
            gst::log!(
                CAT,
                obj = pad,
                "dropping buffer at {pts} outside the segment"
            );
            return None;
        }
        Some(buffer)
    }

    fn sink_event(&self, pad: &gst_base::AggregatorPad, event: gst::Event) -> bool {
        match event.view() {
            gst::EventView::Caps(c) => {
                let caps = c.caps_owned();
                self.on_caps(pad, &caps)
            }
            gst::EventView::Segment(s) => {
                if pad == &self.dist_pad {
                    let segment = s.segment();
                    if let Some(segment) = segment.downcast_ref::<gst::ClockTime>() {
                        self.obj().update_segment(segment);
                    } else {
                        gst::element_imp_error!(
                            self,
                            gst::StreamError::Format,
                            (
                                "dist_sink: only TIME segments are supported, got {:?}",
                                segment.format()
                            )
                        );
                        return false;
                    }
                }
                self.parent_sink_event(pad, event)
            }
            _ => self.parent_sink_event(pad, event),
        }
    }

    fn src_query(&self, query: &mut gst::QueryRef) -> bool {
        self.cuda.answer(self.obj().upcast_ref(), query) || self.parent_src_query(query)
    }

    fn sink_query(&self, pad: &gst_base::AggregatorPad, query: &mut gst::QueryRef) -> bool {
        if self.cuda.answer(self.obj().upcast_ref(), query) {
            return true;
        }
        match query.view_mut() {
            gst::QueryViewMut::Caps(q) => {
                let templ = pad.pad_template_caps();
                let mut result = templ.clone();
                // With a `map`, src carries map frames, not the distorted stream.
                let passes_through = self.settings.lock().unwrap().map == super::Map::None;
                if pad == &self.dist_pad && passes_through {
                    // The distorted stream goes out on src: ask downstream what it takes.
                    if let Some(peer) = self.obj().src_pad().peer() {
                        let downstream = peer.query_caps(Some(&templ));
                        result =
                            downstream.intersect_with_mode(&templ, gst::CapsIntersectMode::First);
                    }
                }
                let prefer_cuda = self.settings.lock().unwrap().backend != Backend::Cpu;
                if prefer_cuda {
                    // The CUDA backend reads CUDA memory in place: ask for it first, so that
                    // an upstream element that can give either (cudaupload) gives it.
                    result = caps::cuda_memory_first(&result);
                }
                if let Some(filter) = q.filter() {
                    result = if prefer_cuda {
                        result.intersect_with_mode(filter, gst::CapsIntersectMode::First)
                    } else {
                        filter.intersect_with_mode(&result, gst::CapsIntersectMode::First)
                    };
                }
                q.set_result(&result);
                true
            }
            gst::QueryViewMut::Allocation(q) => {
                let passes_through = self.settings.lock().unwrap().map == super::Map::None;
                if pad == &self.dist_pad && passes_through {
                    // Buffers leave through src: let downstream decide the allocation.
                    if self.obj().src_pad().peer_query(query) {
                        return true;
                    }
                    return self.parent_sink_query(pad, query);
                }
                // We read strides/offsets from the video meta, so any layout is fine.
                q.add_allocation_meta::<gst_video::VideoMeta>(None);
                true
            }
            _ => self.parent_sink_query(pad, query),
        }
    }

    fn next_time(&self) -> Option<gst::ClockTime> {
        // Live: the deadline of the earliest waiting frame (its running time + tolerance);
        // the base class adds the latency and times out if the partner has not arrived.
        let fixed = self.fixed_tolerance();
        let budget = self.settings.lock().unwrap().stall_budget;
        let (rp, dp) = self.heads();
        if self.state.lock().unwrap().aligner.is_some() {
            // align=auto: each frame is taken as it arrives (the alignment decides what
            // pairs); nothing to wait for otherwise.
            let now = rp.head.is_some() || dp.head.is_some() || (rp.eos && dp.eos);
            return now.then_some(gst::ClockTime::ZERO);
        }
        let (held, stall, last_end) = {
            let state = self.state.lock().unwrap();
            (state.stalls.front(), state.stalls.current(), state.last_end)
        };
        let (r, d) = with_held(held, rp, dp);
        let ended = |i: &PadState| i.eos && i.head.is_none();
        if (ended(&r) && (d.head.is_some() || ended(&d))) || (ended(&d) && r.head.is_some()) {
            // Something to do right away: drain the input left, or finish.
            return Some(gst::ClockTime::ZERO);
        }
        let pad_of = |side: Input| if side == Input::Reference { &rp } else { &dp };
        if let Some((_, front)) = held {
            // Held frames: a new frame of theirs joins them, a frame of the other input
            // pairs with them, at once; otherwise the oldest waits until its budget is spent.
            if rp.head.is_some() || dp.head.is_some() {
                return Some(gst::ClockTime::ZERO);
            }
            let tol = fixed.unwrap_or_else(|| pairing::tolerance(front.duration, None));
            return self
                .state
                .lock()
                .unwrap()
                .stalls
                .deadline(tol, budget)
                .filter(|t| *t <= pairing::MAX_DEADLINE)
                .map(gst::ClockTime::from_nseconds);
        }
        if let Some(s) = stall
            && pad_of(other(s.input)).head.is_some()
        {
            // A stall in progress: the other input's frame is held at once.
            return Some(gst::ClockTime::ZERO);
        }
        // One input ended and the other has nothing yet: give it until the end of what was
        // seen plus the tolerance, then finish (a live input may stall without EOS).
        let last_end = if ended(&r) || ended(&d) {
            last_end
        } else {
            None
        };
        pairing::deadline(r.head, d.head, last_end, fixed).map(gst::ClockTime::from_nseconds)
    }

    fn aggregate(&self, timeout: bool) -> Result<gst::FlowSuccess, gst::FlowError> {
        if self.state.lock().unwrap().failed {
            // An error was posted: measure nothing more (the pipeline is being shut down).
            return Err(gst::FlowError::Error);
        }
        let result = self.aggregate_step(timeout);
        if matches!(
            result,
            Err(gst::FlowError::Error | gst::FlowError::NotNegotiated)
        ) {
            self.state.lock().unwrap().failed = true;
        }
        result
    }
}

impl GpuMetrics {
    /// Decides, at the first distorted frame, whether ref_sink takes part in the run: it
    /// does when it is linked (or has had a frame) within [`LINK_GRACE`]. Otherwise the run
    /// measures dist_sink alone, and ref_sink is ended (stream-start, segment, EOS) so that
    /// the aggregator stops waiting for it.
    fn decide_inputs(&self) {
        if self.state.lock().unwrap().inputs != Inputs::Undecided {
            return;
        }
        let linked = || {
            self.ref_pad.is_linked()
                || self
                    .ref_pad
                    .sticky_event::<gst::event::StreamStart>(0)
                    .is_some()
        };
        let deadline = std::time::Instant::now() + LINK_GRACE;
        while !linked() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let inputs = if linked() {
            Inputs::Both
        } else {
            Inputs::DistortedOnly
        };
        {
            let mut state = self.state.lock().unwrap();
            if state.inputs != Inputs::Undecided {
                return;
            }
            state.inputs = inputs;
        }
        if inputs == Inputs::Both {
            return;
        }
        gst::info!(
            CAT,
            imp = self,
            "ref_sink is not linked: measuring dist_sink alone (no-reference metrics)"
        );
        let group = gst::GroupId::next();
        let ended = self.ref_pad.send_event(
            gst::event::StreamStart::builder("gpumetrics-no-reference")
                .group_id(group)
                .build(),
        ) && self.ref_pad.send_event(gst::event::Segment::new(
            &gst::FormattedSegment::<gst::ClockTime>::new(),
        )) && self.ref_pad.send_event(gst::event::Eos::new());
        if !ended {
            gst::warning!(CAT, imp = self, "could not end the unlinked ref_sink");
        }
    }

    /// One step of `align=auto`: takes the head frame of each input that has one, hands it
    /// with its thumbnail to the alignment, and carries out what it says (pairs to measure,
    /// frames to count); finishes when both inputs ended.
    fn align_step(&self) -> Result<gst::FlowSuccess, gst::FlowError> {
        let (rp, dp) = self.heads();
        let mut steps = Vec::new();
        let mut took = false;
        for (side, pad) in [(Input::Reference, rp), (Input::Distorted, dp)] {
            let Some(head) = pad.head else {
                continue;
            };
            let Some(buffer) = self.pad_of(side).pop_buffer() else {
                continue;
            };
            self.note_end(side, &pad);
            took = true;
            let name = side_pad_name(side);
            let Some(running_time) = head.running_time else {
                // No place in time: nothing to align it by.
                let mut state = self.state.lock().unwrap();
                state.notices.warn_once(format!(
                    "{name}: frames without a timestamp (no PTS, or outside the segment) \
                     cannot be aligned: they are counted, never measured"
                ));
                state.active = true;
                push_unmatched(&mut state, side, buffer, None);
                drop(state);
                continue;
            };
            let caps = {
                let state = self.state.lock().unwrap();
                match side {
                    Input::Reference => state.reference.clone(),
                    Input::Distorted => state.distorted.clone(),
                }
            };
            let Some(caps) = caps else {
                gst::element_imp_error!(
                    self,
                    gst::CoreError::Negotiation,
                    ("Received buffers before caps on {name}")
                );
                return Err(gst::FlowError::NotNegotiated);
            };
            let device = self.settings.lock().unwrap().backend != Backend::Cpu;
            let thumbnail = self
                .state
                .lock()
                .unwrap()
                .thumbnails
                .of(&buffer, &caps, name, device, &*self.obj())
                .map_err(|e| {
                    gst::element_imp_error!(self, gst::StreamError::Format, ("{e}"));
                    gst::FlowError::Error
                })?;
            let incoming = Incoming {
                running_time,
                duration: head.duration,
                thumbnail,
                buffer,
            };
            let mut state = self.state.lock().unwrap();
            state.active = true;
            let aligner = state.aligner.as_mut().ok_or(gst::FlowError::Error)?;
            steps.extend(match side {
                Input::Reference => aligner.push_reference(incoming),
                Input::Distorted => aligner.push_distorted(incoming),
            });
        }
        let ended = rp.eos && rp.head.is_none() && dp.eos && dp.head.is_none();
        if ended && let Some(a) = self.state.lock().unwrap().aligner.as_mut() {
            steps.extend(a.finish());
        }
        self.carry_out(steps)?;
        if ended {
            gst::debug!(CAT, imp = self, "both inputs ended: finishing");
            let drained = self.drain_held(true);
            self.finish_run();
            return drained.and(Err(gst::FlowError::Eos));
        }
        if took {
            Ok(gst::FlowSuccess::Ok)
        } else {
            Err(gst_base::AGGREGATOR_FLOW_NEED_DATA)
        }
    }

    /// Carries out the alignment's steps, in order.
    fn carry_out(&self, steps: Vec<Step<gst::Buffer>>) -> Result<(), gst::FlowError> {
        for step in steps {
            match step {
                Step::Pair {
                    reference,
                    distorted,
                    distorted_time,
                    ..
                } => {
                    self.obj().selected_samples(
                        distorted.pts(),
                        distorted.dts(),
                        distorted.duration(),
                        None,
                    );
                    self.compare_and_push(Some(reference), distorted, Some(distorted_time))?;
                }
                Step::SequenceEnd => {
                    // The pairs before the loss end their sequence (temporal metrics start
                    // over with the next lock).
                    let mut state = self.state.lock().unwrap();
                    let finished = state.scorer.finish();
                    self.take_scores(&mut state, finished, true)?;
                    self.deliver(state, true)?;
                }
                step => {
                    let mut state = self.state.lock().unwrap();
                    match step {
                        Step::UnmatchedReference { running_time, .. } => state
                            .queue
                            .push_unmatched(None, Input::Reference, Some(running_time)),
                        Step::UnmatchedDistorted {
                            buffer,
                            running_time,
                        } => {
                            push_unmatched(&mut state, Input::Distorted, buffer, Some(running_time))
                        }
                        Step::Unaligned {
                            buffer,
                            running_time,
                        } => state.queue.push_unaligned(buffer, running_time),
                        Step::Change(c) => state.queue.push_align(AlignRecord::of(&c)),
                        Step::Pair { .. } | Step::SequenceEnd => unreachable!("matched above"),
                    }
                    self.settle_and_deliver(state, true)?;
                }
            }
        }
        Ok(())
    }

    /// One step of a run of dist_sink alone: measure its next frame, or finish at its EOS.
    fn measure_alone(&self) -> Result<gst::FlowSuccess, gst::FlowError> {
        let dd = self
            .state
            .lock()
            .unwrap()
            .distorted
            .as_ref()
            .and_then(|c| c.frame_duration);
        let d = self.head(&self.dist_pad, dd);
        if d.head.is_some() {
            let db = self.dist_pad.pop_buffer().ok_or(gst::FlowError::Error)?;
            self.note_end(Input::Distorted, &d);
            self.obj()
                .selected_samples(db.pts(), db.dts(), db.duration(), None);
            return self.compare_and_push(None, db, d.head.and_then(|h| h.running_time));
        }
        if d.eos {
            gst::debug!(CAT, imp = self, "dist_sink ended: finishing");
            let drained = self.drain_held(true);
            self.finish_run();
            return drained.and(Err(gst::FlowError::Eos));
        }
        Err(gst_base::AGGREGATOR_FLOW_NEED_DATA)
    }

    fn aggregate_step(&self, timeout: bool) -> Result<gst::FlowSuccess, gst::FlowError> {
        if self.state.lock().unwrap().inputs == Inputs::DistortedOnly {
            return self.measure_alone();
        }
        if self.state.lock().unwrap().aligner.is_some() {
            return self.align_step();
        }
        let (fixed, mode, budget) = {
            let s = self.settings.lock().unwrap();
            (s.pairing_tolerance, s.pairing_mode(), s.stall_budget)
        };
        let (rp, dp) = self.heads();
        self.end_stall_if_resumed(&rp, &dp);
        let held = self.state.lock().unwrap().stalls.front();
        // The frames held during a stall come before their pad's.
        let (r, d) = with_held(held, rp, dp);
        if timeout && (r.head.is_none() || d.head.is_none()) {
            // Live, and an input missed its deadline: the sequence of pairs is interrupted.
            // The pairs in flight are completed, and those the engine holds back are
            // finished now (as a caps change does), not when that input resumes or the
            // run ends.
            let state = self.state.lock().unwrap();
            if state.queue.waiting() > 0 {
                self.settle_and_deliver(state, true)?;
                if self.state.lock().unwrap().queue.waiting() > 0 {
                    gst::debug!(CAT, imp = self, "live timeout: finishing the held pairs");
                    self.drain_held(true)?;
                }
            }
        }
        if timeout && let Some(step) = self.stall_step((r, d), (rp, dp), held, fixed, budget) {
            return step;
        }
        let decision = pairing::decide(mode, r, d, timeout, fixed);
        gst::trace!(
            CAT,
            imp = self,
            "aggregate timeout={timeout} ref={r:?} dist={d:?} held={held:?} -> {decision:?}"
        );
        let held_side = held.map(|(side, _)| side);
        match decision {
            Decision::Pair | Decision::PairUntimed => {
                if decision == Decision::PairUntimed {
                    let pads = match (
                        r.head.and_then(|h| h.running_time),
                        d.head.and_then(|h| h.running_time),
                    ) {
                        (None, None) => "ref_sink and dist_sink",
                        (None, _) => "ref_sink",
                        _ => "dist_sink",
                    };
                    self.state.lock().unwrap().notices.warn_once(format!(
                        "{pads}: frames without a timestamp (no PTS, or outside the segment) \
                         cannot be paired by time; they are compared in sequence (n-th with \
                         n-th). Set pairing=sequence if the inputs are untimed"
                    ));
                }
                let rb = self
                    .take(Input::Reference, held_side, &r)
                    .ok_or(gst::FlowError::Error)?;
                let db = self
                    .take(Input::Distorted, held_side, &d)
                    .ok_or(gst::FlowError::Error)?;
                // Lets applications (emit-signals / samples-selected) see what is compared.
                self.obj()
                    .selected_samples(db.pts(), db.dts(), db.duration(), None);
                self.compare_and_push(Some(rb), db, d.head.and_then(|h| h.running_time))
            }
            Decision::DropRef => {
                let b = self.take(Input::Reference, held_side, &r);
                gst::debug!(
                    CAT,
                    imp = self,
                    "reference frame at {:?} has no partner (unmatched)",
                    b.as_ref().and_then(|b| b.pts())
                );
                // Counted in order with the pairs before it (the windows follow time).
                let mut state = self.state.lock().unwrap();
                state.active = true;
                let rt = r.head.and_then(|h| h.running_time);
                state.queue.push_unmatched(None, Input::Reference, rt);
                self.settle_and_deliver(state, true)
            }
            Decision::DropDist => {
                let b = self
                    .take(Input::Distorted, held_side, &d)
                    .ok_or(gst::FlowError::Error)?;
                gst::debug!(
                    CAT,
                    imp = self,
                    "distorted frame at {:?} has no partner (unmatched); passed on without \
                     scores",
                    b.pts()
                );
                // It leaves after the buffers of the pairs held back, in order.
                let mut state = self.state.lock().unwrap();
                state.active = true;
                let rt = d.head.and_then(|h| h.running_time);
                state.queue.push_unmatched(Some(b), Input::Distorted, rt);
                self.settle_and_deliver(state, true)
            }
            Decision::Eos => {
                gst::debug!(
                    CAT,
                    imp = self,
                    "{}: finishing",
                    if r.eos && d.eos {
                        "both inputs ended"
                    } else {
                        "one input ended and the other stalled"
                    }
                );
                self.end_stall(None);
                let drained = self.drain_held(true);
                self.finish_run();
                drained.and(Err(gst::FlowError::Eos))
            }
            Decision::Wait => Err(gst_base::AGGREGATOR_FLOW_NEED_DATA),
        }
    }
}
