//! A frame's thumbnail ([`Thumbnail`]): the kernel crate's cell sums
//! (`gpumetrics_kernels::thumb`) as means on an 8-bit scale, from a host frame here or a
//! device frame on the GPU ([`super::cuda::Thumbnailer`]).

use crate::error::EngineError;
use crate::format::{ColorFamily, FrameLayout};
use crate::frame::{HostFrame, PlanePtrs};
use gpumetrics_kernels::thumb::{self, CELLS, COLS, ROWS, ThumbFrame};

// `distance` adds the cells eight at a time.
const _: () = assert!(CELLS.is_multiple_of(8));

/// A frame's luma as [`COLS`]×[`ROWS`] cell means on an 8-bit scale, row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct Thumbnail(Box<[f32; CELLS]>);

impl Thumbnail {
    /// The cells, row-major.
    pub fn cells(&self) -> &[f32; CELLS] {
        &self.0
    }

    /// A thumbnail of given cells (tests, and thumbnails made elsewhere).
    pub fn from_cells(cells: [f32; CELLS]) -> Thumbnail {
        Thumbnail(Box::new(cells))
    }

    /// The mean squared difference of the cells: small for the same picture (coding noise
    /// is averaged away), large for pictures that differ where something moved.
    pub fn distance(&self, other: &Thumbnail) -> f32 {
        // Eight running sums, which the compiler keeps in one vector register (a single
        // f32 sum must be added in order, one cell at a time): the search compares
        // thousands of thumbnails per frame.
        let mut sums = [0f32; 8];
        for (a, b) in self.0.chunks_exact(8).zip(other.0.chunks_exact(8)) {
            for i in 0..8 {
                let d = a[i] - b[i];
                sums[i] += d * d;
            }
        }
        sums.iter().sum::<f32>() / CELLS as f32
    }

    /// The thumbnail of the cell sums `sums` of `f` (row-major, as `thumb_cells` writes
    /// them).
    pub(crate) fn of_sums(f: &ThumbFrame, sums: &[u64]) -> Thumbnail {
        let mut cells = [0f32; CELLS];
        for cy in 0..ROWS {
            for cx in 0..COLS {
                let i = (cy * COLS + cx) as usize;
                cells[i] = thumb::mean8(f, cx, cy, sums[i]);
            }
        }
        Thumbnail(Box::new(cells))
    }
}

/// How the thumbnail reads the luma of a frame of `layout` at `ptrs`: the first channel,
/// or R + 2G + B for RGB formats.
pub(crate) fn thumb_frame(layout: &FrameLayout, ptrs: &PlanePtrs) -> ThumbFrame {
    let specs = layout.format.channels();
    let max = layout.format.peak();
    let mut f = ThumbFrame {
        width: layout.width,
        height: layout.height,
        ..ThumbFrame::default()
    };
    if layout.format.family() == ColorFamily::Rgb {
        for (c, spec) in specs.iter().take(3).enumerate() {
            f.chans[c] = ptrs.channel(spec, max);
        }
        f.weights = [1, 2, 1];
        f.count = 3;
    } else {
        f.chans[0] = ptrs.channel(&specs[0], max);
        f.weights = [1, 0, 0];
        f.count = 1;
    }
    f
}

/// The thumbnail of a host frame of `layout`, checked against it first.
pub fn of_host(frame: &HostFrame<'_>, layout: &FrameLayout) -> Result<Thumbnail, EngineError> {
    let ptrs = frame.validate(layout, "thumbnail")?;
    let f = thumb_frame(layout, &ptrs);
    let mut sums = [0u64; CELLS];
    for cy in 0..ROWS {
        for cx in 0..COLS {
            // SAFETY: `validate` checked that every plane holds the layout's rows.
            sums[(cy * COLS + cx) as usize] = unsafe { thumb::cell_sum(&f, cx, cy) };
        }
    }
    Ok(Thumbnail::of_sums(&f, &sums))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::PixelFormat;
    use crate::frame::Plane;

    #[test]
    fn a_gray_ramp_and_its_rgb_twin_have_the_same_thumbnail() {
        let (w, h) = (96u32, 54u32);
        let luma: Vec<u8> = (0..w * h).map(|i| ((i % w) * 2 + (i / w)) as u8).collect();
        let rgb: Vec<u8> = luma.iter().flat_map(|&v| [v, v, v]).collect();
        let gray = of_host(
            &HostFrame::new(&[Plane {
                data: &luma,
                stride: w as usize,
            }]),
            &FrameLayout {
                format: PixelFormat::Gray8,
                width: w,
                height: h,
            },
        )
        .unwrap();
        let colour = of_host(
            &HostFrame::new(&[Plane {
                data: &rgb,
                stride: 3 * w as usize,
            }]),
            &FrameLayout {
                format: PixelFormat::Rgb,
                width: w,
                height: h,
            },
        )
        .unwrap();
        assert_eq!(gray, colour);
        assert_eq!(gray.distance(&colour), 0.0);
        // Cell (0, 0): columns 0..3, rows 0 and 2 of 0..3: (0+2+4 + 2+4+6) / 6.
        assert_eq!(gray.cells()[0], 3.0);
    }

    #[test]
    fn a_short_plane_is_refused() {
        let data = vec![0u8; 10];
        let frame = HostFrame::new(&[Plane {
            data: &data,
            stride: 4,
        }]);
        let layout = FrameLayout {
            format: PixelFormat::Gray8,
            width: 4,
            height: 4,
        };
        assert!(of_host(&frame, &layout).is_err());
    }
}
