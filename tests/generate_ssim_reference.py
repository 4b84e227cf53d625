#!/usr/bin/env python3
"""Generates the SSIM / MS-SSIM reference data of engine/tests/ssim_reference.rs.

Natural images (scikit-image's bundled samples) are distorted by real codecs (JPEG through
Pillow, H.264 through ffmpeg/libx264, 8- and 10-bit) and stored as raw planes; the expected
values come from the public references named in ../shared/docs/METRICS.md:

- SSIM: skimage.metrics.structural_similarity(a, b, gaussian_weights=True, sigma=1.5,
  use_sample_covariance=False, data_range=peak) per plane, on float64;
- MS-SSIM: pytorch_msssim.ms_ssim(x, y, data_range=peak, size_average=True) on float64
  tensors (one channel for luma, three for RGB).

Needs: numpy, scikit-image, pillow, torch, pytorch-msssim, ffmpeg with libx264.
    python3 tests/generate_ssim_reference.py   # rewrites tests/data/ssim/
"""

import io
import os
import subprocess
import tempfile

import numpy as np
import torch
from PIL import Image
from pytorch_msssim import ms_ssim
from skimage import data
from skimage.metrics import structural_similarity
from skimage.transform import resize

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "ssim")


def ssim(a, b, peak):
    return structural_similarity(
        a.astype(np.float64),
        b.astype(np.float64),
        gaussian_weights=True,
        sigma=1.5,
        use_sample_covariance=False,
        data_range=peak,
    )


def msssim(planes_a, planes_b, peak):
    x = torch.from_numpy(np.stack([p.astype(np.float64) for p in planes_a])[None])
    y = torch.from_numpy(np.stack([p.astype(np.float64) for p in planes_b])[None])
    return float(ms_ssim(x, y, data_range=peak, size_average=True))


def jpeg(img, quality):
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="JPEG", quality=quality)
    return np.asarray(Image.open(io.BytesIO(buf.getvalue())))


def x264(frames, w, h, pix_fmt, crf, dtype):
    """Encodes the frames (raw bytes, pix_fmt) with libx264 and returns the decoded last one."""
    with tempfile.TemporaryDirectory() as d:
        src, enc, dec = (os.path.join(d, n) for n in ("in.yuv", "out.mkv", "dec.yuv"))
        with open(src, "wb") as f:
            for fr in frames:
                f.write(fr)
        raw = ["-f", "rawvideo", "-pix_fmt", pix_fmt, "-s", f"{w}x{h}"]
        subprocess.run(
            ["ffmpeg", "-v", "error", "-y", *raw, "-i", src, "-c:v", "libx264", "-preset", "medium",
             "-crf", str(crf), "-pix_fmt", pix_fmt, enc],
            check=True,
        )
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", enc, *raw, dec], check=True)
        out = np.fromfile(dec, dtype=dtype)
    n = w * h * 3 // 2
    return out[-n:]


def split_i420(buf, w, h):
    cw, ch = (w + 1) // 2, (h + 1) // 2
    y = buf[: w * h].reshape(h, w)
    u = buf[w * h : w * h + cw * ch].reshape(ch, cw)
    v = buf[w * h + cw * ch :].reshape(ch, cw)
    return y, u, v


def rgb_to_i420(rgb, peak):
    """BT.601 full-range-ish conversion to make YUV sources (the metric works on whatever
    planes it gets; only the pixels matter)."""
    f = rgb.astype(np.float64) / 255.0
    y = 0.299 * f[..., 0] + 0.587 * f[..., 1] + 0.114 * f[..., 2]
    u = (f[..., 2] - y) * 0.564 + 0.5
    v = (f[..., 0] - y) * 0.713 + 0.5
    sub = lambda p: 0.25 * (p[0::2, 0::2] + p[1::2, 0::2] + p[0::2, 1::2] + p[1::2, 1::2])
    q = lambda p: np.clip(np.round(p * peak), 0, peak)
    return q(y), q(sub(u)), q(sub(v))


def main():
    os.makedirs(OUT, exist_ok=True)
    for f in os.listdir(OUT):
        os.remove(os.path.join(OUT, f))
    lines = []

    def write(name, arr, dtype):
        path = os.path.join(OUT, name)
        np.ascontiguousarray(arr).astype(dtype).tofile(path)
        return name

    def case(name, fmt, w, h, ref_file, dist_file, chroma, fields):
        vals = ";".join(f"{k}={float(v)!r}" for k, v in fields.items())
        lines.append(f"{name}\t{fmt}\t{w}\t{h}\t{ref_file}\t{dist_file}\t{int(chroma)}\t{vals}")

    # 1. GRAY8, odd size, JPEG at three qualities (MS-SSIM: min side 187 > 160).
    cam = data.camera()[150:337, 120:371]  # 187 x 251
    h, w = cam.shape
    ref = write("camera_251x187.gray", cam, np.uint8)
    for q in (10, 30, 70):
        d = jpeg(cam, q)
        dist = write(f"camera_251x187_q{q}.gray", d, np.uint8)
        case(f"camera_jpeg_q{q}", "GRAY8", w, h, ref, dist, False,
             {"ssim-y": ssim(cam, d, 255), "ssim": ssim(cam, d, 255), "ms-ssim": msssim([cam], [d], 255)})

    # 2. Small odd GRAY8 (no MS-SSIM).
    small = data.moon()[200:223, 300:337]  # 23 x 37
    d = jpeg(small, 15)
    case("moon_jpeg_small", "GRAY8", 37, 23, write("moon_37x23.gray", small, np.uint8),
         write("moon_37x23_q15.gray", d, np.uint8), False,
         {"ssim-y": ssim(small, d, 255), "ssim": ssim(small, d, 255)})

    # 3. I420 8-bit, x264 (P-frame of a panning clip), chroma on.
    coffee = data.coffee()  # 400 x 600
    w, h = 320, 240
    frames = []
    for k in range(3):
        y, u, v = rgb_to_i420(coffee[40 + 4 * k : 40 + 4 * k + h, 100 + 6 * k : 100 + 6 * k + w], 255)
        frames.append(np.concatenate([y.ravel(), u.ravel(), v.ravel()]).astype(np.uint8).tobytes())
    src = np.frombuffer(frames[-1], dtype=np.uint8)
    ref = write("coffee_320x240.i420", src, np.uint8)
    for crf in (30, 42):
        dec = x264(frames, w, h, "yuv420p", crf, np.uint8)
        dist = write(f"coffee_320x240_crf{crf}.i420", dec, np.uint8)
        a, b = split_i420(src, w, h), split_i420(dec, w, h)
        s = [ssim(pa, pb, 255) for pa, pb in zip(a, b)]
        case(f"coffee_x264_crf{crf}", "I420", w, h, ref, dist, True,
             {"ssim-y": s[0], "ssim-u": s[1], "ssim-v": s[2], "ssim": s[0],
              "ssim-all": (4 * s[0] + s[1] + s[2]) / 6, "ms-ssim": msssim([a[0]], [b[0]], 255)})

    # 4. I420_10LE, x264 10-bit, real 10-bit source (resampled image), chroma off.
    astro = resize(data.astronaut(), (182, 258), anti_aliasing=True)  # float in [0, 1]
    w, h = 256, 176
    frames = []
    for k in range(3):
        crop = astro[k : k + h, k : k + w] * 255.0  # rgb_to_i420 takes 0..255
        y, u, v = rgb_to_i420(crop * 1.0, 1023)
        frames.append(np.concatenate([y.ravel(), u.ravel(), v.ravel()]).astype("<u2").tobytes())
    src = np.frombuffer(frames[-1], dtype="<u2")
    ref = write("astronaut_256x176.i420p10", src, "<u2")
    for crf in (28, 40):
        dec = x264(frames, w, h, "yuv420p10le", crf, "<u2")
        dist = write(f"astronaut_256x176_crf{crf}.i420p10", dec, "<u2")
        a, b = split_i420(src, w, h), split_i420(dec, w, h)
        case(f"astronaut_x264_10bit_crf{crf}", "I420_10LE", w, h, ref, dist, False,
             {"ssim-y": ssim(a[0], b[0], 1023), "ssim": ssim(a[0], b[0], 1023),
              "ms-ssim": msssim([a[0]], [b[0]], 1023)})

    # 5. RGB packed, odd size, JPEG: ssim = mean over R, G, B (channel_axis=2).
    cat = data.chelsea()[60:233, 100:311]  # 173 x 211
    h, w = cat.shape[:2]
    d = jpeg(cat, 20)
    per = [ssim(cat[..., c], d[..., c], 255) for c in range(3)]
    whole = structural_similarity(cat.astype(np.float64), d.astype(np.float64), gaussian_weights=True,
                                  sigma=1.5, use_sample_covariance=False, data_range=255, channel_axis=2)
    case("chelsea_jpeg_rgb", "RGB", w, h, write("chelsea_211x173.rgb", cat, np.uint8),
         write("chelsea_211x173_q20.rgb", d, np.uint8), False,
         {"ssim-r": per[0], "ssim-g": per[1], "ssim-b": per[2], "ssim": whole,
          "ssim-all": whole, "ms-ssim": msssim([cat[..., c] for c in range(3)], [d[..., c] for c in range(3)], 255)})

    with open(os.path.join(OUT, "references.tsv"), "w") as f:
        f.write("# generated by tests/generate_ssim_reference.py: name format width height "
                "reference distorted chroma fields\n")
        f.write("\n".join(lines) + "\n")
    total = sum(os.path.getsize(os.path.join(OUT, n)) for n in os.listdir(OUT))
    print(f"{len(lines)} cases, {total} bytes in {OUT}")


if __name__ == "__main__":
    main()
