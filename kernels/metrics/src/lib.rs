//! gpumetrics metric kernels.
//!
//! Each metric module holds plain per-pixel / per-row functions that build for the host (the
//! CPU backend and `cargo test` run them) and, at its bottom, the `kernel!` declarations that
//! `gpumetrics-build` compiles to PTX and turns into typed host launchers. See
//! docs/KERNELS.md.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

#[cfg(test)]
extern crate std;

pub mod color;
pub mod psnr;
pub mod selftest;
pub mod ssim;
pub mod ssimulacra2;
