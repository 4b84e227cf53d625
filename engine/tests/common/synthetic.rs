//! Synthetic frame pairs of every layout the CUDA tests cover, without FFmpeg (the GPU
//! machine has none): a smooth pattern with edges and texture, and a distorted copy.

use gpumetrics_engine::{
    Colorimetry, DeviceFrame, Engine, Frame, HostFrame, Matrix, PixelFormat, Plane, Primaries,
    Transfer,
};

/// A smooth pattern with edges and texture, and a distorted copy (blur-like offset,
/// quantisation and noise), as raw samples of `format` (no padding).
pub fn frames(
    format: PixelFormat,
    w: usize,
    h: usize,
) -> (Vec<u8>, Vec<u8>, Vec<usize>, Vec<usize>) {
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut noise = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 60) as f64 - 8.0
    };
    let val = |x: f64, y: f64, c: usize| {
        let v = 128.0
            + 70.0 * ((x / (9.0 + c as f64)).sin() * (y / 13.0).cos())
            + if (x as usize / 16 + y as usize / 16).is_multiple_of(2) {
                30.0
            } else {
                -30.0
            };
        v.clamp(0.0, 255.0)
    };
    let mut r = Vec::new();
    let mut d = Vec::new();
    let mut push = |v: f64, n: f64, wide: bool| {
        let a = v.round() as u16;
        let b = ((v + n) / 6.0).round().clamp(0.0, 42.0) as u16 * 6;
        for (out, s) in [(&mut r, a), (&mut d, b)] {
            if wide {
                out.extend(((s << 2) << 6).to_le_bytes());
            } else {
                out.push(s as u8);
            }
        }
    };
    let (strides, offsets);
    match format {
        PixelFormat::Rgb => {
            for y in 0..h {
                for x in 0..w {
                    for c in 0..3 {
                        push(val(x as f64, y as f64, c), noise(), false);
                    }
                }
            }
            strides = vec![3 * w];
            offsets = vec![0];
        }
        PixelFormat::I420 | PixelFormat::Nv12 | PixelFormat::P010_10Le => {
            let wide = format == PixelFormat::P010_10Le;
            let bytes = if wide { 2 } else { 1 };
            for y in 0..h {
                for x in 0..w {
                    push(
                        16.0 + val(x as f64, y as f64, 0) * 219.0 / 255.0,
                        noise(),
                        wide,
                    );
                }
            }
            let chroma = |x: usize, y: usize, c: usize| {
                16.0 + val(2.0 * x as f64, 2.0 * y as f64, c + 1) * 224.0 / 255.0
            };
            if format == PixelFormat::I420 {
                for c in 0..2 {
                    for y in 0..ch {
                        for x in 0..cw {
                            push(chroma(x, y, c), noise(), false);
                        }
                    }
                }
                strides = vec![w, cw, cw];
                offsets = vec![0, w * h, w * h + cw * ch];
            } else {
                for y in 0..ch {
                    for x in 0..cw {
                        for c in 0..2 {
                            push(chroma(x, y, c), noise(), wide);
                        }
                    }
                }
                strides = vec![w * bytes, 2 * cw * bytes];
                offsets = vec![0, w * h * bytes];
            }
        }
        other => unreachable!("{other:?}"),
    }
    (r, d, strides, offsets)
}

pub fn planes<'a>(offsets: &[usize], strides: &[usize], data: &'a [u8]) -> Vec<Plane<'a>> {
    offsets
        .iter()
        .zip(strides)
        .map(|(o, s)| Plane {
            data: &data[*o..],
            stride: *s,
        })
        .collect()
}

/// The frame whose planes start at `base + offsets[i]`, `strides[i]` apart, in GPU memory.
pub fn device_frame(base: u64, offsets: &[usize], strides: &[usize]) -> Frame<'static> {
    let mut f = DeviceFrame {
        n_planes: offsets.len(),
        ..Default::default()
    };
    for (i, (o, s)) in offsets.iter().zip(strides).enumerate() {
        f.ptrs[i] = base + *o as u64;
        f.pitches[i] = *s;
    }
    Frame::Device(f)
}

/// Device memory (MiB) that the CUDA engine `make` builds takes once it has measured one
/// w×h I420 pair of [`frames`] (its buffers and upload buffers). Run such a test alone:
/// memory freed by earlier tests stays in the stream-ordered pool and would be reused.
pub fn device_memory_mib(w: usize, h: usize, make: impl FnOnce() -> Engine) -> f64 {
    let ctx = cudarc::driver::CudaContext::new(0).unwrap();
    ctx.bind_to_thread().unwrap();
    let (r, d, strides, offsets) = frames(PixelFormat::I420, w, h);
    let (rp, dp) = (
        planes(&offsets, &strides, &r),
        planes(&offsets, &strides, &d),
    );
    let (free0, _) = cudarc::driver::result::mem_get_info().unwrap();
    let mut e = make();
    e.compare(
        &Frame::Host(HostFrame::new(&rp)),
        &Frame::Host(HostFrame::new(&dp)),
    )
    .unwrap();
    ctx.bind_to_thread().unwrap();
    let (free1, _) = cudarc::driver::result::mem_get_info().unwrap();
    (free0 - free1) as f64 / (1 << 20) as f64
}

/// Legal limited-range codes (8-bit scale) whose R'G'B' leaves [0, 1] after the Y'CbCr
/// matrix, with the copy the distorted frame gets: Y' 235 with Cb = Cr = 240 (R' ≈ 1.7 under
/// BT.2020), Y' 16 with extreme chroma (R'G'B' below 0), and saturated colours.
const OUT_OF_RANGE: [([u8; 3], [u8; 3]); 6] = [
    ([235, 240, 240], [229, 236, 233]),
    ([235, 16, 16], [231, 22, 19]),
    ([16, 240, 240], [21, 235, 238]),
    ([16, 16, 240], [19, 20, 234]),
    ([235, 240, 16], [232, 233, 20]),
    ([126, 16, 240], [122, 21, 236]),
];

/// [`frames`] (I420 or P010) with a third of its 8×8 blocks (4×4 chroma samples) set to
/// [`OUT_OF_RANGE`] colours: a pair whose R'G'B' goes above 1 and below 0 although every code
/// value is legal, as saturated colours and codec overshoot give.
pub fn out_of_range_frames(
    format: PixelFormat,
    w: usize,
    h: usize,
) -> (Vec<u8>, Vec<u8>, Vec<usize>, Vec<usize>) {
    let (mut r, mut d, strides, offsets) = frames(format, w, h);
    let wide = match format {
        PixelFormat::I420 => false,
        PixelFormat::P010_10Le => true,
        other => unreachable!("{other:?}"),
    };
    // 8-bit code at sample index `i` of plane `p` (P010: interleaved chroma, `c` = 0 or 1).
    let set = |buf: &mut Vec<u8>, at: usize, code: u8| {
        if wide {
            buf[at..at + 2].copy_from_slice(&(((code as u16) << 2) << 6).to_le_bytes());
        } else {
            buf[at] = code;
        }
    };
    let bytes = if wide { 2 } else { 1 };
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    for cy in 0..ch {
        for cx in 0..cw {
            let (tx, ty) = (cx / 4, cy / 4);
            if (tx + 2 * ty) % 3 != 0 {
                continue;
            }
            let (a, b) = OUT_OF_RANGE[(tx * 7 + ty * 3) % OUT_OF_RANGE.len()];
            for (buf, c) in [(&mut r, a), (&mut d, b)] {
                for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                    let (x, y) = (2 * cx + dx, 2 * cy + dy);
                    if x < w && y < h {
                        set(buf, offsets[0] + y * strides[0] + x * bytes, c[0]);
                    }
                }
                if wide {
                    let at = offsets[1] + cy * strides[1] + cx * 2 * bytes;
                    set(buf, at, c[1]);
                    set(buf, at + bytes, c[2]);
                } else {
                    set(buf, offsets[1] + cy * strides[1] + cx, c[1]);
                    set(buf, offsets[2] + cy * strides[2] + cx, c[2]);
                }
            }
        }
    }
    (r, d, strides, offsets)
}

/// BT.2100 colorimetry (BT.2020 matrix and primaries) with `transfer` (PQ or HLG): the
/// colour of the out-of-range tests' HDR frames.
pub fn bt2100(transfer: Transfer) -> Colorimetry {
    Colorimetry {
        matrix: Matrix::Bt2020,
        transfer,
        primaries: Primaries::Bt2020,
        ..Colorimetry::default()
    }
}
