// SPDX-License-Identifier: MPL-2.0
//! The per-frame records for programs (`--format jsonl|json|csv`), written by
//! [`gstgpumetrics::records`] in the command's layouts
//! ([`Style::Command`](gstgpumetrics::records::Style::Command)), which its documentation
//! describes (with the several-distorted-files `distorted` key and column, and +inf as
//! `null` in JSON and `inf` in CSV):
//!
//! * `csv`: a header `frame,pts,running-time,duration,<fields>` (every field the run's
//!   metrics can produce, in registry order), then one row per compared pair and nothing
//!   else.
//! * `jsonl`: a `header` record, then `frame` records, `window` and `event` records where
//!   the element posted them, and the `summary` last; each has `type`.
//! * `json`: one document `{"header":..,"frames":[..],"windows":[..],"events":[..],
//!   "summary":..}`, the frames streamed as they are measured.

use std::io::{self, Write};

use gpumetrics_engine::metric;
pub use gstgpumetrics::records::Format as Layout;
use gstgpumetrics::records::RecordWriter;
use serde::Serialize;

/// The writer of the command's records.
pub type Records = RecordWriter<Box<dyn Write>>;

/// Starts the records on `out`: the header record (JSON layouts; `header`, the run's
/// description) or the CSV header row (the columns: `columns`, registry field names in
/// order, [`crate::fields::of_run`]; a name the registry does not declare has no column).
/// With several distorted files, `distorted` names them (as given) and the records say
/// which one they belong to; with one (or none), the single-file layouts.
pub fn start(
    layout: Layout,
    out: Box<dyn Write>,
    columns: &[&str],
    header: &impl Serialize,
    distorted: Vec<String>,
) -> io::Result<Records> {
    let columns = columns.iter().filter_map(|c| metric::field(c)).collect();
    RecordWriter::command(layout, out, columns, header, distorted)
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

    /// The command's columns are the names it gives, in its order.
    #[test]
    fn columns_by_name() {
        let out = Shared::default();
        start(
            Layout::Csv,
            Box::new(out.clone()),
            &["ms-ssim", "psnr-y"],
            &(),
            vec!["a".into(), "b".into()],
        )
        .unwrap();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            text,
            "distorted,frame,pts,running-time,duration,ms-ssim,psnr-y\n"
        );
    }
}
