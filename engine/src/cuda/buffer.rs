//! Memory an engine owns: device buffers, pinned host buffers and the result slots that
//! bring a pair's sums back.
//!
//! The single-stream rule: every buffer here is allocated on the engine's one stream and used
//! only by work queued on that stream, or by the host after synchronising it. Its address is
//! therefore read once, when it is allocated, and cached: cudarc's per-access event tracking
//! (the guard of `device_ptr`) has nothing to order here and would cost a call per launch.
//! The buffers are `Send` for the same reason: whoever owns the engine owns the stream.

use std::sync::Arc;

use cudarc::driver::result as cu;
use cudarc::driver::{
    CudaContext, CudaEvent, CudaSlice, CudaStream, DeviceRepr, DriverError, PinnedHostSlice,
    ValidAsZeroBits, sys,
};

use gpumetrics_launch::DevPtrMut;

/// Device memory of `len` values of `T`, with its address cached.
pub(crate) struct DeviceBuffer<T> {
    /// Owns the memory at `ptr`.
    _slice: CudaSlice<T>,
    ptr: u64,
    len: usize,
}

impl<T: DeviceRepr + ValidAsZeroBits> DeviceBuffer<T> {
    /// `len` zeroed values on `stream`.
    pub(crate) fn zeroed(stream: &Arc<CudaStream>, len: usize) -> Result<Self, DriverError> {
        let slice = stream.alloc_zeros::<T>(len)?;
        let ptr = {
            let (ptr, _sync) = cudarc::driver::DevicePtr::device_ptr(&slice, stream);
            ptr
        };
        Ok(DeviceBuffer {
            _slice: slice,
            ptr,
            len,
        })
    }
}

impl<T> DeviceBuffer<T> {
    pub(crate) fn ptr(&self) -> u64 {
        self.ptr
    }

    /// Address of element `i` (not checked against the length).
    pub(crate) fn ptr_at(&self, i: usize) -> u64 {
        self.ptr + (i * size_of::<T>()) as u64
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn as_mut(&self) -> DevPtrMut<T> {
        DevPtrMut::from_raw(self.ptr)
    }
}

/// Page-locked host memory of `len` values of `T`, with its address cached.
pub(crate) struct PinnedBuffer<T> {
    /// Owns the memory at `ptr`.
    _slice: PinnedHostSlice<T>,
    ptr: *mut T,
    len: usize,
}

// SAFETY: `ptr` addresses memory owned by the struct; see the single-stream rule above.
unsafe impl<T: Send> Send for PinnedBuffer<T> {}

impl<T: DeviceRepr + ValidAsZeroBits> PinnedBuffer<T> {
    /// `len` values allocated with `cuMemHostAlloc` `flags` (e.g. write-combined for
    /// upload staging).
    ///
    /// # Safety
    /// The memory is uninitialised: it must be written (by the host or by a device copy)
    /// before it is read.
    pub(crate) unsafe fn new(
        ctx: &Arc<CudaContext>,
        len: usize,
        flags: u32,
    ) -> Result<Self, DriverError> {
        // SAFETY: the caller writes before reading.
        let mut slice = unsafe { ctx.alloc_pinned_with_flags::<T>(len, flags) }?;
        let ptr = slice.as_mut_ptr()?;
        Ok(PinnedBuffer {
            _slice: slice,
            ptr,
            len,
        })
    }
}

impl<T> PinnedBuffer<T> {
    pub(crate) fn as_mut_ptr(&self) -> *mut T {
        self.ptr
    }

    /// The values.
    ///
    /// # Safety
    /// No device copy into the buffer may be pending (the stream was synchronised after
    /// the last one), and the values were written.
    pub(crate) unsafe fn as_slice(&self) -> &[T] {
        // SAFETY: `len` values owned by the struct; the caller rules out concurrent writes.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// Queues a copy of `len` values from device address `src` into the buffer.
    ///
    /// # Safety
    /// `src` holds `len` readable values of `T`; the buffer is not read before the stream
    /// is synchronised.
    pub(crate) unsafe fn copy_from_device(
        &self,
        src: u64,
        stream: &CudaStream,
    ) -> Result<(), DriverError> {
        // SAFETY: see above; the host memory is ours and pinned.
        unsafe {
            let host = std::slice::from_raw_parts_mut(self.ptr, self.len);
            cu::memcpy_dtoh_async(host, src, stream.cu_stream())
        }
    }
}

/// Pairs one engine may have in flight (submitted, results not read yet): the depth of
/// every [`Readback`] (the upload staging has as many slots as the engine asks for). With two
/// the host's work on one pair (queueing, reading, scoring) overlaps the device's work on
/// the other; more let the small kernels of several pairs share the device.
pub(crate) const IN_FLIGHT: usize = 4;

/// Where a metric's per-frame results come back to the host: one slot of pinned host
/// memory, mapped into the device's address space, per frame in flight ([`IN_FLIGHT`]),
/// each with the event recorded after the frame's kernels.
///
/// The kernels write a frame's results straight into its slot ([`Readback::target`]), so
/// no copy is queued and no copy engine sits between one frame's kernels and the next's. A
/// frame's slot is taken while the host has not read the previous frame's values yet, and
/// reading a frame waits for that frame's event only, never for the whole stream (which may
/// already run the next frame's kernels). Frames are read in the order they were queued.
///
/// What goes there must be plain stores of final values (no atomics, nothing a later
/// kernel reads back): every access crosses the bus.
pub(crate) struct Readback<T> {
    slots: Vec<(MappedBuffer<T>, CudaEvent)>,
    /// The oldest queued slot.
    head: usize,
    /// Slots queued and not read.
    queued: usize,
}

/// Pinned host memory mapped into the device's address space.
struct MappedBuffer<T> {
    /// Owns the memory at `host`.
    _slice: PinnedHostSlice<T>,
    host: *mut T,
    device: u64,
    len: usize,
}

// SAFETY: the memory is owned by the struct; the host reads it only after the event of the
// work that writes it (see `Readback`).
unsafe impl<T: Send> Send for MappedBuffer<T> {}

impl<T: DeviceRepr + ValidAsZeroBits> Readback<T> {
    /// [`IN_FLIGHT`] slots of `len` values.
    pub(crate) fn new(ctx: &Arc<CudaContext>, len: usize) -> Result<Self, DriverError> {
        let mut slots = Vec::with_capacity(IN_FLIGHT);
        for _ in 0..IN_FLIGHT {
            let len = len.max(1);
            // SAFETY: a slot is read only after the kernels that write it completed (`take`).
            let mut slice =
                unsafe { ctx.alloc_pinned_with_flags::<T>(len, sys::CU_MEMHOSTALLOC_DEVICEMAP) }?;
            let host = slice.as_mut_ptr()?;
            let mut device: sys::CUdeviceptr = 0;
            // SAFETY: `host` is the start of a mapped pinned allocation of this context.
            unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, host.cast(), 0) }.result()?;
            let buf = MappedBuffer {
                _slice: slice,
                host,
                device,
                len,
            };
            slots.push((buf, ctx.new_event(None)?));
        }
        Ok(Readback {
            slots,
            head: 0,
            queued: 0,
        })
    }
}

impl<T> Readback<T> {
    /// Frames queued and not read yet.
    pub(crate) fn queued(&self) -> usize {
        self.queued
    }

    /// The device address of the next frame's slot (its length is the `len` given to
    /// `new`), for the frame's kernels to write their results to; then
    /// [`Readback::commit`]. Refused (`CUDA_ERROR_ILLEGAL_STATE`) when every slot is
    /// queued: the engine never has more frames in flight than there are slots.
    pub(crate) fn target(&self) -> Result<DevPtrMut<T>, DriverError> {
        if self.queued == self.slots.len() {
            return Err(DriverError(sys::cudaError_enum::CUDA_ERROR_ILLEGAL_STATE));
        }
        let (buf, _) = &self.slots[(self.head + self.queued) % self.slots.len()];
        Ok(DevPtrMut::from_raw(buf.device))
    }

    /// The frame whose kernels write to [`Readback::target`] is queued on `stream`: records
    /// the slot's event after them.
    pub(crate) fn commit(&mut self, stream: &CudaStream) -> Result<(), DriverError> {
        if self.queued == self.slots.len() {
            return Err(DriverError(sys::cudaError_enum::CUDA_ERROR_ILLEGAL_STATE));
        }
        let (_, event) = &self.slots[(self.head + self.queued) % self.slots.len()];
        event.record(stream)?;
        self.queued += 1;
        Ok(())
    }

    /// Queues a copy of `len` values from device address `src` into the next frame's slot
    /// and commits it: for results that kernels build up in device memory (sums added with
    /// atomics, which must not cross the bus one addition at a time). Refused as
    /// [`Readback::target`], and when `len` is longer than a slot.
    ///
    /// # Safety
    /// `src` holds `len` values of `T`, written by work queued on `stream` before this.
    pub(crate) unsafe fn copy_in(
        &mut self,
        src: u64,
        len: usize,
        stream: &CudaStream,
    ) -> Result<(), DriverError> {
        if self.queued == self.slots.len() {
            return Err(DriverError(sys::cudaError_enum::CUDA_ERROR_ILLEGAL_STATE));
        }
        let (buf, _) = &self.slots[(self.head + self.queued) % self.slots.len()];
        if len > buf.len {
            return Err(DriverError(sys::cudaError_enum::CUDA_ERROR_INVALID_VALUE));
        }
        // SAFETY: the slot is not queued, so the host does not read it until `take` has
        // waited for the event committed after this copy; `len` values fit in it.
        unsafe {
            let host = std::slice::from_raw_parts_mut(buf.host, len);
            cu::memcpy_dtoh_async(host, src, stream.cu_stream())?;
        }
        self.commit(stream)
    }

    /// Waits for the oldest frame queued and gives its first `len` values (refused, as
    /// `target`, when nothing is queued). The slot is free again for the next frame.
    pub(crate) fn take(&mut self, len: usize) -> Result<&[T], DriverError> {
        if self.queued == 0 {
            return Err(DriverError(sys::cudaError_enum::CUDA_ERROR_ILLEGAL_STATE));
        }
        let i = self.head;
        self.head = (self.head + 1) % self.slots.len();
        self.queued -= 1;
        let (buf, event) = &self.slots[i];
        event.synchronize()?;
        // SAFETY: the kernels that wrote the slot completed (its event); at most its length.
        Ok(unsafe { std::slice::from_raw_parts(buf.host, len.min(buf.len)) })
    }

    /// Forgets the queued frames (a restart or a failed frame). The caller has made sure
    /// that no kernel still writes to them (the backend synchronises after a failure; a
    /// finished sequence was read to the end).
    pub(crate) fn clear(&mut self) {
        self.queued = 0;
    }
}

/// Where a metric's kernels add up one pair's sums: two device slots of `len` values, used
/// in turn (the pair's first launch clears the *other* slot for the next pair, so no memset
/// is queued per pair), and a pinned host slot per pair in flight ([`Readback`]).
///
/// Per pair: [`ResultSlots::targets`] gives the launches their addresses, then
/// [`ResultSlots::queue`] queues the copy of the slot to the host and flips the slots, and
/// [`ResultSlots::take`] later waits for the oldest pair queued. The device slots may be
/// flipped again before a pair is taken: the next pair's kernels clear a slot only after
/// the copy queued before them on the same stream. After a failed launch
/// [`ResultSlots::reset`] zeroes both so that no stale sums reach the next pair.
pub(crate) struct ResultSlots<T> {
    device: DeviceBuffer<T>,
    host: Readback<T>,
    /// The engine's stream, which every launch adding into the slots runs on.
    stream: Arc<CudaStream>,
    len: usize,
    slot: usize,
}

impl<T: DeviceRepr + ValidAsZeroBits> ResultSlots<T> {
    pub(crate) fn new(
        ctx: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
        len: usize,
    ) -> Result<Self, DriverError> {
        Ok(ResultSlots {
            device: DeviceBuffer::zeroed(stream, 2 * len)?,
            host: Readback::new(ctx, len)?,
            stream: stream.clone(),
            len,
            slot: 0,
        })
    }
}

impl<T> ResultSlots<T> {
    /// (slot this pair adds into, slot to clear for the next pair).
    pub(crate) fn targets(&self) -> (DevPtrMut<T>, DevPtrMut<T>) {
        let base = self.device.as_mut();
        (
            base.wrapping_add(self.slot * self.len),
            base.wrapping_add((1 - self.slot) * self.len),
        )
    }

    /// Queues the copy of this pair's slot to its host slot, after the kernels queued so
    /// far on `stream`, and flips the slots.
    pub(crate) fn queue(&mut self, stream: &CudaStream) -> Result<(), DriverError> {
        let (add_to, _) = self.targets();
        // SAFETY: the slot holds `len` values, written by the launches queued before.
        unsafe { self.host.copy_in(add_to.as_raw(), self.len, stream) }?;
        self.slot = 1 - self.slot;
        Ok(())
    }

    /// Pairs queued and not taken.
    pub(crate) fn queued(&self) -> usize {
        self.host.queued()
    }

    /// Waits for the oldest pair queued and gives its sums.
    pub(crate) fn take(&mut self) -> Result<&[T], DriverError> {
        self.host.take(self.len)
    }

    /// Queues zeroes into both slots and forgets the pairs queued (after an error, once
    /// nothing writes to them any more; best effort).
    pub(crate) fn reset(&mut self) {
        self.host.clear();
        let stream = &self.stream;
        // SAFETY: both slots lie in the device buffer.
        let _ = unsafe {
            cu::memset_d8_async(
                self.device.ptr(),
                0,
                self.device.len() * size_of::<T>(),
                stream.cu_stream(),
            )
        };
    }
}

/// The GPU an engine runs on: its context, its one stream and the loaded kernels.
pub(crate) struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    pub kernels: Arc<super::generated::Kernels>,
}

impl Gpu {
    /// The same GPU on a new stream that starts after the work queued so far on this one
    /// (a side lane whose buffers follow the single-stream rule on that stream).
    pub(crate) fn fork(&self) -> Result<Gpu, DriverError> {
        Ok(Gpu {
            ctx: self.ctx.clone(),
            stream: self.stream.fork()?,
            kernels: self.kernels.clone(),
        })
    }
}
