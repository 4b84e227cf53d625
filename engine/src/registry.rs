//! The registry's vocabulary: what a metric declares about itself (its [`Entry`]: the
//! metrics it provides, their fields, its options, its events, how its state is built on
//! each backend) and what the engine builds from it ([`Configured`], [`Setup`]). The list
//! of registered metrics, and everything looked up in it, is `crate::metric`'s: it sits
//! above the metrics, which sit above this.

use std::any::Any;
use std::sync::Arc;

use cudarc::driver::{CudaEvent, DriverError};

use crate::color::ChromaUpsampling;
use crate::cuda::Gpu;
use crate::cuda::linear_light::LinearLight;
use crate::error::EngineError;
use crate::event::{Detector, EventHook, Input};
use crate::frame::PlanePtrs;
use crate::metric::option::Options;
use crate::metric::{Field, OptionSpec};
use crate::metric_set::MetricSet;
use crate::plan::Plan;
use crate::scores::Scores;

/// A metric as users name it: the `metrics` flag, its documentation and its fields.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Info {
    pub flag: MetricSet,
    /// Flag name, e.g. `ms-ssim` (the element's flag nick).
    pub name: &'static str,
    /// How prose names it (`PSNR`, `MS-SSIM`, `black intervals`): the element's
    /// description lists the registered metrics by these.
    pub title: &'static str,
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
/// the reference's) are `crate::metric::no_reference`'s, not the metric's. See docs/METRICS.md, "No-reference
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
    /// Whether a no-reference metric also measures the reference input (when the plan has
    /// one): not when every metric of the entry that `set` asks for is one that a named set
    /// requested whole measures on the distorted input only
    /// (`crate::metric::distorted_only`).
    pub reference_side: bool,
    /// The linear light that the CUDA backend computes once per pair for this entry and
    /// another ([`Entry::linear_light`]); `None` elsewhere (the entry converts the frames
    /// itself).
    pub linear_light: Option<&'a Arc<LinearLight>>,
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
    /// Whether its GPU state reads the frames' linear light (`crate::cuda::linear_light`),
    /// and with which chroma upsampling, for this setup: when two entries of an engine
    /// read it with the same upsampling, the backend converts each pair once and gives the
    /// stage to both ([`Setup::linear_light`]).
    pub linear_light: Option<fn(&Setup) -> Option<ChromaUpsampling>>,
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
    /// The request's no-reference metrics that run on the distorted input only
    /// (`crate::metric::distorted_only`), for [`Setup::reference_side`].
    pub(crate) distorted_only: MetricSet,
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
        let only = self.distorted_only;
        let reference_side = !self
            .entry
            .provides
            .iter()
            .filter(|i| set.contains(i.flag))
            .all(|i| only.contains(i.flag));
        Setup {
            plan,
            set,
            in_flight: 1,
            reference_side,
            linear_light: None,
            settings: &*self.settings,
        }
    }
}

/// A metric's per-plan state on the CPU backend.
pub(crate) trait CpuMetric: Send + Sequenced {
    /// Measures one validated host pair and appends its fields (a temporal metric, see
    /// `crate::metric::temporal`, those of the pair it held back).
    fn measure(&mut self, plan: &Plan, r: &PlanePtrs, d: &PlanePtrs, scores: &mut Scores);
}

/// A metric's per-plan state on the CUDA backend: `queue` enqueues a pair's work into a
/// slot of that pair, `read` reads the oldest pair's slot back.
pub(crate) trait CudaMetric: Send + Sequenced {
    /// Queues the pair's kernels and the copy of their results to the host, without
    /// waiting. The backend queues every metric first, so that the first `read` waits
    /// once for all of them and the others find their results ready (one host
    /// synchronisation per pair instead of one per metric: what the cheap no-reference
    /// metrics cost at thousands of frames per second).
    ///
    /// The backend queues every pair it reads, and with pairs in flight
    /// (at most [`crate::cuda::IN_FLIGHT`]) it queues the next
    /// pair before it reads this one, so a metric reads its results back per pair, in
    /// order ([`crate::cuda::Readback`]), and keeps what the next pair's kernels need on
    /// the device. The frames are valid until the pair is read, and only given here.
    ///
    /// For a full-reference metric `gpu` is its lane (`crate::metric::lane::Laned`), a stream of its own
    /// that already waits for the pair's uploads; for a no-reference one, the engine's.
    /// `uploaded` is recorded after this pair's uploads (host frames); work on other
    /// streams that reads the frames waits for it. Without it the frames were in device
    /// memory already and nothing has to be waited for.
    fn queue(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
        uploaded: Option<&CudaEvent>,
    ) -> Result<(), EngineError>;

    /// Forgets the pairs queued and not read (after an error, so that the next pair's
    /// results are not mistaken for theirs). The default has nothing queued to forget.
    fn drop_queued(&mut self) {}

    /// Whether a pair's work reads nothing that an earlier pair's work wrote or left (no
    /// state across pairs, on the device or the host, beyond buffers each pair writes
    /// before it reads them), so that two instances may take successive pairs in turn
    /// and run them side by side (`crate::metric::lane::Laned`). The default, `false`, is always safe.
    fn independent(&self) -> bool {
        false
    }

    /// Waits for the oldest pair queued and appends its fields; an error, and nothing
    /// appended, when no pair is queued.
    fn read(&mut self, plan: &Plan, scores: &mut Scores) -> Result<(), EngineError>;
}

/// The life of a metric's state across pairs; every metric state has it (the defaults are
/// those of a metric without lag).
pub(crate) trait Sequenced {
    /// Pairs the metric holds back before its fields for a pair are known.
    fn lag(&self) -> usize {
        0
    }

    /// Makes the metric hold `lag` pairs (at least its own [`Sequenced::lag`]), the
    /// lineup's largest, so that all late fields of one call belong to one pair.
    fn align(&mut self, _lag: usize) {}

    /// End of a sequence (EOS, caps change): appends the fields of each pair still held to
    /// `late` (one entry per held pair, oldest first), then starts a new sequence.
    fn finish(&mut self, _plan: &Plan, _late: &mut [Scores]) {}

    /// Drops the held pairs and any state across pairs (a flush).
    fn reset(&mut self) {}

    /// The next pair starts a window of the caller's ([`crate::Engine::start_window`]): a
    /// metric whose per-pair value is that of a span (`cvvdp`) gives that pair's and the
    /// next pairs' terms as if a sequence started there, beside its own
    /// ([`Scores::push_window_terms`]). Called between two pairs, in submission order.
    fn window_start(&mut self) {}
}
