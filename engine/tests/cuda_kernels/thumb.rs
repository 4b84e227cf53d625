//! The live alignment's thumbnail kernel (`thumb_cells`) against the host's cell sums
//! (`gpumetrics_kernels::thumb::cell_sum`) on random frames: 8-bit gray with odd sizes and
//! padded rows, 16-bit samples with a shift (P010's luma), packed RGBA (three weighted
//! channels), and frames smaller than the grid (empty cells).
//!
//! Tolerance: none. Both sides add the same integers.

use std::sync::Arc;

use cudarc::driver::{CudaStream, DriverError, LaunchConfig};
use gpumetrics_engine::cuda::{DevPtr, DevPtrMut, Kernels};
use gpumetrics_kernels::channel::Channel;
use gpumetrics_kernels::thumb::{self, BLOCK, CELLS, COLS, ROWS, ThumbFrame};

use crate::common::Rng;
use crate::{Check, Outcome};

/// The checks of this module and the kernels each covers.
pub(crate) const CHECKS: &[(&[&str], Check)] = &[(&["thumb_cells"], cells)];

crate::gpu_tests! {
    thumb_cells_matches_the_host => "thumb_cells",
}

/// A frame: width, height, bytes per sample, samples per pixel (1 or 4: RGBA), shift,
/// depth, row padding in bytes.
const CASES: &[(u32, u32, u32, u32, u32, u32, u32)] = &[
    (1920, 1080, 1, 1, 0, 8, 64),
    (333, 101, 1, 1, 0, 8, 3),
    (640, 360, 2, 1, 6, 10, 0),
    (97, 55, 4, 4, 0, 8, 4),
    (20, 9, 1, 1, 0, 8, 0),
];

fn cells(k: &Kernels, s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    let mut elements = 0;
    let mut max_err = 0f64;
    let mut out = s.alloc_zeros::<u64>(CELLS)?;
    for &(w, h, bytes, per_pixel, shift, depth, pad) in CASES {
        let (sample_bytes, step) = if per_pixel == 4 {
            (1, 4)
        } else {
            (bytes, bytes)
        };
        let pitch = w * step + pad;
        let data: Vec<u8> = (0..(pitch * h) as usize)
            .map(|_| r.f32(0.0, 255.99) as u8)
            .collect();
        let dev = s.clone_htod(&data)?;
        let channel = |ptr: u64, offset: u64| Channel {
            ptr: ptr + offset,
            pitch,
            step,
            sample_bytes,
            shift,
            max: (1 << depth) - 1,
            _pad: 0,
        };
        let frame = |ptr: u64| {
            let mut f = ThumbFrame {
                width: w,
                height: h,
                ..ThumbFrame::default()
            };
            if per_pixel == 4 {
                f.chans = [channel(ptr, 0), channel(ptr, 1), channel(ptr, 2)];
                f.weights = [1, 2, 1];
                f.count = 3;
            } else {
                f.chans[0] = channel(ptr, 0);
                f.weights = [1, 0, 0];
                f.count = 1;
            }
            f
        };
        let host = frame(data.as_ptr() as u64);
        {
            let (p, _g) = DevPtr::of(&dev, s);
            let (o, _go) = DevPtrMut::of(&mut out, s);
            let cfg = LaunchConfig {
                grid_dim: (COLS, ROWS, 1),
                block_dim: (BLOCK, 1, 1),
                shared_mem_bytes: 0,
            };
            unsafe { k.thumb_cells(s, cfg, frame(p.as_raw()), o)? };
        }
        let got = s.clone_dtoh(&out)?;
        for cy in 0..ROWS {
            for cx in 0..COLS {
                // SAFETY: `data` holds `h` rows of `pitch` bytes.
                let want = unsafe { thumb::cell_sum(&host, cx, cy) };
                let i = (cy * COLS + cx) as usize;
                max_err = max_err.max((got[i] as f64 - want as f64).abs());
                elements += 1;
            }
        }
    }
    Ok(Outcome {
        elements,
        max_err,
        tolerance: 0.0,
        note: "integer sums, bit-exact".into(),
    })
}
