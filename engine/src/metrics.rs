//! Which metrics to compute.

use std::ops::BitOr;

/// A set of metrics, as bit flags (the element's `metrics` property maps onto it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MetricSet(u32);

impl MetricSet {
    pub const PSNR: MetricSet = MetricSet(1);
    pub const ALL: MetricSet = MetricSet(1);

    pub fn contains(self, other: MetricSet) -> bool {
        self.0 & other.0 == other.0
    }

    pub fn bits(self) -> u32 {
        self.0
    }

    /// Unknown bits are dropped.
    pub fn from_bits(bits: u32) -> Self {
        MetricSet(bits & Self::ALL.0)
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl BitOr for MetricSet {
    type Output = MetricSet;
    fn bitor(self, rhs: MetricSet) -> MetricSet {
        MetricSet(self.0 | rhs.0)
    }
}
