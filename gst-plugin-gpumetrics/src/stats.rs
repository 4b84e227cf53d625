// SPDX-License-Identifier: MPL-2.0
//! Stats file writers (`stats-file`, `stats-format`).
//!
//! Times are integers in nanoseconds (JSON `null` / empty CSV cell when unknown). Scores are
//! numbers; a non-finite score (PSNR of identical planes is `+inf`) is written as `inf`
//! (JSON: the string `"inf"`, since JSON has no infinity; CSV: the cell `inf`).
//!
//! * `jsonl`: one JSON object per line. Per pair:
//!   `{"type":"frame","frame":0,"pts":0,"running-time":0,"duration":33333333,"psnr-y":38.1,...}`;
//!   last line: `{"type":"summary","frames":N,"unmatched-ref":R,"unmatched-dist":D,
//!   "fields":{"psnr-y":{"mean":..,"min":..,"max":..,"stddev":..,"harmonic-mean":..,
//!   "pooled":.. (PSNR fields only), "p1":..,"p5":..,"p50":..,"p95":..,"p99":..},...}}`.
//! * `json`: one document `{"frames":[<frame objects as in jsonl>],"summary":<summary object>}`,
//!   streamed (the closing part is written when the summary is written, at EOS or stop).
//! * `csv`: header `record,frame,pts,running-time,duration,<metric fields...>`: every field
//!   the run's metrics can produce (declared with [`StatsWriter::columns`]; cells of fields
//!   a pair lacks are empty), so a field that first appears later has its column. Per pair a
//!   row with `record`=`frame`. The summary is the last rows: `record`=`frames`,
//!   `unmatched-ref`, `unmatched-dist` with the count in column `frame`, then one row per
//!   statistic (`record`=`mean`, `min`, `max`, `stddev`, `harmonic-mean`, `pooled`, `p1`, `p5`, `p50`,
//!   `p95`, `p99`) with that statistic in each metric column (empty where undefined). A
//!   record with a field outside the columns (none of the registered metrics makes one)
//!   starts a new section: a new header row, `record` in its first cell, naming the wider
//!   columns.
//!
//! Windows (`window`) are records between the pairs: a `{"type":"window","start":..,"end":..,
//! <the summary's entries>}` object (JSON Lines; among the `frames` of the JSON document), or
//! in CSV the summary's rows prefixed `window-`, with the window's start in `running-time`
//! and its length in `duration`. Summaries and windows have `skipped`, and with alert rules
//! their counts (`alerts`: rule, episodes, seconds; CSV: a row `alert:RULE` with the
//! episodes in `frame` and the time in alert in `duration`, ns).
//!
//! Black and freeze intervals (the `black` and `freeze` metrics) are event records between
//! the pairs, after the record of the frame that decided them: `{"type":"event","event":
//! "black","state":"start","input":"dist","running-time":..}` (`end` adds `"duration"`), in
//! CSV a row `black-start` / `black-end` (`ref-black-start` for the reference input) with the
//! time in `running-time` and the length in `duration`. Summaries count them per event and
//! input (`events`: event, input, intervals, seconds; CSV: a row `events:black` or
//! `events:ref-freeze` with the intervals in `frame` and their total length in `duration`).
//!
//! After a summary the run may go on (a flushing seek after EOS): its records follow the
//! summary and the next summary follows them (in JSON Lines and CSV the last summary is the
//! run's; in JSON the summary is replaced, the document stays one document).

use std::fs::File;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

use serde_json::{Value, json};

use crate::message::{EventRecord, FieldStats, FrameScores, Summary, Window};

/// File layout of the stats file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Jsonl,
    Csv,
    Json,
}

/// Text for a score: shortest round-trip decimal, or `inf` / `-inf` / `nan`.
pub fn format_f64(v: f64) -> String {
    if v.is_finite() {
        // `{}` on f64 prints the shortest representation that round-trips.
        format!("{v}")
    } else if v.is_nan() {
        "nan".into()
    } else if v > 0.0 {
        "inf".into()
    } else {
        "-inf".into()
    }
}

/// Parses a score written by this module (accepts `inf`, `-inf`, `nan`).
pub fn parse_f64(s: &str) -> Option<f64> {
    match s {
        "inf" => Some(f64::INFINITY),
        "-inf" => Some(f64::NEG_INFINITY),
        "nan" => Some(f64::NAN),
        _ => s.parse().ok(),
    }
}

/// JSON value for a score: a number, or the string `"inf"` (`"-inf"`, `"nan"`).
pub fn json_f64(v: f64) -> Value {
    if v.is_finite() {
        json!(v)
    } else {
        Value::String(format_f64(v))
    }
}

/// Reads a score from JSON written by [`json_f64`].
pub fn json_to_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => parse_f64(s),
        _ => None,
    }
}

fn time_json(t: Option<gst::ClockTime>) -> Value {
    t.map_or(Value::Null, |t| json!(t.nseconds()))
}

/// A JSON object with its keys in the given order (values already serialised).
fn ordered_object(entries: &[(&str, String)]) -> String {
    let mut out = String::from("{");
    for (i, (k, v)) in entries.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&Value::String((*k).to_string()).to_string());
        out.push(':');
        out.push_str(v);
    }
    out.push('}');
    out
}

/// Frame record: `type`, `frame`, `pts`, `running-time`, `duration`, then the metric fields
/// in the engine's order.
fn frame_json(rec: &FrameScores) -> String {
    let mut e = vec![
        ("type", json!("frame").to_string()),
        ("frame", json!(rec.frame).to_string()),
        ("pts", time_json(rec.pts).to_string()),
        ("running-time", time_json(rec.running_time).to_string()),
        ("duration", time_json(rec.duration).to_string()),
    ];
    for (name, v) in &rec.scores {
        e.push((name.as_str(), json_f64(*v).to_string()));
    }
    ordered_object(&e)
}

fn stats_json(s: &FieldStats) -> String {
    let e: Vec<(&str, String)> = s
        .entries()
        .into_iter()
        .map(|(k, v)| (k, json_f64(v).to_string()))
        .collect();
    ordered_object(&e)
}

/// The summary's entries after `type` (a window's object has them too).
fn summary_entries(s: &Summary) -> Vec<(&'static str, String)> {
    let fields: Vec<(&str, String)> = s
        .fields
        .iter()
        .map(|(name, st)| (name.as_str(), stats_json(st)))
        .collect();
    let mut e = vec![
        ("frames", json!(s.frames).to_string()),
        ("unmatched-ref", json!(s.unmatched_ref).to_string()),
        ("unmatched-dist", json!(s.unmatched_dist).to_string()),
        ("skipped", json!(s.skipped).to_string()),
        ("fields", ordered_object(&fields)),
    ];
    if !s.alerts.is_empty() {
        let alerts: Vec<Value> = s
            .alerts
            .iter()
            .map(|a| json!({"rule": a.rule, "episodes": a.episodes, "seconds": a.seconds}))
            .collect();
        e.push(("alerts", Value::Array(alerts).to_string()));
    }
    if !s.events.is_empty() {
        let events: Vec<Value> = s
            .events
            .iter()
            .map(|a| {
                json!({"event": a.event, "input": a.input, "intervals": a.intervals,
                       "seconds": a.seconds})
            })
            .collect();
        e.push(("events", Value::Array(events).to_string()));
    }
    e
}

fn event_json(ev: &EventRecord) -> String {
    let mut e = vec![
        ("type", json!("event").to_string()),
        ("event", json!(ev.event).to_string()),
        ("state", json!(ev.state).to_string()),
        ("input", json!(ev.input).to_string()),
        ("running-time", json!(ev.running_time).to_string()),
    ];
    if let Some(d) = ev.duration {
        e.push(("duration", json!(d).to_string()));
    }
    ordered_object(&e)
}

fn summary_json(s: &Summary) -> String {
    let mut e = vec![("type", json!("summary").to_string())];
    e.extend(summary_entries(s));
    ordered_object(&e)
}

fn window_json(w: &Window) -> String {
    let mut e = vec![
        ("type", json!("window").to_string()),
        ("start", json!(w.start).to_string()),
        ("end", json!(w.end).to_string()),
    ];
    e.extend(summary_entries(&w.stats));
    ordered_object(&e)
}

const CSV_FIXED: [&str; 5] = ["record", "frame", "pts", "running-time", "duration"];
const CSV_STATS: [&str; 11] = [
    "mean",
    "min",
    "max",
    "stddev",
    "harmonic-mean",
    "pooled",
    "p1",
    "p5",
    "p50",
    "p95",
    "p99",
];

/// The CSV columns of a run of `metrics`: every field they can produce, in registry order.
pub fn columns_for(metrics: gpumetrics_engine::MetricSet) -> Vec<&'static str> {
    gpumetrics_engine::metric::all()
        .filter(|m| metrics.contains(m.flag))
        .flat_map(|m| m.fields.iter().map(|f| f.name))
        .collect()
}

/// Removes the last `n` bytes written to `W` (a JSON document's closing part, replaced when
/// records follow a summary).
type Rewind<W> = fn(&mut W, u64) -> io::Result<()>;

/// Writes records of one run to `W` in one [`Format`]. Every record is flushed to `W` as it is
/// written, so a crash or error loses nothing already measured.
///
/// A run may go on after a summary (a flushing seek after EOS replays part of the input):
/// its records follow, and the next summary is written after them. JSON Lines and CSV then
/// hold several summaries (the last one is the run's); a JSON document has its closing part
/// (the summary) replaced, so that it stays one document with the latest summary.
pub struct StatsWriter<W: Write> {
    format: Format,
    out: W,
    /// CSV: the columns every record is written with, declared before the first record
    /// ([`StatsWriter::columns`]: every field the run can produce).
    planned: Vec<String>,
    /// CSV: metric columns of the current section, once its header is written.
    csv_fields: Option<Vec<String>>,
    /// JSON: number of frame objects written so far.
    json_count: u64,
    /// JSON: length of the closing part the last summary wrote.
    json_tail: u64,
    rewind: Option<Rewind<W>>,
    /// The summary written last, if no record followed it.
    last_summary: Option<Summary>,
}

fn rewind_file(w: &mut BufWriter<File>, n: u64) -> io::Result<()> {
    w.flush()?;
    let file = w.get_mut();
    let end = file.seek(SeekFrom::End(0))?;
    let to = end
        .checked_sub(n)
        .ok_or_else(|| io::Error::other("the stats file is shorter than what was written to it"))?;
    file.set_len(to)?;
    file.seek(SeekFrom::Start(to))?;
    Ok(())
}

impl StatsWriter<BufWriter<File>> {
    /// Creates (truncates) `path`.
    pub fn create(path: &Path, format: Format) -> io::Result<Self> {
        let mut w = Self::new(BufWriter::new(File::create(path)?), format);
        w.rewind = Some(rewind_file);
        Ok(w)
    }
}

impl StatsWriter<Vec<u8>> {
    /// A writer into memory (what a file would hold, for tests and callers that buffer).
    pub fn in_memory(format: Format) -> Self {
        let mut w = Self::new(Vec::new(), format);
        w.rewind = Some(|v: &mut Vec<u8>, n| {
            let len = v.len().saturating_sub(n as usize);
            v.truncate(len);
            Ok(())
        });
        w
    }
}

impl<W: Write> StatsWriter<W> {
    pub fn new(out: W, format: Format) -> Self {
        StatsWriter {
            format,
            out,
            planned: Vec::new(),
            csv_fields: None,
            json_count: 0,
            json_tail: 0,
            rewind: None,
            last_summary: None,
        }
    }

    /// Declares the CSV columns: every field the run's metrics can produce, in this order,
    /// so that a field that first appears after the first record (MS-SSIM once the frames
    /// are large enough, psnr-r/g/b after a change to RGB) has its column. A record with a
    /// field outside them still loses nothing: it starts a new section (see
    /// [`StatsWriter::write_frame`]). No effect on the JSON layouts.
    pub fn columns<S: Into<String>>(mut self, fields: impl IntoIterator<Item = S>) -> Self {
        self.planned = fields.into_iter().map(Into::into).collect();
        self
    }

    pub fn format(&self) -> Format {
        self.format
    }

    /// True when the last record written is a summary.
    pub fn is_finished(&self) -> bool {
        self.last_summary.is_some()
    }

    /// Writes `lead`, `record` and a newline in one piece and flushes, so that a record
    /// reaches the file whole or not at all (short of a full disk).
    fn write_line(&mut self, mut lead: String, record: &str) -> io::Result<()> {
        lead.push_str(record);
        lead.push('\n');
        self.out.write_all(lead.as_bytes())?;
        self.out.flush()
    }

    fn csv_row(&mut self, cells: &[String]) -> io::Result<()> {
        let mut w = csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(&mut self.out);
        w.write_record(cells).map_err(io::Error::other)?;
        w.flush()
    }

    /// Makes the CSV columns hold `fields`: the first header (the planned columns and any
    /// of `fields` beyond them), or a new header row, starting a new section, when `fields`
    /// has one the current columns lack.
    fn ensure_csv_columns<'a>(&mut self, fields: impl Iterator<Item = &'a str>) -> io::Result<()> {
        let mut columns = self
            .csv_fields
            .clone()
            .unwrap_or_else(|| self.planned.clone());
        let before = columns.len();
        for f in fields {
            if !columns.iter().any(|c| c == f) {
                columns.push(f.to_string());
            }
        }
        if self.csv_fields.is_some() && columns.len() == before {
            return Ok(());
        }
        let mut header: Vec<String> = CSV_FIXED.iter().map(|s| s.to_string()).collect();
        header.extend(columns.iter().cloned());
        self.csv_fields = Some(columns);
        self.csv_row(&header)
    }

    /// The rows of a summary (or, with `prefix` `window-`, a window): the counts in column
    /// `frame`, one row per statistic, one row per alert rule (`alert:RULE`, its episodes in
    /// `frame` and its time in alert in `duration`, ns). `span` (start, length) fills
    /// `running-time` and `duration` of the count and statistic rows.
    fn csv_stats(&mut self, prefix: &str, s: &Summary, span: Option<(u64, u64)>) -> io::Result<()> {
        self.ensure_csv_columns(s.fields.iter().map(|(n, _)| n.as_str()))?;
        let fields = self.csv_fields.clone().unwrap_or_default();
        let width = CSV_FIXED.len() + fields.len();
        let lead = |record: String, frame: String| {
            let mut row = vec![record, frame, String::new()];
            match span {
                Some((start, len)) => row.extend([start.to_string(), len.to_string()]),
                None => row.extend([String::new(), String::new()]),
            }
            row
        };
        for (record, count) in [
            ("frames", s.frames),
            ("unmatched-ref", s.unmatched_ref),
            ("unmatched-dist", s.unmatched_dist),
            ("skipped", s.skipped),
        ] {
            let mut row = lead(format!("{prefix}{record}"), count.to_string());
            row.resize(width, String::new());
            self.csv_row(&row)?;
        }
        for stat in CSV_STATS {
            let mut row = lead(format!("{prefix}{stat}"), String::new());
            for f in &fields {
                let v = s.field(f).and_then(|st| {
                    st.entries()
                        .into_iter()
                        .find(|(k, _)| *k == stat)
                        .map(|(_, v)| v)
                });
                row.push(v.map_or(String::new(), format_f64));
            }
            self.csv_row(&row)?;
        }
        for a in &s.alerts {
            let mut row = vec![
                format!("{prefix}alert:{}", a.rule),
                a.episodes.to_string(),
                String::new(),
                span.map_or(String::new(), |(start, _)| start.to_string()),
                ((a.seconds * 1e9).round() as u64).to_string(),
            ];
            row.resize(width, String::new());
            self.csv_row(&row)?;
        }
        for e in &s.events {
            let prefix = format!(
                "{prefix}events:{}",
                if e.input == "ref" { "ref-" } else { "" }
            );
            let mut row = vec![
                format!("{prefix}{}", e.event),
                e.intervals.to_string(),
                String::new(),
                span.map_or(String::new(), |(start, _)| start.to_string()),
                ((e.seconds * 1e9).round() as u64).to_string(),
            ];
            row.resize(width, String::new());
            self.csv_row(&row)?;
        }
        Ok(())
    }

    /// Removes the JSON closing part the last summary wrote, so that records can follow.
    fn reopen_json(&mut self) -> io::Result<()> {
        let rewind = self.rewind.ok_or_else(|| {
            io::Error::other(
                "this JSON output cannot be rewritten: records cannot follow its summary",
            )
        })?;
        self.out.flush()?;
        rewind(&mut self.out, self.json_tail)?;
        self.json_tail = 0;
        Ok(())
    }

    /// A record object of the JSON layouts (a frame or a window): a line of JSON Lines, or
    /// the next element of the JSON document's `frames` array.
    fn write_object(&mut self, object: &str) -> io::Result<()> {
        if self.last_summary.take().is_some() && self.format == Format::Json {
            self.reopen_json()?;
        }
        match self.format {
            Format::Jsonl => self.write_line(String::new(), object),
            Format::Json => {
                // The separator leads, so that each line is complete when it is written.
                let lead = if self.json_count == 0 {
                    "{\"frames\":[\n"
                } else {
                    ","
                };
                self.json_count += 1;
                self.write_line(lead.into(), object)
            }
            Format::Csv => unreachable!("CSV rows are written by the callers"),
        }
    }

    /// A window's record: in JSON an object with `"type":"window"` (among the frames of the
    /// JSON document), in CSV the summary's rows prefixed `window-`, with the window's start
    /// in `running-time` and its length in `duration`.
    pub fn write_window(&mut self, w: &Window) -> io::Result<()> {
        match self.format {
            Format::Jsonl | Format::Json => self.write_object(&window_json(w))?,
            Format::Csv => {
                self.last_summary = None;
                self.csv_stats(
                    "window-",
                    &w.stats,
                    Some((w.start, w.end.saturating_sub(w.start))),
                )?
            }
        }
        self.out.flush()
    }

    /// An event's record (a black or freeze interval starting or ending): in JSON an object
    /// with `"type":"event"` (among the frames of the JSON document), in CSV a row whose
    /// `record` is `EVENT-STATE` (`black-start`, `freeze-end`; `ref-` before it for the
    /// reference input) with the time in `running-time` and, at the end, the length in
    /// `duration`.
    pub fn write_event(&mut self, ev: &EventRecord) -> io::Result<()> {
        match self.format {
            Format::Jsonl | Format::Json => self.write_object(&event_json(ev))?,
            Format::Csv => {
                self.last_summary = None;
                self.ensure_csv_columns(std::iter::empty())?;
                let prefix = if ev.input == "ref" { "ref-" } else { "" };
                let mut row = vec![
                    format!("{prefix}{}-{}", ev.event, ev.state),
                    String::new(),
                    String::new(),
                    ev.running_time.to_string(),
                    ev.duration.map_or(String::new(), |d| d.to_string()),
                ];
                row.extend(
                    self.csv_fields
                        .as_deref()
                        .unwrap_or_default()
                        .iter()
                        .map(|_| String::new()),
                );
                self.csv_row(&row)?;
            }
        }
        self.out.flush()
    }

    pub fn write_frame(&mut self, rec: &FrameScores) -> io::Result<()> {
        match self.format {
            Format::Jsonl | Format::Json => self.write_object(&frame_json(rec))?,
            Format::Csv => {
                self.last_summary = None;
                self.ensure_csv_columns(rec.scores.iter().map(|(n, _)| n.as_str()))?;
                let t = |t: Option<gst::ClockTime>| {
                    t.map_or(String::new(), |t| t.nseconds().to_string())
                };
                let mut row = vec![
                    "frame".to_string(),
                    rec.frame.to_string(),
                    t(rec.pts),
                    t(rec.running_time),
                    t(rec.duration),
                ];
                for f in self.csv_fields.as_deref().unwrap_or_default() {
                    row.push(rec.get(f).map_or(String::new(), format_f64));
                }
                self.csv_row(&row)?;
            }
        }
        self.out.flush()
    }

    /// Writes the summary after the records and flushes. A summary equal to the one written
    /// last, with no record since, is not written again (the element's stop after EOS).
    pub fn write_summary(&mut self, s: &Summary) -> io::Result<()> {
        if self.last_summary.as_ref() == Some(s) {
            return Ok(());
        }
        if self.last_summary.is_some() && self.format == Format::Json {
            self.reopen_json()?;
        }
        match self.format {
            Format::Jsonl => self.write_line(String::new(), &summary_json(s))?,
            Format::Json => {
                let lead = if self.json_count == 0 {
                    "{\"frames\":[],\n\"summary\":"
                } else {
                    "],\n\"summary\":"
                };
                let tail = summary_json(s) + "}";
                self.write_line(lead.into(), &tail)?;
                self.json_tail = (lead.len() + tail.len() + 1) as u64;
            }
            Format::Csv => self.csv_stats("", s, None)?,
        }
        self.last_summary = Some(s.clone());
        self.out.flush()
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(i: u64, y: f64) -> FrameScores {
        FrameScores {
            frame: i,
            pts: Some(gst::ClockTime::from_mseconds(40 * i)),
            running_time: Some(gst::ClockTime::from_mseconds(40 * i)),
            duration: None,
            scores: vec![("psnr-y".into(), y), ("mse-y".into(), 1.5)],
        }
    }

    fn summary() -> Summary {
        let st = FieldStats {
            mean: f64::INFINITY,
            min: 30.0,
            max: f64::INFINITY,
            stddev: 0.0,
            harmonic_mean: None,
            // MSE 65.025 and 0 (8 bits): the PSNR of their mean MSE.
            pooled: Some(33.010_299_956_639_81),
            p1: 30.0,
            p5: 30.0,
            p50: f64::INFINITY,
            p95: f64::INFINITY,
            p99: f64::INFINITY,
        };
        Summary {
            frames: 2,
            unmatched_ref: 1,
            unmatched_dist: 0,
            fields: vec![
                ("psnr-y".into(), st),
                ("mse-y".into(), FieldStats::default()),
            ],
            ..Default::default()
        }
    }

    fn write(format: Format) -> String {
        let mut w = StatsWriter::in_memory(format);
        w.write_frame(&rec(0, 30.0)).unwrap();
        w.write_frame(&rec(1, f64::INFINITY)).unwrap();
        w.write_summary(&summary()).unwrap();
        w.write_summary(&summary()).unwrap(); // ignored
        String::from_utf8(w.into_inner()).unwrap()
    }

    #[test]
    fn jsonl() {
        let text = write(Format::Jsonl);
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 3);
        // Keys keep their documented order.
        assert!(text.starts_with(
            "{\"type\":\"frame\",\"frame\":0,\"pts\":0,\"running-time\":0,\"duration\":null,\"psnr-y\":30.0,"
        ));
        assert!(text.lines().nth(2).unwrap().starts_with(
            "{\"type\":\"summary\",\"frames\":2,\"unmatched-ref\":1,\"unmatched-dist\":0,\"skipped\":0,\"fields\":{\"psnr-y\":{\"mean\":\"inf\",\"min\":30.0,"
        ));
        assert_eq!(lines[0]["type"], "frame");
        assert_eq!(lines[0]["pts"], 0);
        assert_eq!(lines[0]["duration"], Value::Null);
        assert_eq!(json_to_f64(&lines[0]["psnr-y"]), Some(30.0));
        assert_eq!(lines[1]["psnr-y"], "inf");
        assert_eq!(lines[1]["running-time"], 40_000_000);
        assert_eq!(lines[2]["type"], "summary");
        assert_eq!(lines[2]["unmatched-ref"], 1);
        assert_eq!(lines[2]["fields"]["psnr-y"]["mean"], "inf");
        assert_eq!(lines[2]["fields"]["psnr-y"]["min"], 30.0);
        assert!(lines[2]["fields"]["psnr-y"].get("harmonic-mean").is_none());
        assert_eq!(
            json_to_f64(&lines[2]["fields"]["psnr-y"]["pooled"]),
            Some(33.010_299_956_639_81)
        );
    }

    #[test]
    fn every_record_is_a_complete_line_when_written() {
        // What a SIGKILL right after a record leaves: whole lines, each one parseable.
        for format in [Format::Jsonl, Format::Csv, Format::Json] {
            let mut w = StatsWriter::new(Vec::new(), format);
            for i in 0..3 {
                w.write_frame(&rec(i, 30.0 + i as f64)).unwrap();
                let text = String::from_utf8(w.out.clone()).unwrap();
                assert!(text.ends_with('\n'), "{format:?} after frame {i}: {text:?}");
                let last = text.lines().last().unwrap();
                match format {
                    Format::Jsonl => {
                        let v: Value = serde_json::from_str(last).unwrap();
                        assert_eq!(v["frame"], i);
                    }
                    Format::Json => {
                        // A frame line is the object, after the separator of the one before.
                        let v: Value = serde_json::from_str(last.trim_start_matches(','))
                            .unwrap_or_else(|e| panic!("{last:?}: {e}"));
                        assert_eq!(v["frame"], i);
                    }
                    Format::Csv => assert!(last.starts_with(&format!("frame,{i},"))),
                }
            }
        }
    }

    #[test]
    fn json_document() {
        let v: Value = serde_json::from_str(&write(Format::Json)).unwrap();
        assert_eq!(v["frames"].as_array().unwrap().len(), 2);
        assert_eq!(v["frames"][1]["psnr-y"], "inf");
        assert_eq!(v["summary"]["frames"], 2);
        // Empty run is still a valid document.
        let mut w = StatsWriter::new(Vec::new(), Format::Json);
        w.write_summary(&Summary::default()).unwrap();
        let v: Value = serde_json::from_slice(&w.into_inner()).unwrap();
        assert_eq!(v["frames"].as_array().unwrap().len(), 0);
    }

    #[test]
    fn csv_rows() {
        let text = write(Format::Csv);
        let mut r = csv::Reader::from_reader(text.as_bytes());
        let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
        assert_eq!(
            header,
            [
                "record",
                "frame",
                "pts",
                "running-time",
                "duration",
                "psnr-y",
                "mse-y"
            ]
        );
        let rows: Vec<csv::StringRecord> = r.records().map(|r| r.unwrap()).collect();
        assert_eq!(rows.len(), 2 + 4 + 11);
        assert_eq!(&rows[0][0], "frame");
        assert_eq!(&rows[0][4], "");
        assert_eq!(parse_f64(&rows[0][5]), Some(30.0));
        assert_eq!(&rows[1][5], "inf");
        assert_eq!(&rows[2][0], "frames");
        assert_eq!(&rows[2][1], "2");
        assert_eq!(&rows[3][0], "unmatched-ref");
        assert_eq!(&rows[3][1], "1");
        assert_eq!(&rows[5][0], "skipped");
        assert_eq!(&rows[6][0], "mean");
        assert_eq!(&rows[6][5], "inf");
        assert_eq!(&rows[10][0], "harmonic-mean");
        assert_eq!(&rows[10][5], "");
        assert_eq!(&rows[11][0], "pooled");
        assert_eq!(parse_f64(&rows[11][5]), Some(33.010_299_956_639_81));
        assert_eq!(&rows[16][0], "p99");
    }

    fn late(i: u64) -> FrameScores {
        let mut r = rec(i, 31.0);
        r.scores.push(("ms-ssim".into(), 0.97));
        r
    }

    #[test]
    fn csv_columns_are_fixed_for_the_run_so_a_late_field_is_kept() {
        // Issue 20: MS-SSIM appears after a caps change; the file kept the first columns.
        let mut w = StatsWriter::in_memory(Format::Csv).columns(["psnr-y", "mse-y", "ms-ssim"]);
        w.write_frame(&rec(0, 30.0)).unwrap();
        w.write_frame(&late(1)).unwrap();
        w.write_summary(&summary()).unwrap();
        let text = String::from_utf8(w.into_inner()).unwrap();
        let mut r = csv::Reader::from_reader(text.as_bytes());
        assert_eq!(&r.headers().unwrap()[7], "ms-ssim");
        let rows: Vec<csv::StringRecord> = r.records().map(|r| r.unwrap()).collect();
        assert_eq!((&rows[0][7], &rows[1][7]), ("", "0.97"), "{text}");
        assert_eq!(rows.iter().filter(|r| &r[0] == "record").count(), 0);
    }

    #[test]
    fn csv_field_outside_the_columns_starts_a_new_section() {
        let mut w = StatsWriter::in_memory(Format::Csv).columns(["psnr-y"]);
        w.write_frame(&rec(0, 30.0)).unwrap();
        w.write_frame(&late(1)).unwrap();
        w.write_frame(&late(2)).unwrap();
        let text = String::from_utf8(w.into_inner()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        // The first record's fields beyond the declared columns widen the first header.
        assert_eq!(
            lines[0], "record,frame,pts,running-time,duration,psnr-y,mse-y",
            "{text}"
        );
        assert_eq!(lines[1], "frame,0,0,0,,30,1.5");
        assert_eq!(
            lines[2],
            "record,frame,pts,running-time,duration,psnr-y,mse-y,ms-ssim"
        );
        assert_eq!(lines[3], "frame,1,40000000,40000000,,31,1.5,0.97");
        assert_eq!(lines.len(), 5, "one header per section: {text}");
    }

    #[test]
    fn records_after_a_summary_continue_the_file() {
        // A flushing seek after EOS: the replayed pairs and a second summary follow.
        let second = Summary {
            frames: 3,
            ..summary()
        };
        for format in [Format::Jsonl, Format::Csv, Format::Json] {
            let mut w = StatsWriter::in_memory(format).columns(["psnr-y", "mse-y"]);
            w.write_frame(&rec(0, 30.0)).unwrap();
            w.write_frame(&rec(1, 31.0)).unwrap();
            w.write_summary(&summary()).unwrap();
            assert!(w.is_finished());
            w.write_frame(&rec(2, 32.0)).unwrap();
            assert!(!w.is_finished());
            w.write_summary(&second).unwrap();
            w.write_summary(&second).unwrap(); // the same again: not repeated
            let text = String::from_utf8(w.into_inner()).unwrap();
            match format {
                Format::Jsonl => {
                    let types: Vec<String> = text
                        .lines()
                        .map(|l| serde_json::from_str::<Value>(l).unwrap()["type"].to_string())
                        .collect();
                    assert_eq!(
                        types,
                        [
                            "\"frame\"",
                            "\"frame\"",
                            "\"summary\"",
                            "\"frame\"",
                            "\"summary\""
                        ]
                    );
                    assert!(text.lines().last().unwrap().contains("\"frames\":3"));
                }
                Format::Json => {
                    let v: Value =
                        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
                    assert_eq!(v["frames"].as_array().unwrap().len(), 3, "{text}");
                    assert_eq!(v["frames"][2]["frame"], 2);
                    assert_eq!(v["summary"]["frames"], 3);
                }
                Format::Csv => {
                    let records: Vec<&str> = text
                        .lines()
                        .map(|l| l.split(',').next().unwrap())
                        .filter(|r| *r == "frame" || *r == "frames")
                        .collect();
                    assert_eq!(records, ["frame", "frame", "frames", "frame", "frames"]);
                    assert!(text.contains("\nframes,3,"), "{text}");
                }
            }
        }
    }

    #[test]
    fn events_are_records_and_counted_in_the_summary() {
        let ev = |state: &str, input: &str, duration| EventRecord {
            event: "black".into(),
            state: state.into(),
            input: input.into(),
            running_time: 2_000_000_000,
            duration,
        };
        let with_events = Summary {
            events: vec![crate::message::EventCount {
                event: "black".into(),
                input: "ref".into(),
                intervals: 1,
                seconds: 2.5,
            }],
            ..summary()
        };
        for format in [Format::Jsonl, Format::Json, Format::Csv] {
            let mut w = StatsWriter::in_memory(format).columns(["psnr-y"]);
            w.write_frame(&rec(0, 30.0)).unwrap();
            w.write_event(&ev("start", "dist", None)).unwrap();
            w.write_event(&ev("end", "ref", Some(2_500_000_000)))
                .unwrap();
            w.write_summary(&with_events).unwrap();
            let text = String::from_utf8(w.into_inner()).unwrap();
            match format {
                Format::Csv => {
                    assert!(text.contains("\nblack-start,,,2000000000,,,\n"), "{text}");
                    assert!(
                        text.contains("\nref-black-end,,,2000000000,2500000000,,\n"),
                        "{text}"
                    );
                    assert!(
                        text.contains("\nevents:ref-black,1,,,2500000000,"),
                        "{text}"
                    );
                }
                Format::Jsonl => {
                    let v: Vec<Value> = text
                        .lines()
                        .map(|l| serde_json::from_str(l).unwrap())
                        .collect();
                    assert_eq!(v[1]["type"], "event");
                    assert_eq!(v[1]["state"], "start");
                    assert!(v[1].get("duration").is_none());
                    assert_eq!(v[2]["input"], "ref");
                    assert_eq!(v[2]["duration"], 2_500_000_000u64);
                    assert_eq!(v[3]["events"][0]["intervals"], 1);
                }
                Format::Json => {
                    let v: Value = serde_json::from_str(&text).unwrap();
                    assert_eq!(v["frames"][1]["event"], "black");
                    assert_eq!(v["summary"]["events"][0]["seconds"], 2.5);
                }
            }
        }
    }

    #[test]
    fn json_summary_without_records_after_it_is_replaced() {
        let mut w = StatsWriter::in_memory(Format::Json);
        w.write_summary(&summary()).unwrap();
        w.write_summary(&Summary {
            unmatched_dist: 4,
            ..summary()
        })
        .unwrap();
        let v: Value = serde_json::from_slice(&w.into_inner()).unwrap();
        assert_eq!(v["summary"]["unmatched-dist"], 4);
        // A writer that cannot rewrite (stdout) says so instead of writing an invalid document.
        let mut w = StatsWriter::new(Vec::new(), Format::Json);
        w.write_summary(&summary()).unwrap();
        assert!(w.write_frame(&rec(0, 1.0)).is_err());
    }

    #[test]
    fn a_file_is_rewritten_in_place() {
        let path =
            std::env::temp_dir().join(format!("gpumetrics-stats-{}.json", std::process::id()));
        let mut w = StatsWriter::create(&path, Format::Json).unwrap();
        w.write_frame(&rec(0, 30.0)).unwrap();
        w.write_summary(&summary()).unwrap();
        w.write_frame(&rec(1, 30.0)).unwrap();
        w.write_summary(&summary()).unwrap();
        drop(w);
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(v["frames"].as_array().unwrap().len(), 2);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn windows_are_records_marked_as_such() {
        let window = Window {
            start: 1_000_000_000,
            end: 2_000_000_000,
            stats: Summary {
                alerts: vec![crate::message::AlertCount {
                    rule: "psnr-y<35:1s".into(),
                    episodes: 1,
                    seconds: 0.5,
                }],
                ..summary()
            },
        };
        for format in [Format::Jsonl, Format::Json, Format::Csv] {
            let mut w = StatsWriter::in_memory(format).columns(["psnr-y", "mse-y"]);
            w.write_frame(&rec(0, 30.0)).unwrap();
            w.write_window(&window).unwrap();
            w.write_summary(&summary()).unwrap();
            let text = String::from_utf8(w.into_inner()).unwrap();
            match format {
                Format::Jsonl => {
                    let v: Value = serde_json::from_str(text.lines().nth(1).unwrap()).unwrap();
                    assert_eq!(v["type"], "window");
                    assert_eq!(
                        (v["start"].as_u64(), v["end"].as_u64()),
                        (Some(1_000_000_000), Some(2_000_000_000))
                    );
                    assert_eq!(v["fields"]["psnr-y"]["min"], 30.0);
                    assert_eq!(v["alerts"][0]["rule"], "psnr-y<35:1s");
                    assert_eq!(v["alerts"][0]["seconds"], 0.5);
                }
                Format::Json => {
                    let v: Value = serde_json::from_str(&text).unwrap();
                    assert_eq!(v["frames"][1]["type"], "window");
                    assert_eq!(v["summary"]["frames"], 2);
                }
                Format::Csv => {
                    let rows: Vec<&str> = text.lines().collect();
                    assert_eq!(rows[2], "window-frames,2,,1000000000,1000000000,,");
                    assert!(
                        rows.contains(&"window-alert:psnr-y<35:1s,1,,1000000000,500000000,,"),
                        "{text}"
                    );
                    assert!(
                        rows.iter()
                            .any(|r| r.starts_with("window-p99,,,1000000000,1000000000,inf")),
                        "{text}"
                    );
                    assert!(rows.iter().any(|r| r.starts_with("frames,2,")), "{text}");
                }
            }
        }
    }

    #[test]
    fn f64_text_roundtrip() {
        for v in [
            0.1,
            38.123456789012345,
            1e-300,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            assert_eq!(parse_f64(&format_f64(v)), Some(v));
        }
    }
}
