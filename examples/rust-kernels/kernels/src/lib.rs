//! The kernel crate of the example: two kernels and the per-element code they share with
//! the host. `gpumetrics-build` compiles it for `nvptx64-nvidia-cuda` (where `kernel!`
//! makes each declaration an exported PTX entry point); the host crate also builds it for
//! itself, where the kernels expand to nothing and [`scaled`] and [`block_sum`] compute the
//! same values on the CPU.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]

#[cfg(target_arch = "nvptx64")]
use gpumetrics_device as dev;

/// Threads per block of `block_sums`, and the values each block adds.
pub const BLOCK: u32 = 256;
/// [`BLOCK`] as a length (shared arrays are sized by a `usize` constant).
pub const BLOCK_LEN: usize = BLOCK as usize;

/// A `#[repr(C)] Copy` struct crosses the kernel boundary by value; the generated launcher
/// takes this very type, and the build checks that its size is the PTX parameter's.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scale {
    /// Elements.
    pub n: u32,
    /// The factor.
    pub factor: f32,
}

/// One element of `scale`'s output.
#[inline(always)]
pub fn scaled(p: &Scale, x: f32) -> f32 {
    p.factor * x
}

/// The sum of `BLOCK` values in the order of `block_sums`' tree: at each step value i adds
/// value i + half, for half = BLOCK/2, BLOCK/4, .. 1; the CPU gets the kernel's f32 result
/// bit for bit.
pub fn block_sum(values: &mut [f32; BLOCK_LEN]) -> f32 {
    let mut half = BLOCK_LEN / 2;
    while half > 0 {
        for i in 0..half {
            values[i] += values[i + half];
        }
        half /= 2;
    }
    values[0]
}

gpumetrics_device::kernel! {
    /// `y[i]` = [`scaled`]`(p, x[i])` for i < p.n. Launch a 1-D grid covering p.n.
    pub unsafe fn scale(p: Scale, x: *const f32, y: *mut f32) => scale_body;

    /// `sums[b]` = the sum of `x[b·BLOCK ..][..BLOCK]` (0 past n), added through
    /// block-shared memory as [`block_sum`] adds. Launch `BLOCK` threads per block, one
    /// block per `BLOCK` values.
    pub unsafe fn block_sums(n: u32, x: *const f32, sums: *mut f32) => block_sums_body;
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn scale_body(p: Scale, x: *const f32, y: *mut f32) {
    let i = dev::global_idx_x();
    if i < p.n {
        unsafe { *y.add(i as usize) = scaled(&p, *x.add(i as usize)) };
    }
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn block_sums_body(n: u32, x: *const f32, sums: *mut f32) {
    gpumetrics_device::shared!(static PARTIAL: [f32; BLOCK_LEN]);
    let t = dev::thread_idx_x();
    let i = dev::block_idx_x() * BLOCK + t;
    let v = if i < n {
        unsafe { *x.add(i as usize) }
    } else {
        0.0
    };
    unsafe { PARTIAL.write(t as usize, v) };
    let mut half = BLOCK / 2;
    while half > 0 {
        unsafe { dev::sync_threads() };
        if t < half {
            let s = unsafe { PARTIAL.read(t as usize) + PARTIAL.read((t + half) as usize) };
            unsafe { PARTIAL.write(t as usize, s) };
        }
        half /= 2;
    }
    if t == 0 {
        unsafe { *sums.add(dev::block_idx_x() as usize) = PARTIAL.read(0) };
    }
}
