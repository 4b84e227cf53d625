//! The aligner on synthetic streams: thumbnails of a picture that changes every frame (each
//! frame's cells from a hash of its index), the distorted copy with a little noise, at
//! running times that put it at a known offset.

use super::*;
use gpumetrics_kernels::thumb::CELLS;

const T: u64 = 40_000_000;

fn hash(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Source frame `i`: a moving part (some cells change a lot from frame to frame) over a
/// still background; `noise` adds coding noise of a few tenths.
fn picture(i: u64, noise: u64) -> Thumbnail {
    let mut cells = [0f32; CELLS];
    for (c, v) in cells.iter_mut().enumerate() {
        let still = (hash(c as u64) % 160) as f32 + 40.0;
        let moving = if hash(i * 131 + c as u64).is_multiple_of(8) {
            (hash(i * 7 + c as u64) % 100) as f32
        } else {
            0.0
        };
        let n = if noise > 0 {
            (hash(noise * 1_000_003 + i * 1009 + c as u64) % 100) as f32 / 100.0 - 0.5
        } else {
            0.0
        };
        *v = still + moving + n;
    }
    Thumbnail::from_cells(cells)
}

fn still() -> Thumbnail {
    Thumbnail::from_cells([100.0; CELLS])
}

/// A frame on one input: its running time and the source frame it shows.
#[derive(Clone, Copy, Debug)]
struct At {
    time: u64,
    shows: u64,
    reference: bool,
}

/// Runs the frames in running-time order (reference first at equal times); payload = the
/// source frame shown.
fn run(frames: &mut [At], range: u64, picture: impl Fn(u64, bool) -> Thumbnail) -> Vec<Step<u64>> {
    frames.sort_by_key(|f| (f.time, !f.reference));
    let mut a = Aligner::new(range);
    let mut steps = Vec::new();
    for f in frames.iter() {
        let incoming = Incoming {
            running_time: f.time,
            duration: Some(T),
            thumbnail: picture(f.shows, !f.reference),
            buffer: f.shows,
        };
        steps.extend(if f.reference {
            a.push_reference(incoming)
        } else {
            a.push_distorted(incoming)
        });
        assert!(
            a.held() <= (range / T) as usize + 3 * WINDOW,
            "held {}",
            a.held()
        );
    }
    steps.extend(a.finish());
    steps
}

fn noisy(i: u64, distorted: bool) -> Thumbnail {
    picture(i, u64::from(distorted))
}

fn references(n: u64, start: u64) -> Vec<At> {
    (0..n)
        .map(|i| At {
            time: start + i * T,
            shows: i,
            reference: true,
        })
        .collect()
}

fn changes(steps: &[Step<u64>]) -> Vec<&Change> {
    steps
        .iter()
        .filter_map(|s| match s {
            Step::Change(c) if c.state != AlignState::Searching => Some(c),
            _ => None,
        })
        .collect()
}

/// Every pair shows the same source frame on both sides; returns their count.
fn pairs_match(steps: &[Step<u64>]) -> usize {
    let mut n = 0;
    for s in steps {
        if let Step::Pair {
            reference,
            distorted,
            ..
        } = s
        {
            assert_eq!(reference, distorted, "a pair of different frames");
            n += 1;
        }
    }
    n
}

#[test]
fn a_late_distorted_copy_locks_at_its_delay_and_pairs_the_same_frames() {
    // The distorted copy shows frame i 1.3 s later, on a clock 7 s ahead (another base),
    // its times jittering by up to ±12 ms (a demuxer's clock recovery).
    let delay = 1_300_000_000 + 7_000_000_000;
    let mut frames = references(300, 0);
    frames.extend((0..300).map(|i| At {
        time: delay + i * T + hash(i) % 24_000_000 - 12_000_000,
        shows: i,
        reference: false,
    }));
    let steps = run(&mut frames, 10_000_000_000, noisy);
    let c = changes(&steps);
    assert_eq!(c[0].state, AlignState::Locked);
    let offset = c[0].offset.unwrap();
    assert!((offset - delay as i64).abs() <= 6_000_000, "{offset}");
    assert_eq!(c[0].offset_frames, Some(208)); // 8.3 s / 40 ms = 207.5
    assert!(c[0].confidence > 0.9, "{}", c[0].confidence);
    assert!(
        c.iter()
            .all(|c| c.state == AlignState::Locked && c.relocks == 0)
    );
    // Locked after the window; every later distorted frame has its partner.
    let unaligned = steps
        .iter()
        .filter(|s| matches!(s, Step::Unaligned { .. }))
        .count();
    assert!(unaligned < WINDOW + CONFIRM as usize + 1, "{unaligned}");
    // The reference frames shown before the copy is still within reach are unmatched.
    assert_eq!(pairs_match(&steps), 300 - unaligned);
}

#[test]
fn an_early_distorted_copy_waits_for_its_partners() {
    // The distorted side is 0.5 s ahead: its frames wait for the reference frames.
    let mut frames = references(200, 500_000_000);
    frames.extend((0..200).map(|i| At {
        time: i * T,
        shows: i,
        reference: false,
    }));
    let steps = run(&mut frames, 2_000_000_000, noisy);
    let c = changes(&steps);
    assert_eq!(c[0].offset, Some(-500_000_000));
    assert_eq!(c[0].offset_frames, Some(-13)); // 12.5 frames, rounded away from 0
    assert!(pairs_match(&steps) > 150);
}

#[test]
fn a_still_picture_never_locks_and_says_so() {
    let mut frames = references(200, 0);
    frames.extend((0..200).map(|i| At {
        time: 1_000_000_000 + i * T,
        shows: i,
        reference: false,
    }));
    let steps = run(&mut frames, 5_000_000_000, |_, _| still());
    assert!(changes(&steps).is_empty());
    let searching: Vec<&Change> = steps
        .iter()
        .filter_map(|s| match s {
            Step::Change(c) => Some(c),
            _ => None,
        })
        .collect();
    assert!(!searching.is_empty());
    assert!(searching.iter().all(|c| c.confidence < 0.1));
    assert_eq!(pairs_match(&steps), 0);
}

#[test]
fn drops_keep_the_lock_and_a_repeat_that_shifts_the_content_relocks() {
    // Distorted: 40 frames (1.6 s) late; frames 100..110 dropped (the time goes on); then
    // frame 199 shown 5 more times, everything after it 5 frames later.
    let delay = 1_600_000_000;
    let mut frames = references(400, 0);
    let mut slot = 0;
    for i in 0..360u64 {
        if (100..110).contains(&i) {
            slot += 1;
            continue;
        }
        let repeats = if i == 199 { 6 } else { 1 };
        for _ in 0..repeats {
            frames.push(At {
                time: delay + slot * T,
                shows: i,
                reference: false,
            });
            slot += 1;
        }
    }
    let steps = run(&mut frames, 5_000_000_000, noisy);
    let c = changes(&steps);
    let states: Vec<AlignState> = c
        .iter()
        .map(|c| c.state)
        .filter(|s| *s != AlignState::Locked)
        .collect();
    assert_eq!(states, [AlignState::Lost], "{c:?}");
    let last = c.last().unwrap();
    assert_eq!(last.state, AlignState::Locked);
    assert_eq!(last.offset, Some(delay as i64 + 5 * T as i64));
    assert_eq!(last.relocks, 1);
    // Each loss ends the sequence first.
    let lost_at = steps
        .iter()
        .position(|s| matches!(s, Step::Change(c) if c.state == AlignState::Lost))
        .unwrap();
    assert!(matches!(steps[lost_at - 1], Step::SequenceEnd));
    // The ten dropped frames' reference partners are unmatched, never paired wrongly.
    let pairs = pairs_match(&steps);
    assert!(pairs > 280, "{pairs}");
    let unmatched_dist = steps
        .iter()
        .filter(|s| matches!(s, Step::UnmatchedDistorted { .. }))
        .count();
    assert_eq!(unmatched_dist, 0);
}

#[test]
fn memory_follows_the_offset_once_locked() {
    let delay = 400_000_000;
    let mut frames = references(300, 0);
    frames.extend((0..300).map(|i| At {
        time: delay + i * T,
        shows: i,
        reference: false,
    }));
    frames.sort_by_key(|f| (f.time, !f.reference));
    let mut a = Aligner::new(5_000_000_000);
    let mut most_locked = 0;
    for f in &frames {
        let incoming = Incoming {
            running_time: f.time,
            duration: Some(T),
            thumbnail: noisy(f.shows, !f.reference),
            buffer: f.shows,
        };
        if f.reference {
            a.push_reference(incoming);
        } else {
            a.push_distorted(incoming);
        }
        if a.state() == AlignState::Locked {
            most_locked = most_locked.max(a.held());
        }
    }
    // About the offset's worth (10 frames) and the frame in between.
    assert!(most_locked <= 12, "{most_locked}");
}

#[test]
fn a_live_input_arriving_a_frame_later_relocks_at_once_without_a_search() {
    // Distorted: 40 frames late; from frame 200 on it arrives one frame later still (a
    // sender's hiccup: the content goes on, its times jump by a frame).
    let delay = 1_600_000_000;
    let mut frames = references(400, 0);
    frames.extend((0..360u64).map(|i| At {
        time: delay + i * T + if i >= 200 { T } else { 0 },
        shows: i,
        reference: false,
    }));
    let steps = run(&mut frames, 5_000_000_000, noisy);
    let c = changes(&steps);
    let states: Vec<AlignState> = c
        .iter()
        .map(|c| c.state)
        .filter(|s| *s != AlignState::Locked)
        .collect();
    assert_eq!(states, [AlignState::Lost], "{c:?}");
    let last = c.last().unwrap();
    assert_eq!(last.state, AlignState::Locked);
    assert_eq!(last.offset, Some(delay as i64 + T as i64));
    // No search between the loss and the new lock.
    let lost_at = steps
        .iter()
        .position(|s| matches!(s, Step::Change(c) if c.state == AlignState::Lost))
        .unwrap();
    assert!(
        matches!(&steps[lost_at + 1], Step::Change(c) if c.state == AlignState::Locked),
        "{:?}",
        &steps[lost_at + 1..lost_at + 3]
    );
    // Only the misfits before the loss (and the first lock's search) go unmeasured.
    let unaligned_after_lock = steps
        .iter()
        .skip_while(|s| !matches!(s, Step::Change(c) if c.state == AlignState::Locked))
        .filter(|s| matches!(s, Step::Unaligned { .. }))
        .count();
    assert!(
        unaligned_after_lock <= WINDOW / 2 + 2,
        "{unaligned_after_lock}"
    );
    assert!(pairs_match(&steps) > 360 - 2 * WINDOW - CONFIRM as usize - 12);
}

#[test]
fn a_distorted_stream_whose_quality_falls_keeps_its_lock() {
    // From frame 150 on the distorted copy's coding noise is ten times larger (an encoder
    // starved of bits): its pairs cost far more than the lock's usual, yet their own offset
    // still fits them far better than any other. Not a splice: every pair is measured.
    let delay = 600_000_000;
    let mut frames = references(300, 0);
    frames.extend((0..300).map(|i| At {
        time: delay + i * T,
        shows: i,
        reference: false,
    }));
    let steps = run(&mut frames, 2_000_000_000, |i, distorted| {
        let mut t = picture(i, 0);
        if distorted {
            let amplitude = if i >= 150 { 10.0 } else { 1.0 };
            let noise = picture(i, 7);
            let clean = picture(i, 0);
            let mut cells = [0f32; CELLS];
            for (c, v) in cells.iter_mut().enumerate() {
                *v = clean.cells()[c] + amplitude * (noise.cells()[c] - clean.cells()[c]);
            }
            t = Thumbnail::from_cells(cells);
        }
        t
    });
    let c = changes(&steps);
    assert!(c.iter().all(|c| c.state == AlignState::Locked), "{c:?}");
    assert_eq!(c[0].offset, Some(delay as i64));
    let unaligned_after_lock = steps
        .iter()
        .skip_while(|s| !matches!(s, Step::Change(c) if c.state == AlignState::Locked))
        .filter(|s| matches!(s, Step::Unaligned { .. }))
        .count();
    assert_eq!(unaligned_after_lock, 0);
    assert!(pairs_match(&steps) > 300 - WINDOW - CONFIRM as usize - 2);
}
