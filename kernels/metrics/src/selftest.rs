//! Small kernels that exercise the toolchain itself (parameters of every kind, static and
//! dynamic shared memory, warp shuffles, atomics, fast math). `engine/tests/cuda_kernels/`
//! (`selftest.rs`) runs them on the GPU and compares with the host functions below.

use gpumetrics_device::math;

/// Threads per block of the block reductions (their static shared array has this length).
pub const BLOCK: u32 = 256;

/// Parameters passed by value as a `#[repr(C)]` struct (tests struct kernel parameters).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Affine {
    /// Device address of the `f32` input.
    pub input: u64,
    /// Multiplier.
    pub scale: f32,
    /// Added after scaling.
    pub offset: f32,
    /// Number of elements.
    pub len: u32,
    /// Element stride of the input.
    pub stride: u32,
}

/// `a * x + y` with one rounding.
#[inline(always)]
pub fn saxpy_one(a: f32, x: f32, y: f32) -> f32 {
    math::fmaf(a, x, y)
}

/// `x * scale + offset`.
#[inline(always)]
pub fn affine_one(p: &Affine, x: f32) -> f32 {
    math::fmaf(x, p.scale, p.offset)
}

/// Number of outputs of [`math_one`].
pub const MATH_OUTPUTS: usize = 8;

/// Every fast-math function on one input (`x > 0`).
#[inline(always)]
pub fn math_one(x: f32) -> [f32; MATH_OUTPUTS] {
    [
        math::sqrtf(x),
        math::rsqrtf(x),
        math::exp2f(x * 0.01),
        math::log2f(x),
        math::cbrtf(x - 50.0),
        math::powf(x, 0.37),
        math::fmaf(x, 1.5, -2.0),
        math::fma(x as f64, 0.25, 1.0) as f32 + math::sqrt(x as f64) as f32,
    ]
}

/// Weight of one element in the reductions (shared by host and device code).
#[inline(always)]
pub fn weight(x: u32) -> u32 {
    (x ^ (x >> 7)) & 0xffff
}

#[cfg(target_arch = "nvptx64")]
use gpumetrics_device as dev;

gpumetrics_device::kernel! {
    /// `y[i] = a * x[i] + y[i]` for `i < n`.
    pub unsafe fn selftest_saxpy(n: u32, a: f32, x: *const f32, y: *mut f32) => saxpy;

    /// `out[i] = affine_one(p, input[i * stride])` for `i < p.len`.
    pub unsafe fn selftest_affine(p: Affine, out: *mut f32) => affine;

    /// `out[i * MATH_OUTPUTS + k] = math_one(x[i])[k]`.
    pub unsafe fn selftest_math(n: u32, x: *const f32, out: *mut f32) => math;

    /// Per-block sum of `weight(x[i])` through a static shared array; launch with
    /// `BLOCK` threads per block. `out[blockIdx.x]` receives the block's sum.
    pub unsafe fn selftest_block_sum_static(n: u32, x: *const u32, out: *mut u32) => block_sum_static;

    /// Same as `selftest_block_sum_static`, through dynamic shared memory: launch with any
    /// power-of-two block size and `shared_mem_bytes = 4 * blockDim.x`.
    pub unsafe fn selftest_block_sum_dynamic(n: u32, x: *const u32, out: *mut u32) => block_sum_dynamic;

    /// Warp-shuffle reductions finished with one atomic per warp: `totals[0] += sum(x)`
    /// (f32, `shfl_down`), `counts[0] += sum(weight(x.to_bits()))` (u64, `shfl_down`),
    /// `hits[0] += count(x > 0.5)` (u32, `shfl_xor` butterfly). Launch with a block size that
    /// is a multiple of 32; the caller zeroes the outputs.
    pub unsafe fn selftest_warp_atomics(n: u32, x: *const f32, totals: *mut f32, counts: *mut u64, hits: *mut u32) => warp_atomics;
}

/// The body of the `selftest_saxpy` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn saxpy(n: u32, a: f32, x: *const f32, y: *mut f32) {
    let i = dev::global_idx_x();
    if i < n {
        let i = i as usize;
        unsafe { *y.add(i) = saxpy_one(a, *x.add(i), *y.add(i)) };
    }
}

/// The body of the `selftest_affine` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn affine(p: Affine, out: *mut f32) {
    let i = dev::global_idx_x();
    if i < p.len {
        let x = unsafe { *(p.input as *const f32).add((i * p.stride) as usize) };
        unsafe { *out.add(i as usize) = affine_one(&p, x) };
    }
}

/// The body of the `selftest_math` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn math(n: u32, x: *const f32, out: *mut f32) {
    let i = dev::global_idx_x();
    if i < n {
        let r = math_one(unsafe { *x.add(i as usize) });
        for (k, v) in r.into_iter().enumerate() {
            unsafe { *out.add(i as usize * MATH_OUTPUTS + k) = v };
        }
    }
}

/// The body of the `selftest_block_sum_static` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn block_sum_static(n: u32, x: *const u32, out: *mut u32) {
    gpumetrics_device::shared!(static SELFTEST_SUMS: [u32; BLOCK as usize]);
    let t = dev::thread_idx_x() as usize;
    let i = dev::global_idx_x();
    let v = if i < n {
        weight(unsafe { *x.add(i as usize) })
    } else {
        0
    };
    unsafe { SELFTEST_SUMS.write(t, v) };
    let mut stride = BLOCK as usize / 2;
    while stride > 0 {
        unsafe { dev::sync_threads() };
        if t < stride {
            unsafe {
                SELFTEST_SUMS.write(t, SELFTEST_SUMS.read(t) + SELFTEST_SUMS.read(t + stride))
            };
        }
        stride /= 2;
    }
    if t == 0 {
        unsafe { *out.add(dev::block_idx_x() as usize) = SELFTEST_SUMS.read(0) };
    }
}

/// The body of the `selftest_block_sum_dynamic` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn block_sum_dynamic(n: u32, x: *const u32, out: *mut u32) {
    let sums = dev::dynamic_shared::<u32>();
    let t = dev::thread_idx_x() as usize;
    let i = dev::global_idx_x();
    let v = if i < n {
        weight(unsafe { *x.add(i as usize) })
    } else {
        0
    };
    unsafe { *sums.add(t) = v };
    let mut stride = dev::block_dim_x() as usize / 2;
    while stride > 0 {
        unsafe { dev::sync_threads() };
        if t < stride {
            unsafe { *sums.add(t) += *sums.add(t + stride) };
        }
        stride /= 2;
    }
    if t == 0 {
        unsafe { *out.add(dev::block_idx_x() as usize) = *sums };
    }
}

/// The body of the `selftest_warp_atomics` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn warp_atomics(n: u32, x: *const f32, totals: *mut f32, counts: *mut u64, hits: *mut u32) {
    let i = dev::global_idx_x();
    let v = if i < n {
        unsafe { *x.add(i as usize) }
    } else {
        0.0
    };
    let mut sum = v;
    let mut w = if i < n { weight(v.to_bits()) as u64 } else { 0 };
    let mut above = (i < n && v > 0.5) as u32;
    let mut delta = 16;
    while delta > 0 {
        unsafe {
            sum += dev::shfl_down(dev::FULL_MASK, sum, delta);
            w += dev::shfl_down(dev::FULL_MASK, w, delta);
        }
        delta /= 2;
    }
    // butterfly: every lane ends with the warp's count
    let mut mask = 16;
    while mask > 0 {
        above += unsafe { dev::shfl_xor(dev::FULL_MASK, above, mask) };
        mask /= 2;
    }
    if dev::lane_id() == 0 {
        unsafe {
            dev::atomic_add_f32(totals, sum);
            dev::atomic_add_u64(counts, w);
            dev::atomic_add_u32(hits, above);
        }
    }
}
