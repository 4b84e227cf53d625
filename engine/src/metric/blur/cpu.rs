//! Blur on the CPU: the kernel crate's row functions fill the blurred and the suppressed
//! planes (rows in parallel with rayon), then each block's widths are summed in bands of
//! rows in parallel (the sums are exact, so the band order does not matter).

use rayon::prelude::*;

use super::{BLUR, Settings, pool};
use crate::format::FrameLayout;
use crate::frame::PlanePtrs;
use crate::metric::no_reference::{CpuSingle, Input};
use crate::metric::temporal::Restart;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::blur::{self, Plane};

/// Rows per rayon task of the width sums.
const BAND_ROWS: u32 = 32;

/// One input's state: its planes, allocated once per plan.
pub(super) struct Blur {
    settings: Settings,
    blurred: Vec<u8>,
    suppressed: Vec<u8>,
    means: Vec<f32>,
}

impl Blur {
    pub(super) fn new(layout: &FrameLayout, settings: Settings) -> Blur {
        let n = layout.width as usize * layout.height as usize;
        Blur {
            settings,
            blurred: vec![0; n],
            suppressed: vec![0; n],
            means: Vec::new(),
        }
    }
}

impl CpuSingle for Blur {
    fn measure(&mut self, plan: &Plan, side: Input, frame: &PlanePtrs, out: &mut Scores) {
        let l = super::luma8(plan, side, frame);
        let p = self.settings.params(l);
        let (w, h) = (l.width, l.height);
        if p.cols == 0 || p.rows == 0 {
            // No whole block (or an empty frame): FFmpeg's 0/0, no field.
            return;
        }
        self.blurred
            .par_chunks_mut(w as usize)
            .enumerate()
            // SAFETY: the backend validated the frame against the plan's layout; each row
            // holds w bytes.
            .for_each(|(y, row)| unsafe { blur::gauss_row(&l, y as u32, row.as_mut_ptr()) });
        let b = Plane {
            ptr: self.blurred.as_ptr(),
            w,
            h,
        };
        // Raw pointers are not Send: the tasks rebuild the plane from an address.
        let baddr = b.ptr as usize;
        self.suppressed
            .par_chunks_mut(w as usize)
            .enumerate()
            .for_each(|(y, row)| {
                let b = Plane {
                    ptr: baddr as *const u8,
                    w,
                    h,
                };
                // SAFETY: the blurred plane is complete and w·h bytes; the row holds w.
                unsafe { blur::suppressed_row(&b, y as u32, row.as_mut_ptr()) }
            });
        let naddr = self.suppressed.as_ptr() as usize;
        let bands = p.block_h.div_ceil(BAND_ROWS).max(1);
        let tasks = p.rows * bands;
        let partials: Vec<Vec<(f64, u32)>> = (0..tasks)
            .into_par_iter()
            .map(|t| {
                let (by, band) = (t / bands, t % bands);
                let b = Plane {
                    ptr: baddr as *const u8,
                    w,
                    h,
                };
                let n = Plane {
                    ptr: naddr as *const u8,
                    w,
                    h,
                };
                let mut sums = vec![(0.0f64, 0u32); p.cols as usize];
                let rows = band * BAND_ROWS..((band + 1) * BAND_ROWS).min(p.block_h);
                for r in rows {
                    let y = by * p.block_h + r;
                    for (bx, s) in sums.iter_mut().enumerate() {
                        let x0 = bx as u32 * p.block_w;
                        for x in x0..x0 + p.block_w {
                            // SAFETY: (x, y) lies in a whole block, inside both planes.
                            let v = unsafe { blur::pixel_width(&p, &b, &n, x, y) };
                            if blur::counts(v) {
                                s.0 += v as f64;
                                s.1 += 1;
                            }
                        }
                    }
                }
                sums
            })
            .collect();
        let mut blocks = vec![(0.0f64, 0u32); (p.cols * p.rows) as usize];
        for (t, sums) in partials.iter().enumerate() {
            let by = t as u32 / bands;
            for (bx, s) in sums.iter().enumerate() {
                let b = &mut blocks[(by * p.cols) as usize + bx];
                b.0 += s.0;
                b.1 += s.1;
            }
        }
        if let Some(v) = pool(blocks.into_iter(), self.settings.pct, &mut self.means) {
            out.push(side.field(BLUR), v as f64);
        }
    }
}

impl Restart for Blur {
    fn restart(&mut self) {}
}
