// SPDX-License-Identifier: MPL-2.0
//! Quality gates: `--fail FIELD.STAT<VALUE` / `--fail FIELD.STAT>VALUE` (the alert rules'
//! syntax, on a statistic of the summary instead of a frame's value) and `--fail-below
//! FIELD=VALUE` (the same as `FIELD.mean<VALUE`). A rule is parsed and checked against the
//! fields the run's metrics can produce before anything is decoded, so that a typo costs
//! nothing and never hides a failure behind a usage error at the end; the comparison must
//! point the way the field gets worse, which the registry's field metadata says.

use gpumetrics_engine::metric::{self, Direction};
use gstgpumetrics::message::{FieldStats, Summary};
use gstgpumetrics::quote::quoted;

use crate::fields;

/// The statistics a rule can name, as the summary records name them.
pub const STATS: &[&str] = &[
    "mean",
    "harmonic-mean",
    "min",
    "max",
    "stddev",
    "p1",
    "p5",
    "p50",
    "p95",
    "p99",
    "pooled",
];

/// Which way a rule fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `<`: fails when the statistic is below the value.
    Below,
    /// `>`: fails when the statistic is above the value.
    Above,
}

impl Op {
    fn symbol(self) -> char {
        match self {
            Op::Below => '<',
            Op::Above => '>',
        }
    }
}

/// One gate.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// As given (`vmaf.mean<93`), or the `--fail-below` it came from.
    pub text: String,
    pub field: String,
    /// One of [`STATS`].
    pub stat: &'static str,
    pub op: Op,
    pub value: f64,
}

/// What judging a rule found.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Pass(String),
    Fail(String),
}

/// The value of statistic `stat` (one of [`STATS`]); `None` for an undefined harmonic mean
/// and for `pooled` of a field that is not a PSNR.
fn stat_of(stats: &FieldStats, stat: &str) -> Option<f64> {
    match stat {
        "harmonic-mean" => stats.harmonic_mean,
        _ => stats
            .entries()
            .into_iter()
            .find(|(name, _)| *name == stat)
            .map(|(_, v)| v),
    }
}

impl Rule {
    /// Parses `FIELD[.STAT]<VALUE` or `FIELD[.STAT]>VALUE` against `run_fields`, the fields
    /// the run's metrics can produce. The error names the rule and the fix (for a field of
    /// another metric: which one to add to `--metrics`).
    pub fn parse(text: &str, run_fields: &[&str]) -> Result<Rule, String> {
        let bad = |why: String| format!("--fail '{}': {why}", quoted(text));
        let at = text.find(['<', '>']).ok_or_else(|| {
            bad(
                "no '<' or '>': write FIELD.STAT<VALUE or FIELD.STAT>VALUE, e.g. \
                 'vmaf.mean<93', 'butteraugli.p95>4'"
                    .into(),
            )
        })?;
        let op = if text[at..].starts_with('<') {
            Op::Below
        } else {
            Op::Above
        };
        let (left, value) = (text[..at].trim(), text[at + 1..].trim());
        if value.contains(['<', '>']) {
            return Err(bad(
                "one comparison per rule (give --fail once per rule)".into()
            ));
        }
        let (field, stat) = match left.rsplit_once('.') {
            Some((f, s)) => (f.trim(), s.trim()),
            None => (left, "mean"),
        };
        let Some(stat) = STATS.iter().copied().find(|s| *s == stat) else {
            return Err(bad(format!(
                "no statistic `{}`: choose from {}",
                quoted(stat),
                STATS.join(", ")
            )));
        };
        if !run_fields.contains(&field) {
            let from = metric::all().find(|m| m.fields.iter().any(|f| f.name == field));
            let runs = |m: &metric::Info| m.fields.iter().any(|f| run_fields.contains(&f.name));
            let hint = match from {
                // Its metric runs: a reference field with one input.
                Some(m) if runs(m) => format!(
                    " (a field of the reference input, and there is one input only: {} \
                     measures the distorted input alone)",
                    m.name
                ),
                Some(m) => format!(" (`{field}` comes from {}: add it to --metrics)", m.name),
                None => String::new(),
            };
            return Err(bad(format!(
                "no field `{}` in this run{hint}; its fields are {}",
                quoted(field),
                run_fields.join(", ")
            )));
        }
        let value: f64 = value
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(|| bad(format!("`{}` is not a finite number", quoted(value))))?;
        // The direction the statistic gets worse: a wider spread is worse for every field.
        let worse = match (stat, fields::meta(field).direction) {
            ("stddev", _) | (_, Direction::Lower) => Op::Above,
            (_, Direction::Higher) => Op::Below,
        };
        if op != worse {
            let (way, better) = match worse {
                Op::Below => ("higher-is-better", "above"),
                Op::Above if stat == "stddev" => ("a spread: larger-is-worse", "below"),
                Op::Above => ("lower-is-better", "below"),
            };
            return Err(bad(format!(
                "{field}.{stat} is {way}, so a value {better} {value} is a better result and \
                 failing on it makes no sense; the gate is {field}.{stat}{}{value}",
                worse.symbol()
            )));
        }
        Ok(Rule {
            text: text.to_string(),
            field: field.to_string(),
            stat,
            op,
            value,
        })
    }

    /// `--fail-below FIELD=VALUE` as a rule (its field checked by the caller).
    pub fn below(field: &str, value: f64) -> Rule {
        Rule {
            text: format!("--fail-below {field}={value}"),
            field: field.to_string(),
            stat: "mean",
            op: Op::Below,
            value,
        }
    }

    /// Judges the rule on a run's summary. A field or statistic the run does not have
    /// fails: nothing was shown to meet the gate.
    pub fn judge(&self, summary: &Summary) -> Verdict {
        let Some(stats) = summary.field(&self.field) else {
            let have: Vec<&str> = summary.fields.iter().map(|(n, _)| n.as_str()).collect();
            return Verdict::Fail(format!(
                "fail: {}: the run produced no `{}` (it depends on the input or an option; \
                 the fields are {})",
                self.text,
                self.field,
                have.join(", ")
            ));
        };
        let Some(v) = stat_of(stats, self.stat) else {
            return Verdict::Fail(format!(
                "fail: {}: {} has no {} (it needs values that are all non-negative)",
                self.text, self.field, self.stat
            ));
        };
        let shown = fields::format(&self.field, v);
        let failed = v.is_nan()
            || match self.op {
                Op::Below => v < self.value,
                Op::Above => v > self.value,
            };
        let (field, stat, limit) = (&self.field, self.stat, self.value);
        match (failed, self.op) {
            (true, Op::Below) => Verdict::Fail(format!(
                "fail: {field} {stat} {shown} is below {limit} ({})",
                self.text
            )),
            (true, Op::Above) => Verdict::Fail(format!(
                "fail: {field} {stat} {shown} is above {limit} ({})",
                self.text
            )),
            (false, Op::Below) => Verdict::Pass(format!("pass: {field} {stat} {shown} >= {limit}")),
            (false, Op::Above) => Verdict::Pass(format!("pass: {field} {stat} {shown} <= {limit}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIELDS: &[&str] = &["psnr-y", "mse-y", "vmaf", "butteraugli"];

    fn stats(mean: f64) -> FieldStats {
        FieldStats {
            mean,
            min: mean - 5.0,
            max: mean + 5.0,
            stddev: 2.0,
            harmonic_mean: None,
            pooled: None,
            p1: mean - 4.0,
            p5: mean - 3.0,
            p50: mean,
            p95: mean + 3.0,
            p99: mean + 4.0,
        }
    }

    #[test]
    fn rules_parse_with_the_statistic_and_the_direction() {
        let r = Rule::parse("vmaf.mean<93", FIELDS).unwrap();
        assert_eq!(
            (r.field.as_str(), r.stat, r.op, r.value),
            ("vmaf", "mean", Op::Below, 93.0)
        );
        let r = Rule::parse(" butteraugli.p95 > 4 ", FIELDS).unwrap();
        assert_eq!(
            (r.field.as_str(), r.stat, r.op),
            ("butteraugli", "p95", Op::Above)
        );
        let r = Rule::parse("psnr-y<30", FIELDS).unwrap();
        assert_eq!(r.stat, "mean");
        assert_eq!(
            Rule::parse("psnr-y.stddev>3", FIELDS).unwrap().op,
            Op::Above
        );
    }

    #[test]
    fn bad_rules_say_why_and_list_the_fields() {
        let e = Rule::parse("nosuch.mean<3", FIELDS).unwrap_err();
        assert!(
            e.contains("no field `nosuch`") && e.contains("psnr-y, mse-y"),
            "{e}"
        );
        let e = Rule::parse("ref-si.mean<3", &["si", "ti"]).unwrap_err();
        assert!(e.contains("a field of the reference input"), "{e}");
        let e = Rule::parse("ssim.mean<0.9", FIELDS).unwrap_err();
        assert!(e.contains("comes from ssim: add it to --metrics"), "{e}");
        let e = Rule::parse("vmaf.median<3", FIELDS).unwrap_err();
        assert!(
            e.contains("no statistic `median`") && e.contains("p95"),
            "{e}"
        );
        let e = Rule::parse("vmaf.mean=3", FIELDS).unwrap_err();
        assert!(e.contains("no '<' or '>'"), "{e}");
        let e = Rule::parse("vmaf.mean<x", FIELDS).unwrap_err();
        assert!(e.contains("`x` is not a finite number"), "{e}");
        let e = Rule::parse("vmaf.mean<inf", FIELDS).unwrap_err();
        assert!(e.contains("finite"), "{e}");
        let e = Rule::parse("butteraugli.max<2", FIELDS).unwrap_err();
        assert!(
            e.contains("lower-is-better") && e.contains("butteraugli.max>2"),
            "{e}"
        );
        let e = Rule::parse("vmaf.p5>90", FIELDS).unwrap_err();
        assert!(
            e.contains("higher-is-better") && e.contains("vmaf.p5<90"),
            "{e}"
        );
        assert!(Rule::parse("vmaf.mean<3<4", FIELDS).is_err());
    }

    #[test]
    fn judging_reads_the_named_statistic() {
        let s = Summary {
            frames: 3,
            fields: vec![
                ("vmaf".into(), stats(90.0)),
                ("butteraugli".into(), stats(3.0)),
            ],
            ..Default::default()
        };
        let fails = |rule: &str| {
            matches!(
                Rule::parse(rule, FIELDS).unwrap().judge(&s),
                Verdict::Fail(_)
            )
        };
        assert!(fails("vmaf.mean<93"));
        assert!(!fails("vmaf.mean<90"));
        assert!(fails("vmaf.min<86"));
        assert!(!fails("vmaf.min<85"));
        assert!(fails("butteraugli.p95>5.5"));
        assert!(!fails("butteraugli.p95>6"));
        assert!(fails("butteraugli.max>7.5"));
        // No harmonic mean, or no such field in the run: not a pass.
        assert!(fails("vmaf.harmonic-mean<1"));
        assert!(fails("psnr-y.mean<1"));
        let Verdict::Fail(text) = Rule::parse("vmaf.mean<93", FIELDS).unwrap().judge(&s) else {
            unreachable!()
        };
        assert!(
            text.starts_with("fail: vmaf mean 90.") && text.contains("is below 93"),
            "{text}"
        );
        let Verdict::Fail(text) = Rule::below("vmaf", 95.0).judge(&s) else {
            unreachable!()
        };
        assert!(text.ends_with("(--fail-below vmaf=95)"), "{text}");
        assert!(matches!(
            Rule::below("vmaf", 85.0).judge(&s),
            Verdict::Pass(t) if t.starts_with("pass: vmaf mean")
        ));
        let nan = Summary {
            fields: vec![("vmaf".into(), stats(f64::NAN))],
            ..s.clone()
        };
        assert!(matches!(
            Rule::parse("vmaf<1", FIELDS).unwrap().judge(&nan),
            Verdict::Fail(_)
        ));
    }
}
