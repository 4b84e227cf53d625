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
//! In both modes the element ends (EOS) when either input has ended and has no frame left;
//! frames still queued on the other input at that point are not compared.
//! In a live pipeline, when one input has a frame and the other none by the deadline (the
//! frame's running time + tolerance + pipeline latency), the frame is counted unmatched
//! instead of stalling the pipeline.

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

/// State of one input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Input {
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
    /// The reference head has no partner: count it unmatched and drop it.
    DropRef,
    /// The distorted head has no partner: count it unmatched, push it without scores.
    DropDist,
    /// One input has ended: finish (summary, EOS).
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

/// Decides the next step with the automatic tolerance. `timeout` is true when the
/// aggregator's live deadline has passed.
pub fn decide(mode: Mode, reference: Input, distorted: Input, timeout: bool) -> Decision {
    decide_with(mode, reference, distorted, timeout, None)
}

/// [`decide`] with a fixed tolerance (nanoseconds) instead of the automatic one, when given
/// (property `pairing-tolerance`).
pub fn decide_with(
    mode: Mode,
    reference: Input,
    distorted: Input,
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
                // Frames without a usable timestamp cannot be placed in time: they are
                // dropped as unmatched (reference first, so the output keeps flowing).
                (None, _) => Decision::DropRef,
                (_, None) => Decision::DropDist,
            },
        },
        (Some(_), None) => {
            if distorted.eos {
                Decision::Eos
            } else if timeout {
                Decision::DropRef
            } else {
                Decision::Wait
            }
        }
        (None, Some(_)) => {
            if reference.eos {
                Decision::Eos
            } else if timeout {
                Decision::DropDist
            } else {
                Decision::Wait
            }
        }
        (None, None) => {
            if reference.eos || distorted.eos {
                Decision::Eos
            } else {
                Decision::Wait
            }
        }
    }
}

/// The running time by which the earliest waiting head frame must have found its partner
/// (live deadline, before the pipeline latency is added); `None` when nothing is waiting.
pub fn deadline(
    reference: Option<Head>,
    distorted: Option<Head>,
    fixed_tolerance: Option<u64>,
) -> Option<u64> {
    let tol = fixed_tolerance.unwrap_or_else(|| {
        tolerance(
            reference.and_then(|h| h.duration),
            distorted.and_then(|h| h.duration),
        )
    });
    [reference, distorted]
        .into_iter()
        .flatten()
        .filter_map(|h| h.running_time)
        .min()
        .map(|t| t.saturating_add(tol))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn at(t: u64) -> Input {
        Input {
            head: Some(Head {
                running_time: Some(t * MS),
                duration: Some(40 * MS),
            }),
            eos: false,
        }
    }

    fn empty(eos: bool) -> Input {
        Input { head: None, eos }
    }

    /// Runs the pairing over two whole streams (frame start times in ms) like the element does,
    /// returning the paired times and the unmatched counts.
    fn run(mode: Mode, r: &[u64], d: &[u64]) -> (Vec<(u64, u64)>, u64, u64) {
        let (mut i, mut j) = (0, 0);
        let (mut pairs, mut ur, mut ud) = (vec![], 0, 0);
        loop {
            let ri = if i < r.len() { at(r[i]) } else { empty(true) };
            let di = if j < d.len() { at(d[j]) } else { empty(true) };
            match decide(mode, ri, di, false) {
                Decision::Pair => {
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
        assert_eq!(ud, 0); // 200 is left when the reference ends
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
        assert_eq!((ur, ud), (2, 1));
    }

    #[test]
    fn sequence_mode_ignores_timestamps() {
        let r = [0, 40, 80];
        let d = [1000, 1040, 1080, 1120];
        let (p, ur, ud) = run(Mode::Sequence, &r, &d);
        assert_eq!(p, vec![(0, 1000), (40, 1040), (80, 1080)]);
        assert_eq!((ur, ud), (0, 0));
    }

    #[test]
    fn eos_on_either_input_ends() {
        assert_eq!(
            decide(Mode::Timestamp, empty(true), at(0), false),
            Decision::Eos
        );
        assert_eq!(
            decide(Mode::Timestamp, at(0), empty(true), false),
            Decision::Eos
        );
        assert_eq!(
            decide(Mode::Sequence, empty(true), empty(false), false),
            Decision::Eos
        );
        assert_eq!(
            decide(Mode::Timestamp, empty(false), empty(false), false),
            Decision::Wait
        );
    }

    #[test]
    fn live_timeout_drops_the_lonely_frame() {
        assert_eq!(
            decide(Mode::Timestamp, at(0), empty(false), false),
            Decision::Wait
        );
        assert_eq!(
            decide(Mode::Timestamp, at(0), empty(false), true),
            Decision::DropRef
        );
        assert_eq!(
            decide(Mode::Sequence, empty(false), at(0), true),
            Decision::DropDist
        );
    }

    #[test]
    fn untimed_frames_are_unmatched_in_timestamp_mode() {
        let untimed = Input {
            head: Some(Head::default()),
            eos: false,
        };
        assert_eq!(
            decide(Mode::Timestamp, untimed, at(0), false),
            Decision::DropRef
        );
        assert_eq!(
            decide(Mode::Timestamp, at(0), untimed, false),
            Decision::DropDist
        );
        assert_eq!(
            decide(Mode::Sequence, untimed, untimed, false),
            Decision::Pair
        );
    }

    #[test]
    fn fixed_tolerance_overrides_half_a_frame() {
        // 15 ms apart: paired with the automatic 20 ms, not with a fixed 10 ms.
        assert_eq!(
            decide(Mode::Timestamp, at(0), at(15), false),
            Decision::Pair
        );
        assert_eq!(
            decide_with(Mode::Timestamp, at(0), at(15), false, Some(10 * MS)),
            Decision::DropRef
        );
        assert_eq!(
            decide_with(Mode::Timestamp, at(0), at(35), false, Some(35 * MS)),
            Decision::Pair
        );
    }

    #[test]
    fn tolerance_and_deadline() {
        assert_eq!(tolerance(Some(40), Some(20)), 10);
        assert_eq!(tolerance(None, Some(20)), 10);
        assert_eq!(tolerance(None, Some(0)), FALLBACK_TOLERANCE);
        assert_eq!(deadline(at(80).head, at(40).head, None), Some(60 * MS));
        assert_eq!(deadline(at(80).head, at(40).head, Some(MS)), Some(41 * MS));
        assert_eq!(deadline(None, None, None), None);
    }
}
