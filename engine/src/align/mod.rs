//! Live alignment by content: which reference frame each distorted frame shows, when the
//! two inputs come from different boxes with unrelated timestamps and a delay that changes
//! when either side drops or repeats frames.
//!
//! Every frame is reduced to a [`Thumbnail`] (its luma as 32×18 cell means). The
//! [`Aligner`] keeps the reference frames of the last `range` and the recent distorted
//! thumbnails, and tries every offset `δ` (distorted running time minus reference running
//! time) on the lattice of the reference frames within `±range`: an offset's cost is the
//! mean [`Thumbnail::distance`] of the newest [`WINDOW`] distorted frames to the reference
//! frames `δ` earlier. The cheapest offset wins when it is clearly cheaper than any offset
//! two or more frames away: `confidence = 1 − best / second` of at least
//! [`LOCK_CONFIDENCE`], and a second best of at least [`MIN_CONTRAST`] (still pictures and
//! slates make every offset alike: the state stays `searching`, with a low confidence),
//! on [`CONFIRM`] distorted frames in a row.
//!
//! Once locked, each distorted frame is paired with the reference frame nearest its running
//! time minus `δ` (within half a frame), whatever the timestamps: a reference frame that
//! had no distorted partner (a frame the distorted side dropped, or one shown before it
//! started) is unmatched. Every pair is checked against the offsets up to [`NEAR`] frames
//! either side: a pair that another of them fits clearly better (a repeated or dropped
//! frame moved the content) is not measured (it counts as unaligned), and the lock is lost
//! when half of the last [`WINDOW`] pairs are such misfits or far worse than the lock's
//! usual cost while fitting no better than the offsets around it (a splice; a distorted
//! stream whose quality falls costs more too, but its own offset still stands out), or when over them an offset a frame or two away fits twice as
//! well (drift). A jump of more than [`NEAR`] frames is measured against the old offset
//! until that (at most [`WINDOW`]/2 pairs). When the misfits that ended the lock agree on
//! one offset up to [`NEAR`] frames away, it locks there at once (no search): a
//! live input whose arrival jumps by a frame (a sender's hiccup under load) loses only
//! those misfits. Otherwise the search starts over on the frames that follow, and locks
//! again without a restart.
//!
//! Memory: while searching, the reference frames of the last `range` are held (their
//! buffers: 5 s at 30 frames/s is 150 frames); once locked only those that a later
//! distorted frame can still pair with (about the offset's worth). When the distorted
//! input is ahead (a negative offset), its frames wait for their partners, at most `range`.
//!
//! Pure logic, generic over the frames' payload `B` (the element's buffers): the element
//! computes the thumbnails and carries out the [`Step`]s.

pub mod cuda;
pub mod thumbnail;

use std::collections::{HashMap, VecDeque};

pub use thumbnail::{Thumbnail, of_host};

/// Distorted frames an offset is judged on, and pairs the lock is checked on.
pub const WINDOW: usize = 16;
/// Lowest confidence that locks.
pub const LOCK_CONFIDENCE: f64 = 0.75;
/// Searches in a row that must find the same offset before it locks: the first frames of a
/// stream that just started are often timed unevenly (a demuxer still learning the
/// sender's clock), which can favour a wrong offset for a few frames.
pub const CONFIRM: u32 = 4;
/// Lowest cost of the second best offset that locks (mean squared difference of the
/// thumbnails' 8-bit cell means): below it the picture hardly changes from frame to frame.
pub const MIN_CONTRAST: f32 = 1.0;
/// A pair is far off the lock when its cost exceeds this many times the lock's usual cost
/// (plus [`BAD_MARGIN`]).
const BAD_FACTOR: f32 = 4.0;
const BAD_MARGIN: f32 = 2.0;
/// Offsets either side of the lock's that each pair is checked against (frames): a drop
/// or repeat that moves the content by up to this many frames is seen at its first pair.
const NEAR: i64 = 12;
/// A pair misfits when an offset nearby fits it this much better (and by at least
/// [`MIN_CONTRAST`]).
const MISFIT: f32 = 0.5;
/// While searching, a `searching` change is reported this often (ns of running time).
const SEARCH_REPORT: u64 = 1_000_000_000;
/// Frames held on either input, whatever the timestamps say.
const MAX_FRAMES: usize = 4096;

/// Where the alignment is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlignState {
    /// No offset found yet: distorted frames pass unmeasured.
    Searching,
    /// Pairs are measured at the found offset.
    Locked,
    /// The offset stopped fitting: the search starts over.
    Lost,
}

impl AlignState {
    pub fn name(self) -> &'static str {
        match self {
            AlignState::Searching => "searching",
            AlignState::Locked => "locked",
            AlignState::Lost => "lost",
        }
    }
}

/// A change of the alignment (and, while searching, its progress).
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub state: AlignState,
    /// Distorted minus reference running time (ns): the lock's, the one lost, or the best
    /// candidate while searching (none before the first try).
    pub offset: Option<i64>,
    /// `offset` in frames of the reference (rounded).
    pub offset_frames: Option<i64>,
    /// 0..1: how much better the offset fits than the others.
    pub confidence: f64,
    /// Running time (distorted input) of the frame that decided the change.
    pub running_time: u64,
    /// Locks after the first one, so far.
    pub relocks: u64,
}

/// What the element does next, in this order.
#[derive(Debug)]
pub enum Step<B> {
    /// Measure this pair.
    Pair {
        reference: B,
        distorted: B,
        /// Running times of both frames.
        reference_time: u64,
        distorted_time: u64,
    },
    /// A reference frame that never had a distorted partner.
    UnmatchedReference { buffer: B, running_time: u64 },
    /// A distorted frame whose reference partner is missing (dropped upstream, or older than
    /// what is held).
    UnmatchedDistorted { buffer: B, running_time: u64 },
    /// A distorted frame that passed while no offset was locked: counted, never measured.
    Unaligned { buffer: B, running_time: u64 },
    /// The lock is lost: pairs measured so far end their sequence (temporal metrics).
    SequenceEnd,
    /// Report a change.
    Change(Change),
}

/// A frame handed to the aligner.
#[derive(Debug)]
pub struct Incoming<B> {
    pub running_time: u64,
    /// Its duration, when known (buffer or caps).
    pub duration: Option<u64>,
    pub thumbnail: Thumbnail,
    pub buffer: B,
}

struct Reference<B> {
    time: u64,
    thumbnail: Thumbnail,
    /// The buffer, while a distorted frame may still pair with it.
    buffer: Option<B>,
    paired: bool,
}

impl<B> Reference<B> {
    /// Lets go of its buffer: unmatched when no distorted frame was paired with it.
    fn release(&mut self) -> Option<Step<B>> {
        let buffer = self.buffer.take()?;
        (!self.paired).then_some(Step::UnmatchedReference {
            buffer,
            running_time: self.time,
        })
    }
}

struct Distorted {
    time: u64,
    thumbnail: Thumbnail,
    /// Its distance to the reference frames the search compared it with, by their time:
    /// consecutive searches share all their frames but one.
    distances: HashMap<u64, f32>,
}

struct Lock {
    offset: i64,
    /// The usual cost of a pair: the lock's, then followed as pairs come.
    baseline: f32,
    /// Per recent pair: its cost at offsets `offset + k·frame`, k = −NEAR..=NEAR (NaN
    /// where that reference frame is missing).
    checks: VecDeque<[f32; (2 * NEAR + 1) as usize]>,
    /// Per recent pair: whether a nearby offset fitted it clearly better.
    misfits: VecDeque<bool>,
    /// Per recent pair: whether it was far off (see [`Aligner::check`]).
    far_off: VecDeque<bool>,
    /// Per recent measured pair: distorted minus reference time. Their median is the
    /// offset (it follows a slow drift between the senders' clocks).
    times: VecDeque<i64>,
    confidence: f64,
    /// When the last `locked` progress was reported.
    reported: u64,
}

/// The alignment state of one pair of inputs. See the module documentation.
pub struct Aligner<B> {
    range: u64,
    /// The reference's frame duration (ns): from the durations given, else the spacing of
    /// its first frames.
    frame: Option<u64>,
    references: VecDeque<Reference<B>>,
    /// Distorted thumbnails since the last loss, for the search.
    distorted: VecDeque<Distorted>,
    /// Distorted frames waiting for their reference partner (negative offsets).
    waiting: VecDeque<Incoming<B>>,
    lock: Option<Lock>,
    /// Locks so far.
    locks: u64,
    lost: bool,
    /// When the last `searching` progress was reported.
    search_reported: Option<u64>,
    /// The offset the last searches agreed on, and how many in a row.
    candidate: Option<(i64, u32)>,
}

impl<B: Clone> Aligner<B> {
    /// Searches offsets within `±range` ns.
    pub fn new(range: u64) -> Aligner<B> {
        Aligner {
            range,
            frame: None,
            references: VecDeque::new(),
            distorted: VecDeque::new(),
            waiting: VecDeque::new(),
            lock: None,
            locks: 0,
            lost: false,
            search_reported: None,
            candidate: None,
        }
    }

    /// The state now.
    pub fn state(&self) -> AlignState {
        match (&self.lock, self.lost) {
            (Some(_), _) => AlignState::Locked,
            (None, true) => AlignState::Lost,
            (None, false) => AlignState::Searching,
        }
    }

    /// The locked offset (ns), if any.
    pub fn offset(&self) -> Option<i64> {
        self.lock.as_ref().map(|l| l.offset)
    }

    /// Reference frames whose buffers are held.
    pub fn held(&self) -> usize {
        self.references
            .iter()
            .filter(|r| r.buffer.is_some())
            .count()
            + self.waiting.len()
    }

    fn note_duration(&mut self, duration: Option<u64>, time: u64) {
        if self.frame.is_none() {
            self.frame = duration.filter(|d| *d > 0).or_else(|| {
                self.references
                    .back()
                    .map(|r| time.saturating_sub(r.time))
                    .filter(|d| *d > 0)
            });
        }
    }

    /// A reference frame arrived.
    pub fn push_reference(&mut self, f: Incoming<B>) -> Vec<Step<B>> {
        let mut steps = Vec::new();
        if self
            .references
            .back()
            .is_some_and(|r| f.running_time <= r.time)
        {
            // Time went back (a new segment): what was held cannot pair across it.
            self.restart(&mut steps, f.running_time);
        }
        self.note_duration(f.duration, f.running_time);
        self.references.push_back(Reference {
            time: f.running_time,
            thumbnail: f.thumbnail,
            buffer: Some(f.buffer),
            paired: false,
        });
        self.evict(&mut steps);
        self.pair_waiting(&mut steps, false);
        steps
    }

    /// A distorted frame arrived.
    pub fn push_distorted(&mut self, f: Incoming<B>) -> Vec<Step<B>> {
        let mut steps = Vec::new();
        if self
            .distorted
            .back()
            .is_some_and(|d| f.running_time <= d.time)
        {
            self.restart(&mut steps, f.running_time);
        }
        self.distorted.push_back(Distorted {
            time: f.running_time,
            thumbnail: f.thumbnail.clone(),
            distances: HashMap::new(),
        });
        let keep = self.range + 2 * WINDOW as u64 * self.frame.unwrap_or(0);
        while self.distorted.len() > MAX_FRAMES
            || self
                .distorted
                .front()
                .is_some_and(|d| d.time + keep < f.running_time)
        {
            self.distorted.pop_front();
        }
        if self.lock.is_none() {
            self.search(&mut steps, f.running_time);
        }
        if self.lock.is_some() {
            self.waiting.push_back(f);
            self.pair_waiting(&mut steps, false);
            self.evict(&mut steps);
        } else {
            steps.push(Step::Unaligned {
                buffer: f.buffer,
                running_time: f.running_time,
            });
        }
        steps
    }

    /// Both inputs ended: the waiting frames are paired where they can be, the rest is
    /// unmatched.
    pub fn finish(&mut self) -> Vec<Step<B>> {
        let mut steps = Vec::new();
        self.pair_waiting(&mut steps, true);
        for mut r in self.references.drain(..) {
            steps.extend(r.release());
        }
        steps
    }

    /// Drops what is held (a flushing seek, or time going back): the reference frames are
    /// unmatched, the waiting distorted ones unaligned, and the search starts over.
    fn restart(&mut self, steps: &mut Vec<Step<B>>, time: u64) {
        if self.lock.is_some() {
            self.lose(steps, time);
        }
        for mut r in self.references.drain(..) {
            steps.extend(r.release());
        }
        self.distorted.clear();
    }

    /// Forgets reference frames older than the range, and, locked, lets go of the buffers
    /// no later distorted frame can pair with.
    fn evict(&mut self, steps: &mut Vec<Step<B>>) {
        let Some(newest) = self.references.back().map(|r| r.time) else {
            return;
        };
        let frame = self.frame.unwrap_or(0);
        let keep = self.range + 2 * frame + WINDOW as u64 * frame;
        // The oldest reference time a distorted frame still to come can pair with.
        let needed = self.lock.as_ref().and_then(|l| {
            let last = self.distorted.back()?.time;
            let oldest_waiting = self.waiting.front().map_or(last, |w| w.running_time);
            Some((oldest_waiting as i64 - l.offset - frame as i64 / 2).max(0) as u64)
        });
        while self.references.len() > MAX_FRAMES
            || self
                .references
                .front()
                .is_some_and(|r| r.time + keep < newest)
        {
            let mut r = self.references.pop_front().expect("checked");
            steps.extend(r.release());
        }
        // Locked: what no later distorted frame can pair with; searching: what is older
        // than the range, of no use to any offset.
        let release_before = needed.or_else(|| {
            self.lock
                .is_none()
                .then(|| newest.saturating_sub(self.range + frame))
        });
        if let Some(before) = release_before {
            for r in self.references.iter_mut() {
                if r.time >= before {
                    break;
                }
                steps.extend(r.release());
            }
        }
    }

    /// The index of the reference frame nearest `time`, within half a frame.
    fn nearest(&self, time: i64) -> Option<usize> {
        nearest(&self.references, self.frame?, time)
    }

    /// Pairs the waiting distorted frames whose partner time has been reached by the
    /// reference input (all of them with `all`).
    fn pair_waiting(&mut self, steps: &mut Vec<Step<B>>, all: bool) {
        loop {
            let Some(lock) = &self.lock else {
                // No lock (it was lost): the waiting frames pass unmeasured.
                for w in self.waiting.drain(..) {
                    steps.push(Step::Unaligned {
                        buffer: w.buffer,
                        running_time: w.running_time,
                    });
                }
                return;
            };
            let Some(w) = self.waiting.front() else {
                return;
            };
            let want = w.running_time as i64 - lock.offset;
            let half = (self.frame.unwrap_or(0) / 2) as i64;
            let newest = self.references.back().map_or(i64::MIN, |r| r.time as i64);
            if !all && want > newest + half && w.running_time as i64 - newest <= self.range as i64 {
                // Its partner has not arrived yet.
                return;
            }
            let w = self.waiting.pop_front().expect("checked");
            match self.nearest(want) {
                Some(i) if self.references[i].buffer.is_some() => {
                    if !self.check(steps, &w, i) {
                        // Another offset fits this pair better (or it lost the lock): it
                        // is not measured.
                        steps.push(Step::Unaligned {
                            buffer: w.buffer,
                            running_time: w.running_time,
                        });
                        continue;
                    }
                    let r = &mut self.references[i];
                    r.paired = true;
                    steps.push(Step::Pair {
                        reference: r.buffer.clone().expect("checked"),
                        distorted: w.buffer,
                        reference_time: r.time,
                        distorted_time: w.running_time,
                    });
                }
                // Its partner's buffer was let go before a relock moved the offset back to
                // it: the frame cannot be measured, but a reference frame shows it.
                Some(_) => steps.push(Step::Unaligned {
                    buffer: w.buffer,
                    running_time: w.running_time,
                }),
                None => steps.push(Step::UnmatchedDistorted {
                    buffer: w.buffer,
                    running_time: w.running_time,
                }),
            }
        }
    }

    /// Checks a pair against the nearby offsets; reports progress, or the loss. Returns
    /// whether the pair is measured: not when a nearby offset fits it clearly better (a
    /// repeated or dropped frame moved the content), nor when it ends the lock.
    fn check(&mut self, steps: &mut Vec<Step<B>>, w: &Incoming<B>, partner: usize) -> bool {
        let frame = self.frame.unwrap_or(0) as i64;
        let Some(lock) = &self.lock else {
            return false;
        };
        let mut costs = [f32::NAN; (2 * NEAR + 1) as usize];
        for (k, c) in (-NEAR..=NEAR).zip(costs.iter_mut()) {
            let i = if k == 0 {
                Some(partner)
            } else {
                self.nearest(w.running_time as i64 - lock.offset - k * frame)
            };
            if let Some(i) = i {
                *c = w.thumbnail.distance(&self.references[i].thumbnail);
            }
        }
        let own = costs[NEAR as usize];
        let best_near = costs
            .iter()
            .enumerate()
            .filter(|&(k, c)| k != NEAR as usize && !c.is_nan())
            .map(|(_, c)| *c)
            .fold(f32::INFINITY, f32::min);
        let misfit = best_near < MISFIT * own && own - best_near >= MIN_CONTRAST;
        let lock = self.lock.as_mut().expect("checked");
        lock.checks.push_back(costs);
        lock.misfits.push_back(misfit);
        if lock.misfits.len() > WINDOW {
            lock.misfits.pop_front();
        }
        if lock.checks.len() > WINDOW {
            lock.checks.pop_front();
        }
        let bad_over = BAD_FACTOR * lock.baseline + BAD_MARGIN;
        // Far off: far worse than the lock's usual cost and no clear winner over the other
        // nearby offsets (a splice makes them all alike). A pair that still fits its own
        // offset clearly better than the others is not: the distorted stream's quality
        // fell (a starved encoder, the first frames of a lower rung), and the lock's usual
        // cost follows it.
        let stands_out = costs[NEAR as usize] < MISFIT * median_of_others(&costs);
        let far_off = costs[NEAR as usize] > bad_over && !stands_out;
        lock.far_off.push_back(far_off);
        if lock.far_off.len() > WINDOW {
            lock.far_off.pop_front();
        }
        if !far_off {
            lock.baseline = 0.95 * lock.baseline + 0.05 * costs[NEAR as usize];
        }
        let sums: Vec<f32> = (0..costs.len())
            .map(|k| {
                lock.checks
                    .iter()
                    .map(|c| c[k])
                    .filter(|v| !v.is_nan())
                    .sum()
            })
            .collect();
        let own = sums[NEAR as usize];
        // Only the offsets next to the lock's: a drift of a frame or two.
        let nearby = sums
            .iter()
            .enumerate()
            .filter(|&(k, _)| k != NEAR as usize && (k as i64 - NEAR).abs() <= 2)
            .filter(|&(k, _)| lock.checks.iter().all(|c| !c[k].is_nan()))
            .map(|(_, s)| *s)
            .fold(f32::INFINITY, f32::min);
        lock.confidence = if nearby.is_finite() && nearby > 0.0 {
            (1.0 - own / nearby).clamp(0.0, 1.0) as f64
        } else {
            lock.confidence
        };
        let bad = lock
            .far_off
            .iter()
            .zip(&lock.misfits)
            .filter(|(f, m)| **m || **f)
            .count();
        let full = lock.checks.len() == WINDOW;
        if !misfit {
            lock.times
                .push_back(w.running_time as i64 - self.references[partner].time as i64);
            if lock.times.len() > WINDOW {
                lock.times.pop_front();
            }
            if lock.times.len() >= WINDOW / 2 {
                let mut t: Vec<i64> = lock.times.iter().copied().collect();
                lock.offset = median(&mut t).unwrap_or(lock.offset);
            }
        }
        if bad * 2 >= WINDOW || (full && nearby.is_finite() && nearby < MISFIT * own) {
            let moved = moved_by(lock)
                .map(|(k, cost, confidence)| (lock.offset + k * frame, cost, confidence));
            self.lose(steps, w.running_time);
            if let Some((offset, baseline, confidence)) = moved {
                self.lock_at(steps, offset, baseline, confidence, w.running_time);
            }
            return false;
        } else if w.running_time >= lock.reported + SEARCH_REPORT {
            lock.reported = w.running_time;
            let change = self.change(AlignState::Locked, w.running_time);
            steps.push(Step::Change(change));
        }
        !misfit
    }

    /// Locks at `offset` (its usual cost `baseline`) and reports it: what a search found,
    /// or at once where the misfits before a loss agreed the content moved (a live input's
    /// arrival jumped a frame or a few: no search, whose frames would pass unmeasured).
    fn lock_at(
        &mut self,
        steps: &mut Vec<Step<B>>,
        offset: i64,
        baseline: f32,
        confidence: f64,
        time: u64,
    ) {
        self.locks += 1;
        self.lost = false;
        self.candidate = None;
        self.lock = Some(Lock {
            offset,
            times: VecDeque::new(),
            baseline,
            checks: VecDeque::new(),
            misfits: VecDeque::new(),
            far_off: VecDeque::new(),
            confidence,
            reported: time,
        });
        let change = self.change(AlignState::Locked, time);
        steps.push(Step::Change(change));
    }

    fn change(&self, state: AlignState, time: u64) -> Change {
        let offset = self.lock.as_ref().map(|l| l.offset);
        Change {
            state,
            offset,
            offset_frames: offset.and_then(|o| self.frames(o)),
            confidence: self.lock.as_ref().map_or(0.0, |l| l.confidence),
            running_time: time,
            relocks: self.locks.saturating_sub(1),
        }
    }

    fn frames(&self, offset: i64) -> Option<i64> {
        let f = self.frame? as f64;
        Some((offset as f64 / f).round() as i64)
    }

    /// Ends the lock: the sequence ends, `lost` is reported, the search starts over on the
    /// frames that follow.
    fn lose(&mut self, steps: &mut Vec<Step<B>>, time: u64) {
        let change = self.change(AlignState::Lost, time);
        self.lock = None;
        self.lost = true;
        self.search_reported = None;
        self.candidate = None;
        self.distorted.clear();
        steps.push(Step::SequenceEnd);
        steps.push(Step::Change(change));
    }

    /// The median time between the newest [`WINDOW`] distorted frames and their reference
    /// frames at `offset`: the offset as the frames' own times say it (their timestamps
    /// jitter, the lattice's anchor with them).
    fn measured_offset(&self, offset: i64) -> i64 {
        let mut d: Vec<i64> = self
            .distorted
            .iter()
            .rev()
            .filter_map(|d| {
                let i = self.nearest(d.time as i64 - offset)?;
                Some(d.time as i64 - self.references[i].time as i64)
            })
            .take(WINDOW)
            .collect();
        median(&mut d).unwrap_or(offset)
    }

    /// The mean cost of offset `offset` over the newest [`WINDOW`] distorted frames that
    /// have reference frames at it, if enough do.
    fn cost(&mut self, offset: i64) -> Option<f32> {
        let frame = self.frame?;
        let half = (frame / 2) as i64;
        let refs = &self.references;
        let newest = refs.back()?.time as i64;
        let oldest = refs.front()?.time as i64;
        let mut sum = 0f32;
        let mut n = 0;
        let mut tried = 0;
        for d in self.distorted.iter_mut().rev() {
            let want = d.time as i64 - offset;
            if want > newest + half {
                continue;
            }
            if want < oldest - half || tried == WINDOW {
                break;
            }
            tried += 1;
            if let Some(i) = nearest(refs, frame, want) {
                let r = &refs[i];
                sum += *d
                    .distances
                    .entry(r.time)
                    .or_insert_with(|| d.thumbnail.distance(&r.thumbnail));
                n += 1;
            }
        }
        (n * 4 >= WINDOW * 3).then(|| sum / n as f32)
    }

    /// One search step at distorted time `time`: tries every offset, locks on a clear
    /// winner, and reports progress now and then.
    fn search(&mut self, steps: &mut Vec<Step<B>>, time: u64) {
        let Some(frame) = self.frame.map(|f| f as i64) else {
            return;
        };
        if self.distorted.len() < WINDOW || self.references.len() < WINDOW {
            return;
        }
        // The lattice of the reference frames' times, seen from the newest distorted frame.
        let newest = self.distorted.back().expect("checked").time as i64;
        let near = self
            .references
            .partition_point(|r| (r.time as i64) < newest);
        let anchor = self.references[near.min(self.references.len() - 1)].time as i64;
        let base = newest - anchor;
        let range = self.range as i64;
        let k_min = (-range - base).div_euclid(frame);
        let k_max = (range - base).div_euclid(frame);
        let mut costs: Vec<(i64, f32)> = Vec::new();
        for k in k_min..=k_max {
            let offset = base + k * frame;
            if offset.abs() > range {
                continue;
            }
            if let Some(c) = self.cost(offset) {
                costs.push((offset, c));
            }
        }
        let Some(&(best, c1)) = costs.iter().min_by(|a, b| a.1.total_cmp(&b.1)) else {
            return;
        };
        let c2 = costs
            .iter()
            .filter(|(o, _)| (o - best).abs() >= 2 * frame - frame / 2)
            .map(|(_, c)| *c)
            .fold(f32::INFINITY, f32::min);
        let confidence = if c2.is_finite() && c2 > 0.0 {
            (1.0 - c1 / c2).clamp(0.0, 1.0) as f64
        } else {
            0.0
        };
        let clear = confidence >= LOCK_CONFIDENCE && c2 >= MIN_CONTRAST;
        self.candidate = match self.candidate {
            Some((o, n)) if clear && (o - best).abs() <= frame / 2 => Some((best, n + 1)),
            _ if clear => Some((best, 1)),
            _ => None,
        };
        if self.candidate.is_some_and(|(_, n)| n >= CONFIRM) {
            let offset = self.measured_offset(best);
            self.lock_at(steps, offset, c1, confidence, time);
            return;
        }
        if self
            .search_reported
            .is_none_or(|t| time >= t + SEARCH_REPORT)
        {
            self.search_reported = Some(time);
            steps.push(Step::Change(Change {
                state: AlignState::Searching,
                offset: Some(best),
                offset_frames: self.frames(best),
                confidence,
                running_time: time,
                relocks: self.locks.saturating_sub(1),
            }));
        }
    }
}

/// The index of the reference frame nearest `time` in `refs` (by time), within half of
/// `frame`.
fn nearest<B>(refs: &VecDeque<Reference<B>>, frame: u64, time: i64) -> Option<usize> {
    let half = (frame / 2) as i64;
    let i = refs.partition_point(|r| (r.time as i64) < time);
    [i.checked_sub(1), Some(i)]
        .into_iter()
        .flatten()
        .filter(|&j| j < refs.len())
        .map(|j| (j, (refs[j].time as i64 - time).abs()))
        .filter(|&(_, d)| d <= half)
        .min_by_key(|&(_, d)| d)
        .map(|(j, _)| j)
}

/// Where the content moved, when the misfits that end a lock agree: over the trailing run
/// of misfit pairs (at least a quarter of [`WINDOW`]), the nearby offset (in frames from
/// the lock's) whose summed cost is the lowest, if every pair of the run has a cost there
/// and it is under [`MISFIT`] times the lock's own; with its mean cost and a confidence
/// (1 − its cost over the lock's).
fn moved_by(lock: &Lock) -> Option<(i64, f32, f64)> {
    let run = lock.misfits.iter().rev().take_while(|m| **m).count();
    if run < WINDOW / 4 {
        return None;
    }
    let recent: Vec<&[f32; (2 * NEAR + 1) as usize]> = lock.checks.iter().rev().take(run).collect();
    let sum = |k: usize| -> Option<f32> {
        recent
            .iter()
            .map(|c| c[k])
            .try_fold(0f32, |s, v| (!v.is_nan()).then_some(s + v))
    };
    let own = sum(NEAR as usize)?;
    let (k, best) = (0..(2 * NEAR + 1) as usize)
        .filter(|&k| k != NEAR as usize)
        .filter_map(|k| Some((k, sum(k)?)))
        .min_by(|a, b| a.1.total_cmp(&b.1))?;
    (best < MISFIT * own).then(|| {
        let confidence = if own > 0.0 {
            (1.0 - best / own).clamp(0.0, 1.0) as f64
        } else {
            0.0
        };
        (k as i64 - NEAR, best / run as f32, confidence)
    })
}

/// The median of `v` (the upper one of an even count).
/// The median cost of the offsets checked beside the lock's (`costs[NEAR]`); NaN when none
/// was (a pair is then judged on its cost alone).
fn median_of_others(costs: &[f32; (2 * NEAR + 1) as usize]) -> f32 {
    let mut others: Vec<f32> = costs
        .iter()
        .enumerate()
        .filter(|&(k, c)| k != NEAR as usize && !c.is_nan())
        .map(|(_, c)| *c)
        .collect();
    if others.is_empty() {
        return f32::NAN;
    }
    others.sort_unstable_by(f32::total_cmp);
    others[others.len() / 2]
}

fn median(v: &mut [i64]) -> Option<i64> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    Some(v[v.len() / 2])
}

#[cfg(test)]
mod tests;
