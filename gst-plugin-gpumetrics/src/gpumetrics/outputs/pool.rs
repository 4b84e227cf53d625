// SPDX-License-Identifier: MPL-2.0
//! The pooled summary: every score of the run (exact percentiles need them all, see the
//! README's "Summary") and the frames without a partner.

use gpumetrics_engine::Pooler;

use super::{Env, Input, Pair, Sink};
use crate::message::{EventCount, EventRecord, Summary};

#[derive(Default)]
pub(crate) struct Pool {
    pooler: Pooler,
    unmatched_ref: u64,
    unmatched_dist: u64,
    unaligned: u64,
    skipped: u64,
    /// Intervals that ended, per event and input.
    events: Vec<EventCount>,
}

/// The pooled statistics of `pooler` in the summary's layout (no counts besides `frames`).
pub(crate) fn summary_of(pooler: &Pooler) -> Summary {
    let s = pooler.summary();
    Summary {
        frames: s.frames,
        fields: s
            .fields
            .iter()
            .map(|(name, f)| (name.to_string(), *f))
            .collect(),
        ..Default::default()
    }
}

impl Pool {
    /// A skipped pair's terms of the span fields ([`Pooler::push_span_terms`]).
    pub(crate) fn span_terms(&mut self, scores: &gpumetrics_engine::Scores) {
        self.pooler.push_span_terms(scores, false);
    }

    /// The summary of what was recorded and counted so far (without the alert counts, which
    /// the outputs add).
    pub(crate) fn summary(&self) -> Summary {
        Summary {
            unmatched_ref: self.unmatched_ref,
            unmatched_dist: self.unmatched_dist,
            skipped: self.skipped,
            unaligned: self.unaligned,
            events: self.events.clone(),
            ..summary_of(&self.pooler)
        }
    }
}

impl Sink for Pool {
    fn record(&mut self, _: &Env<'_>, pair: &mut Pair<'_>) -> Result<(), gst::ErrorMessage> {
        self.pooler.push(pair.scores);
        Ok(())
    }

    fn unmatched(&mut self, side: Input) {
        match side {
            Input::Reference => self.unmatched_ref += 1,
            Input::Distorted => self.unmatched_dist += 1,
        }
    }

    fn skipped(&mut self) {
        self.skipped += 1;
    }

    fn unaligned(&mut self) {
        self.unaligned += 1;
    }

    fn event(&mut self, _: &Env<'_>, e: &EventRecord) -> Result<(), gst::ErrorMessage> {
        let Some(duration) = e.duration else {
            return Ok(());
        };
        let count = match self
            .events
            .iter_mut()
            .find(|c| c.event == e.event && c.input == e.input)
        {
            Some(c) => c,
            None => {
                self.events.push(EventCount {
                    event: e.event.clone(),
                    input: e.input.clone(),
                    ..Default::default()
                });
                self.events.last_mut().expect("just pushed")
            }
        };
        count.intervals += 1;
        count.seconds += duration as f64 / 1e9;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::pair_of;
    use super::*;
    use crate::gpumetrics::settings::Settings;
    use gst::prelude::*;

    #[test]
    fn pools_scores_and_counts_unmatched_frames() {
        gst::init().unwrap();
        let element = gst::Bin::new().upcast::<gst::Element>();
        let settings = Settings::default();
        let env = Env {
            element: &element,
            settings: &settings,
        };
        let mut pool = Pool::default();
        assert_eq!(pool.summary(), Summary::default());
        for (i, v) in [10.0, 20.0, f64::INFINITY].into_iter().enumerate() {
            let (record, scores, mut buffer) = pair_of(i as u64, v);
            let mut pair = Pair {
                record: &record,
                scores: &scores,
                buffer: &mut buffer,
                arrived: std::time::Instant::now(),
            };
            pool.record(&env, &mut pair).unwrap();
        }
        pool.unmatched(Input::Reference);
        pool.unmatched(Input::Distorted);
        pool.unmatched(Input::Distorted);
        pool.skipped();
        let s = pool.summary();
        assert_eq!(
            (s.frames, s.unmatched_ref, s.unmatched_dist, s.skipped),
            (3, 1, 2, 1)
        );
        let y = s.field("psnr-y").unwrap();
        assert_eq!((y.min, y.max, y.p50), (10.0, f64::INFINITY, 20.0));
    }
}
