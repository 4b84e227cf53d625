// selftest_affine(p: crate::selftest::Affine, out: *mut f32) with its arguments swapped.
use cudarc::driver::{CudaStream, LaunchConfig};
use gpumetrics_engine::cuda::{DevPtrMut, Kernels};
use gpumetrics_kernels::selftest::Affine;

fn launch(k: &Kernels, stream: &CudaStream, cfg: LaunchConfig, p: Affine, out: DevPtrMut<f32>) {
    let _ = unsafe { k.selftest_affine(stream, cfg, out, p) };
}

fn main() {}
