// SPDX-License-Identifier: MPL-2.0
//! The per-frame records for programs (`--format jsonl|json|csv`), in layouts that pandas,
//! jq and serde_json load into typed columns without cleaning:
//!
//! * `csv`: a header `frame,pts,running-time,duration,<fields>` (every field the run's
//!   metrics can produce, in registry order, so the columns do not depend on the content),
//!   then one row per compared pair and nothing else: `frame` is an integer column, times
//!   are integer nanoseconds (empty when unknown), a score the pair lacks is an empty cell
//!   and +inf is `inf` (what FFmpeg's psnr filter prints; pandas and `float()` read it).
//!   The summary is the table on stdout, and in the JSON layouts.
//! * `jsonl`: a `header` record, then `frame` records, `window` and `event` records where
//!   the element posted them, and the `summary` last; each has `type`.
//! * `json`: one document `{"header":..,"frames":[..],"windows":[..],"events":[..],
//!   "summary":..}`, the frames streamed as they are measured.
//!
//! With several distorted files (`gpumetrics REF DIST1 DIST2 ...`) every record says which
//! one it belongs to: CSV has a first column `distorted`, the JSON records a `distorted`
//! key after `type` (the file as given), jsonl has one `summary` record per file and json a
//! `summary` array of them. With one distorted file the layouts have no such key.
//!
//! In JSON a score of +inf (the PSNR of identical planes: no finite value exists) is
//! `null`, so that every score column stays numeric (a float column with NaN in pandas,
//! `null` for jq, `Option<f64>` for serde_json); the table shows `inf`. The keys are the
//! registry's field names and the summary's statistic names, the same in every run.

use std::io::{self, Write};

use gstgpumetrics::message::{EventRecord, FieldStats, FrameScores, Summary, Window};
use serde::Serialize;
use serde_json::Value;

/// Which layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Jsonl,
    Json,
    Csv,
}

/// A JSON number, or `null` for a non-finite score (see the module's documentation).
fn score(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

/// A JSON object with its keys in the order given (serde_json's `Map` sorts them).
#[derive(Default)]
struct Object(Vec<(String, String)>);

impl Object {
    fn put(mut self, key: &str, value: impl Serialize) -> Object {
        let text = serde_json::to_string(&value).expect("plain values serialise");
        self.0.push((key.to_string(), text));
        self
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

fn frame_object(rec: &FrameScores, distorted: Option<&str>) -> String {
    let mut o = typed("frame", distorted)
        .put("frame", rec.frame)
        .put("pts", time(rec.pts))
        .put("running-time", time(rec.running_time))
        .put("duration", time(rec.duration));
    for (name, v) in &rec.scores {
        o = o.put(name, score(*v));
    }
    o.finish()
}

/// Every statistic, `harmonic-mean` `null` where undefined (the keys do not change); the
/// PSNR fields also have `pooled` (the PSNR of the mean MSE, FFmpeg's summary).
fn stats_object(s: &FieldStats) -> String {
    let o = Object::default()
        .put("mean", score(s.mean))
        .put("harmonic-mean", s.harmonic_mean.map_or(Value::Null, score))
        .put("min", score(s.min))
        .put("max", score(s.max))
        .put("stddev", score(s.stddev))
        .put("p1", score(s.p1))
        .put("p5", score(s.p5))
        .put("p50", score(s.p50))
        .put("p95", score(s.p95))
        .put("p99", score(s.p99));
    match s.pooled {
        Some(p) => o.put("pooled", score(p)),
        None => o,
    }
    .finish()
}

/// The summary's entries (a window's object has them too).
fn summary_entries(mut o: Object, s: &Summary) -> Object {
    let mut fields = Object::default();
    for (name, st) in &s.fields {
        fields = fields.raw(name, stats_object(st));
    }
    let alerts: Vec<Value> = s
        .alerts
        .iter()
        .map(|a| serde_json::json!({"rule": a.rule, "episodes": a.episodes, "seconds": a.seconds}))
        .collect();
    let events: Vec<Value> = s
        .events
        .iter()
        .map(|e| {
            serde_json::json!({"event": e.event, "input": e.input, "intervals": e.intervals,
                               "seconds": e.seconds})
        })
        .collect();
    o = o
        .put("frames", s.frames)
        .put("unmatched-ref", s.unmatched_ref)
        .put("unmatched-dist", s.unmatched_dist)
        .put("skipped", s.skipped)
        .raw("fields", fields.finish());
    o.put("alerts", alerts).put("events", events)
}

fn window_object(w: &Window, distorted: Option<&str>) -> String {
    let o = typed("window", distorted)
        .put("start", w.start)
        .put("end", w.end);
    summary_entries(o, &w.stats).finish()
}

fn event_object(e: &EventRecord, distorted: Option<&str>) -> String {
    typed("event", distorted)
        .put("event", &e.event)
        .put("state", &e.state)
        .put("input", &e.input)
        .put("running-time", e.running_time)
        .put("duration", e.duration)
        .finish()
}

/// The JSON of the summary record (`type` first).
pub fn summary_object(s: &Summary, distorted: Option<&str>) -> String {
    summary_entries(typed("summary", distorted), s).finish()
}

/// The CSV cell of a score: shortest round-trip decimal, `inf` for +inf.
fn csv_score(v: Option<f64>) -> String {
    v.map_or(String::new(), gstgpumetrics::stats::format_f64)
}

/// Writes the records of one run, each flushed as it is written (a crash or a full disk
/// loses nothing already measured; a closed pipe is noticed at the next record).
pub struct RecordWriter {
    layout: Layout,
    out: Box<dyn Write>,
    /// CSV: the score columns.
    columns: Vec<&'static str>,
    /// JSON: frames written so far (for the separators).
    frames: u64,
    /// JSON: the windows and events, written with the summary in their own arrays.
    windows: Vec<String>,
    events: Vec<String>,
    /// The distorted files as given, when there are several (the records then say which);
    /// empty with one.
    distorted: Vec<String>,
}

impl RecordWriter {
    /// Starts the output: the header record (JSON layouts; `header` is any serialisable
    /// description of the run) or the CSV header row (the columns: `columns`). With several
    /// distorted files, `distorted` names them (as given) and the records say which one
    /// they belong to; with one (or none), the single-file layouts.
    pub fn start(
        layout: Layout,
        mut out: Box<dyn Write>,
        columns: Vec<&'static str>,
        header: &impl Serialize,
        distorted: Vec<String>,
    ) -> io::Result<RecordWriter> {
        let distorted = if distorted.len() > 1 {
            distorted
        } else {
            Vec::new()
        };
        let header = serde_json::to_string(header).map_err(io::Error::other)?;
        match layout {
            Layout::Jsonl => {
                // `type` first, then the header's own entries (an object's).
                match header.strip_prefix('{') {
                    Some(body) if body != "}" => writeln!(out, "{{\"type\":\"header\",{body}")?,
                    _ => writeln!(out, "{{\"type\":\"header\"}}")?,
                }
            }
            Layout::Json => write!(out, "{{\"header\":{header},\"frames\":[")?,
            Layout::Csv => {}
        }
        let mut w = RecordWriter {
            layout,
            out,
            columns,
            frames: 0,
            windows: Vec::new(),
            events: Vec::new(),
            distorted,
        };
        if layout == Layout::Csv {
            let mut row: Vec<&str> = Vec::new();
            if !w.distorted.is_empty() {
                row.push("distorted");
            }
            row.extend(["frame", "pts", "running-time", "duration"]);
            row.extend(w.columns.iter().copied());
            w.csv_row(&row)?;
        }
        w.out.flush()?;
        Ok(w)
    }

    fn csv_row<S: AsRef<[u8]>>(&mut self, cells: &[S]) -> io::Result<()> {
        let mut w = csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(&mut self.out);
        w.write_record(cells).map_err(|e| match e.into_kind() {
            csv::ErrorKind::Io(e) => e,
            other => io::Error::other(format!("{other:?}")),
        })?;
        w.flush()
    }

    fn line(&mut self, text: &str) -> io::Result<()> {
        writeln!(self.out, "{text}")?;
        self.out.flush()
    }

    /// The label of the `which`-th distorted file, when there are several.
    fn label(&self, which: usize) -> Option<String> {
        self.distorted.get(which).cloned()
    }

    /// A frame of the `which`-th distorted file (0 with one).
    pub fn frame(&mut self, which: usize, rec: &FrameScores) -> io::Result<()> {
        let label = self.label(which);
        match self.layout {
            Layout::Jsonl => self.line(&frame_object(rec, label.as_deref())),
            Layout::Json => {
                let sep = if self.frames == 0 { "\n" } else { ",\n" };
                self.frames += 1;
                write!(self.out, "{sep}{}", frame_object(rec, label.as_deref()))?;
                self.out.flush()
            }
            Layout::Csv => {
                let mut row: Vec<String> = label.into_iter().collect();
                row.extend([
                    rec.frame.to_string(),
                    time(rec.pts).map_or(String::new(), |t| t.to_string()),
                    time(rec.running_time).map_or(String::new(), |t| t.to_string()),
                    time(rec.duration).map_or(String::new(), |t| t.to_string()),
                ]);
                row.extend(self.columns.iter().map(|c| csv_score(rec.get(c))));
                self.csv_row(&row)
            }
        }
    }

    /// A window record (`--window`); not in CSV, whose rows are frames only.
    pub fn window(&mut self, which: usize, w: &Window) -> io::Result<()> {
        let label = self.label(which);
        match self.layout {
            Layout::Jsonl => self.line(&window_object(w, label.as_deref())),
            Layout::Json => {
                self.windows.push(window_object(w, label.as_deref()));
                Ok(())
            }
            Layout::Csv => Ok(()),
        }
    }

    /// A black or freeze interval's start or end; not in CSV.
    pub fn event(&mut self, which: usize, e: &EventRecord) -> io::Result<()> {
        let label = self.label(which);
        match self.layout {
            Layout::Jsonl => self.line(&event_object(e, label.as_deref())),
            Layout::Json => {
                self.events.push(event_object(e, label.as_deref()));
                Ok(())
            }
            Layout::Csv => Ok(()),
        }
    }

    /// The summaries, one per distorted file in the order given: the last records (JSON:
    /// closes the document, `summary` an array when there are several files); nothing in
    /// CSV.
    pub fn summaries(&mut self, all: &[Summary]) -> io::Result<()> {
        match self.layout {
            Layout::Jsonl => {
                for (i, s) in all.iter().enumerate() {
                    let label = self.label(i);
                    self.line(&summary_object(s, label.as_deref()))?;
                }
                Ok(())
            }
            Layout::Json => {
                let windows = std::mem::take(&mut self.windows).join(",\n");
                let events = std::mem::take(&mut self.events).join(",\n");
                let summary = if self.distorted.is_empty() {
                    all.first().map_or("null".into(), |s| {
                        summary_entries(Object::default(), s).finish()
                    })
                } else {
                    let each: Vec<String> = all
                        .iter()
                        .enumerate()
                        .map(|(i, s)| {
                            let o = Object::default().put("distorted", self.label(i));
                            summary_entries(o, s).finish()
                        })
                        .collect();
                    format!("[{}]", each.join(",\n"))
                };
                writeln!(
                    self.out,
                    "\n],\"windows\":[{windows}],\"events\":[{events}],\"summary\":{summary}}}"
                )?;
                self.out.flush()
            }
            Layout::Csv => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

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

    fn rec(frame: u64, psnr: f64) -> FrameScores {
        FrameScores {
            frame,
            pts: Some(gst::ClockTime::from_mseconds(40 * frame)),
            running_time: Some(gst::ClockTime::from_mseconds(40 * frame)),
            duration: None,
            scores: vec![("psnr-y".into(), psnr), ("mse-y".into(), 0.5)],
        }
    }

    fn summary() -> Summary {
        let st = FieldStats {
            mean: f64::INFINITY,
            min: 30.0,
            max: f64::INFINITY,
            stddev: f64::INFINITY,
            harmonic_mean: None,
            pooled: None,
            p1: 30.0,
            p5: 30.0,
            p50: f64::INFINITY,
            p95: f64::INFINITY,
            p99: f64::INFINITY,
        };
        Summary {
            frames: 2,
            fields: vec![("psnr-y".into(), st)],
            ..Default::default()
        }
    }

    fn write(layout: Layout) -> String {
        let out = Shared::default();
        let header = serde_json::json!({"version": "1"});
        let mut w = RecordWriter::start(
            layout,
            Box::new(out.clone()),
            vec!["psnr-y", "mse-y", "ms-ssim"],
            &header,
            Vec::new(),
        )
        .unwrap();
        w.frame(0, &rec(0, 30.0)).unwrap();
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
        w.frame(0, &rec(5, f64::INFINITY)).unwrap();
        w.summaries(&[summary()]).unwrap();
        out.text()
    }

    #[test]
    fn csv_has_one_row_per_frame_and_nothing_else() {
        let text = write(Layout::Csv);
        assert_eq!(
            text,
            "frame,pts,running-time,duration,psnr-y,mse-y,ms-ssim\n\
             0,0,0,,30,0.5,\n\
             5,200000000,200000000,,inf,0.5,\n"
        );
    }

    #[test]
    fn json_lines_have_a_header_and_numbers_or_null() {
        let text = write(Layout::Jsonl);
        let v: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let types: Vec<&str> = v.iter().map(|r| r["type"].as_str().unwrap()).collect();
        assert_eq!(types, ["header", "frame", "event", "frame", "summary"]);
        assert!(
            text.starts_with("{\"type\":\"header\",\"version\":\"1\"}"),
            "{text}"
        );
        assert_eq!(v[1]["psnr-y"], 30.0);
        assert_eq!(v[3]["frame"], 5);
        assert_eq!(v[3]["psnr-y"], Value::Null);
        let psnr = &v[4]["fields"]["psnr-y"];
        assert_eq!((&psnr["mean"], &psnr["min"]), (&Value::Null, &30.0.into()));
        assert_eq!(psnr["harmonic-mean"], Value::Null);
        // Keys in the documented order.
        assert!(
            text.contains("{\"type\":\"frame\",\"frame\":0,\"pts\":0,\"running-time\":0,\"duration\":null,\"psnr-y\":30.0,"),
            "{text}"
        );
    }

    /// Several distorted files: every record says which, and there is a summary per file.
    #[test]
    fn several_files_label_their_records() {
        let write = |layout| {
            let out = Shared::default();
            let files = vec!["a.mp4".to_string(), "b.mp4".to_string()];
            let mut w =
                RecordWriter::start(layout, Box::new(out.clone()), vec!["psnr-y"], &(), files)
                    .unwrap();
            w.frame(1, &rec(0, 30.0)).unwrap();
            w.frame(0, &rec(0, 40.0)).unwrap();
            w.summaries(&[summary(), Summary::default()]).unwrap();
            out.text()
        };
        assert_eq!(
            write(Layout::Csv),
            "distorted,frame,pts,running-time,duration,psnr-y\n\
             b.mp4,0,0,0,,30\n\
             a.mp4,0,0,0,,40\n"
        );
        let lines: Vec<Value> = write(Layout::Jsonl)
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
                ("summary", "a.mp4"),
                ("summary", "b.mp4")
            ]
        );
        let v: Value = serde_json::from_str(&write(Layout::Json)).unwrap();
        assert_eq!(v["frames"][0]["distorted"], "b.mp4");
        assert_eq!(v["summary"][0]["distorted"], "a.mp4");
        assert_eq!(v["summary"][0]["frames"], 2);
        assert_eq!(v["summary"][1]["distorted"], "b.mp4");
        // One file: no `distorted` anywhere.
        let out = Shared::default();
        let one = vec!["a.mp4".to_string()];
        let mut w =
            RecordWriter::start(Layout::Jsonl, Box::new(out.clone()), vec![], &(), one).unwrap();
        w.frame(0, &rec(0, 30.0)).unwrap();
        w.summaries(&[summary()]).unwrap();
        assert!(!out.text().contains("distorted"), "{}", out.text());
    }

    #[test]
    fn json_is_one_document_with_its_parts() {
        let v: Value = serde_json::from_str(&write(Layout::Json)).unwrap();
        assert_eq!(v["header"]["version"], "1");
        let frames = v["frames"].as_array().unwrap();
        assert_eq!(frames.len(), 2);
        assert!(frames.iter().all(|f| f["type"] == "frame"));
        assert_eq!(v["events"][0]["event"], "black");
        assert_eq!(v["windows"].as_array().unwrap().len(), 0);
        assert_eq!(v["summary"]["frames"], 2);
        // A run without a pair is still one document.
        let out = Shared::default();
        let mut w =
            RecordWriter::start(Layout::Json, Box::new(out.clone()), vec![], &(), vec![]).unwrap();
        w.summaries(&[Summary::default()]).unwrap();
        let v: Value = serde_json::from_str(&out.text()).unwrap();
        assert_eq!(v["frames"].as_array().unwrap().len(), 0);
    }
}
