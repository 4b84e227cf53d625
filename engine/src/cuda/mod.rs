//! The GPU kernels of `gpumetrics-kernels`, compiled to PTX at build time by
//! `gpumetrics-build` (see `engine/build.rs` and docs/KERNELS.md), embedded in the library,
//! loaded once per CUDA context and launched through typed methods.
//!
//! ```ignore
//! let k = gpumetrics_engine::cuda::kernels(&ctx)?;            // Arc<Kernels>, cached
//! let sums = DevPtrMut::<u64>::from_raw(sums_ptr);          // 2 × MAX_CHANNELS slots
//! let (add_to, clear) = (sums, sums.wrapping_add(MAX_CHANNELS));
//! unsafe { k.psnr_sse(&stream, cfg, planes, add_to, clear)? }; // typed like the kernel
//! ```
//!
//! Nothing here loads the CUDA library: cudarc does that (dynamically) when the caller first
//! creates a context, so the crate also runs on machines without CUDA.

mod branch;
mod buffer;
mod external;
pub(crate) mod linear_light;
mod module;
pub(crate) mod scratch;

pub(crate) use branch::Branch;
pub(crate) use buffer::{AddSlots, DeviceMemory, Gpu, IN_FLIGHT, Readback, untracked, zeroed};

pub use external::ExternalContext;
pub(crate) use external::{ExternalGuard, wrap as wrap_external};

pub use module::{kernels, unload};
// The runtime of the generated launchers lives in its own crate, so that other host crates
// can use gpumetrics-build for their own kernels; re-exported here for the engine's users.
pub use gpumetrics_launch::{DevPtr, DevPtrMut, KernelInfo, ParamInfo};

mod generated;

pub use generated::{KERNELS, Kernels, PTX};
