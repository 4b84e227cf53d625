// SPDX-License-Identifier: MPL-2.0
//! What the table, the plot and the gates know of a field, read from the engine's registry
//! (`gpumetrics_engine::metric::field`): decimals, harmonic mean, plot panel, direction.
//! Nothing is guessed from field names.

use gpumetrics_engine::MetricSet;
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

/// Every field a run of `metrics` can produce, in registry order (the element's
/// `records::columns_for`); with one input (`single`) without the reference's fields of the
/// no-reference metrics (`ref-si`), which only a run with a reference has.
pub fn of_run(metrics: MetricSet, single: bool) -> Vec<&'static str> {
    let no_reference = metric::no_reference();
    metric::all()
        .filter(|m| metrics.contains(m.flag))
        .flat_map(|m| {
            let nr = no_reference.contains(m.flag);
            m.fields
                .iter()
                .map(|f| f.name)
                .filter(move |n| !(single && nr && n.starts_with(metric::REF_PREFIX)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_input_has_no_reference_fields() {
        let all = metric::all().fold(MetricSet::default(), |s, m| s | m.flag);
        let columns = gstgpumetrics::records::columns_for(all);
        assert_eq!(
            of_run(all, false),
            columns.iter().map(|f| f.name).collect::<Vec<_>>()
        );
        let one = of_run(metric::no_reference(), true);
        assert!(one.contains(&"si") && one.contains(&"ti"), "{one:?}");
        assert!(!one.iter().any(|f| f.starts_with("ref-")), "{one:?}");
        let two = of_run(metric::no_reference(), false);
        assert!(two.contains(&"ref-si"), "{two:?}");
    }

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
