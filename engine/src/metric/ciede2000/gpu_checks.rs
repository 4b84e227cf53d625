//! CIEDE2000's kernel (`ciede2000_sums`) against the host's `ciede2000::rows`: a module of
//! the `cuda_kernels` test binary (engine/tests/cuda_kernels/main.rs), not of the library.

use std::sync::Arc;

use cudarc::driver::{CudaStream, DriverError, LaunchConfig};
use gpumetrics_engine::cuda::{DevPtr, DevPtrMut, Kernels};
use gpumetrics_kernels::channel::{Channel, ChannelPair};
use gpumetrics_kernels::ciede2000::{self, CiedePlanes};

use crate::common::Rng;
use crate::{Check, Outcome};

/// The checks of this module and the kernels each covers.
pub(crate) const CHECKS: &[(&[&str], Check)] = &[(&["ciede2000_sums"], ciede2000_sums)];

crate::gpu_tests! {
    ciede2000_sums_match_the_host => "ciede2000_sums",
}

/// One frame pair's layout: luma size, bytes per sample, chroma subsampling shift.
struct Case {
    w: u32,
    h: u32,
    bytes: u32,
    depth: u32,
    sub: u32,
}

/// An odd-size 8-bit 4:2:0 pair and a 10-bit 4:4:4 one (16-bit containers), padded
/// pitches, the distorted frame the reference plus small noise (and some equal pixels);
/// the device's powers are hardware approximations, so the sums agree to a relative 1e-4.
fn ciede2000_sums(k: &Kernels, s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    let cases = [
        Case {
            w: 333,
            h: 211,
            bytes: 1,
            depth: 8,
            sub: 1,
        },
        Case {
            w: 160,
            h: 97,
            bytes: 2,
            depth: 10,
            sub: 0,
        },
    ];
    let mut worst = 0.0f64;
    let mut notes = Vec::new();
    for c in &cases {
        let max = (1u32 << c.depth) - 1;
        let (cw, ch) = (c.w.div_ceil(1 << c.sub), c.h.div_ceil(1 << c.sub));
        let sizes = [(c.w, c.h), (cw, ch), (cw, ch)];
        // Per plane: pitch (padded), reference bytes, distorted bytes.
        let mut planes = Vec::new();
        for &(w, h) in &sizes {
            let pitch = w * c.bytes + 64;
            let mut a = vec![0u8; (pitch * h) as usize];
            let mut b = a.clone();
            for y in 0..h {
                for x in 0..w {
                    let v = (r.bytes(2)[0] as u32 * max / 255).min(max);
                    let noise = r.bytes(1)[0] % 7;
                    let d = if noise == 3 {
                        v
                    } else {
                        (v + noise as u32).saturating_sub(3).min(max)
                    };
                    let at = (y * pitch + x * c.bytes) as usize;
                    a[at..at + c.bytes as usize]
                        .copy_from_slice(&v.to_le_bytes()[..c.bytes as usize]);
                    b[at..at + c.bytes as usize]
                        .copy_from_slice(&d.to_le_bytes()[..c.bytes as usize]);
                }
            }
            planes.push((pitch, a, b));
        }
        let chan = |ptr: u64, pitch: u32| Channel {
            ptr,
            pitch,
            step: c.bytes,
            sample_bytes: c.bytes,
            shift: 0,
            max,
            _pad: 0,
        };
        let describe = |ptrs: &[(u64, u64)]| {
            let pair = |i: usize| ChannelPair {
                reference: chan(ptrs[i].0, planes[i].0),
                distorted: chan(ptrs[i].1, planes[i].0),
                width: sizes[i].0,
                height: sizes[i].1,
            };
            CiedePlanes {
                y: pair(0),
                u: pair(1),
                v: pair(2),
                sub_x: c.sub,
                sub_y: c.sub,
                depth: c.depth,
                _pad: 0,
            }
        };
        let host_ptrs: Vec<(u64, u64)> = planes
            .iter()
            .map(|(_, a, b)| (a.as_ptr() as u64, b.as_ptr() as u64))
            .collect();
        // SAFETY: the planes hold every row and sample the description addresses.
        let want = unsafe { ciede2000::rows(&describe(&host_ptrs), 0, c.h) };
        let dev: Vec<_> = planes
            .iter()
            .map(|(_, a, b)| Ok((s.clone_htod(a)?, s.clone_htod(b)?)))
            .collect::<Result<_, DriverError>>()?;
        // Slot 0 accumulates; slot 1 starts dirty and must come back cleared.
        let mut out = s.clone_htod(&[0u64, 7])?;
        {
            let mut guards = Vec::new();
            let mut ptrs = Vec::new();
            for (da, db) in &dev {
                let (pa, ga) = DevPtr::of(da, s);
                let (pb, gb) = DevPtr::of(db, s);
                ptrs.push((pa.as_raw(), pb.as_raw()));
                guards.push((ga, gb));
            }
            let (po, _go) = DevPtrMut::of(&mut out, s);
            let cfg = LaunchConfig {
                grid_dim: (64, 1, 1),
                block_dim: (ciede2000::BLOCK, 1, 1),
                shared_mem_bytes: 0,
            };
            unsafe { k.ciede2000_sums(s, cfg, describe(&ptrs), po, po.wrapping_add(1))? };
        }
        let got = s.clone_dtoh(&out)?;
        let err = (got[0] as f64 - want as f64).abs() / (want as f64).max(1.0);
        worst = worst.max(if got[1] == 0 { err } else { f64::INFINITY });
        notes.push(format!(
            "{}x{} {}-bit: {} vs host {want}",
            c.w, c.h, c.depth, got[0]
        ));
    }
    Ok(Outcome {
        elements: cases.len(),
        max_err: worst,
        tolerance: 1e-4,
        note: notes.join("; "),
    })
}
