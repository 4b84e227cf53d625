//! CAMBI on the CPU: the kernel crate's row functions, parallel over rows with rayon, and
//! its sliding histograms over strips of [`STRIP`] columns (one histogram set per strip,
//! all strips in parallel). Every buffer is allocated once, at the encoding size.

use rayon::prelude::*;

use super::{CAMBI, CambiSettings, Geometry};
use crate::format::FrameLayout;
use crate::frame::PlanePtrs;
use crate::metric::no_reference::{CpuSingle, Input};
use crate::metric::temporal::Restart;
use crate::plan::Plan;
use crate::scores::Scores;
use gpumetrics_kernels::cambi::{self as k, Histograms, Plane16, SCALES, Source};

/// Columns of one strip of the c-values' histograms.
const STRIP: usize = 128;

/// One input's CAMBI state for frames of one layout, and the crate's CAMBI API for the
/// VMAF models that read CAMBI as a feature:
///
/// ```ignore
/// let mut cambi = CambiCpu::new(&plan.distorted, &CambiSettings::vmaf_v1())?;
/// let feature = cambi.score(&distorted_frame); // libvmaf's Cambi_feature_cambi_score
/// ```
///
/// [`CambiCpu::new`] checks the layout (YUV or gray luma, 8 to 16 bits; a side of at
/// least 216, as libvmaf) and the settings, and allocates every buffer; it returns the
/// reason (as the metric's note says it) when CAMBI cannot measure these frames.
/// [`CambiCpu::score`] measures the luma of one validated host frame of that layout (the
/// distorted frame: CAMBI needs no reference) and returns libvmaf's score, already capped
/// at the settings' `max_val`. It keeps no state between frames.
pub(crate) struct CambiCpu {
    g: Geometry,
    /// The luma channel of the layout and its largest value.
    luma: crate::format::ChannelSpec,
    peak: u32,
    /// Source rows and columns of the encoding size's samples.
    rows: Vec<u32>,
    cols: Vec<u32>,
    /// Two working planes, two masks (encoding size, rows `enc_width` apart).
    plane: Vec<u16>,
    spare: Vec<u16>,
    mask: Vec<u16>,
    mask_spare: Vec<u16>,
    flats: Vec<u8>,
    c_values: Vec<f32>,
    cells: Vec<u16>,
    recip: Vec<f32>,
}

impl CambiCpu {
    /// The state for frames of `layout` with `settings`; `Err` says why CAMBI cannot
    /// measure them (RGB, too small, a window too large).
    pub(crate) fn new(layout: &FrameLayout, settings: &CambiSettings) -> Result<CambiCpu, String> {
        if let Some(why) = super::why_not(layout, settings) {
            return Err(why);
        }
        let format = layout.format;
        let g = Geometry::new(layout.width, layout.height, format.depth(), settings)?;
        let luma = format.channels()[0];
        debug_assert_eq!(luma.name, "y");
        let (w, h) = (g.enc_width as usize, g.enc_height as usize);
        let mut rows = vec![0; h];
        k::nearest_positions(g.height, &mut rows);
        let mut cols = vec![0; w];
        k::nearest_positions(g.width, &mut cols);
        Ok(CambiCpu {
            luma,
            peak: format.peak(),
            rows,
            cols,
            plane: vec![0; w * h],
            spare: vec![0; w * h],
            mask: vec![0; w * h],
            mask_spare: vec![0; w * h],
            flats: vec![0; w * h],
            c_values: vec![0.0; w * h],
            cells: vec![0; g.band_size as usize * w],
            recip: super::reciprocals(),
            g,
        })
    }

    /// CAMBI of the luma of `frame`, capped at the settings' `max_val`.
    ///
    /// `frame` must be a host frame validated against the layout given to
    /// [`CambiCpu::new`] (every row of its luma readable).
    pub(crate) fn score(&mut self, frame: &PlanePtrs) -> f64 {
        let g = &self.g;
        let stride = g.enc_width as usize;
        let (ew, eh) = (g.enc_width, g.enc_height);
        let source = Source {
            chan: frame.channel(&self.luma, self.peak),
            depth: g.depth,
            _pad: 0,
        };
        let cols = &self.cols;
        self.plane
            .par_chunks_mut(stride)
            .zip(self.rows.par_iter())
            .for_each(|(out, &sy)| {
                let row = (source.chan.ptr + sy as u64 * source.chan.pitch as u64) as *const u8;
                // SAFETY: the frame was validated against the layout: source row sy <
                // height is readable at every column < width, which `cols` holds; `out`
                // holds enc_width values, as `cols`.
                unsafe { k::convert_row(&source, row, cols.as_ptr(), ew, out.as_mut_ptr()) };
            });
        if g.anti_dither {
            let p = Plane16::new(self.plane.as_ptr(), ew, ew, eh);
            self.spare
                .par_chunks_mut(stride)
                .enumerate()
                // SAFETY: p is the full plane; the row holds enc_width values.
                .for_each(|(y, out)| unsafe { k::anti_dither_row(&p, y as u32, out.as_mut_ptr()) });
            std::mem::swap(&mut self.plane, &mut self.spare);
        }
        let p = Plane16::new(self.plane.as_ptr(), ew, ew, eh);
        self.flats
            .par_chunks_mut(stride)
            .enumerate()
            // SAFETY: as above, one row of flatness values.
            .for_each(|(y, out)| unsafe { k::flat_row(&p, y as u32, out.as_mut_ptr()) });
        let (flats, index) = (self.flats.as_ptr() as usize, g.mask_index);
        self.mask
            .par_chunks_mut(stride)
            .enumerate()
            .for_each(|(y, out)| {
                // SAFETY: flats holds enc_width·enc_height values, the row enc_width.
                unsafe {
                    k::mask_row(
                        flats as *const u8,
                        ew,
                        eh,
                        y as u32,
                        index,
                        out.as_mut_ptr(),
                    )
                }
            });

        let mut scores = [0.0; SCALES];
        let (mut w, mut h) = (ew, eh);
        for (s, score) in scores.iter_mut().enumerate() {
            let (sw, sh) = self.g.scales[s];
            if (sw, sh) != (w, h) {
                decimate(&self.plane, &mut self.spare, stride, w, h, sh);
                std::mem::swap(&mut self.plane, &mut self.spare);
                decimate(&self.mask, &mut self.mask_spare, stride, w, h, sh);
                std::mem::swap(&mut self.mask, &mut self.mask_spare);
                (w, h) = (sw, sh);
            }
            let p = Plane16::new(self.plane.as_ptr(), ew, w, h);
            self.spare[..stride * h as usize]
                .par_chunks_mut(stride)
                .enumerate()
                // SAFETY: p is this scale's w×h plane, the row holds w ≤ enc_width values.
                .for_each(|(y, out)| unsafe { k::mode_row(&p, y as u32, out.as_mut_ptr()) });
            std::mem::swap(&mut self.plane, &mut self.spare);
            *score = self.scale_score(w, h);
        }
        k::combine(&scores, self.g.window).min(self.g.max_val)
    }

    /// The mean of the top-k c-values of the current `w`×`h` scale.
    fn scale_score(&mut self, w: u32, h: u32) -> f64 {
        let g = &self.g;
        let stride = g.enc_width;
        let img = Plane16::new(self.plane.as_ptr(), stride, w, h);
        let mask = Plane16::new(self.mask.as_ptr(), stride, w, h);
        let contrast = g.contrast(&self.recip);
        let half = g.window / 2;
        let n = (w * h) as usize;
        let band = g.band_size as usize;
        let values = &mut self.c_values[..n];
        values
            .par_chunks_mut(STRIP * h as usize)
            .zip(self.cells[..band * w as usize].par_chunks_mut(STRIP * band))
            .enumerate()
            .for_each(|(i, (out, cells))| {
                let x0 = (i * STRIP) as u32;
                let x1 = (x0 + STRIP as u32).min(w);
                let mut hist = Histograms { cells, x0, x1 };
                // SAFETY: img and mask are this scale's planes; x0 < x1 ≤ w.
                unsafe { hist.c_values(&img, &mask, half, &contrast, out) };
            });
        let kept = k::topk_len(g.topk, n as u32) as usize;
        if kept < n {
            values.select_nth_unstable_by(kept - 1, |a, b| b.total_cmp(a));
        }
        let sum: f64 = values[..kept].iter().map(|&v| v as f64).sum();
        sum / kept as f64
    }
}

/// The next scale of `src` (`w`×`h`, rows `stride` apart) into `dst`: `next_h` rows.
fn decimate(src: &[u16], dst: &mut [u16], stride: usize, w: u32, h: u32, next_h: u32) {
    let p = Plane16::new(src.as_ptr(), stride as u32, w, h);
    dst[..stride * next_h as usize]
        .par_chunks_mut(stride)
        .enumerate()
        // SAFETY: row 2y < h of p; the row holds ⌈w/2⌉ ≤ stride values.
        .for_each(|(y, out)| unsafe { k::decimate_row(&p, y as u32, out.as_mut_ptr()) });
}

/// The standalone metric's side state.
pub(super) struct Single(pub CambiCpu);

impl CpuSingle for Single {
    fn measure(&mut self, _plan: &Plan, side: Input, frame: &PlanePtrs, out: &mut Scores) {
        out.push(side.field(CAMBI), self.0.score(frame));
    }
}

impl Restart for Single {
    fn restart(&mut self) {}
}
