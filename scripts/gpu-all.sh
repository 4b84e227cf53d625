#!/usr/bin/env bash
# Every GPU check of the engine and the element in one run on the GPU machine (see
# ../shared/docs/GPU-MACHINE.md), from the repo root, with .gpu/all carried:
#   scripts/gpu-pack.sh .gpu/all/bin gpumetrics-engine:test:cuda_kernels \
#     gpumetrics-engine:test:cuda_vs_cpu gpumetrics-engine:test:cuda_ssim \
#     gpumetrics-engine:test:ssimulacra2_cuda gpumetrics-engine:test:butteraugli_cuda \
#     gpumetrics-engine:test:cuda_external gpumetrics-engine:bench:throughput \
#     gst-plugin-gpumetrics:test:element gst-plugin-gpumetrics:test:ssimulacra2_element \
#     gst-plugin-gpumetrics:test:butteraugli_element
#   EXTRA=.gpu/all/bin/element ../shared/tools/gpu-kit .gpu/all/gst
# Kernels against the host build (and under memcheck, racecheck, synccheck), each metric's
# CUDA suite, the element tests with backend=cuda, and the throughput of every metric.
# SKIP_SANITIZERS=1 leaves the sanitizers out. Logs go to $OUT.
d=.gpu/all kit=.gpu/all/gst
source scripts/gpu-common.sh
B=$d/bin
kernels() { "$@" $B/cuda_kernels --ignored --test-threads 1; }

step "kernels vs host (cuda_kernels)"; run $B/cuda_kernels --ignored --test-threads 1 --nocapture
if [ -z "${SKIP_SANITIZERS:-}" ]; then
  for tool in memcheck racecheck synccheck; do
    step "compute-sanitizer $tool (cuda_kernels)"
    run kernels compute-sanitizer --tool $tool --error-exitcode 9
  done
fi
for t in cuda_vs_cpu cuda_ssim cuda_external; do
  step "engine CUDA suite $t"; run $B/$t --ignored --test-threads 1
done
step "engine CUDA suite ssimulacra2_cuda"
run $B/ssimulacra2_cuda --ignored --test-threads 1 cuda_matches
step "engine CUDA suite butteraugli_cuda"
run $B/butteraugli_cuda --ignored --test-threads 1 cuda_matches_cpu
for t in element ssimulacra2_element butteraugli_element; do
  step "element tests ($t) with backend=cuda"
  GPUMETRICS_TEST_BACKEND=cuda run $B/$t --test-threads 2
done
step "throughput of every metric (frames in GPU memory and in system memory)"
run $B/throughput --seconds 2 --no-cpu --sizes 1080p,2160p
exit $fail
