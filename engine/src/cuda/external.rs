//! CUDA contexts owned by someone else (e.g. GStreamer's `GstCudaContext`, whose memory the
//! engine reads in place): the engine runs its kernels in them but never destroys them.

use std::any::Any;
use std::sync::{Arc, Mutex};

use cudarc::driver::{CudaContext, sys};

use crate::error::EngineError;

/// A raw `CUcontext` lent to the engine, with whatever keeps it alive.
pub struct ExternalContext {
    handle: usize,
    device_id: u32,
    keep_alive: Box<dyn Any + Send>,
}

impl ExternalContext {
    /// `handle` is a `CUcontext` on CUDA device `device_id`; `keep_alive` (e.g. a reference
    /// to the object owning the context) is dropped after the engine's last CUDA call.
    ///
    /// # Safety
    /// `handle` must stay a valid context of that device as long as `keep_alive` lives.
    pub unsafe fn new(handle: usize, device_id: u32, keep_alive: Box<dyn Any + Send>) -> Self {
        ExternalContext {
            handle,
            device_id,
            keep_alive,
        }
    }

    pub fn handle(&self) -> usize {
        self.handle
    }

    pub fn device_id(&self) -> u32 {
        self.device_id
    }
}

impl std::fmt::Debug for ExternalContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalContext")
            .field("handle", &format_args!("{:#x}", self.handle))
            .field("device_id", &self.device_id)
            .finish()
    }
}

/// cudarc wrappers of external contexts. cudarc destroys a wrapped context when its last
/// `Arc` goes, so one `Arc` per (handle, device) stays here for good: a few hundred bytes
/// per context ever seen, and never a `cuCtxDestroy` on a context we do not own.
static WRAPPED: Mutex<Vec<Arc<CudaContext>>> = Mutex::new(Vec::new());

/// The cudarc view of `ext` (checks that the context belongs to its device).
pub(crate) fn wrap(ext: &ExternalContext) -> Result<Arc<CudaContext>, EngineError> {
    // SAFETY: only tries to load the driver library.
    if !unsafe { sys::is_culib_present() } {
        return Err(EngineError::CudaUnavailable(
            "the CUDA driver library (libcuda.so) was not found".into(),
        ));
    }
    let raw = ext.handle as sys::CUcontext;
    let open = || -> Result<Arc<CudaContext>, String> {
        let mut wrapped = WRAPPED.lock().unwrap_or_else(|e| e.into_inner());
        let device = cudarc::driver::result::device::get(ext.device_id as i32)
            .map_err(|e| format!("CUDA device {}: {e}", ext.device_id))?;
        // SAFETY: the caller of ExternalContext::new vouched for the handle.
        let actual = unsafe {
            cudarc::driver::result::ctx::set_current(raw)
                .map_err(|e| format!("the upstream CUDA context is unusable: {e}"))?;
            let mut d: sys::CUdevice = 0;
            sys::cuCtxGetDevice(&mut d)
                .result()
                .map_err(|e| format!("cannot query the upstream CUDA context: {e}"))?;
            d
        };
        if actual != device {
            return Err(format!(
                "the upstream CUDA context belongs to device {actual}, not {}",
                ext.device_id
            ));
        }
        if let Some(c) = wrapped
            .iter()
            .find(|c| c.cu_ctx() == raw && c.cu_device() == device)
        {
            return Ok(c.clone());
        }
        // SAFETY: valid context of `device` (checked above); the Arc kept in WRAPPED
        // means cudarc never destroys it.
        let ctx = unsafe { CudaContext::from_raw_context(ext.device_id as usize, device, raw) }
            .map(super::untracked)
            .map_err(|e| format!("cannot use the upstream CUDA context: {e}"))?;
        wrapped.push(ctx.clone());
        Ok(ctx)
    };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(open))
        .unwrap_or_else(|_| Err("the CUDA driver is unusable (missing symbols?)".into()))
        .map_err(EngineError::CudaUnavailable)
}

/// Held by a backend running in an external context: forgets the module loaded there once
/// no engine uses it (the context may be destroyed after us, and its handle reused), then
/// drops the owner's keep-alive. Must be the backend's last field.
pub(crate) struct ExternalGuard {
    ctx: Arc<CudaContext>,
    _keep_alive: Box<dyn Any + Send>,
}

impl ExternalGuard {
    pub(crate) fn new(ctx: Arc<CudaContext>, ext: ExternalContext) -> Self {
        ExternalGuard {
            ctx,
            _keep_alive: ext.keep_alive,
        }
    }
}

impl Drop for ExternalGuard {
    fn drop(&mut self) {
        super::module::release_unused(&self.ctx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BackendChoice, Engine, EngineConfig, FrameLayout, PixelFormat};

    #[test]
    fn without_a_driver_an_external_context_falls_back_cleanly() {
        // SAFETY: only probes for the driver library.
        if unsafe { sys::is_culib_present() } {
            return; // a CUDA machine: the GPU runs cover external contexts
        }
        let layout = FrameLayout {
            format: PixelFormat::I420,
            width: 16,
            height: 16,
        };
        let owner = Arc::new(());
        let ext = || {
            // SAFETY: never used as a context: there is no driver.
            unsafe { ExternalContext::new(0x1234, 0, Box::new(owner.clone())) }
        };
        let cfg = |backend| EngineConfig {
            backend,
            ..Default::default()
        };
        let e = Engine::new_on_context(&cfg(BackendChoice::Auto), ext(), layout, layout).unwrap();
        assert_eq!(e.backend_name(), "cpu");
        assert!(e.backend_note().unwrap().contains("libcuda"));
        let err =
            Engine::new_on_context(&cfg(BackendChoice::Cuda), ext(), layout, layout).unwrap_err();
        assert!(matches!(err, EngineError::CudaUnavailable(_)), "{err}");
        let e = Engine::new_on_context(&cfg(BackendChoice::Cpu), ext(), layout, layout).unwrap();
        assert_eq!(e.backend_name(), "cpu");
        drop(e);
        // Every keep-alive was released.
        assert_eq!(Arc::strong_count(&owner), 1);
    }
}
