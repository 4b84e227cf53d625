//! gpumetrics metric kernels.
//!
//! Each metric is a folder module: plain per-pixel / per-row functions that build for the
//! host (the CPU backend and `cargo test` run them), and its `kernels.rs`, the one place of
//! its `kernel!` declarations (with their device-only bodies) that `gpumetrics-build`
//! compiles to PTX and turns into typed host launchers. [`selftest`], which checks the
//! toolchain rather than a metric, declares its few kernels at its bottom. See
//! docs/KERNELS.md.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

#[cfg(test)]
extern crate std;

/// `$body` once for each listed index, as straight-line code with `$i` a constant: the GPU
/// keeps arrays indexed this way in registers (a rolled loop puts them in local memory).
macro_rules! unroll {
    ($i:ident in [$($n:literal)*] $body:block) => {
        $({
            #[allow(non_upper_case_globals)]
            const $i: usize = $n;
            $body
        })*
    };
}

pub mod channel;
pub mod color;
pub mod color_tile;
pub mod linear_light;
pub mod luma8;
pub mod selftest;

// One module per folder of `src/` (each metric's kernels: `psnr`, `vmaf`, ...), declared by
// the build script: a new metric's kernels are its folder alone.
include!(concat!(env!("OUT_DIR"), "/metric_modules.rs"));
