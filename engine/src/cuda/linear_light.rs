//! A stage two metrics share: the frames' linear light, computed once per pair.
//!
//! Butteraugli and SSIMULACRA2 both start from the same display-referred linear RGB of
//! each frame (`gpumetrics_kernels::linear_light`), and each converted the frames on its own
//! lane. When both run, the backend runs the conversion once per pair on the engine's
//! stream, into a slot of this stage, and each metric's lane reads the slot's planes.
//!
//! Ordering is by events, as across lanes elsewhere: the slot's `ready` event is recorded
//! after the conversion and each reader's lane waits for it before its first read; each
//! reader records its own event in the slot after its last read, and the conversion of a
//! later pair into that slot waits for every reader's event first. The events are made
//! when a reader joins (before the first pair), so a pair costs no allocation. There are as
//! many slots as pairs in flight, so the next pair's conversion need not wait for this
//! pair's readers.

use std::sync::{Arc, Mutex, PoisonError};

use cudarc::driver::{CudaContext, CudaEvent, CudaSlice, CudaStream, DriverError, LaunchConfig};
use gpumetrics_kernels::color::ColorSource;
use gpumetrics_kernels::color_tile as tile;
use gpumetrics_kernels::linear_light::{PLANES, Planes};

use super::{DeviceMemory, Gpu, zeroed};
use crate::error::EngineError;

/// The launch of a colour-stage kernel (`linear_light`, `color_tile`'s blocks) over a
/// `width` × `height` frame: blocks of 32 × `WARPS` threads over 16 × 8 pixels.
pub(crate) fn colour_blocks(width: u32, height: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (width.div_ceil(tile::COLS), height.div_ceil(tile::ROWS), 1),
        block_dim: (32, tile::WARPS, 1),
        shared_mem_bytes: 0,
    }
}

/// The shared linear light of one engine's pairs.
pub(crate) struct LinearLight {
    ctx: Arc<CudaContext>,
    width: u32,
    height: u32,
    /// Values per plane (`width · height` rounded up to 64: planes start 256-byte aligned).
    plane_len: u32,
    /// Each slot's planes and the event recorded after its conversion.
    slots: Vec<(CudaSlice<f32>, CudaEvent)>,
    state: Mutex<State>,
}

struct State {
    /// The slot of the last pair converted, and whether any was.
    current: Option<usize>,
    /// Per slot, one event per reader, recorded after that reader's last read of the slot.
    read: Vec<Vec<CudaEvent>>,
}

impl LinearLight {
    /// The stage for frames of `width` × `height`, with `slots` slots (the pairs in
    /// flight), allocated here once.
    pub(crate) fn new(
        gpu: &Gpu,
        width: u32,
        height: u32,
        slots: usize,
    ) -> Result<Arc<LinearLight>, DriverError> {
        let plane_len = (width * height).next_multiple_of(64);
        let slots = (0..slots.max(1))
            .map(|_| {
                Ok((
                    zeroed::<f32>(&gpu.stream, PLANES as usize * plane_len as usize)?,
                    gpu.ctx.new_event(None)?,
                ))
            })
            .collect::<Result<Vec<_>, DriverError>>()?;
        let read = slots.iter().map(|_| Vec::new()).collect();
        Ok(Arc::new(LinearLight {
            ctx: gpu.ctx.clone(),
            width,
            height,
            plane_len,
            slots,
            state: Mutex::new(State {
                current: None,
                read,
            }),
        }))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // The state is a slot index and events: nothing a panic elsewhere leaves half made.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn planes(&self, slot: usize) -> Planes {
        Planes {
            base: self.slots[slot].0.ptr(),
            width: self.width,
            height: self.height,
            plane_len: self.plane_len,
            _pad: 0,
        }
    }

    /// A metric instance that reads the planes (one per lane): call before the first pair.
    pub(crate) fn reader(self: &Arc<Self>) -> Result<Reader, DriverError> {
        let mut state = self.state();
        let id = state.read.first().map_or(0, Vec::len);
        for events in &mut state.read {
            events.push(self.ctx.new_event(None)?);
        }
        Ok(Reader {
            light: self.clone(),
            id,
            slot: None,
        })
    }

    /// Queues the conversion of a pair's frames (`sources`: reference, distorted) on `gpu`'s
    /// stream into the next slot, once that slot's readers of an earlier pair are done.
    ///
    /// # Safety
    /// `sources` describe validated frames of the stage's size that stay valid until the
    /// pair's readers have queued their reads.
    pub(crate) unsafe fn convert(
        &self,
        gpu: &Gpu,
        sources: [ColorSource; 2],
    ) -> Result<(), DriverError> {
        let mut state = self.state();
        let slot = state.current.map_or(0, |s| (s + 1) % self.slots.len());
        for event in &state.read[slot] {
            gpu.stream.wait(event)?;
        }
        let cfg = colour_blocks(self.width, self.height);
        let out = self.planes(slot);
        for (img, src) in sources.into_iter().enumerate() {
            // SAFETY: the caller's frames; the slot holds PLANES planes of `plane_len` values
            // of this size, allocated in `new`.
            unsafe {
                gpu.kernels
                    .linear_light(&gpu.stream, cfg, src, img as u32, out)
            }?;
        }
        self.slots[slot].1.record(&gpu.stream)?;
        state.current = Some(slot);
        Ok(())
    }
}

/// One metric instance's view of the stage ([`LinearLight::reader`]).
pub(crate) struct Reader {
    light: Arc<LinearLight>,
    id: usize,
    /// The slot of the pair being queued, between [`Reader::wait`] and [`Reader::done`].
    slot: Option<usize>,
}

impl Reader {
    /// Makes `stream` wait for the last pair's conversion and gives its planes; an error
    /// naming `metric` when the CUDA call fails, or when no pair was converted (the backend
    /// converts each pair before its metrics queue it).
    pub(crate) fn wait(
        &mut self,
        stream: &CudaStream,
        metric: &str,
    ) -> Result<Planes, EngineError> {
        let Some(slot) = self.light.state().current else {
            return Err(EngineError::Unsupported(format!(
                "{metric}: the pair's linear light was not converted"
            )));
        };
        stream.wait(&self.light.slots[slot].1).map_err(|e| {
            EngineError::Cuda(format!("{metric}: waiting for the linear light: {e}"))
        })?;
        self.slot = Some(slot);
        Ok(self.light.planes(slot))
    }

    /// Records on `stream`, after this reader's last read of the planes [`Reader::wait`]
    /// gave, that the slot may be written again.
    pub(crate) fn done(&mut self, stream: &CudaStream) -> Result<(), DriverError> {
        if let Some(slot) = self.slot.take() {
            self.light.state().read[slot][self.id].record(stream)?;
        }
        Ok(())
    }
}
