//! Loading the embedded PTX once per CUDA context.

use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaContext, DriverError};

use super::generated::{Kernels, PTX};

/// Loaded modules, by context handle. An entry keeps its context alive (the module holds
/// it), which suits the primary contexts the engine uses; [`unload`] drops one.
static LOADED: Mutex<Vec<(usize, Arc<Kernels>)>> = Mutex::new(Vec::new());

/// The kernels loaded in `ctx`: the first call for a context loads the PTX (the newest
/// embedded variant that the device supports; the driver JIT-compiles it) and looks every
/// kernel up; later calls return the same `Arc`.
pub fn kernels(ctx: &Arc<CudaContext>) -> Result<Arc<Kernels>, DriverError> {
    let key = ctx.cu_ctx() as usize;
    let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, k)) = loaded.iter().find(|(c, _)| *c == key) {
        return Ok(k.clone());
    }
    let module = gpumetrics_launch::load_module(ctx, PTX)?;
    let k = Arc::new(Kernels::from_module(ctx, &module)?);
    loaded.push((key, k.clone()));
    Ok(k)
}

/// Forgets the module loaded in `ctx` (it is unloaded once the last `Arc<Kernels>` goes).
/// Returns whether one was loaded.
pub fn unload(ctx: &CudaContext) -> bool {
    let key = ctx.cu_ctx() as usize;
    let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    let before = loaded.len();
    loaded.retain(|(c, _)| *c != key);
    loaded.len() != before
}

/// Forgets the module loaded in `ctx` when nothing but this cache holds it (an engine in an
/// external context calls this as it goes, after dropping its own `Arc<Kernels>`).
pub(crate) fn release_unused(ctx: &CudaContext) {
    let key = ctx.cu_ctx() as usize;
    let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
    loaded.retain(|(c, k)| *c != key || Arc::strong_count(k) > 1);
}
