// SPDX-License-Identifier: MPL-2.0
//! The engine of a run: built from the settings for the caps of both pads (and the CUDA
//! context their memory lives in), retired when they change, and the element errors that
//! say why one cannot be built. The buffers of the pairs it measures are kept, under their
//! tags, by the element's queue (`super::queue`).

use gpumetrics_engine::{BackendChoice, BackendKind, Engine, EngineError, Scores, Tag};

use super::CAT;
use super::input::PadCaps;
use super::settings::Settings;
use crate::gstcuda;

/// The engine, what it was built for and where it runs.
#[derive(Default)]
pub(crate) struct Scorer {
    engine: Option<Engine>,
    /// The caps (reference, distorted) the last engine was built for, kept when it is
    /// retired: what changed when the next one cannot be built.
    built_for: Option<(gst_video::VideoInfo, gst_video::VideoInfo)>,
    /// The GstCudaContext the engine runs in (None: the device's primary context, or CPU).
    context: Option<gstcuda::Context>,
}

/// The scores the engine handed back, with the tags their pairs were submitted as, oldest
/// first; `Err`: the GPU failed on a pair in flight, and the pairs not handed back have no
/// scores.
pub(crate) type Scored = Result<Vec<(Tag, Scores)>, EngineError>;

/// Everything the engine has ready.
fn ready(engine: &mut Engine) -> Vec<(Tag, Scores)> {
    std::iter::from_fn(|| engine.poll()).collect()
}

/// What an engine is built from.
pub(crate) struct Request<'a> {
    /// The element, for the log.
    pub element: &'a gst::Element,
    pub settings: &'a Settings,
    pub reference: &'a PadCaps,
    pub distorted: &'a PadCaps,
    /// No reference input: the engine measures `distorted` alone (`reference` is the same
    /// caps).
    pub single: bool,
    /// The CUDA context shared with the neighbours, if any.
    pub shared: Option<gstcuda::Context>,
    /// Pairs measured before (for the message of a caps change on one input).
    pub pairs: u64,
}

/// What the element does with a new engine.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Built {
    /// Warnings to post once per run (metrics left out for these caps, or none requested).
    pub notes: Vec<String>,
    /// The latency its held pairs and pairs in flight add (ns): [`Engine::delay`] frames.
    pub latency: u64,
}

impl Scorer {
    /// The engine, if one is built.
    pub(crate) fn engine(&mut self) -> Option<&mut Engine> {
        self.engine.as_mut()
    }

    /// An engine is built for these caps.
    pub(crate) fn is_for(&self, reference: &PadCaps, distorted: &PadCaps) -> bool {
        self.engine.is_some()
            && self
                .built_for
                .as_ref()
                .is_some_and(|(r, d)| *r == reference.info && *d == distorted.info)
    }

    /// The engine runs on the CUDA backend.
    pub(crate) fn on_cuda(&self) -> bool {
        self.engine
            .as_ref()
            .is_some_and(|e| e.backend_kind() == BackendKind::Cuda)
    }

    /// The engine runs in another CUDA context than `context`.
    pub(crate) fn runs_outside(&self, context: &gstcuda::Context, api: &gstcuda::Api) -> bool {
        self.context.as_ref().map(|c| c.handle(api)) != Some(context.handle(api))
    }

    /// The next engine runs in `context` (the one the inputs' CUDA memory lives in).
    pub(crate) fn use_context(&mut self, context: gstcuda::Context) {
        self.context = Some(context);
    }

    /// Ends the engine's sequence and drops it: the scores of the pairs it still held
    /// (scored as the last pairs of a sequence).
    pub(crate) fn retire(&mut self) -> Scored {
        let Some(mut engine) = self.engine.take() else {
            return Ok(Vec::new());
        };
        engine.end()?;
        Ok(ready(&mut engine))
    }

    /// End of the run: the scores of the pairs the engine still holds; it stays for the
    /// next sequence.
    pub(crate) fn finish(&mut self) -> Scored {
        let Some(engine) = self.engine.as_mut() else {
            return Ok(Vec::new());
        };
        engine.end()?;
        Ok(ready(engine))
    }

    /// Nothing is submitted for a while (a frame without a partner, a pair `subsample`
    /// skips): the scores of the pairs in flight, so that they leave now rather than at the
    /// next submit; pairs held back for temporal metrics stay held, in their sequence.
    pub(crate) fn settle(&mut self) -> Scored {
        let Some(engine) = self.engine.as_mut() else {
            return Ok(Vec::new());
        };
        engine.settle()?;
        Ok(ready(engine))
    }

    /// Submits a pair as `tag` (`reference` None: dist_sink alone); the scores the engine
    /// then has ready, of this pair or earlier ones.
    pub(crate) fn submit(
        &mut self,
        reference: Option<&gpumetrics_engine::Frame>,
        distorted: &gpumetrics_engine::Frame,
        tag: Tag,
    ) -> Scored {
        let Some(engine) = self.engine.as_mut() else {
            return Ok(Vec::new());
        };
        let frames = match reference {
            Some(reference) => gpumetrics_engine::Frames::Pair {
                reference,
                distorted,
            },
            None => gpumetrics_engine::Frames::Single(distorted),
        };
        engine.submit(frames, tag)?;
        Ok(ready(engine))
    }

    /// Whether the engine may still read the frames of the pair submitted as `tag`.
    pub(crate) fn reads(&self, tag: Tag) -> bool {
        self.engine.as_ref().is_some_and(|e| e.reads(tag))
    }

    /// A flush: drops the held pairs; returns how many measured pairs were dropped.
    pub(crate) fn reset(&mut self) -> usize {
        self.engine.as_mut().map_or(0, Engine::reset)
    }

    /// Builds the engine for `req`, replacing any; `Err` is the element error to post.
    pub(crate) fn build(&mut self, req: &Request) -> Result<Built, Failure> {
        let mut built = Built::default();
        self.engine = None;
        let config = req.settings.engine_config();
        if config.metrics.is_empty() {
            built
                .notes
                .push("metrics is empty: pairs are counted, no scores".into());
        }
        // The CUDA backend runs in the shared GstCudaContext (or the one upstream memory
        // lives in, see use_context), so device frames are read in place.
        let context = match (config.backend, gstcuda::api()) {
            (BackendChoice::Cpu, _) | (_, Err(_)) => None,
            _ => self.context.clone().or_else(|| req.shared.clone()),
        };
        let (r, d) = (req.reference, req.distorted);
        if (r.layout.width, r.layout.height) != (d.layout.width, d.layout.height) {
            // With a `roi`, the engine sees two rectangles of equal size: the whole frames
            // must still match, as without one.
            let e = EngineError::SizeMismatch {
                ref_w: r.layout.width,
                ref_h: r.layout.height,
                dist_w: d.layout.width,
                dist_h: d.layout.height,
            };
            return Err(build_error(&e, req, self.built_for.as_ref()));
        }
        // The engine measures the `roi` rectangle when one is set (the frames are cut in
        // place, see input::frame).
        let mut builder = if req.single {
            Engine::single_builder(&config, d.measured())
        } else {
            Engine::builder(&config, r.measured(), d.measured())
        }
        .colorimetry(r.colorimetry, d.colorimetry)
        .in_flight(req.settings.in_flight as usize);
        // The frame rate of the caps (the reference's, else the distorted input's), for the
        // metrics with temporal filters (cvvdp); 0/1, a variable rate, is none.
        let rate = |i: &gst_video::VideoInfo| {
            let f = i.fps();
            (f.numer() > 0 && f.denom() > 0).then(|| f.numer() as f64 / f.denom() as f64)
        };
        if let Some(kind) = req.settings.map.kind() {
            builder = builder.map(kind);
            if let Some(t) = req.settings.map_threshold {
                builder = builder.map_threshold(t);
            }
        }
        let inputs = if req.single { vec![d] } else { vec![r, d] };
        if let Some(fps) = inputs.iter().find_map(|c| rate(&c.info)) {
            builder = builder.frame_rate(fps);
        }
        if let (Some(ctx), Ok(api)) = (&context, gstcuda::api()) {
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
        self.context = context;
        let engine = created.map_err(|e| build_error(&e, req, self.built_for.as_ref()))?;
        built.notes.extend(engine.metric_notes());
        match engine.backend_note() {
            Some(note) => gst::info!(
                CAT,
                obj = req.element,
                "using backend {} ({note})",
                engine.backend_name()
            ),
            None => gst::info!(
                CAT,
                obj = req.element,
                "using backend {}",
                engine.backend_name()
            ),
        }
        // Pairs held back and pairs in flight add their frames' time (reported in the
        // latency query); 0 resets what an earlier engine reported.
        built.latency = d.frame_duration.unwrap_or(0) * engine.delay() as u64;
        gst::debug!(
            CAT,
            obj = req.element,
            "{} pair(s) in flight, {} held back: scores come {} pair(s) later",
            engine.in_flight(),
            engine.lag(),
            engine.delay()
        );
        self.engine = Some(engine);
        self.built_for = Some((r.info.clone(), d.info.clone()));
        Ok(built)
    }
}

/// What kind of element error a [`Failure`] is.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Code {
    /// About the inputs (`gst::StreamError`).
    Stream(gst::StreamError),
    /// About a property's value (`gst::LibraryError::Settings`).
    Settings,
}

/// An element error caused by an engine error: its message (the context, the engine's
/// problem and the element's advice), its debug text, and the `gpumetrics-error` details
/// (`advice::details`) with the problem and the advice apart, so that an application (the
/// `gpumetrics` command) can give its own advice instead of the pipeline's.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) code: Code,
    pub(crate) text: String,
    pub(crate) debug: String,
    pub(crate) details: gst::Structure,
}

impl Failure {
    fn new(code: Code, text: String, debug: String, e: &EngineError) -> Failure {
        Failure {
            code,
            text,
            debug,
            details: super::advice::details(e),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.text, self.debug)
    }
}

/// The element error of an engine that cannot be built for `req`; `previous` is what the
/// last engine was built for (the message says what changed since).
fn build_error(
    e: &EngineError,
    req: &Request,
    previous: Option<&(gst_video::VideoInfo, gst_video::VideoInfo)>,
) -> Failure {
    let (rd, dd) = (req.reference.describe(), req.distorted.describe());
    let advised = super::advice::Advised(e);
    let changed = previous.map(|(r, d)| (*r != req.reference.info, *d != req.distorted.info));
    let after = if req.pairs > 0 {
        format!(" after {} pairs", req.pairs)
    } else {
        String::new()
    };
    if req.single {
        return Failure::new(
            Code::Stream(stream_error(e)),
            format!("Cannot measure dist_sink alone{after}: {advised}"),
            format!("dist_sink: {dd}; ref_sink is not linked"),
            e,
        );
    }
    match (e, changed) {
        // A metric option's value: the message names the property and what it accepts.
        // A text option's value may be quoted whole by the metric (a `vmaf-model` path):
        // bounded as every quoted value is.
        (EngineError::InvalidOption { .. }, _) => Failure::new(
            Code::Settings,
            req.settings.bounded(e, advised.to_string()),
            format!("ref_sink: {rd}, dist_sink: {dd}"),
            e,
        ),
        (_, Some((true, false) | (false, true))) => {
            let (which, other) = if changed == Some((true, false)) {
                ("ref_sink", "dist_sink")
            } else {
                ("dist_sink", "ref_sink")
            };
            Failure::new(
                Code::Stream(stream_error(e)),
                format!(
                    "Cannot compare ref_sink with dist_sink{after}: the caps changed on one input \
                     only, {which} ({other} kept its caps; now ref_sink: {rd}, dist_sink: {dd}); \
                     both inputs must change together. {advised}"
                ),
                format!("ref_sink: {rd}, dist_sink: {dd}"),
                e,
            )
        }
        (_, Some((true, true))) => Failure::new(
            Code::Stream(stream_error(e)),
            format!(
                "Cannot compare ref_sink with dist_sink{after}: both inputs changed caps (now \
                 ref_sink: {rd}, dist_sink: {dd}) and the new caps cannot be compared: {advised}"
            ),
            format!("ref_sink: {rd}, dist_sink: {dd}"),
            e,
        ),
        (_, Some((false, false))) => Failure::new(
            Code::Stream(stream_error(e)),
            format!(
                "Cannot compare ref_sink with dist_sink{after}: the caps did not change (ref_sink: \
                 {rd}, dist_sink: {dd}), but the engine could not be rebuilt in the CUDA context \
                 of the inputs' memory: {advised}"
            ),
            format!("ref_sink: {rd}, dist_sink: {dd}"),
            e,
        ),
        (_, None) => Failure::new(
            Code::Stream(stream_error(e)),
            format!("Cannot compare ref_sink with dist_sink{after}: {advised}"),
            format!("ref_sink: {rd}, dist_sink: {dd}"),
            e,
        ),
    }
}

/// The stream error of an engine error about the inputs.
pub(crate) fn stream_error(e: &EngineError) -> gst::StreamError {
    match e {
        EngineError::SizeMismatch { .. } | EngineError::IncompatibleFormats { .. } => {
            gst::StreamError::Format
        }
        _ => gst::StreamError::Failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpumetrics_engine::OptionValue;
    use gst::prelude::*;

    fn caps(format: gst_video::VideoFormat, w: u32, h: u32) -> PadCaps {
        let c = gst_video::VideoInfo::builder(format, w, h)
            .fps(gst::Fraction::new(25, 1))
            .build()
            .unwrap()
            .to_caps()
            .unwrap();
        PadCaps::new(&c, "test", None).unwrap()
    }

    fn request<'a>(
        element: &'a gst::Element,
        settings: &'a Settings,
        r: &'a PadCaps,
        d: &'a PadCaps,
        pairs: u64,
    ) -> Request<'a> {
        Request {
            element,
            settings,
            reference: r,
            distorted: d,
            single: false,
            shared: None,
            pairs,
        }
    }

    fn cpu() -> Settings {
        Settings {
            backend: super::super::Backend::Cpu,
            ..Settings::default()
        }
    }

    #[test]
    fn built_for_the_caps_until_retired() {
        gst::init().unwrap();
        let element = gst::Bin::new().upcast::<gst::Element>();
        let settings = cpu();
        let (a, b) = (
            caps(gst_video::VideoFormat::I420, 32, 32),
            caps(gst_video::VideoFormat::I420, 64, 32),
        );
        let mut s = Scorer::default();
        assert!(!s.is_for(&a, &a));
        let built = s.build(&request(&element, &settings, &a, &a, 0)).unwrap();
        assert_eq!(built, Built::default(), "PSNR: no notes, no lag");
        assert!(s.is_for(&a, &a) && !s.is_for(&a, &b) && !s.on_cuda());
        assert!(s.retire().unwrap().is_empty());
        assert!(!s.is_for(&a, &a) && s.engine().is_none());
        assert_eq!(s.reset(), 0);
    }

    #[test]
    fn errors_say_what_to_change() {
        gst::init().unwrap();
        let element = gst::Bin::new().upcast::<gst::Element>();
        let (a, b) = (
            caps(gst_video::VideoFormat::I420, 32, 32),
            caps(gst_video::VideoFormat::I420, 64, 32),
        );
        let mut s = Scorer::default();
        let settings = cpu();
        let e = s
            .build(&request(&element, &settings, &a, &b, 0))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("Cannot compare ref_sink with dist_sink: reference is 32x32"),
            "{e}"
        );
        // After an engine for (a, a): what changed is named.
        s.build(&request(&element, &settings, &a, &a, 0)).unwrap();
        s.retire().unwrap();
        let e = s
            .build(&request(&element, &settings, &a, &b, 7))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("after 7 pairs: the caps changed on one input only, dist_sink"),
            "{e}"
        );
        // Issue 20: both inputs changed together to sizes that differ.
        let (c, d) = (
            caps(gst_video::VideoFormat::I420, 48, 32),
            caps(gst_video::VideoFormat::I420, 64, 48),
        );
        let e = s
            .build(&request(&element, &settings, &c, &d, 9))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("after 9 pairs: both inputs changed caps") && !e.contains("only"),
            "{e}"
        );
        // An option's value the engine refuses: the option's message, a settings error.
        let o = gpumetrics_engine::metric::options()
            .find(|o| matches!(o.kind, gpumetrics_engine::OptionKind::Text { .. }));
        if let Some(o) = o {
            let mut settings = cpu();
            settings.metrics = super::super::Metrics::from(gpumetrics_engine::MetricSet::ALL);
            settings
                .options
                .set(o.name, OptionValue::Text("/nonexistent/x".into()))
                .unwrap();
            let e = s
                .build(&request(&element, &settings, &a, &a, 0))
                .unwrap_err();
            let text = e.to_string();
            assert!(text.starts_with(&format!("{}: ", o.name)), "{text}");
            assert_eq!(
                e.details.get::<&str>("kind").unwrap(),
                "invalid-option",
                "{:?}",
                e.details
            );
            assert!(s.engine().is_none());
        }
    }

    #[test]
    fn an_engine_with_lag_reports_its_latency_and_finishes_its_pairs() {
        gst::init().unwrap();
        let element = gst::Bin::new().upcast::<gst::Element>();
        let a = caps(gst_video::VideoFormat::I420, 64, 64);
        let mut settings = cpu();
        settings.metrics = super::super::Metrics::from(gpumetrics_engine::MetricSet::ALL);
        let mut s = Scorer::default();
        let built = s.build(&request(&element, &settings, &a, &a, 0)).unwrap();
        let (lag, delay) = {
            let e = s.engine().unwrap();
            (e.lag() as u64, e.delay() as u64)
        };
        if lag == 0 {
            return; // no registered metric holds pairs back
        }
        assert_eq!(built.latency, 40_000_000 * delay);
        let data = vec![16u8; 64 * 64 * 3 / 2];
        let planes = [
            gpumetrics_engine::Plane {
                data: &data[..64 * 64],
                stride: 64,
            },
            gpumetrics_engine::Plane {
                data: &data[64 * 64..64 * 64 * 5 / 4],
                stride: 32,
            },
            gpumetrics_engine::Plane {
                data: &data[64 * 64 * 5 / 4..],
                stride: 32,
            },
        ];
        let f = gpumetrics_engine::Frame::Host(gpumetrics_engine::HostFrame::new(&planes));
        assert!(s.submit(Some(&f), &f, 41).unwrap().is_empty());
        let finished = s.retire().unwrap();
        assert_eq!(finished.len(), 1, "the held pair is scored when retired");
        assert_eq!(finished[0].0, 41, "under its tag");
        assert!(!finished[0].1.is_empty());
    }

    /// On the CPU backend (one pair at a time whatever `in-flight` says) the engine reads
    /// no frame after the submit, and the latency is that of the lag alone.
    #[test]
    fn the_cpu_backend_reads_nothing_after_a_submit() {
        gst::init().unwrap();
        let element = gst::Bin::new().upcast::<gst::Element>();
        let a = caps(gst_video::VideoFormat::Gray8, 64, 64);
        let mut settings = cpu();
        settings.in_flight = gpumetrics_engine::MAX_IN_FLIGHT as u32;
        let mut s = Scorer::default();
        let built = s.build(&request(&element, &settings, &a, &a, 0)).unwrap();
        let e = s.engine().unwrap();
        assert_eq!((e.in_flight(), e.delay(), built.latency), (1, 0, 0));
        let data = vec![16u8; 64 * 64];
        let planes = [gpumetrics_engine::Plane {
            data: &data,
            stride: 64,
        }];
        let f = gpumetrics_engine::Frame::Host(gpumetrics_engine::HostFrame::new(&planes));
        let scored = s.submit(Some(&f), &f, 5).unwrap();
        assert_eq!(scored.iter().map(|(t, _)| *t).collect::<Vec<_>>(), [5]);
        assert!(!s.reads(5), "read during the submit");
        assert!(s.settle().unwrap().is_empty());
        assert!(s.finish().unwrap().is_empty());
    }
}
