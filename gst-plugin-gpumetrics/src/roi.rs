// SPDX-License-Identifier: MPL-2.0
//! The `roi` property: a rectangle of the reference, in pixels, on which both inputs are
//! measured.
//!
//! [`Rect::parse`] reads the property's text (`x,y,width,height`) when the element starts;
//! [`Roi::new`] checks the rectangle against each input's [`FrameLayout`] (inside the frame,
//! not empty, aligned to the chroma subsampling) and says the nearest valid rectangle when it
//! is not; [`Roi::crop`] turns a frame checked in full into the frame of the rectangle,
//! in place: each plane starts at the rectangle's first byte, the strides stay the buffer's,
//! and the engine reads the frame with the rectangle's layout ([`Roi::layout`]). No sample is
//! copied, in host or device memory.

use std::fmt;

use gpumetrics_engine::{Frame, FrameLayout, HostFrame, MAX_PLANES, Plane};

/// A rectangle in pixels, as the property gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rect {
    pub x: u32,
    pub y: u32,
    pub width: u32,
    pub height: u32,
}

impl fmt::Display for Rect {
    /// The property's form: `x,y,width,height`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{},{},{},{}", self.x, self.y, self.width, self.height)
    }
}

impl Rect {
    /// The property's text: four non-negative integers separated by commas (spaces around
    /// them allowed). `Err` quotes the text and says the expected form.
    pub fn parse(text: &str) -> Result<Rect, String> {
        let bad = || {
            format!(
                "roi \"{}\" is not x,y,width,height: four non-negative integers in pixels \
                 of the reference separated by commas, e.g. roi=0,0,640,360",
                crate::quote::quoted(text)
            )
        };
        let mut values = [0u32; 4];
        let mut parts = text.split(',');
        for v in &mut values {
            let part = parts.next().ok_or_else(bad)?.trim();
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            *v = part.parse().map_err(|_| bad())?;
        }
        if parts.next().is_some() {
            return Err(bad());
        }
        let [x, y, width, height] = values;
        Ok(Rect {
            x,
            y,
            width,
            height,
        })
    }

    /// The valid rectangle nearest to this one in a frame of `layout`: the start clamped into
    /// the frame and rounded down to the chroma alignment, the end clamped to the frame and
    /// rounded up to the alignment (or to the frame's edge), so that it covers what was asked
    /// for inside the frame and is at least one aligned block large.
    pub fn nearest(&self, layout: &FrameLayout) -> Rect {
        let (ax, ay) = alignment(layout);
        let span = |start: u32, len: u32, size: u32, align: u32| {
            let (start, len, size, align) = (start as u64, len as u64, size as u64, align as u64);
            let first = start.min(size.saturating_sub(1));
            let end = (start + len).max(first + 1).min(size);
            let first = first / align * align;
            let end = end.next_multiple_of(align).min(size);
            (first as u32, (end - first) as u32)
        };
        let (x, width) = span(self.x, self.width, layout.width, ax);
        let (y, height) = span(self.y, self.height, layout.height, ay);
        Rect {
            x,
            y,
            width,
            height,
        }
    }
}

/// Pixels per chroma sample horizontally and vertically (1, 1 without subsampling).
fn alignment(layout: &FrameLayout) -> (u32, u32) {
    let channels = layout.format.channels();
    let sub_x = channels.iter().map(|c| c.sub_x).max().unwrap_or(0);
    let sub_y = channels.iter().map(|c| c.sub_y).max().unwrap_or(0);
    (1 << sub_x, 1 << sub_y)
}

/// `4:2:0 chroma subsampling`, for messages.
fn subsampling_name(layout: &FrameLayout) -> String {
    match alignment(layout) {
        (2, 2) => "4:2:0 chroma subsampling".into(),
        (2, 1) => "4:2:2 chroma subsampling".into(),
        (ax, ay) => format!("chroma subsampling (1 chroma sample per {ax}x{ay} pixels)"),
    }
}

/// A rectangle checked against the layout of the full frames of one input: the layout the
/// engine measures and where the rectangle starts in each plane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Roi {
    rect: Rect,
    /// The rectangle's layout: the full frames' format, the rectangle's size.
    layout: FrameLayout,
    /// Per plane: the rectangle's first row, and the byte of its first pixel in a row.
    starts: [(usize, usize); MAX_PLANES],
}

impl Roi {
    /// `rect` in frames of `frame`; `Err` says what is wrong, the frame's format and size and
    /// the nearest valid rectangle ([`Rect::nearest`]).
    pub fn new(rect: Rect, frame: &FrameLayout) -> Result<Roi, String> {
        let nearest = rect.nearest(frame);
        let what = format!("{} {}x{}", frame.format.name(), frame.width, frame.height);
        let problem = if rect.width == 0 || rect.height == 0 {
            Some(format!("is empty in the {what} frame"))
        } else if rect.x as u64 + rect.width as u64 > frame.width as u64
            || rect.y as u64 + rect.height as u64 > frame.height as u64
        {
            Some(format!(
                "lies outside the {what} frame (it ends at x {}, y {})",
                rect.x as u64 + rect.width as u64,
                rect.y as u64 + rect.height as u64
            ))
        } else if nearest != rect {
            let (ax, ay) = alignment(frame);
            let sides = match (ax > 1, ay > 1) {
                (true, true) => "x, y, width and height",
                (true, false) => "x and width",
                (false, true) => "y and height",
                (false, false) => unreachable!("without subsampling every rectangle is aligned"),
            };
            Some(format!(
                "is not aligned to the {} of {what} ({sides} must be multiples of the \
                 subsampling, except a side that ends at the frame's edge)",
                subsampling_name(frame)
            ))
        } else {
            None
        };
        if let Some(problem) = problem {
            return Err(format!(
                "roi {rect} {problem}: the nearest valid rectangle is {nearest}"
            ));
        }
        let mut starts = [(0, 0); MAX_PLANES];
        for (plane, start) in starts.iter_mut().enumerate() {
            // Every channel of a plane has the plane's subsampling and pixel step.
            if let Some(c) = frame.format.channels().iter().find(|c| c.plane == plane) {
                *start = (
                    (rect.y >> c.sub_y) as usize,
                    (rect.x >> c.sub_x) as usize * c.step as usize,
                );
            }
        }
        Ok(Roi {
            rect,
            layout: FrameLayout {
                width: rect.width,
                height: rect.height,
                ..*frame
            },
            starts,
        })
    }

    pub fn rect(&self) -> Rect {
        self.rect
    }

    /// The layout the engine measures: the frames' format, the rectangle's size.
    pub fn layout(&self) -> FrameLayout {
        self.layout
    }

    /// Bytes from the start of plane `plane` to the rectangle's first byte in it, for rows
    /// `stride` bytes apart.
    pub fn offset(&self, plane: usize, stride: usize) -> usize {
        let (row, column) = self.starts.get(plane).copied().unwrap_or_default();
        row * stride + column
    }

    /// The rectangle of `frame`, a frame of the full layout that has been checked against
    /// its mapping ([`HostFrame::from_mapped`], [`gpumetrics_engine::DeviceFrame::from_mapped`]):
    /// the same memory, each plane starting at [`Roi::offset`], the strides unchanged. A
    /// rectangle that [`Roi::new`] accepted lies inside the checked planes; the engine checks
    /// the host planes again against [`Roi::layout`].
    pub fn crop<'a>(&self, frame: Frame<'a>) -> Frame<'a> {
        match frame {
            Frame::Host(host) => {
                let mut planes = [Plane::default(); MAX_PLANES];
                let full = host.planes();
                for (i, (dst, src)) in planes.iter_mut().zip(full).enumerate() {
                    *dst = Plane {
                        // Never out of range for an accepted rectangle; an empty plane would
                        // be refused by the engine's check.
                        data: src
                            .data
                            .get(self.offset(i, src.stride)..)
                            .unwrap_or_default(),
                        stride: src.stride,
                    };
                }
                Frame::Host(HostFrame::new(&planes[..full.len()]))
            }
            Frame::Device(mut device) => {
                for i in 0..device.n_planes.min(MAX_PLANES) {
                    // A wrapped address (impossible inside a checked mapping) becomes 0,
                    // which the engine refuses as a missing plane.
                    let offset = self.offset(i, device.pitches[i]) as u64;
                    device.ptrs[i] = device.ptrs[i].checked_add(offset).unwrap_or(0);
                }
                Frame::Device(device)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpumetrics_engine::{DeviceFrame, PixelFormat, PlaneOffsets};

    fn layout(format: PixelFormat, width: u32, height: u32) -> FrameLayout {
        FrameLayout {
            format,
            width,
            height,
        }
    }

    fn rect(x: u32, y: u32, width: u32, height: u32) -> Rect {
        Rect {
            x,
            y,
            width,
            height,
        }
    }

    #[test]
    fn parses_four_non_negative_integers() {
        assert_eq!(Rect::parse("3,4,100,50"), Ok(rect(3, 4, 100, 50)));
        assert_eq!(Rect::parse(" 0 , 0, 1,2 "), Ok(rect(0, 0, 1, 2)));
        assert_eq!(Rect::parse("3,4,100,50").unwrap().to_string(), "3,4,100,50");
        for bad in [
            "",
            "1,2,3",
            "1,2,3,4,5",
            "-1,0,10,10",
            "+1,0,10,10",
            "1.5,0,10,10",
            "a,b,c,d",
            "1,,3,4",
            "1 2,3,4,5",
            "0,0,4294967296,1",
            "0x10,0,1,1",
        ] {
            let e = Rect::parse(bad).unwrap_err();
            assert!(
                e.starts_with(&format!("roi \"{bad}\" is not x,y,width,height: four")),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn errors_name_the_frame_and_the_nearest_valid_rectangle() {
        let hd = layout(PixelFormat::I420, 1920, 1080);
        let e = Roi::new(rect(3, 3, 101, 50), &hd).unwrap_err();
        assert_eq!(
            e,
            "roi 3,3,101,50 is not aligned to the 4:2:0 chroma subsampling of I420 1920x1080 \
             (x, y, width and height must be multiples of the subsampling, except a side that \
             ends at the frame's edge): the nearest valid rectangle is 2,2,102,52"
        );
        // The nearest rectangle covers the requested one: 3..104 x 3..53.
        let e = Roi::new(rect(1900, 1000, 100, 100), &hd).unwrap_err();
        assert_eq!(
            e,
            "roi 1900,1000,100,100 lies outside the I420 1920x1080 frame (it ends at x 2000, y \
             1100): the nearest valid rectangle is 1900,1000,20,80"
        );
        let e = Roi::new(rect(5000, 0, 10, 10), &hd).unwrap_err();
        assert!(
            e.ends_with("the nearest valid rectangle is 1918,0,2,10"),
            "{e}"
        );
        let e = Roi::new(rect(10, 10, 0, 20), &hd).unwrap_err();
        assert_eq!(
            e,
            "roi 10,10,0,20 is empty in the I420 1920x1080 frame: the nearest valid rectangle \
             is 10,10,2,20"
        );
        let e = Roi::new(rect(10, 10, 4, 0), &layout(PixelFormat::Rgb, 64, 48)).unwrap_err();
        assert!(e.ends_with("is 10,10,4,1"), "{e}");
        // 4:2:2: only x and width; y and height are free.
        let y42b = layout(PixelFormat::Y42b, 64, 48);
        let e = Roi::new(rect(1, 1, 9, 9), &y42b).unwrap_err();
        assert_eq!(
            e,
            "roi 1,1,9,9 is not aligned to the 4:2:2 chroma subsampling of Y42B 64x48 (x and \
             width must be multiples of the subsampling, except a side that ends at the frame's \
             edge): the nearest valid rectangle is 0,1,10,9"
        );
        assert!(Roi::new(rect(2, 1, 8, 9), &y42b).is_ok());
        let nv12 = layout(PixelFormat::Nv12, 64, 48);
        assert!(
            Roi::new(rect(0, 1, 2, 2), &nv12)
                .unwrap_err()
                .contains("NV12 64x48")
        );
        // Overflowing ends are outside, not wrapped.
        let e = Roi::new(rect(u32::MAX, u32::MAX, u32::MAX, u32::MAX), &nv12).unwrap_err();
        assert!(e.contains("(it ends at x 8589934590, y 8589934590)"), "{e}");
        assert!(e.ends_with("is 62,46,2,2"), "{e}");
    }

    #[test]
    fn odd_sizes_are_valid_where_they_end_at_the_frames_edge() {
        let odd = layout(PixelFormat::I420, 101, 51);
        assert!(Roi::new(rect(0, 0, 101, 51), &odd).is_ok());
        assert!(Roi::new(rect(40, 20, 61, 31), &odd).is_ok());
        assert!(Roi::new(rect(40, 20, 59, 31), &odd).is_err());
        assert_eq!(rect(39, 21, 62, 30).nearest(&odd), rect(38, 20, 63, 31));
        assert_eq!(rect(39, 21, 60, 29).nearest(&odd), rect(38, 20, 62, 30));
    }

    /// Every rectangle of small frames of every format: accepted exactly when it is its own
    /// nearest valid rectangle; the nearest one is always accepted and covers the requested
    /// pixels inside the frame; and an accepted rectangle's planes lie inside the full
    /// frame's (which is what makes offsetting a checked device frame safe).
    #[test]
    fn every_accepted_rectangle_lies_inside_the_checked_planes() {
        for &format in PixelFormat::ALL {
            for (w, h) in [(7, 5), (8, 6)] {
                let full = layout(format, w, h);
                for x in 0..=w {
                    for y in 0..=h {
                        for rw in 0..=w + 1 {
                            for rh in 0..=h + 1 {
                                check(&full, rect(x, y, rw, rh));
                            }
                        }
                    }
                }
            }
        }
    }

    fn check(full: &FrameLayout, r: Rect) {
        let nearest = r.nearest(full);
        let name = format!(
            "{} {r} in {}x{}",
            full.format.name(),
            full.width,
            full.height
        );
        assert!(Roi::new(nearest, full).is_ok(), "{name}: nearest {nearest}");
        let (x1, y1) = (
            (r.x + r.width).min(full.width),
            (r.y + r.height).min(full.height),
        );
        if r.x < full.width && r.y < full.height && r.width > 0 && r.height > 0 {
            assert!(
                nearest.x <= r.x
                    && nearest.y <= r.y
                    && nearest.x + nearest.width >= x1
                    && nearest.y + nearest.height >= y1,
                "{name}: nearest {nearest} does not cover it"
            );
        }
        let Ok(roi) = Roi::new(r, full) else {
            assert_ne!(nearest, r, "{name}: refused although valid");
            return;
        };
        assert_eq!(nearest, r, "{name}");
        assert_eq!(
            (roi.layout().width, roi.layout().height),
            (r.width, r.height)
        );
        for plane in 0..full.format.n_planes() {
            let stride = full.min_row_bytes(plane) + 3;
            let row = |l: &FrameLayout| l.min_row_bytes(plane);
            let rows = |l: &FrameLayout| l.plane_rows(plane) as usize;
            let end_full = (rows(full) - 1) * stride + row(full);
            let end_roi = roi.offset(plane, stride) + (rows(&roi.layout) - 1) * stride;
            assert!(
                end_roi + row(&roi.layout) <= end_full,
                "{name}: plane {plane} ends past the frame"
            );
            // The rectangle's rows stay inside the full rows (no read into the padding).
            assert!(
                roi.offset(plane, stride) % stride + row(&roi.layout) <= row(full),
                "{name}: plane {plane} reads past its rows"
            );
        }
    }

    /// The per-plane offsets of each kind of layout: planar, semi-planar (the interleaved
    /// chroma's x is in sample pairs), 16-bit, packed RGB (x times the pixel size).
    #[test]
    fn offsets_follow_each_planes_subsampling_and_pixel_size() {
        let r = rect(4, 6, 8, 8);
        let offsets = |format, strides: &[usize]| {
            let roi = Roi::new(r, &layout(format, 64, 48)).unwrap();
            strides
                .iter()
                .enumerate()
                .map(|(i, s)| roi.offset(i, *s))
                .collect::<Vec<_>>()
        };
        use PixelFormat::*;
        assert_eq!(offsets(I420, &[100, 50, 50]), [604, 152, 152]);
        assert_eq!(offsets(Yv12, &[100, 50, 50]), [604, 152, 152]);
        assert_eq!(offsets(Y42b, &[100, 50, 50]), [604, 302, 302]);
        assert_eq!(offsets(Y444, &[100, 100, 100]), [604, 604, 604]);
        assert_eq!(offsets(Nv12, &[100, 100]), [604, 304]);
        assert_eq!(offsets(Nv21, &[100, 100]), [604, 304]);
        assert_eq!(offsets(I420_10Le, &[200, 100, 100]), [1208, 304, 304]);
        assert_eq!(offsets(P010_10Le, &[200, 200]), [1208, 608]);
        assert_eq!(offsets(Y444_16Le, &[200, 200, 200]), [1208, 1208, 1208]);
        assert_eq!(offsets(Gray8, &[100]), [604]);
        assert_eq!(offsets(Gray16Le, &[200]), [1208]);
        assert_eq!(offsets(Rgb, &[300]), [1812]);
        assert_eq!(offsets(Bgr, &[300]), [1812]);
        for f in [Rgba, Bgra, Rgbx, Bgrx, Argb, Abgr, Xrgb, Xbgr] {
            assert_eq!(offsets(f, &[400]), [2416], "{}", f.name());
        }
    }

    /// Host frames are cut in place: each plane's slice starts at the rectangle's first byte
    /// of the same buffer, with the buffer's stride; device frames get the same offsets.
    #[test]
    fn crop_reads_in_place() {
        let full = layout(PixelFormat::Nv12, 16, 8);
        let data: Vec<u8> = (0..=255).cycle().take(32 * 8 + 32 * 4).collect();
        let planes = PlaneOffsets::new(&[0, 32 * 8], &[32, 32]);
        let host = HostFrame::from_mapped(&data, &full, &planes, "ref_sink").unwrap();
        let roi = Roi::new(rect(6, 2, 8, 4), &full).unwrap();
        assert_eq!(roi.layout(), layout(PixelFormat::Nv12, 8, 4));
        let Frame::Host(cut) = roi.crop(Frame::Host(host)) else {
            panic!("a host frame stays in host memory");
        };
        let [y, uv] = cut.planes() else {
            panic!("two planes");
        };
        assert_eq!(y.data.as_ptr(), data[2 * 32 + 6..].as_ptr());
        assert_eq!(uv.data.as_ptr(), data[32 * 8 + 32 + 6..].as_ptr());
        assert_eq!((y.stride, uv.stride), (32, 32));
        assert_eq!(y.data[0], data[2 * 32 + 6]);
        let device = DeviceFrame::from_mapped(0x1000, data.len(), &full, &planes, "x").unwrap();
        let Frame::Device(cut) = roi.crop(Frame::Device(device)) else {
            panic!("a device frame stays in device memory");
        };
        assert_eq!(cut.ptrs[..2], [0x1000 + 70, 0x1000 + 256 + 38]);
        assert_eq!(cut.pitches[..2], [32, 32]);
        // The whole frame as the rectangle: the frame itself.
        let whole = Roi::new(rect(0, 0, 16, 8), &full).unwrap();
        let Frame::Device(same) = whole.crop(Frame::Device(device)) else {
            panic!("device");
        };
        assert_eq!(same.ptrs, device.ptrs);
    }
}
