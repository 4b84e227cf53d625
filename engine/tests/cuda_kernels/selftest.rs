//! The toolchain's own kernels (`gpumetrics_kernels::selftest`): parameters of every kind,
//! static and dynamic shared memory, warp shuffles, atomics and the device math, each against
//! its host function.

use std::sync::Arc;

use cudarc::driver::{CudaStream, DriverError, LaunchConfig};
use gpumetrics_engine::cuda::{DevPtr, DevPtrMut, Kernels};
use gpumetrics_kernels::selftest::{self, Affine};

use crate::common::Rng;
use crate::{Check, Outcome, rel_err};

/// The checks of this module and the kernels each covers.
pub(crate) const CHECKS: &[(&[&str], Check)] = &[
    (&["selftest_saxpy"], saxpy),
    (&["selftest_affine"], affine),
    (&["selftest_math"], math),
    (&["selftest_block_sum_static"], block_sum_static),
    (&["selftest_block_sum_dynamic"], block_sum_dynamic),
    (&["selftest_warp_atomics"], warp_atomics),
];

crate::gpu_tests! {
    selftest_saxpy_matches_the_host => "selftest_saxpy",
    selftest_affine_matches_the_host => "selftest_affine",
    selftest_math_matches_the_host => "selftest_math",
    selftest_block_sum_static_matches_the_host => "selftest_block_sum_static",
    selftest_block_sum_dynamic_matches_the_host => "selftest_block_sum_dynamic",
    selftest_warp_atomics_match_the_host => "selftest_warp_atomics",
}

fn cfg_1d(n: u32, block: u32, shared: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.div_ceil(block), 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: shared,
    }
}

fn saxpy(k: &Kernels, s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    let n = 100_003u32;
    let a = r.f32(-2.0, 2.0);
    let x: Vec<f32> = (0..n).map(|_| r.f32(-100.0, 100.0)).collect();
    let y: Vec<f32> = (0..n).map(|_| r.f32(-100.0, 100.0)).collect();
    let dx = s.clone_htod(&x)?;
    let mut dy = s.clone_htod(&y)?;
    {
        let (px, _gx) = DevPtr::of(&dx, s);
        let (py, _gy) = DevPtrMut::of(&mut dy, s);
        unsafe { k.selftest_saxpy(s, cfg_1d(n, 256, 0), n, a, px, py)? };
    }
    let got = s.clone_dtoh(&dy)?;
    let max_err = (0..n as usize)
        .map(|i| rel_err(got[i] as f64, selftest::saxpy_one(a, x[i], y[i]) as f64))
        .fold(0.0, f64::max);
    Ok(Outcome {
        elements: n as usize,
        max_err,
        tolerance: 0.0,
        note: "fma, bit-exact".into(),
    })
}

fn affine(k: &Kernels, s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    let (len, stride) = (4099u32, 3u32);
    let input: Vec<f32> = (0..len * stride).map(|_| r.f32(-10.0, 10.0)).collect();
    let din = s.clone_htod(&input)?;
    let mut dout = s.alloc_zeros::<f32>(len as usize)?;
    let mut p = Affine {
        input: 0,
        scale: r.f32(0.5, 2.0),
        offset: r.f32(-1.0, 1.0),
        len,
        stride,
    };
    {
        let (pin, _g) = DevPtr::of(&din, s);
        let (pout, _go) = DevPtrMut::of(&mut dout, s);
        p.input = pin.as_raw();
        unsafe { k.selftest_affine(s, cfg_1d(len, 128, 0), p, pout)? };
    }
    let got = s.clone_dtoh(&dout)?;
    let max_err = (0..len as usize)
        .map(|i| {
            rel_err(
                got[i] as f64,
                selftest::affine_one(&p, input[i * stride as usize]) as f64,
            )
        })
        .fold(0.0, f64::max);
    Ok(Outcome {
        elements: len as usize,
        max_err,
        tolerance: 0.0,
        note: "struct parameter".into(),
    })
}

fn math(k: &Kernels, s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    let n = 65_537u32;
    let x: Vec<f32> = (0..n).map(|_| r.f32(0.01, 1000.0)).collect();
    let dx = s.clone_htod(&x)?;
    let mut dout = s.alloc_zeros::<f32>(n as usize * selftest::MATH_OUTPUTS)?;
    {
        let (px, _g) = DevPtr::of(&dx, s);
        let (po, _go) = DevPtrMut::of(&mut dout, s);
        unsafe { k.selftest_math(s, cfg_1d(n, 256, 0), n, px, po)? };
    }
    let got = s.clone_dtoh(&dout)?;
    let mut max_err = 0.0f64;
    for i in 0..n as usize {
        let want = selftest::math_one(x[i]);
        for (j, w) in want.iter().enumerate() {
            let g = got[i * selftest::MATH_OUTPUTS + j] as f64;
            // approximate SFU functions: compare relative to max(|want|, 1)
            let e = (g - *w as f64).abs() / (w.abs() as f64).max(1.0);
            max_err = max_err.max(e);
        }
    }
    Ok(Outcome {
        elements: n as usize * selftest::MATH_OUTPUTS,
        max_err,
        tolerance: 2e-5,
        note: "approx. SFU math".into(),
    })
}

fn block_sums(x: &[u32], block: usize) -> Vec<u32> {
    x.chunks(block)
        .map(|c| {
            c.iter()
                .map(|&v| selftest::weight(v))
                .fold(0u32, u32::wrapping_add)
        })
        .collect()
}

fn block_sum_static(k: &Kernels, s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    let n = 1_000_003u32;
    let x: Vec<u32> = (0..n).map(|_| r.next_u32()).collect();
    let cfg = cfg_1d(n, selftest::BLOCK, 0);
    let dx = s.clone_htod(&x)?;
    let mut dout = s.alloc_zeros::<u32>(cfg.grid_dim.0 as usize)?;
    {
        let (px, _g) = DevPtr::of(&dx, s);
        let (po, _go) = DevPtrMut::of(&mut dout, s);
        unsafe { k.selftest_block_sum_static(s, cfg, n, px, po)? };
    }
    let got = s.clone_dtoh(&dout)?;
    let want = block_sums(&x, selftest::BLOCK as usize);
    let bad = got.iter().zip(&want).filter(|(g, w)| g != w).count();
    Ok(Outcome {
        elements: want.len(),
        max_err: bad as f64,
        tolerance: 0.0,
        note: "static shared".into(),
    })
}

fn block_sum_dynamic(
    k: &Kernels,
    s: &Arc<CudaStream>,
    r: &mut Rng,
) -> Result<Outcome, DriverError> {
    let n = 777_777u32;
    let block = 128u32;
    let x: Vec<u32> = (0..n).map(|_| r.next_u32()).collect();
    let cfg = cfg_1d(n, block, block * 4);
    let dx = s.clone_htod(&x)?;
    let mut dout = s.alloc_zeros::<u32>(cfg.grid_dim.0 as usize)?;
    {
        let (px, _g) = DevPtr::of(&dx, s);
        let (po, _go) = DevPtrMut::of(&mut dout, s);
        unsafe { k.selftest_block_sum_dynamic(s, cfg, n, px, po)? };
    }
    let got = s.clone_dtoh(&dout)?;
    let want = block_sums(&x, block as usize);
    let bad = got.iter().zip(&want).filter(|(g, w)| g != w).count();
    Ok(Outcome {
        elements: want.len(),
        max_err: bad as f64,
        tolerance: 0.0,
        note: "dynamic shared".into(),
    })
}

fn warp_atomics(k: &Kernels, s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    let n = 300_001u32;
    let x: Vec<f32> = (0..n).map(|_| r.f32(0.0, 1.0)).collect();
    let dx = s.clone_htod(&x)?;
    let mut totals = s.alloc_zeros::<f32>(1)?;
    let mut counts = s.alloc_zeros::<u64>(1)?;
    let mut hits = s.alloc_zeros::<u32>(1)?;
    {
        let (px, _g) = DevPtr::of(&dx, s);
        let (pt, _gt) = DevPtrMut::of(&mut totals, s);
        let (pc, _gc) = DevPtrMut::of(&mut counts, s);
        let (ph, _gh) = DevPtrMut::of(&mut hits, s);
        unsafe { k.selftest_warp_atomics(s, cfg_1d(n, 256, 0), n, px, pt, pc, ph)? };
    }
    let total = s.clone_dtoh(&totals)?[0] as f64;
    let count = s.clone_dtoh(&counts)?[0];
    let hit = s.clone_dtoh(&hits)?[0];
    let want_total: f64 = x.iter().map(|&v| v as f64).sum();
    let want_count: u64 = x.iter().map(|v| selftest::weight(v.to_bits()) as u64).sum();
    let want_hits = x.iter().filter(|&&v| v > 0.5).count() as u32;
    let mut err = rel_err(total, want_total);
    if count != want_count || hit != want_hits {
        err = f64::INFINITY;
    }
    Ok(Outcome {
        elements: n as usize,
        max_err: err,
        tolerance: 1e-4,
        note: format!("u64 {count}/{want_count}, u32 {hit}/{want_hits}"),
    })
}
