#!/usr/bin/env python3
# SPDX-License-Identifier: MPL-2.0
"""Reference values of the distortion maps (issue 48): tests/data/maps/values.json.

The pairs are the SSIM references' natural images (tests/data/ssim/: JPEG and H.264 at 8 and
10 bits, odd sizes, one smaller than the window), read as luma planes. For each pair:

- `ssim`: scikit-image's `structural_similarity(a, b, gaussian_weights=True, sigma=1.5,
  use_sample_covariance=False, data_range=peak, full=True)` on float64: the map at every
  pixel of `sampled` (the reflected border, the corners, pixels inside), to 9 significant
  digits, and the mean SSIM it returns;
- `squared-error`: NumPy's `(a - b)**2` on int64, its sum and maximum.

Run with a Python that has numpy and scikit-image (scripts' virtual environments have it:
`python -m pip install scikit-image`):
    python3 tests/maps/generate.py [tests/data/maps/values.json]
"""

import json
import os
import sys

import numpy as np
from skimage.metrics import structural_similarity

HERE = os.path.dirname(os.path.abspath(__file__))
SSIM_DATA = os.path.join(HERE, "..", "data", "ssim")

# name, file of the reference, file of the distorted, width, height, bytes per sample, peak.
PAIRS = [
    ("camera-q10", "camera_251x187.gray", "camera_251x187_q10.gray", 251, 187, 1, 255),
    ("camera-q70", "camera_251x187.gray", "camera_251x187_q70.gray", 251, 187, 1, 255),
    ("moon-q15", "moon_37x23.gray", "moon_37x23_q15.gray", 37, 23, 1, 255),
    ("coffee-crf42", "coffee_320x240.i420", "coffee_320x240_crf42.i420", 320, 240, 1, 255),
    ("astronaut-crf40", "astronaut_256x176.i420p10", "astronaut_256x176_crf40.i420p10", 256, 176, 2, 1023),
]


def luma(name, w, h, bps):
    dtype = "<u2" if bps == 2 else "u1"
    return np.fromfile(os.path.join(SSIM_DATA, name), dtype=dtype)[: w * h].reshape(h, w)


def sampled(h, w):
    """Pixels recorded: every 3rd of the 5-pixel border all round (where the filters
    reflect), every 31st inside, the corners always."""
    out = []
    for y in range(h):
        for x in range(w):
            border = y < 5 or x < 5 or y >= h - 5 or x >= w - 5
            corner = (x < 2 or x >= w - 2) and (y < 2 or y >= h - 2)
            i = y * w + x
            if corner or (border and i % 3 == 0) or i % 31 == 0:
                out.append((x, y))
    return out


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "data", "maps", "values.json")
    import skimage

    cases = []
    for name, rf, df, w, h, bps, peak in PAIRS:
        a, b = luma(rf, w, h, bps), luma(df, w, h, bps)
        mssim, s = structural_similarity(
            a.astype(np.float64), b.astype(np.float64), gaussian_weights=True, sigma=1.5,
            use_sample_covariance=False, data_range=peak, full=True)
        se = (a.astype(np.int64) - b.astype(np.int64)) ** 2
        px = sampled(h, w)
        cases.append({
            "name": name, "reference": rf, "distorted": df, "width": w, "height": h,
            "bytes": bps, "peak": peak,
            "ssim": {"mean": float(mssim), "pixels": [[x, y, float(f"{s[y, x]:.9g}")] for x, y in px]},
            "squared-error": {"sum": int(se.sum()), "max": int(se.max())},
        })
        print(f"{name}: ssim {mssim:.6f}, squared error sum {int(se.sum())}")
    doc = {"generator": "tests/maps/generate.py", "scikit-image": skimage.__version__,
           "numpy": np.__version__, "cases": cases}
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(doc, f)
        f.write("\n")


if __name__ == "__main__":
    main()
