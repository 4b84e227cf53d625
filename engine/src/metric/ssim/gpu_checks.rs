//! SSIM's kernel (`ssim_scale`) against the host build of the same per-pixel functions.

use std::sync::Arc;

use cudarc::driver::{CudaStream, DriverError, LaunchConfig};
use gpumetrics_engine::cuda::{DevPtr, DevPtrMut, Kernels};
use gpumetrics_kernels::channel::{Channel, ChannelPair};

use crate::common::Rng;
use crate::{Check, Outcome, rel_err};

/// The checks of this module and the kernels each covers.
pub(crate) const CHECKS: &[(&[&str], Check)] = &[(&["ssim_scale"], ssim_scale)];

crate::gpu_tests! {
    ssim_scale_matches_the_host => "ssim_scale",
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
