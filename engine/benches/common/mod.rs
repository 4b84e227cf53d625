//! What the engine benches share: fixed synthetic I420 frames (deterministic noise, so
//! every run measures the same pixels) in host memory, and their planes as host or device
//! frames.

use gpumetrics_engine::metric::{needing_reference, no_reference};
use gpumetrics_engine::{
    DeviceFrame, Frame, FrameLayout, HostFrame, MetricSet, PixelFormat, Plane,
};

/// The metrics of a set named on a bench's command line: names joined by `+`, each a
/// metric's name, `all`, `full-reference` or `no-reference`; `None` if one is none of those.
pub fn named_set(names: &str) -> Option<MetricSet> {
    let nr = no_reference();
    let fr = needing_reference(MetricSet::ALL).fold(MetricSet::default(), |s, i| s | i.flag);
    names.split('+').try_fold(MetricSet::default(), |s, n| {
        let part = match n {
            "full-reference" => Some(fr),
            "no-reference" => Some(nr),
            "all" => Some(MetricSet::ALL),
            _ => MetricSet::named(n),
        };
        part.map(|f| s | f)
    })
}

/// Deterministic noise so every run measures the same pixels.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut s = seed | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 56) as u8
        })
        .collect()
}

/// One I420 (or I420_10LE) frame in host memory, and where its planes are.
pub struct I420 {
    pub layout: FrameLayout,
    pub data: Vec<u8>,
    pub offsets: [usize; 3],
    pub strides: [usize; 3],
}

impl I420 {
    pub fn new(width: u32, height: u32, seed: u64) -> I420 {
        Self::with_depth(width, height, seed, 8)
    }

    /// I420 (8 bits) or I420_10LE (10: the noise masked to 10 bits).
    pub fn with_depth(width: u32, height: u32, seed: u64, depth: u32) -> I420 {
        let (w, h) = (width as usize, height as usize);
        let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
        let bps = if depth > 8 { 2 } else { 1 };
        let mut data = pattern((w * h + 2 * cw * ch) * bps, seed);
        if bps == 2 {
            for v in data.chunks_mut(2) {
                v[1] &= 0x03;
            }
        }
        I420 {
            layout: FrameLayout {
                format: if bps == 2 {
                    PixelFormat::I420_10Le
                } else {
                    PixelFormat::I420
                },
                width,
                height,
            },
            data,
            offsets: [0, w * h * bps, (w * h + cw * ch) * bps],
            strides: [w * bps, cw * bps, cw * bps],
        }
    }

    pub fn host(&self) -> Frame<'_> {
        let planes: Vec<Plane> = (0..3)
            .map(|i| Plane {
                data: &self.data[self.offsets[i]..],
                stride: self.strides[i],
            })
            .collect();
        Frame::Host(HostFrame::new(&planes))
    }

    pub fn device(&self, base: u64) -> Frame<'static> {
        let mut f = DeviceFrame {
            n_planes: 3,
            ..Default::default()
        };
        for i in 0..3 {
            f.ptrs[i] = base + self.offsets[i] as u64;
            f.pitches[i] = self.strides[i];
        }
        Frame::Device(f)
    }
}
