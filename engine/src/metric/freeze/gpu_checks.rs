//! Freeze's kernels (`freeze_sad`, then `freeze_decide`) against the host build of the same
//! row function over a sequence of frames (the reference frame kept across frames; the
//! device swaps it with the spare buffer when a frame is not frozen, the host test the
//! same way), and the CUDA engine against the CPU engine, with frozen frames among moving
//! ones and a flush.
//!
//! Tolerance: none. Both sides sum integers (absolute differences) and divide them the same
//! way; the spare buffer (the frame's samples) must be equal sample for sample.

use std::sync::Arc;

use cudarc::driver::{CudaStream, DriverError, LaunchConfig};
use gpumetrics_engine::cuda::{DevPtr, DevPtrMut, Kernels};
use gpumetrics_kernels::channel::Channel;
use gpumetrics_kernels::freeze::{self, FreezeFrame};

use crate::common::{self, Rng};
use crate::{Check, Outcome, rel_err};

/// The checks of this module and the kernels each covers.
pub(crate) const CHECKS: &[(&[&str], Check)] = &[(&["freeze_sad", "freeze_decide"], kernels)];

crate::gpu_tests! {
    freeze_sad_matches_the_host => "freeze_sad",
}

/// The engine check, outside `CHECKS` (which maps each kernel to one check).
#[test]
#[ignore = "needs a CUDA GPU"]
fn freeze_cuda_engine_matches_the_cpu_engine() {
    crate::run("freeze (engine)", engine);
}

/// The noise tolerance of the kernel check (frames made "frozen" move less than this).
const NOISE: f64 = 0.001;

/// A frame layout: luma size, chroma size (0×0: gray), bytes per sample, shift, depth.
struct Case {
    w: u32,
    h: u32,
    cw: u32,
    ch: u32,
    bytes: u32,
    shift: u32,
    depth: u32,
}

const fn case(w: u32, h: u32, cw: u32, ch: u32, bytes: u32, shift: u32, depth: u32) -> Case {
    Case {
        w,
        h,
        cw,
        ch,
        bytes,
        shift,
        depth,
    }
}

/// 1×1 gray, 4:2:0 with odd sizes (chroma rows rounded down, 0 chroma rows at height 1),
/// 10-bit LSB and MSB (P010-like shift), 16 bit, more rows than `MAX_BLOCKS`, 1920×1080.
const CASES: &[Case] = &[
    case(1, 1, 0, 0, 1, 0, 8),
    case(3, 1, 2, 0, 1, 0, 8),
    case(97, 61, 49, 30, 1, 0, 8),
    case(65, 33, 33, 16, 2, 0, 10),
    case(96, 64, 48, 32, 2, 6, 10),
    case(31, 17, 31, 17, 2, 0, 16),
    case(257, 1030, 129, 515, 1, 0, 8),
    case(1920, 1080, 960, 540, 1, 0, 8),
];

/// Frames per case: the first has no reference; then moving, nearly frozen and moving.
const FRAMES: usize = 5;

/// Samples of one channel (values below 2^depth), `w·h` of them.
type Samples = Vec<u32>;

/// One channel's bytes, `pitch · h`, with `samples` written at their positions.
fn pack(samples: &[u32], w: u32, h: u32, pitch: u32, bytes: u32, shift: u32) -> Vec<u8> {
    let mut d = vec![0xa5u8; (pitch * h.max(1)) as usize];
    for y in 0..h {
        for x in 0..w {
            let v = samples[(y * w + x) as usize] << shift;
            let at = (y * pitch + x * bytes) as usize;
            d[at] = v as u8;
            if bytes == 2 {
                d[at + 1] = (v >> 8) as u8;
            }
        }
    }
    d
}

/// Frame `k`'s channels: random at k = 0, 1 and 4; at k = 2 and 3 frame 1 with a few
/// samples moved by one (frozen against frame 1).
fn channels(c: &Case, prev: Option<&[Samples; 3]>, k: usize, r: &mut Rng) -> [Samples; 3] {
    let max = ((1u64 << c.depth) - 1) as u32;
    let dims = [(c.w, c.h), (c.cw, c.ch), (c.cw, c.ch)];
    std::array::from_fn(|i| {
        let n = (dims[i].0 * dims[i].1) as usize;
        match (k, prev) {
            (2 | 3, Some(p)) => p[i]
                .iter()
                .map(|&v| {
                    if r.next_u32().is_multiple_of(4096) {
                        (v + 1).min(max)
                    } else {
                        v
                    }
                })
                .collect(),
            _ => (0..n).map(|_| r.next_u32() % (max + 1)).collect(),
        }
    })
}

/// The kernel over `FRAMES` frames of every case, as the engine runs it: sums and spare
/// buffer against the host's rows, the buffers swapped when a frame is not frozen.
fn kernels(k: &Kernels, s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    let mut max_err = 0f64;
    let mut elements = 0;
    let mut notes = Vec::new();
    for c in CASES {
        let planes = if c.cw == 0 && c.ch == 0 && c.w == 1 {
            1
        } else {
            3
        };
        let dims = [(c.w, c.h), (c.cw, c.ch), (c.cw, c.ch)];
        // Widths that are multiples of 4 get pitches aligned to 8 bytes (the kernel reads
        // them a group at a time), the others an odd pitch (a sample at a time).
        let pitches = dims.map(|(w, _)| match w % 4 {
            0 => (w * c.bytes).max(1).next_multiple_of(8),
            _ => (w.max(1) - 1) * c.bytes + c.bytes + 3,
        });
        let shape = FreezeFrame {
            width: [c.w, c.cw, c.cw],
            height: [c.h, c.ch, c.ch],
            planes,
            ..Default::default()
        };
        let shape = if planes == 1 {
            FreezeFrame {
                width: [c.w, 0, 0],
                height: [c.h, 0, 0],
                ..shape
            }
        } else {
            shape
        }
        .with_offsets();
        let n = shape.count() as usize;
        let stride = shape.buffer_len() as usize;
        let blocks = freeze::blocks(shape.rows);
        // Both frame buffers in one allocation; `state` names the reference (0 or 1).
        let mut bufs = s.alloc_zeros::<u16>(2 * stride.max(4))?;
        let mut state = s.alloc_zeros::<u32>(1)?;
        let mut sel = 0usize;
        let mut partials = s.alloc_zeros::<u64>(blocks as usize)?;
        let mut total = s.alloc_zeros::<u64>(1)?;
        let mut bad_state = 0;
        let (mut host_ref, mut host_spare) = (vec![0u16; n], vec![0u16; n]);
        let mut prev: Option<[Samples; 3]> = None;
        let mut first = true;
        let (mut frozen_frames, mut bad_spare) = (0, 0);
        for f in 0..FRAMES {
            let ch = channels(c, prev.as_ref(), f, r);
            if f == 1 {
                prev = Some(ch.clone());
            }
            let data: Vec<Vec<u8>> = (0..3)
                .map(|i| pack(&ch[i], dims[i].0, dims[i].1, pitches[i], c.bytes, c.shift))
                .collect();
            let mut frame = shape;
            for i in 0..planes as usize {
                frame.chans[i] = Channel {
                    ptr: data[i].as_ptr() as u64,
                    pitch: pitches[i],
                    step: c.bytes,
                    sample_bytes: c.bytes,
                    shift: c.shift,
                    max: ((1u64 << c.depth) - 1) as u32,
                    _pad: 0,
                };
            }
            let mut want = 0u64;
            for i in 0..planes as usize {
                for y in 0..frame.height[i] {
                    let at = (frame.offset[i] + y * frame.width[i]) as usize;
                    want += unsafe {
                        freeze::sad_row(
                            &frame,
                            i,
                            y,
                            host_ref[at..].as_ptr(),
                            host_spare[at..].as_mut_ptr(),
                            first,
                        )
                    };
                }
            }
            let devs: Vec<_> = data
                .iter()
                .map(|d| s.clone_htod(d))
                .collect::<Result<_, _>>()?;
            {
                let guards: Vec<_> = devs.iter().map(|d| DevPtr::of(d, s)).collect();
                let mut dev_frame = frame;
                for (chan, (ptr, _)) in dev_frame
                    .chans
                    .iter_mut()
                    .zip(&guards)
                    .take(planes as usize)
                {
                    chan.ptr = ptr.as_raw();
                }
                let (buffers, _g1) = DevPtrMut::of(&mut bufs, s);
                let (st, _g2) = DevPtrMut::of(&mut state, s);
                let (out, _g3) = DevPtrMut::of(&mut partials, s);
                let (sum, _g4) = DevPtrMut::of(&mut total, s);
                let cfg = LaunchConfig {
                    grid_dim: (blocks, 1, 1),
                    block_dim: (freeze::BLOCK, 1, 1),
                    shared_mem_bytes: 0,
                };
                let warp = LaunchConfig {
                    grid_dim: (1, 1, 1),
                    block_dim: (32, 1, 1),
                    shared_mem_bytes: 0,
                };
                unsafe {
                    k.freeze_sad(s, cfg, dev_frame, buffers, st.as_const(), first as u32, out)?;
                    k.freeze_decide(
                        s,
                        warp,
                        out.as_const(),
                        blocks,
                        shape.count(),
                        c.depth,
                        NOISE,
                        first as u32,
                        st,
                        sum,
                    )?;
                }
            }
            let got = s.clone_dtoh(&total)?[0];
            let partial_sum: u64 = s.clone_dtoh(&partials)?.iter().sum();
            if partial_sum != got {
                max_err = f64::INFINITY;
            }
            let all = s.clone_dtoh(&bufs)?;
            let spare_at = (1 - sel) * stride;
            let got_spare = &all[spare_at..spare_at + n];
            bad_spare += got_spare
                .iter()
                .zip(&host_spare)
                .filter(|(a, b)| a != b)
                .count();
            max_err = max_err.max(rel_err(got as f64, want as f64));
            elements += 1;
            let frozen = !first && freeze::mafd(want, shape.count(), c.depth) <= NOISE;
            frozen_frames += frozen as usize;
            if !frozen {
                sel = 1 - sel;
                std::mem::swap(&mut host_ref, &mut host_spare);
            }
            bad_state += (s.clone_dtoh(&state)?[0] as usize != sel) as usize;
            if f == 0 && got != 0 {
                max_err = f64::INFINITY;
            }
            first = false;
        }
        if bad_spare > 0 || bad_state > 0 {
            max_err = f64::INFINITY;
        }
        notes.push(format!(
            "{}x{} {}-bit: {frozen_frames} frozen of {FRAMES}, {bad_spare} spare samples \
             differ, {bad_state} reference choices differ",
            c.w, c.h, c.depth
        ));
    }
    Ok(Outcome {
        elements,
        max_err,
        tolerance: 0.0,
        note: notes.join(", "),
    })
}

/// The CUDA engine (device frames with the test's odd pitches) against the CPU engine:
/// `freeze-diff`, `ref-freeze-diff` over a sequence with moving and frozen frames (the
/// reference frame kept on the device across them) and a flush.
fn engine(_k: &Kernels, _s: &Arc<CudaStream>, r: &mut Rng) -> Result<Outcome, DriverError> {
    use gpumetrics_engine::{BackendChoice, Engine, EngineConfig, PixelFormat};
    let metric = gpumetrics_engine::MetricSet::named("freeze").expect("freeze is registered");
    let mut max_err = 0f64;
    let mut elements = 0;
    let mut notes = Vec::new();
    for (format, w, h) in [
        (PixelFormat::I420, 173, 97),
        (PixelFormat::I420, 1, 1),
        (PixelFormat::I420_10Le, 65, 33),
        (PixelFormat::P010_10Le, 96, 63),
        (PixelFormat::Nv12, 31, 17),
        (PixelFormat::Gray8, 31, 17),
        (PixelFormat::Bgrx, 20, 10),
    ] {
        let wide = matches!(format, PixelFormat::I420_10Le);
        let engines = [BackendChoice::Cuda, BackendChoice::Cpu].map(|backend| {
            let cfg = EngineConfig {
                metrics: metric,
                backend,
                ..Default::default()
            };
            let layout = gpumetrics_engine::FrameLayout {
                format,
                width: w,
                height: h,
            };
            Engine::new(&cfg, layout, layout).expect("an engine")
        });
        let [mut gpu, mut cpu] = engines;
        assert_eq!(gpu.backend_name(), "cuda");
        let mut base: Option<(Vec<u8>, Vec<u8>)> = None;
        let mut frozen = 0;
        for f in 0..7 {
            if f == 5 {
                gpu.reset();
                cpu.reset();
            }
            // Frames 2 and 3 repeat frame 1 with a byte or two changed (frozen); the
            // others are random.
            let mut fill = |i: usize| {
                let b = r.next_u32() as u8;
                if wide && i % 2 == 1 { b & 3 } else { b }
            };
            let (a, b) = match (&base, f) {
                (Some((ra, rb)), 2 | 3) => {
                    let mut rb = rb.clone();
                    let at = (r.next_u32() as usize) % rb.len();
                    rb[at] = rb[at].wrapping_add(1) & if wide && at % 2 == 1 { 3 } else { 255 };
                    (
                        common::OwnedFrame::new(format, w, h, |i| ra[i]),
                        common::OwnedFrame::new(format, w, h, |i| rb[i]),
                    )
                }
                _ => (
                    common::OwnedFrame::new(format, w, h, &mut fill),
                    common::OwnedFrame::new(format, w, h, &mut fill),
                ),
            };
            if f == 1 {
                base = Some((a.data.clone(), b.data.clone()));
            }
            let got = common::compare_on_device(&mut gpu, &a, &b);
            let want = cpu.compare(&a.host(), &b.host()).expect("cpu scores");
            for field in ["freeze-diff", "ref-freeze-diff"] {
                let (g, c) = (got.get(field), want.get(field));
                let e = match (g, c) {
                    (Some(g), Some(c)) => rel_err(g, c),
                    (None, None) if f == 0 || f == 5 => 0.0,
                    _ => f64::INFINITY,
                };
                max_err = max_err.max(if e.is_nan() { f64::INFINITY } else { e });
                elements += 1;
                frozen += c.is_some_and(|v| v <= 0.001) as usize;
                if f == 6 || e > 0.0 {
                    notes.push(format!(
                        "{} {w}x{h} frame {f} {field}: cuda {g:?} cpu {c:?}",
                        format.name()
                    ));
                }
            }
        }
        notes.push(format!("{} {w}x{h}: {frozen} frozen values", format.name()));
    }
    Ok(Outcome {
        elements,
        max_err,
        tolerance: 0.0,
        note: notes.join(", "),
    })
}
