// A kernel that is not declared with kernel! in gpumetrics-kernels has no launcher.
use cudarc::driver::{CudaStream, LaunchConfig};
use gpumetrics_engine::cuda::{DevPtrMut, Kernels};

fn launch(k: &Kernels, stream: &CudaStream, cfg: LaunchConfig, out: DevPtrMut<u64>) {
    let _ = unsafe { k.undeclared_kernel(stream, cfg, out) };
}

fn main() {}
