// SPDX-License-Identifier: MPL-2.0
//! The records of a run as text: JSON Lines (`jsonl`), one JSON document (`json`) and CSV
//! (`csv`), for the per-pair records ([`FrameScores`]), the windows ([`Window`]), the black
//! and freeze events ([`EventRecord`]) and the summary ([`Summary`]). One writer,
//! [`RecordWriter`], for the element's `stats-file` and the `gpumetrics` command's
//! `--format jsonl|json|csv`; each keeps its own documented layout ([`Style`]).
//!
//! # Scores that are not finite
//!
//! A PSNR of identical planes is +inf (no finite value exists); no metric makes NaN.
//!
//! * JSON (both layouts, `jsonl` and `json`): +inf is `null`, and so is any other
//!   non-finite score (JSON has no infinity). Every score key stays numeric: a float column
//!   with NaN in pandas, `null` for jq, `Option<f64>` for serde_json. Nothing is made up
//!   (libvmaf caps PSNR at 60 dB for 8 bits, which would put a number in the means that no
//!   frame has). [`json_to_f64`] reads `null` back as +inf.
//! * CSV: +inf is the cell `inf` (what FFmpeg's psnr filter prints; pandas and `float()`
//!   read it), `-inf` and `nan` likewise ([`format_f64`], [`parse_f64`]).
//!
//! Elsewhere (messages, meta) a score is a `gdouble`, +inf an infinity.
//!
//! Numbers are written in their shortest round-trip decimal form; times are integer
//! nanoseconds (JSON `null` / an empty CSV cell when unknown). Keys are the registry's field
//! names (docs/METRICS.md) and the summary's statistic names, in the order given below.
//!
//! # The element's stats file ([`Style::StatsFile`])
//!
//! * `jsonl`: one JSON object per line. Per pair:
//!   `{"type":"frame","frame":0,"pts":0,"running-time":0,"duration":33333333,"psnr-y":38.1,...}`;
//!   last line: `{"type":"summary","frames":N,"unmatched-ref":R,"unmatched-dist":D,
//!   "skipped":S,"fields":{"psnr-y":{"mean":..,"min":..,"max":..,"stddev":..,
//!   "harmonic-mean":.. (where defined),"pooled":.. (PSNR fields only),"p1":..,"p5":..,
//!   "p50":..,"p95":..,"p99":..},...}}`.
//! * `json`: one document `{"frames":[<frame objects as in jsonl>],"summary":<summary
//!   object>}`, streamed (the closing part is written when the summary is written, at EOS or
//!   stop).
//! * `csv`: header `record,frame,pts,running-time,duration,<metric fields...>`: every field
//!   the run's metrics can produce (declared with [`RecordWriter::columns`]; cells of fields
//!   a pair lacks are empty), so a field that first appears later has its column. Per pair a
//!   row with `record`=`frame`. The summary is the last rows: `record`=`frames`,
//!   `unmatched-ref`, `unmatched-dist`, `skipped` with the count in column `frame`, then one
//!   row per statistic (`record`=`mean`, `min`, `max`, `stddev`, `harmonic-mean`, `pooled`,
//!   `p1`, `p5`, `p50`, `p95`, `p99`) with that statistic in each metric column (empty where
//!   undefined). A record with a field outside the columns (none of the registered metrics
//!   makes one) starts a new section: a new header row, `record` in its first cell, naming
//!   the wider columns.
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
//!
//! # The command's records ([`Style::Command`])
//!
//! In layouts that pandas, jq and serde_json load into typed columns without cleaning:
//!
//! * `csv`: a header `frame,pts,running-time,duration,<fields>` (every field the run's
//!   metrics can produce, in registry order, so the columns do not depend on the content),
//!   then one row per compared pair and nothing else: `frame` is an integer column, times
//!   are integer nanoseconds (empty when unknown), a score the pair lacks is an empty cell.
//!   The summary is the command's table on stdout, and in the JSON layouts.
//! * `jsonl`: a `header` record, then `frame` records, `window` and `event` records where
//!   the element posted them, and the `summary` last; each has `type`.
//! * `json`: one document `{"header":..,"frames":[..],"windows":[..],"events":[..],
//!   "summary":..}`, the frames streamed as they are measured.
//!
//! The summary has every statistic of every field, the same keys in every run:
//! `"mean"`, `"harmonic-mean"` (`null` where undefined), `"min"`, `"max"`, `"stddev"`,
//! `"p1"` ... `"p99"`, then `"pooled"` for the PSNR fields; and always `alerts` and `events`
//! (empty arrays without any). An event's `duration` is `null` at its start.
//!
//! With several distorted files (`gpumetrics REF DIST1 DIST2 ...`) every record says which
//! one it belongs to: CSV has a first column `distorted`, the JSON records a `distorted`
//! key after `type` (the file as given), jsonl has one `summary` record per file and json a
//! `summary` array of them. With one distorted file the layouts have no such key.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::Path;

use gpumetrics_engine::{Field, MetricSet};
use serde::Serialize;
use serde_json::{Value, json};

use crate::message::{AlignRecord, EventRecord, FieldStats, FrameScores, Summary, Window};

/// File layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Jsonl,
    Json,
    Csv,
}

/// Whose layout (see the module's documentation): they share the records' objects and the
/// rules for numbers, and differ in what surrounds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// The element's `stats-file`.
    StatsFile,
    /// The `gpumetrics` command's `--format jsonl|json|csv`.
    Command,
}

/// Text for a score: shortest round-trip decimal, or `inf` / `-inf` / `nan` (a CSV cell).
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

/// Parses a score written by [`format_f64`] (accepts `inf`, `-inf`, `nan`).
pub fn parse_f64(s: &str) -> Option<f64> {
    match s {
        "inf" => Some(f64::INFINITY),
        "-inf" => Some(f64::NEG_INFINITY),
        "nan" => Some(f64::NAN),
        _ => s.parse().ok(),
    }
}

/// JSON value for a score: a number, or `null` for a non-finite score.
pub fn json_f64(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

/// Reads a score from JSON written by [`json_f64`]: `null` is +inf (the one non-finite
/// score a metric makes).
pub fn json_to_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::Null => Some(f64::INFINITY),
        _ => None,
    }
}

/// The CSV columns of a run of `metrics`: every field they can produce, in registry order.
pub fn columns_for(metrics: MetricSet) -> Vec<&'static Field> {
    gpumetrics_engine::metric::all()
        .filter(|m| metrics.contains(m.flag))
        .flat_map(|m| m.fields.iter())
        .collect()
}

/// The CSV columns of a run of `metrics` with the distortion map `map`: [`columns_for`]'s,
/// then the map's statistics ([`gpumetrics_engine::map::MapKind::fields`]).
pub fn columns_with_map(
    metrics: MetricSet,
    map: Option<gpumetrics_engine::map::MapKind>,
) -> Vec<&'static Field> {
    let mut columns = columns_for(metrics);
    if let Some(kind) = map {
        columns.extend(kind.fields());
    }
    columns
}

/// A JSON object with its keys in the order given (serde_json's `Map` sorts them).
#[derive(Default)]
struct Object(Vec<(String, String)>);

impl Object {
    fn put(self, key: &str, value: impl Serialize) -> Object {
        let text = serde_json::to_string(&value).expect("plain values serialise");
        self.raw(key, text)
    }

    fn raw(mut self, key: &str, json: String) -> Object {
        self.0.push((key.to_string(), json));
        self
    }

    fn finish(self) -> String {
        let body: Vec<String> = self
            .0
            .into_iter()
            .map(|(k, v)| format!("{}:{v}", Value::String(k)))
            .collect();
        format!("{{{}}}", body.join(","))
    }
}

fn time(t: Option<gst::ClockTime>) -> Option<u64> {
    t.map(gst::ClockTime::nseconds)
}

/// `type`, then `distorted` when the run has several distorted files.
fn typed(kind: &str, distorted: Option<&str>) -> Object {
    let o = Object::default().put("type", kind);
    match distorted {
        Some(d) => o.put("distorted", d),
        None => o,
    }
}

/// Frame record: `type`, (`distorted`), `frame`, `pts`, `running-time`, `duration`, then
/// the metric fields in the record's order.
fn frame_object(rec: &FrameScores, distorted: Option<&str>) -> String {
    let mut o = typed("frame", distorted)
        .put("frame", rec.frame)
        .put("pts", time(rec.pts))
        .put("running-time", time(rec.running_time))
        .put("duration", time(rec.duration));
    for (field, v) in &rec.scores {
        o = o.put(field.name, json_f64(*v));
    }
    o.finish()
}

/// A field's statistics. The stats file: those present, in the summary message's order.
/// The command: every statistic, `harmonic-mean` `null` where undefined (the keys do not
/// change), then `pooled` for the PSNR fields.
fn stats_object(s: &FieldStats, style: Style) -> String {
    match style {
        Style::StatsFile => s
            .entries()
            .into_iter()
            .fold(Object::default(), |o, (k, v)| o.put(k, json_f64(v))),
        Style::Command => {
            let o = Object::default()
                .put("mean", json_f64(s.mean))
                .put(
                    "harmonic-mean",
                    s.harmonic_mean.map_or(Value::Null, json_f64),
                )
                .put("min", json_f64(s.min))
                .put("max", json_f64(s.max))
                .put("stddev", json_f64(s.stddev))
                .put("p1", json_f64(s.p1))
                .put("p5", json_f64(s.p5))
                .put("p50", json_f64(s.p50))
                .put("p95", json_f64(s.p95))
                .put("p99", json_f64(s.p99));
            match s.pooled {
                Some(p) => o.put("pooled", json_f64(p)),
                None => o,
            }
        }
    }
    .finish()
}

/// The summary's entries after `o` (a window's object has them too). The stats file has
/// `alerts` and `events` only where there are any; the command always.
fn summary_entries(o: Object, s: &Summary, style: Style) -> Object {
    let fields = s.fields.iter().fold(Object::default(), |f, (name, st)| {
        f.raw(name, stats_object(st, style))
    });
    let alerts: Vec<Value> = s
        .alerts
        .iter()
        .map(|a| json!({"rule": a.rule, "episodes": a.episodes, "seconds": a.seconds}))
        .collect();
    let events: Vec<Value> = s
        .events
        .iter()
        .map(|e| {
            json!({"event": e.event, "input": e.input, "intervals": e.intervals,
                   "seconds": e.seconds})
        })
        .collect();
    let mut o = o
        .put("frames", s.frames)
        .put("unmatched-ref", s.unmatched_ref)
        .put("unmatched-dist", s.unmatched_dist)
        .put("skipped", s.skipped);
    if s.unaligned > 0 {
        o = o.put("unaligned", s.unaligned);
    }
    if !s.decode.is_empty() {
        for (name, n) in s.decode.entries() {
            o = o.put(name, n);
        }
    }
    let mut o = o.raw("fields", fields.finish());
    // A named set's own summary values (`aom-apsnr-y`) after the fields.
    for (name, _, v) in s.named_values() {
        o = o.put(name, json_f64(v));
    }
    let always = style == Style::Command;
    if always || !alerts.is_empty() {
        o = o.put("alerts", alerts);
    }
    if always || !events.is_empty() {
        o = o.put("events", events);
    }
    o
}

fn window_object(w: &Window, distorted: Option<&str>, style: Style) -> String {
    let o = typed("window", distorted)
        .put("start", w.start)
        .put("end", w.end);
    summary_entries(o, &w.stats, style).finish()
}

/// An event: `duration` at its end; at its start the stats file leaves it out, the command
/// writes `null`.
fn event_object(e: &EventRecord, distorted: Option<&str>, style: Style) -> String {
    let o = typed("event", distorted)
        .put("event", &e.event)
        .put("state", &e.state)
        .put("input", &e.input)
        .put("running-time", e.running_time);
    match (e.duration, style) {
        (None, Style::StatsFile) => o,
        (d, _) => o.put("duration", d),
    }
    .finish()
}

/// An alignment change (`align=auto`): the offset and its frames are `null` before the
/// first try.
fn align_object(a: &AlignRecord, distorted: Option<&str>) -> String {
    typed("align", distorted)
        .put("state", &a.state)
        .put("offset", a.offset)
        .put("offset-frames", a.offset_frames)
        .put("confidence", json_f64(a.confidence))
        .put("running-time", a.running_time)
        .put("relocks", a.relocks)
        .finish()
}

/// The JSON of a summary record (`type` first, then `distorted` when given).
pub fn summary_object(s: &Summary, distorted: Option<&str>, style: Style) -> String {
    summary_entries(typed("summary", distorted), s, style).finish()
}

/// One CSV row, with its line end.
fn csv_line<S: AsRef<[u8]>>(cells: &[S]) -> io::Result<Vec<u8>> {
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    w.write_record(cells).map_err(|e| match e.into_kind() {
        csv::ErrorKind::Io(e) => e,
        other => io::Error::other(format!("{other:?}")),
    })?;
    w.into_inner().map_err(|e| e.into_error())
}

/// The CSV cell of a time: integer nanoseconds, empty when unknown.
fn csv_time(t: Option<gst::ClockTime>) -> String {
    time(t).map_or(String::new(), |t| t.to_string())
}

/// The CSV cell of a score the record may lack.
fn csv_score(v: Option<f64>) -> String {
    v.map_or(String::new(), format_f64)
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

/// Cuts `W` back to its first `len` bytes, writing on from there: a JSON document's closing
/// part is removed when records follow a summary, and a record whose write failed is
/// removed whole.
type Truncate<W> = fn(&mut W, u64) -> io::Result<()>;

fn truncate_file(file: &mut File, len: u64) -> io::Result<()> {
    file.set_len(len)?;
    file.seek(SeekFrom::Start(len))?;
    Ok(())
}

/// The command's JSON document holds these back for their own arrays.
#[derive(Clone, Copy)]
enum Held {
    Window,
    Event,
}

/// Writes the records of one run to `W` in one [`Format`] and [`Style`]. Every record
/// reaches `W` in one write (what precedes it, the record and its line end) and is flushed
/// as it is written, so that a crash or error loses nothing already measured and leaves
/// whole lines; a failed write is the method's error, and where `W` can be cut back (a
/// stats file) the record it failed in is removed, so that `W` ends with whole records.
///
/// A run may go on after a summary (the element: a flushing seek after EOS replays part of
/// the input): its records follow, and the next summary is written after them. JSON Lines
/// and CSV then hold several summaries (the last one is the run's); a stats file's JSON
/// document has its closing part (the summary) replaced, so that it stays one document with
/// the latest summary (only where `W` can be rewritten: [`RecordWriter::create`],
/// [`RecordWriter::in_memory`]; elsewhere such a record is an error).
pub struct RecordWriter<W: Write> {
    style: Style,
    format: Format,
    out: W,
    /// CSV: the columns every record is written with, declared before the first record
    /// (every field the run can produce).
    planned: Vec<&'static Field>,
    /// Stats file CSV: the metric columns of the current section, once its header is
    /// written.
    section: Option<Vec<&'static Field>>,
    /// The command: the distorted files as given, when there are several (the records then
    /// say which); empty with one.
    labels: Vec<String>,
    /// JSON: objects written into `frames` so far.
    json_count: u64,
    /// Stats file JSON: length of the closing part the last summary wrote.
    json_tail: u64,
    /// Where `W` can be cut back ([`RecordWriter::create`], [`RecordWriter::in_memory`]).
    truncate: Option<Truncate<W>>,
    /// Bytes written to `W` so far.
    len: u64,
    /// Where the last complete record ends: a record whose write fails (a full disk, a
    /// short write) is cut back to here, so that `W` ends with whole records.
    committed: u64,
    /// The command's JSON: the windows and events, written with the summary in their own
    /// arrays.
    windows: Vec<String>,
    events: Vec<String>,
    /// The summaries written last, if no record followed them.
    last_summaries: Option<Vec<Summary>>,
}

impl RecordWriter<File> {
    /// A stats file at `path`, created (truncated). Unbuffered: each record is one write
    /// (see [`RecordWriter`]), and one that fails is cut off the file.
    pub fn create(path: &Path, format: Format) -> io::Result<Self> {
        let mut w = Self::stats_file(File::create(path)?, format);
        w.truncate = Some(truncate_file);
        Ok(w)
    }
}

impl RecordWriter<Vec<u8>> {
    /// A stats file in memory (what a file would hold, for tests and callers that buffer).
    pub fn in_memory(format: Format) -> Self {
        let mut w = Self::stats_file(Vec::new(), format);
        w.truncate = Some(|v: &mut Vec<u8>, len| {
            v.truncate(len as usize);
            Ok(())
        });
        w
    }
}

impl<W: Write> RecordWriter<W> {
    fn new(style: Style, format: Format, out: W) -> Self {
        RecordWriter {
            style,
            format,
            out,
            planned: Vec::new(),
            section: None,
            labels: Vec::new(),
            json_count: 0,
            json_tail: 0,
            truncate: None,
            len: 0,
            committed: 0,
            windows: Vec::new(),
            events: Vec::new(),
            last_summaries: None,
        }
    }

    /// The element's stats file on `out` ([`Style::StatsFile`]); nothing is written before
    /// the first record. Declare the CSV columns with [`RecordWriter::columns`].
    pub fn stats_file(out: W, format: Format) -> Self {
        Self::new(Style::StatsFile, format, out)
    }

    /// The command's records on `out` ([`Style::Command`]), started: the header record
    /// (JSON layouts; `header` is any serialisable description of the run, an object's
    /// entries follow `type` in JSON Lines) or the CSV header row (the columns: `columns`).
    /// With several distorted files, `distorted` names them (as given) and the records say
    /// which one they belong to; with one (or none), the single-file layouts.
    pub fn command(
        format: Format,
        out: W,
        columns: Vec<&'static Field>,
        header: &impl Serialize,
        distorted: Vec<String>,
    ) -> io::Result<Self> {
        let mut w = Self::new(Style::Command, format, out);
        w.planned = columns;
        if distorted.len() > 1 {
            w.labels = distorted;
        }
        let header = serde_json::to_string(header).map_err(io::Error::other)?;
        let start = match format {
            // `type` first, then the header's own entries (an object's).
            Format::Jsonl => match header.strip_prefix('{') {
                Some(body) if body != "}" => format!("{{\"type\":\"header\",{body}\n"),
                _ => "{\"type\":\"header\"}\n".to_string(),
            }
            .into_bytes(),
            Format::Json => format!("{{\"header\":{header},\"frames\":[").into_bytes(),
            Format::Csv => {
                let mut row: Vec<&str> = Vec::new();
                if !w.labels.is_empty() {
                    row.push("distorted");
                }
                row.extend(&CSV_FIXED[1..]);
                row.extend(w.planned.iter().map(|f| f.name));
                csv_line(&row)?
            }
        };
        w.put(&start)?;
        Ok(w)
    }

    /// Declares the CSV columns of a stats file: every field the run's metrics can produce
    /// ([`columns_for`]), in this order, so that a field that first appears after the first
    /// record (MS-SSIM once the frames are large enough, psnr-r/g/b after a change to RGB)
    /// has its column. A record with a field outside them still loses nothing: it starts a
    /// new section. No effect on the JSON layouts.
    pub fn columns(mut self, fields: impl IntoIterator<Item = &'static Field>) -> Self {
        self.planned = fields.into_iter().collect();
        self
    }

    pub fn format(&self) -> Format {
        self.format
    }

    pub fn style(&self) -> Style {
        self.style
    }

    /// True when the last record written is a summary.
    pub fn is_finished(&self) -> bool {
        self.last_summaries.is_some()
    }

    /// Writes `bytes` in one piece and flushes.
    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.out.flush()?;
        self.len += bytes.len() as u64;
        Ok(())
    }

    /// Runs `write`, one record (a frame, a window, an event, the summaries: each one or
    /// more `put`s). When it fails, what it wrote is cut off where `W` can be cut back, so
    /// that the output ends with the last complete record (a failed or short write may
    /// have left part of a line), and the error is returned.
    fn whole(&mut self, write: impl FnOnce(&mut Self) -> io::Result<()>) -> io::Result<()> {
        self.committed = self.len;
        let result = write(self);
        if result.is_ok() {
            self.committed = self.len;
        } else if let Some(truncate) = self.truncate {
            let _ = self.out.flush();
            if truncate(&mut self.out, self.committed).is_ok() {
                self.len = self.committed;
            }
        }
        result
    }

    /// Writes `lead`, `record` and a newline in one piece and flushes, so that a record
    /// reaches the file whole or not at all (short of a full disk).
    fn line(&mut self, mut lead: String, record: &str) -> io::Result<()> {
        lead.push_str(record);
        lead.push('\n');
        self.put(lead.as_bytes())
    }

    fn csv_row<S: AsRef<[u8]>>(&mut self, cells: &[S]) -> io::Result<()> {
        let line = csv_line(cells)?;
        self.put(&line)
    }

    /// The label of the `which`-th distorted file, when there are several.
    fn label(&self, which: usize) -> Option<&str> {
        self.labels.get(which).map(String::as_str)
    }

    /// A record follows: a stats file's JSON document written up to a summary is reopened.
    fn continue_after_summary(&mut self) -> io::Result<()> {
        if self.last_summaries.take().is_none() || self.format != Format::Json {
            return Ok(());
        }
        self.reopen_json()
    }

    /// Removes the JSON closing part the last summary wrote, so that records can follow.
    fn reopen_json(&mut self) -> io::Result<()> {
        let truncate = self
            .truncate
            .filter(|_| self.style == Style::StatsFile)
            .ok_or_else(|| {
                io::Error::other(
                    "this JSON output cannot be rewritten: records cannot follow its summary",
                )
            })?;
        self.out.flush()?;
        let len = self.len.checked_sub(self.json_tail).ok_or_else(|| {
            io::Error::other("the stats file is shorter than what was written to it")
        })?;
        truncate(&mut self.out, len)?;
        self.len = len;
        // The record after it completes the file again; until then it ends here.
        self.committed = self.committed.min(len);
        self.json_tail = 0;
        Ok(())
    }

    /// A record object of the JSON layouts: a line of JSON Lines, or the next element of the
    /// JSON document's `frames` array (the stats file's windows and events are there too;
    /// the command holds those back for their own arrays).
    fn object(&mut self, object: String, held: Option<Held>) -> io::Result<()> {
        match (self.format, self.style, held) {
            (Format::Jsonl, _, _) => self.line(String::new(), &object),
            (Format::Json, Style::Command, Some(Held::Window)) => {
                self.windows.push(object);
                Ok(())
            }
            (Format::Json, Style::Command, Some(Held::Event)) => {
                self.events.push(object);
                Ok(())
            }
            (Format::Json, Style::Command, None) => {
                let sep = if self.json_count == 0 { "\n" } else { ",\n" };
                self.json_count += 1;
                self.put(format!("{sep}{object}").as_bytes())
            }
            (Format::Json, Style::StatsFile, _) => {
                // The separator leads, so that each line is complete when it is written.
                let lead = if self.json_count == 0 {
                    "{\"frames\":[\n"
                } else {
                    ","
                };
                self.json_count += 1;
                self.line(lead.into(), &object)
            }
            (Format::Csv, _, _) => unreachable!("CSV rows are written by the callers"),
        }
    }

    /// Makes a stats file's CSV columns hold `fields`: the first header (the planned columns
    /// and any of `fields` beyond them), or a new header row, starting a new section, when
    /// `fields` has one the current columns lack.
    fn section(&mut self, fields: impl Iterator<Item = &'static Field>) -> io::Result<()> {
        let mut columns = self.section.clone().unwrap_or_else(|| self.planned.clone());
        let before = columns.len();
        for f in fields {
            if !columns.iter().any(|c| c.name == f.name) {
                columns.push(f);
            }
        }
        if self.section.is_some() && columns.len() == before {
            return Ok(());
        }
        let mut header: Vec<&str> = CSV_FIXED.to_vec();
        header.extend(columns.iter().map(|f| f.name));
        let line = csv_line(&header)?;
        self.section = Some(columns);
        self.put(&line)
    }

    /// The rows of a stats file's summary (or, with `prefix` `window-`, a window): the counts
    /// in column `frame`, one row per statistic, one row per alert rule (`alert:RULE`, its
    /// episodes in `frame` and its time in alert in `duration`, ns), one per event kind and
    /// input. `span` (start, length) fills `running-time` and `duration` of the count and
    /// statistic rows.
    fn csv_stats(&mut self, prefix: &str, s: &Summary, span: Option<(u64, u64)>) -> io::Result<()> {
        self.section(
            s.fields
                .iter()
                .filter_map(|(n, _)| gpumetrics_engine::metric::field(n)),
        )?;
        let fields = self.section.clone().unwrap_or_default();
        let width = CSV_FIXED.len() + fields.len();
        let lead = |record: String, frame: String| {
            let mut row = vec![record, frame, String::new()];
            match span {
                Some((start, len)) => row.extend([start.to_string(), len.to_string()]),
                None => row.extend([String::new(), String::new()]),
            }
            row
        };
        let mut rows = Vec::new();
        let decode = s.decode.entries();
        let decode = if s.decode.is_empty() {
            &[][..]
        } else {
            &decode[..]
        };
        for (record, count) in [
            ("frames", s.frames),
            ("unmatched-ref", s.unmatched_ref),
            ("unmatched-dist", s.unmatched_dist),
            ("skipped", s.skipped),
        ]
        .into_iter()
        .chain((s.unaligned > 0).then_some(("unaligned", s.unaligned)))
        .chain(decode.iter().copied())
        {
            let mut row = lead(format!("{prefix}{record}"), count.to_string());
            row.resize(width, String::new());
            rows.push(row);
        }
        for stat in CSV_STATS {
            let mut row = lead(format!("{prefix}{stat}"), String::new());
            for f in &fields {
                let v = s.field(f.name).and_then(|st| {
                    st.entries()
                        .into_iter()
                        .find(|(k, _)| *k == stat)
                        .map(|(_, v)| v)
                });
                row.push(csv_score(v));
            }
            rows.push(row);
        }
        // A named set's own summary values (`aom-apsnr-y`), in their field's column.
        for (name, source, value) in s.named_values() {
            let mut row = lead(format!("{prefix}{name}"), String::new());
            for f in &fields {
                row.push(if f.name == source {
                    csv_score(Some(value))
                } else {
                    String::new()
                });
            }
            rows.push(row);
        }
        let counted = |record: String, count: u64, seconds: f64| {
            let mut row = vec![
                record,
                count.to_string(),
                String::new(),
                span.map_or(String::new(), |(start, _)| start.to_string()),
                ((seconds * 1e9).round() as u64).to_string(),
            ];
            row.resize(width, String::new());
            row
        };
        for a in &s.alerts {
            rows.push(counted(
                format!("{prefix}alert:{}", a.rule),
                a.episodes,
                a.seconds,
            ));
        }
        for e in &s.events {
            let input = if e.input == "ref" { "ref-" } else { "" };
            rows.push(counted(
                format!("{prefix}events:{input}{}", e.event),
                e.intervals,
                e.seconds,
            ));
        }
        for row in rows {
            self.csv_row(&row)?;
        }
        Ok(())
    }

    /// A pair's record, of the `which`-th distorted file (0 with one; a stats file's
    /// records are all of its one file).
    pub fn frame(&mut self, which: usize, rec: &FrameScores) -> io::Result<()> {
        self.whole(|s| s.write_frame(which, rec))
    }

    fn write_frame(&mut self, which: usize, rec: &FrameScores) -> io::Result<()> {
        self.continue_after_summary()?;
        let label = self.label(which).map(str::to_string);
        match (self.format, self.style) {
            (Format::Jsonl | Format::Json, _) => {
                self.object(frame_object(rec, label.as_deref()), None)
            }
            (Format::Csv, Style::StatsFile) => {
                self.section(rec.fields())?;
                let mut row = vec![
                    "frame".to_string(),
                    rec.frame.to_string(),
                    csv_time(rec.pts),
                    csv_time(rec.running_time),
                    csv_time(rec.duration),
                ];
                let columns = self.section.as_deref().unwrap_or_default();
                row.extend(columns.iter().map(|f| csv_score(rec.value(f))));
                self.csv_row(&row)
            }
            (Format::Csv, Style::Command) => {
                let mut row: Vec<String> = label.into_iter().collect();
                row.extend([
                    rec.frame.to_string(),
                    csv_time(rec.pts),
                    csv_time(rec.running_time),
                    csv_time(rec.duration),
                ]);
                row.extend(self.planned.iter().map(|f| csv_score(rec.value(f))));
                self.csv_row(&row)
            }
        }
    }

    /// A window's record (`window`): in JSON an object with `"type":"window"`; in a stats
    /// file's CSV the summary's rows prefixed `window-`, with the window's start in
    /// `running-time` and its length in `duration`; not in the command's CSV, whose rows are
    /// pairs only.
    pub fn window(&mut self, which: usize, w: &Window) -> io::Result<()> {
        self.whole(|s| s.write_window(which, w))
    }

    fn write_window(&mut self, which: usize, w: &Window) -> io::Result<()> {
        self.continue_after_summary()?;
        let label = self.label(which).map(str::to_string);
        match (self.format, self.style) {
            (Format::Jsonl | Format::Json, style) => self.object(
                window_object(w, label.as_deref(), style),
                Some(Held::Window),
            ),
            (Format::Csv, Style::StatsFile) => self.csv_stats(
                "window-",
                &w.stats,
                Some((w.start, w.end.saturating_sub(w.start))),
            ),
            (Format::Csv, Style::Command) => Ok(()),
        }
    }

    /// An event's record (a black or freeze interval starting or ending): in JSON an object
    /// with `"type":"event"`; in a stats file's CSV a row whose `record` is `EVENT-STATE`
    /// (`black-start`, `freeze-end`; `ref-` before it for the reference input) with the time
    /// in `running-time` and, at the end, the length in `duration`; not in the command's CSV.
    pub fn event(&mut self, which: usize, e: &EventRecord) -> io::Result<()> {
        self.whole(|s| s.write_event(which, e))
    }

    fn write_event(&mut self, which: usize, e: &EventRecord) -> io::Result<()> {
        self.continue_after_summary()?;
        let label = self.label(which).map(str::to_string);
        match (self.format, self.style) {
            (Format::Jsonl | Format::Json, style) => {
                self.object(event_object(e, label.as_deref(), style), Some(Held::Event))
            }
            (Format::Csv, Style::StatsFile) => {
                self.section(std::iter::empty())?;
                let input = if e.input == "ref" { "ref-" } else { "" };
                let mut row = vec![
                    format!("{input}{}-{}", e.event, e.state),
                    String::new(),
                    String::new(),
                    e.running_time.to_string(),
                    e.duration.map_or(String::new(), |d| d.to_string()),
                ];
                let columns = self.section.as_ref().map_or(0, Vec::len);
                row.resize(row.len() + columns, String::new());
                self.csv_row(&row)
            }
            (Format::Csv, Style::Command) => Ok(()),
        }
    }

    /// An alignment change's record (`align=auto`): in JSON an object with
    /// `"type":"align"` (in the command's JSON document, among its `events`); in a stats
    /// file's CSV a row `align-STATE` (`align-locked`) with the offset in frames in
    /// `frame`, the offset (ns) in `pts` and the time in `running-time`; not in the
    /// command's CSV.
    pub fn align(&mut self, which: usize, a: &AlignRecord) -> io::Result<()> {
        self.whole(|s| s.write_align(which, a))
    }

    fn write_align(&mut self, which: usize, a: &AlignRecord) -> io::Result<()> {
        self.continue_after_summary()?;
        let label = self.label(which).map(str::to_string);
        match (self.format, self.style) {
            (Format::Jsonl | Format::Json, _) => {
                self.object(align_object(a, label.as_deref()), Some(Held::Event))
            }
            (Format::Csv, Style::StatsFile) => {
                self.section(std::iter::empty())?;
                let mut row = vec![
                    format!("align-{}", a.state),
                    a.offset_frames.map_or(String::new(), |o| o.to_string()),
                    a.offset.map_or(String::new(), |o| o.to_string()),
                    a.running_time.to_string(),
                    String::new(),
                ];
                let columns = self.section.as_ref().map_or(0, Vec::len);
                row.resize(row.len() + columns, String::new());
                self.csv_row(&row)
            }
            (Format::Csv, Style::Command) => Ok(()),
        }
    }

    /// The run's summary, with one distorted file: [`RecordWriter::summaries`].
    pub fn summary(&mut self, s: &Summary) -> io::Result<()> {
        self.summaries(std::slice::from_ref(s))
    }

    /// The summaries, one per distorted file in the order given, after the records (the
    /// JSON document is closed; the command's CSV has none). Summaries equal to those
    /// written last, with no record since, are not written again (the element's stop after
    /// EOS).
    pub fn summaries(&mut self, all: &[Summary]) -> io::Result<()> {
        self.whole(|s| s.write_summaries(all))
    }

    fn write_summaries(&mut self, all: &[Summary]) -> io::Result<()> {
        if self.last_summaries.as_deref() == Some(all) {
            return Ok(());
        }
        if self.last_summaries.is_some() && self.format == Format::Json {
            self.reopen_json()?;
        }
        match (self.format, self.style) {
            (Format::Jsonl, style) => {
                for (i, s) in all.iter().enumerate() {
                    let object = summary_object(s, self.label(i), style);
                    self.line(String::new(), &object)?;
                }
            }
            (Format::Json, Style::StatsFile) => {
                let lead = if self.json_count == 0 {
                    "{\"frames\":[],\n\"summary\":"
                } else {
                    "],\n\"summary\":"
                };
                let summary = all.first().map_or("null".into(), |s| {
                    summary_entries(typed("summary", None), s, Style::StatsFile).finish()
                });
                let tail = summary + "}";
                self.line(lead.into(), &tail)?;
                self.json_tail = (lead.len() + tail.len() + 1) as u64;
            }
            (Format::Json, Style::Command) => {
                let windows = std::mem::take(&mut self.windows).join(",\n");
                let events = std::mem::take(&mut self.events).join(",\n");
                let entries = |o, s| summary_entries(o, s, Style::Command).finish();
                let summary = if self.labels.is_empty() {
                    all.first()
                        .map_or("null".into(), |s| entries(Object::default(), s))
                } else {
                    let each: Vec<String> = all
                        .iter()
                        .enumerate()
                        .map(|(i, s)| entries(Object::default().put("distorted", self.label(i)), s))
                        .collect();
                    format!("[{}]", each.join(",\n"))
                };
                self.put(
                    format!(
                        "\n],\"windows\":[{windows}],\"events\":[{events}],\"summary\":{summary}}}\n"
                    )
                    .as_bytes(),
                )?;
            }
            (Format::Csv, Style::StatsFile) => {
                for s in all {
                    self.csv_stats("", s, None)?;
                }
            }
            (Format::Csv, Style::Command) => {}
        }
        self.last_summaries = Some(all.to_vec());
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
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::message::{AlertCount, EventCount};

    fn field(name: &str) -> &'static Field {
        gpumetrics_engine::metric::field(name).unwrap()
    }

    fn fields(names: &[&str]) -> Vec<&'static Field> {
        names.iter().map(|n| field(n)).collect()
    }

    fn rec(i: u64, y: f64) -> FrameScores {
        FrameScores {
            frame: i,
            pts: Some(gst::ClockTime::from_mseconds(40 * i)),
            running_time: Some(gst::ClockTime::from_mseconds(40 * i)),
            duration: None,
            scores: vec![(field("psnr-y"), y), (field("mse-y"), 1.5)],
        }
    }

    fn stats(mean: f64) -> FieldStats {
        FieldStats {
            mean,
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
        }
    }

    fn summary() -> Summary {
        Summary {
            frames: 2,
            unmatched_ref: 1,
            unmatched_dist: 0,
            fields: vec![
                ("psnr-y".into(), stats(f64::INFINITY)),
                ("mse-y".into(), FieldStats::default()),
            ],
            ..Default::default()
        }
    }

    fn text(bytes: Vec<u8>) -> String {
        String::from_utf8(bytes).unwrap()
    }

    // ---- Non-finite scores, in every format and style.

    #[test]
    fn inf_and_nan_are_null_in_json_and_spelled_out_in_csv() {
        let odd = |i| FrameScores {
            scores: vec![
                (field("psnr-y"), f64::INFINITY),
                (field("psnr-u"), f64::NAN),
                (field("mse-y"), 0.0),
            ],
            ..rec(i, 0.0)
        };
        let s = Summary {
            fields: vec![(
                "psnr-y".into(),
                FieldStats {
                    stddev: f64::NAN,
                    harmonic_mean: Some(f64::INFINITY),
                    ..stats(f64::INFINITY)
                },
            )],
            ..summary()
        };
        let columns = fields(&["psnr-y", "psnr-u", "mse-y"]);
        for style in [Style::StatsFile, Style::Command] {
            let write = |format| {
                let mut w = match style {
                    Style::StatsFile => RecordWriter::in_memory(format).columns(columns.clone()),
                    Style::Command => {
                        RecordWriter::command(format, Vec::new(), columns.clone(), &(), vec![])
                            .unwrap()
                    }
                };
                w.frame(0, &odd(0)).unwrap();
                w.summary(&s).unwrap();
                text(w.into_inner())
            };
            let jsonl = write(Format::Jsonl);
            let json = write(Format::Json);
            for t in [&jsonl, &json] {
                assert!(!t.contains("inf") && !t.contains("NaN"), "{style:?}: {t}");
                assert!(
                    t.contains("\"psnr-y\":null,\"psnr-u\":null,\"mse-y\":0.0}"),
                    "{style:?}: {t}"
                );
                assert!(t.contains("\"mean\":null"), "{style:?}: {t}");
                assert!(t.contains("\"stddev\":null"), "{style:?}: {t}");
                assert!(t.contains("\"harmonic-mean\":null"), "{style:?}: {t}");
            }
            let frame: Value = serde_json::from_str(
                jsonl
                    .lines()
                    .find(|l| l.contains("\"type\":\"frame\""))
                    .unwrap(),
            )
            .unwrap();
            assert_eq!(frame["psnr-y"], Value::Null);
            assert_eq!(json_to_f64(&frame["psnr-y"]), Some(f64::INFINITY));
            let doc: Value = serde_json::from_str(&json).unwrap();
            assert_eq!(doc["frames"][0]["psnr-y"], Value::Null);
            let csv = write(Format::Csv);
            assert!(csv.contains(",inf,nan,0\n"), "{style:?}: {csv}");
            assert!(!csv.contains("null"), "{style:?}: {csv}");
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
        assert!(parse_f64(&format_f64(f64::NAN)).unwrap().is_nan());
        assert_eq!(json_f64(f64::NEG_INFINITY), Value::Null);
        assert_eq!(json_to_f64(&json_f64(38.5)), Some(38.5));
        assert_eq!(json_to_f64(&Value::String("inf".into())), None);
    }

    // ---- Failed writes.

    /// Takes `room` bytes, then fails every write (a full disk, a closed pipe).
    struct Full {
        room: usize,
        kept: Vec<u8>,
    }

    impl Write for Full {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            if self.room == 0 {
                return Err(io::Error::new(io::ErrorKind::StorageFull, "no space left"));
            }
            let n = b.len().min(self.room);
            self.room -= n;
            self.kept.extend_from_slice(&b[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// Accepts nothing: `write` returns 0 (a truncated write).
    struct Zero;

    impl Write for Zero {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Ok(0)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failed_or_truncated_write_is_an_io_error() {
        for format in [Format::Jsonl, Format::Json, Format::Csv] {
            // Room for part of the first record: the record's write fails, whatever the
            // layout, with the writer's error kind.
            let mut w = RecordWriter::stats_file(
                Full {
                    room: 10,
                    kept: vec![],
                },
                format,
            )
            .columns(fields(&["psnr-y", "mse-y"]));
            let e = w.frame(0, &rec(0, 30.0)).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::StorageFull, "{format:?}: {e}");
            assert_eq!(w.into_inner().kept.len(), 10);
            let mut w = RecordWriter::stats_file(Zero, format);
            let e = w.summary(&summary()).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::WriteZero, "{format:?}: {e}");
            // The command: its header already, then a frame.
            assert_eq!(
                RecordWriter::command(format, Zero, fields(&["psnr-y"]), &(), vec![])
                    .err()
                    .unwrap()
                    .kind(),
                io::ErrorKind::WriteZero
            );
            let header_len = text(
                RecordWriter::command(format, Vec::new(), fields(&["psnr-y"]), &(), vec![])
                    .unwrap()
                    .into_inner(),
            )
            .len();
            let full = Full {
                room: header_len,
                kept: vec![],
            };
            let mut w =
                RecordWriter::command(format, full, fields(&["psnr-y"]), &(), vec![]).unwrap();
            let e = w.frame(0, &rec(0, 30.0)).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::StorageFull, "{format:?}: {e}");
        }
    }

    /// A stats file whose disk fills up in the middle of a record (a window's, a frame's,
    /// the summary's): the record's write fails, and the file is cut back to the end of
    /// the last complete record, in every layout (issue 43).
    #[test]
    fn a_failed_write_leaves_whole_records() {
        let window = Window {
            start: 0,
            end: 1_000_000_000,
            stats: summary(),
        };
        for format in [Format::Jsonl, Format::Json, Format::Csv] {
            // What a disk with room for everything holds, record by record.
            let mut ends = Vec::new();
            let mut all = RecordWriter::in_memory(format).columns(fields(&["psnr-y", "mse-y"]));
            for i in 0..3 {
                all.frame(0, &rec(i, 30.0)).unwrap();
                ends.push(all.len);
                all.window(0, &window).unwrap();
                ends.push(all.len);
            }
            all.summary(&summary()).unwrap();
            let complete = all.into_inner();
            // Room up to each byte of the file: the file ends at a record's end.
            for room in (1..complete.len()).step_by(7) {
                let mut w = RecordWriter::stats_file(Full { room, kept: vec![] }, format)
                    .columns(fields(&["psnr-y", "mse-y"]));
                w.truncate = Some(|f: &mut Full, len| {
                    f.kept.truncate(len as usize);
                    Ok(())
                });
                let failed = (0..3)
                    .try_for_each(|i| {
                        w.frame(0, &rec(i, 30.0))?;
                        w.window(0, &window)
                    })
                    .and_then(|()| w.summary(&summary()));
                assert!(failed.is_err(), "{format:?}, room {room}");
                let kept = w.into_inner().kept;
                let whole = ends.iter().rev().find(|&&e| e as usize <= room).copied();
                assert_eq!(
                    kept.len() as u64,
                    whole.unwrap_or(0),
                    "{format:?}, room {room}: {:?}",
                    String::from_utf8_lossy(&kept)
                );
                assert_eq!(kept[..], complete[..kept.len()], "{format:?}, room {room}");
            }
        }
    }

    // ---- The stats file's layouts.

    fn write(format: Format) -> String {
        let mut w = RecordWriter::in_memory(format);
        w.frame(0, &rec(0, 30.0)).unwrap();
        w.frame(0, &rec(1, f64::INFINITY)).unwrap();
        w.summary(&summary()).unwrap();
        w.summary(&summary()).unwrap(); // ignored
        text(w.into_inner())
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
            "{\"type\":\"summary\",\"frames\":2,\"unmatched-ref\":1,\"unmatched-dist\":0,\"skipped\":0,\"fields\":{\"psnr-y\":{\"mean\":null,\"min\":30.0,\"max\":null,\"stddev\":0.0,\"pooled\":33.01029995663981,\"p1\":30.0,"
        ), "{text}");
        assert_eq!(lines[0]["type"], "frame");
        assert_eq!(lines[0]["pts"], 0);
        assert_eq!(lines[0]["duration"], Value::Null);
        assert_eq!(json_to_f64(&lines[0]["psnr-y"]), Some(30.0));
        assert_eq!(lines[1]["psnr-y"], Value::Null);
        assert_eq!(lines[1]["running-time"], 40_000_000);
        assert_eq!(lines[2]["type"], "summary");
        assert_eq!(lines[2]["unmatched-ref"], 1);
        assert_eq!(lines[2]["fields"]["psnr-y"]["mean"], Value::Null);
        assert_eq!(lines[2]["fields"]["psnr-y"]["min"], 30.0);
        assert!(lines[2]["fields"]["psnr-y"].get("harmonic-mean").is_none());
        assert!(lines[2].get("alerts").is_none() && lines[2].get("events").is_none());
        assert_eq!(
            json_to_f64(&lines[2]["fields"]["psnr-y"]["pooled"]),
            Some(33.010_299_956_639_81)
        );
    }

    #[test]
    fn every_record_is_a_complete_line_when_written() {
        // What a SIGKILL right after a record leaves: whole lines, each one parseable.
        for format in [Format::Jsonl, Format::Csv, Format::Json] {
            let mut w = RecordWriter::stats_file(Vec::new(), format);
            for i in 0..3 {
                w.frame(0, &rec(i, 30.0 + i as f64)).unwrap();
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
        assert_eq!(v["frames"][1]["psnr-y"], Value::Null);
        assert_eq!(v["summary"]["frames"], 2);
        // Empty run is still a valid document.
        let mut w = RecordWriter::stats_file(Vec::new(), Format::Json);
        w.summary(&Summary::default()).unwrap();
        let v: Value = serde_json::from_slice(&w.into_inner()).unwrap();
        assert_eq!(v["frames"].as_array().unwrap().len(), 0);
    }

    #[test]
    fn the_aom_sets_apsnr_is_in_the_summary_under_its_own_names() {
        // Issue 44: "the summary adds aom-apsnr-y/u/v": the pooled value of aom-psnr-*.
        gst::init().unwrap();
        let mut s = summary();
        s.fields = vec![
            ("aom-psnr-y".into(), stats(40.0)),
            ("aom-psnr-u".into(), stats(41.0)),
        ];
        let named = s.named_values();
        let pooled = 33.010_299_956_639_81;
        assert_eq!(
            named,
            [
                ("aom-apsnr-y", "aom-psnr-y", pooled),
                ("aom-apsnr-u", "aom-psnr-u", pooled)
            ]
        );
        let st = s.to_structure();
        assert_eq!(st.get::<f64>("aom-apsnr-y").unwrap(), pooled);
        assert!(
            !st.has_field("aom-apsnr-v"),
            "no aom-psnr-v: no aom-apsnr-v"
        );
        assert_eq!(Summary::from_structure(&st).unwrap().fields.len(), 2);
        let mut w = RecordWriter::in_memory(Format::Jsonl);
        w.summary(&s).unwrap();
        let v: Value = serde_json::from_str(text(w.into_inner()).trim()).unwrap();
        assert_eq!(json_to_f64(&v["aom-apsnr-y"]), Some(pooled));
        assert_eq!(json_to_f64(&v["aom-apsnr-u"]), Some(pooled));
        let mut w = RecordWriter::in_memory(Format::Csv);
        w.summary(&s).unwrap();
        let csv_text = text(w.into_inner());
        let row = csv_text
            .lines()
            .find(|l| l.starts_with("aom-apsnr-u,"))
            .unwrap_or_else(|| panic!("{csv_text}"));
        assert_eq!(row, format!("aom-apsnr-u,,,,,,{pooled}"));
        // Another run's summary has none.
        assert!(summary().named_values().is_empty());
    }

    #[test]
    fn decode_counts_follow_the_counts_when_a_decoder_reported_errors() {
        gst::init().unwrap();
        let mut s = summary();
        let d = crate::message::DecodeCounts {
            warnings: [0, 2],
            corrupted: [1, 3],
        };
        s.decode = d;
        let mut w = RecordWriter::in_memory(Format::Jsonl);
        w.summary(&s).unwrap();
        let jsonl = text(w.into_inner());
        assert!(
            jsonl.starts_with(
                "{\"type\":\"summary\",\"frames\":2,\"unmatched-ref\":1,\"unmatched-dist\":0,\
                 \"skipped\":0,\"decode-warnings-ref\":0,\"decode-warnings-dist\":2,\
                 \"corrupted-ref\":1,\"corrupted-dist\":3,\"fields\""
            ),
            "{jsonl}"
        );
        let mut w = RecordWriter::in_memory(Format::Csv);
        w.summary(&s).unwrap();
        let csv_text = text(w.into_inner());
        let rows: Vec<Vec<String>> = csv::Reader::from_reader(csv_text.as_bytes())
            .records()
            .map(|r| r.unwrap().iter().map(String::from).collect())
            .collect();
        let counts: Vec<(&str, &str)> = rows[4..8]
            .iter()
            .map(|r| (r[0].as_str(), r[1].as_str()))
            .collect();
        assert_eq!(
            counts,
            [
                ("decode-warnings-ref", "0"),
                ("decode-warnings-dist", "2"),
                ("corrupted-ref", "1"),
                ("corrupted-dist", "3")
            ]
        );
        // The message carries them too, and reads back.
        let back = Summary::from_structure(&s.to_structure()).unwrap();
        assert_eq!(back.decode, d);
        // Without decoder errors, nothing is added (the layout of earlier runs).
        assert!(!write(Format::Jsonl).contains("decode-warnings"));
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

    /// The columns are the declared ones in their order, whatever order a record has.
    #[test]
    fn csv_columns_keep_the_declared_order() {
        let reordered = FrameScores {
            scores: vec![(field("mse-y"), 2.5), (field("psnr-y"), 40.0)],
            ..rec(0, 0.0)
        };
        let mut w = RecordWriter::in_memory(Format::Csv).columns(fields(&["psnr-y", "mse-y"]));
        w.frame(0, &reordered).unwrap();
        assert_eq!(
            text(w.into_inner()),
            "record,frame,pts,running-time,duration,psnr-y,mse-y\nframe,0,0,0,,40,2.5\n"
        );
        let mut w = RecordWriter::command(
            Format::Csv,
            Vec::new(),
            fields(&["mse-y", "psnr-y", "ssim"]),
            &(),
            vec![],
        )
        .unwrap();
        w.frame(0, &reordered).unwrap();
        assert_eq!(
            text(w.into_inner()),
            "frame,pts,running-time,duration,mse-y,psnr-y,ssim\n0,0,0,,2.5,40,\n"
        );
    }

    fn late(i: u64) -> FrameScores {
        let mut r = rec(i, 31.0);
        r.scores.push((field("ms-ssim"), 0.97));
        r
    }

    #[test]
    fn csv_columns_are_fixed_for_the_run_so_a_late_field_is_kept() {
        // Issue 20: MS-SSIM appears after a caps change; the file kept the first columns.
        let mut w =
            RecordWriter::in_memory(Format::Csv).columns(fields(&["psnr-y", "mse-y", "ms-ssim"]));
        w.frame(0, &rec(0, 30.0)).unwrap();
        w.frame(0, &late(1)).unwrap();
        w.summary(&summary()).unwrap();
        let text = text(w.into_inner());
        let mut r = csv::Reader::from_reader(text.as_bytes());
        assert_eq!(&r.headers().unwrap()[7], "ms-ssim");
        let rows: Vec<csv::StringRecord> = r.records().map(|r| r.unwrap()).collect();
        assert_eq!((&rows[0][7], &rows[1][7]), ("", "0.97"), "{text}");
        assert_eq!(rows.iter().filter(|r| &r[0] == "record").count(), 0);
    }

    #[test]
    fn csv_field_outside_the_columns_starts_a_new_section() {
        let mut w = RecordWriter::in_memory(Format::Csv).columns(fields(&["psnr-y"]));
        w.frame(0, &rec(0, 30.0)).unwrap();
        w.frame(0, &late(1)).unwrap();
        w.frame(0, &late(2)).unwrap();
        let text = text(w.into_inner());
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
            let mut w = RecordWriter::in_memory(format).columns(fields(&["psnr-y", "mse-y"]));
            w.frame(0, &rec(0, 30.0)).unwrap();
            w.frame(0, &rec(1, 31.0)).unwrap();
            w.summary(&summary()).unwrap();
            assert!(w.is_finished());
            w.frame(0, &rec(2, 32.0)).unwrap();
            assert!(!w.is_finished());
            w.summary(&second).unwrap();
            w.summary(&second).unwrap(); // the same again: not repeated
            let text = text(w.into_inner());
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
            events: vec![EventCount {
                event: "black".into(),
                input: "ref".into(),
                intervals: 1,
                seconds: 2.5,
            }],
            ..summary()
        };
        for format in [Format::Jsonl, Format::Json, Format::Csv] {
            let mut w = RecordWriter::in_memory(format).columns(fields(&["psnr-y"]));
            w.frame(0, &rec(0, 30.0)).unwrap();
            w.event(0, &ev("start", "dist", None)).unwrap();
            w.event(0, &ev("end", "ref", Some(2_500_000_000))).unwrap();
            w.summary(&with_events).unwrap();
            let text = text(w.into_inner());
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
    fn align_records_in_every_format() {
        let a = AlignRecord {
            state: "locked".into(),
            offset: Some(1_300_000_000),
            offset_frames: Some(39),
            confidence: 0.5,
            running_time: 2_000_000_000,
            relocks: 1,
        };
        let with_unaligned = Summary {
            unaligned: 7,
            ..summary()
        };
        for format in [Format::Jsonl, Format::Json, Format::Csv] {
            let mut w = RecordWriter::in_memory(format).columns(fields(&["psnr-y"]));
            w.align(0, &a).unwrap();
            w.frame(0, &rec(0, 30.0)).unwrap();
            w.summary(&with_unaligned).unwrap();
            let text = text(w.into_inner());
            match format {
                Format::Csv => {
                    assert!(
                        text.contains("\nalign-locked,39,1300000000,2000000000,,\n"),
                        "{text}"
                    );
                    assert!(text.contains("\nunaligned,7,"), "{text}");
                }
                Format::Jsonl => {
                    let v: Vec<Value> = text
                        .lines()
                        .map(|l| serde_json::from_str(l).unwrap())
                        .collect();
                    assert_eq!(v[0]["type"], "align");
                    assert_eq!(v[0]["offset"], 1_300_000_000i64);
                    assert_eq!(v[0]["offset-frames"], 39);
                    assert_eq!(v[0]["relocks"], 1);
                    assert_eq!(v[2]["unaligned"], 7);
                }
                Format::Json => {
                    let v: Value = serde_json::from_str(&text).unwrap();
                    assert_eq!(v["frames"][0]["type"], "align");
                    assert_eq!(v["summary"]["unaligned"], 7);
                }
            }
        }
    }

    #[test]
    fn json_summary_without_records_after_it_is_replaced() {
        let mut w = RecordWriter::in_memory(Format::Json);
        w.summary(&summary()).unwrap();
        w.summary(&Summary {
            unmatched_dist: 4,
            ..summary()
        })
        .unwrap();
        let v: Value = serde_json::from_slice(&w.into_inner()).unwrap();
        assert_eq!(v["summary"]["unmatched-dist"], 4);
        // A writer that cannot rewrite (stdout) says so instead of writing an invalid document.
        let mut w = RecordWriter::stats_file(Vec::new(), Format::Json);
        w.summary(&summary()).unwrap();
        assert!(w.frame(0, &rec(0, 1.0)).is_err());
    }

    #[test]
    fn a_file_is_rewritten_in_place() {
        let path =
            std::env::temp_dir().join(format!("gpumetrics-records-{}.json", std::process::id()));
        let mut w = RecordWriter::create(&path, Format::Json).unwrap();
        w.frame(0, &rec(0, 30.0)).unwrap();
        w.summary(&summary()).unwrap();
        w.frame(0, &rec(1, 30.0)).unwrap();
        w.summary(&summary()).unwrap();
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
                alerts: vec![AlertCount {
                    rule: "psnr-y<35:1s".into(),
                    episodes: 1,
                    seconds: 0.5,
                }],
                ..summary()
            },
        };
        for format in [Format::Jsonl, Format::Json, Format::Csv] {
            let mut w = RecordWriter::in_memory(format).columns(fields(&["psnr-y", "mse-y"]));
            w.frame(0, &rec(0, 30.0)).unwrap();
            w.window(0, &window).unwrap();
            w.summary(&summary()).unwrap();
            let text = text(w.into_inner());
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

    // ---- The command's layouts.

    /// A `Write` whose bytes stay readable after the writer took it.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    fn command_rec(frame: u64, psnr: f64) -> FrameScores {
        FrameScores {
            frame,
            pts: Some(gst::ClockTime::from_mseconds(40 * frame)),
            running_time: Some(gst::ClockTime::from_mseconds(40 * frame)),
            duration: None,
            scores: vec![(field("psnr-y"), psnr), (field("mse-y"), 0.5)],
        }
    }

    fn command_summary() -> Summary {
        let st = FieldStats {
            stddev: f64::INFINITY,
            pooled: None,
            ..stats(f64::INFINITY)
        };
        Summary {
            frames: 2,
            fields: vec![("psnr-y".into(), st)],
            ..Default::default()
        }
    }

    fn command(format: Format) -> String {
        let out = Shared::default();
        let header = serde_json::json!({"version": "1"});
        let mut w = RecordWriter::command(
            format,
            Box::new(out.clone()) as Box<dyn Write>,
            fields(&["psnr-y", "mse-y", "ms-ssim"]),
            &header,
            Vec::new(),
        )
        .unwrap();
        w.frame(0, &command_rec(0, 30.0)).unwrap();
        w.event(
            0,
            &EventRecord {
                event: "black".into(),
                state: "start".into(),
                input: "dist".into(),
                running_time: 0,
                duration: None,
            },
        )
        .unwrap();
        w.frame(0, &command_rec(5, f64::INFINITY)).unwrap();
        w.summaries(&[command_summary()]).unwrap();
        out.text()
    }

    #[test]
    fn command_csv_has_one_row_per_frame_and_nothing_else() {
        assert_eq!(
            command(Format::Csv),
            "frame,pts,running-time,duration,psnr-y,mse-y,ms-ssim\n\
             0,0,0,,30,0.5,\n\
             5,200000000,200000000,,inf,0.5,\n"
        );
    }

    #[test]
    fn command_json_lines_have_a_header_and_numbers_or_null() {
        let text = command(Format::Jsonl);
        assert_eq!(
            text,
            "{\"type\":\"header\",\"version\":\"1\"}\n\
             {\"type\":\"frame\",\"frame\":0,\"pts\":0,\"running-time\":0,\"duration\":null,\"psnr-y\":30.0,\"mse-y\":0.5}\n\
             {\"type\":\"event\",\"event\":\"black\",\"state\":\"start\",\"input\":\"dist\",\"running-time\":0,\"duration\":null}\n\
             {\"type\":\"frame\",\"frame\":5,\"pts\":200000000,\"running-time\":200000000,\"duration\":null,\"psnr-y\":null,\"mse-y\":0.5}\n\
             {\"type\":\"summary\",\"frames\":2,\"unmatched-ref\":0,\"unmatched-dist\":0,\"skipped\":0,\"fields\":{\"psnr-y\":{\"mean\":null,\"harmonic-mean\":null,\"min\":30.0,\"max\":null,\"stddev\":null,\"p1\":30.0,\"p5\":30.0,\"p50\":null,\"p95\":null,\"p99\":null}},\"alerts\":[],\"events\":[]}\n"
        );
    }

    #[test]
    fn command_json_is_one_document_with_its_parts() {
        let text = command(Format::Json);
        assert!(
            text.starts_with(
                "{\"header\":{\"version\":\"1\"},\"frames\":[\n{\"type\":\"frame\",\"frame\":0,"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "\"psnr-y\":null,\"mse-y\":0.5}\n],\"windows\":[],\"events\":[{\"type\":\"event\",\"event\":\"black\",\"state\":\"start\",\"input\":\"dist\",\"running-time\":0,\"duration\":null}],\"summary\":{\"frames\":2,"
            ),
            "{text}"
        );
        assert!(text.ends_with("\"alerts\":[],\"events\":[]}}\n"), "{text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["header"]["version"], "1");
        let frames = v["frames"].as_array().unwrap();
        assert_eq!(frames.len(), 2);
        assert!(frames.iter().all(|f| f["type"] == "frame"));
        assert_eq!(v["events"][0]["event"], "black");
        assert_eq!(v["windows"].as_array().unwrap().len(), 0);
        assert_eq!(v["summary"]["frames"], 2);
        assert!(v["summary"].get("type").is_none());
        // A run without a pair is still one document.
        let mut w = RecordWriter::command(Format::Json, Vec::new(), vec![], &(), vec![]).unwrap();
        w.summaries(&[Summary::default()]).unwrap();
        let v: Value = serde_json::from_slice(&w.into_inner()).unwrap();
        assert_eq!(v["frames"].as_array().unwrap().len(), 0);
    }

    /// Several distorted files: every record says which, and there is a summary per file.
    #[test]
    fn several_files_label_their_records() {
        let write = |format| {
            let files = vec!["a.mp4".to_string(), "b.mp4".to_string()];
            let mut w =
                RecordWriter::command(format, Vec::new(), fields(&["psnr-y"]), &(), files).unwrap();
            w.frame(1, &command_rec(0, 30.0)).unwrap();
            w.frame(0, &command_rec(0, 40.0)).unwrap();
            w.window(
                1,
                &Window {
                    start: 0,
                    end: 1_000_000_000,
                    stats: Summary::default(),
                },
            )
            .unwrap();
            w.summaries(&[command_summary(), Summary::default()])
                .unwrap();
            text(w.into_inner())
        };
        assert_eq!(
            write(Format::Csv),
            "distorted,frame,pts,running-time,duration,psnr-y\n\
             b.mp4,0,0,0,,30\n\
             a.mp4,0,0,0,,40\n"
        );
        let jsonl = write(Format::Jsonl);
        let lines: Vec<Value> = jsonl
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let labels: Vec<(&str, &str)> = lines[1..]
            .iter()
            .map(|r| {
                (
                    r["type"].as_str().unwrap(),
                    r["distorted"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            labels,
            [
                ("frame", "b.mp4"),
                ("frame", "a.mp4"),
                ("window", "b.mp4"),
                ("summary", "a.mp4"),
                ("summary", "b.mp4")
            ]
        );
        // `distorted` right after `type`.
        assert!(
            jsonl
                .lines()
                .nth(1)
                .unwrap()
                .starts_with("{\"type\":\"frame\",\"distorted\":\"b.mp4\",\"frame\":0,"),
            "{jsonl}"
        );
        let json = write(Format::Json);
        let v: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["frames"][0]["distorted"], "b.mp4");
        assert_eq!(v["windows"][0]["distorted"], "b.mp4");
        assert_eq!(v["summary"][0]["distorted"], "a.mp4");
        assert_eq!(v["summary"][0]["frames"], 2);
        assert_eq!(v["summary"][1]["distorted"], "b.mp4");
        assert!(json.contains("\"summary\":[{\"distorted\":\"a.mp4\",\"frames\":2,"));
        // One file: no `distorted` anywhere.
        for format in [Format::Jsonl, Format::Json, Format::Csv] {
            let one = vec!["a.mp4".to_string()];
            let mut w = RecordWriter::command(format, Vec::new(), vec![], &(), one).unwrap();
            w.frame(0, &command_rec(0, 30.0)).unwrap();
            w.summaries(&[command_summary()]).unwrap();
            let t = text(w.into_inner());
            assert!(!t.contains("distorted"), "{format:?}: {t}");
        }
    }
}
