//! The registry's vocabulary: what a metric declares about itself (its [`Entry`]: the
//! metrics it provides, their fields, its options, its events, how its state is built on
//! each backend) and what the engine builds from it ([`Configured`], [`Setup`]). The list
//! of registered metrics, and everything looked up in it, is `crate::metric`'s: it sits
//! above the metrics, which sit above this.

use std::any::Any;

use cudarc::driver::DriverError;

use crate::cuda::Gpu;
use crate::error::EngineError;
use crate::event::{Detector, EventHook, Input};
use crate::metric::option::Options;
use crate::metric::{CpuMetric, CudaMetric, Field, OptionSpec};
use crate::metrics::MetricSet;
use crate::plan::Plan;

/// A metric as users name it: the `metrics` flag, its documentation and its fields.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Info {
    pub flag: MetricSet,
    /// Flag name, e.g. `ms-ssim` (the element's flag nick).
    pub name: &'static str,
    /// One line for `gst-inspect-1.0` and `--help`.
    pub description: &'static str,
    /// Every field it can add to a record (which ones a record has depends on the format
    /// and the options), in record order.
    pub fields: &'static [Field],
}

/// What a metric compares: a (reference, distorted) pair, or one frame.
///
/// A no-reference metric ([`Reference::None`]: SI/TI, and later blur, blockiness, black,
/// freeze) measures one frame. The engine computes it on the distorted frame and, when
/// there is a reference input ([`Plan::has_reference`]), on the reference too, whose fields carry
/// the prefix `ref-` (`si`, `ref-si`). Both names are declared in the metric's
/// [`Info::fields`] (the registry test checks the pairs), so that [`crate::metric::fields`] and every
/// output know them. The per-side state and the order (the distorted frame's fields, then
/// the reference's) are `crate::metric::single`'s, not the metric's. See docs/METRICS.md, "No-reference
/// metrics".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reference {
    /// Needs the reference: PSNR, SSIM, SSIMULACRA2, Butteraugli, VMAF.
    Full,
    /// One frame, no reference.
    None,
}

/// The prefix of the fields a no-reference metric computes on the reference frame.
pub const REF_PREFIX: &str = "ref-";

/// A metric's GPU state for a plan, if the plan wants it.
pub(crate) type CudaState = Result<Option<Box<dyn CudaMetric>>, DriverError>;

/// A metric's own settings, parsed from the [`Options`] by its entry's `configure` (each
/// metric downcasts to its own type with [`Setup::settings`]).
pub(crate) type Settings = Box<dyn Any + Send + Sync>;

/// What a metric's state is built from: the plan, the requested metrics and the entry's
/// parsed settings.
#[derive(Clone, Copy)]
pub(crate) struct Setup<'a> {
    pub plan: &'a Plan,
    pub set: MetricSet,
    /// Pairs the backend may have in flight (1 on the CPU backend).
    pub in_flight: usize,
    settings: &'a (dyn Any + Send + Sync),
}

impl Setup<'_> {
    /// The entry's settings, as its `configure` made them.
    pub(crate) fn settings<T: Any>(&self) -> &T {
        self.settings
            .downcast_ref()
            .expect("an entry's functions read the settings its configure made")
    }
}

/// One registered metric implementation.
pub(crate) struct Entry {
    /// The metrics this entry computes.
    pub provides: &'static [Info],
    /// The options it reads (a shared option, such as `chroma-upsampling`, may be listed by
    /// several entries: it is one property).
    pub options: &'static [OptionSpec],
    /// Its settings from the options; an invalid value is an error naming the option.
    /// Called only when one of its metrics is requested.
    pub configure: fn(&Options) -> Result<Settings, EngineError>,
    /// Why requested metrics are left out for this layout (e.g. frames too small), for the
    /// caller to report once.
    pub notes: fn(&Setup) -> Vec<String>,
    /// Refuses a plan the metric cannot measure at all (e.g. a colorimetry it cannot
    /// linearise), with a message naming the fix.
    pub check: fn(&Setup) -> Result<(), EngineError>,
    /// CPU state for the plan; `None` when none of its metrics is wanted or possible.
    pub cpu: fn(&Setup) -> Option<Box<dyn CpuMetric>>,
    /// Whether its metrics need the reference frame ([`Reference`]).
    pub reference: Reference,
    /// GPU state for the plan (allocated here, once); `None` as for `cpu`.
    pub cuda: fn(&Gpu, &Setup) -> CudaState,
    /// The intervals it reports (black, freeze), if any: the outputs take events from
    /// here ([`crate::events`]).
    pub events: Option<EventHook>,
}

/// `configure` of an entry without options.
pub(crate) fn no_settings(_: &Options) -> Result<Settings, EngineError> {
    Ok(Box::new(()))
}

/// An entry with its settings, for the metrics one engine computes.
pub(crate) struct Configured {
    pub entry: &'static Entry,
    pub(crate) settings: Settings,
}

impl Configured {
    /// The entry's event detectors for `inputs` (none without an [`EventHook`]).
    pub(crate) fn detectors(&self, inputs: &[Input]) -> Vec<Box<dyn Detector>> {
        let Some(hook) = self.entry.events else {
            return Vec::new();
        };
        inputs
            .iter()
            .map(|&input| (hook.detector)(&*self.settings, input))
            .collect()
    }

    pub(crate) fn setup<'a>(&'a self, plan: &'a Plan, set: MetricSet) -> Setup<'a> {
        Setup {
            plan,
            set,
            in_flight: 1,
            settings: &*self.settings,
        }
    }
}
