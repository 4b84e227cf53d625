// selftest_saxpy(n: u32, a: f32, x: *const f32, y: *mut f32): a read-only pointer where the
// kernel writes, a pointer to the wrong element type, and a float where a u32 goes.
use cudarc::driver::{CudaStream, LaunchConfig};
use gpumetrics_engine::cuda::{DevPtr, DevPtrMut, Kernels};

fn launch(k: &Kernels, stream: &CudaStream, cfg: LaunchConfig, x: DevPtr<f32>, y: DevPtrMut<f32>, z: DevPtr<u32>) {
    let _ = unsafe { k.selftest_saxpy(stream, cfg, 16, 2.0, x, y.as_const()) };
    let _ = unsafe { k.selftest_saxpy(stream, cfg, 16, 2.0, z, y) };
    let _ = unsafe { k.selftest_saxpy(stream, cfg, 2.0, 16, x, y) };
}

fn main() {}
