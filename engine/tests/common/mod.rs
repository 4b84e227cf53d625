//! Shared helpers of the engine's integration tests: owned frames laid out the way GStreamer
//! lays them out, with padded strides, viewable as host frames or (once copied to the GPU)
//! as device frames; and the FFmpeg runner, scratch files and natural source image of the
//! reference tests that make their data at test time.

#![allow(dead_code)] // each test crate uses part of it

pub mod clips;
pub mod images;
pub mod synthetic;

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

/// xorshift64*: deterministic random inputs without a dependency.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }
    /// Uniform in [lo, hi).
    pub fn f32(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * (self.next_u32() >> 8) as f32 / (1u32 << 24) as f32
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u32() as u8).collect()
    }
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

/// The natural photograph of the SSIMULACRA2 reference tests
/// (`tests/data/ssimulacra2/natural.jpg`, made by `tests/generate_ssimulacra2_source.sh`).
pub fn natural_source() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/ssimulacra2/natural.jpg")
}

/// A path in this test process's scratch directory.
pub fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("gpumetrics-engine-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Runs FFmpeg (quiet, one thread) and returns its standard output; panics with its error
/// text when it fails.
///
/// With `GPUMETRICS_FFMPEG_CACHE=DIR`, every call's output is kept in DIR under a hash of its
/// arguments (this process's scratch directory written as `SCRATCH`) and returned from there
/// when present, without running FFmpeg: a test run here fills DIR, and the GPU machine,
/// which has no FFmpeg, reruns the same test on it.
pub fn ffmpeg(args: &[&str]) -> Vec<u8> {
    let scratch_dir = scratch("").to_string_lossy().into_owned();
    let cached = std::env::var_os("GPUMETRICS_FFMPEG_CACHE").map(|dir| {
        // FNV-1a over the arguments, stable across processes.
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for a in args {
            for b in a.replace(&scratch_dir, "SCRATCH").bytes().chain([0]) {
                h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
            }
        }
        std::path::PathBuf::from(dir).join(format!("{h:016x}.out"))
    });
    if let Some(out) = cached.as_ref().and_then(|p| std::fs::read(p).ok()) {
        return out;
    }
    let out = std::process::Command::new("ffmpeg")
        .args(["-hide_banner", "-v", "error", "-threads", "1"])
        .args(args)
        .output()
        .expect("ffmpeg is needed (scripts/setup-deps.sh installs it)");
    assert!(
        out.status.success(),
        "ffmpeg {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    if let Some(p) = cached {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, &out.stdout).unwrap();
    }
    out.stdout
}

/// Options for VMAF with `model` (a built-in name or a JSON path) and its features.
pub fn vmaf_options(model: &str) -> gpumetrics_engine::Options {
    use gpumetrics_engine::OptionValue::{Bool, Text};
    gpumetrics_engine::Options::new()
        .with("vmaf-model", Text(model.into()))
        .unwrap()
        .with("vmaf-features", Bool(true))
        .unwrap()
}

/// Options with `chroma-upsampling` set to `nick` (`catmull-rom` or `nearest`).
pub fn upsampling_options(nick: &str) -> gpumetrics_engine::Options {
    let mut o = gpumetrics_engine::Options::new();
    o.parse("chroma-upsampling", nick).unwrap();
    o
}
