//! Scratch memory shared by the engines of one CUDA context.
//!
//! Butteraugli and SSIMULACRA2 need hundreds of megabytes at 1080p for planes that a pair's
//! kernels write and read and that nothing keeps for the next pair. An engine does not own
//! that memory: per pair it borrows one of a few arenas ([`Scratch`]) that every engine of
//! the same context with the same need (the metric and its layout, the [`Key`]) shares, so
//! that sixteen engines of one process hold two arenas instead of sixteen.
//!
//! Borrowing is ordered on the GPU: the borrower's stream waits for the event recorded
//! after the previous borrower's work in that arena, and the arena's event is recorded
//! after the borrower's own work ([`Lease`]). The host waits only while every arena is
//! lent to an engine that is queuing a pair (microseconds of host work, not the pair's
//! GPU time), and as many engines as there are arenas run their pairs at once. An arena's content is only what a
//! pair writes before it reads it, plus what `init` wrote when the arena was made (zeroed
//! borders, tables of addresses inside the arena), which is the same for every engine of
//! the key and which no pair writes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};

use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, DriverError};

use super::{DeviceMemory, Gpu, zeroed};

/// Arenas per key at most: that many engines of one context can have that metric's work on
/// the GPU at once. Two keep the GPU busy while one engine's pair ends and the next one's
/// starts; the metrics that borrow fill a large GPU on their own at 1080p.
pub(crate) const ARENAS: usize = 2;

/// What an arena is for: the context (its handle), the metric and its layout (the frame
/// size, and whatever else selects which kernels write which planes), and the arena's size
/// in bytes. Engines share an arena only when all of it is equal, so that what one never
/// writes (zeroed borders) no other writes either.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Key {
    pub context: usize,
    pub metric: &'static str,
    pub layout: [u64; 3],
    pub bytes: usize,
}

/// One arena: its memory, the event recorded after the last work queued in it, and whether
/// an engine is queuing work in it now.
struct Arena {
    memory: CudaSlice<u8>,
    done: CudaEvent,
    lent: bool,
}

/// The arenas of one key, shared by the engines that hold it ([`Share`]); one more is
/// made as each engine joins, up to [`ARENAS`].
pub(crate) struct Scratch {
    key: Key,
    arenas: Mutex<Vec<Arena>>,
    /// Signalled when an arena is given back.
    returned: Condvar,
    /// Where the next search for an arena starts (it turns, so that engines take turns).
    next: AtomicUsize,
}

/// Every scratch in use; an entry goes when its last engine does.
static SHARED: Mutex<Vec<Weak<Scratch>>> = Mutex::new(Vec::new());

/// An engine's hold on the [`Scratch`] of a key.
pub(crate) struct Share {
    scratch: Arc<Scratch>,
}

/// How a new arena is prepared: `init(base, stream)` queues what it must hold before its
/// first pair, on top of zeroes (the stream is synchronised after it).
pub(crate) type Init<'a> = &'a dyn Fn(u64, &Arc<CudaStream>) -> Result<(), DriverError>;

impl Share {
    /// The scratch of `key` for an engine on `gpu` (made if no engine holds one), with one
    /// more arena for this engine while there are fewer than [`ARENAS`].
    pub(crate) fn join(gpu: &Gpu, key: Key, init: Init) -> Result<Share, DriverError> {
        let scratch = {
            let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
            shared.retain(|w| w.strong_count() > 0);
            let found = shared
                .iter()
                .filter_map(Weak::upgrade)
                .find(|s| s.key == key);
            match found {
                Some(s) => s,
                None => {
                    let s = Arc::new(Scratch {
                        key,
                        arenas: Mutex::new(Vec::new()),
                        returned: Condvar::new(),
                        next: AtomicUsize::new(0),
                    });
                    shared.push(Arc::downgrade(&s));
                    s
                }
            }
        };
        {
            let mut arenas = scratch.arenas.lock().unwrap_or_else(|e| e.into_inner());
            if arenas.len() < ARENAS {
                let memory = zeroed::<u8>(&gpu.stream, key.bytes)?;
                init(memory.ptr(), &gpu.stream)?;
                gpu.stream.synchronize()?;
                arenas.push(Arena {
                    memory,
                    done: gpu.ctx.new_event(None)?,
                    lent: false,
                });
            }
        }
        Ok(Share { scratch })
    }

    /// Lends an arena for work about to be queued on `stream`: one that no engine is
    /// queuing in, its last work done if there is one such, which `stream` then waits for.
    /// Dropping the [`Lease`] (or [`Lease::end`]) records the arena's event after the
    /// work queued meanwhile and gives the arena back.
    pub(crate) fn borrow<'a>(&'a self, stream: &'a CudaStream) -> Result<Lease<'a>, DriverError> {
        let s = &*self.scratch;
        let mut arenas = s.arenas.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let n = arenas.len();
            let first = s.next.fetch_add(1, Ordering::Relaxed);
            let free = (0..n).map(|i| (first + i) % n).filter(|&i| !arenas[i].lent);
            let idle = |&i: &usize| matches!(arenas[i].done.try_is_complete(), Ok(true));
            let pick = free.clone().find(idle).or_else(|| free.clone().next());
            if let Some(i) = pick {
                let arena = &mut arenas[i];
                stream.wait(&arena.done)?;
                arena.lent = true;
                return Ok(Lease {
                    scratch: s,
                    index: i,
                    base: arena.memory.ptr(),
                    stream,
                    ended: false,
                });
            }
            arenas = s.returned.wait(arenas).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// An arena lent to one engine while it queues a pair's work in it.
pub(crate) struct Lease<'a> {
    scratch: &'a Scratch,
    index: usize,
    base: u64,
    stream: &'a CudaStream,
    ended: bool,
}

impl Lease<'_> {
    /// The arena's device address (its length is the key's `bytes`).
    pub(crate) fn base(&self) -> u64 {
        self.base
    }

    /// Records the arena's event after the work queued on the stream and gives it back.
    pub(crate) fn end(mut self) -> Result<(), DriverError> {
        self.give_back()
    }

    fn give_back(&mut self) -> Result<(), DriverError> {
        self.ended = true;
        let s = self.scratch;
        let mut arenas = s.arenas.lock().unwrap_or_else(|e| e.into_inner());
        let arena = &mut arenas[self.index];
        let recorded = arena.done.record(self.stream);
        if recorded.is_err() {
            // The next borrower must not start before this work is done, which an event
            // that failed to record no longer says: wait for it here instead.
            let _ = self.stream.synchronize();
        }
        arena.lent = false;
        s.returned.notify_one();
        recorded
    }
}

impl Drop for Lease<'_> {
    /// A lease left without [`Lease::end`] (an error while queuing) is given back too.
    fn drop(&mut self) {
        if !self.ended {
            let _ = self.give_back();
        }
    }
}

impl Drop for Scratch {
    /// The last engine has gone; work queued in the arenas by engines dropped with pairs
    /// queued may still run on their streams, so the memory is freed once it is done.
    fn drop(&mut self) {
        let arenas = self.arenas.get_mut().unwrap_or_else(|e| e.into_inner());
        for a in arenas.iter() {
            let _ = a.done.synchronize();
        }
    }
}
