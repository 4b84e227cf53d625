//! CAMBI on the GPU: the kernel crate's per-pixel functions as kernels
//! (`gpumetrics_kernels::cambi`'s `kernels.rs` lists them), every buffer allocated once at
//! the encoding size, and per frame one queue of launches whose last kernels write the five
//! scale scores straight to the host (`Readback`); the host only weighs the scores
//! ([`k::combine`]).
//!
//! The scores equal the CPU backend's: the planes, the mask and the c-values are integer or
//! the same `f32` operations, the top-k selection is exact ([`k::topk`]), and only the
//! order of the `f64` sum of the kept values differs.

use cudarc::driver::sys::{CUdevice_attribute_enum, CUfunction_attribute_enum};
use cudarc::driver::{CudaSlice, DriverError, LaunchConfig};

use super::{CAMBI, CambiSettings, Geometry};
use crate::cuda::{DevPtr, DevPtrMut, DeviceMemory, Gpu, Readback, zeroed};
use crate::error::EngineError;
use crate::format::{ChannelSpec, FrameLayout};
use crate::frame::PlanePtrs;
use crate::metric::no_reference::{CudaSingle, Input};
use crate::metric::temporal::Restart;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::cambi::topk::{COUNTERS, Selection};
use gpumetrics_kernels::cambi::{
    self as k, ContrastArgs, PLANE_H, PLANE_W, Plane16, SCALES, STRIP, Source, TOPK_THREADS,
};

/// Blocks of `cambi_cvalues` that keep the GPU busy (each is two warps, and its shared
/// memory lets only a few share an SM): the rows per block are chosen to reach them.
const CVALUE_BLOCKS: u32 = 1024;
/// Fewest rows per block of `cambi_cvalues`: each block first clears its counts and counts
/// the `2·half` rows around its first one, which costs about as much as a few rows.
const MIN_CHUNK_ROWS: u32 = 8;
/// Most blocks of the top-k passes (each block strides over the values).
const TOPK_BLOCKS: u32 = 264;
/// `u32` words of one scale's selection states (three [`Selection`]s).
const STATE_WORDS: usize = 3 * size_of::<Selection>() / 4;

/// One input's CAMBI on the GPU for frames of one layout: `new` checks and allocates,
/// `queue` puts a frame's work on the stream, and after the stream is synchronised
/// `finish` gives its score (capped at `max_val`), the same as
/// [`super::CambiCpu::score`]'s.
pub(crate) struct CambiCuda {
    g: Geometry,
    luma: ChannelSpec,
    peak: u32,
    contrast: ContrastArgs,
    rows: CudaSlice<u32>,
    cols: CudaSlice<u32>,
    recip: CudaSlice<f32>,
    /// The working plane and the scales' filtered planes, in turn (encoding size).
    planes: [CudaSlice<u16>; 2],
    flats: CudaSlice<u8>,
    /// The flatness map's sums along the rows (the mask's first pass).
    sums: CudaSlice<u8>,
    mask: CudaSlice<u16>,
    keys: CudaSlice<u16>,
    values: CudaSlice<f32>,
    /// Per scale: the three histograms, then the three selections (cleared per frame).
    counters: CudaSlice<u32>,
    partials: CudaSlice<f64>,
    /// The scale scores, written by the last kernel of each scale straight to the host
    /// (one slot per frame in flight).
    host: Readback<f64>,
    /// Bytes of one column of `cambi_cvalues`' counts.
    col_bytes: u32,
}

/// Copies `values` into a new device buffer on the GPU's stream (complete when the stream
/// next synchronises; `values` must live until then).
fn upload<T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits>(
    gpu: &Gpu,
    values: &[T],
) -> Result<CudaSlice<T>, DriverError> {
    let buf = zeroed(&gpu.stream, values.len().max(1))?;
    // SAFETY: the buffer holds at least `values.len()` values; the caller keeps `values`
    // until the stream is synchronised.
    unsafe {
        cudarc::driver::result::memcpy_htod_async(buf.ptr(), values, gpu.stream.cu_stream())
    }?;
    Ok(buf)
}

impl CambiCuda {
    /// The state for frames of `layout` with `settings`: `Ok(Err(why))` when CAMBI cannot
    /// measure them (as [`super::why_not`] says), `Err` when the GPU fails.
    pub(crate) fn new(
        gpu: &Gpu,
        layout: &FrameLayout,
        settings: &CambiSettings,
    ) -> Result<Result<CambiCuda, String>, DriverError> {
        if let Some(why) = super::why_not(layout, settings) {
            return Ok(Err(why));
        }
        let format = layout.format;
        let g = match Geometry::new(layout.width, layout.height, format.depth(), settings) {
            Ok(g) => g,
            Err(why) => return Ok(Err(why)),
        };
        let (w, h) = (g.enc_width as usize, g.enc_height as usize);
        let mut rows = vec![0; h];
        k::nearest_positions(g.height, &mut rows);
        let mut cols = vec![0; w];
        k::nearest_positions(g.width, &mut cols);
        let recip = super::reciprocals();
        let contrast = ContrastArgs::of(&g.contrast(&recip));
        let col_bytes = k::column_bytes(g.band_size, g.diffs);
        let half = g.window / 2;
        let shared = (STRIP + 2 * half) * col_bytes;
        // Every engine on the device may launch the kernel with its own size: allow the
        // most the device has beside the kernel's static shared memory (the attribute is
        // the module's, shared by all of them).
        let most = gpu.ctx.attribute(
            CUdevice_attribute_enum::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        )?;
        if let Some(f) = gpu.kernels.function("cambi_cvalues") {
            let fixed =
                f.get_attribute(CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?;
            let room = most - fixed;
            if shared as i64 > room as i64 {
                return Ok(Err(format!(
                    "cambi's window ({}) needs {shared} bytes of shared memory per block on the \
                     GPU, which has {room}; use a smaller cambi-window-size or the CPU backend",
                    g.window
                )));
            }
            f.set_attribute(
                CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                room,
            )?;
        }
        let n = w * h;
        let state = CambiCuda {
            rows: upload(gpu, &rows)?,
            cols: upload(gpu, &cols)?,
            recip: upload(gpu, &recip)?,
            planes: [zeroed(&gpu.stream, n)?, zeroed(&gpu.stream, n)?],
            flats: zeroed(&gpu.stream, n)?,
            sums: zeroed(&gpu.stream, n)?,
            mask: zeroed(&gpu.stream, n)?,
            keys: zeroed(&gpu.stream, n)?,
            values: zeroed(&gpu.stream, n)?,
            counters: zeroed(&gpu.stream, SCALES * (COUNTERS + STATE_WORDS))?,
            partials: zeroed(&gpu.stream, SCALES * TOPK_BLOCKS as usize)?,
            // SAFETY: written by the copy in `queue` before `finish` reads it.
            host: Readback::new(&gpu.ctx, SCALES)?,
            luma: format.channels()[0],
            peak: format.peak(),
            contrast,
            col_bytes,
            g,
        };
        // The uploads read `rows`, `cols` and `recip`, which end here.
        gpu.stream.synchronize()?;
        Ok(Ok(state))
    }

    /// Queues the work for the luma of `frame` (a validated device frame of the layout
    /// given to [`CambiCuda::new`]), its scale scores into the next host slot; no
    /// synchronisation.
    pub(crate) fn queue(&mut self, gpu: &Gpu, frame: &PlanePtrs) -> Result<(), EngineError> {
        self.launch(gpu, frame)
            .map_err(|e| EngineError::Cuda(format!("running cambi: {e}")))
    }

    /// Frames queued whose score was not read yet.
    pub(crate) fn queued(&self) -> usize {
        self.host.queued()
    }

    /// Forgets the frames queued (a restart).
    pub(crate) fn clear(&mut self) {
        self.host.clear();
    }

    /// The score of the oldest frame queued (waits for its copy).
    pub(crate) fn finish(&mut self) -> Result<f64, EngineError> {
        let scores = self
            .host
            .take(SCALES)
            .map_err(|e| EngineError::Cuda(format!("running cambi: {e}")))?;
        let mut s = [0.0; SCALES];
        s.copy_from_slice(scores);
        Ok(k::combine(&s, self.g.window).min(self.g.max_val))
    }

    fn launch(&mut self, gpu: &Gpu, frame: &PlanePtrs) -> Result<(), DriverError> {
        let (kn, stream) = (&gpu.kernels, &gpu.stream);
        let g = &self.g;
        let (ew, eh) = (g.enc_width, g.enc_height);
        let grid = |w: u32, h: u32| LaunchConfig {
            grid_dim: (w.div_ceil(PLANE_W), h.div_ceil(PLANE_H), 1),
            block_dim: (PLANE_W, PLANE_H, 1),
            shared_mem_bytes: 0,
        };
        let source = Source {
            chan: frame.channel(&self.luma, self.peak),
            depth: g.depth,
            _pad: 0,
        };
        let counters = self.counters.as_mut();
        let scores = self.host.target()?;
        let plane =
            |b: &CudaSlice<u16>, w: u32, h: u32| Plane16::new(b.ptr() as *const u16, w, w, h);
        // SAFETY: every buffer was allocated for the encoding size (each scale is smaller)
        // and the frame was validated against the layout the rows and columns were made
        // for; the kernels and the clear run in stream order, and the host reads the
        // scores' slot (SCALES values) only after the event committed after them.
        unsafe {
            cudarc::driver::result::memset_d8_async(
                self.counters.ptr(),
                0,
                self.counters.len() * 4,
                stream.cu_stream(),
            )?;
            kn.cambi_prepare(
                stream,
                grid(ew, eh),
                source,
                DevPtr::from_raw(self.rows.ptr()),
                DevPtr::from_raw(self.cols.ptr()),
                ew,
                eh,
                g.anti_dither as u32,
                self.planes[0].as_mut(),
            )?;
            kn.cambi_flat(
                stream,
                grid(ew, eh),
                plane(&self.planes[0], ew, eh),
                self.flats.as_mut(),
            )?;
            kn.cambi_mask_rows(
                stream,
                grid(ew, eh),
                self.flats.as_mut().as_const(),
                ew,
                eh,
                self.sums.as_mut(),
            )?;
            kn.cambi_mask(
                stream,
                grid(ew, eh),
                self.sums.as_mut().as_const(),
                ew,
                eh,
                g.mask_index,
                self.mask.as_mut(),
            )?;
            let mask = plane(&self.mask, ew, eh);
            let (mut w, mut h, mut shift, mut src) = (ew, eh, 0, 0);
            let half = g.window / 2;
            for s in 0..SCALES {
                let (sw, sh) = g.scales[s];
                let step = if (sw, sh) != (w, h) {
                    shift += 1;
                    2
                } else {
                    1
                };
                kn.cambi_mode(
                    stream,
                    grid(sw, sh),
                    plane(&self.planes[src], w, h),
                    step,
                    mask,
                    shift,
                    sw,
                    sh,
                    self.contrast,
                    self.planes[1 - src].as_mut(),
                    self.keys.as_mut(),
                )?;
                (w, h, src) = (sw, sh, 1 - src);
                let base = s * (COUNTERS + STATE_WORDS);
                let hist = counters.wrapping_add(base);
                let state = DevPtrMut::<Selection>::from_raw(
                    counters.wrapping_add(base + COUNTERS).as_raw(),
                );
                let strips = w.div_ceil(STRIP);
                let chunk = h
                    .div_ceil(CVALUE_BLOCKS.div_ceil(strips))
                    .max(MIN_CHUNK_ROWS);
                kn.cambi_cvalues(
                    stream,
                    LaunchConfig {
                        grid_dim: (strips, h.div_ceil(chunk), 1),
                        block_dim: (STRIP, 1, 1),
                        shared_mem_bytes: (STRIP + 2 * half) * self.col_bytes,
                    },
                    plane(&self.keys, w, h),
                    half,
                    chunk,
                    self.contrast,
                    DevPtr::from_raw(self.recip.ptr()),
                    self.col_bytes,
                    self.values.as_mut(),
                    hist,
                )?;
                let n = w * h;
                let kept = k::topk_len(g.topk, n);
                let blocks = n.div_ceil(8 * TOPK_THREADS).clamp(1, TOPK_BLOCKS);
                let topk = LaunchConfig {
                    grid_dim: (blocks, 1, 1),
                    block_dim: (TOPK_THREADS, 1, 1),
                    shared_mem_bytes: 0,
                };
                let values = self.values.as_mut().as_const();
                for pass in 1..3 {
                    kn.cambi_radix(stream, topk, values, n, kept, pass, hist, state)?;
                }
                let partials = self
                    .partials
                    .as_mut()
                    .wrapping_add(s * TOPK_BLOCKS as usize);
                kn.cambi_topk_sum(stream, topk, values, n, hist.as_const(), state, partials)?;
                kn.cambi_topk_mean(
                    stream,
                    LaunchConfig {
                        grid_dim: (1, 1, 1),
                        block_dim: (32, 1, 1),
                        shared_mem_bytes: 0,
                    },
                    partials.as_const(),
                    blocks,
                    kept,
                    state.as_const(),
                    scores.wrapping_add(s),
                )?;
            }
        }
        self.host.commit(stream)?;
        Ok(())
    }
}

/// The standalone metric's side state on the CUDA backend.
pub(super) struct Single {
    cambi: CambiCuda,
}

impl Single {
    pub(super) fn new(cambi: CambiCuda) -> Single {
        Single { cambi }
    }
}

impl CudaSingle for Single {
    fn queue(
        &mut self,
        gpu: &Gpu,
        _plan: &Plan,
        _side: Input,
        frame: &PlanePtrs,
    ) -> Result<(), EngineError> {
        self.cambi.queue(gpu, frame)
    }

    fn read(&mut self, _plan: &Plan, side: Input, out: &mut Scores) -> Result<(), EngineError> {
        if self.cambi.queued() == 0 {
            return Err(EngineError::Unsupported(
                "cambi: no frame queued to read".into(),
            ));
        }
        out.push(side.field(CAMBI), self.cambi.finish()?);
        Ok(())
    }
}

impl Restart for Single {
    fn restart(&mut self) {
        self.cambi.clear();
    }
}
