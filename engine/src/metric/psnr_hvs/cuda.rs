//! PSNR-HVS on the GPU: per pair three launches over every plane (`psnr_hvs_terms`,
//! `psnr_hvs_scan`, `psnr_hvs_sums`) and one 24-byte copy back, queued with the pair
//! (`CudaMetric::queue`) and read when the pair is completed. The planes' error terms and
//! tile sums live in two buffers allocated once per plan, which each pair writes before it
//! reads them: nothing is kept across pairs (`independent`).

use cudarc::driver::{CudaEvent, CudaSlice, DriverError, LaunchConfig};

use crate::cuda::{AddSlots, DeviceMemory, Gpu, Readback, zeroed};
use crate::error::EngineError;
use crate::frame::PlanePtrs;
use crate::metric::CudaMetric;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::channel::MAX_CHANNELS;
use gpumetrics_kernels::psnr_hvs::{COEFFS, HvsPlanes, SCAN_THREADS, TILE, tiles};

/// Where one plane's values lie in the buffers, and how many blocks they were made for.
#[derive(Clone, Copy, Debug, Default)]
struct Region {
    blocks: u32,
    /// Offsets (in values) of its terms and of its tile sums.
    terms: usize,
    tile_sums: usize,
}

pub(super) struct PsnrHvs {
    /// Every plane's error terms (64 per block), then every plane's tile sums.
    terms: CudaSlice<f32>,
    tile_sums: CudaSlice<f64>,
    regions: [Region; MAX_CHANNELS],
    count: u32,
    /// Thread blocks along x: the largest plane's tiles.
    grid_x: u32,
    /// Where the last launch adds the pair's sums, per plane.
    sums: AddSlots<f64>,
    /// Where they come back to the host.
    host: Readback<f64>,
}

impl PsnrHvs {
    pub(super) fn new(gpu: &Gpu, plan: &Plan) -> Result<PsnrHvs, DriverError> {
        // The planes' shapes depend on the plan alone: described here at null addresses.
        let f = PlanePtrs::default();
        let planes = super::planes(plan, &f, &f);
        let mut regions = [Region::default(); MAX_CHANNELS];
        let (mut terms, mut tile_sums) = (0, 0);
        for (region, p) in regions.iter_mut().zip(&planes.planes) {
            *region = Region {
                blocks: p.blocks,
                terms,
                tile_sums,
            };
            terms += p.blocks as usize * COEFFS;
            tile_sums += tiles(p.blocks) as usize;
        }
        Ok(PsnrHvs {
            terms: zeroed(&gpu.stream, terms.max(1))?,
            tile_sums: zeroed(&gpu.stream, tile_sums.max(1))?,
            regions,
            count: planes.count,
            grid_x: planes
                .planes
                .iter()
                .map(|p| tiles(p.blocks))
                .max()
                .unwrap_or(0),
            sums: AddSlots::new(&gpu.stream, MAX_CHANNELS)?,
            host: Readback::new(&gpu.ctx, MAX_CHANNELS)?,
        })
    }

    /// The pair's planes with this state's buffers, or why they do not fit them (a plan
    /// other than the one they were made for).
    fn planes(&self, plan: &Plan, r: &PlanePtrs, d: &PlanePtrs) -> Result<HvsPlanes, String> {
        let mut planes = super::planes(plan, r, d);
        if planes.count != self.count {
            return Err(format!(
                "{} planes for buffers of {}",
                planes.count, self.count
            ));
        }
        for (p, region) in planes.planes.iter_mut().zip(&self.regions) {
            if p.blocks != region.blocks {
                return Err(format!(
                    "a plane of {} blocks for buffers of {}",
                    p.blocks, region.blocks
                ));
            }
            p.terms = self.terms.ptr_at(region.terms);
            p.tile_sums = self.tile_sums.ptr_at(region.tile_sums);
        }
        Ok(planes)
    }

    /// Queues the three passes and the copy of the sums.
    fn run(&mut self, gpu: &Gpu, planes: HvsPlanes) -> Result<(), DriverError> {
        let (k, stream) = (&gpu.kernels, &gpu.stream);
        let per_block = LaunchConfig {
            grid_dim: (self.grid_x, 1, planes.count),
            block_dim: (TILE, 1, 1),
            shared_mem_bytes: 0,
        };
        let scan = LaunchConfig {
            grid_dim: (1, 1, planes.count),
            block_dim: (SCAN_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let (add_to, clear) = self.sums.targets();
        // SAFETY: the plane pointers were validated against the layouts (or uploaded into
        // buffers sized for them) and every plane lies within its frame plane; `planes`
        // matches the buffers (`PsnrHvs::planes`): 64 terms per block and one tile sum per
        // tile of each plane; both result slots hold MAX_CHANNELS values. The launches run
        // in stream order.
        unsafe {
            k.psnr_hvs_terms(stream, per_block, planes)?;
            k.psnr_hvs_scan(stream, scan, planes)?;
            k.psnr_hvs_sums(stream, per_block, planes, add_to, clear)?;
        }
        self.sums.copy_to(&mut self.host)
    }

    fn fail(&mut self, e: DriverError) -> EngineError {
        self.host.clear();
        self.sums.zero();
        EngineError::Cuda(format!("running psnr_hvs: {e}"))
    }
}

/// No pairs held back.
impl crate::metric::temporal::Sequenced for PsnrHvs {}

impl CudaMetric for PsnrHvs {
    fn queue(
        &mut self,
        gpu: &Gpu,
        plan: &Plan,
        r: &PlanePtrs,
        d: &PlanePtrs,
        _uploaded: Option<&CudaEvent>,
    ) -> Result<(), EngineError> {
        let planes = self
            .planes(plan, r, d)
            .map_err(|why| EngineError::InvalidFrame(format!("psnr-hvs: {why}")))?;
        self.run(gpu, planes).map_err(|e| self.fail(e))
    }

    fn drop_queued(&mut self) {
        self.host.clear();
        self.sums.zero();
    }

    /// A pair writes every term and tile sum before it reads them; nothing is kept across
    /// pairs.
    fn independent(&self) -> bool {
        true
    }

    fn read(&mut self, plan: &Plan, scores: &mut Scores) -> Result<(), EngineError> {
        if self.host.queued() == 0 {
            return Err(EngineError::Unsupported(
                "psnr-hvs: no pair queued to read".into(),
            ));
        }
        let mut sums = [0.0; MAX_CHANNELS];
        match self.host.take(MAX_CHANNELS) {
            Ok(s) => sums.copy_from_slice(s),
            Err(e) => return Err(self.fail(e)),
        }
        let f = PlanePtrs::default();
        super::push_fields(plan, &super::planes(plan, &f, &f), &sums, scores);
        Ok(())
    }
}
