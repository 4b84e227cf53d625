// SPDX-License-Identifier: MPL-2.0
//! Values quoted in error messages, bounded: a property or a command option can hold
//! megabytes (an `alerts` string pasted twice, a generated `roi`), and an error that echoed
//! it whole would be as large, in the bus message, the log and the terminal. Every error of
//! the element and of the `gpumetrics` command that quotes a value it was given goes
//! through [`quoted`]: up to [`LIMIT`] characters are shown as they are, a longer value is
//! cut there and its length stated (`abc...(1048576 characters)`), so the start of the
//! value still says which one it is.

use std::fmt;

/// Characters of a quoted value shown before it is cut.
pub const LIMIT: usize = 200;

/// A value as an error quotes it: whole up to [`LIMIT`] characters, else its first
/// [`LIMIT`] characters followed by `...(N characters)`. The caller writes the quote marks.
#[derive(Debug, Clone, Copy)]
pub struct Quoted<'a>(&'a str);

/// `text` bounded for an error message (see [`Quoted`]).
pub fn quoted(text: &str) -> Quoted<'_> {
    Quoted(text)
}

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.char_indices().nth(LIMIT) {
            None => f.write_str(self.0),
            Some((cut, _)) => write!(
                f,
                "{}...({} characters)",
                &self.0[..cut],
                self.0.chars().count()
            ),
        }
    }
}

/// `message`, a text made elsewhere (the engine's error for a metric option) that may
/// contain `value` whole, as is or in Rust's `{:?}` form: each occurrence bounded as
/// [`quoted`] does. A short value leaves the message unchanged.
pub fn bounded_within(message: &str, value: &str) -> String {
    if value.chars().count() <= LIMIT {
        return message.to_string();
    }
    let debug = format!("{value:?}");
    let debug_inner = &debug[1..debug.len() - 1];
    let mut out = message.replace(debug_inner, &quoted(debug_inner).to_string());
    if out.contains(value) {
        out = out.replace(value, &quoted(value).to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_values_are_whole_and_long_ones_cut_with_their_length() {
        assert_eq!(quoted("psnr-y<30").to_string(), "psnr-y<30");
        let exact = "x".repeat(LIMIT);
        assert_eq!(quoted(&exact).to_string(), exact);
        let long = "é".repeat(1 << 20);
        let q = quoted(&long).to_string();
        assert_eq!(
            q,
            format!("{}...(1048576 characters)", "é".repeat(LIMIT)),
            "cut on a character boundary, counted in characters"
        );
    }

    #[test]
    fn a_long_value_inside_a_message_is_bounded_in_either_form() {
        let value = "a".repeat(100_000);
        let message = format!("VMAF model {value:?} is neither a built-in model nor a file");
        let b = bounded_within(&message, &value);
        assert!(b.len() < 400, "{b}");
        assert!(b.contains("...(100000 characters)\" is neither"), "{b}");
        let plain = format!("cannot open {value}: no such file");
        assert!(bounded_within(&plain, &value).len() < 400);
        assert_eq!(bounded_within("vmaf-model: x", "x"), "vmaf-model: x");
    }
}
