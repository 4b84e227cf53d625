//! Scores of one frame pair.

/// Named metric fields of one pair, in a stable order (the order the metrics produce them).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scores {
    entries: Vec<(&'static str, f64)>,
    /// Per PSNR field pooled as libvmaf's APSNR: the pair's (sum of squared errors,
    /// samples, peak), which the summary sums over the frames (not a field of the record).
    squared_errors: Vec<(&'static str, [f64; 3])>,
}

impl Scores {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, field: &'static str, value: f64) {
        self.entries.push((field, value));
    }

    /// Records the squared errors behind `field`'s value for the summary, which pools them
    /// as libvmaf's aggregate APSNR (`aom-psnr-*`'s `pooled`).
    pub fn push_squared_error(&mut self, field: &'static str, sse: f64, samples: f64, peak: f64) {
        self.squared_errors.push((field, [sse, samples, peak]));
    }

    /// What [`Scores::push_squared_error`] recorded, in its order.
    pub fn squared_errors(&self) -> impl Iterator<Item = (&'static str, [f64; 3])> + '_ {
        self.squared_errors.iter().copied()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&'static str, f64)> + '_ {
        self.entries.iter().copied()
    }

    /// Appends every field of `other`, in its order.
    pub fn append(&mut self, other: Scores) {
        self.entries.extend(other.entries);
        self.squared_errors.extend(other.squared_errors);
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
