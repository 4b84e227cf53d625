// SPDX-License-Identifier: MPL-2.0
//! Implementation of the `gpumetrics` element (a `GstAggregator` with two always sink pads).
//!
//! Data flow per aggregate() call: look at the head buffer of both sink pads, let
//! [`crate::pairing::decide`] say what to do, then either compare the pair (engine), drop an
//! unmatched reference frame, pass an unmatched distorted frame on without scores, or finish
//! (summary + EOS). The distorted buffer always leaves through `src` unchanged (same memory);
//! it is only made writable to attach the scores meta.

use std::fs::File;
use std::io::BufWriter;
use std::sync::{LazyLock, Mutex};

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::prelude::*;
use gst_base::subclass::prelude::*;

use gpumetrics_engine::{
    BackendChoice, BackendKind, DeviceFrame, Engine, EngineError, Frame, HostFrame, PlaneOffsets,
    Pooler,
};

use super::settings::{self, Settings};
use super::{Backend, CAT};
use crate::message::{FRAME_MESSAGE_NAME, FrameScores, Summary};
use crate::pairing::{self, Decision, Head, Input};
use crate::stats::StatsWriter;
use crate::{caps, gstcuda, meta};

/// A compared pair whose distorted buffer waits for its scores (VMAF holds one pair back).
struct Held {
    buffer: gst::Buffer,
    frame: u64,
    running_time: Option<u64>,
}

/// Negotiated input of one sink pad.
#[derive(Debug, Default)]
struct PadState {
    info: Option<gst_video::VideoInfo>,
    cuda_memory: bool,
    /// 1/framerate from the caps, in ns.
    frame_duration: Option<u64>,
}

#[derive(Default)]
struct State {
    reference: PadState,
    distorted: PadState,
    engine: Option<Engine>,
    pooler: Pooler,
    /// Index of the next compared pair.
    frame: u64,
    unmatched_ref: u64,
    unmatched_dist: u64,
    stats: Option<StatsWriter<BufWriter<File>>>,
    summary_posted: bool,
    /// A frame of this run was seen (decides whether stop() has something to summarise).
    active: bool,
    /// The GstCudaContext the engine runs in (None: the device's primary context, or CPU).
    cuda_ctx: Option<gstcuda::Context>,
    /// How frames reached the backend (the `memory-stats` property).
    memory: MemoryStats,
    /// The caps (reference, distorted) the engine was built for: a pair of other caps
    /// rebuilds it.
    engine_infos: Option<(gst_video::VideoInfo, gst_video::VideoInfo)>,
    /// An element error was posted: no further pair is measured in this run.
    failed: bool,
    /// Running time where the frames seen so far end: the live deadline of an input that
    /// stalls after the other one ended.
    last_end: Option<u64>,
    /// Warnings already posted in this run (each is posted once).
    warned: Vec<String>,
    /// Warnings to post once the state lock is released.
    pending_warnings: Vec<String>,
    /// The compared pair whose scores wait for the next pair (engines with lag).
    held: Option<Held>,
    /// The held pair of an engine replaced on a caps change, scored as its sequence's last.
    finished: Option<(Held, gpumetrics_engine::Scores)>,
    /// Unmatched distorted buffers that arrived after the held one: they leave after it, so
    /// that the output stays in order.
    behind: Vec<gst::Buffer>,
    /// Latency to report once the state lock is released (ns).
    pending_latency: Option<u64>,
}

impl State {
    /// Queues `text` as an element warning unless this run already posted it.
    fn warn_once(&mut self, text: String) {
        if !self.warned.contains(&text) {
            self.warned.push(text.clone());
            self.pending_warnings.push(text);
        }
    }
}

/// Frames by the way they were read: in place in device memory (zero-copy), CUDA memory
/// mapped for the CPU (a device-to-host copy by GStreamer), system memory.
#[derive(Debug, Default, Clone, Copy)]
struct MemoryStats {
    device: u64,
    downloaded: u64,
    system: u64,
}

/// One input frame, mapped the way the backend reads it (on the stack for one pair).
enum Mapped<'a> {
    /// The whole buffer mapped for reading, and where it says its planes are.
    Host {
        map: gst::BufferMap<'a, gst::buffer::Readable>,
        planes: PlaneOffsets,
    },
    Device(gstcuda::DeviceMap<'a>),
}

pub struct GpuMetrics {
    ref_pad: gst_base::AggregatorPad,
    dist_pad: gst_base::AggregatorPad,
    settings: Mutex<Settings>,
    state: Mutex<State>,
    /// The GstCudaContext shared with the neighbours (gst.cuda.context), from 1.22's
    /// libgstcuda when it loads. Never locked while `state` is waited for.
    cuda: Mutex<Option<gstcuda::Context>>,
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
            cuda: Mutex::new(None),
        }
    }
}

fn engine_error_kind(e: &EngineError) -> gst::StreamError {
    match e {
        EngineError::InvalidOption { .. } => gst::StreamError::Failed,
        EngineError::SizeMismatch { .. } | EngineError::IncompatibleFormats { .. } => {
            gst::StreamError::Format
        }
        _ => gst::StreamError::Failed,
    }
}

impl ObjectImpl for GpuMetrics {
    fn properties() -> &'static [glib::ParamSpec] {
        settings::properties()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        self.settings.lock().unwrap().set(pspec.name(), value);
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        if pspec.name() == settings::MEMORY_STATS {
            let m = self.state.lock().unwrap().memory;
            return gst::Structure::builder("gpumetrics-memory")
                .field("device-frames", m.device)
                .field("downloaded-frames", m.downloaded)
                .field("system-frames", m.system)
                .build()
                .to_value();
        }
        self.settings.lock().unwrap().get(pspec.name())
    }

    fn constructed(&self) {
        self.parent_constructed();
        let obj = self.obj();
        obj.add_pad(&self.ref_pad).unwrap();
        obj.add_pad(&self.dist_pad).unwrap();
    }
}

impl GstObjectImpl for GpuMetrics {}

impl ElementImpl for GpuMetrics {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static ELEMENT_METADATA: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "GPU video quality metrics",
                "Filter/Analyzer/Video",
                "Compares the distorted video (dist_sink) with the reference video (ref_sink) \
                 frame by frame and reports quality metrics (PSNR, SSIM, MS-SSIM, SSIMULACRA2, Butteraugli, VMAF) as \
                 'gpumetrics' element messages, GstGpuMetricsMeta buffer meta and an optional \
                 stats file, plus a pooled 'gpumetrics-summary' message at EOS. Frames are \
                 paired by running time (or by sequence). The distorted stream is passed \
                 through on src unchanged. Runs on NVIDIA GPUs (CUDA) or the CPU.",
                "gpumetrics developers <https://github.com/gpumetrics/gpumetrics>",
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
        if context.context_type() == gstcuda::CONTEXT_TYPE
            && let Ok(api) = gstcuda::api()
        {
            let mut slot = self.cuda.lock().unwrap();
            if slot.is_none() {
                *slot = gstcuda::Context::from_gst_context(api, self.obj().upcast_ref(), context);
                if let Some(c) = slot.as_ref() {
                    gst::debug!(
                        CAT,
                        imp = self,
                        "got CUDA context of device {}",
                        c.device_id()
                    );
                }
            }
        }
        self.parent_set_context(context)
    }

    fn change_state(
        &self,
        transition: gst::StateChange,
    ) -> Result<gst::StateChangeSuccess, gst::StateChangeError> {
        if transition == gst::StateChange::NullToReady {
            self.ensure_cuda_context();
        }
        let ret = self.parent_change_state(transition)?;
        if transition == gst::StateChange::ReadyToNull {
            *self.cuda.lock().unwrap() = None;
        }
        Ok(ret)
    }
}

impl GpuMetrics {
    /// Finds the GstCudaContext of the neighbours (downstream, upstream, then the
    /// application via need-context) or creates one on `device-id` and announces it, so
    /// that NVDEC decoders feeding us decode into the context our kernels run in and two
    /// instances on one GPU share it. Does nothing for backend=cpu or without libgstcuda.
    fn ensure_cuda_context(&self) {
        let (backend, device_id) = {
            let s = self.settings.lock().unwrap();
            (s.backend, s.device_id)
        };
        if backend == Backend::Cpu || self.cuda.lock().unwrap().is_some() {
            return;
        }
        let api = match gstcuda::api() {
            Ok(api) => api,
            Err(why) => {
                gst::info!(
                    CAT,
                    imp = self,
                    "no GstCuda ({why}): CUDA memory cannot be shared"
                );
                return;
            }
        };
        let obj = self.obj();
        let have = || self.cuda.lock().unwrap().is_some();
        let pads = [
            obj.src_pad().upcast_ref::<gst::Pad>().clone(),
            self.ref_pad.clone().upcast(),
            self.dist_pad.clone().upcast(),
        ];
        for pad in pads {
            let mut q = gst::query::Context::new(gstcuda::CONTEXT_TYPE);
            if pad.peer_query(&mut q)
                && let Some(c) = q.context_owned()
            {
                obj.set_context(&c);
                if have() {
                    gst::debug!(CAT, obj = pad, "using the CUDA context of this pad's peer");
                    return;
                }
            }
        }
        let msg = gst::message::NeedContext::builder(gstcuda::CONTEXT_TYPE)
            .src(&*obj)
            .build();
        let _ = obj.post_message(msg);
        if have() {
            return;
        }
        let Some(ctx) = gstcuda::Context::new(api, device_id) else {
            gst::info!(
                CAT,
                imp = self,
                "cannot create a CUDA context on device {device_id}"
            );
            return;
        };
        gst::info!(
            CAT,
            imp = self,
            "created a CUDA context on device {device_id}"
        );
        *self.cuda.lock().unwrap() = Some(ctx.clone());
        if let Some(c) = ctx.to_gst_context(api) {
            obj.set_context(&c);
            let msg = gst::message::HaveContext::builder(c).src(&*obj).build();
            let _ = obj.post_message(msg);
        }
    }

    /// Answers a `gst.cuda.context` query with our context.
    fn answer_cuda_query(&self, query: &mut gst::QueryRef) -> bool {
        let gst::QueryView::Context(q) = query.view() else {
            return false;
        };
        if q.context_type() != gstcuda::CONTEXT_TYPE {
            return false;
        }
        let Ok(api) = gstcuda::api() else {
            return false;
        };
        let ctx = self.cuda.lock().unwrap().clone();
        ctx.is_some_and(|c| c.answer_query(api, self.obj().upcast_ref(), query))
    }

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
    fn head(&self, pad: &gst_base::AggregatorPad, caps_duration: Option<u64>) -> Input {
        let head = pad.peek_buffer().map(|b| Head {
            running_time: Self::running_time(pad, &b),
            duration: b.duration().map(|d| d.nseconds()).or(caps_duration),
        });
        Input {
            head,
            eos: pad.is_eos(),
        }
    }

    /// Creates the engine for the caps of the pair about to be compared (the current caps of
    /// both pads: each pad's caps event is handled when its frames before it are gone), and
    /// rebuilds it when those caps changed. On failure the element error is posted and `Err`
    /// returned.
    fn ensure_engine(&self, state: &mut State) -> Result<(), gst::FlowError> {
        let (Some(ri), Some(di)) = (state.reference.info.clone(), state.distorted.info.clone())
        else {
            gst::element_imp_error!(
                self,
                gst::CoreError::Negotiation,
                ("Received buffers before caps on both sink pads")
            );
            return Err(gst::FlowError::NotNegotiated);
        };
        if state.engine.is_some()
            && state
                .engine_infos
                .as_ref()
                .is_some_and(|(r, d)| *r == ri && *d == di)
        {
            return Ok(());
        }
        if let Some(mut old) = state.engine.take() {
            // The held pair ends its sequence: scored as libvmaf scores a last frame.
            if let (Some(held), Some(scores)) = (state.held.take(), old.finish().pop()) {
                state.finished = Some((held, scores));
            }
            gst::info!(
                CAT,
                imp = self,
                "caps changed after {} pairs: ref_sink {} {}x{}, dist_sink {} {}x{}",
                state.frame,
                ri.format().to_str(),
                ri.width(),
                ri.height(),
                di.format().to_str(),
                di.width(),
                di.height()
            );
        }
        state.engine_infos = None;
        let layout = |info: &gst_video::VideoInfo, pad: &str| {
            caps::layout(info).map_err(|msg| {
                gst::element_imp_error!(self, gst::StreamError::Format, ("{pad}: {msg}"));
                gst::FlowError::NotNegotiated
            })
        };
        let rl = layout(&ri, "ref_sink")?;
        let dl = layout(&di, "dist_sink")?;
        let settings = self.settings.lock().unwrap().clone();
        let config = settings.engine_config();
        if config.metrics.is_empty() {
            state.warn_once("metrics is empty: pairs are counted, no scores".into());
        }
        // The CUDA backend runs in the shared GstCudaContext (or the one upstream memory
        // lives in, see adopt_cuda_context), so device frames are read in place.
        let cuda_ctx = match (config.backend, gstcuda::api()) {
            (BackendChoice::Cpu, _) | (_, Err(_)) => None,
            _ => state
                .cuda_ctx
                .clone()
                .or_else(|| self.cuda.lock().unwrap().clone()),
        };
        let colorimetry = |info, layout: gpumetrics_engine::FrameLayout| {
            caps::colorimetry(info, layout.format.family())
        };
        let mut builder = Engine::builder(&config, rl, dl)
            .colorimetry(colorimetry(&ri, rl), colorimetry(&di, dl));
        if let (Some(ctx), Ok(api)) = (&cuda_ctx, gstcuda::api()) {
            // SAFETY: the handle stays valid while the context object lives, and the
            // engine keeps a reference to it.
            let ext = unsafe {
                gpumetrics_engine::cuda::ExternalContext::new(
                    ctx.handle(api),
                    ctx.device_id(),
                    Box::new(ctx.clone().into_object()),
                )
            };
            builder = builder.context(ext);
        }
        let created = builder.build();
        state.cuda_ctx = cuda_ctx;
        match created {
            Ok(engine) => {
                for note in engine.metric_notes() {
                    state.warn_once(note);
                }
                match engine.backend_note() {
                    Some(note) => gst::info!(
                        CAT,
                        imp = self,
                        "using backend {} ({note})",
                        engine.backend_name()
                    ),
                    None => {
                        gst::info!(CAT, imp = self, "using backend {}", engine.backend_name())
                    }
                }
                // A held pair adds one frame of latency (reported in the latency query).
                if engine.lag() > 0 {
                    state.pending_latency =
                        Some(state.distorted.frame_duration.unwrap_or(0) * engine.lag() as u64);
                }
                state.engine = Some(engine);
                state.engine_infos = Some((ri, di));
                Ok(())
            }
            Err(e) => {
                let describe = |i: &gst_video::VideoInfo| {
                    format!("{} {}x{}", i.format().to_str(), i.width(), i.height())
                };
                let (rd, dd) = (describe(&ri), describe(&di));
                if state.frame > 0 {
                    // The first pair after a caps change on one input only.
                    gst::element_imp_error!(
                        self,
                        engine_error_kind(&e),
                        (
                            "Cannot compare ref_sink with dist_sink after {} pairs: the caps \
                             changed on one input only (ref_sink: {rd}, dist_sink: {dd}); both \
                             inputs must change together. {e}",
                            state.frame
                        ),
                        ["ref_sink: {rd}, dist_sink: {dd}"]
                    );
                } else {
                    gst::element_imp_error!(
                        self,
                        engine_error_kind(&e),
                        ("Cannot compare ref_sink with dist_sink: {e}"),
                        ["ref_sink: {rd}, dist_sink: {dd}"]
                    );
                }
                Err(gst::FlowError::NotNegotiated)
            }
        }
    }

    fn map_error(&self, pad: &str, cuda: bool, buffer: &gst::BufferRef) -> gst::FlowError {
        let memories = buffer.n_memory();
        let size = buffer.size();
        if cuda {
            gst::element_imp_error!(
                self,
                gst::StreamError::Format,
                ("{pad}: cannot map a CUDA memory buffer ({size} bytes in {memories} memories) \
                     for the CPU backend; use backend=cuda (reads it in place) or insert \
                     `cudadownload` before {pad}")
            );
        } else {
            gst::element_imp_error!(
                self,
                gst::StreamError::Format,
                ("{pad}: cannot map the buffer ({size} bytes in {memories} memories) for \
                     reading; the producer's memory is not readable by the CPU")
            );
        }
        gst::FlowError::Error
    }

    /// Makes the engine run in the context of the inputs' CUDA memory (when upstream decided
    /// on another one than ours) and says whether CUDA memory can be read in place.
    fn adopt_cuda_context(
        &self,
        st: &mut State,
        reference: &gst::Buffer,
        distorted: &gst::Buffer,
    ) -> Result<bool, gst::FlowError> {
        let on_cuda = st
            .engine
            .as_ref()
            .is_some_and(|e| e.backend_kind() == BackendKind::Cuda);
        let Ok(api) = gstcuda::api() else {
            return Ok(false);
        };
        if !on_cuda {
            return Ok(false);
        }
        let ctx_of = |b: &gst::Buffer| {
            (b.n_memory() == 1)
                .then(|| gstcuda::Context::of_memory(api, b.peek_memory(0)))
                .flatten()
        };
        let (rc, dc) = (ctx_of(reference), ctx_of(distorted));
        if let (Some(r), Some(d)) = (&rc, &dc)
            && r.handle(api) != d.handle(api)
        {
            gst::element_imp_error!(
                self,
                gst::StreamError::Failed,
                (
                    "ref_sink and dist_sink carry CUDA memory of different CUDA contexts (devices \
                     {} and {}); decode both on one GPU (one context is shared when both \
                     decoders are on the same device) or insert `cudadownload` before one pad",
                    r.device_id(),
                    d.device_id()
                )
            );
            return Err(gst::FlowError::Error);
        }
        let Some(want) = rc.or(dc) else {
            return Ok(true);
        };
        if st.cuda_ctx.as_ref().map(|c| c.handle(api)) != Some(want.handle(api)) {
            gst::info!(
                CAT,
                imp = self,
                "running in the CUDA context of the upstream memory (device {})",
                want.device_id()
            );
            st.engine = None;
            st.cuda_ctx = Some(want);
            self.ensure_engine(st)?;
            if st
                .engine
                .as_ref()
                .is_some_and(|e| e.backend_kind() != BackendKind::Cuda)
            {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Maps one input: CUDA memory in place when the backend reads device memory, else
    /// for the CPU (GStreamer downloads CUDA memory then, which is counted and logged). The
    /// plane layout the buffer states (its video meta, or the caps) is checked against the
    /// caps here and against the mapped size in [`Self::frame`].
    fn map_input<'a>(
        &self,
        buffer: &'a gst::Buffer,
        info: &gst_video::VideoInfo,
        device: bool,
        pad: &str,
        stats: &mut MemoryStats,
    ) -> Result<Mapped<'a>, gst::FlowError> {
        let invalid = |e: String| {
            gst::element_imp_error!(self, gst::StreamError::Format, ("{pad}: {e}"));
            gst::FlowError::Error
        };
        let cuda = gstcuda::is_cuda_buffer(buffer);
        if cuda
            && device
            && let Ok(api) = gstcuda::api()
        {
            let m = gstcuda::DeviceMap::map(api, buffer.as_ref(), info).map_err(invalid)?;
            stats.device += 1;
            return Ok(Mapped::Device(m));
        }
        let planes = caps::stated_planes(buffer.as_ref(), info, None).map_err(invalid)?;
        // The whole buffer in one mapping (several memories are merged by GStreamer), so
        // every plane offset is relative to one slice whose length is the mapped size.
        let map = buffer
            .map_readable()
            .map_err(|_| self.map_error(pad, cuda, buffer.as_ref()))?;
        if cuda {
            if stats.downloaded == 0 {
                gst::warning!(
                    CAT,
                    imp = self,
                    "{pad}: CUDA memory is copied to the host for the CPU backend"
                );
            }
            stats.downloaded += 1;
        } else {
            stats.system += 1;
        }
        Ok(Mapped::Host { map, planes })
    }

    /// The engine's view of a mapped input, after checking every plane against the mapping.
    fn frame<'a>(
        m: &'a Mapped<'a>,
        info: &gst_video::VideoInfo,
        pad: &str,
    ) -> Result<Frame<'a>, String> {
        let layout = caps::layout(info)?;
        let frame = match m {
            Mapped::Host { map, planes } => {
                HostFrame::from_mapped(map.as_slice(), &layout, planes, pad).map(Frame::Host)
            }
            Mapped::Device(d) => {
                DeviceFrame::from_mapped(d.base, d.size, &layout, &d.planes, pad).map(Frame::Device)
            }
        };
        // The engine's message already names the pad.
        frame.map_err(|e| e.to_string().replacen(&format!("{pad}: "), "", 1))
    }

    /// Compares one pair and pushes the distorted buffer with its scores; with an engine
    /// that holds a pair back (VMAF), pushes the previous pair's buffer with its final
    /// scores instead, and keeps this one until the next pair (or EOS) completes its scores.
    fn compare_and_push(
        &self,
        reference: gst::Buffer,
        distorted: gst::Buffer,
        dist_rt: Option<u64>,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let mut state = self.state.lock().unwrap();
        state.active = true;
        self.ensure_engine(&mut state)?;
        let st = &mut *state;
        let (Some(ri), Some(di)) = (st.reference.info.clone(), st.distorted.info.clone()) else {
            return Err(gst::FlowError::NotNegotiated);
        };
        let device = self.adopt_cuda_context(st, &reference, &distorted)?;
        let Some(engine) = st.engine.as_mut() else {
            return Err(gst::FlowError::NotNegotiated);
        };
        let scores = {
            let invalid = |pad: &str, e: String| {
                gst::element_imp_error!(self, gst::StreamError::Format, ("{pad}: {e}"));
                gst::FlowError::Error
            };
            let rm = self.map_input(&reference, &ri, device, "ref_sink", &mut st.memory)?;
            let dm = self.map_input(&distorted, &di, device, "dist_sink", &mut st.memory)?;
            let rf = Self::frame(&rm, &ri, "ref_sink").map_err(|e| invalid("ref_sink", e))?;
            let df = Self::frame(&dm, &di, "dist_sink").map_err(|e| invalid("dist_sink", e))?;
            engine.push(&rf, &df).map_err(|e| {
                gst::element_imp_error!(
                    self,
                    engine_error_kind(&e),
                    ("Comparing frame pair {} failed: {e}", st.frame)
                );
                gst::FlowError::Error
            })?
        };
        drop(reference);
        let lag = engine.lag();
        let current = Held {
            buffer: distorted,
            frame: st.frame,
            running_time: dist_rt,
        };
        st.frame += 1;
        let mut ready = Vec::new();
        ready.extend(st.finished.take());
        if lag == 0 {
            ready.push((current, scores.unwrap_or_default()));
        } else if let (Some(previous), Some(scores)) = (st.held.replace(current), scores) {
            ready.push((previous, scores));
        }
        self.deliver(state, ready, true)
    }

    /// Records each scored pair (pooled statistics, stats file) under the state lock, then
    /// posts its message, attaches its meta and pushes its buffer without it.
    /// With `push` false (stopping), the buffers are dropped after their message.
    fn deliver(
        &self,
        mut state: std::sync::MutexGuard<'_, State>,
        ready: Vec<(Held, gpumetrics_engine::Scores)>,
        push: bool,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let (post_messages, attach_meta) = {
            let s = self.settings.lock().unwrap();
            (s.post_messages, s.attach_meta)
        };
        let mut out = Vec::new();
        for (held, scores) in ready {
            let record = FrameScores {
                frame: held.frame,
                pts: held.buffer.pts(),
                running_time: held.running_time.map(gst::ClockTime::from_nseconds),
                duration: held.buffer.duration(),
                scores: scores.iter().map(|(n, v)| (n.to_string(), v)).collect(),
            };
            state.pooler.push(&scores);
            gst::log!(
                CAT,
                imp = self,
                "pair {}: {:?}",
                record.frame,
                record.scores
            );
            if let Some(w) = state.stats.as_mut()
                && let Err(e) = w.write_frame(&record)
            {
                state.stats = None;
                gst::element_imp_error!(
                    self,
                    gst::ResourceError::Write,
                    ("Writing the stats file failed: {e}")
                );
                return Err(gst::FlowError::Error);
            }
            out.push((held.buffer, record));
        }
        // Unmatched buffers waited behind the held pair delivered here (at most one).
        let behind = if out.is_empty() {
            Vec::new()
        } else {
            std::mem::take(&mut state.behind)
        };
        let warnings = std::mem::take(&mut state.pending_warnings);
        let latency = state.pending_latency.take();
        drop(state);
        self.post_warnings(warnings);
        if let Some(l) = latency {
            let l = gst::ClockTime::from_nseconds(l);
            self.obj().set_latency(l, Some(l));
        }
        let mut result = Ok(gst::FlowSuccess::Ok);
        for (mut buffer, record) in out {
            if post_messages {
                let msg = gst::message::Element::builder(record.to_structure(FRAME_MESSAGE_NAME))
                    .src(&*self.obj())
                    .build();
                let _ = self.obj().post_message(msg);
            }
            if attach_meta {
                // Free when we hold the only reference; otherwise copies the buffer struct and
                // shares the memory.
                if let Err(e) = meta::add(buffer.make_mut(), &record) {
                    gst::warning!(CAT, imp = self, "could not attach meta: {e}");
                }
            }
            if push && result.is_ok() {
                result = self.push(buffer);
            }
        }
        for buffer in behind {
            if push && result.is_ok() {
                result = self.push(buffer);
            }
        }
        result
    }

    /// At the end of a run (EOS; on stop without pushing): scores the pair still held back,
    /// if any, and pushes it.
    fn drain_held(&self, push: bool) -> Result<gst::FlowSuccess, gst::FlowError> {
        let mut state = self.state.lock().unwrap();
        let mut ready: Vec<_> = state.finished.take().into_iter().collect();
        if let Some(held) = state.held.take() {
            let scores = state
                .engine
                .as_mut()
                .and_then(|e| e.finish().pop())
                .unwrap_or_default();
            ready.push((held, scores));
        }
        if ready.is_empty() {
            return Ok(gst::FlowSuccess::Ok);
        }
        self.deliver(state, ready, push)
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

    fn build_summary(state: &State) -> Summary {
        let s = state.pooler.summary();
        Summary {
            frames: s.frames,
            unmatched_ref: state.unmatched_ref,
            unmatched_dist: state.unmatched_dist,
            fields: s
                .fields
                .iter()
                .map(|(name, f)| (name.to_string(), *f))
                .collect(),
        }
    }

    /// Posts the summary message and writes it to the stats file, once per run.
    fn finish_run(&self) {
        let mut state = self.state.lock().unwrap();
        if state.summary_posted {
            return;
        }
        state.summary_posted = true;
        let summary = Self::build_summary(&state);
        let memory = state.memory;
        let write_err = state
            .stats
            .as_mut()
            .and_then(|w| w.write_summary(&summary).err());
        drop(state);
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
        let _ = self.obj().post_message(summary.to_message(&*self.obj()));
        if let Some(e) = write_err {
            gst::element_imp_error!(
                self,
                gst::ResourceError::Write,
                ("Writing the summary to the stats file failed: {e}")
            );
        }
    }

    /// New caps on one pad. They apply to the frames that follow on that pad only: the two
    /// inputs are checked against each other per pair (see [`Self::ensure_engine`]), so that
    /// a change on both inputs, whose caps events are handled at different times, works.
    fn on_caps(&self, pad: &gst_base::AggregatorPad, caps: &gst::Caps) -> bool {
        let name = self.pad_name(pad);
        let info = match gst_video::VideoInfo::from_caps(caps) {
            Ok(info) => info,
            Err(_) => {
                gst::element_imp_error!(
                    self,
                    gst::CoreError::Negotiation,
                    ("{name}: invalid video caps {caps}")
                );
                self.state.lock().unwrap().failed = true;
                return false;
            }
        };
        if let Err(msg) = caps::layout(&info) {
            gst::element_imp_error!(self, gst::StreamError::Format, ("{name}: {msg}"));
            self.state.lock().unwrap().failed = true;
            return false;
        }
        gst::debug!(CAT, obj = pad, "caps {caps}");
        let mut state = self.state.lock().unwrap();
        let ps = if pad == &self.ref_pad {
            &mut state.reference
        } else {
            &mut state.distorted
        };
        ps.frame_duration = caps::frame_duration(&info);
        ps.cuda_memory = caps::is_cuda_memory(caps);
        ps.info = Some(info);
        drop(state);
        if pad == &self.dist_pad {
            self.obj().set_src_caps(caps);
        }
        true
    }

    /// Head frames of both pads and the frame durations of their caps.
    fn heads(&self) -> (Input, Input) {
        let (rd, dd) = {
            let state = self.state.lock().unwrap();
            (
                state.reference.frame_duration,
                state.distorted.frame_duration,
            )
        };
        (self.head(&self.ref_pad, rd), self.head(&self.dist_pad, dd))
    }

    /// Notes where a popped frame ends in running time (the stalled-input deadline).
    fn note_end(&self, input: &Input) {
        if let Some(Head {
            running_time: Some(t),
            duration,
        }) = input.head
        {
            let end = t.saturating_add(duration.unwrap_or(0));
            let mut state = self.state.lock().unwrap();
            state.last_end = Some(state.last_end.map_or(end, |e| e.max(end)));
        }
    }
}

impl AggregatorImpl for GpuMetrics {
    fn start(&self) -> Result<(), gst::ErrorMessage> {
        let settings = self.settings.lock().unwrap().clone();
        let mut state = State::default();
        if let Some(path) = &settings.stats_file {
            let writer = StatsWriter::create(path, settings.stats_format()).map_err(|e| {
                gst::error_msg!(
                    gst::ResourceError::OpenWrite,
                    (
                        "Cannot create stats-file {}: {e}; check the path and its directory's \
                         permissions",
                        path.display()
                    )
                )
            })?;
            state.stats = Some(writer);
        }
        *self.state.lock().unwrap() = state;
        gst::debug!(CAT, imp = self, "started");
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        let active = self.state.lock().unwrap().active;
        if active {
            // Stopped before EOS: the held pair still gets its message and record.
            let _ = self.drain_held(false);
            self.finish_run();
        }
        let mut state = self.state.lock().unwrap();
        if let Some(mut w) = state.stats.take() {
            if !w.is_finished() {
                let summary = Self::build_summary(&state);
                let _ = w.write_summary(&summary);
            }
            let _ = w.flush();
        }
        *state = State::default();
        gst::debug!(CAT, imp = self, "stopped");
        Ok(())
    }

    fn flush(&self) -> Result<gst::FlowSuccess, gst::FlowError> {
        // A flushing seek: pooled statistics continue; the next EOS posts an updated summary.
        // A held pair is dropped with the flushed data, and motion restarts.
        let mut state = self.state.lock().unwrap();
        state.summary_posted = false;
        state.held = None;
        state.finished = None;
        state.behind.clear();
        if let Some(e) = state.engine.as_mut() {
            e.reset();
        }
        drop(state);
        self.parent_flush()
    }

    fn negotiate(&self) -> bool {
        // The output caps are the dist_sink caps, set when they arrive.
        true
    }

    fn clip(&self, pad: &gst_base::AggregatorPad, buffer: gst::Buffer) -> Option<gst::Buffer> {
        // GAP events arrive as empty GAP buffers: no frame at that time, nothing to compare.
        // The partner frame (if any) ends up unmatched.
        if buffer.flags().contains(gst::BufferFlags::GAP) && buffer.size() == 0 {
            gst::log!(CAT, obj = pad, "skipping gap at {:?}", buffer.pts());
            return None;
        }
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
        self.answer_cuda_query(query) || self.parent_src_query(query)
    }

    fn sink_query(&self, pad: &gst_base::AggregatorPad, query: &mut gst::QueryRef) -> bool {
        if self.answer_cuda_query(query) {
            return true;
        }
        match query.view_mut() {
            gst::QueryViewMut::Caps(q) => {
                let templ = pad.pad_template_caps();
                let mut result = templ.clone();
                if pad == &self.dist_pad {
                    // The distorted stream goes out on src: ask downstream what it takes.
                    if let Some(peer) = self.obj().src_pad().peer() {
                        let downstream = peer.query_caps(Some(&templ));
                        result =
                            downstream.intersect_with_mode(&templ, gst::CapsIntersectMode::First);
                    }
                }
                if let Some(filter) = q.filter() {
                    result = filter.intersect_with_mode(&result, gst::CapsIntersectMode::First);
                }
                q.set_result(&result);
                true
            }
            gst::QueryViewMut::Allocation(q) => {
                if pad == &self.dist_pad {
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
        let (r, d) = self.heads();
        let ended = |i: &Input| i.eos && i.head.is_none();
        if (ended(&r) && (d.head.is_some() || ended(&d))) || (ended(&d) && r.head.is_some()) {
            // Something to do right away: drain the input left, or finish.
            return Some(gst::ClockTime::ZERO);
        }
        // One input ended and the other has nothing yet: give it until the end of what was
        // seen plus the tolerance, then finish (a live input may stall without EOS).
        let last_end = if ended(&r) || ended(&d) {
            self.state.lock().unwrap().last_end
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
    fn aggregate_step(&self, timeout: bool) -> Result<gst::FlowSuccess, gst::FlowError> {
        let fixed = self.fixed_tolerance();
        let mode = self.settings.lock().unwrap().pairing_mode();
        let (r, d) = self.heads();
        let decision = pairing::decide(mode, r, d, timeout, fixed);
        gst::trace!(
            CAT,
            imp = self,
            "aggregate timeout={timeout} ref={r:?} dist={d:?} -> {decision:?}"
        );
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
                    self.state.lock().unwrap().warn_once(format!(
                        "{pads}: frames without a timestamp (no PTS, or outside the segment) \
                         cannot be paired by time; they are compared in sequence (n-th with \
                         n-th). Set pairing=sequence if the inputs are untimed"
                    ));
                }
                let rb = self.ref_pad.pop_buffer().ok_or(gst::FlowError::Error)?;
                let db = self.dist_pad.pop_buffer().ok_or(gst::FlowError::Error)?;
                self.note_end(&r);
                self.note_end(&d);
                // Lets applications (emit-signals / samples-selected) see what is compared.
                self.obj()
                    .selected_samples(db.pts(), db.dts(), db.duration(), None);
                self.compare_and_push(rb, db, d.head.and_then(|h| h.running_time))
            }
            Decision::DropRef => {
                let b = self.ref_pad.pop_buffer();
                self.note_end(&r);
                let mut state = self.state.lock().unwrap();
                state.active = true;
                state.unmatched_ref += 1;
                gst::debug!(
                    CAT,
                    imp = self,
                    "reference frame at {:?} has no partner (unmatched-ref {})",
                    b.as_ref().and_then(|b| b.pts()),
                    state.unmatched_ref
                );
                Ok(gst::FlowSuccess::Ok)
            }
            Decision::DropDist => {
                let b = self.dist_pad.pop_buffer().ok_or(gst::FlowError::Error)?;
                self.note_end(&d);
                {
                    let mut state = self.state.lock().unwrap();
                    if state.held.is_some() {
                        // Leaves after the held pair's buffer, in order.
                        state.active = true;
                        state.unmatched_dist += 1;
                        state.behind.push(b);
                        return Ok(gst::FlowSuccess::Ok);
                    }
                    state.active = true;
                    state.unmatched_dist += 1;
                    gst::debug!(
                        CAT,
                        imp = self,
                        "distorted frame at {:?} has no partner (unmatched-dist {}); passed on \
                         without scores",
                        b.pts(),
                        state.unmatched_dist
                    );
                }
                self.push(b)
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
                let drained = self.drain_held(true);
                self.finish_run();
                drained.and(Err(gst::FlowError::Eos))
            }
            Decision::Wait => Err(gst_base::AGGREGATOR_FLOW_NEED_DATA),
        }
    }
}
