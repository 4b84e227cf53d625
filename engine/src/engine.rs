//! The engine: validates the pair of layouts once, picks a backend, and turns frame pairs
//! into scores.

use crate::backend::{Backend, BackendKind};
use crate::color::Colorimetry;
use crate::error::EngineError;
use crate::format::FrameLayout;
use crate::frame::Frame;
use crate::metric::temporal::Pending;
use crate::metric::{Configured, Options};
use crate::metrics::MetricSet;
use crate::plan::{Plan, PlanOptions};
use crate::scores::Scores;

/// Which backend runs the kernels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BackendChoice {
    /// CUDA when a device is usable, else the CPU.
    #[default]
    Auto,
    Cuda,
    Cpu,
}

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
    backend: Box<dyn Backend>,
    note: Option<String>,
    /// The instant fields of the pairs temporal metrics hold back.
    pending: Pending,
}

/// Everything an [`Engine`] is made from, given before it is built: [`Engine::builder`].
pub struct EngineBuilder<'a> {
    config: &'a EngineConfig,
    /// `None`: the distorted input alone ([`Engine::single_builder`]).
    reference: Option<FrameLayout>,
    distorted: FrameLayout,
    colorimetry: Option<[Colorimetry; 2]>,
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
        };
        let set = self.config.metrics;
        let plan = match self.reference {
            Some(reference) => Plan::with_options(reference, self.distorted, options)?,
            None => {
                let full: Vec<&str> = crate::metric::needing_reference(set)
                    .map(|i| i.name)
                    .collect();
                if !full.is_empty() {
                    return Err(EngineError::NeedsReference(full.join(", ")));
                }
                Plan::single(self.distorted, options)?
            }
        };
        let configured = Configured::all(set, &self.config.options)?;
        for c in &configured {
            (c.entry.check)(&c.setup(&plan, set))?;
        }
        let (backend, note) = crate::backend::select(
            self.config,
            &plan,
            &configured,
            self.context,
            self.in_flight,
        )?;
        Ok(Engine {
            plan,
            metrics: set,
            configured,
            backend,
            note,
            pending: Pending::default(),
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
        self.backend.kind()
    }

    /// "cuda" or "cpu".
    pub fn backend_name(&self) -> &'static str {
        self.backend.kind().name()
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

    /// Measures one pair: every requested metric's fields, in registry order. Engines that
    /// hold pairs back ([`Engine::lag`] > 0, e.g. with VMAF) refuse it, and so does an
    /// engine with pairs in flight: use [`Engine::push`] and [`Engine::finish`].
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
        self.backend.submit(&self.plan, reference, distorted)?;
        Ok(self.complete()?.unwrap_or_default())
    }

    /// Pairs the engine holds back before their scores are final: 1 with VMAF (a pair's
    /// motion needs the next reference frame), else 0. Pairs in flight come on top of it
    /// ([`Engine::in_flight`]).
    pub fn lag(&self) -> usize {
        self.backend.lag()
    }

    /// Pairs the engine may have in flight, their work queued on the GPU and their scores
    /// not read yet ([`EngineBuilder::in_flight`]; 1 on the CPU backend).
    pub fn in_flight(&self) -> usize {
        self.backend.depth()
    }

    /// Pushes after a pair until [`Engine::push`] returns its scores: [`Engine::lag`] +
    /// [`Engine::in_flight`] − 1.
    pub fn delay(&self) -> usize {
        self.lag() + self.in_flight() - 1
    }

    /// Pairs pushed whose scores are not final yet (at most [`Engine::delay`]).
    pub fn held(&self) -> usize {
        self.pending.len() + self.backend.in_flight()
    }

    /// The last pairs pushed whose frames the engine may still read: those in flight (at
    /// most [`Engine::in_flight`] − 1 after a push, 0 after [`Engine::complete_in_flight`],
    /// [`Engine::finish`] or [`Engine::reset`]). A caller that lends the engine device
    /// frames ([`crate::Frame::Device`]) can give the frames of older pairs back to their
    /// pool: pairs held back by temporal metrics ([`Engine::lag`]) keep their own copy of
    /// what they need.
    pub fn reading(&self) -> usize {
        self.backend.in_flight()
    }

    /// Measures one pair and returns the complete scores of the pair [`Engine::delay`]
    /// pairs before it (this one's when the delay is 0), or `None` while the first pairs
    /// are held. Fields of held-back metrics come after the others.
    pub fn push(
        &mut self,
        reference: &Frame,
        distorted: &Frame,
    ) -> Result<Option<Scores>, EngineError> {
        if !self.plan.has_reference {
            return Err(EngineError::Unsupported(
                "this engine measures one input alone (it was built without a reference); \
                 give it frames with Engine::push_single"
                    .into(),
            ));
        }
        self.measure(reference, distorted)
    }

    /// Measures one frame of an engine without reference ([`Engine::single_builder`]), as
    /// [`Engine::push`] measures a pair.
    pub fn push_single(&mut self, frame: &Frame) -> Result<Option<Scores>, EngineError> {
        if self.plan.has_reference {
            return Err(EngineError::Unsupported(
                "this engine compares pairs; give it both frames with Engine::push".into(),
            ));
        }
        self.measure(frame, frame)
    }

    fn measure(
        &mut self,
        reference: &Frame,
        distorted: &Frame,
    ) -> Result<Option<Scores>, EngineError> {
        // Every push completes a pair once the backend is full, so there is room here.
        self.backend.submit(&self.plan, reference, distorted)?;
        if self.backend.in_flight() < self.backend.depth() {
            return Ok(None);
        }
        self.complete()
    }

    /// Completes the oldest pair in flight; its scores, or those of the pair held back.
    fn complete(&mut self) -> Result<Option<Scores>, EngineError> {
        let (mut now, mut late) = (Scores::new(), Scores::new());
        self.backend.complete(&self.plan, &mut now, &mut late)?;
        Ok(self.pending.push(self.backend.lag(), now, late))
    }

    /// Waits for the pairs in flight and returns the scores that are then final, oldest
    /// first, without ending the sequence: pairs held back by temporal metrics stay held
    /// ([`Engine::lag`]). For a caller with nothing to push for a while (a frame without a
    /// partner, a pair it does not measure), so that the pairs before it do not wait for
    /// the next push; afterwards [`Engine::reading`] is 0. Fails only when the GPU fails on
    /// a pair in flight; the pushed pairs are then dropped, as by [`Engine::reset`].
    pub fn complete_in_flight(&mut self) -> Result<Vec<Scores>, EngineError> {
        let mut out = Vec::new();
        while self.backend.in_flight() > 0 {
            match self.complete() {
                Ok(s) => out.extend(s),
                Err(e) => {
                    self.reset();
                    return Err(e);
                }
            }
        }
        Ok(out)
    }

    /// End of the sequence (EOS, caps change): the scores of the pairs still in flight or
    /// held back, oldest first, scored as libvmaf scores the last frames; the next pair
    /// starts a new sequence. Fails only when the GPU fails on a pair still in flight.
    pub fn finish(&mut self) -> Result<Vec<Scores>, EngineError> {
        let mut out = self.complete_in_flight()?;
        let mut late = vec![Scores::new(); self.pending.len()];
        self.backend.lineup().finish(&self.plan, &mut late);
        out.extend(self.pending.finish(late));
        Ok(out)
    }

    /// Drops the held pairs, those in flight and every state across pairs (a flush): the
    /// next pair starts a new sequence. Returns how many pushed pairs were dropped (for
    /// the caller to count).
    pub fn reset(&mut self) -> usize {
        let dropped = self.held();
        self.backend.abandon();
        self.pending.reset();
        self.backend.lineup().reset();
        dropped
    }
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("plan", &self.plan)
            .field("metrics", &self.metrics)
            .field("backend", &self.backend.kind())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::PixelFormat;
    use crate::frame::{HostFrame, Plane};
    use crate::metrics::MetricSet;

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
        assert_eq!((e.held(), e.reading()), (1, 0));
        // VMAF's pair stays held back: its motion needs the next frame.
        assert!(e.complete_in_flight().unwrap().is_empty());
        assert_eq!(e.held(), 1);
        let second = e.push(&f, &f).unwrap().expect("the first pair's scores");
        assert!(second.get("vmaf").is_some());
        let last = e.finish().unwrap();
        assert_eq!((last.len(), e.held(), e.reading()), (1, 0, 0));
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
        assert!(err.to_string().contains("backend=cpu"));
    }
}
