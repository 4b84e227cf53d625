//! Frames for the engine's integration tests: owned bytes laid out the way GStreamer lays
//! them out, with padded strides, viewable as host frames or (once copied to the GPU) as
//! device frames.

#![allow(dead_code)] // each test crate uses part of it

use cudarc::driver::{CudaContext, DevicePtr};
use gpumetrics_engine::{
    DeviceFrame, Engine, Frame, FrameLayout, HostFrame, PixelFormat, Plane, Scores,
};

pub struct OwnedFrame {
    pub layout: FrameLayout,
    pub data: Vec<u8>,
    pub offsets: Vec<usize>,
    pub strides: Vec<usize>,
}

impl OwnedFrame {
    /// Plane p's stride is its minimum row size plus 8·(p + 1) bytes; `fill(i)` gives byte i.
    pub fn new(
        format: PixelFormat,
        width: u32,
        height: u32,
        fill: impl FnMut(usize) -> u8,
    ) -> Self {
        let layout = FrameLayout {
            format,
            width,
            height,
        };
        let (mut offsets, mut strides, mut total) = (vec![], vec![], 0);
        for p in 0..format.n_planes() {
            let stride = layout.min_row_bytes(p) + 8 * (p + 1);
            offsets.push(total);
            strides.push(stride);
            total += stride * layout.plane_rows(p) as usize;
        }
        let data = (0..total).map(fill).collect();
        OwnedFrame {
            layout,
            data,
            offsets,
            strides,
        }
    }

    pub fn host(&self) -> Frame<'_> {
        let planes: Vec<Plane> = self
            .offsets
            .iter()
            .zip(&self.strides)
            .map(|(&o, &stride)| Plane {
                data: &self.data[o..],
                stride,
            })
            .collect();
        Frame::Host(HostFrame::new(&planes))
    }

    /// The same frame at device address `base` (a copy of `data`).
    pub fn device(&self, base: u64) -> Frame<'static> {
        let mut f = DeviceFrame {
            n_planes: self.offsets.len(),
            ..Default::default()
        };
        for i in 0..f.n_planes {
            f.ptrs[i] = base + self.offsets[i] as u64;
            f.pitches[i] = self.strides[i];
        }
        Frame::Device(f)
    }
}

/// `engine`'s scores for `r` and `d` copied to GPU memory first (the device-frame path).
pub fn compare_on_device(engine: &mut Engine, r: &OwnedFrame, d: &OwnedFrame) -> Scores {
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.default_stream();
    let rb = stream.clone_htod(&r.data).unwrap();
    let db = stream.clone_htod(&d.data).unwrap();
    stream.synchronize().unwrap();
    let (rp, _g1) = rb.device_ptr(&stream);
    let (dp, _g2) = db.device_ptr(&stream);
    engine.compare(&r.device(rp), &d.device(dp)).unwrap()
}

/// xorshift64: deterministic test bytes without a dependency.
pub fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed | 1;
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    }
}
