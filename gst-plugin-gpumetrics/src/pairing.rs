// SPDX-License-Identifier: MPL-2.0
//! Which reference and distorted frames are compared: pure decision logic, no GStreamer pads.
//!
//! `timestamp` mode (default): the head frames of both inputs are paired when their running
//! times differ by at most the *tolerance*: half the shorter frame duration of the two
//! (buffer duration, else 1/framerate from the caps), or [`FALLBACK_TOLERANCE`] when neither
//! input knows its frame duration. Otherwise the earlier frame has no partner: it is counted
//! as unmatched and dropped (a distorted frame is still pushed downstream, without scores).
//! A frame is never compared with a frame of a different time.
//!
//! The property `pairing-tolerance` replaces the automatic tolerance by a fixed one.
//!
//! `sequence` mode: the n-th reference frame is compared with the n-th distorted frame,
//! whatever their timestamps.
//!
//! Frames without a timestamp (no PTS, or none inside the segment) cannot be placed in time:
//! in `timestamp` mode a pair with such a frame is compared in sequence
//! ([`Decision::PairUntimed`]), and the element warns once.
//!
//! When one input has ended, the frames still arriving on the other one are counted as
//! unmatched until it ends too, so that the summary accounts for every frame; the element
//! ends (EOS) when both inputs have ended. In a live pipeline, when one input has a frame and
//! the other none by the deadline (the frame's running time + tolerance + pipeline latency),
//! the frame is counted unmatched instead of stalling the pipeline; an input that stalls
//! without EOS after the other one ended is given up at the same kind of deadline.
/// Which pairing rule is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Timestamp,
    Sequence,
}

/// Tolerance used when no frame duration is known: 1 ms.
pub const FALLBACK_TOLERANCE: u64 = 1_000_000;

/// The head frame of one input, as far as pairing is concerned (times in nanoseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Head {
    /// Running time of the frame, if it has a valid PTS inside the segment.
    pub running_time: Option<u64>,
    /// Frame duration: the buffer's, else the caps' 1/framerate.
    pub duration: Option<u64>,
}

/// State of one input pad: its head frame and whether it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PadState {
    /// The frame at the head of the queue, if any.
    pub head: Option<Head>,
    /// The input received EOS (and, with `head == None`, has nothing left).
    pub eos: bool,
}

/// What to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Compare the two head frames.
    Pair,
    /// Compare the two head frames, in sequence: at least one of them has no timestamp.
    PairUntimed,
    /// The reference head has no partner: count it unmatched and drop it.
    DropRef,
    /// The distorted head has no partner: count it unmatched, push it without scores.
    DropDist,
    /// Both inputs have ended (or, live, the one left stalled): finish (summary, EOS).
    Eos,
    /// Wait for more data.
    Wait,
}

/// Pairing tolerance for two head frames (nanoseconds).
pub fn tolerance(a: Option<u64>, b: Option<u64>) -> u64 {
    match (a.filter(|d| *d > 0), b.filter(|d| *d > 0)) {
        (Some(a), Some(b)) => a.min(b) / 2,
        (Some(d), None) | (None, Some(d)) => d / 2,
        (None, None) => FALLBACK_TOLERANCE,
    }
}

/// Decides the next step. `timeout` is true when the aggregator's live deadline has passed;
/// `fixed_tolerance` (nanoseconds) replaces the automatic one when given (property
/// `pairing-tolerance`).
pub fn decide(
    mode: Mode,
    reference: PadState,
    distorted: PadState,
    timeout: bool,
    fixed_tolerance: Option<u64>,
) -> Decision {
    match (reference.head, distorted.head) {
        (Some(r), Some(d)) => match mode {
            Mode::Sequence => Decision::Pair,
            Mode::Timestamp => match (r.running_time, d.running_time) {
                (Some(rt), Some(dt)) => {
                    let tol = fixed_tolerance.unwrap_or_else(|| tolerance(r.duration, d.duration));
                    if rt.abs_diff(dt) <= tol {
                        Decision::Pair
                    } else if rt < dt {
                        Decision::DropRef
                    } else {
                        Decision::DropDist
                    }
                }
                _ => Decision::PairUntimed,
            },
        },
        // The other input has ended: nothing can ever pair with this frame.
        (Some(_), None) if distorted.eos || timeout => Decision::DropRef,
        (None, Some(_)) if reference.eos || timeout => Decision::DropDist,
        (None, None) if reference.eos && distorted.eos => Decision::Eos,
        // One input ended, the other (live) delivered nothing by the deadline.
        (None, None) if (reference.eos || distorted.eos) && timeout => Decision::Eos,
        _ => Decision::Wait,
    }
}

/// Largest deadline handed to the aggregator: beyond it (a tolerance of centuries) there is
/// no deadline at all, so that the base class's `deadline + latency` cannot overflow.
pub const MAX_DEADLINE: u64 = u64::MAX / 4;

/// The running time by which the earliest waiting head frame must have found its partner
/// (live deadline, before the pipeline latency is added). With no frame waiting, `last_end`
/// (where the frames seen so far end) + tolerance: the deadline of an input that stalls.
/// `None` when there is nothing to wait for or the deadline is out of reach.
pub fn deadline(
    reference: Option<Head>,
    distorted: Option<Head>,
    last_end: Option<u64>,
    fixed_tolerance: Option<u64>,
) -> Option<u64> {
    let tol = fixed_tolerance.unwrap_or_else(|| {
        tolerance(
            reference.and_then(|h| h.duration),
            distorted.and_then(|h| h.duration),
        )
    });
    let waiting = [reference, distorted]
        .into_iter()
        .flatten()
        .filter_map(|h| h.running_time)
        .min();
    let base = if reference.is_none() && distorted.is_none() {
        last_end
    } else {
        waiting
    };
    base.map(|t| t.saturating_add(tol))
        .filter(|t| *t <= MAX_DEADLINE)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn at(t: u64) -> PadState {
        PadState {
            head: Some(Head {
                running_time: Some(t * MS),
                duration: Some(40 * MS),
            }),
            eos: false,
        }
    }

    fn empty(eos: bool) -> PadState {
        PadState { head: None, eos }
    }

    /// Runs the pairing over two whole streams (frame start times in ms) like the element does,
    /// returning the paired times and the unmatched counts.
    fn run(mode: Mode, r: &[u64], d: &[u64]) -> (Vec<(u64, u64)>, u64, u64) {
        let (mut i, mut j) = (0, 0);
        let (mut pairs, mut ur, mut ud) = (vec![], 0, 0);
        loop {
            let ri = if i < r.len() { at(r[i]) } else { empty(true) };
            let di = if j < d.len() { at(d[j]) } else { empty(true) };
            match decide(mode, ri, di, false, None) {
                Decision::Pair | Decision::PairUntimed => {
                    pairs.push((r[i], d[j]));
                    i += 1;
                    j += 1;
                }
                Decision::DropRef => {
                    ur += 1;
                    i += 1;
                }
                Decision::DropDist => {
                    ud += 1;
                    j += 1;
                }
                Decision::Eos => return (pairs, ur, ud),
                Decision::Wait => panic!("non-live run must never wait"),
            }
        }
    }

    #[test]
    fn identical_streams_pair_one_to_one() {
        let t: Vec<u64> = (0..5).map(|i| i * 40).collect();
        let (p, ur, ud) = run(Mode::Timestamp, &t, &t);
        assert_eq!(p, t.iter().map(|&x| (x, x)).collect::<Vec<_>>());
        assert_eq!((ur, ud), (0, 0));
    }

    #[test]
    fn drops_on_either_side_are_unmatched_never_mispaired() {
        let r = [0, 40, 80, 120, 160, 200];
        let d = [0, 80, 120, 200]; // 40 and 160 dropped
        let (p, ur, ud) = run(Mode::Timestamp, &r, &d);
        assert!(p.iter().all(|(a, b)| a == b));
        assert_eq!(p.len(), 4);
        assert_eq!((ur, ud), (2, 0));
        let (p, ur, ud) = run(Mode::Timestamp, &d, &r);
        assert!(p.iter().all(|(a, b)| a == b));
        assert_eq!((ur, ud), (0, 2));
    }

    #[test]
    fn different_start_times() {
        let r = [0, 40, 80, 120, 160];
        let d = [80, 120, 160, 200];
        let (p, ur, ud) = run(Mode::Timestamp, &r, &d);
        assert_eq!(p, vec![(80, 80), (120, 120), (160, 160)]);
        assert_eq!(ur, 2);
        assert_eq!(ud, 1); // 200 arrives after the reference ended: unmatched
    }

    #[test]
    fn jitter_within_half_a_frame_pairs() {
        let r = [0, 40, 80];
        let d = [19, 59, 80];
        let (p, ur, ud) = run(Mode::Timestamp, &r, &d);
        assert_eq!(p, vec![(0, 19), (40, 59), (80, 80)]);
        assert_eq!((ur, ud), (0, 0));
        // 30 ms off is more than half of 40 ms: not the same frame.
        let (p, ur, ud) = run(Mode::Timestamp, &[0, 80], &[30, 110]);
        assert!(p.is_empty());
        assert_eq!((ur, ud), (2, 2));
    }

    #[test]
    fn sequence_mode_ignores_timestamps() {
        let r = [0, 40, 80];
        let d = [1000, 1040, 1080, 1120];
        let (p, ur, ud) = run(Mode::Sequence, &r, &d);
        assert_eq!(p, vec![(0, 1000), (40, 1040), (80, 1080)]);
        assert_eq!((ur, ud), (0, 1)); // 1120 has no partner
    }

    #[test]
    fn the_input_left_is_drained_until_it_ends() {
        // One input ended: the other one's frames are unmatched, not silently dropped.
        assert_eq!(
            decide(Mode::Timestamp, empty(true), at(0), false, None),
            Decision::DropDist
        );
        assert_eq!(
            decide(Mode::Sequence, at(0), empty(true), false, None),
            Decision::DropRef
        );
        // ... and the element waits for its EOS (non-live), or its deadline (live).
        assert_eq!(
            decide(Mode::Sequence, empty(true), empty(false), false, None),
            Decision::Wait
        );
        assert_eq!(
            decide(Mode::Sequence, empty(true), empty(false), true, None),
            Decision::Eos
        );
        assert_eq!(
            decide(Mode::Timestamp, empty(true), empty(true), false, None),
            Decision::Eos
        );
        assert_eq!(
            decide(Mode::Timestamp, empty(false), empty(false), true, None),
            Decision::Wait
        );
        // Whole streams: 150 reference frames against 90 distorted ones.
        let r: Vec<u64> = (0..150).map(|i| i * 40).collect();
        let (p, ur, ud) = run(Mode::Timestamp, &r, &r[..90]);
        assert_eq!((p.len(), ur, ud), (90, 60, 0));
        let (p, ur, ud) = run(Mode::Sequence, &r[..90], &r);
        assert_eq!((p.len(), ur, ud), (90, 0, 60));
    }

    #[test]
    fn live_timeout_drops_the_lonely_frame() {
        assert_eq!(
            decide(Mode::Timestamp, at(0), empty(false), false, None),
            Decision::Wait
        );
        assert_eq!(
            decide(Mode::Timestamp, at(0), empty(false), true, None),
            Decision::DropRef
        );
        assert_eq!(
            decide(Mode::Sequence, empty(false), at(0), true, None),
            Decision::DropDist
        );
    }

    #[test]
    fn untimed_frames_are_compared_in_sequence() {
        let untimed = PadState {
            head: Some(Head::default()),
            eos: false,
        };
        assert_eq!(
            decide(Mode::Timestamp, untimed, at(0), false, None),
            Decision::PairUntimed
        );
        assert_eq!(
            decide(Mode::Timestamp, at(0), untimed, false, None),
            Decision::PairUntimed
        );
        assert_eq!(
            decide(Mode::Sequence, untimed, untimed, false, None),
            Decision::Pair
        );
    }

    #[test]
    fn fixed_tolerance_overrides_half_a_frame() {
        // 15 ms apart: paired with the automatic 20 ms, not with a fixed 10 ms.
        assert_eq!(
            decide(Mode::Timestamp, at(0), at(15), false, None),
            Decision::Pair
        );
        assert_eq!(
            decide(Mode::Timestamp, at(0), at(15), false, Some(10 * MS)),
            Decision::DropRef
        );
        assert_eq!(
            decide(Mode::Timestamp, at(0), at(35), false, Some(35 * MS)),
            Decision::Pair
        );
    }

    #[test]
    fn tolerance_and_deadline() {
        assert_eq!(tolerance(Some(40), Some(20)), 10);
        assert_eq!(tolerance(None, Some(20)), 10);
        assert_eq!(tolerance(None, Some(0)), FALLBACK_TOLERANCE);
        assert_eq!(
            deadline(at(80).head, at(40).head, None, None),
            Some(60 * MS)
        );
        assert_eq!(
            deadline(at(80).head, at(40).head, None, Some(MS)),
            Some(41 * MS)
        );
        assert_eq!(deadline(None, None, None, None), None);
        // Nothing waiting: the end of what was seen, plus the tolerance.
        assert_eq!(
            deadline(None, None, Some(200 * MS), None),
            Some(200 * MS + FALLBACK_TOLERANCE)
        );
    }

    #[test]
    fn huge_tolerances_saturate_to_no_deadline() {
        // Issue 10: pairing-tolerance=18446744073709551614 made the deadline GST_CLOCK_TIME_NONE.
        for tol in [u64::MAX - 1, u64::MAX, i64::MAX as u64, MAX_DEADLINE] {
            let d = deadline(at(80).head, None, None, Some(tol));
            assert!(d.is_none_or(|d| d <= MAX_DEADLINE), "{tol}: {d:?}");
            assert_eq!(
                decide(Mode::Timestamp, at(0), at(1_000_000), false, Some(tol)),
                Decision::Pair
            );
        }
        assert_eq!(
            deadline(at(80).head, None, None, Some(MAX_DEADLINE - 80 * MS)),
            Some(MAX_DEADLINE)
        );
    }
}
