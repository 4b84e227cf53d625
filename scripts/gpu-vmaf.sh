#!/usr/bin/env bash
# VMAF checks on the GPU machine (see ../shared/docs/GPU-MACHINE.md), from the repo root,
# with the GStreamer kit in .gpu/gst and in .gpu/vmaf (all built here, stripped):
#   scripts/gpu-pack.sh .gpu/vmaf gpumetrics-engine:test:cuda_kernels \
#     gpumetrics-engine:test:vmaf_cuda gst-plugin-gpumetrics:test:vmaf_element \
#     gpumetrics-engine:bench:throughput
# and, for the CPU comparison (optional), libvmaf v3.1.0's `vmaf` tool as .gpu/vmaf/vmaf
# (tests/generate_vmaf_reference.sh says how to build it; with SIMD for a fair speed figure)
# with 1080p I420 frames as .gpu/vmaf/r.yuv and d.yuv (the GPU machine has no FFmpeg), e.g.
#   ffmpeg -stream_loop 2 -i tests/data/vmaf/ref_1920x1080_420p8.mkv -f rawvideo .gpu/vmaf/r.yuv
#   ffmpeg -stream_loop 2 -i tests/data/vmaf/x264_crf30_1920x1080_420p8.mkv -f rawvideo .gpu/vmaf/d.yuv Run with `.gpu/gst` and `.gpu/vmaf`
# carried; docs/GPU-RUNS.md and docs/BENCHMARKS.md record the output. SKIP_SANITIZERS=1
# leaves out the (slow) compute-sanitizer steps.
d=.gpu/vmaf
B=$d
source scripts/gpu-common.sh
kernels() { "$@" $B/cuda_kernels --ignored --test-threads 1 vmaf; }

step "vmaf kernels vs the CPU backend (cuda_kernels)"; run kernels
if [ -z "${SKIP_SANITIZERS:-}" ]; then
  for tool in memcheck racecheck synccheck initcheck; do
    step "compute-sanitizer $tool (cuda_kernels vmaf)"
    run kernels compute-sanitizer --tool $tool --error-exitcode 9
  done
fi
step "CUDA vs CPU on synthetic sequences, host and device frames (equal records)"
run $B/vmaf_cuda --ignored --nocapture
step "element tests with backend=cuda"
(source .gpu/gst/env.sh && GPUMETRICS_TEST_BACKEND=cuda run $B/vmaf_element --test-threads 2)
step "throughput (frames in GPU memory and in system memory)"
run $B/throughput --seconds 2 --no-cpu --sizes 1080p,2160p --metrics vmaf,all
if [ -x $B/vmaf ] && [ -f $B/r.yuv ] && [ -f $B/d.yuv ]; then
  frames=$(( $(stat -c %s $B/r.yuv) / (1920 * 1080 * 3 / 2) ))
  step "libvmaf's vmaf tool, 16 threads, 1080p, $frames frames (time; pairs/s = frames / time)"
  run /usr/bin/time -f "%e s" $B/vmaf -q -r $B/r.yuv -d $B/d.yuv -w 1920 -h 1080 -p 420 -b 8 \
    --threads 16 -m version=vmaf_v0.6.1 -o /dev/null
fi
if command -v ncu >/dev/null; then
  step "ncu: the vmaf kernels of one 1080p pair"
  ncu --clock-control none -k regex:vmaf -c 40 --metrics gpu__time_duration.sum \
    $B/throughput --seconds 0.05 --sizes 1080p --no-cpu --metrics vmaf 2>&1 \
    | grep -E "^  vmaf_|gpu__time"
fi
exit $fail
