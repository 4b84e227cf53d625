// SPDX-License-Identifier: MPL-2.0
//! Progress on stderr: a bar (frames, pairs/s, ETA) on a terminal, plain lines every few
//! seconds otherwise (CI logs, redirected stderr), nothing with `--quiet`. A live input has
//! no end to estimate: its display is the running time, the pairs and the latest window's
//! means instead. Lines printed during the run (windows on stdout, notes and alerts on
//! stderr) go around the bar.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::monitor;

/// Seconds between plain progress lines.
const PLAIN_EVERY: Duration = Duration::from_secs(5);

pub struct Progress {
    bar: Option<ProgressBar>,
    plain: bool,
    quiet: bool,
    total: Option<u64>,
    live: bool,
    /// What is counted: `pairs`, or `frames` for one input measured alone.
    unit: &'static str,
    pairs: u64,
    /// Running time of the latest pair (ns).
    running_time: Option<u64>,
    /// The latest window's span and means (live display).
    window: Option<String>,
    start: Instant,
    last_line: Instant,
}

const RATE_KEY: &str = "rate";

fn style(total: Option<u64>, live: bool, unit: &'static str) -> Option<ProgressStyle> {
    let template = match (total, live) {
        (_, true) => "{spinner} live  {msg}".to_string(),
        (Some(_), false) => {
            format!("{{bar:40.cyan/blue}} {{pos}}/{{len}} {unit}  {{rate}}  ETA {{eta}}  {{msg}}")
        }
        (None, false) => format!("{{spinner}} {{pos}} {unit}  {{rate}}  {{elapsed}}  {{msg}}"),
    };
    let style = ProgressStyle::with_template(&template).ok()?;
    Some(style.with_key(
        RATE_KEY,
        move |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{:.1} {unit}/s", s.per_sec());
        },
    ))
}

impl Progress {
    /// `total`: the expected number of compared pairs (`unit`: `pairs`; or of frames,
    /// `frames`, for one input measured alone), when the duration is known; `live`: an input
    /// is live (no total, no ETA).
    pub fn new(total: Option<u64>, quiet: bool, live: bool, unit: &'static str) -> Progress {
        let terminal = std::io::stderr().is_terminal();
        let total = total.filter(|_| !live);
        let bar = (!quiet && terminal).then(|| {
            let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::stderr());
            if let Some(style) = style(total, live, unit) {
                bar.set_style(style);
            }
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Progress {
            bar,
            plain: !quiet && !terminal,
            quiet,
            total,
            live,
            unit,
            pairs: 0,
            running_time: None,
            window: None,
            start: Instant::now(),
            last_line: Instant::now(),
        }
    }

    pub fn is_live(&self) -> bool {
        self.live
    }

    /// The pipeline turned out live (it does not preroll): no ETA from here on.
    pub fn set_live(&mut self) {
        self.live = true;
        self.total = None;
        if let Some(bar) = &self.bar {
            bar.unset_length();
            if let Some(style) = style(None, true, self.unit) {
                bar.set_style(style);
            }
        }
    }

    /// `pairs` compared so far; `running_time` (ns) of the latest.
    pub fn update(&mut self, pairs: u64, running_time: Option<u64>) {
        self.pairs = pairs;
        if running_time.is_some() {
            self.running_time = running_time;
        }
        if let Some(bar) = &self.bar {
            bar.set_position(pairs);
            if self.live {
                bar.set_message(self.live_text());
            }
        } else if self.plain && self.last_line.elapsed() >= PLAIN_EVERY {
            self.last_line = Instant::now();
            eprintln!("{}", self.line(pairs));
        }
    }

    /// The latest window (`values`: its span and means), shown by the live display.
    pub fn window(&mut self, values: String) {
        self.window = Some(values);
        if let (Some(bar), true) = (&self.bar, self.live) {
            bar.set_message(self.live_text());
        }
    }

    /// A note on stderr, shown with the bar (or as a line); none with `--quiet`.
    pub fn note(&self, text: &str) {
        if self.quiet {
            return;
        }
        match &self.bar {
            Some(bar) => bar.println(text),
            None => eprintln!("{text}"),
        }
    }

    /// A line on stdout (results: windows), printed around the bar.
    pub fn out(&self, text: &str) {
        use std::io::Write;
        let print = || {
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "{text}");
            let _ = stdout.flush();
        };
        match &self.bar {
            Some(bar) => bar.suspend(print),
            None => print(),
        }
    }

    fn rate(&self, pairs: u64) -> f64 {
        pairs as f64 / self.start.elapsed().as_secs_f64().max(1e-3)
    }

    /// Running time, pairs, rate and the latest window (the live display's text).
    fn live_text(&self) -> String {
        let unit = self.unit;
        let mut text = format!(
            "running time {}, {} {unit}, {:.1} {unit}/s",
            self.running_time.map_or("-".into(), monitor::clock),
            self.pairs,
            self.rate(self.pairs)
        );
        if let Some(w) = &self.window {
            text.push_str("; last ");
            text.push_str(w);
        }
        text
    }

    fn line(&self, pairs: u64) -> String {
        let rate = self.rate(pairs);
        let unit = self.unit;
        match self.total {
            _ if self.live => format!("progress: live, {}", self.live_text()),
            Some(t) if rate > 0.0 && t >= pairs => format!(
                "progress: {pairs}/{t} {unit}, {rate:.1} {unit}/s, ETA {:.0} s",
                (t - pairs) as f64 / rate
            ),
            _ => format!("progress: {pairs} {unit}, {rate:.1} {unit}/s"),
        }
    }

    /// Clears the bar; a plain run ends with a closing line.
    pub fn finish(&mut self, pairs: u64) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        // A run that failed before its first pair says nothing here (its error does).
        if self.plain && pairs > 0 {
            let secs = self.start.elapsed().as_secs_f64();
            let unit = self.unit;
            eprintln!(
                "progress: {pairs} {unit} in {secs:.1} s ({:.1} {unit}/s)",
                pairs as f64 / secs.max(1e-3)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_lines_show_running_time_and_the_last_window_not_an_eta() {
        let mut p = Progress::new(Some(100), true, false, "pairs");
        assert!(p.line(10).contains("10/100 pairs"), "{}", p.line(10));
        p.set_live();
        p.update(42, Some(12_345_000_000));
        p.window("window 00:00:11.000–00:00:12.000: 30 pairs, psnr-y 35.000".into());
        let line = p.line(42);
        assert!(
            line.starts_with("progress: live, running time 00:00:12.345, 42 pairs, "),
            "{line}"
        );
        assert!(
            line.ends_with("; last window 00:00:11.000–00:00:12.000: 30 pairs, psnr-y 35.000"),
            "{line}"
        );
        assert!(!line.contains("ETA") && !line.contains("/100"), "{line}");
        // Live from the start: no total even when one is given.
        let p = Progress::new(Some(100), true, true, "pairs");
        assert!(p.is_live() && p.total.is_none());
        // One input: frames.
        let p = Progress::new(Some(100), true, false, "frames");
        assert!(
            p.line(10).starts_with("progress: 10/100 frames"),
            "{}",
            p.line(10)
        );
    }
}
