//! The engine: validates the pair of layouts once, picks a backend, and turns frame pairs
//! into scores.

pub use crate::backend::BackendChoice;
use crate::color::Colorimetry;
use crate::error::EngineError;
use crate::format::FrameLayout;
use crate::frame::Frame;
use crate::metric::{Configured, Options};
use crate::metric_set::MetricSet;
use crate::plan::{Plan, PlanOptions};
use crate::schedule::BackendKind;
use crate::schedule::{Frames, Scheduler, Tag};
use crate::scores::Scores;

/// What to compute and where. How each metric measures is set by its options (declared
/// in the registry, [`crate::metric::options`]), not by fields here.
#[derive(Clone, Debug, PartialEq)]
pub struct EngineConfig {
    pub metrics: MetricSet,
    pub backend: BackendChoice,
    pub device_id: u32,
    /// The metrics' options (defaults unless set).
    pub options: Options,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            metrics: MetricSet::PSNR,
            backend: BackendChoice::Auto,
            device_id: 0,
            options: Options::default(),
        }
    }
}

pub struct Engine {
    plan: Plan,
    metrics: MetricSet,
    /// The requested metrics' entries with their settings.
    configured: Vec<Configured>,
    /// The backend and the pairs on their way through it.
    scheduler: Scheduler,
    note: Option<String>,
    /// The tag [`Engine::push`] gives the next pair (callers of [`Engine::submit`] choose
    /// their own).
    next_tag: Tag,
    /// With a map: the threshold of its area statistic.
    map_threshold: Option<f64>,
}

/// Everything an [`Engine`] is made from, given before it is built: [`Engine::builder`].
pub struct EngineBuilder<'a> {
    config: &'a EngineConfig,
    /// `None`: the distorted input alone ([`Engine::single_builder`]).
    reference: Option<FrameLayout>,
    distorted: FrameLayout,
    colorimetry: Option<[Colorimetry; 2]>,
    frame_rate: Option<f64>,
    map: Option<crate::map::kind::MapKind>,
    map_threshold: Option<f64>,
    context: Option<crate::cuda::ExternalContext>,
    in_flight: usize,
}

/// The most pairs an engine can have in flight ([`EngineBuilder::in_flight`]).
pub const MAX_IN_FLIGHT: usize = crate::cuda::IN_FLIGHT;

impl EngineBuilder<'_> {
    /// Lets the engine have up to `pairs` pairs in flight (default 1, at most
    /// [`MAX_IN_FLIGHT`]): [`Engine::push`] then queues a pair's work on the GPU and returns
    /// the scores of an earlier pair, so the host's work on one pair overlaps the GPU's work
    /// on the next. Scores come back one call later per extra pair, in order, and are the
    /// same as with one pair in flight.
    ///
    /// A device frame ([`crate::Frame::Device`]) given to `push` must then stay valid (not
    /// reused or freed by the caller) until the push or [`Engine::finish`] that returns its
    /// pair's scores; host frames are copied when pushed. The CPU backend measures one pair
    /// at a time whatever is asked ([`Engine::in_flight`] says what the engine does).
    pub fn in_flight(mut self, pairs: usize) -> Self {
        self.in_flight = pairs.clamp(1, MAX_IN_FLIGHT);
        self
    }

    /// The inputs' colorimetry (default: [`Colorimetry::default_for`] their formats), which
    /// linear-light metrics (SSIMULACRA2) convert with. [`build`](Self::build) fails when
    /// such a metric is enabled and cannot convert it (a transfer function it cannot
    /// linearise). An engine without a reference input ([`Engine::single_builder`]) uses
    /// `distorted` only.
    pub fn colorimetry(mut self, reference: Colorimetry, distorted: Colorimetry) -> Self {
        self.colorimetry = Some([reference, distorted]);
        self
    }

    /// The inputs' frame rate in frames per second (default: none), which metrics with
    /// temporal filters (ColorVideoVDP) read; without one they assume a rate and say so in
    /// [`Engine::metric_notes`].
    pub fn frame_rate(mut self, fps: f64) -> Self {
        self.frame_rate = Some(fps);
        self
    }

    /// Makes the distortion map `kind` of each pair ([`crate::map`]), which its scores carry
    /// ([`Scores::map`]); not for an engine without a reference input (`build` refuses it).
    pub fn map(mut self, kind: crate::map::kind::MapKind) -> Self {
        self.map = Some(kind);
        self
    }

    /// The threshold of the map's `<name>-area` statistic (default:
    /// [`crate::map::MapKind::default_threshold`]).
    pub fn map_threshold(mut self, threshold: f64) -> Self {
        self.map_threshold = Some(threshold);
        self
    }

    /// Runs the CUDA backend in `context` (e.g. the context that upstream decoded into, so
    /// that its device frames can be read in place); `device_id` is then ignored.
    /// `backend=cpu` ignores the context.
    pub fn context(mut self, context: crate::cuda::ExternalContext) -> Self {
        self.context = Some(context);
        self
    }

    /// The engine: its plan complete, every requested metric configured from its options
    /// (an invalid value fails here, naming the option) and its check passed, its backend
    /// chosen.
    pub fn build(self) -> Result<Engine, EngineError> {
        let options = PlanOptions {
            colorimetry: self.colorimetry,
            frame_rate: self.frame_rate,
            map: self.map,
            map_threshold: self.map_threshold,
        };
        let set = self.config.metrics;
        let plan = match self.reference {
            Some(reference) => Plan::with_options(reference, self.distorted, options)?,
            None => {
                let full: Vec<&str> = crate::metric::needing_reference(set)
                    .map(|i| i.name)
                    .collect();
                if !full.is_empty() {
                    return Err(EngineError::NeedsReference {
                        metrics: full.join(", "),
                        available: crate::metric::no_reference_names(),
                    });
                }
                if let Some(kind) = self.map {
                    return Err(EngineError::Unsupported(format!(
                        "the {} map compares a distorted frame with its reference: link \
                         ref_sink, or leave map unset",
                        kind.name()
                    )));
                }
                Plan::single(self.distorted, options)?
            }
        };
        if let Some(kind) = self.map.filter(|k| !k.made_from_frames())
            && !crate::metric::all().any(|i| i.name == kind.name() && set.contains(i.flag))
        {
            return Err(EngineError::Unsupported(format!(
                "the {0} map is made by the {0} metric: add {0} to the metrics",
                kind.name()
            )));
        }
        let configured = Configured::all(set, &self.config.options)?;
        for c in &configured {
            (c.entry.check)(&c.setup(&plan, set))?;
        }
        let (backend, note) = crate::backend::select(
            self.config.backend,
            self.config.device_id,
            set,
            &plan,
            &configured,
            self.context,
            self.in_flight,
        )?;
        let map_threshold = plan.map.map(|_| plan.map_threshold);
        Ok(Engine {
            plan,
            metrics: set,
            configured,
            map_threshold,
            scheduler: Scheduler::new(backend),
            note,
            next_tag: 0,
        })
    }
}

impl Engine {
    /// An engine with the default colorimetry, on `config.device_id`; the shorthand of
    /// [`Engine::builder`]`(..).build()`.
    pub fn new(
        config: &EngineConfig,
        reference: FrameLayout,
        distorted: FrameLayout,
    ) -> Result<Engine, EngineError> {
        Self::builder(config, reference, distorted).build()
    }

    /// Like [`Engine::new`], but the CUDA backend runs in `context`; see
    /// [`EngineBuilder::context`].
    pub fn new_on_context(
        config: &EngineConfig,
        context: crate::cuda::ExternalContext,
        reference: FrameLayout,
        distorted: FrameLayout,
    ) -> Result<Engine, EngineError> {
        Self::builder(config, reference, distorted)
            .context(context)
            .build()
    }

    /// Starts an engine for `config` and the two layouts; set the colorimetry or context,
    /// then [`build`](EngineBuilder::build).
    pub fn builder(
        config: &EngineConfig,
        reference: FrameLayout,
        distorted: FrameLayout,
    ) -> EngineBuilder<'_> {
        EngineBuilder {
            config,
            reference: Some(reference),
            distorted,
            colorimetry: None,
            frame_rate: None,
            map: None,
            map_threshold: None,
            context: None,
            in_flight: 1,
        }
    }

    /// Starts an engine that measures one input alone, with no reference: only
    /// no-reference metrics ([`crate::metric::no_reference`]); [`build`](EngineBuilder::build)
    /// refuses others, naming them. Its frames go to [`Engine::push_single`], and its
    /// records carry no `ref-` fields.
    pub fn single_builder(config: &EngineConfig, distorted: FrameLayout) -> EngineBuilder<'_> {
        EngineBuilder {
            config,
            reference: None,
            distorted,
            colorimetry: None,
            frame_rate: None,
            map: None,
            map_threshold: None,
            context: None,
            in_flight: 1,
        }
    }

    /// Whether the engine compares pairs (else it measures one input alone).
    pub fn has_reference(&self) -> bool {
        self.plan.has_reference
    }

    /// Where the kernels run.
    pub fn backend_kind(&self) -> BackendKind {
        self.scheduler.backend().kind()
    }

    /// "cuda" or "cpu".
    pub fn backend_name(&self) -> &'static str {
        self.backend_kind().name()
    }

    /// Why `auto` chose the CPU, when it did.
    pub fn backend_note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Why requested metrics are left out for this layout (e.g. frames too small for
    /// MS-SSIM), for the caller to log once.
    pub fn metric_notes(&self) -> Vec<String> {
        self.configured
            .iter()
            .flat_map(|c| (c.entry.notes)(&c.setup(&self.plan, self.metrics)))
            .collect()
    }

    /// Pairs the engine holds back before their scores are final: 1 with VMAF (a pair's
    /// motion needs the next reference frame), else 0. Pairs in flight come on top of it
    /// ([`Engine::in_flight`]).
    pub fn lag(&self) -> usize {
        self.scheduler.lag()
    }

    /// Whether every frame must reach the engine even when only some pairs are scored
    /// (`subsample`): a metric holds pairs back ([`Engine::lag`]) or filters over the frames
    /// before ([`crate::metric::EVERY_FRAME`]).
    pub fn needs_every_frame(&self) -> bool {
        self.lag() > 0 || self.metrics.bits() & crate::metric::EVERY_FRAME.bits() != 0
    }

    /// Pairs the engine may have in flight, their work queued on the GPU and their scores
    /// not read yet ([`EngineBuilder::in_flight`]; 1 on the CPU backend).
    pub fn in_flight(&self) -> usize {
        self.scheduler.depth()
    }

    /// Submits after a pair until its scores are ready: [`Engine::lag`] +
    /// [`Engine::in_flight`] − 1 (the latency the engine adds, in pairs).
    pub fn delay(&self) -> usize {
        self.lag() + self.in_flight() - 1
    }

    /// Submits a pair under the caller's `tag` (the scheduler, `crate::schedule`): its
    /// work is queued and, once the engine is full, the oldest pair in flight is
    /// completed. The scores come back from [`Engine::poll`] as `(tag, scores)`, in
    /// submission order, [`Engine::delay`] submits later (or at [`Engine::settle`] and
    /// [`Engine::end`]).
    ///
    /// A frame that does not fit its layout is refused before anything is queued (the
    /// pairs before it are kept). A device error drops every pair not yet ready: their
    /// tags never come back, and the engine no longer reads their frames.
    ///
    /// A device frame ([`crate::Frame::Device`]) must stay valid while
    /// [`Engine::reads`] its tag; host frames are copied when submitted.
    pub fn submit(&mut self, frames: Frames<'_>, tag: Tag) -> Result<(), EngineError> {
        let (reference, distorted) = match (frames, self.plan.has_reference) {
            (
                Frames::Pair {
                    reference,
                    distorted,
                },
                true,
            ) => (reference, distorted),
            (Frames::Single(frame), false) => (frame, frame),
            (Frames::Pair { .. }, false) => {
                return Err(EngineError::Unsupported(
                    "this engine measures one input alone (it was built without a \
                     reference); give it one frame (Frames::Single)"
                        .into(),
                ));
            }
            (Frames::Single(_), true) => {
                return Err(EngineError::Unsupported(
                    "this engine compares pairs; give it both frames (Frames::Pair)".into(),
                ));
            }
        };
        self.scheduler.submit(&self.plan, reference, distorted, tag)
    }

    /// The oldest pair whose scores are final, with its tag, in submission order.
    pub fn poll(&mut self) -> Option<(Tag, Scores)> {
        let (tag, mut scores) = self.scheduler.poll()?;
        if let Some(threshold) = self.map_threshold {
            crate::map::stats::push_stats(&mut scores, threshold);
        }
        Some((tag, scores))
    }

    /// Whether the engine may still read the frames of the pair submitted as `tag` (it is
    /// in flight). Pairs held back for temporal metrics are not read: they keep their own
    /// copy of what they need.
    pub fn reads(&self, tag: Tag) -> bool {
        self.scheduler.reads(tag)
    }

    /// Completes the pairs in flight without ending the sequence, for a caller with
    /// nothing to submit for a while (a frame without a partner, a pair it does not
    /// measure), so that their scores do not wait for the next submit; pairs held back by
    /// temporal metrics stay held. Afterwards the engine reads no frame. Fails only when
    /// the GPU fails on a pair in flight (the pairs not ready are then dropped).
    pub fn settle(&mut self) -> Result<(), EngineError> {
        self.scheduler.settle(&self.plan)
    }

    /// End of the sequence (EOS, caps change): every submitted pair becomes ready for
    /// [`Engine::poll`], those held back scored as libvmaf scores the last frames; the
    /// next pair starts a new sequence. Fails as [`Engine::settle`].
    pub fn end(&mut self) -> Result<(), EngineError> {
        self.scheduler.end(&self.plan)
    }

    /// Pairs submitted whose scores are not ready yet (at most [`Engine::delay`] after a
    /// submit).
    pub fn held(&self) -> usize {
        self.scheduler.pending()
    }

    /// Measures one pair: every requested metric's fields, in registry order. Engines that
    /// hold pairs back ([`Engine::lag`] > 0, e.g. with VMAF) refuse it, and so does an
    /// engine with pairs pending: use [`Engine::submit`] and [`Engine::poll`].
    pub fn compare(&mut self, reference: &Frame, distorted: &Frame) -> Result<Scores, EngineError> {
        if self.lag() > 0 {
            return Err(EngineError::Unsupported(format!(
                "this engine scores a pair once the {} pair(s) after it are known (vmaf's \
                 motion2 needs the next one); use Engine::push and Engine::finish",
                self.lag()
            )));
        }
        if self.held() > 0 {
            return Err(EngineError::Unsupported(format!(
                "{} pushed pair(s) are still in flight; use Engine::push and Engine::finish",
                self.held()
            )));
        }
        let tag = self.next_tag;
        self.submit(
            Frames::Pair {
                reference,
                distorted,
            },
            tag,
        )?;
        self.next_tag = self.next_tag.wrapping_add(1);
        self.settle()?;
        Ok(self.poll().map(|(_, s)| s).unwrap_or_default())
    }

    /// [`Engine::submit`] for a caller without tags of its own: measures one pair and
    /// returns the scores of the pair [`Engine::delay`] pairs before it (this one's when
    /// the delay is 0), or `None` while the first pairs are held. Fields of held-back
    /// metrics come after the others.
    pub fn push(
        &mut self,
        reference: &Frame,
        distorted: &Frame,
    ) -> Result<Option<Scores>, EngineError> {
        self.push_frames(Frames::Pair {
            reference,
            distorted,
        })
    }

    /// [`Engine::push`] for an engine without reference ([`Engine::single_builder`]).
    pub fn push_single(&mut self, frame: &Frame) -> Result<Option<Scores>, EngineError> {
        self.push_frames(Frames::Single(frame))
    }

    fn push_frames(&mut self, frames: Frames<'_>) -> Result<Option<Scores>, EngineError> {
        let tag = self.next_tag;
        self.submit(frames, tag)?;
        self.next_tag = self.next_tag.wrapping_add(1);
        Ok(self.poll().map(|(_, s)| s))
    }

    /// [`Engine::end`], for a caller without tags: the scores of the pairs still pending,
    /// oldest first.
    pub fn finish(&mut self) -> Result<Vec<Scores>, EngineError> {
        self.end()?;
        Ok(std::iter::from_fn(|| self.poll()).map(|(_, s)| s).collect())
    }

    /// The next pair submitted starts a window of the caller's (the element's tumbling
    /// windows, `window`): metrics whose per-pair value is that of a span (`cvvdp`, the JOD
    /// of the sequence so far) also give, for that pair and the ones after it, the terms a
    /// sequence starting there would have ([`Scores::window_pool_terms`]), so that a window
    /// pooled from them ([`crate::Pooler::push_window`]) is the reference's result on the
    /// window's frames: the temporal channels start again at the window as the reference
    /// run on those frames starts them. Pairs already submitted are not affected; without
    /// this call, a window's terms are the pair's own. The sequence itself goes on (the
    /// summary's span is the run's).
    pub fn start_window(&mut self) {
        self.scheduler.start_window();
    }

    /// Drops the pairs not ready (held back or in flight) and every state across pairs (a
    /// flush): the next pair starts a new sequence. Returns how many pairs were dropped
    /// (for the caller to count); their tags never come back. Ready pairs stay ready.
    pub fn reset(&mut self) -> usize {
        self.scheduler.reset().len()
    }
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("plan", &self.plan)
            .field("metrics", &self.metrics)
            .field("backend", &self.backend_kind())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::PixelFormat;
    use crate::frame::{HostFrame, Plane};
    use crate::metric_set::MetricSet;

    /// Deterministic test pattern value for (x, y, channel).
    fn px(x: usize, y: usize, c: usize) -> u8 {
        ((x * 7 + y * 13 + c * 50) % 251) as u8
    }

    #[test]
    fn i420_and_nv12_with_padded_strides_compare_equal() {
        let (w, h) = (7usize, 5usize);
        let (cw, chh) = (4usize, 3usize);
        let y: Vec<u8> = (0..h)
            .flat_map(|yy| (0..w + 3).map(move |x| px(x, yy, 0)))
            .collect();
        let u: Vec<u8> = (0..chh)
            .flat_map(|yy| (0..cw).map(move |x| px(x, yy, 1)))
            .collect();
        let v: Vec<u8> = (0..chh)
            .flat_map(|yy| (0..cw).map(move |x| px(x, yy, 2)))
            .collect();
        let uv: Vec<u8> = (0..chh)
            .flat_map(|yy| (0..cw).flat_map(move |x| [px(x, yy, 1), px(x, yy, 2)]))
            .collect();
        let i420 = HostFrame::new(&[
            Plane {
                data: &y,
                stride: w + 3,
            },
            Plane {
                data: &u,
                stride: cw,
            },
            Plane {
                data: &v,
                stride: cw,
            },
        ]);
        let nv12 = HostFrame::new(&[
            Plane {
                data: &y,
                stride: w + 3,
            },
            Plane {
                data: &uv,
                stride: 2 * cw,
            },
        ]);
        let cfg = EngineConfig {
            backend: BackendChoice::Cpu,
            ..Default::default()
        };
        let layout = |format| FrameLayout {
            format,
            width: w as u32,
            height: h as u32,
        };
        let mut e =
            Engine::new(&cfg, layout(PixelFormat::I420), layout(PixelFormat::Nv12)).unwrap();
        let s = e.compare(&Frame::Host(i420), &Frame::Host(nv12)).unwrap();
        assert_eq!(s.get("psnr-avg"), Some(f64::INFINITY));

        // One U sample off by 3: only mse-u changes, by 9 / (4*3).
        let mut uv2 = uv.clone();
        uv2[2] = uv2[2].wrapping_add(3);
        let nv12b = HostFrame::new(&[
            Plane {
                data: &y,
                stride: w + 3,
            },
            Plane {
                data: &uv2,
                stride: 2 * cw,
            },
        ]);
        let s = e.compare(&Frame::Host(i420), &Frame::Host(nv12b)).unwrap();
        assert_eq!(s.get("mse-u"), Some(9.0 / 12.0));
        assert_eq!(s.get("mse-y"), Some(0.0));
        assert_eq!(s.get("mse-v"), Some(0.0));
    }

    #[test]
    fn one_input_alone_measures_no_reference_metrics_and_names_the_others() {
        let layout = FrameLayout {
            format: PixelFormat::Gray8,
            width: 9,
            height: 7,
        };
        let data: Vec<u8> = (0..63).map(|i| (i * 37 % 251) as u8).collect();
        let f = Frame::Host(HostFrame::new(&[Plane {
            data: &data,
            stride: 9,
        }]));
        let cfg = |metrics| EngineConfig {
            metrics,
            backend: BackendChoice::Cpu,
            ..Default::default()
        };
        let siti = crate::metric::siti::FLAG;
        let mut e = Engine::single_builder(&cfg(siti), layout).build().unwrap();
        assert!(!e.has_reference());
        let s = e.push_single(&f).unwrap().unwrap();
        let names: Vec<_> = s.iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["si", "ti"]);
        // The same frame as a pair: its ref- fields equal the distorted ones.
        let mut pair = Engine::new(&cfg(siti), layout, layout).unwrap();
        let both = pair.compare(&f, &f).unwrap();
        assert_eq!(both.get("ref-si"), s.get("si"));
        assert!(matches!(e.push(&f, &f), Err(EngineError::Unsupported(_))));
        assert!(matches!(
            pair.push_single(&f),
            Err(EngineError::Unsupported(_))
        ));

        let full = MetricSet::PSNR | MetricSet::VMAF | siti;
        let err = Engine::single_builder(&cfg(full), layout)
            .build()
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("psnr, vmaf need a reference input") && err.contains("siti"),
            "{err}"
        );
    }

    #[test]
    fn a_named_set_measures_its_distorted_only_metrics_on_the_distorted_input_alone() {
        let (w, h) = (256usize, 224usize);
        let layout = FrameLayout {
            format: PixelFormat::I420,
            width: w as u32,
            height: h as u32,
        };
        let data: Vec<u8> = (0..w * h * 3 / 2).map(|i| (i * 37 % 251) as u8).collect();
        let planes = [
            Plane {
                data: &data,
                stride: w,
            },
            Plane {
                data: &data[w * h..],
                stride: w / 2,
            },
            Plane {
                data: &data[w * h * 5 / 4..],
                stride: w / 2,
            },
        ];
        let f = Frame::Host(HostFrame::new(&planes));
        let names = |metrics| {
            let cfg = EngineConfig {
                metrics,
                backend: BackendChoice::Cpu,
                ..Default::default()
            };
            let mut e = Engine::new(&cfg, layout, layout).unwrap();
            let mut out: Vec<Scores> = e.push(&f, &f).unwrap().into_iter().collect();
            out.extend(e.finish().unwrap());
            out[0]
                .iter()
                .map(|(n, _)| n.to_string())
                .collect::<Vec<_>>()
        };
        let aom = MetricSet::named("aom-ctc").unwrap();
        let cambi = MetricSet::named("cambi").unwrap();
        let whole = names(aom);
        assert!(whole.iter().any(|n| n == "cambi"), "{whole:?}");
        assert!(!whole.iter().any(|n| n == "ref-cambi"), "{whole:?}");
        // Asked for on its own, or with part of the set, CAMBI measures both inputs.
        let alone = names(cambi | MetricSet::PSNR);
        assert!(alone.iter().any(|n| n == "ref-cambi"), "{alone:?}");
        assert_eq!(crate::metric::distorted_only(aom), cambi);
        assert!(
            crate::metric::distorted_only(MetricSet::from_bits(
                aom.bits() & !MetricSet::VMAF.bits()
            ))
            .is_empty()
        );
        // With another check (as with `all`) every input is measured; with another
        // full-reference metric the set's rule holds.
        let blur = MetricSet::named("blur").unwrap();
        assert!(crate::metric::distorted_only(aom | blur).is_empty());
        assert!(crate::metric::distorted_only(MetricSet::ALL).is_empty());
        let xpsnr = MetricSet::named("xpsnr").unwrap();
        assert_eq!(crate::metric::distorted_only(aom | xpsnr), cambi);
    }

    #[test]
    fn completing_the_pairs_in_flight_keeps_the_pairs_held_back() {
        let layout = FrameLayout {
            format: PixelFormat::Gray8,
            width: 64,
            height: 64,
        };
        let cfg = EngineConfig {
            metrics: MetricSet::PSNR | MetricSet::VMAF,
            backend: BackendChoice::Cpu,
            ..Default::default()
        };
        let data: Vec<u8> = (0..64 * 64).map(|i| (i * 37 % 251) as u8).collect();
        let f = Frame::Host(HostFrame::new(&[Plane {
            data: &data,
            stride: 64,
        }]));
        // The CPU backend measures one pair at a time, whatever is asked.
        let mut e = Engine::builder(&cfg, layout, layout)
            .in_flight(MAX_IN_FLIGHT)
            .build()
            .unwrap();
        assert_eq!((e.in_flight(), e.lag(), e.delay()), (1, 1, 1));
        assert_eq!(e.push(&f, &f).unwrap(), None);
        assert_eq!(e.held(), 1);
        assert!(!e.reads(0), "the CPU backend reads nothing after a push");
        // VMAF's pair stays held back: its motion needs the next frame.
        e.settle().unwrap();
        assert!(e.poll().is_none());
        assert_eq!(e.held(), 1);
        let second = e.push(&f, &f).unwrap().expect("the first pair's scores");
        assert!(second.get("vmaf").is_some());
        let last = e.finish().unwrap();
        assert_eq!((last.len(), e.held()), (1, 0));
    }

    #[test]
    fn short_planes_are_rejected_not_read() {
        let cfg = EngineConfig {
            backend: BackendChoice::Cpu,
            ..Default::default()
        };
        let layout = FrameLayout {
            format: PixelFormat::Gray8,
            width: 8,
            height: 8,
        };
        let mut e = Engine::new(&cfg, layout, layout).unwrap();
        let data = [0u8; 63];
        let f = Frame::Host(HostFrame::new(&[Plane {
            data: &data,
            stride: 8,
        }]));
        assert!(matches!(
            e.compare(&f, &f),
            Err(EngineError::InvalidFrame(_))
        ));
    }

    #[test]
    fn auto_falls_back_to_cpu_and_says_why_without_cuda() {
        // SAFETY: only probes for the driver library.
        if unsafe { cudarc::driver::sys::is_culib_present() } {
            return; // a CUDA machine: covered by tests/cuda_vs_cpu.rs
        }
        let layout = FrameLayout {
            format: PixelFormat::I420,
            width: 16,
            height: 16,
        };
        let e = Engine::new(&EngineConfig::default(), layout, layout).unwrap();
        assert_eq!(e.backend_name(), "cpu");
        assert!(
            e.backend_note().unwrap().contains("libcuda"),
            "{:?}",
            e.backend_note()
        );
        let cfg = EngineConfig {
            backend: BackendChoice::Cuda,
            ..Default::default()
        };
        let err = Engine::new(&cfg, layout, layout).unwrap_err();
        assert!(matches!(err, EngineError::CudaUnavailable(_)));
        // What is wrong, not what to do (the element and the command say that).
        assert!(!err.to_string().contains("backend="), "{err}");
    }
}
