//! The statistics of a pair's map that its record carries ([`super::MapKind::fields`]).

use gpumetrics_kernels::map::Partial;

use super::kind::Stats;
use crate::scores::Scores;

/// Appends the statistics of the pair's map to its scores ([`super::MapKind::fields`]), past
/// `threshold` counting into the area.
pub(crate) fn push_stats(scores: &mut Scores, threshold: f64) {
    let Some(map) = scores.map() else {
        return;
    };
    let kind = map.kind();
    let s = map.stats(threshold as f32);
    let values = [s.worst as f64, s.worst_x as f64, s.worst_y as f64, s.area];
    for (field, v) in kind.fields().iter().zip(values) {
        scores.push(field.name, v);
    }
}

/// The statistics of a map `width` wide of `len` values whose joined partial is `p` (the
/// signed largest value and its first index; `u32::MAX`: none, as the host's statistics
/// give it: the first pixel; its count past the threshold), `sign` 1 or −1 as the partial
/// was made. (A plan's maps have at most `crate::plan::MAX_PIXELS` values: the count fits
/// the partial's u32.)
pub(crate) fn of_partial(p: Partial, sign: f32, width: usize, len: usize) -> Stats {
    let at = if p.at == u32::MAX { 0 } else { p.at as usize };
    let w = width.max(1);
    Stats {
        worst: sign * p.largest,
        worst_x: at % w,
        worst_y: at / w,
        area: if len == 0 {
            0.0
        } else {
            p.past as f64 / len as f64
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map::DistortionMap;

    /// The partials' statistics, joined in blocks as `map_stats` makes them, equal the host's
    /// statistics of the same values: ties, NaN, all NaN, both signs.
    #[test]
    fn partials_give_the_hosts_statistics() {
        let mut next = super::super::xorshift(7);
        for (w, h) in [(1usize, 1usize), (7, 3), (333, 77), (1920, 8)] {
            for nan_all in [false, true] {
                let values: Vec<f32> = (0..w * h)
                    .map(|_| match (nan_all, next() % 40) {
                        (true, _) | (_, 0) => f32::NAN,
                        _ => (next() % 9) as f32,
                    })
                    .collect();
                let m = DistortionMap {
                    width: w,
                    height: h,
                    values: values.clone(),
                };
                for worse_above in [true, false] {
                    let sign = if worse_above { 1.0 } else { -1.0 };
                    let t = 4.0f32;
                    // Blocks of 64 threads striding as the kernel's do, 5 blocks.
                    let (threads, blocks) = (64usize, 5usize);
                    let mut parts = vec![Partial::NONE; threads * blocks];
                    for (i, &v) in values.iter().enumerate() {
                        parts[i % (threads * blocks)].see(sign * v, i as u32, sign * t);
                    }
                    let joined = parts.iter().copied().fold(Partial::NONE, Partial::join);
                    let got = of_partial(joined, sign, w, w * h);
                    let want = m.stats(t, worse_above);
                    assert_eq!(
                        (got.worst.to_bits(), got.worst_x, got.worst_y, got.area),
                        (want.worst.to_bits(), want.worst_x, want.worst_y, want.area),
                        "{w}x{h} all NaN {nan_all} worse_above {worse_above}"
                    );
                }
            }
        }
    }
}
