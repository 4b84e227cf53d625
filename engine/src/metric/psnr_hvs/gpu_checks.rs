//! PSNR-HVS's kernels (`psnr_hvs_terms`, `psnr_hvs_scan`, `psnr_hvs_sums`) against the host
//! build of the same per-block functions, and the CUDA engine against the CPU engine.
//!
//! Tolerance: every error term is the same `f32` on both sides (the same single-precision
//! operations in the same order; the PTX has no contracted multiply-adds), so the terms
//! must be equal to the bit. The sums of terms are f64 in another order (per thread block
//! and through the scan on the GPU, block after block on the host): equal to 1e-12
//! relative. The plane sums follow from those prefixes; a prefix that lands on the other
//! side of a power of two by those 1e-12 would round a term to another spacing, which the
//! random inputs here never meet, so they too must agree to 1e-12, and the fields (from
//! f32 plane scores) to 1e-6 relative.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DriverError, LaunchConfig, SyncOnDrop};
use gpumetrics_engine::cuda::{DevPtr, DevPtrMut, Kernels};
use gpumetrics_kernels::channel::{Channel, ChannelPair};
use gpumetrics_kernels::psnr_hvs::{
    self, COEFFS, HvsPlane, HvsPlanes, SCAN_THREADS, TILE, WEIGHTS, blocks_along, tiles,
};

use crate::common::{self, Rng};
use crate::{Check, Outcome, rel_err};

/// The checks of this module and the kernels each covers (one pipeline check: each pass
/// reads what the one before wrote).
pub(crate) const CHECKS: &[(&[&str], Check)] = &[(
    &["psnr_hvs_terms", "psnr_hvs_scan", "psnr_hvs_sums"],
    kernels,
)];

crate::gpu_tests! {
    psnr_hvs_kernels_match_the_host => "psnr_hvs_terms",
}

/// The engine check, outside `CHECKS` (which maps each kernel to one check).
#[test]
#[ignore = "needs a CUDA GPU"]
fn psnr_hvs_cuda_engine_matches_the_cpu_engine() {
    crate::run("psnr_hvs (engine)", engine);
}

/// Relative tolerance of the f64 sums (tile sums, their prefixes, the plane sums).
const SUM_TOLERANCE: f64 = 1e-12;
/// Relative tolerance of the fields.
const TOLERANCE: f64 = 1e-6;

/// One plane of the kernel check: its size and how its samples are stored, for the
/// reference and the distorted input.
struct Case {
    w: u32,
    h: u32,
    reference: Storage,
    distorted: Storage,
}

/// Bytes between samples, bytes per sample, right shift, depth.
#[derive(Clone, Copy)]
struct Storage {
    step: u32,
    bytes: u32,
    shift: u32,
    depth: u32,
}

const PLANAR8: Storage = Storage {
    step: 1,
    bytes: 1,
    shift: 0,
    depth: 8,
};
const LSB10: Storage = Storage {
    step: 2,
    bytes: 2,
    shift: 0,
    depth: 10,
};
const MSB12_INTERLEAVED: Storage = Storage {
    step: 4,
    bytes: 2,
    shift: 4,
    depth: 12,
};

/// The planes, one launch: a plane of more tiles than the scan has threads (2600×1800:
/// 95,347 blocks, 1,490 tiles, so the scan's threads take runs of two), a 10-bit plane
/// compared with an 8-bit one (rescaled), and a 12-bit MSB-aligned interleaved one of odd
/// size.
const CASES: [Case; 3] = [
    Case {
        w: 2600,
        h: 1800,
        reference: PLANAR8,
        distorted: PLANAR8,
    },
    Case {
        w: 173,
        h: 97,
        reference: LSB10,
        distorted: PLANAR8,
    },
    Case {
        w: 85,
        h: 43,
        reference: MSB12_INTERLEAVED,
        distorted: MSB12_INTERLEAVED,
    },
];

/// A channel of `s` at `ptr` with `pitch`.
fn channel(ptr: u64, pitch: u32, s: Storage) -> Channel {
    Channel {
        ptr,
        pitch,
        step: s.step,
        sample_bytes: s.bytes,
        shift: s.shift,
        max: (1 << s.depth) - 1,
        _pad: 0,
    }
}

/// Bytes of a w×h plane of `s` (rows padded by 3 bytes), its values and its pitch: a
/// smooth ramp with noise, or (`from`: values and their largest possible value) that image
/// at this depth with small errors, so that masking both hides and passes errors.
fn image(
    c: &Case,
    s: Storage,
    from: Option<(&[u32], u32)>,
    r: &mut Rng,
) -> (Vec<u8>, Vec<u32>, u32) {
    let pitch = (c.w - 1) * s.step + s.bytes + 3;
    let max = (1u32 << s.depth) - 1;
    let mut bytes = r.bytes((pitch * c.h) as usize);
    let mut values = Vec::with_capacity((c.w * c.h) as usize);
    for y in 0..c.h {
        for x in 0..c.w {
            let i = (y * c.w + x) as usize;
            let v = match from {
                // The reference's value at this depth, give or take a few codes.
                Some((base, base_max)) => {
                    let noise = (r.next_u32() % 9) as i64 - 4;
                    let scaled = base[i] as u64 * max as u64 / base_max as u64;
                    (scaled as i64 + noise * (max as i64 + 1) / 256).clamp(0, max as i64) as u32
                }
                None => ((x * 3 + y * 2) * (max + 1) / 512 + r.next_u32() % (max / 8 + 1)).min(max),
            };
            values.push(v);
            let at = (y * pitch + x * s.step) as usize;
            let stored = v << s.shift;
            bytes[at] = stored as u8;
            if s.bytes == 2 {
                bytes[at + 1] = (stored >> 8) as u8;
            }
        }
    }
    (bytes, values, pitch)
}

/// The host's terms (in the kernels' layout: term `k` of block `b` at `k · blocks + b`),
/// tile sums, prefixes of the tile sums and plane sum, as `cpu.rs` computes them.
struct Host {
    terms: Vec<f32>,
    tile_sums: Vec<f64>,
    tile_prefixes: Vec<f64>,
    sum: f64,
}

fn host(p: &HvsPlane) -> Host {
    let n = p.blocks as usize;
    let w = &WEIGHTS[p.table as usize];
    let mut terms = vec![0f32; n * COEFFS];
    let mut own = vec![0f64; n];
    for b in 0..n {
        // SAFETY: the plane describes host memory of its size.
        unsafe {
            psnr_hvs::block_terms(p, b as u32, w, |k, t| {
                terms[k * n + b] = t;
                own[b] += t as f64;
            })
        };
    }
    let tile_sums: Vec<f64> = own.chunks(TILE as usize).map(|c| c.iter().sum()).collect();
    let mut tile_prefixes = Vec::with_capacity(tile_sums.len());
    let mut before = 0.0;
    for s in &tile_sums {
        tile_prefixes.push(before);
        before += s;
    }
    let mut exact = 0.0;
    let mut sum = 0.0;
    for (b, own) in own.iter().enumerate() {
        sum += psnr_hvs::block_contribution(exact, |k| terms[k * n + b]);
        exact += own;
    }
    Host {
        terms,
        tile_sums,
        tile_prefixes,
        sum,
    }
}

/// `planes` at the device copies of their samples (`dev`), with their terms and tile sums
/// in consecutive regions of the buffers (`sizes`: each plane's lengths), and the guards
/// that keep the addresses bound.
fn bind<'a>(
    planes: &HvsPlanes,
    dev: &'a [(CudaSlice<u8>, CudaSlice<u8>)],
    terms: &'a mut CudaSlice<f32>,
    tile_sums: &'a mut CudaSlice<f64>,
    sizes: &[(usize, usize)],
    s: &'a CudaStream,
) -> (HvsPlanes, Vec<SyncOnDrop<'a>>) {
    let mut planes = *planes;
    let mut guards = Vec::new();
    let (tp, gt) = DevPtrMut::of(terms, s);
    let (sp, gs) = DevPtrMut::of(tile_sums, s);
    guards.extend([gt, gs]);
    let (mut at_terms, mut at_tiles) = (0usize, 0usize);
    for (c, (da, db)) in dev.iter().enumerate() {
        let (pa, ga) = DevPtr::of(da, s);
        let (pb, gb) = DevPtr::of(db, s);
        let p = &mut planes.planes[c];
        p.pair.reference.ptr = pa.as_raw();
        p.pair.distorted.ptr = pb.as_raw();
        p.terms = tp.wrapping_add(at_terms).as_raw();
        p.tile_sums = sp.wrapping_add(at_tiles).as_raw();
        at_terms += sizes[c].0;
        at_tiles += sizes[c].1;
        guards.extend([ga, gb]);
    }
    (planes, guards)
}

/// The three passes over the three planes of `CASES`, as the engine launches them: terms
/// to the bit, tile sums after pass 1 and their prefixes after pass 2 and the plane sums
/// to `SUM_TOLERANCE` of the host's, and the other result slot cleared.
fn kernels(k: &Kernels, s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    let mut host_planes = HvsPlanes {
        count: CASES.len() as u32,
        ..Default::default()
    };
    let mut data = Vec::new();
    for (c, case) in CASES.iter().enumerate() {
        let (ra, values, rp) = image(case, case.reference, None, r);
        let base_max = (1 << case.reference.depth) - 1;
        let (da, _, dp) = image(case, case.distorted, Some((&values, base_max)), r);
        let reference = channel(ra.as_ptr() as u64, rp, case.reference);
        let distorted = channel(da.as_ptr() as u64, dp, case.distorted);
        host_planes.planes[c] = HvsPlane {
            pair: ChannelPair {
                reference,
                distorted,
                width: case.w,
                height: case.h,
            },
            blocks_x: blocks_along(case.w),
            blocks: blocks_along(case.w) * blocks_along(case.h),
            table: c as u32,
            ..Default::default()
        };
        data.push((ra, da));
    }
    let want: Vec<Host> = host_planes.planes.iter().map(host).collect();
    let total_terms: usize = want.iter().map(|h| h.terms.len()).sum();
    let total_tiles: usize = want.iter().map(|h| h.tile_sums.len()).sum();
    let mut terms = s.alloc_zeros::<f32>(total_terms)?;
    let mut tile_sums = s.alloc_zeros::<f64>(total_tiles)?;
    // Slots 0..3 accumulate; 3..6 start dirty and must come back cleared.
    let mut out = s.clone_htod(&[0f64, 0.0, 0.0, 7.0, 7.0, 7.0])?;
    let dev: Vec<_> = data
        .iter()
        .map(|(a, b)| Ok((s.clone_htod(a)?, s.clone_htod(b)?)))
        .collect::<Result<_, DriverError>>()?;
    let grid_x = host_planes
        .planes
        .iter()
        .map(|p| tiles(p.blocks))
        .max()
        .unwrap();
    let per_block = LaunchConfig {
        grid_dim: (grid_x, 1, 3),
        block_dim: (TILE, 1, 1),
        shared_mem_bytes: 0,
    };
    let scan = LaunchConfig {
        grid_dim: (1, 1, 3),
        block_dim: (SCAN_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    let sizes: Vec<(usize, usize)> = want
        .iter()
        .map(|h| (h.terms.len(), h.tile_sums.len()))
        .collect();
    {
        let (planes, _guards) = bind(&host_planes, &dev, &mut terms, &mut tile_sums, &sizes, s);
        unsafe { k.psnr_hvs_terms(s, per_block, planes)? };
    }
    let got_tile_sums = s.clone_dtoh(&tile_sums)?;
    {
        let (planes, _guards) = bind(&host_planes, &dev, &mut terms, &mut tile_sums, &sizes, s);
        let (po, _go) = DevPtrMut::of(&mut out, s);
        unsafe {
            k.psnr_hvs_scan(s, scan, planes)?;
            k.psnr_hvs_sums(s, per_block, planes, po, po.wrapping_add(3))?;
        }
    }
    let got_terms = s.clone_dtoh(&terms)?;
    let got_prefixes = s.clone_dtoh(&tile_sums)?;
    let got_out = s.clone_dtoh(&out)?;
    let mut bad_terms = 0usize;
    let mut max_err = 0f64;
    let mut notes = Vec::new();
    let (mut at_terms, mut at_tiles) = (0usize, 0usize);
    for (c, h) in want.iter().enumerate() {
        let gt = &got_terms[at_terms..][..h.terms.len()];
        let differ = gt
            .iter()
            .zip(&h.terms)
            .filter(|(a, b)| a.to_bits() != b.to_bits())
            .count();
        bad_terms += differ;
        let scale = h.tile_sums.iter().sum::<f64>().max(f64::MIN_POSITIVE);
        let mut sums_err = 0f64;
        for (i, (s, p)) in h.tile_sums.iter().zip(&h.tile_prefixes).enumerate() {
            sums_err = sums_err.max((got_tile_sums[at_tiles + i] - s).abs() / scale);
            sums_err = sums_err.max((got_prefixes[at_tiles + i] - p).abs() / scale);
        }
        let sum_err = rel_err(got_out[c], h.sum);
        max_err = max_err.max(sums_err).max(sum_err);
        notes.push(format!(
            "plane {c} ({}x{}): {differ} of {} terms differ, sums {sums_err:.1e}, plane sum {} \
             (host {})",
            CASES[c].w,
            CASES[c].h,
            h.terms.len(),
            got_out[c],
            h.sum
        ));
        at_terms += h.terms.len();
        at_tiles += h.tile_sums.len();
    }
    let uncleared = got_out[3..].iter().filter(|&&v| v != 0.0).count();
    if uncleared > 0 {
        notes.push(format!("{uncleared} slots of the other pair not cleared"));
    }
    Ok(Outcome {
        elements: total_terms + total_tiles + 3,
        // A differing term or an uncleared slot fails the check whatever the sums.
        max_err: if bad_terms + uncleared > 0 {
            f64::INFINITY
        } else {
            max_err
        },
        tolerance: SUM_TOLERANCE,
        note: notes.join("; "),
    })
}

/// The CUDA engine against the CPU engine: every field, on 8-, 10- and 12-bit 4:2:0,
/// 4:4:4 and NV12 pairs of odd and even sizes (smooth images with small errors, and
/// identical frames: +inf on both).
fn engine(_k: &Kernels, _s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    use gpumetrics_engine::{BackendChoice, Engine, EngineConfig, FrameLayout, PixelFormat};
    let metric = gpumetrics_engine::MetricSet::named("psnr-hvs").expect("psnr-hvs is registered");
    let fields = ["psnr-hvs-y", "psnr-hvs-u", "psnr-hvs-v", "psnr-hvs"];
    let mut max_err = 0f64;
    let mut elements = 0;
    let mut notes = Vec::new();
    for (format, w, h) in [
        (PixelFormat::I420, 333, 199),
        (PixelFormat::I420_10Le, 320, 240),
        (PixelFormat::I420_12Le, 65, 33),
        (PixelFormat::Y444, 64, 64),
        (PixelFormat::Nv12, 1920, 1080),
    ] {
        let engines = [BackendChoice::Cuda, BackendChoice::Cpu].map(|backend| {
            let cfg = EngineConfig {
                metrics: metric,
                backend,
                ..Default::default()
            };
            let layout = FrameLayout {
                format,
                width: w,
                height: h,
            };
            Engine::new(&cfg, layout, layout).expect("an engine")
        });
        let [mut gpu, mut cpu] = engines;
        assert_eq!(gpu.backend_name(), "cuda");
        let depth = format.depth();
        for f in 0..3 {
            // Little-endian samples below 2^depth: a random byte, and the high byte cut.
            let mut fill = |i: usize| {
                let b = r.next_u32() as u8;
                match depth {
                    10 if i % 2 == 1 => b & 3,
                    12 if i % 2 == 1 => b & 15,
                    _ => b,
                }
            };
            let a = common::OwnedFrame::new(format, w, h, &mut fill);
            let b = if f == 2 {
                common::OwnedFrame::new(format, w, h, |i| a.data[i])
            } else {
                // Small errors (±2 codes) in the low bytes; high bytes unchanged, so that
                // samples stay below 2^depth.
                let noise = r.bytes(a.data.len());
                common::OwnedFrame::new(format, w, h, |i| {
                    if depth > 8 && i % 2 == 1 {
                        a.data[i]
                    } else {
                        a.data[i].saturating_add(noise[i] % 5).saturating_sub(2)
                    }
                })
            };
            let got = common::compare_on_device(&mut gpu, &a, &b);
            let want = cpu.compare(&a.host(), &b.host()).expect("cpu scores");
            for field in fields {
                let e = match (got.get(field), want.get(field)) {
                    (Some(g), Some(c)) if g == c => 0.0,
                    (Some(g), Some(c)) => rel_err(g, c),
                    _ => f64::INFINITY,
                };
                max_err = max_err.max(if e.is_nan() { f64::INFINITY } else { e });
                elements += 1;
                if e > TOLERANCE || f == 1 {
                    notes.push(format!(
                        "{} {w}x{h} frame {f} {field}: {:?} (cpu {:?})",
                        format.name(),
                        got.get(field),
                        want.get(field)
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
