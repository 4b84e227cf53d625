// SPDX-License-Identifier: MPL-2.0
//! What the service says as it runs: one event per line on stdout, a JSON object with
//! `time` (UTC, RFC 3339), `channel` (null for the service's own) and `event`, then the
//! event's own keys, ready for a log shipper; or, with `--format table`, the same as a line
//! for people. The channels' threads share one writer, so that lines never interleave.

use std::io::Write;
use std::sync::Mutex;

use gstgpumetrics::message::{AlertChange, AlignRecord, EventRecord, Summary, Window};
use serde_json::{Map, Value, json};

/// `--format` of `gpumetrics monitor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One JSON object per line.
    Jsonl,
    /// One line of text per event.
    Table,
}

/// The service's event writer.
pub struct Events {
    format: Format,
    out: Mutex<Box<dyn Write + Send>>,
}

/// Seconds of a running time in ns, for the events' keys.
fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

impl Events {
    pub fn new(format: Format, out: Box<dyn Write + Send>) -> Events {
        Events {
            format,
            out: Mutex::new(out),
        }
    }

    /// Writes one event of `channel` (none: the service's own). A write error (stdout
    /// closed) is dropped: the service goes on, its Prometheus endpoint still tells.
    pub fn emit(&self, channel: Option<&str>, event: &str, keys: Map<String, Value>) {
        let time = rfc3339(std::time::SystemTime::now());
        let line = match self.format {
            Format::Jsonl => {
                let mut object = Map::new();
                object.insert("time".into(), json!(time));
                object.insert("channel".into(), json!(channel));
                object.insert("event".into(), json!(event));
                object.extend(keys);
                Value::Object(object).to_string()
            }
            Format::Table => {
                let rest: Vec<String> = keys
                    .iter()
                    .map(|(k, v)| match v {
                        Value::String(s) => format!("{k}={s}"),
                        v => format!("{k}={v}"),
                    })
                    .collect();
                format!(
                    "{time} {:<16} {:<10} {}",
                    channel.unwrap_or("-"),
                    event,
                    rest.join(" ")
                )
            }
        };
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(out, "{line}").and_then(|_| out.flush());
    }
}

/// `at` as UTC in RFC 3339 with milliseconds (`2026-12-04T18:53:07.123Z`).
fn rfc3339(at: std::time::SystemTime) -> String {
    let since = at.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, day) = (secs / 86_400, secs % 86_400);
    // Days since 1970-01-01 to the civil date (proleptic Gregorian; H. Hinnant's method).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        day / 3600,
        day / 60 % 60,
        day % 60,
        since.subsec_millis()
    )
}

/// The keys of a window event: its span, pairs and each field's mean.
pub fn window(w: &Window) -> Map<String, Value> {
    let means: Map<String, Value> = w
        .stats
        .fields
        .iter()
        .map(|(name, stats)| (name.clone(), number(stats.mean)))
        .collect();
    let mut keys = Map::new();
    keys.insert("start".into(), json!(secs(w.start)));
    keys.insert("end".into(), json!(secs(w.end)));
    keys.insert("pairs".into(), json!(w.stats.frames));
    keys.insert("means".into(), Value::Object(means));
    keys
}

/// The keys of a black, freeze or stall interval's start or end.
pub fn interval(e: &EventRecord) -> Map<String, Value> {
    let mut keys = Map::new();
    keys.insert("state".into(), json!(e.state));
    keys.insert("input".into(), json!(e.input));
    keys.insert("running_time".into(), json!(secs(e.running_time)));
    if let Some(d) = e.duration {
        keys.insert("duration".into(), json!(secs(d)));
    }
    keys
}

/// The keys of a live alignment change (`align = "auto"`).
pub fn align(a: &AlignRecord) -> Map<String, Value> {
    let mut keys = Map::new();
    keys.insert("state".into(), json!(a.state));
    keys.insert("offset".into(), json!(a.offset.map(|o| o as f64 / 1e9)));
    keys.insert("offset_frames".into(), json!(a.offset_frames));
    keys.insert("confidence".into(), json!(a.confidence));
    keys.insert("running_time".into(), json!(secs(a.running_time)));
    keys.insert("relocks".into(), json!(a.relocks));
    keys
}

/// The keys of an alert rule raised or cleared.
pub fn alert(a: &AlertChange) -> Map<String, Value> {
    let mut keys = Map::new();
    keys.insert("rule".into(), json!(a.rule));
    keys.insert("state".into(), json!(a.state.as_str()));
    keys.insert("field".into(), json!(a.field));
    keys.insert("value".into(), number(a.value));
    keys.insert("running_time".into(), json!(secs(a.running_time)));
    if let Some(w) = a.worst {
        keys.insert("worst".into(), number(w));
    }
    keys
}

/// The keys of a channel's summary, when its pipeline stops.
pub fn summary(s: &Summary) -> Map<String, Value> {
    let means: Map<String, Value> = s
        .fields
        .iter()
        .map(|(name, stats)| (name.clone(), number(stats.mean)))
        .collect();
    let mut keys = Map::new();
    keys.insert("pairs".into(), json!(s.frames));
    keys.insert("unmatched_ref".into(), json!(s.unmatched_ref));
    keys.insert("unmatched_dist".into(), json!(s.unmatched_dist));
    if s.unaligned > 0 {
        keys.insert("unaligned".into(), json!(s.unaligned));
    }
    keys.insert("means".into(), Value::Object(means));
    keys
}

/// A score as JSON: +inf (identical planes) as the string `"inf"`, which JSON has no
/// number for.
fn number(v: f64) -> Value {
    if v.is_finite() {
        json!(v)
    } else {
        json!(v.to_string())
    }
}

/// Keys from pairs, for the events that have a few.
pub fn keys<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A writer the test reads back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn each_event_is_one_json_line_with_time_channel_and_event() {
        let buf = Shared::default();
        let events = Events::new(Format::Jsonl, Box::new(buf.clone()));
        events.emit(Some("news"), "down", keys([("reason", json!("no signal"))]));
        events.emit(None, "reload", Map::new());
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(lines[0]["channel"], "news");
        assert_eq!(lines[0]["event"], "down");
        assert_eq!(lines[0]["reason"], "no signal");
        assert!(lines[0]["time"].as_str().unwrap().ends_with('Z'), "{text}");
        assert_eq!(lines[1]["channel"], Value::Null);
        let buf = Shared::default();
        let table = Events::new(Format::Table, Box::new(buf.clone()));
        table.emit(Some("news"), "down", keys([("reason", json!("no signal"))]));
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        assert!(
            text.contains(" news ") && text.contains("down") && text.contains("reason=no signal"),
            "{text}"
        );
        assert_eq!(number(f64::INFINITY), json!("inf"));
        let at = |s: u64, ms: u64| {
            std::time::UNIX_EPOCH + std::time::Duration::from_millis(s * 1000 + ms)
        };
        assert_eq!(rfc3339(at(0, 0)), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(at(951_782_400, 5)), "2000-02-29T00:00:00.005Z");
        assert_eq!(rfc3339(at(1_796_412_787, 123)), "2026-12-04T19:33:07.123Z");
    }
}
