//! Which metrics to compute.

use std::ops::BitOr;

/// A set of metrics, as bit flags (the element's `metrics` property maps onto it bit for
/// bit). Each registered metric ([`crate::metric::all`]) owns one bit, which its module
/// declares with [`MetricSet::bit`] (the registry test checks that no two share one); the
/// named constants below are the first metrics' bits, kept for callers' convenience. A
/// bit, once released, never changes: it is the flag's value in users' saved pipelines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MetricSet(u32);

impl MetricSet {
    pub const PSNR: MetricSet = MetricSet(1);
    /// SSIM (fields `ssim`, `ssim-<plane>`, `ssim-all`).
    pub const SSIM: MetricSet = MetricSet(1 << 1);
    /// MS-SSIM (field `ms-ssim`).
    pub const MS_SSIM: MetricSet = MetricSet(1 << 2);
    /// SSIMULACRA2 2.1 on linear light (field `ssimulacra2`).
    pub const SSIMULACRA2: MetricSet = MetricSet(1 << 3);
    /// Butteraugli on linear light (fields `butteraugli`, `butteraugli-3norm`).
    pub const BUTTERAUGLI: MetricSet = MetricSet(1 << 4);
    /// VMAF, libvmaf's integer features and model (field `vmaf`, and the features with
    /// `vmaf-features`).
    pub const VMAF: MetricSet = MetricSet(1 << 5);
    /// The metric of bit `n` (as a registry entry declares it).
    pub const fn bit(n: u32) -> MetricSet {
        MetricSet(1 << n)
    }

    pub const fn contains(self, other: MetricSet) -> bool {
        self.0 & other.0 == other.0
    }

    pub const fn bits(self) -> u32 {
        self.0
    }

    /// A set of the given bits, known or not (`from_bits`, where the registry is known,
    /// drops unknown ones).
    pub(crate) const fn from_raw(bits: u32) -> Self {
        MetricSet(bits)
    }

    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl BitOr for MetricSet {
    type Output = MetricSet;
    fn bitor(self, rhs: MetricSet) -> MetricSet {
        MetricSet(self.0 | rhs.0)
    }
}
