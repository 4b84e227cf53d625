//! What a distortion map is: which ([`MapKind`]), its values ([`DistortionMap`]) and
//! statistics ([`Stats`]), and the squared-error map ([`squared_error`]).

use crate::metric::field::Field;

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
    /// ColorVideoVDP's `raw` heat map (1 − JOD/10 per pixel: 0 no visible difference),
    /// made by the `cvvdp` metric as it measures the pair.
    Cvvdp,
    /// SSIMULACRA2's per-pixel share of the weighted sum its score is mapped from (its
    /// references have no map: `crate::metric::ssimulacra2::map` defines it), made by the
    /// `ssimulacra2` metric as it measures the pair.
    Ssimulacra2,
}

impl MapKind {
    pub const ALL: [MapKind; 5] = [
        MapKind::SquaredError,
        MapKind::Ssim,
        MapKind::Butteraugli,
        MapKind::Cvvdp,
        MapKind::Ssimulacra2,
    ];

    /// As users write it (`squared-error`, `ssim`).
    pub fn name(self) -> &'static str {
        match self {
            MapKind::SquaredError => "squared-error",
            MapKind::Ssim => "ssim",
            MapKind::Butteraugli => "butteraugli",
            MapKind::Cvvdp => "cvvdp",
            MapKind::Ssimulacra2 => "ssimulacra2",
        }
    }

    pub fn from_name(name: &str) -> Option<MapKind> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The fields of its statistics that a pair's record carries ([`Stats`]):
    /// `<name>-peak` (the worst value), `<name>-peak-x`, `<name>-peak-y` (where),
    /// `<name>-area` (the share of pixels past the threshold).
    pub fn fields(self) -> &'static [Field] {
        let i = Self::ALL
            .iter()
            .position(|k| *k == self)
            .expect("a listed map");
        &FIELDS[4 * i..4 * i + 4]
    }

    /// The threshold of `<name>-area` when none is given: squared error (peak / 25)² (a
    /// difference of 4 % of the range), SSIM 0.9 (below), Butteraugli 1.0 (above: a
    /// difference just noticed), ColorVideoVDP 0.1 (above: one JOD lost there),
    /// SSIMULACRA2 [`SSIMULACRA2_THRESHOLD`] (above: worse than "high quality" there).
    pub fn default_threshold(self, peak: f64) -> f64 {
        match self {
            MapKind::SquaredError => (peak / 25.0).powi(2),
            MapKind::Ssim => 0.9,
            MapKind::Butteraugli => 1.0,
            MapKind::Cvvdp => 0.1,
            MapKind::Ssimulacra2 => SSIMULACRA2_THRESHOLD,
        }
    }

    /// Whether larger values are worse (squared error), or smaller (SSIM).
    pub fn worse_above(self) -> bool {
        !matches!(self, MapKind::Ssim)
    }

    /// Its scale's code in the kernels' renderers (`gpumetrics_kernels::map::SCALE_*`).
    pub(crate) fn scale(self) -> u32 {
        use gpumetrics_kernels::map as k;
        match self {
            MapKind::SquaredError => k::SCALE_SQUARED_ERROR,
            MapKind::Ssim => k::SCALE_SSIM,
            MapKind::Butteraugli => k::SCALE_BUTTERAUGLI,
            MapKind::Cvvdp => k::SCALE_CVVDP,
            MapKind::Ssimulacra2 => k::SCALE_SSIMULACRA2,
        }
    }

    /// Whether the map module makes it from the frames ([`of_pair`]); else the metric of
    /// the same name makes it as it measures.
    pub(crate) fn made_from_frames(self) -> bool {
        !matches!(
            self,
            MapKind::Butteraugli | MapKind::Cvvdp | MapKind::Ssimulacra2
        )
    }
}

/// The SSIMULACRA2 map's default threshold: a frame with this value at every pixel would
/// score 70, the scale's "high quality" (a test checks it against the score's mapping).
pub const SSIMULACRA2_THRESHOLD: f64 = 2.647;

const fn stat_fields(
    peak: &'static str,
    x: &'static str,
    y: &'static str,
    area: &'static str,
    title: &'static str,
    higher_is_better: bool,
) -> [Field; 4] {
    let p = Field::new(peak, title).decimals(4);
    [
        if higher_is_better {
            p
        } else {
            p.lower_is_better()
        },
        Field::new(x, "").decimals(0).unplotted(),
        Field::new(y, "").decimals(0).unplotted(),
        Field::new(area, "Map area past the threshold (share)")
            .decimals(4)
            .lower_is_better()
            .unit_interval(),
    ]
}

const fn concat(
    a: [Field; 4],
    b: [Field; 4],
    c: [Field; 4],
    d: [Field; 4],
    e: [Field; 4],
) -> [Field; 20] {
    [
        a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3], c[0], c[1], c[2], c[3], d[0], d[1], d[2],
        d[3], e[0], e[1], e[2], e[3],
    ]
}

/// The statistics' fields of every map, in [`MapKind::ALL`]'s order, four each.
pub static FIELDS: [Field; 20] = concat(
    stat_fields(
        "squared-error-peak",
        "squared-error-peak-x",
        "squared-error-peak-y",
        "squared-error-area",
        "Squared-error map peak",
        false,
    ),
    stat_fields(
        "ssim-peak",
        "ssim-peak-x",
        "ssim-peak-y",
        "ssim-area",
        "SSIM map low",
        true,
    ),
    stat_fields(
        "butteraugli-peak",
        "butteraugli-peak-x",
        "butteraugli-peak-y",
        "butteraugli-area",
        "Butteraugli map peak",
        false,
    ),
    stat_fields(
        "cvvdp-peak",
        "cvvdp-peak-x",
        "cvvdp-peak-y",
        "cvvdp-area",
        "ColorVideoVDP heat map peak (1 - JOD/10)",
        false,
    ),
    stat_fields(
        "ssimulacra2-peak",
        "ssimulacra2-peak-x",
        "ssimulacra2-peak-y",
        "ssimulacra2-area",
        "SSIMULACRA2 map peak (share of the weighted sum)",
        false,
    ),
);

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
    /// The worst value (the largest, or the smallest where lower is worse: SSIM) and its
    /// pixel (the first in row order when several are equal).
    pub worst: f32,
    pub worst_x: usize,
    pub worst_y: usize,
    /// The share of pixels whose value is past the threshold (above it, or below it for a
    /// map where lower is worse), 0..1.
    pub area: f64,
}

/// The largest of `sign · v` over `values`, NaN left out (−∞ when there is none), and how
/// many are past `threshold` (`sign · v > sign · threshold`: above it for sign 1, below it
/// for −1; NaN never): eight running maxima and counts, so that the loop vectorises.
fn largest_and_past(values: &[f32], sign: f32, threshold: f32) -> (f32, u64) {
    let t = sign * threshold;
    let (mut lanes, mut counts) = ([f32::NEG_INFINITY; 8], [0u32; 8]);
    let mut groups = values.chunks_exact(8);
    for g in &mut groups {
        for k in 0..8 {
            let x = sign * g[k];
            lanes[k] = lanes[k].max(x);
            counts[k] += (x > t) as u32;
        }
    }
    let (mut m, mut past) = (f32::NEG_INFINITY, 0u64);
    for &v in groups.remainder() {
        let x = sign * v;
        m = m.max(x);
        past += (x > t) as u64;
    }
    let m = lanes.iter().fold(m, |a, &b| a.max(b));
    (m, past + counts.iter().map(|&c| c as u64).sum::<u64>())
}

/// The buffers of dropped maps of at least [`SPARE_MIN`] values, at most [`SPARE_MAX`]:
/// the GPU's maps come to the host pair after pair, and a fresh 8 MB buffer (1080p) each
/// time costs its page faults on the pair's path.
static SPARE: std::sync::LazyLock<std::sync::Mutex<Vec<Vec<f32>>>> =
    std::sync::LazyLock::new(Default::default);
const SPARE_MAX: usize = 8;
const SPARE_MIN: usize = 4096;
/// Values per block of [`DistortionMap::copied`]'s parallel copy (1 MB).
const COPY_BLOCK: usize = 1 << 18;

/// Keeps `values` among `spare` when it is large enough and there is room.
fn keep(spare: &mut Vec<Vec<f32>>, values: Vec<f32>) {
    if values.capacity() >= SPARE_MIN && spare.len() < SPARE_MAX {
        spare.push(values);
    }
}

/// A spare buffer that holds `len` values, if there is one.
fn reuse(spare: &mut Vec<Vec<f32>>, len: usize) -> Option<Vec<f32>> {
    let i = spare.iter().position(|b| b.capacity() >= len)?;
    Some(spare.swap_remove(i))
}

impl Drop for DistortionMap {
    fn drop(&mut self) {
        let values = std::mem::take(&mut self.values);
        if let Ok(mut spare) = SPARE.lock() {
            keep(&mut spare, values);
        }
    }
}

impl DistortionMap {
    /// A `width`×`height` map holding a copy of `values`, in the buffer of a dropped map
    /// when one is large enough. The copy runs in blocks of [`COPY_BLOCK`] values on
    /// rayon's threads: one thread copying a 1080p map (8 MB) out of pinned memory took
    /// 0.65–0.88 ms, in blocks 0.16–0.27 (`map_copy`).
    pub(crate) fn copied(width: usize, height: usize, values: &[f32]) -> DistortionMap {
        use rayon::prelude::*;
        let reused = SPARE
            .lock()
            .ok()
            .and_then(|mut spare| reuse(&mut spare, values.len()));
        let mut buffer = reused.unwrap_or_default();
        // A reused buffer keeps its old values until the copy overwrites them: only new
        // room is zeroed first.
        buffer.truncate(values.len());
        buffer.resize(values.len(), 0.0);
        buffer
            .par_chunks_mut(COPY_BLOCK)
            .zip(values.par_chunks(COPY_BLOCK))
            .for_each(|(to, from)| to.copy_from_slice(from));
        DistortionMap {
            width,
            height,
            values: buffer,
        }
    }

    /// The statistics, with pixels counted as past `threshold` when `worse_above` and
    /// above it, or when not and below it (SSIM: lower is worse). Runs over blocks of rows
    /// in parallel (a 1080p map is 2 M values, on the pair's path): each block's worst and
    /// count, then the worst of the blocks (on a tie the first in row order, as one pass
    /// would take it; NaN is never the worst) and the sum of the counts.
    pub fn stats(&self, threshold: f32, worse_above: bool) -> Stats {
        use rayon::prelude::*;
        let sign = if worse_above { 1.0 } else { -1.0 };
        // Blocks of whole rows, at least 64 K values (a rayon task's worth).
        let w = self.width.max(1);
        let block = (65_536usize.div_ceil(w)) * w;
        let none = (f32::NEG_INFINITY, usize::MAX);
        let ((worst, at), past) = self
            .values
            .par_chunks(block)
            .enumerate()
            .map(|(b, values)| {
                // The largest value and the count in one loop without branches, which the
                // compiler vectorises (a loop with them took 0.59 ms of a 1080p pair on 16
                // cores: `map_copy`'s statistics row), then the first pixel holding the
                // largest value.
                let (m, past) = largest_and_past(values, sign, threshold);
                let best = match values.iter().position(|&v| sign * v == m) {
                    Some(i) if m > f32::NEG_INFINITY => (sign * values[i], b * block + i),
                    _ => (f32::NEG_INFINITY, b * block),
                };
                (best, past)
            })
            .reduce(
                || (none, 0),
                |(a, pa), (b, pb)| {
                    let first = if b.0 > a.0 || (b.0 == a.0 && b.1 < a.1) {
                        b
                    } else {
                        a
                    };
                    (first, pa + pb)
                },
            );
        let at = if at == usize::MAX { 0 } else { at };
        Stats {
            worst: sign * worst,
            worst_x: at % w,
            worst_y: at / w,
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
        .map(|(&r, &d)| gpumetrics_kernels::map::squared_error(r as u32, d as u32))
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

    /// Dropped maps' buffers are kept (large ones, up to the limit) and handed out again
    /// for maps that fit; a copied map holds the values given.
    #[test]
    fn map_buffers_are_reused() {
        let mut spare = Vec::new();
        keep(&mut spare, vec![0.0; 16]);
        assert!(spare.is_empty(), "a small buffer is not kept");
        let big = vec![1.0f32; SPARE_MIN];
        let at = big.as_ptr();
        keep(&mut spare, big);
        assert!(reuse(&mut spare, SPARE_MIN + 1).is_none(), "too small");
        let again = reuse(&mut spare, 100).expect("kept");
        assert_eq!(again.as_ptr(), at);
        for _ in 0..SPARE_MAX + 2 {
            keep(&mut spare, Vec::with_capacity(SPARE_MIN));
        }
        assert_eq!(spare.len(), SPARE_MAX);
        let m = DistortionMap::copied(3, 2, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!((m.width, m.height), (3, 2));
        assert_eq!(m.values, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    }

    /// The statistics in one pass, as they were before the blocks: what the parallel
    /// ones must equal.
    fn one_pass(m: &DistortionMap, threshold: f32, worse_above: bool) -> Stats {
        let sign = if worse_above { 1.0 } else { -1.0 };
        let mut best = (f32::NEG_INFINITY, 0usize);
        let mut past = 0u64;
        for (i, &v) in m.values.iter().enumerate() {
            if sign * v > best.0 {
                best = (sign * v, i);
            }
            if (worse_above && v > threshold) || (!worse_above && v < threshold) {
                past += 1;
            }
        }
        let w = m.width.max(1);
        Stats {
            worst: sign * best.0,
            worst_x: best.1 % w,
            worst_y: best.1 / w,
            area: past as f64 / m.values.len().max(1) as f64,
        }
    }

    /// Blocks of rows in parallel give one pass's statistics: ties (the worst value many
    /// times, in several blocks) go to the first pixel in row order, NaN never counts.
    #[test]
    fn parallel_stats_equal_one_pass() {
        let mut next = super::super::xorshift(1);
        for (w, h) in [
            (1usize, 1usize),
            (7, 3),
            (1920, 1080),
            (333, 777),
            (65_537, 2),
        ] {
            for levels in [3u32, 1000] {
                let values: Vec<f32> = (0..w * h)
                    .map(|_| match next() % 50 {
                        0 => f32::NAN,
                        _ => (next() % levels) as f32,
                    })
                    .collect();
                let m = DistortionMap {
                    width: w,
                    height: h,
                    values,
                };
                for worse_above in [true, false] {
                    let t = (levels / 2) as f32;
                    assert_eq!(
                        m.stats(t, worse_above),
                        one_pass(&m, t, worse_above),
                        "{w}x{h} levels {levels} worse_above {worse_above}"
                    );
                }
            }
        }
    }

    #[test]
    fn squared_error_and_its_stats() {
        let r = [10u16, 20, 30, 40, 50, 60];
        let d = [10u16, 23, 30, 36, 50, 60];
        let m = squared_error(&r, &d, 3, 2);
        assert_eq!(m.values, [0.0, 9.0, 0.0, 16.0, 0.0, 0.0]);
        let s = m.stats(5.0, true);
        assert_eq!((s.worst, s.worst_x, s.worst_y), (16.0, 0, 1));
        assert!((s.area - 2.0 / 6.0).abs() < 1e-12);
        let s = m.stats(1.0, false);
        assert_eq!((s.worst, s.worst_x, s.worst_y), (0.0, 0, 0));
        assert!((s.area - 4.0 / 6.0).abs() < 1e-12);
        assert_eq!(MapKind::Butteraugli.fields()[3].name, "butteraugli-area");
        // Empty, and all NaN: the first pixel, as one pass over the values gives.
        let empty = DistortionMap {
            width: 0,
            height: 0,
            values: vec![],
        };
        let s = empty.stats(1.0, true);
        assert_eq!((s.worst_x, s.worst_y, s.area), (0, 0, 0.0));
        let nan = DistortionMap {
            width: 2,
            height: 1,
            values: vec![f32::NAN; 2],
        };
        assert_eq!(
            (nan.stats(1.0, true).worst_x, nan.stats(1.0, false).worst_y),
            (0, 0)
        );
        assert_eq!(MapKind::Ssim.fields()[0].name, "ssim-peak");
    }
}
