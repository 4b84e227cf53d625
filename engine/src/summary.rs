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
    let n = sorted.len() as f64;
    let mean = sorted.iter().sum::<f64>() / n;
    let stddev = if mean.is_finite() {
        (sorted.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt()
    } else if sorted.first() == sorted.last() {
        0.0
    } else {
        f64::INFINITY
    };
    let harmonic_mean = (sorted[0] >= 0.0).then(|| {
        if sorted[0] == 0.0 {
            0.0
        } else {
            n / sorted.iter().map(|v| 1.0 / v).sum::<f64>()
        }
    });
    FieldSummary {
        mean,
        min: sorted[0],
        max: sorted[sorted.len() - 1],
        stddev,
        harmonic_mean,
        p1: percentile(&sorted, 1.0),
        p5: percentile(&sorted, 5.0),
        p50: percentile(&sorted, 50.0),
        p95: percentile(&sorted, 95.0),
        p99: percentile(&sorted, 99.0),
    }
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
    fn negative_values_have_no_harmonic_mean() {
        assert_eq!(pool(&[-1.0, 2.0]).harmonic_mean, None);
        assert_eq!(pool(&[0.0, 2.0]).harmonic_mean, Some(0.0));
    }
}
