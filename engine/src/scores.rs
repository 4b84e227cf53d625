//! Scores of one frame pair.

/// Named metric fields of one pair, in a stable order (the order the metrics produce them).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scores {
    entries: Vec<(&'static str, f64)>,
    /// Per field whose summary pools more than its values ([`PoolTerms`]): this pair's
    /// terms (not fields of the record).
    pool_terms: Vec<(&'static str, PoolTerms)>,
    /// Per such field, the terms of a window's pooling where they differ from the pair's
    /// own ([`Scores::push_window_terms`]).
    window_terms: Vec<(&'static str, PoolTerms)>,
    /// The pair's distortion map, when the engine makes one ([`crate::EngineBuilder::map`]).
    map: Option<std::sync::Arc<crate::map::PairMap>>,
}

/// What a field's summary pools besides its values, where its `pooled` statistic is an
/// aggregate of the reference's own (not something the values alone give).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PoolTerms {
    /// libvmaf's aggregate APSNR (`aom-psnr-*`): the pair's sum of squared errors, its
    /// samples and the peak.
    Apsnr { sse: f64, samples: f64, peak: f64 },
    /// FFmpeg's XPSNR average (`xpsnr-*`): the root of the pair's weighted distortion and
    /// what it is compared with (samples · peak²).
    Xpsnr { root: f64, scale: f64 },
    /// ColorVideoVDP's JOD of a span (`cvvdp`): the sum of its pairs' terms of the pooling
    /// over frames, their count, and the first pair's value as an image when the span
    /// begins with the sequence (NaN otherwise), which a one-pair span pools to.
    Cvvdp { sum: f64, frames: u64, image: f64 },
}

impl Scores {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, field: &'static str, value: f64) {
        self.entries.push((field, value));
    }

    /// Records the terms behind `field`'s value that the summary pools
    /// ([`PoolTerms`]: its `pooled` statistic).
    pub fn push_pool_terms(&mut self, field: &'static str, terms: PoolTerms) {
        self.pool_terms.push((field, terms));
    }

    /// What [`Scores::push_pool_terms`] recorded, in its order.
    pub fn pool_terms(&self) -> impl Iterator<Item = (&'static str, PoolTerms)> + '_ {
        self.pool_terms.iter().copied()
    }

    /// Records the terms of `field` for the pooling of a window started by
    /// [`crate::Engine::start_window`], where they differ from the pair's own (a metric
    /// over a span whose window restarts its temporal channels).
    pub fn push_window_terms(&mut self, field: &'static str, terms: PoolTerms) {
        self.window_terms.push((field, terms));
    }

    /// The terms a window pools ([`crate::Pooler::push_window`]): each field's
    /// [`Scores::push_window_terms`] where the pair has them, else its own.
    pub fn window_pool_terms(&self) -> impl Iterator<Item = (&'static str, PoolTerms)> + '_ {
        self.terms_for(true)
    }

    /// The terms a pooling takes of this pair: its own ([`Scores::pool_terms`]), or with
    /// `window` a window's ([`Scores::window_pool_terms`]).
    pub(crate) fn terms_for(
        &self,
        window: bool,
    ) -> impl Iterator<Item = (&'static str, PoolTerms)> + '_ {
        self.pool_terms.iter().map(move |&(field, own)| {
            let other = window
                .then(|| self.window_terms.iter().find(|(f, _)| *f == field))
                .flatten();
            (field, other.map_or(own, |&(_, t)| t))
        })
    }

    pub fn iter(&self) -> impl Iterator<Item = (&'static str, f64)> + '_ {
        self.entries.iter().copied()
    }

    /// Appends every field of `other`, in its order (and its map, if it has one).
    pub fn append(&mut self, other: Scores) {
        self.entries.extend(other.entries);
        self.pool_terms.extend(other.pool_terms);
        self.window_terms.extend(other.window_terms);
        if other.map.is_some() {
            self.map = other.map;
        }
    }

    /// Gives the pair its distortion map.
    pub fn set_map(&mut self, map: crate::map::PairMap) {
        self.map = Some(std::sync::Arc::new(map));
    }

    /// The pair's distortion map, when the engine makes one.
    pub fn map(&self) -> Option<&crate::map::PairMap> {
        self.map.as_deref()
    }

    /// Sets `field`'s value where the pair has it (its place and its pool terms kept);
    /// whether it had it.
    pub fn replace(&mut self, field: &str, value: f64) -> bool {
        match self.entries.iter_mut().find(|(f, _)| *f == field) {
            Some((_, v)) => {
                *v = value;
                true
            }
            None => false,
        }
    }

    pub fn get(&self, field: &str) -> Option<f64> {
        self.entries
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, v)| *v)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replace_sets_a_field_in_its_place() {
        let mut s = Scores::new();
        s.push("psnr-y", 30.0);
        s.push("cvvdp", 9.0);
        assert!(s.replace("cvvdp", 8.5));
        assert!(!s.replace("ssim", 1.0));
        assert_eq!(
            s.iter().collect::<Vec<_>>(),
            [("psnr-y", 30.0), ("cvvdp", 8.5)]
        );
    }
}
