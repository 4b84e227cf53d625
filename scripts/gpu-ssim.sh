#!/usr/bin/env bash
# SSIM / MS-SSIM checks on the GPU machine (see ../shared/docs/GPU-MACHINE.md), from the repo
# root, with in .gpu/ssim (scripts/gpu-pack.sh): cuda_kernels, cuda_ssim and ssim_reference
# (engine tests), throughput (engine bench), whl/ (the pytorch-msssim wheel), optionally
# ssim_element (element test, run with backend=cuda when .gpu/gst holds the GStreamer kit).
# BUILD_ROOT: the tree the tests were built in (they read test data through it).
d=.gpu/ssim
B=$d
source scripts/gpu-common.sh
kernels() { "$@" $B/cuda_kernels --ignored --test-threads 1; }

step "kernels vs host (cuda_kernels)"; run kernels
step "compute-sanitizer memcheck"; run kernels compute-sanitizer --tool memcheck --error-exitcode 9
step "compute-sanitizer racecheck"; run kernels compute-sanitizer --tool racecheck --error-exitcode 9
step "compute-sanitizer memcheck (engine, 1080p device frames)"
run compute-sanitizer --tool memcheck --error-exitcode 9 $B/cuda_ssim --ignored device_frames
step "CUDA vs CPU (SSIM, MS-SSIM)"; run $B/cuda_ssim --ignored --nocapture --test-threads 1
step "CUDA vs references"; run $B/ssim_reference --ignored --nocapture cuda_
if [ -x $B/ssim_element ] && [ -f .gpu/gst/env.sh ]; then
  step "element SSIM tests with backend=cuda (GStreamer kit in .gpu/gst)"
  ( source .gpu/gst/env.sh && GPUMETRICS_TEST_BACKEND=cuda $B/ssim_element --test-threads 2 ) \
    || { echo "FAILED: ssim_element"; fail=1; }
fi
step "throughput"; run $B/throughput --seconds ${SECONDS_PER_ROW:-1} --metrics psnr,ssim,ms-ssim
step "pytorch-msssim on the same GPU"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $B/whl/*.whl \
  && PYTHONPATH=/tmp/site run python3 scripts/bench_pytorch_msssim.py --seconds ${SECONDS_PER_ROW:-1}
if command -v ncu >/dev/null; then
  step "ncu: ssim_scale, 1080p I420 luma: the 5 launches (scales) of the first ms-ssim pair"
  ncu --clock-control none -k ssim_scale -c 5 \
    --metrics gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,sm__warps_active.avg.pct_of_peak_sustained_active \
    $B/throughput --seconds 0.05 --sizes 1080p --no-cpu --metrics ms-ssim 2>&1 \
    | grep -E "ssim_scale|gpu__time|sm__|launch__" | head -40
fi
exit $fail
