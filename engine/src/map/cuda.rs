//! The maps made from a pair's frames (`squared-error`, `ssim`) on the GPU: the kernels of
//! `gpumetrics_kernels::map` read the pair where the backend has it (device frames in
//! place, host frames from their upload), the map is made in device memory (straight into
//! the pair's own buffer, one channel after the other for RGB) and handed out there with
//! its statistics ([`super::device::MapOut`]). The host's map ([`super::frames::of_pair`])
//! runs the same per-sample functions in the same order: both backends give the same
//! values.
//!
//! SSIM in one kernel (`map_ssim`): each block filters the five moments down the columns of
//! its tile into shared memory, then along its rows (a pass per direction through device
//! memory wrote and read 40 bytes a pixel of f64 moments). Allocated: a map buffer (4 bytes
//! a pixel) per pair in flight or being read.

use cudarc::driver::{CudaEvent, DriverError};

use super::device::MapOut as Handout;
use super::kind::MapKind;
use super::ssim;
use crate::cuda::Gpu;
use crate::error::EngineError;
use crate::format::ColorFamily;
use crate::frame::PlanePtrs;
use crate::metric::CudaMetric;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::map::{MapChannel, MapOut, SsimFilter};

pub(crate) struct MapCuda {
    kind: MapKind,
    width: u32,
    height: u32,
    /// Channels mapped: luma, or R, G and B (their mean).
    channels: usize,
    taps: [f64; gpumetrics_kernels::map::SSIM_TAPS],
    handout: Handout,
}

impl MapCuda {
    /// For a map made from the frames ([`MapKind::made_from_frames`]: squared error, SSIM;
    /// any other kind is taken as the squared error's, which the backend never asks for).
    pub(crate) fn new(gpu: &Gpu, plan: &Plan, kind: MapKind) -> Result<MapCuda, DriverError> {
        let (w, h) = plan.reference.channel_size(&plan.channels[0].0);
        let channels = match plan.reference.format.family() {
            ColorFamily::Rgb => plan.channels.len(),
            _ => 1,
        };
        let handout = Handout::new(gpu, kind, w, h, plan.map_threshold)?;
        Ok(MapCuda {
            kind,
            width: w,
            height: h,
            channels,
            taps: ssim::taps(),
            handout,
        })
    }

    fn launch(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
    ) -> Result<(), DriverError> {
        let (k, stream) = (&gpu.kernels, &gpu.stream);
        let cfg = super::render::per_pixel(self.width, self.height);
        let peak = plan.reference.format.peak() as f64;
        // The map goes straight into the pair's own buffer (handed out with the pair).
        let out = self.handout.target()?;
        for c in 0..self.channels {
            let (rs, ds) = &plan.channels[c];
            let (rmax, dmax) = (plan.reference.format.peak(), plan.distorted.format.peak());
            let ch = MapChannel {
                reference: r.channel(rs, rmax),
                distorted: d.channel(ds, dmax),
                width: self.width,
                height: self.height,
                reference_max: rmax,
                distorted_max: dmax,
            };
            // Both sides of every channel have the luma's size (the plan pairs channels of
            // equal sizes; RGB's are all full size).
            debug_assert_eq!(plan.reference.channel_size(rs), (self.width, self.height));
            let last = c + 1 == self.channels;
            let o = MapOut {
                out,
                add: (c > 0) as u32,
                divide: if last && self.channels > 1 {
                    self.channels as u32
                } else {
                    0
                },
            };
            // SAFETY: the frames' planes were validated against the plan's layouts (or are
            // the backend's uploads of them); `out` holds the map's size.
            unsafe {
                match self.kind {
                    MapKind::Ssim => {
                        let f = SsimFilter {
                            taps: self.taps,
                            c1: (0.01 * peak).powi(2),
                            c2: (0.03 * peak).powi(2),
                            width: self.width,
                            height: self.height,
                        };
                        k.map_ssim(stream, cfg, ch, f, o)?;
                    }
                    _ => k.map_squared_error(stream, cfg, ch, o)?,
                }
            }
        }
        self.handout.commit(gpu, stream)
    }
}

/// No pairs held back, no state across pairs.
impl crate::metric::temporal::Sequenced for MapCuda {
    fn reset(&mut self) {
        self.handout.clear();
    }
}

impl CudaMetric for MapCuda {
    fn queue(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
        _uploaded: Option<&CudaEvent>,
    ) -> Result<(), EngineError> {
        self.launch(gpu, plan, r, d)
            .map_err(|e| EngineError::Cuda(format!("making the {} map: {e}", self.kind.name())))
    }

    fn drop_queued(&mut self) {
        self.handout.clear();
    }

    fn independent(&self) -> bool {
        true
    }

    fn read(&mut self, _plan: &Plan, scores: &mut Scores) -> Result<(), EngineError> {
        let map = self
            .handout
            .take()
            .map_err(|e| EngineError::Cuda(format!("reading the {} map: {e}", self.kind.name())))?;
        scores.set_map(map);
        Ok(())
    }
}
