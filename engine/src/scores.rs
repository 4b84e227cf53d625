//! Scores of one frame pair.

/// Named metric fields of one pair, in a stable order (the order the metrics produce them).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scores {
    entries: Vec<(&'static str, f64)>,
}

impl Scores {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, field: &'static str, value: f64) {
        self.entries.push((field, value));
    }

    pub fn iter(&self) -> impl Iterator<Item = (&'static str, f64)> + '_ {
        self.entries.iter().copied()
    }

    /// Appends every field of `other`, in its order.
    pub fn append(&mut self, other: Scores) {
        self.entries.extend(other.entries);
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
