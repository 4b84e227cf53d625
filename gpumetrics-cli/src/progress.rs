// SPDX-License-Identifier: MPL-2.0
//! Progress on stderr: a bar (frames, pairs/s, ETA) on a terminal, plain lines every few
//! seconds otherwise (CI logs, redirected stderr), nothing with `--quiet`.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Seconds between plain progress lines.
const PLAIN_EVERY: Duration = Duration::from_secs(5);

pub struct Progress {
    bar: Option<ProgressBar>,
    plain: bool,
    quiet: bool,
    total: Option<u64>,
    start: Instant,
    last_line: Instant,
}

impl Progress {
    /// `total`: the expected number of compared pairs, when the duration is known.
    pub fn new(total: Option<u64>, quiet: bool) -> Progress {
        let terminal = std::io::stderr().is_terminal();
        let bar = (!quiet && terminal).then(|| {
            let bar = match total {
                Some(t) => ProgressBar::with_draw_target(Some(t), ProgressDrawTarget::stderr()),
                None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
            };
            let template = if total.is_some() {
                "{bar:40.cyan/blue} {pos}/{len} pairs  {rate}  ETA {eta}  {msg}"
            } else {
                "{spinner} {pos} pairs  {rate}  {elapsed}  {msg}"
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style.with_key(
                    "rate",
                    |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                        let _ = write!(w, "{:.1} pairs/s", s.per_sec());
                    },
                ));
            }
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Progress {
            bar,
            plain: !quiet && !terminal,
            quiet,
            total,
            start: Instant::now(),
            last_line: Instant::now(),
        }
    }

    /// `pairs` compared so far.
    pub fn update(&mut self, pairs: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(pairs);
        } else if self.plain && self.last_line.elapsed() >= PLAIN_EVERY {
            self.last_line = Instant::now();
            eprintln!("{}", self.line(pairs));
        }
    }

    /// A note shown with the bar (or as a line).
    pub fn note(&self, text: &str) {
        if self.quiet {
            return;
        }
        match &self.bar {
            Some(bar) => bar.println(text),
            None => eprintln!("{text}"),
        }
    }

    fn line(&self, pairs: u64) -> String {
        let secs = self.start.elapsed().as_secs_f64().max(1e-3);
        let rate = pairs as f64 / secs;
        match self.total {
            Some(t) if rate > 0.0 && t >= pairs => format!(
                "progress: {pairs}/{t} pairs, {rate:.1} pairs/s, ETA {:.0} s",
                (t - pairs) as f64 / rate
            ),
            _ => format!("progress: {pairs} pairs, {rate:.1} pairs/s"),
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
            eprintln!(
                "progress: {pairs} pairs in {secs:.1} s ({:.1} pairs/s)",
                pairs as f64 / secs.max(1e-3)
            );
        }
    }
}
