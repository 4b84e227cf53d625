//! What a distortion map is: which ([`MapKind`]), its values ([`DistortionMap`]) and
//! statistics ([`Stats`]), and the squared-error map ([`squared_error`]).

/// The maps there are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MapKind {
    /// [`squared_error`].
    SquaredError,
    /// [`ssim::map`].
    Ssim,
    /// libjxl's Butteraugli diffmap (its maximum is the `butteraugli` field), made by the
    /// `butteraugli` metric as it measures the pair.
    Butteraugli,
}

impl MapKind {
    pub const ALL: [MapKind; 3] = [MapKind::SquaredError, MapKind::Ssim, MapKind::Butteraugli];

    /// As users write it (`squared-error`, `ssim`).
    pub fn name(self) -> &'static str {
        match self {
            MapKind::SquaredError => "squared-error",
            MapKind::Ssim => "ssim",
            MapKind::Butteraugli => "butteraugli",
        }
    }

    pub fn from_name(name: &str) -> Option<MapKind> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether larger values are worse (squared error), or smaller (SSIM).
    pub fn worse_above(self) -> bool {
        !matches!(self, MapKind::Ssim)
    }

    /// Whether the map module makes it from the frames ([`of_pair`]); else the metric of
    /// the same name makes it as it measures.
    pub(crate) fn made_from_frames(self) -> bool {
        !matches!(self, MapKind::Butteraugli)
    }
}

/// A map of one pair: one value per luma pixel, row by row.
#[derive(Clone, Debug, PartialEq)]
pub struct DistortionMap {
    pub width: usize,
    pub height: usize,
    pub values: Vec<f32>,
}

/// A map's statistics.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    /// The largest value and its pixel (the first in row order when several are equal).
    pub max: f32,
    pub max_x: usize,
    pub max_y: usize,
    /// The share of pixels whose value is past the threshold (above it, or below it for a
    /// map where lower is worse), 0..1.
    pub area: f64,
}

impl DistortionMap {
    /// The statistics, with pixels counted as past `threshold` when `worse_above` and
    /// above it, or when not and below it (SSIM: lower is worse).
    pub fn stats(&self, threshold: f32, worse_above: bool) -> Stats {
        let mut best = (f32::NEG_INFINITY, 0usize);
        let mut past = 0u64;
        for (i, &v) in self.values.iter().enumerate() {
            if v > best.0 {
                best = (v, i);
            }
            if (worse_above && v > threshold) || (!worse_above && v < threshold) {
                past += 1;
            }
        }
        let w = self.width.max(1);
        Stats {
            max: best.0,
            max_x: best.1 % w,
            max_y: best.1 / w,
            area: if self.values.is_empty() {
                0.0
            } else {
                past as f64 / self.values.len() as f64
            },
        }
    }
}

/// Luma `(x − y)²` of two planes of `width`×`height` samples (the distorted one already on
/// the reference's scale), as f32 (exact below 2^24: any 12-bit difference squared).
pub fn squared_error(
    reference: &[u16],
    distorted: &[u16],
    width: usize,
    height: usize,
) -> DistortionMap {
    assert_eq!(reference.len(), width * height);
    assert_eq!(distorted.len(), width * height);
    let values = reference
        .iter()
        .zip(distorted)
        .map(|(&r, &d)| {
            let e = r as i64 - d as i64;
            (e * e) as f32
        })
        .collect();
    DistortionMap {
        width,
        height,
        values,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn squared_error_and_its_stats() {
        let r = [10u16, 20, 30, 40, 50, 60];
        let d = [10u16, 23, 30, 36, 50, 60];
        let m = squared_error(&r, &d, 3, 2);
        assert_eq!(m.values, [0.0, 9.0, 0.0, 16.0, 0.0, 0.0]);
        let s = m.stats(5.0, true);
        assert_eq!((s.max, s.max_x, s.max_y), (16.0, 0, 1));
        assert!((s.area - 2.0 / 6.0).abs() < 1e-12);
        let s = m.stats(1.0, false);
        assert!((s.area - 4.0 / 6.0).abs() < 1e-12);
    }
}
