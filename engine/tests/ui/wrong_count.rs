// selftest_block_sum_static(n: u32, x: *const u32, out: *mut u32) with one argument missing.
use cudarc::driver::{CudaStream, LaunchConfig};
use gpumetrics_engine::cuda::{DevPtr, Kernels};

fn launch(k: &Kernels, stream: &CudaStream, cfg: LaunchConfig, x: DevPtr<u32>) {
    let _ = unsafe { k.selftest_block_sum_static(stream, cfg, 16, x) };
}

fn main() {}
