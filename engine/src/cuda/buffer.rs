//! Memory an engine owns: device memory ([`DeviceMemory`] over cudarc's `CudaSlice`), the
//! readback of a pair's results ([`Readback`]) and the device slots that kernels add a
//! pair's sums into ([`AddSlots`]).
//!
//! Ordering: the engine orders its streams itself, at the few points where work crosses
//! from one stream to another (a lane forked from the engine's stream, a side stream
//! joined back, an upload awaited, a scratch arena lent), with cudarc's `fork`, `join` and
//! events. Its contexts therefore run with cudarc's per-slice event tracking off
//! ([`untracked`]): that tracking records an event per buffer per launch, and it cannot see
//! a launch that takes addresses from a parameter struct (as most of the kernels' do).
//! Device memory is cudarc's `CudaSlice`, bound to the stream it was allocated on (and
//! freed on); its address is read from the slice at each use, never cached beside it.

use std::sync::Arc;

use cudarc::driver::{
    CudaContext, CudaEvent, CudaSlice, CudaStream, DevicePtr, DeviceRepr, DriverError,
    PinnedHostSlice, ValidAsZeroBits, sys,
};

use gpumetrics_launch::DevPtrMut;

/// Turns cudarc's per-slice event tracking off for `ctx` (see the module's doc: the engine
/// orders its streams itself). Every context an engine runs in goes through here before
/// anything is allocated in it.
pub(crate) fn untracked(ctx: Arc<CudaContext>) -> Arc<CudaContext> {
    // SAFETY: every buffer the engine allocates in `ctx` is used on its own stream, or on a
    // stream ordered after the work that wrote it by an explicit fork, join or event wait
    // (the lanes, side streams, uploads and scratch arenas), and freed on its own stream
    // after the work that reads it (the engine synchronises before it drops its buffers).
    unsafe { ctx.disable_event_tracking() };
    ctx
}

/// What the kernels need of device memory: its address, at each launch.
pub(crate) trait DeviceMemory<T> {
    /// The address of the first value.
    fn ptr(&self) -> u64;
    /// The address of value `i` (not checked against the length).
    fn ptr_at(&self, i: usize) -> u64;
    /// The address as a typed kernel argument.
    fn as_mut(&self) -> DevPtrMut<T>;
}

impl<T> DeviceMemory<T> for CudaSlice<T> {
    fn ptr(&self) -> u64 {
        // Untracked (see the module's doc): the guard records nothing.
        let (ptr, _untracked) = self.device_ptr(self.stream());
        ptr
    }

    fn ptr_at(&self, i: usize) -> u64 {
        self.ptr() + (i * size_of::<T>()) as u64
    }

    fn as_mut(&self) -> DevPtrMut<T> {
        DevPtrMut::from_raw(self.ptr())
    }
}

/// `len` zeroed values on `stream` (which the memory is bound to).
pub(crate) fn zeroed<T: DeviceRepr + ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    len: usize,
) -> Result<CudaSlice<T>, DriverError> {
    stream.alloc_zeros::<T>(len)
}

/// Pairs one engine may have in flight (submitted, results not read yet): the depth of
/// every [`Readback`] (the upload staging has as many slots as the engine asks for). With two
/// the host's work on one pair (queueing, reading, scoring) overlaps the device's work on
/// the other; more let the small kernels of several pairs share the device.
pub(crate) const IN_FLIGHT: usize = 4;

/// How a metric's per-pair results come back to the host, the one way: one slot of pinned
/// host memory mapped into the device's address space (cudarc's `PinnedHostSlice`,
/// allocated with `CU_MEMHOSTALLOC_DEVICEMAP`) per pair in flight ([`IN_FLIGHT`]), each with
/// a cudarc event recorded after the pair's work.
///
/// Kernels whose results are plain stores of final values write them straight into the
/// pair's slot ([`Readback::target`], then [`Readback::commit`]): no copy is queued and no
/// copy engine sits between one pair's kernels and the next's (every access crosses the
/// bus, so nothing there may be an atomic or read back by a later kernel). Results built up
/// in device memory (sums added with atomics, [`AddSlots`]) come over with one copy
/// ([`Readback::copy_in`]). A pair's slot is taken while the host has not read the previous
/// pair's values yet; reading a pair ([`Readback::take`]) waits for that pair's event only,
/// never for the whole stream (which may already run the next pair's kernels). Pairs are
/// read in the order they were queued.
pub(crate) struct Readback<T> {
    slots: Vec<Slot<T>>,
    /// The oldest queued slot.
    head: usize,
    /// Slots queued and not read.
    queued: usize,
}

/// One pair's slot of a [`Readback`].
struct Slot<T> {
    host: PinnedHostSlice<T>,
    /// The slot's address in the device's address space, looked up once.
    device: sys::CUdeviceptr,
    /// Recorded after the pair's work that writes the slot.
    done: CudaEvent,
}

fn refused() -> DriverError {
    DriverError(sys::cudaError_enum::CUDA_ERROR_ILLEGAL_STATE)
}

impl<T: DeviceRepr + ValidAsZeroBits> Readback<T> {
    /// [`IN_FLIGHT`] slots of `len` values.
    pub(crate) fn new(ctx: &Arc<CudaContext>, len: usize) -> Result<Self, DriverError> {
        Self::with_slots(ctx, len, IN_FLIGHT)
    }

    /// `depth` slots of `len` values (for results of which one pair is kept, e.g. SpEED's
    /// planes, `depth` 1).
    pub(crate) fn with_slots(
        ctx: &Arc<CudaContext>,
        len: usize,
        depth: usize,
    ) -> Result<Self, DriverError> {
        let mut slots = Vec::with_capacity(depth);
        for _ in 0..depth.max(1) {
            // SAFETY: a slot is read only after the work that writes it completed (`take`).
            let slice = unsafe {
                ctx.alloc_pinned_with_flags::<T>(len.max(1), sys::CU_MEMHOSTALLOC_DEVICEMAP)
            }?;
            let mut device: sys::CUdeviceptr = 0;
            // SAFETY: the start of a mapped pinned allocation of this context (nothing
            // queued touches it yet, so taking its pointer waits for nothing).
            unsafe {
                sys::cuMemHostGetDevicePointer_v2(&mut device, slice.as_ptr()?.cast_mut().cast(), 0)
            }
            .result()?;
            slots.push(Slot {
                host: slice,
                device,
                done: ctx.new_event(None)?,
            });
        }
        Ok(Readback {
            slots,
            head: 0,
            queued: 0,
        })
    }
}

impl<T: DeviceRepr + ValidAsZeroBits> Readback<T> {
    /// Pairs queued and not read yet.
    pub(crate) fn queued(&self) -> usize {
        self.queued
    }

    /// The next pair's slot, refused (`CUDA_ERROR_ILLEGAL_STATE`) when every slot is
    /// queued: the engine never has more pairs in flight than there are slots.
    fn next(&mut self) -> Result<&mut Slot<T>, DriverError> {
        if self.queued == self.slots.len() {
            return Err(refused());
        }
        let n = self.slots.len();
        Ok(&mut self.slots[(self.head + self.queued) % n])
    }

    /// The device address of the next pair's slot (its length is the `len` given to
    /// `new`), for the pair's kernels to write their results to; then
    /// [`Readback::commit`]. Refused when every slot is queued.
    pub(crate) fn target(&mut self) -> Result<DevPtrMut<T>, DriverError> {
        Ok(DevPtrMut::from_raw(self.next()?.device))
    }

    /// The pair whose kernels write to [`Readback::target`] is queued on `stream`: records
    /// the slot's event after them.
    pub(crate) fn commit(&mut self, stream: &CudaStream) -> Result<(), DriverError> {
        self.next()?.done.record(stream)?;
        self.queued += 1;
        Ok(())
    }

    /// Queues a copy of `len` values from device address `src` into the next pair's slot
    /// and commits it. Refused as [`Readback::target`], and when `len` is longer than a
    /// slot.
    ///
    /// # Safety
    /// `src` holds `len` values of `T`, written by work queued on `stream` before this.
    pub(crate) unsafe fn copy_in(
        &mut self,
        src: u64,
        len: usize,
        stream: &CudaStream,
    ) -> Result<(), DriverError> {
        let slot = self.next()?;
        if len > slot.host.len() {
            return Err(DriverError(sys::cudaError_enum::CUDA_ERROR_INVALID_VALUE));
        }
        let host = &mut slot.host.as_mut_slice()?[..len];
        // SAFETY: the slot is not queued, so the host does not read it until `take` has
        // waited for the event committed after this copy; `src` holds `len` values.
        unsafe { cudarc::driver::result::memcpy_dtoh_async(host, src, stream.cu_stream()) }?;
        self.commit(stream)
    }

    /// Waits for the oldest pair queued and gives its first `len` values (refused when
    /// nothing is queued). The slot is free again for the next pair.
    pub(crate) fn take(&mut self, len: usize) -> Result<&[T], DriverError> {
        if self.queued == 0 {
            return Err(refused());
        }
        let i = self.head;
        self.head = (self.head + 1) % self.slots.len();
        self.queued -= 1;
        let slot = &self.slots[i];
        slot.done.synchronize()?;
        let values = slot.host.as_slice()?;
        Ok(&values[..len.min(values.len())])
    }

    /// Forgets the queued pairs (a restart or a failed pair). The caller has made sure
    /// that no kernel still writes to them (the backend synchronises after a failure; a
    /// finished sequence was read to the end).
    pub(crate) fn clear(&mut self) {
        self.queued = 0;
    }
}

/// Where a metric's kernels add up one pair's sums: two device slots of `len` values, used
/// in turn (the pair's first launch clears the *other* slot for the next pair, so no memset
/// is queued per pair). Device memory, not a readback: a pair's slot goes to the metric's
/// [`Readback`] with [`AddSlots::copy_to`].
///
/// Per pair: [`AddSlots::targets`] gives the launches their addresses, then
/// [`AddSlots::copy_to`] queues the copy of the slot and flips the slots. The slots may be
/// flipped again before a pair is read: the next pair's kernels clear a slot only after the
/// copy queued before them on the same stream. After a failed launch [`AddSlots::zero`]
/// zeroes both so that no stale sums reach the next pair.
pub(crate) struct AddSlots<T> {
    device: CudaSlice<T>,
    len: usize,
    slot: usize,
}

impl<T: DeviceRepr + ValidAsZeroBits> AddSlots<T> {
    /// Two zeroed slots of `len` values on `stream`, which every launch adding into them
    /// runs on.
    pub(crate) fn new(stream: &Arc<CudaStream>, len: usize) -> Result<Self, DriverError> {
        Ok(AddSlots {
            device: zeroed(stream, 2 * len)?,
            len,
            slot: 0,
        })
    }

    /// Queues zeroes into both slots (after an error, once nothing writes to them any more;
    /// best effort).
    pub(crate) fn zero(&mut self) {
        let stream = self.device.stream().clone();
        let _ = stream.memset_zeros(&mut self.device);
    }
}

impl<T: DeviceRepr + ValidAsZeroBits> AddSlots<T> {
    /// (slot this pair adds into, slot to clear for the next pair).
    pub(crate) fn targets(&self) -> (DevPtrMut<T>, DevPtrMut<T>) {
        let base = self.device.as_mut();
        (
            base.wrapping_add(self.slot * self.len),
            base.wrapping_add((1 - self.slot) * self.len),
        )
    }

    /// Queues the copy of this pair's slot into `host`'s next slot, after the kernels
    /// queued so far on the slots' stream, and flips the slots.
    pub(crate) fn copy_to(&mut self, host: &mut Readback<T>) -> Result<(), DriverError> {
        let (add_to, _) = self.targets();
        // SAFETY: the slot holds `len` values, written by the launches queued before on
        // the slots' stream.
        unsafe { host.copy_in(add_to.as_raw(), self.len, self.device.stream()) }?;
        self.slot = 1 - self.slot;
        Ok(())
    }
}

/// The GPU an engine runs on: its context, its one stream and the loaded kernels.
pub(crate) struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    pub kernels: Arc<super::generated::Kernels>,
}

impl Gpu {
    /// The same GPU on a stream forked from this one (cudarc's `fork`: it starts after the
    /// work queued so far here), for a lane of its own.
    pub(crate) fn fork(&self) -> Result<Gpu, DriverError> {
        Ok(Gpu {
            ctx: self.ctx.clone(),
            stream: self.stream.fork()?,
            kernels: self.kernels.clone(),
        })
    }
}
