// SPDX-License-Identifier: MPL-2.0
//! What the table, the plot and the gates know of a field, read from the engine's registry
//! (`gpumetrics_engine::metric::field`): decimals, harmonic mean, plot panel, direction.
//! Nothing is guessed from field names.

use gpumetrics_engine::metric::{self, Field};

/// A field the registry does not declare (it should not happen): 3 decimals, no harmonic
/// mean, a panel of its own (named after it: see [`panel`]).
static UNKNOWN: Field = Field::new("", "");

/// The registry's metadata of `name`, or [`UNKNOWN`]'s.
pub fn meta(name: &str) -> &'static Field {
    metric::field(name).unwrap_or(&UNKNOWN)
}

/// `v` with the decimals of field `name`.
pub fn format(name: &str, v: f64) -> String {
    meta(name).format(v)
}

/// The plot panel of field `name`: its title and whether its y axis is 0..1; `None` when
/// the field is not plotted.
pub fn panel(name: &str) -> Option<(String, bool)> {
    match metric::field(name) {
        Some(f) => f.panel.map(|p| (p.title.to_string(), p.unit_interval)),
        None => Some((name.to_string(), false)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_fields_and_the_fallback() {
        for f in metric::fields() {
            assert_eq!(meta(f.name), f, "{}", f.name);
            assert_eq!(
                panel(f.name),
                f.panel.map(|p| (p.title.to_string(), p.unit_interval))
            );
        }
        let unknown = meta("no-such-field");
        assert_eq!(unknown.decimals, 3);
        assert!(!unknown.harmonic_mean);
        assert_eq!(format("no-such-field", 1.23456), "1.235");
        assert_eq!(format("no-such-field", f64::INFINITY), "inf");
        assert_eq!(
            panel("no-such-field"),
            Some(("no-such-field".to_string(), false))
        );
    }
}
