//! The pixel formats the engine reads, described as channels so that every metric walks
//! planar, semi-planar and packed layouts with the same code.

/// Colour family: decides which formats can be compared sample by sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorFamily {
    Gray,
    Yuv,
    Rgb,
}

/// Where one channel's samples live inside a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelSpec {
    /// Field suffix: `y`, `u`, `v`, `r`, `g` or `b`.
    pub name: &'static str,
    pub plane: usize,
    /// Byte offset of the channel's first sample inside a pixel group.
    pub offset: u32,
    /// Bytes between horizontally adjacent samples.
    pub step: u32,
    /// Container size: 1 or 2 bytes (little-endian).
    pub sample_bytes: u32,
    /// Right shift after loading (MSB-aligned formats such as P010).
    pub shift: u32,
    /// log2 of the horizontal / vertical subsampling.
    pub sub_x: u32,
    pub sub_y: u32,
}

macro_rules! formats {
    ($($variant:ident => $name:literal),* $(,)?) => {
        /// Raw video formats accepted on either input.
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum PixelFormat { $($variant),* }

        impl PixelFormat {
            pub const ALL: &'static [PixelFormat] = &[$(PixelFormat::$variant),*];

            /// The GStreamer format string (`GstVideoFormat` name).
            pub fn name(self) -> &'static str {
                match self { $(PixelFormat::$variant => $name),* }
            }

            pub fn from_name(name: &str) -> Option<Self> {
                match name { $($name => Some(PixelFormat::$variant),)* _ => None }
            }
        }
    };
}

formats! {
    Gray8 => "GRAY8", Gray16Le => "GRAY16_LE",
    I420 => "I420", Yv12 => "YV12", Nv12 => "NV12", Nv21 => "NV21",
    Y42b => "Y42B", Y444 => "Y444",
    I420_10Le => "I420_10LE", I422_10Le => "I422_10LE", Y444_10Le => "Y444_10LE",
    I420_12Le => "I420_12LE", P010_10Le => "P010_10LE", P016Le => "P016_LE",
    Y444_16Le => "Y444_16LE",
    Rgb => "RGB", Bgr => "BGR", Rgba => "RGBA", Bgra => "BGRA", Rgbx => "RGBx", Bgrx => "BGRx",
    Argb => "ARGB", Abgr => "ABGR", Xrgb => "xRGB", Xbgr => "xBGR",
}

const fn ch(name: &'static str, plane: usize, offset: u32, step: u32, bytes: u32) -> ChannelSpec {
    ChannelSpec {
        name,
        plane,
        offset,
        step,
        sample_bytes: bytes,
        shift: 0,
        sub_x: 0,
        sub_y: 0,
    }
}

const fn sub(mut c: ChannelSpec, sub_x: u32, sub_y: u32) -> ChannelSpec {
    c.sub_x = sub_x;
    c.sub_y = sub_y;
    c
}

const fn shifted(mut c: ChannelSpec, shift: u32) -> ChannelSpec {
    c.shift = shift;
    c
}

/// Planar Y, U, V with the given container size and subsampling.
const fn planar_yuv(
    bytes: u32,
    sx: u32,
    sy: u32,
    u_plane: usize,
    v_plane: usize,
) -> [ChannelSpec; 3] {
    [
        ch("y", 0, 0, bytes, bytes),
        sub(ch("u", u_plane, 0, bytes, bytes), sx, sy),
        sub(ch("v", v_plane, 0, bytes, bytes), sx, sy),
    ]
}

/// Semi-planar 4:2:0: Y plane, then interleaved chroma.
const fn semi_planar(bytes: u32, u_first: bool, shift: u32) -> [ChannelSpec; 3] {
    let (u, v) = if u_first { (0, bytes) } else { (bytes, 0) };
    [
        shifted(ch("y", 0, 0, bytes, bytes), shift),
        shifted(sub(ch("u", 1, u, 2 * bytes, bytes), 1, 1), shift),
        shifted(sub(ch("v", 1, v, 2 * bytes, bytes), 1, 1), shift),
    ]
}

/// Packed 8-bit RGB with the byte offsets of R, G, B and the pixel size.
const fn packed_rgb(r: u32, g: u32, b: u32, step: u32) -> [ChannelSpec; 3] {
    [
        ch("r", 0, r, step, 1),
        ch("g", 0, g, step, 1),
        ch("b", 0, b, step, 1),
    ]
}

impl PixelFormat {
    pub fn family(self) -> ColorFamily {
        use PixelFormat::*;
        match self {
            Gray8 | Gray16Le => ColorFamily::Gray,
            Rgb | Bgr | Rgba | Bgra | Rgbx | Bgrx | Argb | Abgr | Xrgb | Xbgr => ColorFamily::Rgb,
            _ => ColorFamily::Yuv,
        }
    }

    /// Significant bits per sample.
    pub fn depth(self) -> u32 {
        use PixelFormat::*;
        match self {
            I420_10Le | I422_10Le | Y444_10Le | P010_10Le => 10,
            I420_12Le => 12,
            Gray16Le | P016Le | Y444_16Le => 16,
            _ => 8,
        }
    }

    /// Largest sample value: the PSNR peak and the SSIM dynamic range.
    pub fn peak(self) -> u32 {
        ((1u64 << self.depth()) - 1) as u32
    }

    pub fn n_planes(self) -> usize {
        self.channels()
            .iter()
            .map(|c| c.plane + 1)
            .max()
            .unwrap_or(1)
    }

    /// The colour channels in metric order (Y, U, V or R, G, B; alpha is never compared).
    pub fn channels(self) -> &'static [ChannelSpec] {
        use PixelFormat::*;
        const GRAY8: [ChannelSpec; 1] = [ch("y", 0, 0, 1, 1)];
        const GRAY16: [ChannelSpec; 1] = [ch("y", 0, 0, 2, 2)];
        const I420_: [ChannelSpec; 3] = planar_yuv(1, 1, 1, 1, 2);
        const YV12_: [ChannelSpec; 3] = planar_yuv(1, 1, 1, 2, 1);
        const Y42B_: [ChannelSpec; 3] = planar_yuv(1, 1, 0, 1, 2);
        const Y444_: [ChannelSpec; 3] = planar_yuv(1, 0, 0, 1, 2);
        const I420_16: [ChannelSpec; 3] = planar_yuv(2, 1, 1, 1, 2);
        const I422_16: [ChannelSpec; 3] = planar_yuv(2, 1, 0, 1, 2);
        const Y444_16: [ChannelSpec; 3] = planar_yuv(2, 0, 0, 1, 2);
        const NV12_: [ChannelSpec; 3] = semi_planar(1, true, 0);
        const NV21_: [ChannelSpec; 3] = semi_planar(1, false, 0);
        const P010_: [ChannelSpec; 3] = semi_planar(2, true, 6);
        const P016_: [ChannelSpec; 3] = semi_planar(2, true, 0);
        const RGB_: [ChannelSpec; 3] = packed_rgb(0, 1, 2, 3);
        const BGR_: [ChannelSpec; 3] = packed_rgb(2, 1, 0, 3);
        const RGBA_: [ChannelSpec; 3] = packed_rgb(0, 1, 2, 4);
        const BGRA_: [ChannelSpec; 3] = packed_rgb(2, 1, 0, 4);
        const ARGB_: [ChannelSpec; 3] = packed_rgb(1, 2, 3, 4);
        const ABGR_: [ChannelSpec; 3] = packed_rgb(3, 2, 1, 4);
        match self {
            Gray8 => &GRAY8,
            Gray16Le => &GRAY16,
            I420 => &I420_,
            Yv12 => &YV12_,
            Y42b => &Y42B_,
            Y444 => &Y444_,
            I420_10Le | I420_12Le => &I420_16,
            I422_10Le => &I422_16,
            Y444_10Le | Y444_16Le => &Y444_16,
            Nv12 => &NV12_,
            Nv21 => &NV21_,
            P010_10Le => &P010_,
            P016Le => &P016_,
            Rgb => &RGB_,
            Bgr => &BGR_,
            Rgba | Rgbx => &RGBA_,
            Bgra | Bgrx => &BGRA_,
            Argb | Xrgb => &ARGB_,
            Abgr | Xbgr => &ABGR_,
        }
    }

    /// Chroma subsampling (log2 x, log2 y); (0, 0) for RGB and gray.
    pub fn subsampling(self) -> (u32, u32) {
        self.channels()
            .last()
            .map(|c| (c.sub_x, c.sub_y))
            .unwrap_or((0, 0))
    }
}

/// Size and format of the frames on one input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameLayout {
    pub format: PixelFormat,
    pub width: u32,
    pub height: u32,
}

impl FrameLayout {
    /// Samples per row and rows of a channel (chroma sizes round up, as FFmpeg does).
    pub fn channel_size(&self, c: &ChannelSpec) -> (u32, u32) {
        (
            self.width.div_ceil(1 << c.sub_x),
            self.height.div_ceil(1 << c.sub_y),
        )
    }

    /// Bytes a row of `plane` needs at minimum (for validating strides).
    pub fn min_row_bytes(&self, plane: usize) -> usize {
        self.format
            .channels()
            .iter()
            .filter(|c| c.plane == plane)
            .map(|c| {
                let (w, _) = self.channel_size(c);
                c.offset as usize + (w as usize - 1) * c.step as usize + c.sample_bytes as usize
            })
            .max()
            .unwrap_or(0)
    }

    /// Rows in `plane`.
    pub fn plane_rows(&self, plane: usize) -> u32 {
        self.format
            .channels()
            .iter()
            .filter(|c| c.plane == plane)
            .map(|c| self.channel_size(c).1)
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for f in PixelFormat::ALL {
            assert_eq!(PixelFormat::from_name(f.name()), Some(*f));
        }
        assert_eq!(PixelFormat::ALL.len(), 25);
    }

    #[test]
    fn plane_counts_and_sizes() {
        assert_eq!(PixelFormat::I420.n_planes(), 3);
        assert_eq!(PixelFormat::Nv12.n_planes(), 2);
        assert_eq!(PixelFormat::Bgrx.n_planes(), 1);
        let l = FrameLayout {
            format: PixelFormat::I420,
            width: 5,
            height: 3,
        };
        assert_eq!(l.channel_size(&PixelFormat::I420.channels()[1]), (3, 2));
        let p = FrameLayout {
            format: PixelFormat::P010_10Le,
            width: 5,
            height: 3,
        };
        assert_eq!(p.min_row_bytes(1), 12);
        assert_eq!(PixelFormat::P010_10Le.peak(), 1023);
    }
}
