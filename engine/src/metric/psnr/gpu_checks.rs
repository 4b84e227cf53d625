//! PSNR's kernel (`psnr_sse`) against the host's `psnr::sse_rows`.

use std::sync::Arc;

use cudarc::driver::{CudaStream, DriverError, LaunchConfig};
use gpumetrics_engine::cuda::{DevPtr, DevPtrMut, Kernels};
use gpumetrics_kernels::channel::{Channel, ChannelPair};
use gpumetrics_kernels::psnr::{self, PsnrPlanes};

use crate::common::Rng;
use crate::{Check, Outcome};

/// The checks of this module and the kernels each covers.
pub(crate) const CHECKS: &[(&[&str], Check)] = &[(&["psnr_sse"], psnr_sse)];

crate::gpu_tests! {
    psnr_sse_matches_the_host => "psnr_sse",
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
