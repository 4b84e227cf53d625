#!/usr/bin/env bash
# SSIMULACRA2 checks on the GPU machine (see ../shared/docs/GPU-MACHINE.md), from the repo
# root, with the GStreamer kit in .gpu/gst and in .gpu/ssimu2 (all built here, stripped):
#   scripts/gpu-pack.sh .gpu/ssimu2 gpumetrics-engine:test:cuda_kernels \
#     gpumetrics-engine:example:bench_crates gpumetrics-engine:test:ssimulacra2_cuda \
#     gst-plugin-gpumetrics:test:ssimulacra2_element gpumetrics-engine:bench:throughput
# Run with `.gpu/gst` and `.gpu/ssimu2` carried; docs/GPU-RUNS.md and docs/BENCHMARKS.md
# record the output. SKIP_SANITIZERS=1 leaves out the (slow) compute-sanitizer steps.
d=.gpu/ssimu2
B=$d
source scripts/gpu-common.sh
kernels() { "$@" $B/cuda_kernels --ignored --test-threads 1; }

step "kernels vs host (cuda_kernels)"; run kernels
if [ -z "${SKIP_SANITIZERS:-}" ]; then
  for tool in memcheck racecheck synccheck initcheck; do
    step "compute-sanitizer $tool (cuda_kernels)"
    run kernels compute-sanitizer --tool $tool --error-exitcode 9
  done
  step "compute-sanitizer memcheck (engine, every size and format, device frames)"
  run compute-sanitizer --tool memcheck --error-exitcode 9 $B/ssimulacra2_cuda --ignored cuda_matches_cpu --test-threads 1
fi
step "device memory of one 1080p engine (alone in its process)"
run $B/ssimulacra2_cuda --ignored --nocapture device_memory_at_1080p
step "CUDA vs CPU, device frames"; run $B/ssimulacra2_cuda --ignored --nocapture cuda_matches_cpu
step "element tests with backend=cuda"
(source .gpu/gst/env.sh && GPUMETRICS_TEST_BACKEND=cuda run $B/ssimulacra2_element --test-threads 2)
step "throughput (frames in GPU memory and in system memory)"
run $B/throughput --seconds 2 --no-cpu --sizes 1080p,2160p --metrics ssimulacra2
step "the crates on all cores, same machine, same run"; run $B/bench_crates 2 ssimulacra2
if command -v ncu >/dev/null; then
  step "ncu: the ssimu2 kernels of one 1080p pair"
  ncu --clock-control none -k regex:ssimu2 -c 8 --metrics gpu__time_duration.sum \
    $B/throughput --seconds 0.05 --sizes 1080p --no-cpu --metrics ssimulacra2 2>&1 \
    | grep -E "^  ssimu2_|gpu__time"
fi
exit $fail
