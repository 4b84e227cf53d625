#!/usr/bin/env bash
# Butteraugli (issue 13) on the GPU machine (see ../shared/docs/GPU-MACHINE.md), from the
# repo root, with .gpu/ba carried:
#   gst/  ../shared/tools/gpu-kit (EXTRA=.gpu/ba/bin/butteraugli_element for libgstcheck)
#   bin/  butteraugli_cuda, butteraugli_element (test binaries), throughput (bench) and
#         bench_crates (example), release, stripped
# Runs CUDA against CPU (host and device frames, 8x8 to 2160p), the device memory per
# engine, the element tests with backend=cuda, compute-sanitizer memcheck/racecheck/
# synccheck on the small sizes, the throughput next to the butteraugli crate on all cores,
# and ncu's time per kernel at 1080p. Logs go to $OUT.
set -uo pipefail
d=.gpu/ba
BUILD_ROOT=${BUILD_ROOT:-/work/main}
source $d/gst/env.sh
export PATH=$PATH:/usr/local/cuda/bin
step() { echo; echo "=== $*"; }
fail=0
run() { "$@" || { echo "FAILED ($?): $*"; fail=1; }; }
[ -e "$BUILD_ROOT" ] || { mkdir -p "$(dirname "$BUILD_ROOT")" && ln -s "$PWD" "$BUILD_ROOT"; }

step "GPU"; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; date -u
step "device memory per engine (alone in its process)"
run $d/bin/butteraugli_cuda --ignored --nocapture device_memory
step "CUDA vs CPU (host and device frames)"
run $d/bin/butteraugli_cuda --ignored --nocapture cuda_matches_cpu
step "element tests with backend=cuda"
GPUMETRICS_TEST_BACKEND=cuda run $d/bin/butteraugli_element --test-threads 2
if [ -z "${SKIP_SANITIZERS:-}" ]; then
  for tool in memcheck racecheck synccheck; do
    step "compute-sanitizer $tool (sizes up to 257x129)"
    BUTTERAUGLI_MAX_SIDE=257 run compute-sanitizer --tool $tool --error-exitcode 9 \
      $d/bin/butteraugli_cuda --ignored cuda_matches_cpu
  done
fi
step "throughput (frames in GPU memory and in system memory)"
run $d/bin/throughput --seconds 2 --no-cpu --sizes 1080p,2160p --metrics butteraugli
step "the butteraugli crate on all cores, same machine, same run"
run $d/bin/bench_crates 3 butteraugli
if command -v ncu >/dev/null; then
  step "ncu: the ba_ kernels of one 1080p pair"
  ncu --clock-control none -k regex:ba_ -c 29 --metrics gpu__time_duration.sum \
    $d/bin/throughput --seconds 0.05 --sizes 1080p --no-cpu --metrics butteraugli 2>&1 \
    | grep -E "^  ba_|gpu__time"
fi
exit $fail
