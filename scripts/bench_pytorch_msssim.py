#!/usr/bin/env python3
"""Throughput of pytorch-msssim's `ssim` and `ms_ssim` on the GPU, one luma plane per pair
(batch 1, 1 channel), frames already on the GPU: the comparison rows of the gpumetrics
SSIM benchmark (docs/BENCHMARKS.md). Prints a Markdown table.

    python3 scripts/bench_pytorch_msssim.py [--seconds 1] [--sizes 1080p,2160p]
"""

import argparse

import torch
from pytorch_msssim import ms_ssim, ssim

SIZES = {"720p": (720, 1280), "1080p": (1080, 1920), "2160p": (2160, 3840)}


def rate(fn, x, y, seconds):
    for _ in range(5):  # warm-up (cuDNN algorithm choice, allocator)
        fn(x, y, data_range=255, size_average=True)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    n, elapsed = 0, 0.0
    start.record()
    while elapsed < seconds * 1000.0:
        for _ in range(10):
            v = fn(x, y, data_range=255, size_average=True)
        v.item()  # one result to the host per batch of 10, like a caller reading scores
        n += 10
        end.record()
        end.synchronize()
        elapsed = start.elapsed_time(end)
    return n / (elapsed / 1000.0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--sizes", default="1080p,2160p")
    a = ap.parse_args()
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}")
    print("| metric | size | implementation | dtype | pairs/s |")
    print("| --- | --- | --- | --- | --- |")
    g = torch.Generator(device="cuda").manual_seed(1)
    for s in a.sizes.split(","):
        h, w = SIZES[s]
        for dtype in (torch.float32, torch.float64):
            x = torch.randint(0, 256, (1, 1, h, w), device="cuda", generator=g).to(dtype)
            y = torch.randint(0, 256, (1, 1, h, w), device="cuda", generator=g).to(dtype)
            for name, fn in (("ssim", ssim), ("ms-ssim", ms_ssim)):
                fps = rate(fn, x, y, a.seconds)
                print(f"| {name} | {s} | pytorch-msssim | {str(dtype).split('.')[-1]} | {fps:.0f} |")


if __name__ == "__main__":
    main()
