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
//! shared memory (sized at launch) with [`dynamic_shared`].
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
///     pub unsafe fn saxpy(n: u32, a: f32, x: *const f32, y: *mut f32) {
///         let i = gpumetrics_device::global_idx_x();
///         // ...
///     }
/// }
/// ```
///
/// On `nvptx64` every function becomes an exported `extern "ptx-kernel"` entry point (the
/// crate must enable `#![feature(abi_ptx)]` for that target). On the host the kernels expand
/// to nothing: the host only launches them, through the typed launchers that
/// `gpumetrics-build` generates from these very declarations. Hence the restricted syntax: a
/// list of `unsafe fn`s whose parameters are `name: Type` with `Type` a primitive scalar, a
/// raw pointer, or a `#[repr(C)] Copy` struct named by a `crate::...` path (or a bare name
/// defined in the same module).
#[macro_export]
macro_rules! kernel {
    ($(
        $(#[$attr:meta])*
        $vis:vis unsafe fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) $body:block
    )*) => {
        $(
            #[cfg(target_arch = "nvptx64")]
            $(#[$attr])*
            #[unsafe(no_mangle)]
            $vis unsafe extern "ptx-kernel" fn $name($($arg: $ty),*) $body
        )*
    };
}

/// Declares a statically sized block-shared array and binds a [`SharedArray`] handle to it.
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
