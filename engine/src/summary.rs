//! Pooled statistics over all measured pairs (METRICS.md, "Pooled summary").

use crate::scores::Scores;

/// Pooled statistics of one field.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FieldSummary {
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    /// Population standard deviation; +inf when infinite and finite values mix.
    pub stddev: f64,
    /// Only for fields whose values are all non-negative.
    pub harmonic_mean: Option<f64>,
    pub p1: f64,
    pub p5: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
}

impl FieldSummary {
    /// (name, value) of every statistic present, in the documented order (the names used in
    /// messages and stats files).
    pub fn entries(&self) -> Vec<(&'static str, f64)> {
        let mut v = vec![
            ("mean", self.mean),
            ("min", self.min),
            ("max", self.max),
            ("stddev", self.stddev),
        ];
        if let Some(h) = self.harmonic_mean {
            v.push(("harmonic-mean", h));
        }
        v.extend([
            ("p1", self.p1),
            ("p5", self.p5),
            ("p50", self.p50),
            ("p95", self.p95),
            ("p99", self.p99),
        ]);
        v
    }
}

/// Summary of a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    pub frames: u64,
    pub fields: Vec<(&'static str, FieldSummary)>,
}

impl Summary {
    pub fn get(&self, field: &str) -> Option<&FieldSummary> {
        self.fields
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, s)| s)
    }
}

/// Collects every value so that percentiles are exact (8 bytes per field and frame).
#[derive(Clone, Debug, Default)]
pub struct Pooler {
    frames: u64,
    fields: Vec<(&'static str, Vec<f64>)>,
}

impl Pooler {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, scores: &Scores) {
        self.frames += 1;
        for (name, value) in scores.iter() {
            match self.fields.iter_mut().find(|(f, _)| *f == name) {
                Some((_, values)) => values.push(value),
                None => self.fields.push((name, vec![value])),
            }
        }
    }

    pub fn frames(&self) -> u64 {
        self.frames
    }

    pub fn clear(&mut self) {
        *self = Self::default();
    }

    pub fn summary(&self) -> Summary {
        Summary {
            frames: self.frames,
            fields: self
                .fields
                .iter()
                .filter(|(_, v)| !v.is_empty())
                .map(|(name, values)| (*name, summarize(values)))
                .collect(),
        }
    }
}

fn summarize(values: &[f64]) -> FieldSummary {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let (min, max) = (sorted[0], sorted[sorted.len() - 1]);
    let n = sorted.len() as f64;
    let (mean, stddev) = if min == max {
        // A constant series (also all +inf): the value itself, no spread. Welford below would
        // give the same for finite values; this also covers the infinite ones.
        (min, 0.0)
    } else if min.is_finite() && max.is_finite() {
        let (mean, m2) = welford(&sorted);
        (mean, (m2 / n).sqrt())
    } else {
        // Infinite and finite values mixed (PSNR of identical and of different frames).
        (sorted.iter().sum::<f64>() / n, f64::INFINITY)
    };
    let harmonic_mean = (min >= 0.0).then(|| {
        if min == 0.0 {
            0.0
        } else {
            clamp_to(n / sorted.iter().map(|v| 1.0 / v).sum::<f64>(), min, max)
        }
    });
    FieldSummary {
        mean: clamp_to(mean, min, max),
        min,
        max,
        stddev,
        harmonic_mean,
        p1: percentile(&sorted, 1.0),
        p5: percentile(&sorted, 5.0),
        p50: percentile(&sorted, 50.0),
        p95: percentile(&sorted, 95.0),
        p99: percentile(&sorted, 99.0),
    }
}

/// Mean and sum of squared deviations by Welford's update, whose mean never drifts from a
/// repeated value and whose M2 cannot go negative (a naive sum / n of 100,000 equal PSNRs
/// lands a few ulps off the value, outside [min, max]).
fn welford(values: &[f64]) -> (f64, f64) {
    let (mut mean, mut m2) = (0.0f64, 0.0f64);
    for (i, &v) in values.iter().enumerate() {
        let delta = v - mean;
        mean += delta / (i + 1) as f64;
        m2 += delta * (v - mean);
    }
    (mean, m2.max(0.0))
}

/// Rounding can still put a mean an ulp outside the range of its values: it never is.
fn clamp_to(v: f64, min: f64, max: f64) -> f64 {
    if v.is_nan() { v } else { v.clamp(min, max) }
}

/// Linear interpolation between closest ranks (numpy's default), on sorted values.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    let pos = p / 100.0 * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    if lo == hi || sorted[lo] == sorted[hi] {
        sorted[lo]
    } else {
        sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(values: &[f64]) -> FieldSummary {
        let mut p = Pooler::new();
        for v in values {
            let mut s = Scores::new();
            s.push("x", *v);
            p.push(&s);
        }
        *p.summary().get("x").unwrap()
    }

    #[test]
    fn statistics_match_numpy() {
        // numpy: mean 3, std 1.4142135623730951, percentile(.., [1,5,50,95,99])
        // = 1.04, 1.2, 3, 4.8, 4.96; scipy.stats.hmean = 2.18978102189781
        let s = pool(&[5.0, 1.0, 4.0, 2.0, 3.0]);
        assert_eq!((s.mean, s.min, s.max), (3.0, 1.0, 5.0));
        assert!((s.stddev - std::f64::consts::SQRT_2).abs() < 1e-12);
        assert!((s.harmonic_mean.unwrap() - 2.18978102189781).abs() < 1e-12);
        for (got, want) in [
            (s.p1, 1.04),
            (s.p5, 1.2),
            (s.p50, 3.0),
            (s.p95, 4.8),
            (s.p99, 4.96),
        ] {
            assert!((got - want).abs() < 1e-12, "{got} != {want}");
        }
    }

    #[test]
    fn infinities_never_give_nan() {
        let s = pool(&[f64::INFINITY, 40.0]);
        assert_eq!(s.mean, f64::INFINITY);
        assert_eq!(s.stddev, f64::INFINITY);
        assert_eq!(s.p50, f64::INFINITY);
        assert!((s.harmonic_mean.unwrap() - 80.0).abs() < 1e-12);
        let all = pool(&[f64::INFINITY, f64::INFINITY]);
        assert_eq!(all.stddev, 0.0);
        assert_eq!(all.p1, f64::INFINITY);
    }

    #[test]
    fn constant_series_has_its_value_as_mean_and_no_spread() {
        // Issue 10: 25.851936562559167 repeated gave a mean above the max and stddev 3.6e-15.
        let v = 25.851936562542367;
        let s = pool(&vec![v; 100_000]);
        assert_eq!((s.mean, s.min, s.max, s.stddev), (v, v, v, 0.0));
        assert_eq!(s.harmonic_mean, Some(v));
        assert_eq!((s.p1, s.p50, s.p99), (v, v, v));
    }

    #[test]
    fn mean_stays_within_min_and_max() {
        // Two values one ulp apart, many times over: the naive mean leaves the range.
        let a = 38.123456789012345f64;
        let b = f64::from_bits(a.to_bits() + 1);
        let mut values = vec![a; 99_999];
        values.push(b);
        let s = pool(&values);
        assert!(s.min <= s.mean && s.mean <= s.max, "{s:?}");
        assert!(s.stddev < 1e-12, "{s:?}");
        let h = s.harmonic_mean.unwrap();
        assert!(s.min <= h && h <= s.max, "{s:?}");
        // A spread series still matches the textbook values.
        let wide: Vec<f64> = (0..100_000)
            .map(|i| 20.0 + (i % 1000) as f64 * 0.01)
            .collect();
        let s = pool(&wide);
        let exact_mean = 20.0 + 999.0 * 0.01 / 2.0;
        assert!((s.mean - exact_mean).abs() < 1e-9, "{}", s.mean);
    }

    #[test]
    fn negative_values_have_no_harmonic_mean() {
        assert_eq!(pool(&[-1.0, 2.0]).harmonic_mean, None);
        assert_eq!(pool(&[0.0, 2.0]).harmonic_mean, Some(0.0));
    }
}
