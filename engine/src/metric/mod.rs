//! The metrics, one folder each, and the registry that the engine and the element iterate.
//!
//! A metric's folder holds everything about it: `mod.rs` its definition (the fields it
//! produces, its size limits, the formula from sums to scores, written once), `cpu.rs` the
//! sums on the CPU (the kernel crate's host build) and `cuda.rs` the same kernels as PTX,
//! with state allocated once per caps. The engine knows a metric only through its
//! [`Entry`] in [`REGISTRY`]: adding a metric is a folder, a kernel module and one line
//! there. (libvmaf's feature-extractor table is the model: one entry per extractor, which
//! may provide several metrics, as SSIM and MS-SSIM share one pass here.)

pub mod butteraugli;
pub mod psnr;
pub mod ssim;
pub mod ssimulacra2;
pub mod vmaf;

use cudarc::driver::DriverError;

use crate::cuda::Gpu;
use crate::error::EngineError;
use crate::frame::PlanePtrs;
use crate::metrics::MetricSet;
use crate::plan::Plan;
use crate::scores::Scores;

/// A metric as users name it: the `metrics` flag and its documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Info {
    pub flag: MetricSet,
    /// Flag name, e.g. `ms-ssim` (the element's flag nick).
    pub name: &'static str,
    /// One line for `gst-inspect-1.0` and `--help`.
    pub description: &'static str,
    /// The fields it adds to every record.
    pub fields: &'static str,
}

/// A metric's GPU state for a plan, if the plan wants it.
pub(crate) type CudaState = Result<Option<Box<dyn CudaMetric>>, DriverError>;

/// One registered metric implementation.
pub(crate) struct Entry {
    /// The metrics this entry computes.
    pub provides: &'static [Info],
    /// Why requested metrics are left out for this layout (e.g. frames too small), for the
    /// caller to report once.
    pub notes: fn(&Plan, MetricSet) -> Vec<String>,
    /// Refuses a plan the metric cannot measure at all (e.g. a colorimetry it cannot
    /// linearise), with a message naming the fix.
    pub check: fn(&Plan, MetricSet) -> Result<(), EngineError>,
    /// CPU state for the plan; `None` when none of its metrics is wanted or possible.
    pub cpu: fn(&Plan, MetricSet) -> Option<Box<dyn CpuMetric>>,
    /// GPU state for the plan (allocated here, once); `None` as for `cpu`.
    pub cuda: fn(&Gpu, &Plan, MetricSet) -> CudaState,
}

/// A metric's per-plan state on the CPU backend.
pub(crate) trait CpuMetric: Send {
    /// Measures one validated host pair and appends its fields (a temporal metric, see
    /// [`CpuMetric::lag`], those of the pair it held back).
    fn measure(&mut self, plan: &Plan, r: &PlanePtrs, d: &PlanePtrs, scores: &mut Scores);

    /// Pairs the metric holds back: 0, or 1 for a temporal metric (VMAF's motion needs the
    /// next pair), whose `measure` appends the fields of the pair measured one call earlier
    /// (nothing on the first call of a sequence).
    fn lag(&self) -> usize {
        0
    }

    /// End of a sequence (EOS): appends the fields of the pair still held back, then starts
    /// a new sequence.
    fn finish(&mut self, _plan: &Plan, _scores: &mut Scores) {}

    /// Drops the held pair and any state across pairs (a flush): the next pair starts a new
    /// sequence.
    fn reset(&mut self) {}
}

/// A metric's per-plan state on the CUDA backend.
pub(crate) trait CudaMetric: Send {
    /// Queues the metric's kernels for one pair (in device memory, valid for the plan) on
    /// the engine's stream, waits for its sums and appends its fields.
    fn measure(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
        scores: &mut Scores,
    ) -> Result<(), EngineError>;

    /// As [`CpuMetric::lag`].
    fn lag(&self) -> usize {
        0
    }

    /// As [`CpuMetric::finish`].
    fn finish(&mut self, _plan: &Plan, _scores: &mut Scores) {}

    /// As [`CpuMetric::reset`].
    fn reset(&mut self) {}
}

/// Every metric implementation, in the order their fields appear in a record (the fields of
/// metrics that hold a pair back, VMAF, come after the others: keep them last).
pub(crate) const REGISTRY: &[Entry] = &[
    psnr::ENTRY,
    ssim::ENTRY,
    ssimulacra2::ENTRY,
    butteraugli::ENTRY,
    vmaf::ENTRY,
];

/// Every metric the engine offers, in registry order.
pub fn all() -> impl Iterator<Item = &'static Info> {
    REGISTRY.iter().flat_map(|e| e.provides.iter())
}

/// The flags of every registered metric.
pub(crate) const fn all_flags() -> u32 {
    let mut bits = 0;
    let mut i = 0;
    while i < REGISTRY.len() {
        let mut j = 0;
        while j < REGISTRY[i].provides.len() {
            bits |= REGISTRY[i].provides[j].flag.bits();
            j += 1;
        }
        i += 1;
    }
    bits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_flags_are_unique() {
        let infos: Vec<_> = all().collect();
        for (i, a) in infos.iter().enumerate() {
            assert_eq!(a.flag.bits().count_ones(), 1, "{}", a.name);
            for b in &infos[i + 1..] {
                assert_ne!(a.name, b.name);
                assert_ne!(a.flag, b.flag);
            }
        }
        assert_eq!(MetricSet::ALL.bits(), all_flags());
        assert_eq!(
            infos.iter().map(|i| i.name).collect::<Vec<_>>(),
            [
                "psnr",
                "ssim",
                "ms-ssim",
                "ssimulacra2",
                "butteraugli",
                "vmaf"
            ]
        );
    }
}
