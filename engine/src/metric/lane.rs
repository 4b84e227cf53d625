//! A CUDA metric on a stream of its own (a lane forked from the engine's stream), or on two
//! that take successive pairs in turn.
//!
//! Every metric of an engine used to queue its kernels on the engine's one stream, so the
//! metrics of a pair ran one after another even where a metric leaves most of the GPU idle:
//! SSIMULACRA2's recursive blurs keep 10–15 % of the SMs' warps busy for over half of its
//! time, and VMAF's coarse scales and ADM rows are grids of a few dozen blocks (ncu,
//! docs/BENCHMARKS.md). On lanes of their own the metrics of a pair overlap on the device.
//!
//! A metric whose pairs are independent ([`CudaMetric::independent`]: nothing of one pair
//! is read by the next) gets two lanes when pairs are in flight, each with an instance of
//! its own (its buffers, its readback slots, its share of the scratch arenas), and pairs
//! of device frames alternate between them: the next pair's kernels then run beside this
//! pair's, where one pair alone leaves the device idle (the same gain as two engines,
//! inside one). A pair of uploaded host frames stays on the lane of the pair before it:
//! two pairs side by side finish together and leave the device idle while the host stages
//! the next pair's frames, where one after the other the second pair's kernels cover that
//! staging (SSIMULACRA2 from system memory at 1080p, H200: 2,190 pairs/s on one lane,
//! 1,810–1,990 alternating; docs/BENCHMARKS.md ~17:35).
//!
//! Ordering stays what it was: a metric's work for successive pairs on one lane is in order
//! (its buffers, its readback slots, a temporal metric's history), and the pairs are read
//! in the order they were queued, each by the instance that queued it. A pair's work is all
//! queued in `queue` (`read` only waits for its slot and reads it): when the pair's frames
//! are uploaded (host frames), the lane waits for the uploads' event first, before
//! anything of that pair; frames already in device memory need no wait, so a lane costs
//! device frames no call per pair. The backend completes a pair only after every metric's
//! results for it are read, so no upload overwrites frames a lane still reads. Scratch
//! arenas shared between engines order their borrowers by events, whatever their streams.
//! (The no-reference metrics keep the lanes they have per side, `super::single`, and are
//! not wrapped.)

use std::collections::VecDeque;

use cudarc::driver::{CudaEvent, DriverError};

use super::CudaMetric;
use super::temporal::Sequenced;
use crate::cuda::Gpu;
use crate::error::EngineError;
use crate::frame::PlanePtrs;
use crate::plan::Plan;
use crate::scores::Scores;

/// A metric's instances and the lane each runs on.
pub(crate) struct Laned {
    /// One lane, or two ([`Laned::make`]).
    lanes: Vec<(Gpu, Box<dyn CudaMetric>)>,
    /// Which lane each pair goes to.
    route: Route,
}

/// Which lane each pair goes to, and which reads it: the other lane than the last
/// pair's for device frames, the same one for uploaded host frames (see the module's doc);
/// pairs are read in the order they were queued, each on its own lane.
#[derive(Debug)]
struct Route {
    lanes: usize,
    /// The lane of each pair queued and not read yet, oldest first.
    queued: VecDeque<usize>,
    /// The lane of the last pair queued.
    last: usize,
}

impl Route {
    fn new(lanes: usize) -> Route {
        Route {
            lanes,
            queued: VecDeque::new(),
            last: 0,
        }
    }

    /// The lane for a new pair (`uploaded`: its frames were uploaded); once its work is
    /// queued there, [`Route::queued`].
    fn lane_for(&mut self, uploaded: bool) -> usize {
        if !uploaded {
            self.last = (self.last + 1) % self.lanes;
        }
        self.last
    }

    /// The pair given [`Route::lane_for`] was queued on lane `i`.
    fn queued(&mut self, i: usize) {
        self.queued.push_back(i);
    }

    /// The lane of the oldest pair queued, `None` when none is.
    fn next_read(&mut self) -> Option<usize> {
        self.queued.pop_front()
    }

    /// The pairs queued were dropped.
    fn clear(&mut self) {
        self.queued.clear();
    }
}

impl Laned {
    /// A new lane, forked from `gpu`'s stream, for a metric that `make` builds on it (its
    /// buffers are allocated on the lane, and ready when this returns); with `in_flight`
    /// pairs above one and a metric whose pairs are independent, a second lane with a
    /// second instance. `None` when `make` builds none.
    pub(crate) fn make(
        gpu: &Gpu,
        in_flight: usize,
        make: impl Fn(&Gpu) -> Result<Option<Box<dyn CudaMetric>>, DriverError>,
    ) -> Result<Option<Box<dyn CudaMetric>>, DriverError> {
        let lane = gpu.fork()?;
        let Some(first) = make(&lane)? else {
            return Ok(None);
        };
        let mut lanes = vec![(lane, first)];
        if in_flight > 1 && lanes[0].1.independent() && lanes[0].1.lag() == 0 {
            let lane = gpu.fork()?;
            if let Some(second) = make(&lane)? {
                lanes.push((lane, second));
            }
        }
        // Their buffers are ready before the first pair.
        for (lane, _) in &lanes {
            lane.stream.synchronize()?;
        }
        let route = Route::new(lanes.len());
        Ok(Some(Box::new(Laned { lanes, route })))
    }
}

impl Sequenced for Laned {
    fn lag(&self) -> usize {
        self.lanes[0].1.lag()
    }

    fn align(&mut self, lag: usize) {
        self.lanes.iter_mut().for_each(|(_, m)| m.align(lag));
    }

    fn finish(&mut self, plan: &Plan, late: &mut [Scores]) {
        // Two instances only for a metric without lag, which holds nothing to finish.
        self.lanes
            .iter_mut()
            .for_each(|(_, m)| m.finish(plan, late));
    }

    fn reset(&mut self) {
        self.lanes.iter_mut().for_each(|(_, m)| m.reset());
    }

    fn window_start(&mut self) {
        self.lanes.iter_mut().for_each(|(_, m)| m.window_start());
    }
}

impl CudaMetric for Laned {
    fn queue(
        &mut self,
        _engine: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
        uploaded: Option<&CudaEvent>,
    ) -> Result<(), EngineError> {
        let i = self.route.lane_for(uploaded.is_some());
        let (lane, metric) = &mut self.lanes[i];
        if let Some(event) = uploaded {
            lane.stream
                .wait(event)
                .map_err(|e| EngineError::Cuda(format!("ordering the metric's stream: {e}")))?;
        }
        metric.queue(lane, plan, r, d, uploaded)?;
        self.route.queued(i);
        Ok(())
    }

    fn drop_queued(&mut self) {
        self.lanes.iter_mut().for_each(|(_, m)| m.drop_queued());
        self.route.clear();
    }

    fn read(&mut self, plan: &Plan, scores: &mut Scores) -> Result<(), EngineError> {
        // The pair was queued first (the backend queues every pair it reads), by the
        // instance that reads it.
        let Some(i) = self.route.next_read() else {
            return Err(EngineError::Unsupported(
                "a metric's lane: no pair queued to read".into(),
            ));
        };
        self.lanes[i].1.read(plan, scores)
    }
}

#[cfg(test)]
mod tests {
    use super::Route;

    #[test]
    fn device_pairs_alternate_and_are_read_in_order_on_their_lanes() {
        let mut r = Route::new(2);
        let lanes: Vec<usize> = (0..5)
            .map(|_| {
                let i = r.lane_for(false);
                r.queued(i);
                i
            })
            .collect();
        assert_eq!(lanes, [1, 0, 1, 0, 1]);
        let measured: Vec<usize> = (0..5).map(|_| r.next_read().unwrap()).collect();
        assert_eq!(measured, lanes);
    }

    #[test]
    fn uploaded_pairs_stay_on_the_last_lane() {
        let mut r = Route::new(2);
        let mut lanes = Vec::new();
        for uploaded in [false, true, true, false, true, false, false] {
            let i = r.lane_for(uploaded);
            r.queued(i);
            lanes.push(i);
        }
        assert_eq!(lanes, [1, 1, 1, 0, 0, 1, 0]);
        // Interleaved queue and read, as with two pairs in flight.
        assert_eq!(r.next_read(), Some(1));
        let i = r.lane_for(true);
        r.queued(i);
        assert_eq!(i, 0);
        let measured: Vec<usize> = (0..7).map(|_| r.next_read().unwrap()).collect();
        assert_eq!(measured, [1, 1, 0, 0, 1, 0, 0]);
    }

    #[test]
    fn one_lane_takes_every_pair_and_a_drop_forgets_the_queued() {
        let mut r = Route::new(1);
        for uploaded in [false, true, false] {
            let i = r.lane_for(uploaded);
            assert_eq!(i, 0);
            r.queued(i);
        }
        let mut two = Route::new(2);
        let i = two.lane_for(false);
        two.queued(i);
        let i = two.lane_for(false);
        two.queued(i);
        two.clear();
        // Nothing queued: nothing to read.
        assert_eq!(two.next_read(), None);
        assert_eq!(r.next_read(), Some(0));
    }
}
