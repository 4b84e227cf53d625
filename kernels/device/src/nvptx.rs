//! The device-only half of the API (compiled for `nvptx64` only).

use core::arch::asm;
use core::arch::nvptx;

macro_rules! special_registers {
    ($($(#[$doc:meta])* $name:ident => $intrinsic:ident;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name() -> u32 {
            // SAFETY: reading a special register has no precondition.
            unsafe { nvptx::$intrinsic() }
        }
    )*};
}

special_registers! {
    /// `threadIdx.x`
    thread_idx_x => _thread_idx_x;
    /// `threadIdx.y`
    thread_idx_y => _thread_idx_y;
    /// `threadIdx.z`
    thread_idx_z => _thread_idx_z;
    /// `blockIdx.x`
    block_idx_x => _block_idx_x;
    /// `blockIdx.y`
    block_idx_y => _block_idx_y;
    /// `blockIdx.z`
    block_idx_z => _block_idx_z;
    /// `blockDim.x`
    block_dim_x => _block_dim_x;
    /// `blockDim.y`
    block_dim_y => _block_dim_y;
    /// `blockDim.z`
    block_dim_z => _block_dim_z;
    /// `gridDim.x`
    grid_dim_x => _grid_dim_x;
    /// `gridDim.y`
    grid_dim_y => _grid_dim_y;
    /// `gridDim.z`
    grid_dim_z => _grid_dim_z;
}

/// `blockIdx.x * blockDim.x + threadIdx.x`, computed in `u32`.
#[inline(always)]
pub fn global_idx_x() -> u32 {
    block_idx_x() * block_dim_x() + thread_idx_x()
}

/// `blockIdx.y * blockDim.y + threadIdx.y`, computed in `u32`.
#[inline(always)]
pub fn global_idx_y() -> u32 {
    block_idx_y() * block_dim_y() + thread_idx_y()
}

/// The lane of this thread in its warp (`%laneid`, 0..32).
#[inline(always)]
pub fn lane_id() -> u32 {
    let r: u32;
    // SAFETY: reads a special register.
    unsafe { asm!("mov.u32 {r}, %laneid;", r = out(reg32) r, options(pure, nomem, nostack)) };
    r
}

/// Asks for the cache line holding `*ptr` in the L2 cache (`prefetch.L2`, generic
/// addressing): a later load of it then waits on the L2, not on device memory. Changes no
/// value; for loads known well before they are made.
///
/// # Safety
/// `ptr` must point into memory the kernel may read.
#[inline(always)]
pub unsafe fn prefetch_l2<T>(ptr: *const T) {
    // SAFETY: forwarded to the caller; a prefetch reads nothing into registers.
    unsafe { asm!("prefetch.L2 [{p}];", p = in(reg64) ptr, options(nostack, readonly)) };
}

/// Block-wide barrier (`__syncthreads`, `bar.sync 0`); also orders shared-memory accesses.
///
/// # Safety
/// Every thread of the block must reach the same call: a barrier in divergent code hangs
/// or is undefined behaviour.
#[inline(always)]
pub unsafe fn sync_threads() {
    // SAFETY: forwarded to the caller.
    unsafe { nvptx::_syncthreads() }
}

/// Warp-wide barrier (`__syncwarp`, `bar.warp.sync`): orders the shared-memory accesses of
/// the lanes of one warp, which since Volta need not run in lockstep.
///
/// # Safety
/// Every lane of the warp must reach the same call.
#[inline(always)]
pub unsafe fn sync_warp() {
    // SAFETY: forwarded to the caller.
    unsafe { asm!("bar.warp.sync 0xffffffff;", options(nostack)) };
}

/// Mask of all 32 lanes, for the shuffle functions.
pub const FULL_MASK: u32 = 0xffff_ffff;

macro_rules! shuffles {
    ($($(#[$doc:meta])* $name:ident, $mode:literal, $clamp:literal;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// Every lane named in `mask` must execute the same shuffle with the same mask
        /// (`shfl.sync` semantics), and the calling lane must be in `mask`.
        #[inline(always)]
        pub unsafe fn $name<T: Shuffle>(mask: u32, value: T, lane: u32) -> T {
            T::from_words(value.to_words().map(|w| {
                let r: u32;
                // SAFETY: forwarded to the caller.
                unsafe {
                    asm!(concat!("shfl.sync.", $mode, ".b32 {r}, {v}, {l}, ", $clamp, ", {m};"),
                         r = out(reg32) r, v = in(reg32) w, l = in(reg32) lane, m = in(reg32) mask,
                         options(nomem, nostack))
                };
                r
            }))
        }
    )*};
}

shuffles! {
    /// `__shfl_down_sync`: the value of lane `lane_id() + delta` (own value past the end).
    shfl_down, "down", "0x1f";
    /// `__shfl_xor_sync`: the value of lane `lane_id() ^ lane_mask`.
    shfl_xor, "bfly", "0x1f";
    /// `__shfl_up_sync`: the value of lane `lane_id() − delta` (own value below lane
    /// `delta`).
    shfl_up, "up", "0x0";
    /// `__shfl_sync`: the value of lane `lane`.
    shfl_idx, "idx", "0x1f";
}

/// A value that warp shuffles can move: `u32`, `i32`, `f32` (one 32-bit shuffle) or
/// `u64`, `i64`, `f64` (two).
pub trait Shuffle: Copy + sealed::Sealed {
    /// The 32-bit words of the value.
    type Words: WordArray;
    /// Splits into words.
    fn to_words(self) -> Self::Words;
    /// Joins words.
    fn from_words(w: Self::Words) -> Self;
}

/// `[u32; 1]` or `[u32; 2]`.
pub trait WordArray: sealed::Sealed {
    /// Applies `f` to every word.
    fn map(self, f: impl FnMut(u32) -> u32) -> Self;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for [u32; 1] {}
    impl Sealed for [u32; 2] {}
    impl Sealed for u32 {}
    impl Sealed for i32 {}
    impl Sealed for f32 {}
    impl Sealed for u64 {}
    impl Sealed for i64 {}
    impl Sealed for f64 {}
}

impl<const N: usize> WordArray for [u32; N]
where
    [u32; N]: sealed::Sealed,
{
    #[inline(always)]
    fn map(self, f: impl FnMut(u32) -> u32) -> Self {
        <[u32; N]>::map(self, f)
    }
}

macro_rules! shuffle32 {
    ($($t:ty),*) => {$(
        impl Shuffle for $t {
            type Words = [u32; 1];
            #[inline(always)]
            fn to_words(self) -> [u32; 1] { [self.to_bits_u32()] }
            #[inline(always)]
            fn from_words(w: [u32; 1]) -> Self { <$t>::from_bits_u32(w[0]) }
        }
    )*};
}
macro_rules! shuffle64 {
    ($($t:ty),*) => {$(
        impl Shuffle for $t {
            type Words = [u32; 2];
            #[inline(always)]
            fn to_words(self) -> [u32; 2] { let b = self.to_bits_u64(); [b as u32, (b >> 32) as u32] }
            #[inline(always)]
            fn from_words(w: [u32; 2]) -> Self { <$t>::from_bits_u64(w[0] as u64 | (w[1] as u64) << 32) }
        }
    )*};
}
shuffle32!(u32, i32, f32);
shuffle64!(u64, i64, f64);

trait Bits32 {
    fn to_bits_u32(self) -> u32;
    fn from_bits_u32(b: u32) -> Self;
}
trait Bits64 {
    fn to_bits_u64(self) -> u64;
    fn from_bits_u64(b: u64) -> Self;
}
impl Bits32 for u32 {
    fn to_bits_u32(self) -> u32 {
        self
    }
    fn from_bits_u32(b: u32) -> Self {
        b
    }
}
impl Bits32 for i32 {
    fn to_bits_u32(self) -> u32 {
        self as u32
    }
    fn from_bits_u32(b: u32) -> Self {
        b as i32
    }
}
impl Bits32 for f32 {
    fn to_bits_u32(self) -> u32 {
        self.to_bits()
    }
    fn from_bits_u32(b: u32) -> Self {
        f32::from_bits(b)
    }
}
impl Bits64 for u64 {
    fn to_bits_u64(self) -> u64 {
        self
    }
    fn from_bits_u64(b: u64) -> Self {
        b
    }
}
impl Bits64 for i64 {
    fn to_bits_u64(self) -> u64 {
        self as u64
    }
    fn from_bits_u64(b: u64) -> Self {
        b as i64
    }
}
impl Bits64 for f64 {
    fn to_bits_u64(self) -> u64 {
        self.to_bits()
    }
    fn from_bits_u64(b: u64) -> Self {
        f64::from_bits(b)
    }
}

macro_rules! atomic_add {
    ($($(#[$doc:meta])* $name:ident: $t:ty, $ptx:literal, $class:ident;)*) => {$(
        $(#[$doc])*
        ///
        /// Generic addressing, so `ptr` may point to global or shared memory; device scope,
        /// relaxed ordering (like CUDA's `atomicAdd`). Returns the previous value.
        ///
        /// # Safety
        /// `ptr` must be valid and aligned for reads and writes of the type, and every
        /// concurrent access to `*ptr` must be atomic.
        #[inline(always)]
        pub unsafe fn $name(ptr: *mut $t, value: $t) -> $t {
            let old: $t;
            // SAFETY: forwarded to the caller.
            unsafe {
                asm!(concat!("atom.add.", $ptx, " {o}, [{p}], {v};"), o = out($class) old,
                     p = in(reg64) ptr, v = in($class) value, options(nostack))
            };
            old
        }
    )*};
}

atomic_add! {
    /// Atomic `*ptr += value` on `u32` (`atom.add.u32`).
    atomic_add_u32: u32, "u32", reg32;
    /// Atomic `*ptr += value` on `u64` (`atom.add.u64`).
    atomic_add_u64: u64, "u64", reg64;
    /// Atomic `*ptr += value` on `f32` (`atom.add.f32`).
    atomic_add_f32: f32, "f32", reg32;
    /// Atomic `*ptr += value` on `f64` (`atom.add.f64`, sm_60+).
    atomic_add_f64: f64, "f64", reg64;
}

/// Handle to a block-shared array of `N` elements, made by [`shared!`](crate::shared).
///
/// Accesses are bounds-checked (an out-of-range index traps). They stay `unsafe` because
/// the other threads of the block use the same memory: the caller orders conflicting
/// accesses with [`sync_threads`] (or atomics).
#[derive(Clone, Copy)]
pub struct SharedArray<T: Copy, const N: usize> {
    ptr: *mut T,
}

impl<T: Copy, const N: usize> SharedArray<T, N> {
    /// Wraps a pointer to shared memory.
    ///
    /// # Safety
    /// `ptr` must point to `N` elements of block-shared memory, aligned for `T`.
    #[inline(always)]
    pub const unsafe fn from_raw(ptr: *mut T) -> Self {
        Self { ptr }
    }

    /// Number of elements.
    #[inline(always)]
    pub const fn len(&self) -> usize {
        N
    }

    /// Always `false` for a non-empty array.
    #[inline(always)]
    pub const fn is_empty(&self) -> bool {
        N == 0
    }

    /// The raw (generic address space) pointer to element 0.
    #[inline(always)]
    pub const fn as_mut_ptr(&self) -> *mut T {
        self.ptr
    }

    /// Reads element `i`.
    ///
    /// # Safety
    /// No other thread may write element `i` concurrently (separate with [`sync_threads`]).
    /// The memory is uninitialised at kernel start: read only what this block wrote.
    #[inline(always)]
    pub unsafe fn read(&self, i: usize) -> T {
        if i >= N {
            trap();
        }
        // SAFETY: in bounds; races excluded by the caller.
        unsafe { self.ptr.add(i).read() }
    }

    /// Reads element `i` without [`SharedArray::read`]'s bounds check (a compare and a
    /// branch per read): for inner loops whose indices are in bounds by construction.
    ///
    /// # Safety
    /// `i < N`, and as [`SharedArray::read`].
    #[inline(always)]
    pub unsafe fn read_unchecked(&self, i: usize) -> T {
        // SAFETY: in bounds by the caller's contract; races excluded by the caller.
        unsafe { self.ptr.add(i).read() }
    }

    /// Writes element `i`.
    ///
    /// # Safety
    /// No other thread may access element `i` concurrently (separate with [`sync_threads`]).
    #[inline(always)]
    pub unsafe fn write(&self, i: usize, value: T) {
        if i >= N {
            trap();
        }
        // SAFETY: in bounds; races excluded by the caller.
        unsafe { self.ptr.add(i).write(value) }
    }
}

/// Pointer to the block's dynamic shared memory, whose size in bytes is the launch's
/// `shared_mem_bytes` (CUDA's `extern __shared__ T buf[]`). All calls return the same
/// address; it is aligned for `T`. Dereferencing it is up to the caller: stay within the
/// launch size and order accesses with [`sync_threads`].
#[inline(always)]
pub fn dynamic_shared<T>() -> *mut T {
    core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<T>()
}

/// Traps (aborts the kernel with `cudaErrorIllegalInstruction`/`LaunchFailed` on the host).
#[inline(always)]
pub fn trap() -> ! {
    // SAFETY: `trap` has no precondition; it ends the kernel.
    unsafe { nvptx::trap() }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    trap()
}
