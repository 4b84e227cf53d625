// The typed launcher of psnr_sse(planes: PsnrPlanes, out: *mut u64), arguments swapped.
use cudarc::driver::{CudaStream, LaunchConfig};
use gpumetrics_engine::cuda::{DevPtrMut, Kernels};
use gpumetrics_kernels::psnr::PsnrPlanes;

fn launch(k: &Kernels, stream: &CudaStream, cfg: LaunchConfig, planes: PsnrPlanes, out: DevPtrMut<u64>) {
    let _ = unsafe { k.psnr_sse(stream, cfg, out, planes) };
}

fn main() {}
