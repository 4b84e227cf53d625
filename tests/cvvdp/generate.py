#!/usr/bin/env python3
# SPDX-License-Identifier: MPL-2.0
"""ColorVideoVDP 0.5.7's JOD on synthetic clips: tests/data/cvvdp/values.json.

Run through scripts/cvvdp-reference.sh, which installs `cvvdp==0.5.7` (and the torch it
brings) in a virtual environment first. CI reads the committed values and needs neither.

Each clip is a reference and a distorted video made of integer formulas (`frame` below),
which the engine's tests compute again bit for bit, written as the raw .yuv files the
reference reads (their names carry size, depth, subsampling, colour space and frame
rate). For each clip the reference's JOD is recorded on its first k frames for several k
(the `cvvdp` field of frame k-1 is the JOD of the frames since the start), with the display
model named in the case, on the CPU (`--device cpu`, `temp_padding="replicate"`, the
reference's defaults otherwise).
"""

import json
import os
import sys
import tempfile

import numpy as np

# name, width, height, frames, bit depth, subsampling, colour space, fps, display model.
# Odd sizes are 4:4:4: the reference's .yuv reader halves 4:2:0 chroma sizes downwards.
CASES = [
    ("sdr8-420", 96, 64, 10, 8, "420", "709", 30, "standard_fhd"),
    ("sdr8-444-odd", 101, 75, 24, 8, "444", "709", 25, "standard_fhd"),
    ("sdr10-420", 128, 72, 30, 10, "420", "709", 30, "standard_4k"),
    ("pq10-420", 96, 54, 24, 10, "420", "2020", 24, "standard_hdr_pq"),
    ("pq10-444-odd", 77, 45, 12, 10, "444", "2020", 30, "standard_hdr_pq"),
    ("sdr8-420-long", 64, 48, 120, 8, "420", "709", 60, "standard_fhd"),
]

MASK = 0xFFFFFFFF


def noise(x, y, t, seed):
    """-3..3 from a hash of the sample's place (u32 arithmetic, as in the Rust tests)."""
    h = ((x * 73856093) & MASK) ^ ((y * 19349663) & MASK) ^ ((t * 83492791 + seed) & MASK)
    return h % 7 - 3


def plane(w, h, t, bits, which, distorted):
    """One plane of frame t: a moving XOR texture (luma) or slow ramps (chroma), and for the
    distorted clip a little noise and, every 4th frame, a lighter picture."""
    ys, xs = np.mgrid[0:h, 0:w].astype(np.int64)
    if which == 0:
        v = 16 + (((xs * 5 + t * 3) ^ (ys * 7)) * 37 % 200)
    elif which == 1:
        v = 108 + (xs * 3 + ys * 5 + t * 2) % 40
    else:
        v = 113 + (xs * 2 + ys * 3 + t * 7) % 30
    if distorted:
        n = np.vectorize(noise)(xs, ys, t, which)
        v = v + n + (4 if (which == 0 and t % 4 == 3) else 0)
    v = np.clip(v, 0, 255)
    if bits == 10:
        v = v * 4 + ((xs + ys + t) & 3)
    return v


def frame(w, h, t, bits, ss, distorted):
    cw, ch = (w, h) if ss == "444" else (w // 2, h // 2)
    out = [plane(w, h, t, bits, 0, distorted)]
    for c in (1, 2):
        full = plane(w, h, t, bits, c, distorted)
        out.append(full[:ch, :cw] if ss == "444" else full[0 : 2 * ch : 2, 0 : 2 * cw : 2])
    dtype = "<u2" if bits > 8 else "u1"
    return b"".join(p.astype(dtype).tobytes() for p in out)


def fnv1a64(data, h=0xCBF29CE484222325):
    """FNV-1a (64 bits) of `data` continuing from `h`: what the Rust tests compute over the
    clips they make, to show that they made the same bytes."""
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def write_clip(path, case, distorted):
    """Writes the clip and returns the FNV-1a of its bytes."""
    name, w, h, n, bits, ss, cs, fps, _ = case
    digest = 0xCBF29CE484222325
    with open(path, "wb") as f:
        for t in range(n):
            data = frame(w, h, t, bits, ss, distorted)
            digest = fnv1a64(data, digest)
            f.write(data)
    return digest


# Display-encoded RGB triples each display model is asked for the light of.
TRIPLES = [
    (0.0, 0.0, 0.0),
    (0.01, 0.01, 0.01),
    (0.04, 0.04, 0.04),
    (0.1, 0.1, 0.1),
    (0.25, 0.5, 0.75),
    (0.5, 0.5, 0.5),
    (0.6, 0.3, 0.9),
    (0.9, 0.9, 0.9),
    (1.0, 1.0, 1.0),
]


def displays():
    """Each display model's pixels per degree, black level, reflection and the light of
    `TRIPLES`, as the reference's display model classes give them."""
    import torch
    from pycvvdp.display_model import vvdp_display_geometry, vvdp_display_photometry

    names = json.load(open(os.path.join(os.path.dirname(__import__("pycvvdp").__file__),
                                        "vvdp_data", "display_models.json")))
    out = []
    for name in names:
        photometry = vvdp_display_photometry.load(name, [])
        geometry = vvdp_display_geometry.load(name, [])
        v = torch.tensor(TRIPLES, dtype=torch.float32).view(len(TRIPLES), 3, 1, 1, 1)
        light = photometry.forward(v).view(len(TRIPLES), 3)
        black, refl = photometry.get_black_level()
        out.append({
            "name": name,
            "ppd": geometry.get_ppd(),
            "black": black,
            "reflection": refl,
            "light": [[float(x) for x in row] for row in light.tolist()],
        })
    return out


def temporal_filters():
    """The four temporal filters' taps at several frame rates."""
    import torch
    import pycvvdp

    metric = pycvvdp.cvvdp(display_name="standard_fhd", device=torch.device("cpu"), quiet=True)
    out = []
    for fps in (1, 10, 24, 25, 29.97, 30, 50, 60, 120):
        taps, _ = metric.get_temporal_filters(fps)
        out.append({"fps": fps, "taps": [[float(x) for x in t.tolist()] for t in taps]})
    return out


# Spatial frequencies (cycles per degree) and log10 background luminances the CSF is
# looked up at, past both ends of its table included.
CSF_RHO = (0.05, 0.5, 1.0, 2.0, 4.0, 8.3, 16.0, 32.0, 64.0, 200.0)
CSF_LOG_L = (-4.0, -2.0, -1.0, -0.3, 0.0, 0.7, 1.0, 2.0, 3.0, 4.5, 6.0)


def csf():
    """castleCSF's sensitivity per channel (sustained Y, RG, VY; transient Y) at `CSF_RHO`
    × `CSF_LOG_L`, as the metric looks it up."""
    import torch
    import pycvvdp

    metric = pycvvdp.cvvdp(display_name="standard_fhd", device=torch.device("cpu"), quiet=True)
    out = []
    for channel, (omega, cc) in enumerate([(0, 0), (0, 1), (0, 2), (5, 0)]):
        rows = []
        for rho in CSF_RHO:
            log_l = torch.tensor(CSF_LOG_L, dtype=torch.float32)
            s = metric.csf.sensitivity(rho, omega, log_l, cc, metric.csf_sigma)
            rows.append([float(x) for x in s.flatten().tolist()])
        out.append({"channel": channel, "s": rows})
    return {"rho": CSF_RHO, "log_l_bkg": CSF_LOG_L, "channels": out}


# Pixels (x, y) whose colour the generator records, from frame 0 of some clips.
PIXELS = ((0, 0), (1, 0), (0, 1), (1, 1), (5, 7), (-1, 0), (0, -1), (-1, -1), (-2, -3))


def colours(tmp):
    """Frame 0 of three clips (both videos) as the reference reads it: display-encoded RGB
    and DKL (D65, cd/m²) at `PIXELS` (negative: from the far edge)."""
    import torch
    import pycvvdp

    out = []
    for case in CASES:
        name, w, h, n, bits, ss, cs, fps, display = case
        if name not in ("sdr8-420", "pq10-420", "pq10-444-odd"):
            continue
        stem = f"{w}x{h}_{bits}b_{ss}_{cs}_{fps}fps.yuv"
        ref = os.path.join(tmp, f"ref_{stem}")
        dist = os.path.join(tmp, f"dist_{stem}")
        vs = pycvvdp.video_source_yuv_file(dist, ref, display_photometry=display, frames=1)
        for side, reader, get in (
            ("reference", vs.reference_vidr, vs.get_reference_frame),
            ("distorted", vs.test_vidr, vs.get_test_frame),
        ):
            rgb = reader.get_frame_rgb_tensor(0, torch.device("cpu"))  # H, W, 3
            dkl = get(0, device=torch.device("cpu"), colorspace="DKLd65")  # 1, 3, 1, H, W
            px = []
            for x, y in PIXELS:
                x, y = x % w, y % h
                px.append({
                    "x": x,
                    "y": y,
                    "rgb": [float(c) for c in rgb[y, x, :].tolist()],
                    "dkl": [float(dkl[0, c, 0, y, x]) for c in range(3)],
                })
            out.append({"case": name, "side": side, "pixels": px})
    return out


def pyramid_image(w, h):
    """A plane with detail at every scale (integer formula, as in the Rust tests)."""
    ys, xs = np.mgrid[0:h, 0:w].astype(np.int64)
    v = ((xs * 7 + ys * 3) ^ (xs * ys)) % 97 + (xs // 8 + ys // 5) % 13 * 10
    return v.astype(np.float32) / 10.0


def pyramids():
    """The decimated Laplacian pyramid (`lpyr_dec`) of `pyramid_image` at several sizes,
    every parity of rows and columns: band count and frequencies, and per level its size
    and every sample."""
    import torch
    from pycvvdp.lpyr_dec import lpyr_dec

    out = []
    for w, h, ppd in ((96, 64, 60.0), (101, 75, 37.7), (64, 45, 75.4), (33, 50, 20.0), (40, 41, 2.0)):
        p = lpyr_dec(w, h, ppd, torch.device("cpu"))
        img = torch.tensor(pyramid_image(w, h)).view(1, 1, h, w)
        lpyr, gpyr = p.laplacian_pyramid_dec(img, p.height + 1)
        out.append({
            "width": w,
            "height": h,
            "ppd": ppd,
            "levels": int(p.height),
            "freqs": [float(f) for f in p.get_freqs()],
            "laplacian": [
                {"width": int(l.shape[-1]), "height": int(l.shape[-2]),
                 "data": [float(x) for x in l.flatten().tolist()]}
                for l in lpyr
            ],
        })
    return out


def contrast_channels(w, h):
    """Eight channels (test and reference interleaved: sustained Y, RG, VY, transient Y) of
    a pair, as luminance-like values (integer formulas, as in the Rust tests)."""
    ys, xs = np.mgrid[0:h, 0:w].astype(np.int64)
    out = []
    for c in range(8):
        v = ((xs * (3 + c) + ys * 5) ^ (xs * ys + c * 11)) % 89
        if c in (0, 1):
            v = v * 2 + 1 + c  # luminance: positive, the reference's a little brighter
        else:
            v = v - 44  # opponent and transient channels: signed
        out.append(v.astype(np.float32) / 4.0)
    return np.stack(out)


def contrasts():
    """Weber contrast per band (`weber_contrast_pyr`, `weber_g1`) of `contrast_channels`:
    per band every 7th sample of each channel's contrast and of both log backgrounds."""
    import torch
    from pycvvdp.lpyr_dec import weber_contrast_pyr

    out = []
    for w, h, ppd in ((48, 36, 30.0), (37, 29, 60.0)):
        p = weber_contrast_pyr(w, h, ppd, torch.device("cpu"), "weber_g1")
        img = torch.tensor(contrast_channels(w, h)).view(1, 8, 1, h, w)
        lpyr, lbkg = p.decompose(img)
        out.append({
            "width": w,
            "height": h,
            "ppd": ppd,
            "levels": int(p.height),
            "bands": [
                {
                    "width": int(l.shape[-1]),
                    "height": int(l.shape[-2]),
                    "contrast": [[float(x) for x in l[0, c, 0].flatten()[::7].tolist()] for c in range(8)],
                    "log_background": [[float(x) for x in b[0, s, 0].flatten()[::7].tolist()] for s in range(2)],
                }
                for l, b in zip(lpyr, lbkg)
            ],
        })
    return out


def masking_inputs(w, h):
    """Test and reference contrasts (signed) and sensitivities (positive) of one band's four
    channels (integer formulas, as in the Rust tests)."""
    import torch

    ys, xs = np.mgrid[0:h, 0:w].astype(np.int64)
    t, r, s = [], [], []
    for c in range(4):
        t.append((((xs * 5 + ys * (c + 2)) ^ (xs + c)) % 41 - 20) / 40.0)
        r.append((((xs * 3 + ys * 7 + c) ^ (ys * 2)) % 37 - 18) / 45.0)
        s.append(1.0 + ((xs + 2 * ys + 5 * c) % 23) * 4.0)
    f = lambda a: torch.tensor(np.stack(a).astype(np.float32)).view(1, 4, 1, h, w)
    return f(t), f(r), f(s)


def maskings():
    """`apply_masking_model` (mult-mutual) of `masking_inputs` at a size the phase
    uncertainty blurs and at one it leaves alone: every sample of each channel."""
    import torch
    import pycvvdp

    metric = pycvvdp.cvvdp(display_name="standard_fhd", device=torch.device("cpu"), quiet=True)
    out = []
    for w, h in ((20, 15), (9, 7), (5, 4)):
        t, r, s = masking_inputs(w, h)
        d = metric.apply_masking_model(t, r, s)
        out.append({"width": w, "height": h,
                    "d": [[float(x) for x in d[0, c, 0].flatten().tolist()] for c in range(4)]})
    return out


def poolings():
    """`do_pooling_and_jods` of per-channel, per-frame, per-band differences (integer
    formulas, as in the Rust tests; small ones too, for the linear part of `met2jod`)."""
    import torch
    import pycvvdp

    metric = pycvvdp.cvvdp(display_name="standard_fhd", device=torch.device("cpu"), quiet=True)
    out = []
    for channels, frames, bands, scale in ((4, 1, 5, 1.0), (4, 3, 6, 1.0), (4, 10, 4, 0.01), (3, 1, 5, 0.5), (4, 25, 7, 3.0)):
        q = np.zeros((channels, frames, bands), dtype=np.float32)
        for c in range(channels):
            for f in range(frames):
                for b in range(bands):
                    q[c, f, b] = ((c * 7 + f * 3 + b * 5) % 11 + 1) * scale / 10.0
        jod = metric.do_pooling_and_jods(torch.tensor(q).view(1, channels, frames, bands))
        out.append({"q": q.tolist(), "jod": float(jod)})
    return out


# RGB clips given to `predict` as uint8 arrays (display-encoded, dim_order "FHWC"): what the
# element measures on RGB caps. name, width, height, frames, fps, display model.
RGB_CASES = [
    ("rgb8-odd", 67, 41, 12, 25, "standard_fhd"),
    ("rgb8-hdr-pq", 48, 36, 8, 30, "standard_hdr_pq"),
]


def rgb_frame(w, h, t, distorted):
    """Frame t as H×W×3 uint8: the `plane` formulas of the three channels as R, G, B."""
    return np.stack([plane(w, h, t, 8, c, distorted) for c in range(3)], axis=-1).astype(np.uint8)


def rgb_cases():
    """`predict` on the RGB clips' first k frames for several k."""
    import torch
    import pycvvdp

    out = []
    for name, w, h, n, fps, display in RGB_CASES:
        ref = np.stack([rgb_frame(w, h, t, False) for t in range(n)])
        dist = np.stack([rgb_frame(w, h, t, True) for t in range(n)])
        metric = pycvvdp.cvvdp(display_name=display, device=torch.device("cpu"), quiet=True)
        values = []
        for k in sorted({1, 2, n // 2, n}):
            jod, _ = metric.predict(dist[:k], ref[:k], dim_order="FHWC", frames_per_second=fps)
            values.append({"frames": k, "jod": float(jod)})
            print(f"{name}: {k} frames: {float(jod):.6f} JOD", flush=True)
        out.append({
            "name": name, "width": w, "height": h, "frames": n, "fps": fps, "display": display,
            "fnv1a64": {"reference": f"{fnv1a64(ref.tobytes()):016x}",
                        "distorted": f"{fnv1a64(dist.tobytes()):016x}"},
            "jod": values,
        })
    return out


HEATMAP_CASES = [
    # name, width, height, frames, fps, display
    ("rgb_48x40_heat", 48, 40, 4, 30.0, "standard_fhd"),
    ("rgb_37x29_heat", 37, 29, 3, 24.0, "standard_4k"),
]


def heatmaps():
    """The `raw` heat map (`heatmap="raw"`) of the RGB clips, every frame, in float32: the
    reference stores it as float16, so the float32 blocks are caught as
    `process_block_of_frames` returns them."""
    import torch
    import pycvvdp

    out = []
    for name, w, h, n, fps, display in HEATMAP_CASES:
        ref = np.stack([rgb_frame(w, h, t, False) for t in range(n)])
        dist = np.stack([rgb_frame(w, h, t, True) for t in range(n)])
        metric = pycvvdp.cvvdp(display_name=display, device=torch.device("cpu"), quiet=True,
                               heatmap="raw")
        blocks = []
        process = metric.process_block_of_frames

        def caught(*args, **kwargs):
            q, block = process(*args, **kwargs)
            blocks.append(block.detach().float().clone())
            return q, block

        metric.process_block_of_frames = caught
        jod, stats = metric.predict(dist, ref, dim_order="FHWC", frames_per_second=fps)
        maps = torch.cat(blocks, dim=2)[0, 0]  # frames × H × W
        assert maps.shape == (n, h, w), maps.shape
        print(f"{name}: {float(jod):.6f} JOD, heat map max {float(maps.max()):.6f}", flush=True)
        out.append({
            "name": name, "width": w, "height": h, "frames": n, "fps": fps, "display": display,
            "jod": float(jod),
            "maps": [[float(f"{v:.7g}") for v in m.flatten().tolist()] for m in maps],
        })
    return out


def main():
    import torch
    import pycvvdp

    out = sys.argv[1] if len(sys.argv) > 1 else "tests/data/cvvdp/values.json"
    if len(sys.argv) > 2 and sys.argv[2] == "--only-heatmaps":
        # Adds or replaces the heat maps alone in an existing file.
        with open(out) as f:
            document = json.load(f)
        document["heatmaps"] = heatmaps()
        with open(out, "w") as f:
            json.dump(document, f, indent=1)
            f.write("\n")
        return
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            name, w, h, n, bits, ss, cs, fps, display = case
            stem = f"{w}x{h}_{bits}b_{ss}_{cs}_{fps}fps.yuv"
            ref = os.path.join(tmp, f"ref_{stem}")
            dist = os.path.join(tmp, f"dist_{stem}")
            ref_fnv = write_clip(ref, case, False)
            dist_fnv = write_clip(dist, case, True)
            metric = pycvvdp.cvvdp(display_name=display, device=torch.device("cpu"), quiet=True)
            prefixes = sorted({1, 2, 5, n // 2, n})
            values = []
            for k in prefixes:
                vs = pycvvdp.video_source_yuv_file(dist, ref, display_photometry=display, frames=k)
                jod, _ = metric.predict_video_source(vs)
                values.append({"frames": k, "jod": float(jod)})
                print(f"{name}: {k} frames: {float(jod):.6f} JOD", flush=True)
            results.append(
                {
                    "name": name,
                    "width": w,
                    "height": h,
                    "frames": n,
                    "bit_depth": bits,
                    "subsampling": ss,
                    "colour_space": cs,
                    "fps": fps,
                    "display": display,
                    "fnv1a64": {"reference": f"{ref_fnv:016x}", "distorted": f"{dist_fnv:016x}"},
                    "jod": values,
                }
            )
        colour = colours(tmp)
    # Everything first: a failure leaves the committed file as it was.
    document = {
        "reference": f"cvvdp {pycvvdp.__version__ if hasattr(pycvvdp, '__version__') else '0.5.7'}",
        "torch": torch.__version__,
        "device": "cpu",
        "generator": "tests/cvvdp/generate.py",
        "cases": results,
        "rgb_cases": rgb_cases(),
        "triples": TRIPLES,
        "displays": displays(),
        "temporal_filters": temporal_filters(),
        "csf": csf(),
        "colours": colour,
        "pyramids": pyramids(),
        "contrasts": contrasts(),
        "maskings": maskings(),
        "poolings": poolings(),
        "heatmaps": heatmaps(),
    }
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(document, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
