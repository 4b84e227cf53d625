//! Small device API for gpumetrics kernels written in Rust and compiled to PTX.
//!
//! The crate builds for two targets:
//!
//! * `nvptx64-nvidia-cuda` (nightly, `-Zbuild-std=core`, driven by `gpumetrics-build`): the
//!   full API, implemented with `core::arch::nvptx` intrinsics and PTX inline assembly, so no
//!   libdevice or CUDA toolkit is needed;
//! * the host (stable rustc): only what per-pixel code shared with the CPU backend needs,
//!   i.e. the [`math`] functions (backed by `std`) and the macros, which expand to nothing
//!   there. Thread indices, barriers, shuffles, atomics and shared memory exist only on the
//!   device, so misusing them in host code is a compile error rather than a silent no-op.
//!
//! Kernels are declared with [`kernel!`]; static shared memory with [`shared!`]; dynamic
//! shared memory (sized at launch) with `dynamic_shared` (device only).
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(
        asm_experimental_arch,
        stdarch_nvptx,
        core_intrinsics,
        gpu_intrinsics,
        gpu_launch_sized_workgroup_mem
    )
)]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]
#![deny(unsafe_op_in_unsafe_fn, missing_docs)]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

pub mod hint;
pub mod math;

#[cfg(target_arch = "nvptx64")]
mod nvptx;
#[cfg(target_arch = "nvptx64")]
pub use nvptx::*;

/// Declares one or more GPU kernels.
///
/// ```ignore
/// gpumetrics_device::kernel! {
///     /// y = a * x + y
///     pub unsafe fn saxpy(n: u32, a: f32, x: *const f32, y: *mut f32) => saxpy_body;
/// }
///
/// #[cfg(target_arch = "nvptx64")]
/// #[inline(always)]
/// unsafe fn saxpy_body(n: u32, a: f32, x: *const f32, y: *mut f32) {
///     let i = gpumetrics_device::global_idx_x();
///     // ...
/// }
/// ```
///
/// Each declaration is the kernel's signature followed by `=> body;`, the ordinary
/// (device-only, `#[inline(always)]`) function that does the work: rustfmt and the reader see
/// plain Rust, and the declaration stays the one list of kernels that `gpumetrics-build`
/// reads. On `nvptx64` every declaration becomes an exported `extern "ptx-kernel"` entry
/// point (the crate must enable `#![feature(abi_ptx)]` for that target) that passes its
/// parameters, in order, to the body: a body whose parameters differ in number or type from
/// the declaration does not compile. On the host the kernels expand to nothing: the host
/// only launches them, through the typed launchers that `gpumetrics-build` generates from
/// these very declarations. Hence the restricted syntax: `unsafe fn`s whose parameters are
/// `name: Type` with `Type` a primitive scalar, a raw pointer, or a `#[repr(C)] Copy` struct
/// named by a `crate::...` path (or a name defined or imported in the same module).
///
/// A declaration may end `=> body, max_registers = N;` instead: `gpumetrics-build` gives the
/// entry ptxas's `.maxnreg N` (CUDA's `__maxnreg__`), for a kernel whose registers, not its
/// work, keep blocks off the SMs. Check with `ptxas -v` that the cap spills nothing.
///
/// The older form with the body inside the macro (`pub unsafe fn k(..) { .. }`) still works
/// and may be mixed with the new one, but rustfmt does not format code inside macros.
#[macro_export]
macro_rules! kernel {
    () => {};
    (
        $(#[$attr:meta])*
        $vis:vis unsafe fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) => $body:path,
            max_registers = $n:literal;
        $($rest:tt)*
    ) => {
        // ptxas takes 16 ..= 255 registers a thread.
        const _: () = assert!($n >= 16 && $n <= 255, "max_registers: 16 ..= 255");
        $crate::kernel! {
            $(#[$attr])*
            $vis unsafe fn $name($($arg: $ty),*) => $body;
            $($rest)*
        }
    };
    (
        $(#[$attr:meta])*
        $vis:vis unsafe fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) => $body:path;
        $($rest:tt)*
    ) => {
        #[cfg(target_arch = "nvptx64")]
        $(#[$attr])*
        #[unsafe(no_mangle)]
        $vis unsafe extern "ptx-kernel" fn $name($($arg: $ty),*) {
            // SAFETY: the kernel's contract is its body's, stated on the declaration.
            unsafe { $body($($arg),*) }
        }
        $crate::kernel! { $($rest)* }
    };
    (
        $(#[$attr:meta])*
        $vis:vis unsafe fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) $body:block
        $($rest:tt)*
    ) => {
        #[cfg(target_arch = "nvptx64")]
        $(#[$attr])*
        #[unsafe(no_mangle)]
        $vis unsafe extern "ptx-kernel" fn $name($($arg: $ty),*) $body
        $crate::kernel! { $($rest)* }
    };
}

/// Declares a statically sized block-shared array and binds a `SharedArray` handle to it.
///
/// ```ignore
/// gpumetrics_device::shared!(static TILE: [f32; 256]);
/// unsafe { TILE.write(thread_idx_x() as usize, 1.0) };
/// ```
///
/// Use it inside a kernel body. The element type must be a primitive number and the length
/// an integer literal or a `const` of the kernel crate (possibly `*`/`+` of those): the
/// builder reads these declarations from the sources and generates the matching
/// `addrspace(3)` definition (symbol `gpumetrics_shared_<NAME>`) that rustc cannot express.
/// Declarations with the same name denote the same memory and must have the same size.
/// Device only: there is no block-shared memory on the host.
#[macro_export]
macro_rules! shared {
    (static $name:ident : [$t:ty ; $n:expr] $(;)?) => {
        #[allow(non_snake_case)]
        let $name: $crate::SharedArray<$t, { $n }> = {
            unsafe extern "C" {
                #[link_name = concat!("gpumetrics_shared_", stringify!($name))]
                #[allow(non_upper_case_globals)]
                static mut $name: [$t; $n];
            }
            // SAFETY: the builder defines the symbol in shared memory with at least this size.
            unsafe { $crate::SharedArray::from_raw((&raw mut $name).cast::<$t>()) }
        };
    };
}
