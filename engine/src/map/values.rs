//! The device buffers of a producer's maps ([`Slots`]) and one pair's map in them
//! ([`Values`]): returned to their slots when dropped; copied to the host, or drawn as a
//! frame into device memory or for the host, on the slots' own stream
//! ([`super::device`] fills them).

use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaSlice, CudaStream, DriverError, PinnedHostSlice};
use gpumetrics_kernels::map::MapFrame;

use super::kind::{DistortionMap, MapKind};
use super::render::MapStyle;
use crate::cuda::DeviceMemory;

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
    /// What comes to the host comes through here (grown to the largest asked): a copy into
    /// pinned memory runs at the bus's rate (0.16 ms for a 1080p map on an H100 host,
    /// 0.54–0.88 into pageable memory: `map_copy`), then the host copies it on in parallel.
    pinned: Mutex<Option<PinnedHostSlice<u8>>>,
}

/// Bytes per block of the host's parallel copies out of pinned memory (1 MB).
const COPY_BLOCK: usize = 1 << 20;

impl Slots {
    /// Slots of `len` values on a new stream of `gpu`'s context.
    pub(crate) fn new(gpu: &crate::cuda::Gpu, len: usize) -> Result<Arc<Slots>, DriverError> {
        Ok(Arc::new(Slots {
            len,
            stream: gpu.ctx.new_stream()?,
            kernels: gpu.kernels.clone(),
            free: Mutex::new(Vec::new()),
            staging: Mutex::new(None),
            pinned: Mutex::new(None),
        }))
    }

    /// Copies `bytes` from device address `src` (complete before anything now queued on
    /// the slots' stream) to the host through the pinned buffer, then hands them to `to`.
    fn through_pinned<R>(
        &self,
        src: u64,
        bytes: usize,
        to: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, DriverError> {
        let stream = &self.stream;
        let mut pinned = self.pinned.lock().unwrap_or_else(|e| e.into_inner());
        if pinned.as_ref().is_none_or(|p| p.len() < bytes) {
            *pinned = None;
            // SAFETY: read only after the copy into it completed (synchronised below).
            *pinned = Some(unsafe { stream.context().alloc_pinned::<u8>(bytes.max(1)) }?);
        }
        let p = pinned.as_mut().expect("made above");
        let host = &mut p.as_mut_slice()?[..bytes];
        // SAFETY: `src` holds `bytes` (the caller's); the copy is waited for below.
        unsafe { cudarc::driver::result::memcpy_dtoh_async(host, src, stream.cu_stream()) }?;
        stream.synchronize()?;
        Ok(to(&p.as_slice()?[..bytes]))
    }

    /// A free buffer, or a new one.
    pub(crate) fn take(&self) -> Result<CudaSlice<f32>, DriverError> {
        if let Some(b) = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            return Ok(b);
        }
        // SAFETY: every value is written (by the producer's kernels or copy) before it is
        // read.
        let b = unsafe { self.stream.alloc::<f32>(self.len.max(1)) }?;
        // The allocation may be ordered on this stream (cudarc allocates asynchronously
        // where it can); the producer's lane writes it next: wait for it here (a new buffer
        // is made only while the pool warms up or a reader holds maps).
        self.stream.synchronize()?;
        Ok(b)
    }

    pub(crate) fn give_back(&self, b: CudaSlice<f32>) {
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
    /// `buffer` (from `slots`) holding a `width`×`height` map.
    pub(crate) fn new(
        buffer: CudaSlice<f32>,
        slots: Arc<Slots>,
        width: usize,
        height: usize,
    ) -> Values {
        Values {
            buffer: Some(buffer),
            slots,
            width,
            height,
        }
    }

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

    /// The values on the host: through the slots' pinned buffer, then copied in parallel
    /// into the map's buffer (a dropped map's where one fits: `DistortionMap::copied`).
    pub(crate) fn to_host(&self) -> Result<DistortionMap, DriverError> {
        let stream = &self.slots.stream;
        stream.context().bind_to_thread()?;
        let n = self.len();
        // SAFETY: the buffer holds n values, complete since the pair was read (its
        // statistics, queued after the copy into it, were waited for).
        self.slots.through_pinned(self.ptr(), 4 * n, |bytes| {
            // Pinned memory is page-aligned: its bytes are f32s in place.
            debug_assert_eq!(bytes.as_ptr() as usize % align_of::<f32>(), 0);
            // SAFETY: n f32s (4n bytes), aligned (above), read-only while borrowed.
            let values = unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<f32>(), n) };
            DistortionMap::copied(self.width, self.height, values)
        })
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
        let cfg = super::render::per_pixel(frame.width, frame.height);
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
    /// device into the slots' staging, then to the host through pinned memory.
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
        // The rendered frame (waited for above) through pinned memory, then in parallel
        // into `out`.
        self.slots.through_pinned(s.ptr(), bytes, |frame| {
            use rayon::prelude::*;
            out[..bytes]
                .par_chunks_mut(COPY_BLOCK)
                .zip(frame.par_chunks(COPY_BLOCK))
                .for_each(|(to, from)| to.copy_from_slice(from));
        })
    }
}
