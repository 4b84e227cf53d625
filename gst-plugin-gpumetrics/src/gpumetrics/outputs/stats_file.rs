// SPDX-License-Identifier: MPL-2.0
//! The `stats-file`: one line per record, flushed as it is written, and the summary as the
//! last record, again after the records of a replay ([`crate::records`] has the layouts and
//! the writer).

use std::fs::File;
use std::path::{Path, PathBuf};

use super::{Env, Pair, Sink};
use crate::message::{AlignRecord, EventRecord, Summary, Window};
use crate::quote::quoted;
use crate::records::{Format, RecordWriter};

pub(crate) struct StatsFile {
    /// `None` after a write failed (the element stops measuring then).
    writer: Option<RecordWriter<File>>,
    /// For the errors.
    path: PathBuf,
}

impl StatsFile {
    /// Creates (truncates) `path`, with the CSV columns of every field `metrics` can
    /// produce; the error names it.
    #[cfg(test)]
    pub(crate) fn create(
        path: &Path,
        format: Format,
        metrics: gpumetrics_engine::MetricSet,
    ) -> Result<StatsFile, gst::ErrorMessage> {
        Self::with_columns(path, format, crate::records::columns_for(metrics))
    }

    /// Creates (truncates) `path` with these CSV columns; the error names it.
    pub(crate) fn with_columns(
        path: &Path,
        format: Format,
        columns: Vec<&'static gpumetrics_engine::Field>,
    ) -> Result<StatsFile, gst::ErrorMessage> {
        let writer = RecordWriter::create(path, format).map_err(|e| {
            gst::error_msg!(
                gst::ResourceError::OpenWrite,
                (
                    "Cannot create stats-file {}: {e}; check the path and its directory's \
                     permissions",
                    quoted(&path.to_string_lossy())
                )
            )
        })?;
        Ok(StatsFile {
            writer: Some(writer.columns(columns)),
            path: path.to_path_buf(),
        })
    }

    /// The element error of a failed write of `what`; the file is given up.
    fn failed(&mut self, what: &str, e: std::io::Error) -> gst::ErrorMessage {
        self.writer = None;
        gst::error_msg!(
            gst::ResourceError::Write,
            (
                "Writing {what} to stats-file {} failed: {e}; check the free space and the \
                 file system",
                quoted(&self.path.to_string_lossy())
            )
        )
    }
}

impl Sink for StatsFile {
    fn record(&mut self, _: &Env<'_>, pair: &mut Pair<'_>) -> Result<(), gst::ErrorMessage> {
        let Some(w) = self.writer.as_mut() else {
            return Ok(());
        };
        w.frame(0, pair.record)
            .map_err(|e| self.failed("a record", e))
    }

    fn window(&mut self, _: &Env<'_>, window: &Window) -> Result<(), gst::ErrorMessage> {
        let Some(w) = self.writer.as_mut() else {
            return Ok(());
        };
        w.window(0, window).map_err(|e| self.failed("a window", e))
    }

    fn event(&mut self, _: &Env<'_>, event: &EventRecord) -> Result<(), gst::ErrorMessage> {
        let Some(w) = self.writer.as_mut() else {
            return Ok(());
        };
        w.event(0, event).map_err(|e| self.failed("an event", e))
    }

    fn align(&mut self, _: &Env<'_>, a: &AlignRecord) -> Result<(), gst::ErrorMessage> {
        let Some(w) = self.writer.as_mut() else {
            return Ok(());
        };
        w.align(0, a)
            .map_err(|e| self.failed("an alignment record", e))
    }

    /// Each summary the bus gets is written after the records before it: after a flushing
    /// seek past EOS, the replayed pairs' records and the updated summary follow the first
    /// (see [`RecordWriter`]), so that the file and the bus agree.
    fn summary(&mut self, _: &Env<'_>, summary: &Summary) -> Result<(), gst::ErrorMessage> {
        let Some(w) = self.writer.as_mut() else {
            return Ok(());
        };
        w.summary(summary)
            .map_err(|e| self.failed("the summary", e))
    }

    /// Closes the file with the summary as it stands, unless it already ends with it.
    fn end(&mut self, summary: &Summary) {
        if let Some(mut w) = self.writer.take() {
            let _ = w.summary(summary);
            let _ = w.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use gpumetrics_engine::MetricSet;
    use gst::prelude::*;

    use super::super::tests::pair_of;
    use super::*;
    use crate::gpumetrics::settings::Settings;

    fn temp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("gpumetrics-{}-{name}", std::process::id()))
    }

    #[test]
    fn a_line_per_record_and_the_summary_once_at_the_end() {
        gst::init().unwrap();
        let element = gst::Bin::new().upcast::<gst::Element>();
        let settings = Settings::default();
        let env = Env {
            element: &element,
            settings: &settings,
        };
        let path = temp("sink.jsonl");
        let mut sink = StatsFile::create(&path, Format::Jsonl, MetricSet::PSNR).unwrap();
        let (record, scores, mut buffer) = pair_of(0, 30.0);
        let mut pair = Pair {
            record: &record,
            scores: &scores,
            buffer: &mut buffer,
            arrived: std::time::Instant::now(),
        };
        sink.record(&env, &mut pair).unwrap();
        let on_disk = std::fs::read_to_string(&path).unwrap();
        assert_eq!(on_disk.lines().count(), 1, "flushed per record: {on_disk}");
        let first = Summary {
            frames: 1,
            ..Default::default()
        };
        sink.summary(&env, &first).unwrap();
        // stop() after EOS: the same summary, not written twice.
        sink.end(&first);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<_> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[1].contains("\"frames\":1"), "{text}");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn end_writes_the_summary_of_a_run_that_posted_none() {
        gst::init().unwrap();
        let path = temp("end.csv");
        let mut sink = StatsFile::create(&path, Format::Csv, MetricSet::PSNR).unwrap();
        sink.end(&Summary::default());
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("unmatched-dist"), "{text}");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn errors_name_the_file_or_the_failed_write() {
        gst::init().unwrap();
        let e = StatsFile::create(
            Path::new("/nonexistent-dir/x.jsonl"),
            Format::Jsonl,
            MetricSet::PSNR,
        )
        .err()
        .unwrap()
        .to_string();
        assert!(e.contains("/nonexistent-dir/x.jsonl"), "{e}");
        if !Path::new("/dev/full").exists() {
            return;
        }
        let element = gst::Bin::new().upcast::<gst::Element>();
        let settings = Settings::default();
        let env = Env {
            element: &element,
            settings: &settings,
        };
        let mut sink =
            StatsFile::create(Path::new("/dev/full"), Format::Jsonl, MetricSet::PSNR).unwrap();
        let (record, scores, mut buffer) = pair_of(0, 30.0);
        let mut pair = Pair {
            record: &record,
            scores: &scores,
            buffer: &mut buffer,
            arrived: std::time::Instant::now(),
        };
        let e = sink.record(&env, &mut pair).unwrap_err().to_string();
        assert!(
            e.contains("Writing a record to stats-file /dev/full failed"),
            "{e}"
        );
        // The file is given up: nothing more is written, no further error.
        assert!(sink.record(&env, &mut pair).is_ok());
        assert!(sink.summary(&env, &Summary::default()).is_ok());
    }
}
