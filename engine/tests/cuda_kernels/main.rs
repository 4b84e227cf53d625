//! Every kernel of `gpumetrics-kernels` on the GPU with random inputs, compared with the host
//! build of the same per-element code. Needs a GPU: run with `--ignored` there (see
//! docs/GPU-RUNS.md), also under `compute-sanitizer`; with `--nocapture` each test prints
//! its row (elements compared, max error, tolerance). `GPUMETRICS_KERNEL_SEED` sets the
//! random seed. `every_kernel_has_a_check` runs everywhere: a new kernel needs a check here.
//!
//! One test binary, one module per metric: each module lists its checks with the kernels
//! they cover (`CHECKS`) and declares one `#[ignore]` test per check (`gpu_tests!`), so a
//! test's name starts with its module (`vmaf::…`, `psnr::…`) and `cuda_kernels --ignored
//! vmaf` runs one metric's. A metric's module is its folder's `gpu_checks.rs`
//! (`engine/src/metric/<metric>/`), found there by the engine's build script; the modules
//! here are those of no metric's folder: `selftest` checks the toolchain's own kernels,
//! `speed` the SpEED kernels VMAF v1 reads, `thumb` the live alignment's thumbnails, `map` the distortion maps, `engine` holds the CUDA-versus-CPU engine
//! comparison the pipeline checks share and `in_flight` the pairs in flight.

#[path = "../common/mod.rs"]
mod common;

use std::sync::Arc;

use common::Rng;
use cudarc::driver::{CudaContext, CudaStream, DriverError};
use gpumetrics_engine::cuda::{self, Kernels};

/// One `#[ignore]` test per listed kernel, running the check `check_for` gives it.
macro_rules! gpu_tests {
    ($($test:ident => $kernel:literal,)*) => {$(
        #[test]
        #[ignore = "needs a CUDA GPU"]
        fn $test() {
            $crate::run($kernel, $crate::check_for($kernel).unwrap());
        }
    )*};
}
pub(crate) use gpu_tests;

mod engine;
mod in_flight;
mod map;
mod selftest;
mod speed;
mod thumb;

include!(concat!(env!("OUT_DIR"), "/gpu_checks.rs"));

/// Outcome of one kernel check: elements compared, worst error, tolerance.
pub(crate) struct Outcome {
    pub elements: usize,
    pub max_err: f64,
    pub tolerance: f64,
    pub note: String,
}

impl Outcome {
    /// Nothing compared yet, against `tolerance`: a check's start, which adds its elements,
    /// worst error and notes as it goes.
    pub(crate) fn new(tolerance: f64) -> Self {
        Outcome {
            elements: 0,
            max_err: 0.0,
            tolerance,
            note: String::new(),
        }
    }
}

pub(crate) type Check = fn(&Kernels, &Arc<CudaStream>, &mut Rng) -> Result<Outcome, DriverError>;

/// The checks of the modules here; the metrics' are `METRIC_CHECKS`.
const CHECKS: &[&[(&[&str], Check)]] =
    &[speed::CHECKS, selftest::CHECKS, thumb::CHECKS, map::CHECKS];

/// The check of kernel `name`.
fn check_for(name: &str) -> Option<Check> {
    CHECKS
        .iter()
        .chain(METRIC_CHECKS)
        .flat_map(|m| m.iter())
        .find(|(kernels, _)| kernels.contains(&name))
        .map(|&(_, check)| check)
}

#[test]
fn every_kernel_has_a_check() {
    let missing: Vec<_> = cuda::KERNELS
        .iter()
        .filter(|k| check_for(k.name).is_none())
        .map(|k| k.name)
        .collect();
    assert!(
        missing.is_empty(),
        "kernels without a check (add it to the CHECKS and gpu_tests! of the metric's \
         engine/src/metric/<metric>/gpu_checks.rs): {missing:?}"
    );
}

#[test]
fn every_check_names_a_kernel() {
    let unknown: Vec<_> = CHECKS
        .iter()
        .chain(METRIC_CHECKS)
        .flat_map(|m| m.iter())
        .flat_map(|(kernels, _)| kernels.iter())
        .filter(|name| !cuda::KERNELS.iter().any(|k| k.name == **name))
        .collect();
    assert!(
        unknown.is_empty(),
        "checks of kernels that do not exist: {unknown:?}"
    );
}

/// Runs `check` of kernel `name` on device 0 and fails on a CUDA error or an error above the
/// tolerance.
fn run(name: &str, check: Check) {
    let seed = std::env::var("GPUMETRICS_KERNEL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_u64);
    // SAFETY: only probes whether the driver library can be loaded.
    let driver = unsafe { cudarc::driver::sys::is_culib_present() };
    assert!(driver, "needs a CUDA GPU: no CUDA driver library");
    let ctx = CudaContext::new(0).expect("needs a CUDA GPU");
    let stream = ctx.new_stream().unwrap();
    let kernels = cuda::kernels(&ctx).unwrap();
    let (major, minor) = ctx.compute_capability().unwrap_or((0, 0));
    let cc = (major * 10 + minor) as u32;
    let sm = cuda::PTX
        .iter()
        .rev()
        .find(|(sm, _)| *sm <= cc)
        .map_or(cuda::PTX[0].0, |p| p.0);
    let o = check(&kernels, &stream, &mut Rng::new(seed))
        .and_then(|o| stream.synchronize().map(|()| o))
        .unwrap_or_else(|e| panic!("{name}: CUDA error: {e}"));
    let ok = o.max_err <= o.tolerance;
    println!(
        "{name:<28} {:>9} {:>11.3e} {:>9.1e}  {:<6} {} (sm_{cc}, PTX sm_{sm}, seed {seed:#x})",
        o.elements,
        o.max_err,
        o.tolerance,
        if ok { "ok" } else { "FAIL" },
        o.note
    );
    assert!(
        ok,
        "{name}: max error {:e} above {:e} ({})",
        o.max_err, o.tolerance, o.note
    );
}

/// Relative error of `a` against `b` (0 when equal).
pub(crate) fn rel_err(a: f64, b: f64) -> f64 {
    if a == b {
        0.0
    } else {
        (a - b).abs() / b.abs().max(1e-30)
    }
}
