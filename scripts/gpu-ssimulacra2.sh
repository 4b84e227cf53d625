#!/usr/bin/env bash
# SSIMULACRA2 checks on the GPU machine (see ../shared/docs/GPU-MACHINE.md), from the repo
# root, with the GStreamer kit in .gpu/gst and in .gpu/ssimu2 (all built here, stripped):
#   kernel_check              cargo build --release -p gpumetrics-engine --example kernel_check
#   bench_crates              ... --example bench_crates
#   ssimulacra2_cuda          cargo test --release -p gpumetrics-engine --test ssimulacra2_cuda --no-run
#   ssimulacra2_element       cargo test --release -p gst-plugin-gpumetrics --test ssimulacra2_element --no-run
#   throughput                cargo bench -p gpumetrics-engine --bench throughput --no-run
# Run with `.gpu/gst` and `.gpu/ssimu2` carried; docs/GPU-RUNS.md and docs/BENCHMARKS.md
# record the output. SKIP_SANITIZERS=1 leaves out the (slow) compute-sanitizer steps.
set -uo pipefail
B=.gpu/ssimu2
export PATH=$PATH:/usr/local/cuda/bin
step() { echo; echo "=== $*"; }
fail=0
run() { "$@" || { echo "FAILED ($?): $*"; fail=1; }; }

step "GPU"; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader; date -u
step "kernel_check"; run $B/kernel_check
if [ -z "${SKIP_SANITIZERS:-}" ]; then
  for tool in memcheck racecheck synccheck initcheck; do
    step "compute-sanitizer $tool (kernel_check)"
    run compute-sanitizer --tool $tool --error-exitcode 9 $B/kernel_check
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
