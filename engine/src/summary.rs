//! Pooled statistics over all measured pairs (METRICS.md, "Pooled summary").

use sketches_ddsketch::{Config, DDSketch};

use crate::scores::{PoolTerms, Scores};

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
    /// Only for PSNR fields ([`crate::metric::Field::mse_pooled`]): the PSNR of the mean MSE
    /// over the frames, FFmpeg's summary line (the mean of the per-frame PSNRs is `mean`);
    /// for `aom-psnr-*`, libvmaf's aggregate APSNR (`aom-apsnr-*`: the PSNR of the squared
    /// errors summed over the frames, capped as libvmaf caps it); for `xpsnr-*`, FFmpeg's
    /// XPSNR average (its summary line: the XPSNR of the mean root distortion).
    pub pooled: Option<f64>,
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
        if let Some(p) = self.pooled {
            v.push(("pooled", p));
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

/// The pooled statistics of every field over a run (what a summary reports of the
/// scores; the element's `message::Summary` adds the run's counts, alerts and events).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pooled {
    pub frames: u64,
    pub fields: Vec<(&'static str, FieldSummary)>,
}

impl Pooled {
    pub fn get(&self, field: &str) -> Option<&FieldSummary> {
        self.fields
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, s)| s)
    }
}

/// Values per field kept for exact percentiles (numpy's, on the values themselves): 65,536,
/// 18 minutes of 60 fps video or 45 of 24 fps. That far they stay affordable: 512 KiB per
/// field (about 12 MiB with every metric's fields) and a few milliseconds of sorting per
/// summary. Past it the field's values move into a sketch of bounded size
/// ([`PERCENTILE_RELATIVE_ERROR`]), so that a run of any length pools in bounded memory.
pub const EXACT_PERCENTILES_UP_TO: usize = 65_536;

/// Relative error bound of a percentile past [`EXACT_PERCENTILES_UP_TO`] values: each of the
/// two values numpy's interpolation reads (the order statistics around the percentile's rank)
/// is replaced by one within this fraction of its magnitude (DDSketch's guarantee), so the
/// percentile is within 0.1 % of the exact one (of the larger magnitude of the two when they
/// differ in sign). Magnitudes up to 1e-9 count as 0.
pub const PERCENTILE_RELATIVE_ERROR: f64 = 1e-3;

/// Bins of each of the sketch's two stores (positive and negative values), 128 KiB each: at
/// 0.1 % they span magnitudes 1.7e14 apart (1e-4 to 1.7e10, say); a field spread wider
/// merges its smallest magnitudes into one bin, and only those lose the bound.
const SKETCH_BINS: u32 = 16_384;

/// Magnitudes at or below this are counted as 0 by the sketch.
const SKETCH_ZERO: f64 = 1e-9;

/// Pools the scores of a run: per field, exact streaming mean, standard deviation (Welford),
/// min, max, harmonic mean and (PSNR fields) the PSNR of the mean MSE, and percentiles that are exact up to
/// `EXACT_PERCENTILES_UP_TO` values and within `PERCENTILE_RELATIVE_ERROR` beyond, in
/// memory that stays bounded however long the run ([`Pooler::retained`]).
#[derive(Clone, Debug, Default)]
pub struct Pooler {
    frames: u64,
    fields: Vec<(&'static str, FieldPool)>,
}

impl Pooler {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, scores: &Scores) {
        self.push_with_terms(scores, false);
    }

    /// [`Pooler::push`] for a window's pooling: the pair's window terms
    /// ([`Scores::window_pool_terms`]) in place of its own, so that a span field's `pooled`
    /// is its value on the window's frames alone ([`crate::Engine::start_window`]).
    pub fn push_window(&mut self, scores: &Scores) {
        self.push_with_terms(scores, true);
    }

    /// The pool of field `name`, made where it is missing: in registry order (a field may
    /// first appear after others that follow it: freeze-diff has none on the first
    /// frame), unknown names last.
    fn pool_of(&mut self, name: &'static str) -> &mut FieldPool {
        let at = match self.fields.iter().position(|(f, _)| *f == name) {
            Some(at) => at,
            None => {
                let pool = FieldPool {
                    mse: crate::metric::field(name)
                        .is_some_and(|f| f.mse_pooled)
                        .then_some(0.0),
                    ..Default::default()
                };
                let rank = |n: &str| crate::metric::fields().position(|f| f.name == n);
                let at = match rank(name) {
                    Some(r) => self
                        .fields
                        .iter()
                        .position(|(f, _)| rank(f).is_none_or(|q| q > r))
                        .unwrap_or(self.fields.len()),
                    None => self.fields.len(),
                };
                self.fields.insert(at, (name, pool));
                at
            }
        };
        &mut self.fields[at].1
    }

    /// The terms of a pair that is not pooled (`subsample` skipped it) for the fields
    /// whose `pooled` is the value of a span of frames (`cvvdp`: every frame of the span
    /// passed through its temporal channels, scored or not), its own terms or with
    /// `window` its window terms; its values and other terms are left out, as the pair
    /// is. A field with terms and no value yet is not in the summary.
    pub fn push_span_terms(&mut self, scores: &Scores, window: bool) {
        for (name, terms) in scores.terms_for(window) {
            if matches!(terms, PoolTerms::Cvvdp { .. }) {
                self.pool_of(name).add_terms(terms);
            }
        }
    }

    fn push_with_terms(&mut self, scores: &Scores, window: bool) {
        self.frames += 1;
        for (name, value) in scores.iter() {
            self.pool_of(name).push(value);
        }
        for (name, terms) in scores.terms_for(window) {
            if let Some((_, pool)) = self.fields.iter_mut().find(|(f, _)| *f == name) {
                pool.add_terms(terms);
            }
        }
    }

    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// The JOD of a window pooled so far ([`Pooler::push_window`]) and `scores` (not
    /// added; its window terms), for a field whose pool terms are ColorVideoVDP's
    /// ([`PoolTerms::Cvvdp`]): a window's `cvvdp` up to a pair (the window's `pooled` once
    /// that pair is its last). None when `scores` has no such terms for `field`.
    pub fn span_jod_with(&self, field: &str, scores: &Scores) -> Option<f64> {
        let (_, terms) = scores.window_pool_terms().find(|(f, _)| *f == field)?;
        let PoolTerms::Cvvdp { .. } = terms else {
            return None;
        };
        let so_far = self
            .fields
            .iter()
            .find(|(f, _)| *f == field)
            .and_then(|(_, p)| p.terms);
        match combined(so_far, terms) {
            PoolTerms::Cvvdp { sum, frames, image } => {
                Some(crate::metric::cvvdp::pool::terms_jod(sum, frames, image))
            }
            _ => None,
        }
    }

    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// Values and sketch bins held, over all fields (8 bytes each): at most
    /// `EXACT_PERCENTILES_UP_TO` per field, whatever the number of pairs pushed.
    pub fn retained(&self) -> usize {
        self.fields.iter().map(|(_, p)| p.values.retained()).sum()
    }

    pub fn summary(&self) -> Pooled {
        Pooled {
            frames: self.frames,
            fields: self
                .fields
                .iter()
                .filter(|(_, p)| p.moments.n > 0)
                .map(|(name, pool)| (*name, pool.summary()))
                .collect(),
        }
    }
}

/// One field's pooled values.
#[derive(Clone, Debug, Default)]
struct FieldPool {
    moments: Moments,
    values: Values,
    /// A PSNR field's Σ MSE/peak² over the frames, from each frame's PSNR: 10^(−PSNR/10)
    /// is its MSE over peak² exactly (up to rounding), so the pool needs neither the MSE
    /// field nor the bit depth, and stays right across a change of depth. +inf adds 0.
    mse: Option<f64>,
    /// The sums of the terms of a field whose `pooled` is its reference's own aggregate
    /// ([`PoolTerms`]; the last frame's peak or scale).
    terms: Option<PoolTerms>,
}

/// What is streamed exactly, value by value.
#[derive(Clone, Debug)]
struct Moments {
    n: u64,
    min: f64,
    max: f64,
    /// +inf and −inf values (PSNR of identical frames): counted, outside the sums.
    pos_inf: u64,
    neg_inf: u64,
    /// Welford's mean and sum of squared deviations of the finite values: the mean never
    /// drifts from a repeated value and M2 cannot go negative (a naive sum / n of 100,000
    /// equal PSNRs lands a few ulps off the value, outside [min, max]).
    finite: u64,
    mean: f64,
    m2: f64,
    /// Σ 1/v, the harmonic mean's sum (+inf adds 0); used only while min ≥ 0.
    reciprocals: f64,
}

impl Default for Moments {
    fn default() -> Self {
        Moments {
            n: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            pos_inf: 0,
            neg_inf: 0,
            finite: 0,
            mean: 0.0,
            m2: 0.0,
            reciprocals: 0.0,
        }
    }
}

impl Moments {
    fn push(&mut self, v: f64) {
        self.n += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.reciprocals += 1.0 / v;
        if v == f64::INFINITY {
            self.pos_inf += 1;
        } else if v == f64::NEG_INFINITY {
            self.neg_inf += 1;
        } else {
            self.finite += 1;
            let delta = v - self.mean;
            self.mean += delta / self.finite as f64;
            self.m2 += delta * (v - self.mean);
        }
    }
}

/// The values percentiles are read from: all of them while they are few, then a sketch of
/// the finite ones (the infinities are counted in [`Moments`]).
#[derive(Clone)]
enum Values {
    Exact(Vec<f64>),
    Sketch(Box<DDSketch>),
}

impl Default for Values {
    fn default() -> Self {
        Values::Exact(Vec::new())
    }
}

impl std::fmt::Debug for Values {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Values::Exact(v) => write!(f, "Exact({} values)", v.len()),
            Values::Sketch(s) => write!(f, "Sketch({} values in {} bins)", s.count(), s.length()),
        }
    }
}

impl Values {
    fn push(&mut self, v: f64) {
        match self {
            Values::Exact(values) if values.len() < EXACT_PERCENTILES_UP_TO => values.push(v),
            Values::Exact(values) => {
                let config = Config::new(PERCENTILE_RELATIVE_ERROR, SKETCH_BINS, SKETCH_ZERO);
                let mut sketch = Box::new(DDSketch::new(config));
                for &x in values.iter().chain([&v]) {
                    if x.is_finite() {
                        sketch.add(x);
                    }
                }
                // The exact values' memory goes with them.
                *self = Values::Sketch(sketch);
            }
            Values::Sketch(sketch) => {
                if v.is_finite() {
                    sketch.add(v);
                }
            }
        }
    }

    fn retained(&self) -> usize {
        match self {
            Values::Exact(v) => v.capacity(),
            Values::Sketch(s) => s.length(),
        }
    }
}

/// The percentiles of the summary, in its order.
const PERCENTILES: [f64; 5] = [1.0, 5.0, 50.0, 95.0, 99.0];

/// The sums of `so_far` (a span's terms, if any) and one pair's terms `t`; terms of another
/// kind than the span's start a new sum.
fn combined(so_far: Option<PoolTerms>, t: PoolTerms) -> PoolTerms {
    match (so_far, t) {
        (
            Some(PoolTerms::Apsnr { sse, samples, .. }),
            PoolTerms::Apsnr {
                sse: s,
                samples: n,
                peak,
            },
        ) => PoolTerms::Apsnr {
            sse: sse + s,
            samples: samples + n,
            peak,
        },
        (Some(PoolTerms::Xpsnr { root, .. }), PoolTerms::Xpsnr { root: r, scale }) => {
            PoolTerms::Xpsnr {
                root: root + r,
                scale,
            }
        }
        (
            Some(PoolTerms::Cvvdp { sum, frames, image }),
            PoolTerms::Cvvdp {
                sum: s, frames: n, ..
            },
        ) => PoolTerms::Cvvdp {
            sum: sum + s,
            frames: frames + n,
            image,
        },
        (_, t) => t,
    }
}

impl FieldPool {
    /// Adds one pair's terms to their sums.
    fn add_terms(&mut self, t: PoolTerms) {
        self.terms = Some(combined(self.terms, t));
    }

    fn push(&mut self, v: f64) {
        self.moments.push(v);
        self.values.push(v);
        if let Some(sum) = &mut self.mse {
            *sum += 10f64.powf(-v / 10.0);
        }
    }

    fn summary(&self) -> FieldSummary {
        let m = &self.moments;
        let (min, max) = (m.min, m.max);
        let n = m.n as f64;
        let (mean, stddev) = if min == max {
            // A constant series (also all +inf): the value itself, no spread. Welford gives
            // the same for finite values; this also covers the infinite ones.
            (min, 0.0)
        } else if m.pos_inf == 0 && m.neg_inf == 0 {
            (m.mean, (m.m2.max(0.0) / n).sqrt())
        } else {
            // Infinite and finite values mixed (PSNR of identical and of different frames):
            // the mean is the infinity's (undefined, as their sum, when both signs occur).
            let mean = match (m.pos_inf > 0, m.neg_inf > 0) {
                (true, false) => f64::INFINITY,
                (false, true) => f64::NEG_INFINITY,
                _ => f64::NAN,
            };
            (mean, f64::INFINITY)
        };
        let harmonic_mean = (min >= 0.0).then(|| {
            if min == 0.0 {
                0.0
            } else {
                clamp_to(n / m.reciprocals, min, max)
            }
        });
        let [p1, p5, p50, p95, p99] = match &self.values {
            Values::Exact(values) => {
                let mut sorted = values.clone();
                sorted.sort_by(f64::total_cmp);
                PERCENTILES.map(|p| percentile(m.n, p, |rank| sorted[rank as usize]))
            }
            Values::Sketch(sketch) => {
                PERCENTILES.map(|p| percentile(m.n, p, |rank| sketch_rank(m, sketch, rank)))
            }
        };
        // 10·log10(peak² / mean MSE) = −10·log10(mean of MSE/peak²); all frames identical:
        // a mean MSE of 0, +inf.
        let pooled = match self.terms {
            Some(PoolTerms::Apsnr { sse, samples, peak }) => {
                Some(crate::metric::psnr::apsnr(sse, samples, peak))
            }
            Some(PoolTerms::Xpsnr { root, scale }) => {
                // FFmpeg's mean of the values: +inf as soon as one is.
                let values_mean = if m.pos_inf > 0 { f64::INFINITY } else { mean };
                Some(crate::metric::xpsnr::ffmpeg_average(
                    root,
                    scale,
                    n,
                    values_mean,
                ))
            }
            Some(PoolTerms::Cvvdp { sum, frames, image }) => {
                Some(crate::metric::cvvdp::pool::terms_jod(sum, frames, image))
            }
            None => self.mse.map(|sum| -10.0 * (sum / n).log10()),
        };
        FieldSummary {
            mean: clamp_to(mean, min, max),
            min,
            max,
            stddev,
            harmonic_mean,
            pooled,
            p1,
            p5,
            p50,
            p95,
            p99,
        }
    }
}

/// The value of rank `rank` (0 = the smallest) of a sketched field: the −inf values first,
/// the sketch's finite values, the +inf values last. The finite smallest and largest are
/// exact; the others within [`PERCENTILE_RELATIVE_ERROR`] of the value of that rank.
fn sketch_rank(m: &Moments, sketch: &DDSketch, rank: u64) -> f64 {
    if rank < m.neg_inf {
        return f64::NEG_INFINITY;
    }
    let r = rank - m.neg_inf;
    if r >= m.finite {
        return f64::INFINITY;
    }
    let (lo, hi) = (sketch.min().unwrap_or(0.0), sketch.max().unwrap_or(0.0));
    if r == 0 {
        return lo;
    }
    if r + 1 == m.finite {
        return hi;
    }
    // The sketch reads rank ⌊q · (count − 1)⌋: half a rank up, so that rounding cannot
    // land on the rank below.
    let q = (r as f64 + 0.5) / (m.finite - 1) as f64;
    let v = sketch.quantile(q).ok().flatten().unwrap_or(0.0);
    v.clamp(lo, hi)
}

/// Rounding can still put a mean an ulp outside the range of its values: it never is.
fn clamp_to(v: f64, min: f64, max: f64) -> f64 {
    if v.is_nan() { v } else { v.clamp(min, max) }
}

/// Linear interpolation between closest ranks (numpy's default) of `n` values, the value of
/// each rank read from `at`. Next to an infinity the infinity is the result (never NaN).
fn percentile(n: u64, p: f64, at: impl Fn(u64) -> f64) -> f64 {
    let pos = p / 100.0 * (n - 1) as f64;
    let (lo, hi) = (pos.floor() as u64, pos.ceil() as u64);
    let (a, b) = (at(lo), at(hi));
    if lo == hi || a == b || a.is_infinite() {
        a
    } else if b.is_infinite() {
        b
    } else {
        a + (b - a) * (pos - lo as f64)
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
    fn fields_are_in_registry_order_whenever_they_first_appear() {
        let mut p = Pooler::new();
        let mut a = Scores::new();
        a.push("vmaf", 90.0);
        a.push("not-a-field", 1.0);
        p.push(&a);
        let mut b = Scores::new();
        b.push("psnr-y", 40.0);
        b.push("freeze-diff", 0.5);
        b.push("vmaf", 91.0);
        p.push(&b);
        let names: Vec<_> = p.summary().fields.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["psnr-y", "freeze-diff", "vmaf", "not-a-field"]);
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

    /// A deterministic stream of `n` values: 5 % zeros, `inf_share` +inf, 0.5 % −inf when
    /// `neg_inf`, the rest spread around 20 (±30, so a third negative, some tiny).
    fn mixture(n: usize, inf_share: f64, neg_inf: bool) -> Vec<f64> {
        let mut s = 0x2545_f491_4f6c_dd1du64;
        let mut uniform = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        (0..n)
            .map(|_| {
                let u = uniform();
                if u < 0.05 {
                    0.0
                } else if u < 0.05 + inf_share {
                    f64::INFINITY
                } else if neg_inf && u < 0.055 + inf_share {
                    f64::NEG_INFINITY
                } else {
                    // Sum of four uniforms: roughly normal, σ ≈ 30.
                    let g = (0..4).map(|_| uniform()).sum::<f64>() - 2.0;
                    20.0 + 52.0 * g
                }
            })
            .collect()
    }

    fn pool_all(values: &[f64]) -> Pooler {
        let mut p = Pooler::new();
        for &v in values {
            let mut s = Scores::new();
            s.push("x", v);
            p.push(&s);
        }
        p
    }

    /// numpy's percentile of `values` from all of them, and the two values it interpolates.
    fn exact(values: &[f64], p: f64) -> (f64, f64, f64) {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let pos = p / 100.0 * (sorted.len() - 1) as f64;
        let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
        let want = percentile(sorted.len() as u64, p, |r| sorted[r as usize]);
        (want, sorted[lo], sorted[hi])
    }

    #[test]
    fn percentiles_past_the_exact_limit_are_within_the_stated_bound() {
        // A million values with negatives, zeros, 1.5 % +inf (so p99 is +inf) and −inf.
        let values = mixture(1_000_000, 0.015, true);
        let s = *pool_all(&values).summary().get("x").unwrap();
        let mut worst = 0.0f64;
        for (p, got) in [
            (1.0, s.p1),
            (5.0, s.p5),
            (50.0, s.p50),
            (95.0, s.p95),
            (99.0, s.p99),
        ] {
            let (want, a, b) = exact(&values, p);
            if want.is_infinite() {
                assert_eq!(got, want, "p{p}");
                continue;
            }
            let scale = a.abs().max(b.abs());
            let err = (got - want).abs();
            assert!(
                err <= PERCENTILE_RELATIVE_ERROR * scale * (1.0 + 1e-9) + SKETCH_ZERO,
                "p{p}: {got} vs exact {want} (between {a} and {b})"
            );
            worst = worst.max(err / scale);
        }
        assert_eq!(s.p99, f64::INFINITY);
        assert!(s.p1 < 0.0 && s.p50 > 0.0, "{s:?}");
        // The sketch answered (exact percentiles would have no error), and its error is of
        // the order of the bound.
        assert!(worst > PERCENTILE_RELATIVE_ERROR / 10.0, "{worst:e}");
        println!("largest relative percentile error past the exact limit: {worst:.2e}");
        // min and max stay exact.
        assert_eq!((s.min, s.max), (f64::NEG_INFINITY, f64::INFINITY));
    }

    #[test]
    fn percentiles_are_exact_up_to_the_limit() {
        let values = mixture(EXACT_PERCENTILES_UP_TO, 0.0, false);
        let s = *pool_all(&values).summary().get("x").unwrap();
        for (p, got) in [
            (1.0, s.p1),
            (5.0, s.p5),
            (50.0, s.p50),
            (95.0, s.p95),
            (99.0, s.p99),
        ] {
            assert_eq!(got, exact(&values, p).0, "p{p}");
        }
    }

    #[test]
    fn streamed_statistics_stay_exact_on_a_million_values() {
        // PSNR-like values, no infinities: mean, stddev and harmonic mean against two-pass
        // sums over all of them.
        let values: Vec<f64> = mixture(1_000_000, 0.0, false)
            .into_iter()
            .map(|v| 40.0 + v.abs() / 10.0)
            .collect();
        let s = *pool_all(&values).summary().get("x").unwrap();
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        let hmean = n / values.iter().map(|v| 1.0 / v).sum::<f64>();
        assert!((s.mean / mean - 1.0).abs() < 1e-12, "{} {mean}", s.mean);
        assert!(
            (s.stddev / var.sqrt() - 1.0).abs() < 1e-9,
            "{} {}",
            s.stddev,
            var.sqrt()
        );
        assert!((s.harmonic_mean.unwrap() / hmean - 1.0).abs() < 1e-12);
        let (lo, hi) = values
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
                (a.min(v), b.max(v))
            });
        assert_eq!((s.min, s.max), (lo, hi));
    }

    #[test]
    fn memory_stays_bounded_however_long_the_run() {
        // Values spread over 14 decades, both signs: the widest the sketch holds.
        let mut p = Pooler::new();
        let mut at_limit = 0;
        for (i, v) in mixture(1_000_000, 0.01, true).into_iter().enumerate() {
            let mut s = Scores::new();
            s.push("x", v * 10f64.powi((i % 15) as i32 - 5));
            s.push("y", v);
            p.push(&s);
            if i + 1 == EXACT_PERCENTILES_UP_TO {
                at_limit = p.retained();
            }
        }
        // Up to the limit every value is kept (two fields); past it no more than the limit
        // per field, whatever the number of pairs (a pooler keeping every value: 2,000,000).
        assert_eq!(at_limit, 2 * EXACT_PERCENTILES_UP_TO);
        let retained = p.retained();
        println!("after 1,000,000 pairs of two fields: {retained} values and bins retained");
        assert!(retained <= 2 * EXACT_PERCENTILES_UP_TO, "{retained}");
        assert_eq!(p.frames(), 1_000_000);
    }

    #[test]
    fn negative_infinity_gives_no_nan() {
        let s = pool(&[f64::NEG_INFINITY, 1.0, 2.0]);
        let ninf = f64::NEG_INFINITY;
        assert_eq!((s.min, s.mean, s.stddev), (ninf, ninf, f64::INFINITY));
        // p1 lies between −inf and 1, p99 between 1 and 2.
        assert_eq!(s.p1, ninf);
        assert!((s.p99 - 1.98).abs() < 1e-12, "{}", s.p99);
        assert_eq!(s.harmonic_mean, None);
    }

    /// The PSNR of `mse` at 8 bits, as the psnr metric writes it.
    fn psnr8(mse: f64) -> f64 {
        crate::metric::psnr::psnr_db(mse, 255.0)
    }

    fn pool_psnr(values: &[f64]) -> FieldSummary {
        let mut p = Pooler::new();
        for &v in values {
            let mut s = Scores::new();
            s.push("psnr-y", v);
            p.push(&s);
        }
        *p.summary().get("psnr-y").unwrap()
    }

    /// One field's summary from values with their pool terms.
    fn pool_terms(values: &[(f64, PoolTerms)]) -> FieldSummary {
        let mut p = Pooler::new();
        for &(v, t) in values {
            let mut s = Scores::new();
            s.push("aom-psnr-y", v);
            s.push_pool_terms("aom-psnr-y", t);
            p.push(&s);
        }
        *p.summary().get("aom-psnr-y").unwrap()
    }

    #[test]
    fn apsnr_pools_the_squared_errors_as_libvmaf() {
        let t = |sse: f64| PoolTerms::Apsnr {
            sse,
            samples: 100.0,
            peak: 255.0,
        };
        // Squared errors 100 and 300 over 200 samples: MSE 2, whatever the frames' values.
        let s = pool_terms(&[(1.0, t(100.0)), (2.0, t(300.0))]);
        let want = 10.0 * (255.0f64 * 255.0 / 2.0).log10();
        assert!((s.pooled.unwrap() - want).abs() < 1e-12, "{s:?}");
        // All frames identical: libvmaf's cap, the PSNR of half a squared error over all
        // the samples, rounded up (65025 · 300 · 2: 75.9 dB, 76).
        let s = pool_terms(&[(60.0, t(0.0)); 3]);
        assert_eq!(s.pooled, Some(76.0));
        // One identical frame adds no error.
        let s = pool_terms(&[(60.0, t(0.0)), (2.0, t(400.0))]);
        assert!((s.pooled.unwrap() - want).abs() < 1e-12, "{s:?}");
    }

    /// A span's JOD with one more pair, before it is added, is what the span pools to
    /// once it is; the first pair of a sequence is an image; a pair without ColorVideoVDP's
    /// terms has none.
    #[test]
    fn the_jod_of_a_span_with_the_next_pair_is_its_pooled_once_added() {
        let pair = |sum: f64, image: f64| {
            let mut s = Scores::new();
            s.push("cvvdp", 9.0);
            s.push_pool_terms(
                "cvvdp",
                PoolTerms::Cvvdp {
                    sum,
                    frames: 1,
                    image,
                },
            );
            s
        };
        let mut p = Pooler::new();
        let first = pair(0.02, 0.3);
        let got = p.span_jod_with("cvvdp", &first).unwrap();
        assert_eq!(got, crate::metric::cvvdp::pool::terms_jod(0.02, 1, 0.3));
        p.push(&first);
        assert_eq!(Some(got), p.summary().get("cvvdp").unwrap().pooled);
        for k in 1..5 {
            let next = pair(0.01 * k as f64, f64::NAN);
            let got = p.span_jod_with("cvvdp", &next).unwrap();
            p.push(&next);
            assert_eq!(Some(got), p.summary().get("cvvdp").unwrap().pooled, "{k}");
        }
        // A window that starts later: no image term, its own sums.
        let mut w = Pooler::new();
        let later = pair(0.05, f64::NAN);
        let got = w.span_jod_with("cvvdp", &later).unwrap();
        w.push(&later);
        assert_eq!(Some(got), w.summary().get("cvvdp").unwrap().pooled);
        let mut psnr = Scores::new();
        psnr.push("psnr-y", 30.0);
        assert_eq!(p.span_jod_with("cvvdp", &psnr), None);
        assert_eq!(p.span_jod_with("psnr-y", &first), None);
    }

    #[test]
    fn xpsnr_pools_as_ffmpeg_s_average() {
        let t = |root: f64| PoolTerms::Xpsnr { root, scale: 1e6 };
        // Roots 10 and 30: the XPSNR of their mean, 20, 10·log10(1e6 / 400).
        let s = pool_terms(&[(40.0, t(10.0)), (30.46, t(30.0))]);
        let want = 10.0 * (1e6f64 / 400.0).log10();
        assert!((s.pooled.unwrap() - want).abs() < 1e-12, "{s:?}");
        // The roots add up to less than the frames: the mean of the values (+inf when one
        // frame was identical).
        let s = pool_terms(&[(f64::INFINITY, t(0.0)), (59.0, t(1.5))]);
        assert_eq!(s.pooled, Some(f64::INFINITY));
        let s = pool_terms(&[(61.0, t(0.5)), (59.0, t(0.5))]);
        assert_eq!(s.pooled, Some(60.0));
    }

    #[test]
    fn psnr_fields_pool_the_mse_as_ffmpeg() {
        // MSE 10 and 40: FFmpeg's summary is the PSNR of MSE 25, 34.150 dB; the mean of the
        // two PSNRs (38.131 and 32.110) is 35.120 dB.
        let s = pool_psnr(&[psnr8(10.0), psnr8(40.0)]);
        let want = 10.0 * (255.0f64 * 255.0 / 25.0).log10();
        assert!((s.pooled.unwrap() - want).abs() < 1e-12, "{s:?}");
        assert!((s.mean - (psnr8(10.0) + psnr8(40.0)) / 2.0).abs() < 1e-12);
        assert!(s.pooled.unwrap() < s.mean - 0.9, "{s:?}");
        // An identical frame adds MSE 0 (its PSNR is +inf, and so is the mean).
        let s = pool_psnr(&[f64::INFINITY, psnr8(50.0)]);
        assert!((s.pooled.unwrap() - psnr8(25.0)).abs() < 1e-12, "{s:?}");
        assert_eq!(s.mean, f64::INFINITY);
        assert_eq!(pool_psnr(&[f64::INFINITY; 3]).pooled, Some(f64::INFINITY));
        // A constant series pools to its value.
        let v = psnr8(17.3);
        assert!((pool_psnr(&[v; 1000]).pooled.unwrap() - v).abs() < 1e-10);
        // Other fields have none, and no entry.
        assert_eq!(pool(&[1.0, 2.0]).pooled, None);
        assert!(!pool(&[1.0]).entries().iter().any(|(k, _)| *k == "pooled"));
        let names: Vec<_> = pool_psnr(&[30.0])
            .entries()
            .iter()
            .map(|(k, _)| *k)
            .collect();
        assert_eq!(
            names[..6],
            ["mean", "min", "max", "stddev", "harmonic-mean", "pooled"]
        );
    }

    #[test]
    fn negative_values_have_no_harmonic_mean() {
        assert_eq!(pool(&[-1.0, 2.0]).harmonic_mean, None);
        assert_eq!(pool(&[0.0, 2.0]).harmonic_mean, Some(0.0));
    }
}
