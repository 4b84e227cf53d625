// SPDX-License-Identifier: MPL-2.0
//! Which decoded frames reach the element. The element compares every pair it gets, so
//! `--offset`, `--every`, `--frames` and Ctrl-C are done here, by a buffer probe in front of
//! each of its sink pads:
//!
//! * offset: the first `skip` frames of one input are dropped and the later ones are moved
//!   back in time by the PTS distance they skipped, so that timestamp pairing lines them up
//!   with the other input's first frames;
//! * every: a frame is kept when its *reference frame index* is a multiple of N. The
//!   reference counts its own frames; the distorted input maps its PTS to the reference
//!   frame duration, so that differing frame rates still drop the same instants on both;
//! * frames / Ctrl-C: past the last wanted index (or once stop is asked) the gate sends EOS
//!   into the element, which then pools and posts the summary of what was measured; the
//!   decoder upstream gets `EOS` for its next buffer and stops.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use gst::prelude::*;

/// Settings of one input's gate.
#[derive(Debug, Clone, Copy, Default)]
pub struct GateConfig {
    /// Frames dropped at the start (`--offset`).
    pub skip: u64,
    /// Keep every N-th frame (`--every`), at least 1.
    pub every: u64,
    /// Number of pairs wanted (`--frames`).
    pub limit: Option<u64>,
    /// Reference frame duration, for mapping this input's PTS to reference frame indices;
    /// `None` counts this input's own frames (the reference, or sequence pairing).
    pub index_duration: Option<gst::ClockTime>,
}

/// What the gate does with one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Dropped by the offset.
    Offset,
    /// Dropped by `--every`.
    Skip,
    /// Passed on.
    Keep,
    /// Past the end: send EOS.
    End,
}

/// Decision logic, apart from GStreamer so that it can be tested on its own.
#[derive(Debug, Default)]
pub struct GateState {
    pub config: GateConfig,
    seen: u64,
    /// PTS of the first frame and of the first frame after the offset.
    first_pts: Option<gst::ClockTime>,
    base_pts: Option<gst::ClockTime>,
    pub skipped: u64,
    pub offset_dropped: u64,
}

impl GateState {
    pub fn new(config: GateConfig) -> Self {
        GateState {
            config: GateConfig {
                every: config.every.max(1),
                ..config
            },
            ..Default::default()
        }
    }

    /// The verdict for the next frame, and the amount to subtract from its PTS.
    pub fn next(&mut self, pts: Option<gst::ClockTime>) -> (Verdict, gst::ClockTime) {
        let n = self.seen;
        self.seen += 1;
        if n == 0 {
            self.first_pts = pts;
        }
        if n < self.config.skip {
            self.offset_dropped += 1;
            return (Verdict::Offset, gst::ClockTime::ZERO);
        }
        if n == self.config.skip {
            self.base_pts = pts;
        }
        let shift = match (self.first_pts, self.base_pts) {
            (Some(first), Some(base)) => base.saturating_sub(first),
            _ => gst::ClockTime::ZERO,
        };
        let own_index = n - self.config.skip;
        let index = match (self.config.index_duration, pts, self.base_pts) {
            (Some(fd), Some(pts), Some(base)) if fd.nseconds() > 0 => {
                let rel = pts.saturating_sub(base).nseconds();
                (rel + fd.nseconds() / 2) / fd.nseconds()
            }
            _ => own_index,
        };
        let every = self.config.every;
        if let Some(limit) = self.config.limit
            && index > (limit.saturating_sub(1)).saturating_mul(every)
        {
            return (Verdict::End, shift);
        }
        if index % every != 0 {
            self.skipped += 1;
            return (Verdict::Skip, shift);
        }
        (Verdict::Keep, shift)
    }
}

/// A gate installed on a pad; counters stay readable after the run.
#[derive(Clone)]
pub struct Gate {
    pub state: Arc<Mutex<GateState>>,
    stop: Arc<AtomicBool>,
    pub kept: Arc<AtomicU64>,
}

impl Gate {
    /// Installs the gate as a buffer probe on `pad` (in front of the element);
    /// `stop` ends the stream at the next buffer (Ctrl-C).
    pub fn install(pad: &gst::Pad, config: GateConfig, stop: Arc<AtomicBool>) -> Gate {
        let gate = Gate {
            state: Arc::new(Mutex::new(GateState::new(config))),
            stop,
            kept: Arc::new(AtomicU64::new(0)),
        };
        let g = gate.clone();
        let ended = AtomicBool::new(false);
        pad.add_probe(gst::PadProbeType::BUFFER, move |pad, info| {
            // `Handled` consumes the buffer here (gstreamer-rs drops it) and returns
            // `flow_res` upstream; `Drop` would have GStreamer unref it a second time.
            if ended.load(Ordering::SeqCst) {
                info.flow_res = Err(gst::FlowError::Eos);
                return gst::PadProbeReturn::Handled;
            }
            let Some(gst::PadProbeData::Buffer(buffer)) = info.data.as_mut() else {
                return gst::PadProbeReturn::Ok;
            };
            let (verdict, shift) = if g.stop.load(Ordering::SeqCst) {
                (Verdict::End, gst::ClockTime::ZERO)
            } else {
                let mut state = g.state.lock().unwrap_or_else(|e| e.into_inner());
                state.next(buffer.pts())
            };
            match verdict {
                Verdict::Offset | Verdict::Skip => {
                    info.flow_res = Ok(gst::FlowSuccess::Ok);
                    gst::PadProbeReturn::Handled
                }
                Verdict::End => {
                    ended.store(true, Ordering::SeqCst);
                    // The element pools what it has and posts the summary; upstream gets
                    // FlowError::Eos and stops decoding.
                    let eos = gst::event::Eos::new();
                    if pad.direction() == gst::PadDirection::Src {
                        pad.push_event(eos);
                    } else {
                        pad.send_event(eos);
                    }
                    info.flow_res = Err(gst::FlowError::Eos);
                    gst::PadProbeReturn::Handled
                }
                Verdict::Keep => {
                    g.kept.fetch_add(1, Ordering::Relaxed);
                    if shift > gst::ClockTime::ZERO {
                        let b = buffer.make_mut();
                        if let Some(pts) = b.pts() {
                            b.set_pts(pts.saturating_sub(shift));
                        }
                        if let Some(dts) = b.dts() {
                            b.set_dts(dts.saturating_sub(shift));
                        }
                    }
                    gst::PadProbeReturn::Ok
                }
            }
        });
        gate
    }

    pub fn skipped(&self) -> u64 {
        self.state.lock().map(|s| s.skipped).unwrap_or(0)
    }

    pub fn offset_dropped(&self) -> u64 {
        self.state.lock().map(|s| s.offset_dropped).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Option<gst::ClockTime> {
        Some(gst::ClockTime::from_mseconds(v))
    }

    fn run(config: GateConfig, pts: impl Iterator<Item = u64>) -> Vec<Verdict> {
        let mut g = GateState::new(config);
        pts.map(|t| g.next(ms(t)).0).collect()
    }

    #[test]
    fn offset_drops_and_shifts() {
        let mut g = GateState::new(GateConfig {
            skip: 2,
            every: 1,
            ..Default::default()
        });
        assert_eq!(g.next(ms(0)).0, Verdict::Offset);
        assert_eq!(g.next(ms(40)).0, Verdict::Offset);
        assert_eq!(
            g.next(ms(80)),
            (Verdict::Keep, gst::ClockTime::from_mseconds(80))
        );
        assert_eq!(
            g.next(ms(120)),
            (Verdict::Keep, gst::ClockTime::from_mseconds(80))
        );
        assert_eq!(g.offset_dropped, 2);
    }

    #[test]
    fn every_and_limit_by_own_index() {
        use Verdict::*;
        let v = run(
            GateConfig {
                every: 3,
                limit: Some(2),
                ..Default::default()
            },
            (0..8).map(|i| i * 40),
        );
        assert_eq!(v, [Keep, Skip, Skip, Keep, End, End, End, End]);
    }

    #[test]
    fn every_by_reference_time_at_double_rate() {
        use Verdict::*;
        // Distorted at 50 fps, reference at 25 fps: instants 0, 80 ms, 160 ms, ... kept.
        let v = run(
            GateConfig {
                every: 2,
                index_duration: Some(gst::ClockTime::from_mseconds(40)),
                ..Default::default()
            },
            (0..8).map(|i| i * 20),
        );
        // Indices (rounded): 0, 1 (0.5 rounds up), 1, 2 (1.5), 2, 3, 3, 4.
        assert_eq!(v, [Keep, Skip, Skip, Keep, Keep, Skip, Skip, Keep]);
    }
}
