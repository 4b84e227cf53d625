// SPDX-License-Identifier: MPL-2.0
//! Builds the run's pipeline and runs it: which frames the gates let through (offset,
//! `--every`, `--frames`), how many pairs the progress display expects, and a second build
//! when a distorted input's raw format differs from the reference's (4:2:0 against 4:4:4):
//! that fails at the first frames, and the input is then converted to the reference's
//! format, as other quality tools do.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::Result;

use crate::cli::{Args, PairingArg};
use crate::decoding::{self, Decodings};
use crate::flow::Setup;
use crate::gate::GateConfig;
use crate::lineup::Lineup;
use crate::output::RecordSink;
use crate::pipeline::{self, BuiltRun, Decoding, PipelineConfig};
use crate::plan::Plan;
use crate::run::{self, Outcome, Report};
use crate::{monitor, progress};

/// The reference's and the distorted inputs' frames skipped at the start for `offset`.
pub fn skips(offset: i64) -> (u64, u64) {
    if offset >= 0 {
        (0, offset as u64)
    } else {
        (offset.unsigned_abs(), 0)
    }
}

/// The gates of each pair (reference, distorted): the offset's skip, and every pair up to
/// the last one wanted (the element scores every N-th).
fn gates(args: &Args, plan: &Plan, lineup: &Lineup, offset: i64) -> [GateConfig; 2] {
    let (ref_skip, dist_skip) = skips(offset);
    let limit = args.frames.map(|f| (f - 1).saturating_mul(plan.every) + 1);
    [
        GateConfig {
            skip: ref_skip,
            every: 1,
            limit,
            index_duration: None,
        },
        GateConfig {
            skip: dist_skip,
            every: 1,
            limit,
            // One input counts its own frames.
            index_duration: if args.pairing == PairingArg::Timestamp {
                lineup.reference.as_ref().and_then(|r| r.frame_duration())
            } else {
                None
            },
        },
    ]
}

/// The pairs expected of all distorted inputs together (with one input measured alone,
/// its frames), for the progress bar; none when an input's length is not known.
fn total(args: &Args, plan: &Plan, lineup: &Lineup, offset: i64) -> Option<u64> {
    let (ref_skip, dist_skip) = skips(offset);
    let sized = lineup.sized();
    let n = sized.estimated_frames()?;
    Some(
        lineup
            .distorted
            .iter()
            .map(|d| {
                let mut pairs = n.saturating_sub(ref_skip);
                if lineup.reference.is_some()
                    && let Some(m) = d.estimated_frames()
                    && d.framerate == sized.framerate
                {
                    pairs = pairs.min(m.saturating_sub(dist_skip));
                }
                let pairs = pairs.div_ceil(plan.every);
                args.frames.map_or(pairs, |f| pairs.min(f))
            })
            .sum(),
    )
}

/// The element's settings and each branch's, but for the distorted inputs'
/// ([`pipeline::Distorted`]).
pub fn config(
    args: &Args,
    plan: &Plan,
    lineup: &Lineup,
    decodings: &Decodings,
    offset: i64,
    device: u32,
) -> PipelineConfig {
    PipelineConfig {
        metrics: plan.metrics.clone(),
        backend: args.backend.name(),
        device,
        pairing: pairing(args),
        options: args.metric_options.clone(),
        map: args
            .map
            .as_ref()
            .or(args.map_video.as_ref())
            .map(|m| m.kind.name()),
        map_video: args.map_video.as_ref().map(|m| m.dir.clone()),
        scale_to: None,
        convert_to: None,
        decoding: [
            decodings.reference.clone().unwrap_or(Decoding::Software),
            Decoding::Software,
        ],
        gates: gates(args, plan, lineup, offset),
        monitoring: monitor::Monitoring {
            window: args.window,
            alerts: plan.alerts.as_ref().map(|(joined, _)| joined.clone()),
            subsample: plan.subsample,
            roi: args.roi,
            prometheus: args.prometheus.clone(),
            align: (lineup.live && args.align.is_some())
                .then(|| crate::align::live_range(args, lineup)),
            ..Default::default()
        },
    }
}

/// The element's `pairing`.
pub fn pairing(args: &Args) -> &'static str {
    match args.pairing {
        PairingArg::Timestamp => "timestamp",
        PairingArg::Sequence => "sequence",
    }
}

/// Builds and runs the pipeline, writing the records to `sink` as they come (`keep`: kept
/// too, for the plot and the per-frame table); again with the inputs converted whose raw
/// format differs from the reference's. The pipeline (for what it saw) and each distorted
/// input's outcome, in the order given.
pub fn measure(
    setup: &Setup,
    sink: &mut RecordSink,
    report: &Report,
    keep: bool,
    stop: &Arc<AtomicBool>,
) -> Result<(BuiltRun, Vec<Outcome>)> {
    let Setup {
        args,
        plan,
        lineup,
        decodings,
        notes,
        ..
    } = *setup;
    let first = setup.devices.first().copied().unwrap_or(0);
    let config = config(args, plan, lineup, decodings, setup.offset, first);
    let total = total(args, plan, lineup, setup.offset);
    let reference = lineup.reference.as_ref().zip(decodings.reference.as_ref());
    let unit = if plan.single { "frames" } else { "pairs" };
    let mut convert_to: Vec<Option<String>> = vec![None; lineup.distorted.len()];
    loop {
        let each: Vec<pipeline::Distorted> = lineup
            .distorted
            .iter()
            .enumerate()
            .map(|(i, input)| pipeline::Distorted {
                input,
                device: setup.devices.get(i).copied().unwrap_or(first),
                decoding: decodings.distorted[i].clone(),
                scale_to: lineup.scale_to[i],
                convert_to: convert_to[i].clone(),
            })
            .collect();
        let built = pipeline::build_run(&config, reference, &each, stop.clone())?;
        let mut progress = progress::Progress::new(total, args.quiet, lineup.live, unit);
        let e = match run::run_elements(
            &built.pipeline,
            &built.elements,
            stop,
            sink,
            &mut progress,
            keep,
            report,
            args.verbose,
        ) {
            Ok(outcomes) => return Ok((built, outcomes)),
            Err(e) => e,
        };
        let mut again = false;
        for (i, caps) in built.caps.iter().enumerate() {
            let [r, d] = caps.each_ref().map(decoding::format);
            if let (Some(r), Some(d)) = (r, d)
                && r != d
                && convert_to[i].is_none()
            {
                notes.say(if lineup.several() {
                    format!(
                        "formats differ (reference {r}, {} {d}): converting it to {r}",
                        lineup.distorted[i].given
                    )
                } else {
                    format!(
                        "formats differ (reference {r}, distorted {d}): converting the \
                         distorted video to {r} ({})",
                        match decodings.distorted[i] {
                            Decoding::Nvdec(_) => "cudaconvert",
                            Decoding::Software => "videoconvert",
                        }
                    )
                });
                convert_to[i] = Some(r);
                again = true;
            }
        }
        if !again {
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli;
    use crate::input::Input;

    fn args(line: &[&str]) -> Args {
        let matches = cli::command().get_matches_from(line);
        cli::from_matches(&matches).unwrap()
    }

    fn plan(single: bool, every: u64) -> Plan {
        Plan {
            single,
            metrics: "psnr".into(),
            run_fields: Vec::new(),
            rules: Vec::new(),
            subsample: None,
            every,
            skipped_by: "--every",
            alerts: None,
        }
    }

    /// A file of `frames` frames at 10 fps (never opened).
    fn clip(role: &'static str, given: &str, frames: u64, fps: i32) -> Input {
        Input {
            role,
            given: given.into(),
            uri: format!("file:///nonexistent/{given}"),
            width: 64,
            height: 48,
            framerate: Some(gst::Fraction::new(fps, 1)),
            duration: Some(gst::ClockTime::from_mseconds(frames * 1000 / fps as u64)),
            caps: None,
            live: false,
            raw: None,
        }
    }

    fn lineup(reference: Option<Input>, distorted: Vec<Input>) -> Lineup {
        let n = distorted.len();
        Lineup {
            reference,
            distorted,
            scale_to: vec![None; n],
            live: false,
        }
    }

    #[test]
    fn an_offset_skips_the_start_of_one_input() {
        assert_eq!(skips(0), (0, 0));
        assert_eq!(skips(3), (0, 3));
        assert_eq!(skips(-2), (2, 0));
    }

    /// The progress total of several files is the sum of each pair's, each as long as its
    /// shorter input allows (after the offset), when the rates agree; one file is N = 1.
    #[test]
    fn the_progress_total_adds_each_distorted_inputs_pairs() {
        let a = args(&["gpumetrics", "ref.y4m", "a.y4m", "b.y4m"]);
        let reference = || Some(clip("reference", "ref.y4m", 10, 10));
        let several = lineup(
            reference(),
            vec![
                clip("distorted", "a.y4m", 10, 10),
                clip("distorted", "b.y4m", 6, 10),
            ],
        );
        assert_eq!(total(&a, &plan(false, 1), &several, 0), Some(16));
        assert_eq!(total(&a, &plan(false, 1), &several, 2), Some(12));
        assert_eq!(total(&a, &plan(false, 1), &several, -3), Some(13));
        assert_eq!(total(&a, &plan(false, 2), &several, 0), Some(8));
        // Another rate: its pairs are not bounded by its own length.
        let rates = lineup(reference(), vec![clip("distorted", "a.y4m", 5, 5)]);
        assert_eq!(total(&a, &plan(false, 1), &rates, 0), Some(10));
        let one = lineup(reference(), vec![clip("distorted", "b.y4m", 6, 10)]);
        let frames = args(&["gpumetrics", "ref.y4m", "b.y4m", "--frames", "4"]);
        assert_eq!(total(&frames, &plan(false, 1), &one, 0), Some(4));
        // One input alone counts its own frames.
        let alone = lineup(None, vec![clip("distorted", "b.y4m", 6, 10)]);
        let single = args(&["gpumetrics", "b.y4m"]);
        assert_eq!(total(&single, &plan(true, 1), &alone, 0), Some(6));
    }

    /// The distorted gate pairs by the reference's frame duration (timestamp pairing), and
    /// the limit covers the pairs `--every` leaves unscored.
    #[test]
    fn the_gates_follow_offset_every_and_frames() {
        let a = args(&["gpumetrics", "ref.y4m", "a.y4m", "--frames", "3"]);
        let one = lineup(
            Some(clip("reference", "ref.y4m", 10, 10)),
            vec![clip("distorted", "a.y4m", 10, 10)],
        );
        let [r, d] = gates(&a, &plan(false, 2), &one, -1);
        assert_eq!((r.skip, d.skip), (1, 0));
        assert_eq!((r.limit, d.limit), (Some(5), Some(5)));
        assert_eq!(r.index_duration, None);
        assert_eq!(d.index_duration, Some(gst::ClockTime::from_mseconds(100)));
        let alone = lineup(None, vec![clip("distorted", "a.y4m", 10, 10)]);
        let [_, d] = gates(&args(&["gpumetrics", "a.y4m"]), &plan(true, 1), &alone, 0);
        assert_eq!((d.index_duration, d.limit), (None, None));
    }
}
