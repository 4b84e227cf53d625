//! A pair's map on the CUDA backend stays in device memory: its statistics come from a
//! reduction kernel (`map_stats`: a few hundred bytes back per pair instead of 8 MB at
//! 1080p), and its values reach the host only when a reader asks for them
//! ([`super::PairMap::values`]); rendered as a frame, it goes from device memory to the
//! frame's (CUDA memory in place, or the host) through the `map_gray16` / `map_heat`
//! kernels. At 13,000 pairs/s (SSIM, PSNR) a 1080p map each to the host would need more than
//! PCIe carries (docs/BENCHMARKS.md, 2026-12-05).
//!
//! [`MapOut`] takes the place of a producer's readback of its map: each metric that makes a
//! map (the frames' maps, Butteraugli, ColorVideoVDP, SSIMULACRA2) writes it into a buffer
//! of the pair's own ([`Slots`]; ColorVideoVDP copies its collapsed pyramid there), queues
//! its statistics, and reads the pair's [`super::PairMap`] back. Buffers handed out return to their
//! [`Slots`] when the pair's map is dropped; a reader holding maps longer than the pairs
//! in flight makes new ones (allocated once, kept for reuse: `super::values`).

use std::collections::VecDeque;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DriverError, LaunchConfig, sys};
use gpumetrics_kernels::map::{PARTIAL_WORDS, Partial, STATS_BLOCK, STATS_BLOCKS};
use gpumetrics_launch::DevPtr;

use super::kind::MapKind;
use super::values::{Slots, Values};
use crate::cuda::{DeviceMemory, Gpu, Readback};

/// What a producer of maps queues and reads per pair in place of its map's readback: a
/// buffer of the pair's own that its kernels write the map into ([`MapOut::target`], or a
/// copy: [`MapOut::copy_in`]), and that map's statistics.
pub(crate) struct MapOut {
    kind: MapKind,
    width: usize,
    height: usize,
    sign: f32,
    threshold: f32,
    slots: Arc<Slots>,
    /// The pairs' buffers queued and not read, in order.
    queued: VecDeque<CudaSlice<f32>>,
    /// The next pair's buffer, handed to its producer ([`MapOut::target`]) and not
    /// committed yet.
    pending: Option<CudaSlice<f32>>,
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
        let slots = Slots::new(gpu, width as usize * height as usize)?;
        Ok(MapOut {
            kind,
            width: width as usize,
            height: height as usize,
            sign: if kind.worse_above() { 1.0 } else { -1.0 },
            threshold: threshold as f32,
            slots,
            queued: VecDeque::new(),
            pending: None,
            partials: Readback::new(&gpu.ctx, STATS_BLOCKS as usize * PARTIAL_WORDS)?,
        })
    }

    /// The device address of the next pair's map buffer (`width`×`height` f32), for a
    /// producer to write its map straight into; then [`MapOut::commit`].
    pub(crate) fn target(&mut self) -> Result<u64, DriverError> {
        if self.pending.is_none() {
            self.pending = Some(self.slots.take()?);
        }
        Ok(self.pending.as_ref().map_or(0, |b| b.ptr()))
    }

    /// The pair's map is in [`MapOut::target`]'s buffer, written by work queued before on
    /// `stream`: queues its statistics (into the partials' readback) after it.
    pub(crate) fn commit(&mut self, gpu: &Gpu, stream: &CudaStream) -> Result<(), DriverError> {
        let n = self.width * self.height;
        let Some(buffer) = self.pending.take() else {
            return Err(DriverError(sys::cudaError_enum::CUDA_ERROR_ILLEGAL_STATE));
        };
        let partials = match self.partials.target() {
            Ok(p) => p,
            Err(e) => {
                self.slots.give_back(buffer);
                return Err(e);
            }
        };
        let cfg = LaunchConfig {
            grid_dim: (STATS_BLOCKS, 1, 1),
            block_dim: (STATS_BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the buffer holds n values (written before on this stream, the caller
        // says); the partials' slot holds STATS_BLOCKS partials.
        let queued = unsafe {
            gpu.kernels.map_stats(
                stream,
                cfg,
                DevPtr::from_raw(buffer.ptr()),
                n as u32,
                self.sign,
                self.threshold,
                partials,
            )
        }
        .and_then(|()| self.partials.commit(stream));
        // Queued or not, the buffer stays in order until the pair is read or dropped (a
        // failed launch leaves it to `clear`).
        self.queued.push_back(buffer);
        queued
    }

    /// Queues on `stream` the copy of the pair's finished map at `src` into the next
    /// pair's buffer, then [`MapOut::commit`] (for producers whose map lives in memory
    /// they reuse, e.g. a band pyramid collapsed in place).
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
        let dst = self.target()?;
        // SAFETY: `dst` holds n values (the slots' length); `src` by the caller.
        unsafe {
            cudarc::driver::result::memcpy_dtod_async(
                dst,
                src,
                n * size_of::<f32>(),
                stream.cu_stream(),
            )
        }?;
        self.commit(gpu, stream)
    }

    /// Waits for the oldest pair queued and gives its map.
    pub(crate) fn take(&mut self) -> Result<super::PairMap, DriverError> {
        let words = self.partials.take(STATS_BLOCKS as usize * PARTIAL_WORDS)?;
        let all = words
            .chunks_exact(PARTIAL_WORDS)
            .map(|w| Partial::from_words([w[0], w[1], w[2]]))
            .fold(Partial::NONE, Partial::join);
        let buffer = self
            .queued
            .pop_front()
            .ok_or(DriverError(sys::cudaError_enum::CUDA_ERROR_ILLEGAL_STATE))?;
        let stats = super::stats::of_partial(all, self.sign, self.width, self.width * self.height);
        let values = Values::new(buffer, self.slots.clone(), self.width, self.height);
        Ok(super::PairMap::in_device_memory(self.kind, values, stats))
    }

    /// Forgets the pairs queued (their buffers go back to the slots).
    pub(crate) fn clear(&mut self) {
        self.partials.clear();
        for b in self.queued.drain(..).chain(self.pending.take()) {
            self.slots.give_back(b);
        }
    }
}
