// SPDX-License-Identifier: MPL-2.0
//! Live monitoring: the options that become the element's monitoring properties
//! (`--window` → `window`, `--alert` → `alerts`, `--subsample`, `--roi`, `--prometheus` →
//! `prometheus-address`), checked before anything is decoded; which inputs are live; and the
//! lines printed for the element's windows and alert changes (its `gpumetrics-window` and
//! `gpumetrics-alert` records) as they arrive.

use gpumetrics_engine::{MetricSet, metric};
use gst::prelude::*;
use gstgpumetrics::alerts::{self, Rule};
use gstgpumetrics::message::{AlertChange, AlertState, AlignRecord, Window};
use gstgpumetrics::quote::quoted;

use crate::fields;

/// URI schemes of network and capture sources, which are live: they have no duration and
/// run until Ctrl-C or until the sender ends the stream.
const LIVE_SCHEMES: &[&str] = &[
    "udp", "rtp", "srtp", "rtsp", "rtsps", "rtspt", "rtspu", "rtsph", "srt", "rist", "rtmp",
    "rtmps", "tcp", "dvb", "v4l2",
];

/// Whether `uri`'s scheme is one of a live source (`udp://`, `srt://`, `rtsp://`, ...).
pub fn is_live_uri(uri: &str) -> bool {
    uri.split_once("://")
        .is_some_and(|(scheme, _)| LIVE_SCHEMES.contains(&scheme.to_ascii_lowercase().as_str()))
}

/// `--window`: a duration with its unit (`500ms`, `1s`, `2.5s`, `1m`), in nanoseconds, as
/// the alert rules' HOLD reads it ([`gstgpumetrics::alerts::parse_duration`]); not 0.
pub fn parse_duration(text: &str) -> Result<u64, String> {
    match gstgpumetrics::alerts::parse_duration(text) {
        Ok(0) => Err(format!(
            "`{}` must be longer than 0 (e.g. 500ms, 1s)",
            quoted(text)
        )),
        Ok(ns) => Ok(ns),
        Err(why) => Err(format!("`{}` {why}", quoted(text))),
    }
}

/// `--roi x,y,w,h`: a rectangle of the reference, in pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Roi {
    pub x: u32,
    pub y: u32,
    pub width: u32,
    pub height: u32,
}

impl Roi {
    /// The element's `roi` syntax ([`gstgpumetrics::roi::Rect::parse`]), and not empty.
    pub fn parse(text: &str) -> Result<Roi, String> {
        let r = gstgpumetrics::roi::Rect::parse(text)?;
        if r.width == 0 || r.height == 0 {
            return Err(format!(
                "`{}`: width and height must be at least 1",
                quoted(text)
            ));
        }
        Ok(Roi {
            x: r.x,
            y: r.y,
            width: r.width,
            height: r.height,
        })
    }

    /// Refuses a rectangle that reaches past a `width`x`height` frame of `what` (`the
    /// reference's`).
    pub fn check_within(&self, width: u32, height: u32, what: &str) -> Result<(), String> {
        let right = u64::from(self.x) + u64::from(self.width);
        let bottom = u64::from(self.y) + u64::from(self.height);
        if right > u64::from(width) || bottom > u64::from(height) {
            return Err(format!(
                "{self} reaches past {what} {width}x{height} frame (to x {right}, y {bottom})"
            ));
        }
        Ok(())
    }
}

impl std::fmt::Display for Roi {
    /// The element's `roi` form: `x,y,width,height`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{},{},{},{}", self.x, self.y, self.width, self.height)
    }
}

/// `--prometheus HOST:PORT` (an IPv6 host in brackets: `[::1]:9100`).
pub fn parse_address(text: &str) -> Result<String, String> {
    let t = text.trim();
    let bad = || {
        format!(
            "`{}` is not HOST:PORT (e.g. 127.0.0.1:9100, 0.0.0.0:9100)",
            quoted(text)
        )
    };
    let (host, port) = t.rsplit_once(':').ok_or_else(bad)?;
    if host.is_empty() || port.parse::<u16>().map_or(true, |p| p == 0) {
        return Err(bad());
    }
    Ok(t.to_string())
}

/// The `--alert` rules joined as the element's `alerts` property, parsed as the element will
/// parse them against the fields `metrics` can produce (with one input, `single`: not the
/// reference's `ref-` fields); `None` without rules. The error is the element's, naming
/// `--alert`.
#[cfg(test)]
pub fn check_alerts(
    rules: &[String],
    metrics: MetricSet,
    single: bool,
) -> Result<Option<(String, Vec<Rule>)>, String> {
    check_alerts_with_map(rules, metrics, single, None)
}

/// [`check_alerts`] for a run that also makes the map `map` (its statistics' fields may be
/// watched too).
pub fn check_alerts_with_map(
    rules: &[String],
    metrics: MetricSet,
    single: bool,
    map: Option<gpumetrics_engine::map::MapKind>,
) -> Result<Option<(String, Vec<Rule>)>, String> {
    if rules.is_empty() {
        return Ok(None);
    }
    let joined = rules.join(",");
    let fields: Vec<_> = fields::of_run(metrics, single)
        .into_iter()
        .filter_map(metric::field)
        .chain(map.into_iter().flat_map(|k| k.fields().iter()))
        .collect();
    match alerts::parse(&joined, &fields) {
        Ok(parsed) => Ok(Some((joined, parsed))),
        Err(e) => Err(format!(
            "--alert: {}",
            e.strip_prefix("alerts: ").unwrap_or(&e)
        )),
    }
}

/// The monitoring properties the command sets on the element (unset: the element's
/// defaults).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Monitoring {
    /// `window` in ns.
    pub window: Option<u64>,
    /// `alerts`, the rules joined with commas.
    pub alerts: Option<String>,
    pub subsample: Option<u32>,
    pub roi: Option<Roi>,
    /// `prometheus-address`.
    pub prometheus: Option<String>,
    /// `gpumetrics monitor`'s channel: the element's name and its `channel`.
    pub channel: Option<String>,
    /// `stats-file` (a channel's).
    pub stats_file: Option<std::path::PathBuf>,
    /// `post-messages`, when the run reads the records from the element's subscription
    /// alone (a service's channels): no bus message per pair.
    pub post_messages: Option<bool>,
    /// `align=auto` (live inputs with `--align auto`), with its `align-range` (ns) when
    /// given.
    pub align: Option<Option<u64>>,
}

impl Monitoring {
    pub fn set_on(&self, element: &gst::Element) {
        if let Some(w) = self.window {
            element.set_property("window", w);
        }
        if let Some(a) = &self.alerts {
            element.set_property("alerts", a);
        }
        if let Some(n) = self.subsample {
            element.set_property("subsample", n);
        }
        if let Some(r) = &self.roi {
            element.set_property("roi", r.to_string());
        }
        if let Some(p) = &self.prometheus {
            element.set_property("prometheus-address", p);
        }
        if let Some(c) = &self.channel {
            element.set_property("channel", c);
        }
        if let Some(range) = self.align {
            element.set_property_from_str("align", "auto");
            if let Some(r) = range {
                element.set_property("align-range", r);
            }
        }
        if let Some(f) = &self.stats_file {
            element.set_property("stats-file", f.to_string_lossy().as_ref());
        }
        if let Some(p) = self.post_messages {
            element.set_property("post-messages", p);
        }
    }
}

/// A running time as `HH:MM:SS.mmm`.
pub fn clock(ns: u64) -> String {
    let ms = ns / 1_000_000;
    format!(
        "{:02}:{:02}:{:02}.{:03}",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000
    )
}

/// The fields a window line shows: the first field of each metric in `metrics` (in
/// registry order: `psnr-y`, `ssim-y`, `ms-ssim`, ...), then any other field an alert rule
/// watches.
pub fn main_fields(metrics: MetricSet, rules: &[Rule]) -> Vec<String> {
    let mut out: Vec<String> = metric::all()
        .filter(|m| metrics.contains(m.flag))
        .filter_map(|m| m.fields.first().map(|f| f.name.to_string()))
        .collect();
    for r in rules {
        if !out.iter().any(|f| f == r.field.name) {
            out.push(r.field.name.to_string());
        }
    }
    out
}

/// The means of `fields` in the window (those it has), `psnr-y 35.123, ssim-y 0.95123`.
pub fn window_values(w: &Window, fields: &[String]) -> String {
    fields
        .iter()
        .filter_map(|f| {
            w.stats
                .field(f)
                .map(|s| format!("{f} {}", fields::format(f, s.mean)))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// One line per window: its span, pairs (`unit`: `pair`, or `frame` for one input), the
/// means of `fields`, what it did not score and its time in alert.
pub fn window_line(w: &Window, fields: &[String], unit: &str) -> String {
    let s = &w.stats;
    let mut line = format!(
        "window {}–{}: {} {unit}{}",
        clock(w.start),
        clock(w.end),
        s.frames,
        if s.frames == 1 { "" } else { "s" }
    );
    let values = window_values(w, fields);
    if !values.is_empty() {
        line.push_str(", ");
        line.push_str(&values);
    }
    if s.skipped > 0 {
        line.push_str(&format!(", {} skipped", s.skipped));
    }
    if s.unmatched_ref > 0 || s.unmatched_dist > 0 {
        line.push_str(&format!(
            ", unmatched {} reference, {} distorted",
            s.unmatched_ref, s.unmatched_dist
        ));
    }
    for a in s
        .alerts
        .iter()
        .filter(|a| a.episodes > 0 || a.seconds > 0.0)
    {
        line.push_str(&format!("; in alert {}: {:.3} s", a.rule, a.seconds));
    }
    line
}

/// One line per alert change: `ALERT raised vmaf<70:2s: vmaf = 63.200 at 00:01:02.040`, or
/// `ALERT cleared ... (since ..., worst ...)`.
pub fn alert_line(a: &AlertChange) -> String {
    let mut line = format!(
        "ALERT {} {}: {} = {} at {}",
        a.state.as_str(),
        a.rule,
        a.field,
        fields::format(&a.field, a.value),
        clock(a.running_time)
    );
    if a.state == AlertState::Cleared {
        let since = a.since.map_or("-".into(), clock);
        let worst = a.worst.map_or("-".into(), |w| fields::format(&a.field, w));
        line.push_str(&format!(" (since {since}, worst {worst})"));
    }
    line
}

/// A line when live alignment changes (`ALIGN locked: offset +1.302 s (+33 frames: the
/// distorted video is later), confidence 0.99 at 00:00:02.038`); `None` for the progress
/// records that repeat the state and offset (in frames) of `last`, the one printed before
/// (updated).
pub fn align_line(a: &AlignRecord, last: &mut Option<(String, Option<i64>)>) -> Option<String> {
    let now = (a.state.clone(), a.offset_frames);
    if a.state == "searching" || last.as_ref() == Some(&now) {
        return None;
    }
    *last = Some(now);
    let offset = match (a.offset, a.offset_frames) {
        (Some(o), Some(f)) => format!(
            "offset {:+.3} s ({f:+} frames: the distorted video is {})",
            o as f64 / 1e9,
            if o >= 0 { "later" } else { "earlier" }
        ),
        _ => "offset unknown".into(),
    };
    Some(format!(
        "ALIGN {}: {offset}, confidence {:.2} at {}{}",
        a.state,
        a.confidence,
        clock(a.running_time),
        if a.relocks > 0 && a.state == "locked" {
            format!(" (re-lock {})", a.relocks)
        } else {
            String::new()
        }
    ))
}

/// The element's warning for a raised alert (`alert raised: RULE (...)`), which the command
/// prints as an `ALERT raised` line instead.
pub fn is_alert_warning(text: &str) -> bool {
    text.starts_with("alert raised: ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_align_line_per_change_not_per_progress_record() {
        let a = |state: &str, frames: Option<i64>, relocks| AlignRecord {
            state: state.into(),
            offset: frames.map(|f| f * 40_000_000 + 1_000_000),
            offset_frames: frames,
            confidence: 0.987,
            running_time: 2_000_000_000,
            relocks,
        };
        let mut last = None;
        assert_eq!(align_line(&a("searching", Some(3), 0), &mut last), None);
        assert_eq!(
            align_line(&a("locked", Some(33), 0), &mut last).as_deref(),
            Some(
                "ALIGN locked: offset +1.321 s (+33 frames: the distorted video is later), \
                 confidence 0.99 at 00:00:02.000"
            )
        );
        assert_eq!(align_line(&a("locked", Some(33), 0), &mut last), None);
        assert!(align_line(&a("lost", Some(33), 0), &mut last).is_some());
        let relock = align_line(&a("locked", Some(-5), 1), &mut last).unwrap();
        assert!(
            relock.contains("-0.199 s (-5 frames: the distorted video is earlier)")
                && relock.ends_with("(re-lock 1)"),
            "{relock}"
        );
    }
    use gstgpumetrics::message::{AlertCount, FieldStats, Summary};

    const MS: u64 = 1_000_000;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(500 * MS));
        assert_eq!(parse_duration("1s"), Ok(1000 * MS));
        assert_eq!(parse_duration("2.5s"), Ok(2500 * MS));
        assert_eq!(parse_duration("1m"), Ok(60_000 * MS));
        assert_eq!(parse_duration(" 0.5 s"), Ok(500 * MS));
        for bad in ["5", "1h", "fast", "-1s", "0s", "0ms", "nans", "1e30s", ""] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert!(parse_duration("5").unwrap_err().contains("needs a unit"));
    }

    #[test]
    fn rois() {
        let r = Roi::parse("10, 20,300,100").unwrap();
        assert_eq!((r.x, r.y, r.width, r.height), (10, 20, 300, 100));
        assert_eq!(r.to_string(), "10,20,300,100");
        assert!(r.check_within(320, 180, "the reference's").is_ok());
        assert!(
            r.check_within(320, 119, "the reference's")
                .unwrap_err()
                .contains("past the reference's 320x119")
        );
        assert!(
            r.check_within(309, 180, "the input's")
                .unwrap_err()
                .contains("to x 310")
        );
        for bad in [
            "1,2,3",
            "1,2,3,4,5",
            "a,0,1,1",
            "0,0,0,10",
            "0,0,10,0",
            "-1,0,1,1",
            "",
        ] {
            assert!(Roi::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn addresses() {
        assert_eq!(parse_address("127.0.0.1:9100").unwrap(), "127.0.0.1:9100");
        assert_eq!(parse_address("[::1]:9100").unwrap(), "[::1]:9100");
        assert_eq!(parse_address("localhost:80").unwrap(), "localhost:80");
        for bad in [
            "9100",
            ":9100",
            "host:",
            "host:0",
            "host:70000",
            "host:http",
        ] {
            assert!(parse_address(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn alert_rules_are_the_elements() {
        let psnr = MetricSet::named("psnr").unwrap();
        assert_eq!(check_alerts(&[], psnr, false), Ok(None));
        let (joined, rules) =
            check_alerts(&["psnr-y<30:1s".into(), "mse-y>50".into()], psnr, false)
                .unwrap()
                .unwrap();
        assert_eq!(joined, "psnr-y<30:1s,mse-y>50");
        assert_eq!(rules.len(), 2);
        let e = check_alerts(&["vmaf<70".into()], psnr, false).unwrap_err();
        assert!(
            e.starts_with("--alert: rule 'vmaf<70' names the field 'vmaf'"),
            "{e}"
        );
        assert!(e.contains("psnr-y"), "{e}");
        let e = check_alerts(&["psnr-y=3".into()], psnr, false).unwrap_err();
        assert!(e.contains("no '<' or '>'"), "{e}");
        let e = check_alerts(&["psnr-y<3".into(), "psnr-y<3".into()], psnr, false).unwrap_err();
        assert!(e.contains("given twice"), "{e}");
        // One input: the no-reference metrics' own fields, not the reference's.
        let nr = metric::no_reference();
        assert!(check_alerts(&["si<10".into()], nr, true).unwrap().is_some());
        assert!(
            check_alerts(&["ref-si<10".into()], nr, false)
                .unwrap()
                .is_some()
        );
        let e = check_alerts(&["ref-si<10".into()], nr, true).unwrap_err();
        assert!(e.contains("'ref-si'"), "{e}");
    }

    #[test]
    fn live_schemes() {
        for live in [
            "udp://127.0.0.1:5000",
            "SRT://host:1",
            "rtsp://cam/stream",
            "rtp://@:5004",
        ] {
            assert!(is_live_uri(live), "{live}");
        }
        for file in ["file:///a.mp4", "http://host/a.mp4", "/tmp/udp://x", "udp"] {
            assert!(!is_live_uri(file), "{file}");
        }
    }

    #[test]
    fn clock_text() {
        assert_eq!(clock(0), "00:00:00.000");
        assert_eq!(clock(62_040 * MS), "00:01:02.040");
        assert_eq!(clock(3_723_004 * MS + 999_999), "01:02:03.004");
    }

    fn stats(mean: f64) -> FieldStats {
        FieldStats {
            mean,
            min: mean,
            max: mean,
            stddev: 0.0,
            harmonic_mean: None,
            pooled: None,
            p1: mean,
            p5: mean,
            p50: mean,
            p95: mean,
            p99: mean,
        }
    }

    #[test]
    fn main_fields_are_each_metrics_first_and_the_watched_ones() {
        let set = MetricSet::named("psnr").unwrap() | MetricSet::named("ssim").unwrap();
        let rules = alerts::parse(
            "mse-y>10,ssim-y<0.9",
            &gstgpumetrics::records::columns_for(set),
        )
        .unwrap();
        let first: Vec<String> = metric::all()
            .filter(|m| set.contains(m.flag))
            .map(|m| m.fields[0].name.to_string())
            .collect();
        let mut want = first.clone();
        want.push("mse-y".into());
        assert_eq!(main_fields(set, &rules), want);
        assert!(first.contains(&"psnr-y".to_string()), "{first:?}");
    }

    #[test]
    fn window_and_alert_lines() {
        let w = Window {
            start: 1500 * MS,
            end: 2000 * MS,
            stats: Summary {
                frames: 15,
                unmatched_ref: 1,
                unmatched_dist: 0,
                skipped: 3,
                unaligned: 0,
                decode: Default::default(),
                fields: vec![
                    ("psnr-y".into(), stats(35.12345)),
                    ("mse-y".into(), stats(20.0)),
                    ("ssim-y".into(), stats(0.9512345)),
                ],
                alerts: vec![
                    AlertCount {
                        rule: "psnr-y<36".into(),
                        episodes: 1,
                        seconds: 0.25,
                    },
                    AlertCount {
                        rule: "ssim-y<0.5".into(),
                        episodes: 0,
                        seconds: 0.0,
                    },
                ],
                events: Vec::new(),
            },
        };
        let fields = ["psnr-y".to_string(), "ssim-y".into(), "vmaf".into()];
        assert_eq!(
            window_line(&w, &fields, "pair"),
            "window 00:00:01.500–00:00:02.000: 15 pairs, psnr-y 35.123, ssim-y 0.95123, 3 \
             skipped, unmatched 1 reference, 0 distorted; in alert psnr-y<36: 0.250 s"
        );
        let raised = AlertChange {
            rule: "vmaf<70:2s".into(),
            field: "vmaf".into(),
            state: AlertState::Raised,
            value: 63.2,
            running_time: 62_040 * MS,
            since: None,
            worst: None,
        };
        let one = Window {
            stats: Summary {
                frames: 1,
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(
            window_line(&one, &fields, "pair"),
            "window 00:00:00.000–00:00:00.000: 1 pair"
        );
        assert_eq!(
            window_line(&w, &fields, "frame"),
            "window 00:00:01.500–00:00:02.000: 15 frames, psnr-y 35.123, ssim-y 0.95123, 3 \
             skipped, unmatched 1 reference, 0 distorted; in alert psnr-y<36: 0.250 s"
        );
        let decimals = fields::meta("vmaf").decimals as usize;
        assert_eq!(
            alert_line(&raised),
            format!(
                "ALERT raised vmaf<70:2s: vmaf = {:.decimals$} at 00:01:02.040",
                63.2
            )
        );
        let cleared = AlertChange {
            state: AlertState::Cleared,
            value: 75.0,
            running_time: 70_000 * MS,
            since: Some(62_040 * MS),
            worst: Some(58.1),
            ..raised
        };
        assert_eq!(
            alert_line(&cleared),
            format!(
                "ALERT cleared vmaf<70:2s: vmaf = {:.decimals$} at 00:01:10.000 (since \
                 00:01:02.040, worst {:.decimals$})",
                75.0, 58.1
            )
        );
        assert!(is_alert_warning(
            "alert raised: vmaf<70 (vmaf = 3 at running time 0:00:01)"
        ));
        assert!(!is_alert_warning("Could not decode"));
    }
}
