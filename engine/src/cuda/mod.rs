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

mod buffer;
mod external;
mod module;
mod ptr;

pub(crate) use buffer::{DeviceBuffer, Gpu, IN_FLIGHT, PinnedBuffer, Readback, ResultSlots};

pub use external::ExternalContext;
pub(crate) use external::{ExternalGuard, wrap as wrap_external};

pub use module::{kernels, unload};
pub use ptr::{DevPtr, DevPtrMut};

mod generated {
    include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
}

pub use generated::{KERNELS, Kernels, PTX};

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction, CudaStream, DriverError, LaunchConfig, sys};

/// A kernel as declared in the kernel crate (generated table [`KERNELS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelInfo {
    /// Entry-point name.
    pub name: &'static str,
    /// Parameters in order.
    pub params: &'static [ParamInfo],
}

/// One kernel parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamInfo {
    /// Name in the kernel signature.
    pub name: &'static str,
    /// Type as written in the kernel signature.
    pub ty: &'static str,
    /// Size of the `.param` in the PTX.
    pub ptx_bytes: usize,
}

/// Launches `f` (of a module loaded in `ctx`) on `stream`; used by the generated launchers.
///
/// # Safety
/// `params` holds one pointer per kernel parameter, each to a value of the parameter's
/// type, and the kernel's memory accesses are valid (see the generated methods).
unsafe fn launch(
    ctx: &Arc<CudaContext>,
    f: &CudaFunction,
    stream: &CudaStream,
    cfg: LaunchConfig,
    params: &mut [*mut c_void],
) -> Result<(), DriverError> {
    if ctx.cu_ctx() != stream.context().cu_ctx() {
        return Err(DriverError(sys::CUresult::CUDA_ERROR_INVALID_CONTEXT));
    }
    ctx.bind_to_thread()?;
    // SAFETY: the function belongs to `ctx`, which is current; the rest is the caller's.
    unsafe {
        cudarc::driver::result::launch_kernel(
            f.cu_function(),
            cfg.grid_dim,
            cfg.block_dim,
            cfg.shared_mem_bytes,
            stream.cu_stream(),
            params,
        )
    }
}
