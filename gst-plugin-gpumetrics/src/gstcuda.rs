// SPDX-License-Identifier: MPL-2.0
//! Run-time binding of GStreamer's CUDA library (`libgstcuda-1.0`, GStreamer >= 1.22), which
//! has no Rust bindings: the few calls that share a `GstCudaContext` with the neighbours
//! (`gst.cuda.context`) and read `memory:CUDAMemory` buffers in place.
//!
//! The library is opened with `dlopen` on first use, not linked, so the plugin loads and runs
//! (CPU backend, system memory) where it or the CUDA driver is missing; [`api`] then says why.
//! `GPUMETRICS_GSTCUDA_LIBRARY` names another file to open (tests use it to simulate absence).

use std::ffi::{c_int, c_uint, c_void};
use std::sync::OnceLock;

use gpumetrics_engine::PlaneOffsets;
use gst::glib::translate::{FromGlibPtrFull, ToGlibPtr};
use gst::prelude::*;

/// The library opened by default.
pub const LIBRARY: &str = "libgstcuda-1.0.so.0";
/// Environment variable naming another library file to open instead of [`LIBRARY`].
pub const LIBRARY_ENV: &str = "GPUMETRICS_GSTCUDA_LIBRARY";
/// `GST_CUDA_CONTEXT_TYPE`: the `GstContext` type that carries a `GstCudaContext`.
pub const CONTEXT_TYPE: &str = "gst.cuda.context";
/// `GST_CUDA_MEMORY_TYPE_NAME`: the memory type of `GstCudaMemory`.
pub const MEMORY_TYPE: &str = "gst.cuda.memory";
/// `GST_MAP_CUDA`: map flag that yields the device address instead of a host copy.
pub const MAP_CUDA: u32 = gst::ffi::GST_MAP_FLAG_LAST << 1;

type GBool = gst::glib::ffi::gboolean;
type RawCtx = gst::ffi::GstObject;

/// True when the buffer's first memory is CUDA memory (also without the library).
pub fn is_cuda_buffer(buffer: &gst::BufferRef) -> bool {
    buffer.n_memory() > 0 && buffer.peek_memory(0).is_type(MEMORY_TYPE)
}

/// Public head of `GstCudaMemory` (gstcudamemory.h; the same in 1.22 and later).
#[repr(C)]
struct RawCudaMemory {
    mem: gst::ffi::GstMemory,
    context: *mut RawCtx,
    info: gst_video::ffi::GstVideoInfo,
}

/// The entry points used, resolved once.
pub struct Api {
    context_new: unsafe extern "C" fn(c_uint) -> *mut RawCtx,
    get_handle: unsafe extern "C" fn(*mut RawCtx) -> *mut c_void,
    handle_set_context: unsafe extern "C" fn(
        *mut gst::ffi::GstElement,
        *mut gst::ffi::GstContext,
        c_int,
        *mut *mut RawCtx,
    ) -> GBool,
    handle_context_query: unsafe extern "C" fn(
        *mut gst::ffi::GstElement,
        *mut gst::ffi::GstQuery,
        *mut RawCtx,
    ) -> GBool,
    new_context: unsafe extern "C" fn(*mut RawCtx) -> *mut gst::ffi::GstContext,
    is_cuda_memory: unsafe extern "C" fn(*mut gst::ffi::GstMemory) -> GBool,
    buffer_pool_new: unsafe extern "C" fn(*mut RawCtx) -> *mut gst::ffi::GstBufferPool,
    /// `gst_cuda_memory_sync` (1.24+): waits for the producer's stream. 1.22 memory has no
    /// stream: its producers finish their copies before pushing.
    memory_sync: Option<unsafe extern "C" fn(*mut gst::ffi::GstMemory)>,
    _lib: libloading::Library,
}

impl Api {
    /// Opens `name` and resolves the entry points; fails (never panics) when the file is
    /// missing, lacks a symbol, or cannot load the CUDA driver.
    pub fn load(name: &str) -> Result<Api, String> {
        // SAFETY: opening a GStreamer library only registers GLib types.
        let lib = unsafe { libloading::Library::new(name) }
            .map_err(|e| format!("{name} is not available ({e})"))?;
        macro_rules! sym {
            ($name:literal) => {
                // SAFETY: the types match the declarations in the GstCuda headers.
                *unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                    .map_err(|e| format!("{name} lacks {} ({e})", $name))?
            };
        }
        let load_library: unsafe extern "C" fn() -> GBool = sym!("gst_cuda_load_library");
        let api = Api {
            context_new: sym!("gst_cuda_context_new"),
            get_handle: sym!("gst_cuda_context_get_handle"),
            handle_set_context: sym!("gst_cuda_handle_set_context"),
            handle_context_query: sym!("gst_cuda_handle_context_query"),
            new_context: sym!("gst_context_new_cuda_context"),
            is_cuda_memory: sym!("gst_is_cuda_memory"),
            buffer_pool_new: sym!("gst_cuda_buffer_pool_new"),
            // SAFETY: as above; absent before 1.24.
            memory_sync: unsafe { lib.get(b"gst_cuda_memory_sync\0") }
                .ok()
                .map(|s| *s),
            _lib: lib,
        };
        // SAFETY: no arguments; loads libcuda through GModule and reports failure.
        if unsafe { load_library() } == 0 {
            return Err(format!(
                "{name} cannot load the CUDA driver library (libcuda.so.1)"
            ));
        }
        Ok(api)
    }

    /// True when `mem` is a `GstCudaMemory`.
    pub fn is_cuda_memory(&self, mem: &gst::MemoryRef) -> bool {
        // SAFETY: only reads the memory's allocator.
        unsafe { (self.is_cuda_memory)(mem.as_ptr() as *mut _) != 0 }
    }
}

/// The process-wide binding, loaded on first use ([`LIBRARY`] or `$GPUMETRICS_GSTCUDA_LIBRARY`).
pub fn api() -> Result<&'static Api, &'static str> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(|| {
        let name = std::env::var(LIBRARY_ENV).unwrap_or_else(|_| LIBRARY.into());
        Api::load(&name)
    })
    .as_ref()
    .map_err(String::as_str)
}

/// A reference to a `GstCudaContext`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Context(gst::Object);

impl Context {
    /// A new context on CUDA device `device_id`, or `None` when it cannot be created.
    pub fn new(api: &Api, device_id: u32) -> Option<Context> {
        // SAFETY: returns a new reference or NULL.
        let raw = unsafe { (api.context_new)(device_id) };
        // SAFETY: transfer full.
        (!raw.is_null()).then(|| Context(unsafe { gst::Object::from_glib_full(raw) }))
    }

    /// The `GstCudaContext` carried by `context` (of any device), if it carries one.
    pub fn from_gst_context(
        api: &Api,
        element: &gst::Element,
        context: &gst::Context,
    ) -> Option<Context> {
        let mut raw: *mut RawCtx = std::ptr::null_mut();
        // SAFETY: valid element and context; on success `raw` holds a new reference.
        let ok = unsafe {
            (api.handle_set_context)(element.to_glib_none().0, context.as_mut_ptr(), -1, &mut raw)
        };
        // SAFETY: transfer full.
        (ok != 0 && !raw.is_null()).then(|| Context(unsafe { gst::Object::from_glib_full(raw) }))
    }

    /// The context of a `GstCudaMemory` (`None` for other memory).
    pub fn of_memory(api: &Api, mem: &gst::MemoryRef) -> Option<Context> {
        if !api.is_cuda_memory(mem) {
            return None;
        }
        // SAFETY: `mem` is a GstCudaMemory, whose public head is RawCudaMemory; the
        // context pointer is set for the memory's whole life.
        let raw = unsafe { (*(mem.as_ptr() as *const RawCudaMemory)).context };
        // SAFETY: takes a new reference.
        (!raw.is_null()).then(|| Context(unsafe { gst::glib::translate::from_glib_none(raw) }))
    }

    /// A `gst.cuda.context` GstContext carrying this context (for the have-context message).
    pub fn to_gst_context(&self, api: &Api) -> Option<gst::Context> {
        // SAFETY: valid context; returns a new GstContext or NULL.
        let raw = unsafe { (api.new_context)(self.0.to_glib_none().0) };
        // SAFETY: transfer full.
        (!raw.is_null()).then(|| unsafe { gst::Context::from_glib_full(raw) })
    }

    /// Answers a context query of type `gst.cuda.context` with this context.
    pub fn answer_query(
        &self,
        api: &Api,
        element: &gst::Element,
        query: &mut gst::QueryRef,
    ) -> bool {
        // SAFETY: valid element, query and context.
        unsafe {
            (api.handle_context_query)(
                element.to_glib_none().0,
                query.as_mut_ptr(),
                self.0.to_glib_none().0,
            ) != 0
        }
    }

    /// The `CUcontext`, valid while this reference lives.
    pub fn handle(&self, api: &Api) -> usize {
        // SAFETY: valid context.
        unsafe { (api.get_handle)(self.0.to_glib_none().0) as usize }
    }

    /// A new `GstCudaBufferPool` of this context (not configured). Its buffers are one
    /// pitched CUDA allocation with a video meta; a host write map fills the memory's staging
    /// copy, which GstCuda uploads when a consumer maps the memory for the device, so a
    /// producer on the host needs no CUDA call of its own.
    pub fn buffer_pool(&self, api: &Api) -> Option<gst::BufferPool> {
        // SAFETY: valid context; returns a new (sunk) reference or NULL.
        let raw = unsafe { (api.buffer_pool_new)(self.0.to_glib_none().0) };
        // SAFETY: transfer full.
        (!raw.is_null()).then(|| unsafe { gst::BufferPool::from_glib_full(raw) })
    }

    /// The CUDA device index (`cuda-device-id` property).
    pub fn device_id(&self) -> u32 {
        self.0.property::<u32>("cuda-device-id")
    }

    /// Gives up the reference (for `Box<dyn Any + Send>` keep-alives).
    pub fn into_object(self) -> gst::Object {
        self.0
    }
}

/// The planes of a CUDA-memory buffer, mapped for device access (`GST_MAP_CUDA`): no copy
/// to the host is made. Unmapped on drop.
pub struct DeviceMap<'a> {
    mem: &'a gst::MemoryRef,
    info: gst::ffi::GstMapInfo,
    /// Device address and size of the mapped allocation.
    pub base: u64,
    pub size: usize,
    /// Where the buffer says its planes are (unchecked: the engine checks them against
    /// `size` before a kernel reads them).
    pub planes: PlaneOffsets,
}

impl<'a> DeviceMap<'a> {
    /// Maps the single CUDA memory of `buffer`; plane offsets and pitches come from the
    /// buffer's video meta, else from the memory's own video info (the allocation pitch).
    pub fn map(
        api: &Api,
        buffer: &'a gst::BufferRef,
        info: &gst_video::VideoInfo,
    ) -> Result<DeviceMap<'a>, String> {
        Self::map_with(api, buffer, info, gst::ffi::GST_MAP_READ)
    }

    /// As [`DeviceMap::map`], for the device to write the memory: GstCuda then takes the
    /// device's copy as the newest (a later host map downloads it). The caller holds the
    /// only reference to the buffer (a writable buffer).
    pub fn map_writable(
        api: &Api,
        buffer: &'a gst::BufferRef,
        info: &gst_video::VideoInfo,
    ) -> Result<DeviceMap<'a>, String> {
        Self::map_with(api, buffer, info, gst::ffi::GST_MAP_WRITE)
    }

    fn map_with(
        api: &Api,
        buffer: &'a gst::BufferRef,
        info: &gst_video::VideoInfo,
        access: gst::ffi::GstMapFlags,
    ) -> Result<DeviceMap<'a>, String> {
        if buffer.n_memory() != 1 {
            return Err(format!(
                "CUDA buffers with {} memories are not supported",
                buffer.n_memory()
            ));
        }
        let mem = buffer.peek_memory(0);
        if !api.is_cuda_memory(mem) {
            return Err("the buffer is not CUDA memory".into());
        }
        let own = {
            // SAFETY: CUDA memory (checked above); its info is set at allocation.
            let minfo = unsafe { &(*(mem.as_ptr() as *const RawCudaMemory)).info };
            let strides = minfo.stride.map(|s| s as i64);
            PlaneOffsets::new(&minfo.offset, &strides)
        };
        let planes = crate::caps::stated_planes(buffer, info, Some(own))?;
        if let Some(sync) = api.memory_sync {
            // SAFETY: CUDA memory; waits for the producer's pending work.
            unsafe { sync(mem.as_ptr() as *mut _) };
        }
        // SAFETY: zeroed GstMapInfo is a valid out-parameter.
        let mut map: gst::ffi::GstMapInfo = unsafe { std::mem::zeroed() };
        // SAFETY: valid memory; a device map (read, or write on a writable buffer), undone
        // in Drop.
        let ok = unsafe {
            gst::ffi::gst_memory_map(mem.as_ptr() as *mut _, &mut map, access | MAP_CUDA)
        };
        if ok == 0 || map.data.is_null() {
            return Err(format!(
                "mapping the CUDA memory ({} bytes) for device access failed",
                mem.size()
            ));
        }
        Ok(DeviceMap {
            mem,
            base: map.data as u64,
            size: map.size,
            info: map,
            planes,
        })
    }
}

impl Drop for DeviceMap<'_> {
    fn drop(&mut self) {
        // SAFETY: mapped in DeviceMap::map with this info.
        unsafe { gst::ffi::gst_memory_unmap(self.mem.as_ptr() as *mut _, &mut self.info) };
    }
}

// The keep-alive handed to the engine must be Send.
const _: fn() = || {
    fn send<T: Send + 'static>() {}
    send::<gst::Object>();
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_library_is_a_clean_error() {
        let err = Api::load("libgstcuda-gpumetrics-does-not-exist.so.0")
            .err()
            .expect("a missing library must not load");
        assert!(
            err.contains("does-not-exist") && err.contains("not available"),
            "{err}"
        );
    }

    #[test]
    fn library_without_the_entry_points_is_a_clean_error() {
        // Any shared library lacking the GstCuda symbols: GStreamer's core.
        let err = Api::load("libgstreamer-1.0.so.0")
            .err()
            .expect("a library without GstCuda symbols must not load");
        assert!(err.contains("lacks gst_cuda_load_library"), "{err}");
    }

    #[test]
    fn without_a_cuda_driver_the_library_reports_it() {
        gst::init().unwrap();
        // SAFETY: only probes for the driver library.
        if unsafe { libloading::Library::new("libcuda.so.1") }.is_ok() {
            return; // a CUDA machine: covered by the GPU runs
        }
        match Api::load(LIBRARY) {
            Ok(_) => panic!("loaded without libcuda"),
            Err(e) => assert!(
                e.contains("not available") || e.contains("CUDA driver"),
                "{e}"
            ),
        }
    }

    #[test]
    fn map_flag_is_the_one_after_the_core_flags() {
        assert_eq!(MAP_CUDA, 1 << 17);
    }
}
