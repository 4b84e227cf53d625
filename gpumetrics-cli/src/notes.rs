// SPDX-License-Identifier: MPL-2.0
//! The notes on stderr that say what the run does (the backend, the decoding, the
//! alignment found, conversions): they are for people, so `--quiet` leaves them out, and
//! they never go to stdout, which may carry the records.

/// Prints notes on stderr unless `--quiet`.
pub struct Notes {
    pub quiet: bool,
}

impl Notes {
    pub fn say(&self, text: impl AsRef<str>) {
        if !self.quiet {
            eprintln!("{}", text.as_ref());
        }
    }
}
