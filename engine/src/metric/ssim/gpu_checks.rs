//! SSIM's kernels (`ssim_scale`; `vmaf_ssim_rows` and `vmaf_ssim_map`, libvmaf's float SSIM
//! of `aom-ssim-db`) against the host build of the same per-pixel functions.

use std::sync::Arc;

use cudarc::driver::{CudaStream, DriverError, LaunchConfig};
use gpumetrics_engine::cuda::{DevPtr, DevPtrMut, Kernels};
use gpumetrics_kernels::channel::{Channel, ChannelPair};

use crate::common::Rng;
use crate::{Check, Outcome, rel_err};

/// The checks of this module and the kernels each covers.
pub(crate) const CHECKS: &[(&[&str], Check)] = &[
    (&["ssim_scale"], ssim_scale),
    (
        &["vmaf_ssim_rows", "vmaf_ssim_map", "vmaf_ssim_down"],
        vmaf_ssim,
    ),
];

crate::gpu_tests! {
    ssim_scale_matches_the_host => "ssim_scale",
    vmaf_ssim_matches_the_host => "vmaf_ssim_map",
}

/// The engine check of the AOM CTC set, outside `CHECKS` (which maps each kernel to one
/// check): the float SSIMs are this folder's, the set's other fields come along.
#[test]
#[ignore = "needs a CUDA GPU"]
fn aom_ctc_cuda_engine_matches_the_cpu_engine() {
    crate::run("aom-ctc (engine)", aom_ctc_engine);
}

/// `aom-ctc` on the CUDA engine against the CPU engine, host frames, four pairs in a row
/// (VMAF holds one back; the last comes with `finish`) at 8 bits 4:2:0 of an odd size, 10
/// bits 4:2:0 and 8 bits 4:4:4, the third pair identical frames (the capped values): the
/// set's own fields (the others have their metrics' engine checks, with their tolerances)
/// within 1e-6 relative (the float SSIMs' sums in another order on the GPU).
fn aom_ctc_engine(_k: &Kernels, _s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    use gpumetrics_engine::{BackendChoice, Engine, EngineConfig, FrameLayout, PixelFormat};
    let set = gpumetrics_engine::MetricSet::named("aom-ctc").expect("a named set");
    const TOLERANCE: f64 = 1e-6;
    let (mut max_err, mut elements, mut notes) = (0f64, 0, Vec::new());
    for (format, w, h) in [
        (PixelFormat::I420, 333, 199),
        (PixelFormat::I420_10Le, 320, 240),
        (PixelFormat::Y444, 256, 192),
    ] {
        let layout = FrameLayout {
            format,
            width: w,
            height: h,
        };
        let [mut gpu, mut cpu] = [BackendChoice::Cuda, BackendChoice::Cpu].map(|backend| {
            let cfg = EngineConfig {
                metrics: set,
                backend,
                ..Default::default()
            };
            Engine::new(&cfg, layout, layout).expect("an engine")
        });
        assert_eq!(gpu.backend_name(), "cuda");
        let depth = format.depth();
        let (mut got, mut want) = (Vec::new(), Vec::new());
        for f in 0..4 {
            let mut fill = |i: usize| {
                let b = r.next_u32() as u8;
                if depth == 10 && i % 2 == 1 { b & 3 } else { b }
            };
            let a = crate::common::OwnedFrame::new(format, w, h, &mut fill);
            let noise = r.bytes(a.data.len());
            let b = crate::common::OwnedFrame::new(format, w, h, |i| {
                if f == 2 || (depth > 8 && i % 2 == 1) {
                    a.data[i]
                } else {
                    a.data[i].saturating_add(noise[i] % 7).saturating_sub(3)
                }
            });
            got.extend(gpu.push(&a.host(), &b.host()).expect("cuda scores"));
            want.extend(cpu.push(&a.host(), &b.host()).expect("cpu scores"));
        }
        got.extend(gpu.finish().expect("cuda scores"));
        want.extend(cpu.finish().expect("cpu scores"));
        assert_eq!(got.len(), want.len());
        const FIELDS: [&str; 7] = [
            "aom-psnr-y",
            "aom-psnr-u",
            "aom-psnr-v",
            "aom-ssim-db",
            "aom-ms-ssim-db",
            "vmaf",
            "vmaf-neg",
        ];
        for (i, (g, c)) in got.iter().zip(&want).enumerate() {
            for (field, c) in c.iter().filter(|(f, _)| FIELDS.contains(f)) {
                let e = match g.get(field) {
                    Some(g) if g == c => 0.0,
                    Some(g) => rel_err(g, c),
                    None => f64::INFINITY,
                };
                max_err = max_err.max(if e.is_nan() { f64::INFINITY } else { e });
                elements += 1;
                if e > TOLERANCE {
                    notes.push(format!(
                        "{} {w}x{h} pair {i} {field}: {:?} (cpu {c})",
                        format.name(),
                        g.get(field)
                    ));
                }
            }
        }
    }
    Ok(Outcome {
        elements,
        max_err,
        tolerance: TOLERANCE,
        note: notes.join("; "),
    })
}

/// libvmaf's float SSIM and MS-SSIM (`aom-ssim-db`, `aom-ms-ssim-db`): an odd-size 8-bit
/// pair and a 10-bit one (16-bit containers, padded pitches, the distorted frame the
/// reference plus noise, flat areas where the covariance rounds below 0). The horizontal
/// pass's planes and the next MS-SSIM scale bit for bit (the same f32 products and f64
/// sums), the map's four sums within 1e-12 (another summation order); the other result
/// slot must come back cleared.
fn vmaf_ssim(k: &Kernels, s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    use gpumetrics_kernels::ssim::float::{
        DOWN_TILE, Decimation, PLANES, SUMS, down, map_values, store_decimated, store_row_sums,
    };
    use gpumetrics_kernels::ssim::{FLOAT_BLOCK, FloatSsim, valid};
    let mut worst = 0.0f64;
    let mut notes = Vec::new();
    for (w, h, bytes, depth) in [(333u32, 199u32, 1u32, 8u32), (160, 97, 2, 10)] {
        let max = (1u32 << depth) - 1;
        let pitch = w * bytes + 32;
        let mut a = vec![0u8; (pitch * h) as usize];
        let mut b = a.clone();
        for y in 0..h {
            for x in 0..w {
                // A ramp with noise, flat and equal in the left quarter.
                let v = if x < w / 4 {
                    max / 3
                } else {
                    ((x + y) * max / (w + h) + r.bytes(1)[0] as u32 % 5).min(max)
                };
                let d = (v + r.bytes(1)[0] as u32 % 9).saturating_sub(4).min(max);
                let d = if x < w / 4 { v } else { d };
                let at = (y * pitch + x * bytes) as usize;
                let n = bytes as usize;
                a[at..at + n].copy_from_slice(&v.to_le_bytes()[..n]);
                b[at..at + n].copy_from_slice(&d.to_le_bytes()[..n]);
            }
        }
        let chan = |ptr: u64| Channel {
            ptr,
            pitch,
            step: bytes,
            sample_bytes: bytes,
            shift: 0,
            max,
            _pad: 0,
        };
        let pair = |ra: u64, rb: u64| ChannelPair {
            reference: chan(ra),
            distorted: chan(rb),
            width: w,
            height: h,
        };
        let divisor = (1u32 << (depth - 8)) as f32;
        let describe = |ra: u64, rb: u64, rows: u64| FloatSsim {
            pair: pair(ra, rb),
            divisor,
            _pad: 0,
            rows,
        };
        let decimation = |ra: u64, rb: u64, dr: u64, dd: u64| Decimation {
            pair: pair(ra, rb),
            divisor,
            _pad: 0,
            down_reference: dr,
            down_distorted: dd,
        };
        let n = valid(w) as usize * h as usize;
        let nd = down(w) as usize * down(h) as usize;
        let mut host_rows = vec![0f32; PLANES * n];
        let (mut host_dr, mut host_dd) = (vec![0f32; nd], vec![0f32; nd]);
        let (pa, pb) = (a.as_ptr() as u64, b.as_ptr() as u64);
        let hp = describe(pa, pb, host_rows.as_mut_ptr() as u64);
        let hd = decimation(
            pa,
            pb,
            host_dr.as_mut_ptr() as u64,
            host_dd.as_mut_ptr() as u64,
        );
        let mut want = [0.0f64; SUMS];
        // SAFETY: the frames and the planes hold what the descriptions address.
        unsafe {
            for y in 0..h {
                for x in 0..valid(w) {
                    store_row_sums(&hp, x, y);
                }
            }
            for y in 0..valid(h) {
                for x in 0..valid(w) {
                    let v = map_values(&hp, x, y);
                    for i in 0..SUMS {
                        want[i] += v[i];
                    }
                }
            }
            for y in 0..down(h) {
                for x in 0..down(w) {
                    store_decimated(&hd, x, y);
                }
            }
        }
        let (da, db) = (s.clone_htod(&a)?, s.clone_htod(&b)?);
        let mut rows = s.alloc_zeros::<f32>(PLANES * n)?;
        let mut dr = s.alloc_zeros::<f32>(nd)?;
        let mut dd = s.alloc_zeros::<f32>(nd)?;
        let mut init = vec![0f64; SUMS];
        init.extend(std::iter::repeat_n(7.0, SUMS));
        let mut out = s.clone_htod(&init)?;
        {
            let (pa, _ga) = DevPtr::of(&da, s);
            let (pb, _gb) = DevPtr::of(&db, s);
            let (pr, _gr) = DevPtrMut::of(&mut rows, s);
            let (pdr, _gdr) = DevPtrMut::of(&mut dr, s);
            let (pdd, _gdd) = DevPtrMut::of(&mut dd, s);
            let (po, _go) = DevPtrMut::of(&mut out, s);
            let p = describe(pa.as_raw(), pb.as_raw(), pr.as_raw());
            let dec = decimation(pa.as_raw(), pb.as_raw(), pdr.as_raw(), pdd.as_raw());
            let cfg = LaunchConfig {
                grid_dim: (64, 1, 1),
                block_dim: (FLOAT_BLOCK, 1, 1),
                shared_mem_bytes: 0,
            };
            unsafe {
                k.vmaf_ssim_rows(s, cfg, p)?;
                k.vmaf_ssim_map(s, cfg, p, po, po.wrapping_add(SUMS))?;
                let tiles = LaunchConfig {
                    grid_dim: (down(w).div_ceil(DOWN_TILE), down(h).div_ceil(DOWN_TILE), 1),
                    block_dim: (DOWN_TILE, DOWN_TILE, 1),
                    shared_mem_bytes: 0,
                };
                k.vmaf_ssim_down(s, tiles, dec)?;
            }
        }
        let got = s.clone_dtoh(&out)?;
        let same = |g: &[f32], w: &[f32]| g.iter().zip(w).all(|(g, w)| g.to_bits() == w.to_bits());
        let rows_equal = same(&s.clone_dtoh(&rows)?, &host_rows);
        let down_equal = same(&s.clone_dtoh(&dr)?, &host_dr) && same(&s.clone_dtoh(&dd)?, &host_dd);
        let cleared = got[SUMS..].iter().all(|&v| v == 0.0);
        let err = (0..SUMS)
            .map(|i| rel_err(got[i], want[i]))
            .fold(0.0, f64::max);
        worst = worst.max(if cleared && rows_equal && down_equal {
            err
        } else {
            f64::INFINITY
        });
        notes.push(format!(
            "{w}x{h} {depth}-bit: l·c·s {} vs host {} (planes {}, next scale {})",
            got[3],
            want[3],
            if rows_equal { "equal" } else { "differ" },
            if down_equal { "equal" } else { "differs" },
        ));
    }
    Ok(Outcome {
        elements: 2,
        max_err: worst,
        tolerance: 1e-12,
        note: notes.join("; "),
    })
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
