// SPDX-License-Identifier: MPL-2.0
//! What the run prints and writes: the summary table (for people) and the per-frame records
//! plus summary (for programs: [`crate::records`]), with the black and freeze intervals as
//! event records among them and as lines.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use comfy_table::{CellAlignment, ContentArrangement, Table, presets};
use gpumetrics_engine::Field;
use gstgpumetrics::message::{AlignRecord, EventRecord, FieldStats, FrameScores, Summary, Window};
use serde::Serialize;

use crate::cli::FormatArg;
use crate::fields;
use crate::records::{self, Layout, Records};

/// Counts shown under the table besides the element's own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// The option that left pairs unscored (`--every` or `--subsample`: the element's
    /// `subsample` either way), for the label of the summary's `skipped`.
    pub skipped_by: &'static str,
    /// Frames dropped by the offset, per input (reference, distorted).
    pub offset_dropped: [u64; 2],
    /// One input, measured alone: frames, not pairs, and nothing unmatched.
    pub single: bool,
}

/// Seconds of a running time in ns, with millisecond precision (`2.500`).
fn secs(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e9)
}

/// The line of an event as it happens: `black: from 2.000 s on dist` when an interval
/// starts, `black: 2.000–4.500 s (2.500 s) on dist` when it ends.
pub fn event_line(e: &EventRecord) -> String {
    match e.duration {
        Some(d) if e.state == "end" => format!(
            "{}: {}–{} s ({} s) on {}",
            e.event,
            secs(e.running_time.saturating_sub(d)),
            secs(e.running_time),
            secs(d),
            e.input
        ),
        _ if e.state == "start" => format!(
            "{}: from {} s on {}",
            e.event,
            secs(e.running_time),
            e.input
        ),
        _ => format!(
            "{}: {} at {} s on {}",
            e.event,
            e.state,
            secs(e.running_time),
            e.input
        ),
    }
}

/// A time as seconds with millisecond precision (`1.234 s`).
pub fn fmt_time(t: Option<gst::ClockTime>) -> String {
    t.map_or("-".into(), |t| {
        format!("{:.3} s", t.nseconds() as f64 / 1e9)
    })
}

/// The PSNR fields' `pooled` statistic, FFmpeg's summary line, under the table (whose
/// `mean` is the mean of the per-frame PSNRs); empty without PSNR fields. Those shown as rows
/// of their own ([`rows`]: `aom-apsnr-*`) are left out.
fn pooled_line(summary: &Summary) -> String {
    let shown: Vec<&str> = rows(summary)
        .iter()
        .filter_map(|r| match r {
            Row::Pooled(_, of, _) => Some(*of),
            Row::Field(..) => None,
        })
        .collect();
    // A JOD field's pooled value is the JOD of the whole run (ColorVideoVDP's result on
    // it), not a PSNR: a line of its own.
    let jod = |name: &str| fields::meta(name).unit == "JOD";
    let pooled = |of_jod: bool| -> Vec<String> {
        summary
            .fields
            .iter()
            .filter(|(name, _)| !shown.contains(&name.as_str()) && jod(name) == of_jod)
            .filter_map(|(name, st)| Some(format!("{name} {}", fields::format(name, st.pooled?))))
            .collect()
    };
    let (psnr, jods) = (pooled(false), pooled(true));
    let mut out = String::new();
    if !psnr.is_empty() {
        out += &format!(
            "pooled (PSNR of the mean MSE, as FFmpeg's psnr summary): {}\n",
            psnr.join(", ")
        );
    }
    if !jods.is_empty() {
        out += &format!(
            "pooled (JOD of the whole run, as ColorVideoVDP reports it): {}\n",
            jods.join(", ")
        );
    }
    out
}

/// Fields the table leaves out when they repeat another row: (`shown`, `left out`) where
/// the left-out field always has the shown one's values unless fields beside it exist
/// (SSIM of Y'CbCr without `--ssim-chroma`: `ssim` is `ssim-y` under its customary name).
const REPEATS: &[(&str, &str, &str)] = &[("ssim", "ssim-y", "ssim-u")];

/// Whether the row of `name` repeats another row of `summary` ([`REPEATS`]).
pub fn repeats(summary: &Summary, name: &str) -> bool {
    REPEATS.iter().any(|&(shown, left_out, beside)| {
        name == left_out
            && summary.field(beside).is_none()
            && summary
                .field(shown)
                .is_some_and(|s| Some(s) == summary.field(name))
    })
}

/// A row of the summary table.
enum Row<'a> {
    /// A field's statistics.
    Field(&'a str, &'a FieldStats),
    /// A value reported under a name of its own: (name, the field whose `pooled` it is,
    /// the value), e.g. `aom-apsnr-y`.
    Pooled(&'static str, &'a str, f64),
}

/// The table's rows: a run of a named set of metrics (`aom-ctc`: every field of the summary
/// is one of its metrics', its report fields are all there) in the set's report order (the
/// AOM CTC's, with `aom-apsnr-*` as rows), then any other field; any other run, every field
/// in the summary's order.
fn rows(summary: &Summary) -> Vec<Row<'_>> {
    let mut out = Vec::new();
    let mut taken: Vec<&str> = Vec::new();
    for set in gpumetrics_engine::metric::SETS {
        let of_set: Vec<&str> = gpumetrics_engine::metric::all()
            .filter(|i| set.set().contains(i.flag))
            .flat_map(|i| i.fields.iter().map(|f| f.name))
            .collect();
        if !summary
            .fields
            .iter()
            .all(|(n, _)| of_set.contains(&n.as_str()))
        {
            continue;
        }
        // `name=field:pooled`: the field's pooled value under `name`.
        let parse = |entry: &'static str| match entry.split_once('=') {
            Some((name, rest)) => (name, rest.trim_end_matches(":pooled"), true),
            None => (entry, entry, false),
        };
        let complete = set
            .report_order
            .iter()
            .all(|e| summary.field(parse(e).1).is_some());
        if !complete {
            continue;
        }
        for entry in set.report_order {
            let (name, field, pooled) = parse(entry);
            let Some((key, st)) = summary.fields.iter().find(|(n, _)| n == field) else {
                continue;
            };
            if pooled {
                if let Some(p) = st.pooled {
                    out.push(Row::Pooled(name, key.as_str(), p));
                }
            } else if !taken.contains(&field) {
                out.push(Row::Field(key.as_str(), st));
                taken.push(key.as_str());
            }
        }
    }
    for (name, st) in &summary.fields {
        if !taken.contains(&name.as_str()) {
            out.push(Row::Field(name.as_str(), st));
        }
    }
    out
}

/// The summary table: one row per field (the worst frame is the min of a higher-is-better
/// field, the max of a lower-is-better one: both are shown), then the counts.
pub fn summary_table(summary: &Summary, counts: &Counts) -> String {
    let mut table = Table::new();
    table
        .load_preset(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header([
            "field",
            "mean",
            "harm. mean",
            "min",
            "max",
            "p5",
            "p50",
            "p95",
        ]);
    for row in rows(summary) {
        let (name, st) = match row {
            Row::Field(name, st) => (name, st),
            Row::Pooled(name, of, value) => {
                let v = fields::format(of, value);
                let dash = || "-".to_string();
                table.add_row([
                    name.to_string(),
                    v,
                    dash(),
                    dash(),
                    dash(),
                    dash(),
                    dash(),
                    dash(),
                ]);
                continue;
            }
        };
        if repeats(summary, name) {
            continue;
        }
        let FieldStats {
            mean,
            min,
            max,
            p5,
            p50,
            p95,
            harmonic_mean,
            ..
        } = *st;
        let field = fields::meta(name);
        let hm = match harmonic_mean {
            Some(h) if field.harmonic_mean => field.format(h),
            _ => "-".into(),
        };
        table.add_row([
            name.to_string(),
            field.format(mean),
            hm,
            field.format(min),
            field.format(max),
            field.format(p5),
            field.format(p50),
            field.format(p95),
        ]);
    }
    for i in 1..8 {
        if let Some(c) = table.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    let mut out = table.to_string();
    out.push('\n');
    out += &pooled_line(summary);
    out.push_str(&counts_text(summary, counts));
    out
}

/// The lines under the summary table: the pairs compared, unmatched, skipped and dropped by
/// the offset, then each alert rule's and event's counts.
pub fn counts_text(summary: &Summary, counts: &Counts) -> String {
    let mut out = String::new();
    let mut line = if counts.single {
        format!(
            "measured frames: {} (one input, no reference)",
            summary.frames
        )
    } else {
        format!(
            "compared pairs: {}   unmatched: {} reference, {} distorted",
            summary.frames, summary.unmatched_ref, summary.unmatched_dist
        )
    };
    if summary.skipped > 0 {
        line.push_str(&format!(
            "   skipped ({}): {}",
            counts.skipped_by, summary.skipped
        ));
    }
    match counts.offset_dropped {
        [0, 0] => {}
        [r, 0] => line.push_str(&format!("   offset: first {r} reference frames dropped")),
        [0, d] => line.push_str(&format!("   offset: first {d} distorted frames dropped")),
        [r, d] => line.push_str(&format!(
            "   offset: {r} reference, {d} distorted frames dropped"
        )),
    }
    out.push_str(&line);
    out.push('\n');
    let d = &summary.decode;
    for (i, input) in ["reference", "distorted"].into_iter().enumerate() {
        let (w, c) = (d.warnings[i], d.corrupted[i]);
        if w + c > 0 {
            out.push_str(&format!(
                "decode errors in the {input}: {w} decoder warning{}, {c} frame{} flagged \
                 corrupted (their scores measure the decoder's concealment too)\n",
                if w == 1 { "" } else { "s" },
                if c == 1 { "" } else { "s" },
            ));
        }
    }
    for a in &summary.alerts {
        out.push_str(&format!(
            "alert {}: {} episode{}, {:.3} s in alert\n",
            a.rule,
            a.episodes,
            if a.episodes == 1 { "" } else { "s" },
            a.seconds
        ));
    }
    for e in &summary.events {
        out.push_str(&format!(
            "{} on {}: {} interval{}, {:.3} s in all\n",
            e.event,
            e.input,
            e.intervals,
            if e.intervals == 1 { "" } else { "s" },
            e.seconds
        ));
    }
    out
}

/// The event lines of a run, for the per-frame table's file (`--format table -o FILE`):
/// each interval's end (or its start, when it has not ended).
pub fn events_text(events: &[EventRecord]) -> String {
    events.iter().map(|e| event_line(e) + "\n").collect()
}

/// The per-frame table (`--format table -o FILE`): pair index, PTS in seconds, one column
/// per field.
pub fn frames_table(records: &[FrameScores]) -> String {
    let metas: Vec<&Field> = records
        .first()
        .map(|r| r.fields().collect())
        .unwrap_or_default();
    let columns: Vec<&str> = metas.iter().map(|f| f.name).collect();
    let mut table = Table::new();
    let mut header = vec!["frame", "pts"];
    header.extend(&columns);
    table
        .load_preset(presets::ASCII_MARKDOWN)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header);
    for r in records {
        let mut row = vec![r.frame.to_string(), fmt_time(r.pts)];
        row.extend(
            metas
                .iter()
                .map(|f| r.value(f).map_or("-".into(), |v| f.format(v))),
        );
        table.add_row(row);
    }
    for i in 0..columns.len() + 2 {
        if let Some(c) = table.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    let mut out = table.to_string();
    out.push('\n');
    out
}

/// The per-frame records in the chosen layout, written as they arrive.
pub enum RecordSink {
    /// `--format table`: records are kept for the plot only.
    None,
    /// Boxed: the writer is large, and there is one sink per run.
    Records(Box<Records>),
}

impl RecordSink {
    /// Starts the machine-readable formats on `out` (`-o FILE` or stdout): the header
    /// (`header`, the run's description) and, in CSV, the columns: `columns`, every field
    /// the run can produce ([`crate::fields::of_run`]).
    pub fn open(
        format: FormatArg,
        out: Box<dyn Write>,
        columns: Vec<&'static str>,
        header: &impl Serialize,
    ) -> io::Result<RecordSink> {
        Self::open_labelled(format, out, columns, header, Vec::new())
    }

    /// [`open`](Self::open) for several distorted files (as given): the records say which
    /// one they belong to ([`crate::records`]).
    pub fn open_labelled(
        format: FormatArg,
        out: Box<dyn Write>,
        columns: Vec<&'static str>,
        header: &impl Serialize,
        distorted: Vec<String>,
    ) -> io::Result<RecordSink> {
        let layout = match format {
            FormatArg::Table => return Ok(RecordSink::None),
            FormatArg::Jsonl => Layout::Jsonl,
            FormatArg::Csv => Layout::Csv,
            FormatArg::Json => Layout::Json,
        };
        Ok(RecordSink::Records(Box::new(records::start(
            layout, out, &columns, header, distorted,
        )?)))
    }

    /// A frame record of the `which`-th distorted file (0 with one).
    pub fn frame(&mut self, which: usize, rec: &FrameScores) -> io::Result<()> {
        match self {
            RecordSink::None => Ok(()),
            RecordSink::Records(w) => w.frame(which, rec),
        }
    }

    /// A window record (`--window`), in the order the element posted it.
    pub fn window(&mut self, which: usize, w: &Window) -> io::Result<()> {
        match self {
            RecordSink::None => Ok(()),
            RecordSink::Records(writer) => writer.window(which, w),
        }
    }

    /// An event record (a black or freeze interval starting or ending), in the order the
    /// element posted it.
    pub fn event(&mut self, which: usize, e: &EventRecord) -> io::Result<()> {
        match self {
            RecordSink::None => Ok(()),
            RecordSink::Records(w) => w.event(which, e),
        }
    }

    /// An alignment record (live `--align auto`), in the order the element made it.
    pub fn align(&mut self, which: usize, a: &AlignRecord) -> io::Result<()> {
        match self {
            RecordSink::None => Ok(()),
            RecordSink::Records(w) => w.align(which, a),
        }
    }

    /// The summaries, one per distorted file in the order given.
    pub fn summaries(&mut self, all: &[Summary]) -> io::Result<()> {
        match self {
            RecordSink::None => Ok(()),
            RecordSink::Records(w) => w.summaries(all),
        }
    }
}

/// Where records go: `-o FILE` (created, buffered) or stdout.
pub fn destination(path: Option<&Path>) -> io::Result<Box<dyn Write>> {
    Ok(match path {
        Some(p) => Box::new(BufWriter::new(File::create(p)?)),
        None => Box::new(io::stdout()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use gstgpumetrics::message::AlertCount;

    fn stats(mean: f64, hm: Option<f64>) -> FieldStats {
        FieldStats {
            mean,
            min: mean - 2.0,
            max: mean + 2.0,
            stddev: 1.0,
            harmonic_mean: hm,
            pooled: None,
            p1: mean - 2.0,
            p5: mean - 1.5,
            p50: mean,
            p95: mean + 1.5,
            p99: mean + 2.0,
        }
    }

    #[test]
    fn table_rows_and_counts() {
        let s = Summary {
            frames: 50,
            unmatched_ref: 2,
            unmatched_dist: 0,
            skipped: 7,
            unaligned: 0,
            decode: Default::default(),
            fields: vec![
                ("psnr-y".into(), stats(38.25, Some(38.1))),
                ("mse-y".into(), stats(9.5, Some(9.4))),
            ],
            alerts: vec![
                AlertCount {
                    rule: "psnr-y<30:1s".into(),
                    episodes: 1,
                    seconds: 2.5,
                },
                AlertCount {
                    rule: "mse-y>50".into(),
                    episodes: 0,
                    seconds: 0.0,
                },
            ],
            events: Vec::new(),
        };
        let t = summary_table(
            &s,
            &Counts {
                skipped_by: "--every",
                offset_dropped: [0, 4],
                single: false,
            },
        );
        let psnr = t.lines().find(|l| l.contains("psnr-y")).unwrap();
        assert!(psnr.contains("38.250") && psnr.contains("38.100"), "{t}");
        // No harmonic mean for MSE.
        let mse = t.lines().find(|l| l.contains("mse-y")).unwrap();
        assert!(!mse.contains("9.400") && mse.contains(" - "), "{t}");
        assert!(t.contains("compared pairs: 50"), "{t}");
        assert!(t.contains("unmatched: 2 reference, 0 distorted"), "{t}");
        assert!(t.contains("skipped (--every): 7"), "{t}");
        assert!(t.contains("first 4 distorted frames dropped"), "{t}");
        // The worst MSE frame is the max: a column of its own.
        assert_eq!(row(&t, "mse-y")[4], "11.500", "{t}");
        assert!(
            t.ends_with(
                "alert psnr-y<30:1s: 1 episode, 2.500 s in alert\n\
                 alert mse-y>50: 0 episodes, 0.000 s in alert\n"
            ),
            "{t}"
        );
    }

    #[test]
    fn decode_errors_are_said_per_input() {
        let s = Summary {
            frames: 3,
            decode: gstgpumetrics::message::DecodeCounts {
                warnings: [0, 2],
                corrupted: [1, 1],
            },
            ..Default::default()
        };
        let t = counts_text(&s, &Counts::default());
        assert!(
            t.contains(
                "decode errors in the reference: 0 decoder warnings, 1 frame flagged corrupted"
            ) && t.contains(
                "decode errors in the distorted: 2 decoder warnings, 1 frame flagged corrupted"
            ),
            "{t}"
        );
        let clean = counts_text(&Summary::default(), &Counts::default());
        assert!(!clean.contains("decode"), "{clean}");
    }

    #[test]
    fn one_input_events_and_their_counts() {
        use gstgpumetrics::message::EventCount;
        let s = Summary {
            frames: 12,
            unmatched_ref: 0,
            unmatched_dist: 0,
            fields: vec![("si".into(), stats(40.0, None))],
            events: vec![
                EventCount {
                    event: "black".into(),
                    input: "dist".into(),
                    intervals: 2,
                    seconds: 2.5,
                },
                EventCount {
                    event: "freeze".into(),
                    input: "ref".into(),
                    intervals: 1,
                    seconds: 0.25,
                },
            ],
            ..Default::default()
        };
        let t = summary_table(
            &s,
            &Counts {
                single: true,
                ..Default::default()
            },
        );
        assert!(t.contains("measured frames: 12 (one input"), "{t}");
        assert!(!t.contains("unmatched") && !t.contains("pairs"), "{t}");
        assert!(
            t.ends_with(
                "black on dist: 2 intervals, 2.500 s in all\n\
                 freeze on ref: 1 interval, 0.250 s in all\n"
            ),
            "{t}"
        );
        let start = EventRecord {
            event: "black".into(),
            state: "start".into(),
            input: "dist".into(),
            running_time: 2_000_000_000,
            duration: None,
        };
        assert_eq!(event_line(&start), "black: from 2.000 s on dist");
        let end = EventRecord {
            state: "end".into(),
            running_time: 4_500_000_000,
            duration: Some(2_500_000_000),
            ..start.clone()
        };
        assert_eq!(event_line(&end), "black: 2.000–4.500 s (2.500 s) on dist");
        assert_eq!(
            events_text(&[start, end]),
            "black: from 2.000 s on dist\nblack: 2.000–4.500 s (2.500 s) on dist\n"
        );
    }

    #[test]
    fn ssim_y_is_left_out_where_it_repeats_ssim() {
        let s = Summary {
            frames: 3,
            fields: vec![
                ("ssim-y".into(), stats(0.9, Some(0.9))),
                ("ssim".into(), stats(0.9, Some(0.9))),
                ("ms-ssim".into(), stats(0.9, Some(0.9))),
            ],
            ..Default::default()
        };
        let fields = |t: &str| -> Vec<String> {
            t.lines()
                .filter_map(|l| l.strip_prefix('│')?.split('┆').next())
                .map(|c| c.trim().to_string())
                .filter(|c| c != "field")
                .collect()
        };
        let t = summary_table(&s, &Counts::default());
        assert_eq!(fields(&t), ["ssim", "ms-ssim"], "{t}");
        // With the chroma planes, or with values that differ, every row is shown.
        let mut chroma = s.clone();
        chroma.fields.insert(1, ("ssim-u".into(), stats(0.8, None)));
        let t = summary_table(&chroma, &Counts::default());
        assert_eq!(fields(&t), ["ssim-y", "ssim-u", "ssim", "ms-ssim"], "{t}");
        let mut differ = s.clone();
        differ.fields[0].1.mean = 0.5;
        let t = summary_table(&differ, &Counts::default());
        assert_eq!(fields(&t), ["ssim-y", "ssim", "ms-ssim"], "{t}");
    }

    #[test]
    fn frames_table_has_seconds() {
        use gpumetrics_engine::metric;
        let recs = vec![FrameScores {
            frame: 3,
            pts: Some(gst::ClockTime::from_mseconds(100)),
            running_time: None,
            duration: None,
            scores: vec![
                (metric::field("psnr-y").unwrap(), 40.0),
                (metric::field("ssim").unwrap(), 0.5),
            ],
        }];
        let t = frames_table(&recs);
        assert!(t.lines().next().unwrap().contains("psnr-y"), "{t}");
        let row = t.lines().find(|l| l.contains("0.100 s")).expect(&t);
        assert!(row.contains("40.000") && row.contains("0.50000"), "{t}");
    }

    /// The cells of the row of `field` (name, mean, harm. mean, min, max, p5, p50, p95).
    fn row<'a>(table: &'a str, field: &str) -> Vec<&'a str> {
        let line = table
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(field))
            .unwrap_or_else(|| panic!("no row {field} in:\n{table}"));
        line.split(['│', '┆'])
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect()
    }

    #[test]
    fn the_table_uses_each_fields_decimals_and_harmonic_mean() {
        use gpumetrics_engine::metric;
        let mut fields: Vec<(String, FieldStats)> = metric::fields()
            .map(|f| (f.name.to_string(), stats(0.123456789, Some(0.111111111))))
            .collect();
        fields.push(("no-such-field".into(), stats(0.123456789, Some(0.1))));
        let s = Summary {
            frames: 1,
            fields,
            ..Default::default()
        };
        let t = summary_table(&s, &Counts::default());
        let mut seen = std::collections::HashSet::new();
        for f in metric::fields() {
            let cells = row(&t, f.name);
            let d = f.decimals as usize;
            assert_eq!(cells[1], format!("{:.d$}", 0.123456789), "{}\n{t}", f.name);
            assert_eq!(cells[4], format!("{:.d$}", 0.123456789 + 2.0), "{}", f.name);
            assert_eq!(cells[7], format!("{:.d$}", 0.123456789 + 1.5), "{}", f.name);
            let hm = if f.harmonic_mean {
                format!("{:.d$}", 0.111111111)
            } else {
                "-".into()
            };
            assert_eq!(cells[2], hm, "{}\n{t}", f.name);
            seen.insert(f.decimals);
        }
        // The registry has fields of more than one precision, so the test can fail.
        assert!(seen.len() > 1, "{seen:?}");
        // Unknown to the registry: 3 decimals, no harmonic mean.
        assert_eq!(row(&t, "no-such-field")[1..3], ["0.123", "-"]);

        let recs = vec![FrameScores {
            frame: 0,
            pts: None,
            running_time: None,
            duration: None,
            scores: metric::fields().map(|f| (f, 0.123456789)).collect(),
        }];
        let frames = frames_table(&recs);
        let cells: Vec<&str> = frames
            .lines()
            .nth(2)
            .unwrap()
            .split('|')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        for (f, cell) in metric::fields().zip(&cells[2..]) {
            let d = f.decimals as usize;
            assert_eq!(
                *cell,
                format!("{:.d$}", 0.123456789),
                "{}\n{frames}",
                f.name
            );
        }
    }

    #[test]
    fn score_text() {
        assert_eq!(fields::format("ssim", 0.9876543), "0.98765");
        assert_eq!(fields::format("psnr-y", f64::INFINITY), "inf");
        assert_eq!(fields::format("ssimulacra2", 71.23456), "71.235");
        assert_eq!(
            fmt_time(Some(gst::ClockTime::from_mseconds(1234))),
            "1.234 s"
        );
    }
}
