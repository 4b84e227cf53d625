//! A pair's map on the CUDA backend stays in device memory: its statistics come from a
//! reduction kernel (`map_stats`: a few hundred bytes back per pair instead of 8 MB at
//! 1080p), and its values reach the host only when a reader asks for them
//! ([`super::PairMap::values`]); rendered as a frame, it goes from device memory to the
//! frame's (CUDA memory in place, or the host) through the `map_gray16` / `map_heat`
//! kernels. At 13,000 pairs/s (SSIM, PSNR) a 1080p map each to the host would need more than
//! PCIe carries (docs/BENCHMARKS.md, 2026-12-05).
//!
//! [`MapOut`] takes the place of a producer's readback of its map: each metric that makes a
//! map (the frames' maps, Butteraugli, ColorVideoVDP, SSIMULACRA2) queues the copy of its
//! finished map into a buffer of its own ([`Slots`]) and the statistics of that copy, and
//! reads the pair's [`super::PairMap`] back. Buffers handed out return to their
//! [`Slots`] when the pair's map is dropped; a reader holding maps longer than the pairs
//! in flight makes new ones (allocated once, kept for reuse, up to [`KEEP`]).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaSlice, CudaStream, DriverError, LaunchConfig, sys};
use gpumetrics_kernels::map::{
    BLOCK_X, BLOCK_Y, MapFrame, PARTIAL_WORDS, Partial, STATS_BLOCK, STATS_BLOCKS,
};
use gpumetrics_launch::DevPtr;

use super::kind::MapKind;
use super::render::MapStyle;
use crate::cuda::{DeviceMemory, Gpu, Readback};

/// Spare map buffers kept per producer beyond those in use.
const KEEP: usize = 8;

/// The device buffers of one producer's maps (each `len` values), the stream that reads
/// them for the host or a frame, and that stream's staging for frames rendered for the
/// host.
pub(crate) struct Slots {
    len: usize,
    /// On a stream of its own: a reader's copy or render never waits behind the pairs the
    /// producer's lane has queued since.
    stream: Arc<CudaStream>,
    kernels: Arc<crate::cuda::Kernels>,
    free: Mutex<Vec<CudaSlice<f32>>>,
    /// A frame rendered for the host is rendered here first (grown to the largest asked).
    staging: Mutex<Option<CudaSlice<u8>>>,
}

impl Slots {
    /// A free buffer, or a new one.
    fn take(&self) -> Result<CudaSlice<f32>, DriverError> {
        if let Some(b) = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            return Ok(b);
        }
        // SAFETY: every value is written (the producer's copy) before it is read.
        unsafe { self.stream.alloc::<f32>(self.len.max(1)) }
    }

    fn give_back(&self, b: CudaSlice<f32>) {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        if free.len() < KEEP {
            free.push(b);
        }
    }
}

/// One pair's map values in device memory, returned to its [`Slots`] when dropped.
pub(crate) struct Values {
    buffer: Option<CudaSlice<f32>>,
    slots: Arc<Slots>,
    width: usize,
    height: usize,
}

impl Drop for Values {
    fn drop(&mut self) {
        if let Some(b) = self.buffer.take() {
            self.slots.give_back(b);
        }
    }
}

impl Values {
    fn ptr(&self) -> u64 {
        self.buffer.as_ref().map_or(0, |b| b.ptr())
    }

    fn len(&self) -> usize {
        self.width * self.height
    }

    /// Whether both are the same device buffer.
    pub(crate) fn same(&self, other: &Values) -> bool {
        self.ptr() == other.ptr()
    }

    /// Width and height.
    pub(crate) fn size(&self) -> (usize, usize) {
        (self.width, self.height)
    }

    /// The values on the host (a synchronous copy on the slots' stream).
    pub(crate) fn to_host(&self) -> Result<Vec<f32>, DriverError> {
        let stream = &self.slots.stream;
        stream.context().bind_to_thread()?;
        let mut out = vec![0f32; self.len()];
        // SAFETY: the buffer holds `len` values, complete since the pair was read (its
        // statistics, queued after the copy into it, were waited for).
        unsafe {
            cudarc::driver::result::memcpy_dtoh_async(&mut out, self.ptr(), stream.cu_stream())
        }?;
        stream.synchronize()?;
        Ok(out)
    }

    /// The `MapFrame` of these values rendered at `out`, rows `pitch` bytes apart.
    fn frame(&self, kind: MapKind, peak: f64, out: u64, pitch: usize) -> MapFrame {
        MapFrame {
            values: self.ptr(),
            out,
            width: self.width as u32,
            height: self.height as u32,
            pitch: pitch as u32,
            kind: kind.scale(),
            peak,
        }
    }

    /// Queues the render of `frame` in `style` and waits for it.
    fn launch(&self, style: MapStyle, frame: MapFrame) -> Result<(), DriverError> {
        let (k, stream) = (&self.slots.kernels, &self.slots.stream);
        let cfg = LaunchConfig {
            grid_dim: (
                frame.width.div_ceil(BLOCK_X),
                frame.height.div_ceil(BLOCK_Y),
                1,
            ),
            block_dim: (BLOCK_X, BLOCK_Y, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the values hold width × height f32 (this pair's, complete); the caller
        // checked that `out` holds height rows of `pitch` bytes, each at least the row's
        // pixels, aligned for the style's pixel.
        unsafe {
            match style {
                MapStyle::Gray16 => k.map_gray16(stream, cfg, frame)?,
                MapStyle::Heat => k.map_heat(stream, cfg, frame)?,
            }
        }
        stream.synchronize()
    }

    /// Renders the map in `style` into device memory at `out` (rows `pitch` bytes apart)
    /// and waits for it; `Ok(false)` when `context` (a `CUcontext`) is not the one the map
    /// lives in (the caller then renders for the host).
    ///
    /// # Safety
    /// `out` must hold `height` rows of `pitch` bytes in `context`, nothing else use it
    /// meanwhile; `pitch` at least a row's pixels and a multiple of the pixel's alignment
    /// (checked).
    pub(crate) unsafe fn render_device(
        &self,
        kind: MapKind,
        style: MapStyle,
        peak: f64,
        out: u64,
        pitch: usize,
        context: usize,
    ) -> Result<bool, DriverError> {
        let ctx = self.slots.stream.context();
        if ctx.cu_ctx() as usize != context {
            return Ok(false);
        }
        ctx.bind_to_thread()?;
        self.launch(style, self.frame(kind, peak, out, pitch))?;
        Ok(true)
    }

    /// Renders the map in `style` into `out` on the host, rows `stride` bytes apart: on the
    /// device into the slots' staging, then one copy.
    pub(crate) fn render_host(
        &self,
        kind: MapKind,
        style: MapStyle,
        peak: f64,
        out: &mut [u8],
        stride: usize,
    ) -> Result<(), DriverError> {
        let stream = &self.slots.stream;
        stream.context().bind_to_thread()?;
        let bytes = stride * self.height;
        let mut staging = self.slots.staging.lock().unwrap_or_else(|e| e.into_inner());
        if staging.as_ref().is_none_or(|s| s.len() < bytes) {
            // SAFETY: the render writes every pixel the copy below reads back (the rows'
            // padding comes back as whatever it holds, as a frame's padding may).
            *staging = Some(unsafe { stream.alloc::<u8>(bytes.max(1)) }?);
        }
        let s = staging.as_ref().expect("made above");
        self.launch(style, self.frame(kind, peak, s.ptr(), stride))?;
        // SAFETY: the staging holds `bytes`, rendered and waited for above.
        unsafe {
            cudarc::driver::result::memcpy_dtoh_async(
                &mut out[..bytes],
                s.ptr(),
                stream.cu_stream(),
            )
        }?;
        stream.synchronize()
    }
}

/// What a producer of maps queues and reads per pair in place of its map's readback: the
/// copy of the finished map into a buffer of its own and that copy's statistics.
pub(crate) struct MapOut {
    kind: MapKind,
    width: usize,
    height: usize,
    sign: f32,
    threshold: f32,
    slots: Arc<Slots>,
    /// The pairs' buffers queued and not read, in order.
    queued: VecDeque<CudaSlice<f32>>,
    partials: Readback<u32>,
}

impl MapOut {
    /// For `kind`'s maps of `width`×`height` made on `gpu`'s stream, the area counting
    /// past `threshold`.
    pub(crate) fn new(
        gpu: &Gpu,
        kind: MapKind,
        width: u32,
        height: u32,
        threshold: f64,
    ) -> Result<MapOut, DriverError> {
        let slots = Arc::new(Slots {
            len: width as usize * height as usize,
            stream: gpu.ctx.new_stream()?,
            kernels: gpu.kernels.clone(),
            free: Mutex::new(Vec::new()),
            staging: Mutex::new(None),
        });
        Ok(MapOut {
            kind,
            width: width as usize,
            height: height as usize,
            sign: if kind.worse_above() { 1.0 } else { -1.0 },
            threshold: threshold as f32,
            slots,
            queued: VecDeque::new(),
            partials: Readback::new(&gpu.ctx, STATS_BLOCKS as usize * PARTIAL_WORDS)?,
        })
    }

    /// Queues on `stream` the copy of the pair's finished map at `src` into a buffer of
    /// its own, then its statistics (into the partials' readback).
    ///
    /// # Safety
    /// `src` holds the map's `width`×`height` values, written by work queued before on
    /// `stream`.
    pub(crate) unsafe fn copy_in(
        &mut self,
        gpu: &Gpu,
        stream: &CudaStream,
        src: u64,
    ) -> Result<(), DriverError> {
        let n = self.width * self.height;
        let target = self.partials.target()?;
        let buffer = self.slots.take()?;
        // SAFETY: `buffer` holds n values (the slots' length); `src` by the caller.
        unsafe {
            cudarc::driver::result::memcpy_dtod_async(
                buffer.ptr(),
                src,
                n * size_of::<f32>(),
                stream.cu_stream(),
            )
        }?;
        let cfg = LaunchConfig {
            grid_dim: (STATS_BLOCKS, 1, 1),
            block_dim: (STATS_BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the buffer holds n values (copied above, same stream); the partials'
        // slot holds STATS_BLOCKS partials.
        unsafe {
            gpu.kernels.map_stats(
                stream,
                cfg,
                DevPtr::from_raw(buffer.ptr()),
                n as u32,
                self.sign,
                self.threshold,
                target,
            )?;
        }
        self.partials.commit(stream)?;
        self.queued.push_back(buffer);
        Ok(())
    }

    /// Waits for the oldest pair queued and gives its map.
    pub(crate) fn take(&mut self) -> Result<super::PairMap, DriverError> {
        let words = self.partials.take(STATS_BLOCKS as usize * PARTIAL_WORDS)?;
        let all = words
            .chunks_exact(PARTIAL_WORDS)
            .map(|w| Partial::from_words([w[0], w[1], w[2]]))
            .fold(Partial::NONE, Partial::join);
        let past: u64 = words.chunks_exact(PARTIAL_WORDS).map(|w| w[2] as u64).sum();
        let buffer = self
            .queued
            .pop_front()
            .ok_or(DriverError(sys::cudaError_enum::CUDA_ERROR_ILLEGAL_STATE))?;
        let stats =
            super::stats::of_partial(all, past, self.sign, self.width, self.width * self.height);
        let values = Values {
            buffer: Some(buffer),
            slots: self.slots.clone(),
            width: self.width,
            height: self.height,
        };
        Ok(super::PairMap::in_device_memory(self.kind, values, stats))
    }

    /// Forgets the pairs queued (their buffers go back to the slots).
    pub(crate) fn clear(&mut self) {
        self.partials.clear();
        for b in self.queued.drain(..) {
            self.slots.give_back(b);
        }
    }
}
