//! Every kernel of `gpumetrics-kernels` on the GPU with random inputs, compared with the host
//! build of the same per-element code. Needs a GPU: run with `--ignored` there (see
//! docs/GPU-RUNS.md), also under `compute-sanitizer`; with `--nocapture` each test prints
//! its row (elements compared, max error, tolerance). `GPUMETRICS_KERNEL_SEED` sets the
//! random seed. `every_kernel_has_a_check` runs everywhere: a new kernel needs a check here.

mod common;

use std::sync::Arc;

use common::Rng;
use cudarc::driver::{CudaContext, CudaStream, DriverError, LaunchConfig};
use gpumetrics_engine::cuda::{self, DevPtr, DevPtrMut, Kernels};
use gpumetrics_kernels::channel::{Channel, ChannelPair};
use gpumetrics_kernels::psnr::{self, PsnrPlanes};
use gpumetrics_kernels::selftest::{self, Affine};

/// Outcome of one kernel check: elements compared, worst error, tolerance.
struct Outcome {
    elements: usize,
    max_err: f64,
    tolerance: f64,
    note: String,
}

type Check = fn(&Kernels, &Arc<CudaStream>, &mut Rng) -> Result<Outcome, DriverError>;

/// The check of each kernel (the SSIMULACRA2, Butteraugli and VMAF kernels run as one
/// pipeline each).
fn check_for(name: &str) -> Option<Check> {
    Some(match name {
        "psnr_sse" => psnr_sse,
        "ssim_scale" => ssim_scale,
        "ssimu2_linearize" | "ssimu2_downsample" | "ssimu2_hblur" | "ssimu2_vblur"
        | "ssimu2_finish" => ssimulacra2_pipeline,
        "ba_linearize" | "ba_downsample" | "ba_blur5_row" | "ba_opsin" | "ba_gauss_row"
        | "ba_lf_col" | "ba_mf_col" | "ba_uhf_col" | "ba_mask_col" | "ba_malta_inputs"
        | "ba_ac_error" | "ba_diffmap" | "ba_reduce" => butteraugli_pipeline,
        "vmaf_load" | "vmaf_vif_vertical" | "vmaf_vif_stat" | "vmaf_vif_down" | "vmaf_adm_dwt"
        | "vmaf_adm_decouple" | "vmaf_adm_rows" | "vmaf_motion_blur_y" | "vmaf_motion_blur_x"
        | "vmaf_motion_sad" => vmaf_pipeline,
        "selftest_saxpy" => saxpy,
        "selftest_affine" => affine,
        "selftest_math" => math,
        "selftest_block_sum_static" => block_sum_static,
        "selftest_block_sum_dynamic" => block_sum_dynamic,
        "selftest_warp_atomics" => warp_atomics,
        _ => return None,
    })
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
        "kernels without a check in engine/tests/cuda_kernels.rs: {missing:?}"
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

macro_rules! gpu_tests {
    ($($test:ident => $kernel:literal,)*) => {$(
        #[test]
        #[ignore = "needs a CUDA GPU"]
        fn $test() {
            run($kernel, check_for($kernel).unwrap());
        }
    )*};
}

gpu_tests! {
    psnr_sse_matches_the_host => "psnr_sse",
    ssim_scale_matches_the_host => "ssim_scale",
    ssimulacra2_kernels_match_the_cpu_backend => "ssimu2_linearize",
    butteraugli_kernels_match_the_cpu_backend => "ba_linearize",
    vmaf_kernels_match_the_cpu_backend => "vmaf_load",
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

fn rel_err(a: f64, b: f64) -> f64 {
    if a == b {
        0.0
    } else {
        (a - b).abs() / b.abs().max(1e-30)
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

/// Three channels with different layouts: 8-bit planar, 10-bit MSB-aligned 16-bit
/// (P010-like, distorted at 8 bits to exercise rescale), 8-bit interleaved (step 3).
fn psnr_sse(k: &Kernels, s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    struct Layout {
        w: u32,
        h: u32,
        pitch: u32,
        step: u32,
        bytes: u32,
        shift: u32,
        max: u32,
    }
    let layouts = [
        (
            Layout {
                w: 333,
                h: 211,
                pitch: 352,
                step: 1,
                bytes: 1,
                shift: 0,
                max: 255,
            },
            None,
        ),
        (
            Layout {
                w: 160,
                h: 97,
                pitch: 512,
                step: 2,
                bytes: 2,
                shift: 6,
                max: 1023,
            },
            Some(Layout {
                w: 160,
                h: 97,
                pitch: 160,
                step: 1,
                bytes: 1,
                shift: 0,
                max: 255,
            }),
        ),
        (
            Layout {
                w: 641,
                h: 5,
                pitch: 1925,
                step: 3,
                bytes: 1,
                shift: 0,
                max: 255,
            },
            None,
        ),
    ];
    let mut host = Vec::new();
    for (a, b) in &layouts {
        let b = b.as_ref().unwrap_or(a);
        host.push((
            r.bytes((a.pitch * a.h) as usize),
            r.bytes((b.pitch * b.h) as usize),
        ));
    }
    let chan = |ptr: u64, l: &Layout| Channel {
        ptr,
        pitch: l.pitch,
        step: l.step,
        sample_bytes: l.bytes,
        shift: l.shift,
        max: l.max,
        _pad: 0,
    };
    let mut want = [0u64; 3];
    let mut host_planes = PsnrPlanes {
        count: 3,
        ..Default::default()
    };
    for (c, ((a, b), (ra, rb))) in layouts.iter().zip(&host).enumerate() {
        let b = b.as_ref().unwrap_or(a);
        host_planes.pairs[c] = ChannelPair {
            reference: chan(ra.as_ptr() as u64, a),
            distorted: chan(rb.as_ptr() as u64, b),
            width: a.w,
            height: a.h,
        };
        want[c] = unsafe { psnr::sse_rows(&host_planes.pairs[c], 0, a.h) };
    }
    let dev: Vec<_> = host
        .iter()
        .map(|(a, b)| Ok((s.clone_htod(a)?, s.clone_htod(b)?)))
        .collect::<Result<_, DriverError>>()?;
    // Slots 0..3 accumulate; 3..6 start dirty and must come back cleared.
    let mut out = s.clone_htod(&[0u64, 0, 0, 7, 7, 7])?;
    {
        let mut planes = host_planes;
        let mut guards = Vec::new();
        for (c, (da, db)) in dev.iter().enumerate() {
            let (pa, ga) = DevPtr::of(da, s);
            let (pb, gb) = DevPtr::of(db, s);
            planes.pairs[c].reference.ptr = pa.as_raw();
            planes.pairs[c].distorted.ptr = pb.as_raw();
            guards.push((ga, gb));
        }
        let (po, _go) = DevPtrMut::of(&mut out, s);
        let clear = po.wrapping_add(3);
        let cfg = LaunchConfig {
            grid_dim: (64, 1, 3),
            block_dim: (psnr::BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        unsafe { k.psnr_sse(s, cfg, planes, po, clear)? };
    }
    let got = s.clone_dtoh(&out)?;
    let bad = got[..3].iter().zip(&want).filter(|(g, w)| g != w).count()
        + got[3..].iter().filter(|&&g| g != 0).count();
    Ok(Outcome {
        elements: 3,
        max_err: bad as f64,
        tolerance: 0.0,
        note: format!("sse {got:?} vs host {want:?}"),
    })
}

/// The SSIMULACRA2 kernels run as one pipeline (each needs the previous one's output):
/// the CUDA backend's score against the CPU backend's (the host build of the same per-pixel
/// code) on random RGB and I420 frames of odd size (five scales). Checked once per kernel
/// name; every run exercises all five kernels.
fn ssimulacra2_pipeline(
    _k: &Kernels,
    _s: &Arc<CudaStream>,
    r: &mut Rng,
) -> Result<Outcome, DriverError> {
    Ok(engine_pipeline(
        r,
        gpumetrics_engine::MetricSet::SSIMULACRA2,
        "ssimulacra2",
        0.01,
        false,
    ))
}

/// The Butteraugli kernels as the engine runs them, against the CPU backend (both fields,
/// relative error).
fn butteraugli_pipeline(
    _k: &Kernels,
    _s: &Arc<CudaStream>,
    r: &mut Rng,
) -> Result<Outcome, DriverError> {
    let mut out = engine_pipeline(
        r,
        gpumetrics_engine::MetricSet::BUTTERAUGLI,
        "butteraugli",
        1e-4,
        true,
    );
    let norm = engine_pipeline(
        r,
        gpumetrics_engine::MetricSet::BUTTERAUGLI,
        "butteraugli-3norm",
        1e-4,
        true,
    );
    out.max_err = out.max_err.max(norm.max_err);
    out.note = format!("{}; 3-norm: {}", out.note, norm.note);
    Ok(out)
}

/// VMAF's whole pipeline (every `vmaf_*` kernel) on the GPU against the CPU backend: three
/// pairs of a smooth random odd-sized frame and a noisier copy, 8-bit 4:2:0 and 10-bit
/// 4:4:4 with features; the features are integer sums on both sides, so they must be equal.
fn vmaf_pipeline(_k: &Kernels, _s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    use gpumetrics_engine::{
        BackendChoice, Engine, EngineConfig, Frame, FrameLayout, HostFrame, MetricSet, PixelFormat,
        Plane, Scores,
    };
    let (w, h) = (173usize, 97usize);
    let mut max_err = 0.0f64;
    let mut notes = Vec::new();
    let mut elements = 0;
    for (format, bps, sub) in [
        (PixelFormat::I420, 1usize, 1u32),
        (PixelFormat::Y444_10Le, 2, 0),
    ] {
        let layout = FrameLayout {
            format,
            width: w as u32,
            height: h as u32,
        };
        let (cw, ch) = (w.div_ceil(1 << sub), h.div_ceil(1 << sub));
        let samples = w * h + 2 * cw * ch;
        let max = if bps == 1 { 255u32 } else { 1023 };
        let mut frames = Vec::new();
        for _ in 0..3 {
            let base: Vec<u32> = (0..samples).map(|_| r.next_u32() % (max + 1)).collect();
            let a: Vec<u32> = (0..samples)
                .map(|i| (base[i] + base[(i + 1) % samples] + 2 * (max / 2)) / 4)
                .collect();
            let b: Vec<u32> = a
                .iter()
                .map(|&v| {
                    (v + r.next_u32() % (max / 16 + 1))
                        .saturating_sub(max / 32)
                        .min(max)
                })
                .collect();
            let bytes = |v: &[u32]| -> Vec<u8> {
                v.iter()
                    .flat_map(|&x| {
                        if bps == 1 {
                            vec![x as u8]
                        } else {
                            (x as u16).to_le_bytes().to_vec()
                        }
                    })
                    .collect()
            };
            frames.push((bytes(&a), bytes(&b)));
        }
        // (byte offset, stride) of Y, U, V.
        let planes = [
            (0, w * bps),
            (w * h * bps, cw * bps),
            ((w * h + cw * ch) * bps, cw * bps),
        ];
        let run = |backend| -> Result<Vec<Scores>, String> {
            let cfg = EngineConfig {
                metrics: MetricSet::VMAF,
                backend,
                options: common::vmaf_options("vmaf_v0.6.1"),
                ..Default::default()
            };
            let mut e = Engine::new(&cfg, layout, layout).map_err(|e| e.to_string())?;
            let mut out = Vec::new();
            for (a, b) in &frames {
                let pa: Vec<Plane> = planes
                    .iter()
                    .map(|&(o, s)| Plane {
                        data: &a[o..],
                        stride: s,
                    })
                    .collect();
                let pb: Vec<Plane> = planes
                    .iter()
                    .map(|&(o, s)| Plane {
                        data: &b[o..],
                        stride: s,
                    })
                    .collect();
                let (fa, fb) = (
                    Frame::Host(HostFrame::new(&pa)),
                    Frame::Host(HostFrame::new(&pb)),
                );
                out.extend(e.push(&fa, &fb).map_err(|e| e.to_string())?);
            }
            out.extend(e.finish());
            Ok(out)
        };
        match (run(BackendChoice::Cuda), run(BackendChoice::Cpu)) {
            (Ok(g), Ok(c)) if g.len() == c.len() && g.len() == 3 => {
                for (g, c) in g.iter().zip(&c) {
                    for ((name, gv), (_, cv)) in g.iter().zip(c.iter()) {
                        let tol_scale = if name == "vmaf" { 1e-9 } else { 0.0 };
                        let e = (gv - cv).abs();
                        let e = if e.is_nan() { f64::INFINITY } else { e };
                        max_err = max_err.max((e - tol_scale).max(0.0));
                        elements += 1;
                    }
                }
                notes.push(format!(
                    "{} vmaf cuda {:.4} cpu {:.4}",
                    format.name(),
                    g[2].get("vmaf").unwrap_or(f64::NAN),
                    c[2].get("vmaf").unwrap_or(f64::NAN)
                ));
            }
            (g, c) => {
                max_err = f64::INFINITY;
                notes.push(format!(
                    "{} {:?} {:?}",
                    format.name(),
                    g.map(|v| v.len()),
                    c.map(|v| v.len())
                ));
            }
        }
    }
    Ok(Outcome {
        elements,
        max_err,
        tolerance: 0.0,
        note: format!("fields equal (vmaf within 1e-9); {}", notes.join(", ")),
    })
}

/// A metric's field from the CUDA and the CPU backend on a 173×97 random pair (RGB and
/// I420): the kernels as the engine launches them, against the host build of the same code.
fn engine_pipeline(
    r: &mut Rng,
    metric: gpumetrics_engine::MetricSet,
    field: &str,
    tolerance: f64,
    relative: bool,
) -> Outcome {
    use gpumetrics_engine::{
        BackendChoice, Engine, EngineConfig, Frame, FrameLayout, HostFrame, PixelFormat,
    };
    let (w, h) = (173usize, 97usize);
    let mut max_err = 0.0f64;
    let mut notes = Vec::new();
    for format in [PixelFormat::Rgb, PixelFormat::I420] {
        let layout = FrameLayout {
            format,
            width: w as u32,
            height: h as u32,
        };
        let len = match format {
            PixelFormat::Rgb => 3 * w * h,
            _ => w * h + 2 * w.div_ceil(2) * h.div_ceil(2),
        };
        // Smooth random image (noise blurred by averaging) and a noisier copy.
        let base = r.bytes(len);
        let a: Vec<u8> = (0..len)
            .map(|i| ((base[i] as u32 + base[(i + 1) % len] as u32 + 2 * 128) / 4) as u8)
            .collect();
        let noise = r.bytes(len);
        let b: Vec<u8> = a
            .iter()
            .zip(&noise)
            .map(|(v, n)| v.saturating_add(n % 16).saturating_sub(8))
            .collect();
        let planes = |d| common::images::planes(format, w as u32, h as u32, d);
        let (pa, pb) = (planes(&a), planes(&b));
        let (fa, fb) = (
            Frame::Host(HostFrame::new(&pa)),
            Frame::Host(HostFrame::new(&pb)),
        );
        let score = |backend| {
            let cfg = EngineConfig {
                metrics: metric,
                backend,
                ..Default::default()
            };
            Engine::new(&cfg, layout, layout)
                .and_then(|mut e| e.compare(&fa, &fb))
                .map(|s| s.get(field).unwrap_or(f64::NAN))
        };
        match (score(BackendChoice::Cuda), score(BackendChoice::Cpu)) {
            (Ok(g), Ok(c)) => {
                let e = if relative {
                    rel_err(g, c)
                } else {
                    (g - c).abs()
                };
                max_err = max_err.max(if e.is_nan() { f64::INFINITY } else { e });
                notes.push(format!("{} cuda {g:.5} cpu {c:.5}", format.name()));
            }
            (g, c) => {
                max_err = f64::INFINITY;
                notes.push(format!("{} {g:?} {c:?}", format.name()));
            }
        }
    }
    Outcome {
        elements: 2,
        max_err,
        tolerance,
        note: notes.join(", "),
    }
}

/// Host sums of the ssim and cs map values of `p`, from the same per-pixel functions.
fn host_ssim(p: &ChannelPair) -> (f64, f64) {
    use gpumetrics_kernels::ssim::{Moments, WEIGHTS, constants, sample, ssim_cs, valid};
    let (vw, vh) = (valid(p.width) as usize, valid(p.height) as usize);
    let peak = p.reference.max;
    let (c1, c2) = constants(peak);
    let at = |c: &Channel, x: usize, y: usize| unsafe {
        sample(
            (c.ptr + y as u64 * c.pitch as u64) as *const u8,
            x as u32,
            c,
            peak,
        )
    };
    let mut hm = vec![Moments::default(); p.height as usize * vw];
    for y in 0..p.height as usize {
        for x in 0..vw {
            for (k, &w) in WEIGHTS.iter().enumerate() {
                let (a, b) = (at(&p.reference, x + k, y), at(&p.distorted, x + k, y));
                hm[y * vw + x].add_sample(w, a, b);
            }
        }
    }
    let mut sums = (0.0, 0.0);
    for y in 0..vh {
        for x in 0..vw {
            let mut m = Moments::default();
            for (k, &w) in WEIGHTS.iter().enumerate() {
                m.add_moments(w, &hm[(y + k) * vw + x]);
            }
            let (s, cs) = ssim_cs(&m, c1, c2);
            sums.0 += s;
            sums.1 += cs;
        }
    }
    sums
}

/// Three channel pairs in one launch: 8-bit planar (odd size, pooled), 10-bit MSB-aligned
/// against 8-bit (rescaled), and f32 samples (a pooled scale, pooled again). Sums must
/// match the host to 1e-12 (f64, other summation order), pooled planes bit for bit, and
/// the other result slot must come back cleared.
fn ssim_scale(k: &Kernels, s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    use gpumetrics_kernels::ssim::{
        BLOCK_ROWS, F32_SAMPLES, RESULT_LEN, SCALES, ScalePair, SsimPlanes, TILE_W, grid, half,
        pooled,
    };
    // (w, h, pitch, step, bytes, shift, max) of reference and distorted.
    type L = (u32, u32, u32, u32, u32, u32, u32);
    let layouts: [(L, L, bool); 3] = [
        (
            (203, 77, 224, 1, 1, 0, 255),
            (203, 77, 203, 1, 1, 0, 255),
            true,
        ),
        (
            (64, 45, 160, 2, 2, 6, 1023),
            (64, 45, 64, 1, 1, 0, 255),
            false,
        ),
        (
            (37, 29, 148, 4, 4, 0, 255),
            (37, 29, 148, 4, 4, 0, 255),
            true,
        ),
    ];
    // Correlated inputs: the distorted sample is the reference's plus a little noise.
    let mut host = Vec::new();
    for (a, b, _) in &layouts {
        let mut ra = vec![0u8; (a.2 * a.1) as usize];
        let mut rb = vec![0u8; (b.2 * b.1) as usize];
        for y in 0..a.1 as usize {
            for x in 0..a.0 as usize {
                let v = ((x * 3 + y * 5) % 200) as u32 + r.next_u32() % 40;
                let n = r.next_u32() % 21;
                let (ia, ib) = (
                    y * a.2 as usize + x * a.3 as usize,
                    y * b.2 as usize + x * b.3 as usize,
                );
                if a.4 == 4 {
                    let fa = v as f32 + 0.25 * (r.next_u32() % 4) as f32;
                    ra[ia..ia + 4].copy_from_slice(&fa.to_le_bytes());
                    rb[ib..ib + 4].copy_from_slice(&(fa + n as f32 - 10.0).max(0.0).to_le_bytes());
                } else if a.4 == 2 {
                    let va = (v * 4 + r.next_u32() % 4) << a.5;
                    ra[ia..ia + 2].copy_from_slice(&(va as u16).to_le_bytes());
                    rb[ib] = (v + n).min(255) as u8;
                } else {
                    ra[ia] = v as u8;
                    rb[ib] = (v + n).min(255) as u8;
                }
            }
        }
        host.push((ra, rb));
    }
    let chan = |ptr: u64, l: &L| Channel {
        ptr,
        pitch: l.2,
        step: l.3,
        sample_bytes: if l.4 == 4 { F32_SAMPLES } else { l.4 },
        shift: l.5,
        max: l.6,
        _pad: 0,
    };
    let pair_at = |c: usize, pa: u64, pb: u64| {
        let (a, b, _) = &layouts[c];
        ChannelPair {
            reference: chan(pa, a),
            distorted: chan(pb, b),
            width: a.0,
            height: a.1,
        }
    };
    let dev: Vec<_> = host
        .iter()
        .map(|(a, b)| Ok((s.clone_htod(a)?, s.clone_htod(b)?)))
        .collect::<Result<_, DriverError>>()?;
    let mut downs = Vec::new();
    for (a, _, pool) in &layouts {
        let n = if *pool {
            (half(a.0) * half(a.1)) as usize
        } else {
            1
        };
        downs.push((s.alloc_zeros::<f32>(n)?, s.alloc_zeros::<f32>(n)?));
    }
    let mut init = vec![0.0f64; RESULT_LEN];
    init.extend(std::iter::repeat_n(7.0, RESULT_LEN));
    let mut out = s.clone_htod(&init)?;
    {
        let mut planes = SsimPlanes {
            count: 3,
            scale: 2,
            ..Default::default()
        };
        let mut guards = Vec::new();
        let (mut gx, mut gy) = (0, 0);
        for (c, ((da, db), (pa, pb))) in dev.iter().zip(downs.iter_mut()).enumerate() {
            let (ga, ra) = DevPtr::of(da, s);
            let (gb, rb) = DevPtr::of(db, s);
            let (a, _, pool) = &layouts[c];
            let (pda, gda) = DevPtrMut::of(pa, s);
            let (pdb, gdb) = DevPtrMut::of(pb, s);
            planes.pairs[c] = ScalePair {
                pair: pair_at(c, ga.as_raw(), gb.as_raw()),
                down_reference: if *pool { pda.as_raw() } else { 0 },
                down_distorted: if *pool { pdb.as_raw() } else { 0 },
                down_width: if *pool { half(a.0) } else { 0 },
                down_height: if *pool { half(a.1) } else { 0 },
                index: (2 - c) as u32,
                _pad: 0,
            };
            let (bx, by) = grid(a.0, a.1, *pool);
            (gx, gy) = (gx.max(bx), gy.max(by));
            guards.push((ra, rb, gda, gdb));
        }
        let (po, _go) = DevPtrMut::of(&mut out, s);
        let cfg = LaunchConfig {
            grid_dim: (gx, gy, 3),
            block_dim: (TILE_W, BLOCK_ROWS, 1),
            shared_mem_bytes: 0,
        };
        unsafe { k.ssim_scale(s, cfg, planes, po, po.wrapping_add(RESULT_LEN))? };
    }
    let got = s.clone_dtoh(&out)?;
    let mut max_err = 0.0f64;
    let mut bad_pool = 0;
    for (c, (ra, rb)) in host.iter().enumerate() {
        let p = pair_at(c, ra.as_ptr() as u64, rb.as_ptr() as u64);
        let want = host_ssim(&p);
        let o = ((2 - c) * SCALES + 2) * 2;
        max_err = max_err
            .max(rel_err(got[o], want.0))
            .max(rel_err(got[o + 1], want.1));
        let (a, _, pool) = &layouts[c];
        if *pool {
            let (gr, gd) = (s.clone_dtoh(&downs[c].0)?, s.clone_dtoh(&downs[c].1)?);
            for j in 0..half(a.1) {
                for i in 0..half(a.0) {
                    let n = (j * half(a.0) + i) as usize;
                    let peak = p.reference.max;
                    let (wr, wd) = unsafe {
                        (
                            pooled(&p.reference, a.0, a.1, i, j, peak),
                            pooled(&p.distorted, a.0, a.1, i, j, peak),
                        )
                    };
                    bad_pool += usize::from(gr[n] != wr) + usize::from(gd[n] != wd);
                }
            }
        }
    }
    let others = got
        .iter()
        .enumerate()
        .filter(|&(i, &v)| i < RESULT_LEN && i % (2 * SCALES) / 2 != 2 && v != 0.0)
        .count();
    let dirty = got[RESULT_LEN..].iter().filter(|&&v| v != 0.0).count();
    if bad_pool + others + dirty > 0 {
        max_err = f64::INFINITY;
    }
    Ok(Outcome {
        elements: 3,
        max_err,
        tolerance: 1e-12,
        note: format!(
            "sums vs host; pooled mismatches {bad_pool}, stray {others}, uncleared {dirty}"
        ),
    })
}
