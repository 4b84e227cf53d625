//! The engine: validates the pair of layouts once, picks a backend, and turns frame pairs
//! into scores.

use crate::backend::{Backend, BackendKind};
use crate::color::Colorimetry;
use crate::error::EngineError;
use crate::format::FrameLayout;
use crate::frame::Frame;
use crate::metric::REGISTRY;
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

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EngineConfig {
    pub metrics: MetricSet,
    pub backend: BackendChoice,
    pub device_id: u32,
    /// SSIM on chroma planes too (`ssim-u`/`-v`, `ssim-all`); luma only when false.
    pub ssim_chroma: bool,
    /// Butteraugli's intensity target in nits (libjxl's default 80; Vship uses 203).
    pub butteraugli_intensity: f32,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            metrics: MetricSet::PSNR,
            backend: BackendChoice::Auto,
            device_id: 0,
            ssim_chroma: false,
            butteraugli_intensity: crate::metric::butteraugli::DEFAULT_INTENSITY,
        }
    }
}

pub struct Engine {
    plan: Plan,
    metrics: MetricSet,
    backend: Box<dyn Backend>,
    note: Option<String>,
    /// The fields of the pair a temporal metric holds back, without that metric's.
    held: Option<Scores>,
}

/// Everything an [`Engine`] is made from, given before it is built: [`Engine::builder`].
pub struct EngineBuilder<'a> {
    config: &'a EngineConfig,
    reference: FrameLayout,
    distorted: FrameLayout,
    colorimetry: Option<[Colorimetry; 2]>,
    context: Option<crate::cuda::ExternalContext>,
    vmaf: Option<crate::metric::vmaf::VmafOptions>,
}

impl EngineBuilder<'_> {
    /// The inputs' colorimetry (default: [`Colorimetry::default_for`] their formats), which
    /// linear-light metrics (SSIMULACRA2) convert with. [`build`](Self::build) fails when
    /// such a metric is enabled and cannot convert it (a transfer function it cannot
    /// linearise).
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

    /// VMAF's model and whether its elementary features are reported (default: the
    /// built-in `vmaf_v0.6.1`, no features).
    pub fn vmaf(mut self, options: crate::metric::vmaf::VmafOptions) -> Self {
        self.vmaf = Some(options);
        self
    }

    /// The engine: its plan complete, every metric's check passed, its backend chosen.
    pub fn build(self) -> Result<Engine, EngineError> {
        let options = PlanOptions {
            ssim_chroma: self.config.ssim_chroma,
            butteraugli_intensity: self.config.butteraugli_intensity,
            colorimetry: self.colorimetry,
            vmaf: self.vmaf.unwrap_or_default(),
        };
        let plan = Plan::with_options(self.reference, self.distorted, options)?;
        for entry in REGISTRY {
            (entry.check)(&plan, self.config.metrics)?;
        }
        let (backend, note) = crate::backend::select(self.config, &plan, self.context)?;
        Ok(Engine {
            plan,
            metrics: self.config.metrics,
            backend,
            note,
            held: None,
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
            reference,
            distorted,
            colorimetry: None,
            context: None,
            vmaf: None,
        }
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
        REGISTRY
            .iter()
            .flat_map(|e| (e.notes)(&self.plan, self.metrics))
            .collect()
    }

    /// Measures one pair: every requested metric's fields, in registry order. Engines that
    /// hold pairs back ([`Engine::lag`] > 0, i.e. with VMAF) refuse it: use
    /// [`Engine::push`] and [`Engine::finish`].
    pub fn compare(&mut self, reference: &Frame, distorted: &Frame) -> Result<Scores, EngineError> {
        if self.lag() > 0 {
            return Err(EngineError::Unsupported(
                "vmaf scores a pair once the next pair is known (motion2); use Engine::push and                  Engine::finish"
                    .into(),
            ));
        }
        Ok(self.push(reference, distorted)?.unwrap_or_default())
    }

    /// Pairs the engine holds back before their scores are final: 1 with VMAF (a pair's
    /// motion needs the next reference frame), else 0.
    pub fn lag(&self) -> usize {
        self.backend.lag()
    }

    /// Measures one pair and returns the complete scores of the pair [`Engine::lag`] pairs
    /// before it (this one's when the lag is 0), or `None` while the first pair is held.
    /// Fields of held-back metrics come after the others.
    pub fn push(
        &mut self,
        reference: &Frame,
        distorted: &Frame,
    ) -> Result<Option<Scores>, EngineError> {
        let (mut now, mut late) = (Scores::new(), Scores::new());
        self.backend
            .measure(&self.plan, reference, distorted, &mut now, &mut late)?;
        if self.backend.lag() == 0 {
            return Ok(Some(now));
        }
        Ok(self.held.replace(now).map(|mut held| {
            held.append(late);
            held
        }))
    }

    /// End of the sequence (EOS): the scores of the pair still held back, if any, scored as
    /// libvmaf scores a last frame; the next pair starts a new sequence.
    pub fn finish(&mut self) -> Option<Scores> {
        let mut late = Scores::new();
        self.backend.finish(&self.plan, &mut late);
        self.held.take().map(|mut held| {
            held.append(late);
            held
        })
    }

    /// Drops the held pair and every state across pairs (a flush): the next pair starts a
    /// new sequence.
    pub fn reset(&mut self) {
        self.held = None;
        self.backend.reset();
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
