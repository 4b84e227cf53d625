//! The statistics of a pair's map that its record carries ([`super::MapKind::fields`]).

use crate::scores::Scores;

/// Appends the statistics of the pair's map to its scores ([`super::MapKind::fields`]), past
/// `threshold` counting into the area.
pub(crate) fn push_stats(scores: &mut Scores, threshold: f64) {
    let Some((kind, map)) = scores.map() else {
        return;
    };
    let s = map.stats(threshold as f32, kind.worse_above());
    let f = kind.fields();
    let values = [s.worst as f64, s.worst_x as f64, s.worst_y as f64, s.area];
    for (field, v) in f.iter().zip(values) {
        scores.push(field.name, v);
    }
}
