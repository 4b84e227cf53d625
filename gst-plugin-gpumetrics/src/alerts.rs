// SPDX-License-Identifier: MPL-2.0
//! Alert rules (`alerts`): `FIELD<VALUE[:HOLD]` or `FIELD>VALUE[:HOLD]`, comma-separated.
//!
//! A rule is *raised* at the first pair whose running time is at least HOLD after the first
//! pair of an unbroken run of pairs meeting its condition, and *cleared* likewise after HOLD
//! of pairs not meeting it (HOLD 0: at the first such pair). So a value that crosses the
//! threshold for less than HOLD never changes the state: alarms do not flap. Pairs without
//! the field (a metric left out for a frame size) or without a running time do not change a
//! rule's state.
//!
//! Per rule the run (and each window) counts its episodes (times raised) and its seconds of
//! running time in alert. No element state here: the outputs feed the pairs in order.

use gpumetrics_engine::Field;

use crate::message::{AlertChange, AlertCount, AlertState};
use crate::quote::quoted;

/// Which side of the threshold raises a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `FIELD<VALUE`: raised while the field is below the value.
    Below,
    /// `FIELD>VALUE`: raised while the field is above the value.
    Above,
}

/// One parsed rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// As written (trimmed): the name in messages and counts.
    pub text: String,
    /// The watched field, as the registry declares it.
    pub field: &'static Field,
    pub op: Op,
    pub threshold: f64,
    /// Nanoseconds of running time.
    pub hold: u64,
}

impl Rule {
    fn holds(&self, v: f64) -> bool {
        match self.op {
            Op::Below => v < self.threshold,
            Op::Above => v > self.threshold,
        }
    }

    /// The worse of two values for this rule.
    fn worse(&self, a: f64, b: f64) -> f64 {
        match self.op {
            Op::Below => a.min(b),
            Op::Above => a.max(b),
        }
    }
}

/// A duration with its unit, in nanoseconds: `500ms`, `2s`, `1.5s`, `1m`, or `0` alone (the
/// alert rules' HOLD, the command's `--window`). `Err` says what is wrong, for the caller to
/// put after the text it quotes.
pub fn parse_duration(text: &str) -> Result<u64, String> {
    let t = text.trim();
    if t == "0" {
        return Ok(0);
    }
    let (number, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e6)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1e9)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60e9)
    } else {
        return Err("needs a unit: ms, s or m (e.g. 500ms, 2s, 1m)".into());
    };
    let v: f64 = number
        .trim()
        .parse()
        .map_err(|_| "is not a number of ms, s or m".to_string())?;
    if !v.is_finite() || v < 0.0 || v * scale > 1e18 {
        return Err("must be a non-negative duration below about 31 years".into());
    }
    Ok((v * scale).round() as u64)
}

fn parse_hold(text: &str) -> Result<u64, String> {
    parse_duration(text).map_err(|why| format!("the hold time '{}' {why}", quoted(text)))
}

/// A rule as written: the field's name, its condition, its hold.
struct Parsed<'a> {
    field: &'a str,
    op: Op,
    threshold: f64,
    hold: u64,
}

fn parse_rule(text: &str) -> Result<Parsed<'_>, String> {
    let bad = |why: String| {
        format!(
            "alerts: rule '{}': {why}; a rule is FIELD<VALUE[:HOLD] or FIELD>VALUE[:HOLD], \
             e.g. vmaf<70:2s",
            quoted(text)
        )
    };
    let at = text
        .find(['<', '>'])
        .ok_or_else(|| bad("no '<' or '>'".into()))?;
    let op = if text.as_bytes()[at] == b'<' {
        Op::Below
    } else {
        Op::Above
    };
    let field = text[..at].trim();
    if field.is_empty()
        || !field
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return Err(bad(format!(
            "'{}' is not a field name (lower case, digits and '-', e.g. psnr-y)",
            quoted(field)
        )));
    }
    let rest = &text[at + 1..];
    let (value, hold) = match rest.split_once(':') {
        Some((v, h)) => (v.trim(), parse_hold(h.trim()).map_err(bad)?),
        None => (rest.trim(), 0),
    };
    let threshold: f64 = value
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| {
            bad(format!(
                "the threshold '{}' is not a finite number",
                quoted(value)
            ))
        })?;
    Ok(Parsed {
        field,
        op,
        threshold,
        hold,
    })
}

/// Parses the `alerts` property. `fields` are the fields the enabled metrics can produce
/// ([`crate::records::columns_for`]): a rule on any other field is refused (it could never
/// fire).
pub fn parse(text: &str, fields: &[&'static Field]) -> Result<Vec<Rule>, String> {
    let mut rules = Vec::new();
    for part in text.split(',').map(str::trim) {
        if part.is_empty() {
            return Err(format!(
                "alerts: '{}' has an empty rule (two commas, or one at an end)",
                quoted(text)
            ));
        }
        let parsed = parse_rule(part)?;
        let Some(&field) = fields.iter().find(|f| f.name == parsed.field) else {
            let names: Vec<&str> = fields.iter().map(|f| f.name).collect();
            return Err(format!(
                "alerts: rule '{}' names the field '{}', which no enabled metric produces \
                 (the enabled metrics give {}); enable its metric in 'metrics' or correct the \
                 name",
                quoted(part),
                quoted(parsed.field),
                if names.is_empty() {
                    "no fields".to_string()
                } else {
                    names.join(", ")
                }
            ));
        };
        let rule = Rule {
            text: part.to_string(),
            field,
            op: parsed.op,
            threshold: parsed.threshold,
            hold: parsed.hold,
        };
        if rules.iter().any(|r: &Rule| r.text == rule.text) {
            return Err(format!("alerts: rule '{}' is given twice", quoted(part)));
        }
        rules.push(rule);
    }
    Ok(rules)
}

/// An episode in progress.
#[derive(Debug, Clone, Copy)]
struct Raised {
    since: u64,
    worst: f64,
    /// Running time up to which its time was added to the window's count.
    counted_until: u64,
}

#[derive(Debug, Clone, Copy, Default)]
struct Count {
    episodes: u64,
    ns: u64,
}

#[derive(Debug)]
struct State {
    rule: Rule,
    raised: Option<Raised>,
    /// First pair of the current run of pairs that would change the state.
    streak: Option<u64>,
    /// Running time of the latest pair with the field.
    last: Option<u64>,
    run: Count,
    window: Count,
}

/// Every rule's state over a run.
#[derive(Debug, Default)]
pub struct Alerts {
    rules: Vec<State>,
    /// The fields of the last records checked by [`Alerts::unproduced`].
    checked: Vec<&'static str>,
}

impl Alerts {
    pub fn new(rules: Vec<Rule>) -> Self {
        Alerts {
            rules: rules
                .into_iter()
                .map(|rule| State {
                    rule,
                    raised: None,
                    streak: None,
                    last: None,
                    run: Count::default(),
                    window: Count::default(),
                })
                .collect(),
            checked: Vec::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rules on a field that records with these `fields` lack (`psnr-r` on GRAY8, a
    /// field of a metric left out for the frame size): never evaluated while the inputs
    /// stay as they are. One text per such rule, naming it and the fields available, the
    /// first time a set of fields is seen (after a caps change, again).
    pub fn unproduced(&mut self, fields: impl Iterator<Item = &'static str>) -> Vec<String> {
        let fields: Vec<&'static str> = fields.collect();
        if self.rules.is_empty() || fields.is_empty() || fields == self.checked {
            return Vec::new();
        }
        let texts = self
            .rules
            .iter()
            .filter(|st| !fields.contains(&st.rule.field.name))
            .map(|st| {
                format!(
                    "alert rule '{}' is never evaluated: these inputs give no {} (the fields \
                     available: {})",
                    crate::quote::quoted(&st.rule.text),
                    st.rule.field.name,
                    fields.join(", ")
                )
            })
            .collect();
        self.checked = fields;
        texts
    }

    /// A scored pair at `running_time` whose value of a field is `get(field)` (the record's
    /// [`crate::message::FrameScores::value`]): the rules it raises or clears.
    pub fn observe(
        &mut self,
        running_time: Option<u64>,
        get: impl Fn(&'static Field) -> Option<f64>,
    ) -> Vec<AlertChange> {
        let Some(t) = running_time else {
            return Vec::new();
        };
        let mut changes = Vec::new();
        for st in &mut self.rules {
            let Some(v) = get(st.rule.field) else {
                continue;
            };
            st.last = Some(t);
            let meets = st.rule.holds(v);
            match &mut st.raised {
                None => {
                    if !meets {
                        st.streak = None;
                        continue;
                    }
                    let start = *st.streak.get_or_insert(t);
                    if t.saturating_sub(start) >= st.rule.hold {
                        st.streak = None;
                        st.raised = Some(Raised {
                            since: t,
                            worst: v,
                            counted_until: t,
                        });
                        st.run.episodes += 1;
                        st.window.episodes += 1;
                        changes.push(AlertChange {
                            rule: st.rule.text.clone(),
                            field: st.rule.field.name.to_string(),
                            state: AlertState::Raised,
                            value: v,
                            running_time: t,
                            since: None,
                            worst: None,
                        });
                    }
                }
                Some(r) => {
                    if meets {
                        r.worst = st.rule.worse(r.worst, v);
                        st.streak = None;
                        continue;
                    }
                    let start = *st.streak.get_or_insert(t);
                    if t.saturating_sub(start) >= st.rule.hold {
                        let r = *r;
                        let ns = t.saturating_sub(r.counted_until.max(r.since));
                        st.window.ns += ns;
                        st.run.ns += t.saturating_sub(r.since);
                        st.raised = None;
                        st.streak = None;
                        changes.push(AlertChange {
                            rule: st.rule.text.clone(),
                            field: st.rule.field.name.to_string(),
                            state: AlertState::Cleared,
                            value: v,
                            running_time: t,
                            since: Some(r.since),
                            worst: Some(r.worst),
                        });
                    }
                }
            }
        }
        changes
    }

    /// Closes a window ending at `end`: its counts per rule (an episode in progress counts up
    /// to `end`), and the next window starts from zero.
    pub fn close_window(&mut self, end: u64) -> Vec<AlertCount> {
        self.close(end, false)
    }

    /// Closes the run's last window (at EOS): an episode in progress counts up to its rule's
    /// latest pair, as in [`Alerts::totals`], not to the window's nominal end.
    pub fn close_last_window(&mut self, end: u64) -> Vec<AlertCount> {
        self.close(end, true)
    }

    fn close(&mut self, end: u64, last: bool) -> Vec<AlertCount> {
        self.rules
            .iter_mut()
            .map(|st| {
                let end = if last {
                    st.last.map_or(end, |t| t.min(end))
                } else {
                    end
                };
                if let Some(r) = &mut st.raised
                    && end > r.counted_until
                {
                    st.window.ns += end - r.counted_until;
                    r.counted_until = end;
                }
                let c = std::mem::take(&mut st.window);
                count(&st.rule, c)
            })
            .collect()
    }

    /// The run's counts per rule; an episode in progress counts up to its rule's latest
    /// pair.
    pub fn totals(&self) -> Vec<AlertCount> {
        self.rules
            .iter()
            .map(|st| {
                let mut c = st.run;
                if let (Some(r), Some(last)) = (st.raised, st.last) {
                    c.ns += last.saturating_sub(r.since);
                }
                count(&st.rule, c)
            })
            .collect()
    }

    /// Whether each rule is raised now (for exporters), with its text.
    pub fn active(&self) -> impl Iterator<Item = (&str, bool)> {
        self.rules
            .iter()
            .map(|st| (st.rule.text.as_str(), st.raised.is_some()))
    }
}

fn count(rule: &Rule, c: Count) -> AlertCount {
    AlertCount {
        rule: rule.text.clone(),
        episodes: c.episodes,
        seconds: c.ns as f64 / 1e9,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn fields(names: &[&str]) -> Vec<&'static Field> {
        names
            .iter()
            .map(|n| gpumetrics_engine::metric::field(n).unwrap())
            .collect()
    }

    #[test]
    fn a_rule_on_a_field_the_records_lack_is_said_once_per_set_of_fields() {
        let rules = parse(
            "psnr-r<30, psnr-y<30",
            &fields(&["psnr-y", "psnr-r", "mse-y"]),
        )
        .unwrap();
        let mut a = Alerts::new(rules);
        let gray = ["psnr-y", "mse-y"];
        let said = a.unproduced(gray.into_iter());
        assert_eq!(
            said,
            [
                "alert rule 'psnr-r<30' is never evaluated: these inputs give no psnr-r (the \
              fields available: psnr-y, mse-y)"
            ]
        );
        assert!(a.unproduced(gray.into_iter()).is_empty(), "once");
        // Empty scores (a pair the engine could not score) say nothing.
        assert!(a.unproduced(std::iter::empty()).is_empty());
        // New caps with both fields: nothing to say; back to GRAY8: said again.
        assert!(a.unproduced(["psnr-y", "psnr-r"].into_iter()).is_empty());
        assert_eq!(a.unproduced(gray.into_iter()).len(), 1);
    }

    #[test]
    fn rules_parse_as_written() {
        let r = parse(
            "vmaf<70:2s, psnr-y>30:500ms,ssim<0.9",
            &fields(&["vmaf", "psnr-y", "ssim"]),
        )
        .unwrap();
        assert_eq!(r.len(), 3);
        assert_eq!(
            (
                r[0].text.as_str(),
                r[0].field.name,
                r[0].op,
                r[0].threshold,
                r[0].hold
            ),
            ("vmaf<70:2s", "vmaf", Op::Below, 70.0, 2_000 * MS)
        );
        assert_eq!(
            (r[1].op, r[1].hold, r[1].text.as_str()),
            (Op::Above, 500 * MS, "psnr-y>30:500ms")
        );
        assert_eq!(r[2].hold, 0);
        assert_eq!(
            parse("vmaf<70:1.5s", &fields(&["vmaf"])).unwrap()[0].hold,
            1_500 * MS
        );
    }

    #[test]
    fn bad_rules_are_quoted_with_what_is_wrong() {
        let fields = fields(&["vmaf", "psnr-y"]);
        for (text, want) in [
            ("vmaf=70", "rule 'vmaf=70': no '<' or '>'"),
            (
                "vmaf<seventy",
                "the threshold 'seventy' is not a finite number",
            ),
            ("vmaf<70:2", "the hold time '2' needs a unit"),
            ("vmaf<70:-1s", "must be a non-negative duration"),
            ("vmaf<70:1e30s", "must be a non-negative duration"),
            ("<70", "'' is not a field name"),
            ("VMAF<70", "'VMAF' is not a field name"),
            (
                "ssim<0.9",
                "names the field 'ssim', which no enabled metric produces (the enabled metrics give vmaf, psnr-y)",
            ),
            ("vmaf<70,,psnr-y<30", "has an empty rule"),
            ("vmaf<70,vmaf<70", "rule 'vmaf<70' is given twice"),
            ("vmaf<nan", "is not a finite number"),
        ] {
            let e = parse(text, &fields).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
            assert!(e.starts_with("alerts: "), "{e}");
        }
    }

    /// Feeds `values` at 100 ms steps; returns (state, running time in ms) of each change.
    fn run(rule: &str, values: &[f64]) -> (Vec<(AlertState, u64)>, Alerts) {
        let mut a = Alerts::new(parse(rule, &fields(&["vmaf"])).unwrap());
        let mut changes = Vec::new();
        for (i, v) in values.iter().enumerate() {
            for c in a.observe(Some(i as u64 * 100 * MS), |_| Some(*v)) {
                changes.push((c.state, c.running_time / MS));
            }
        }
        (changes, a)
    }

    #[test]
    fn without_hold_every_crossing_changes_the_state() {
        let (c, _) = run("vmaf<10", &[20.0, 5.0, 20.0, 5.0]);
        assert_eq!(
            c,
            [
                (AlertState::Raised, 100),
                (AlertState::Cleared, 200),
                (AlertState::Raised, 300)
            ]
        );
    }

    #[test]
    fn a_hold_raises_and_clears_only_after_it_has_passed() {
        // Below 10 from 100 ms; hold 250 ms: raised at the first pair at or after 350 ms
        // (400 ms). A 100 ms blip above does not clear it; clearing needs 250 ms above.
        let v = [20.0, 5.0, 5.0, 5.0, 5.0, 15.0, 5.0, 15.0, 15.0, 15.0, 15.0];
        let (c, a) = run("vmaf<10:250ms", &v);
        assert_eq!(
            c,
            [(AlertState::Raised, 400), (AlertState::Cleared, 1000)],
            "{c:?}"
        );
        let t = a.totals();
        assert_eq!((t[0].episodes, t[0].seconds), (1, 0.6));
        // A dip shorter than the hold never raises.
        let (c, a) = run("vmaf<10:250ms", &[20.0, 5.0, 5.0, 20.0, 5.0, 20.0]);
        assert!(c.is_empty(), "{c:?}");
        assert_eq!(a.totals()[0].episodes, 0);
    }

    #[test]
    fn cleared_changes_carry_since_and_worst() {
        let mut a = Alerts::new(parse("vmaf>3", &fields(&["vmaf"])).unwrap());
        assert!(a.observe(Some(0), |_| Some(1.0)).is_empty());
        let up = a.observe(Some(10), |_| Some(4.0));
        assert_eq!(
            (up[0].state, up[0].value, up[0].since),
            (AlertState::Raised, 4.0, None)
        );
        a.observe(Some(20), |_| Some(9.0));
        a.observe(Some(30), |_| Some(5.0));
        let down = a.observe(Some(40), |_| Some(2.0));
        assert_eq!(down[0].state, AlertState::Cleared);
        assert_eq!(
            (down[0].since, down[0].worst, down[0].value),
            (Some(10), Some(9.0), 2.0)
        );
        // Pairs without the field or without a running time change nothing.
        assert!(a.observe(Some(50), |_| None).is_empty());
        assert!(a.observe(None, |_| Some(100.0)).is_empty());
    }

    #[test]
    fn a_rule_reads_its_own_field_of_the_record() {
        let rules = parse("vmaf<70", &fields(&["psnr-y", "vmaf"])).unwrap();
        assert_eq!(rules[0].field, fields(&["vmaf"])[0]);
        let mut a = Alerts::new(rules);
        let record = |scores: Vec<(&'static Field, f64)>| crate::message::FrameScores {
            frame: 0,
            pts: None,
            running_time: None,
            duration: None,
            scores,
        };
        let psnr_only = record(fields(&["psnr-y"]).into_iter().zip([10.0]).collect());
        assert!(a.observe(Some(0), |f| psnr_only.value(f)).is_empty());
        let both = record(
            fields(&["psnr-y", "vmaf"])
                .into_iter()
                .zip([90.0, 10.0])
                .collect(),
        );
        let up = a.observe(Some(10), |f| both.value(f));
        assert_eq!((up[0].field.as_str(), up[0].value), ("vmaf", 10.0));
    }

    #[test]
    fn windows_count_the_time_in_alert_they_overlap() {
        let mut a = Alerts::new(parse("vmaf<10", &fields(&["vmaf"])).unwrap());
        a.observe(Some(0), |_| Some(20.0));
        a.observe(Some(300 * MS), |_| Some(5.0)); // raised at 300 ms
        let w = a.close_window(1000 * MS);
        assert_eq!((w[0].episodes, w[0].seconds), (1, 0.7));
        a.observe(Some(1500 * MS), |_| Some(20.0)); // cleared at 1500 ms
        let w = a.close_window(2000 * MS);
        assert_eq!((w[0].episodes, w[0].seconds), (0, 0.5));
        let w = a.close_window(3000 * MS);
        assert_eq!((w[0].episodes, w[0].seconds), (0, 0.0));
        assert_eq!(a.totals()[0].seconds, 1.2);
        assert_eq!(a.active().collect::<Vec<_>>(), [("vmaf<10", false)]);
        // Raised again at 3.2 s, last pair at 3.5 s: the run's last window (to 4 s) counts
        // 0.3 s, as the totals do.
        a.observe(Some(3200 * MS), |_| Some(1.0));
        a.observe(Some(3500 * MS), |_| Some(1.0));
        let w = a.close_last_window(4000 * MS);
        assert_eq!((w[0].episodes, w[0].seconds), (1, 0.3));
        assert!((a.totals()[0].seconds - 1.5).abs() < 1e-12);
    }
}
