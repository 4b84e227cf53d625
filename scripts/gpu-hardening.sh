#!/usr/bin/env bash
# Issue 10 (hardening) on the GPU machine (see ../shared/docs/GPU-MACHINE.md), from the repo
# root, with .gpu/hard carried: gst/ (../shared/tools/gpu-kit), plugin/libgstgpumetrics.so and
# bin/ (the element test binaries hardening, element, harness; lay the kit with
# EXTRA=.gpu/hard/bin/harness for libgstcheck). Logs go to $OUT.
# Runs the element tests with backend=cuda (system memory read by the CUDA backend, and CUDA
# memory from cudaupload with a bad video meta), the bad-meta cases under compute-sanitizer
# memcheck, and a few launch lines with bad property values and caps changes.
d=.gpu/hard kit=.gpu/hard/gst
source scripts/gpu-common.sh

step "plugin"; run gst-inspect-1.0 gpumetrics | grep -E "Description|Version|pairing-tolerance" -A1
for t in hardening element harness; do
  step "element tests ($t) with backend=cuda"
  GPUMETRICS_TEST_BACKEND=cuda run $d/bin/$t --test-threads 2
done
step "the CUDA-memory cases, with their output (they say 'skipped' where they cannot run)"
GPUMETRICS_TEST_BACKEND=cuda run $d/bin/hardening --test-threads 1 --nocapture cuda_memory
if command -v compute-sanitizer >/dev/null; then
  step "compute-sanitizer memcheck: bad buffers (system and CUDA memory) with backend=cuda"
  GPUMETRICS_TEST_BACKEND=cuda run compute-sanitizer --tool memcheck --error-exitcode 9 \
    $d/bin/hardening --test-threads 1 refused
else
  echo "compute-sanitizer not found"; fail=1
fi
step "pairing-tolerance=-5 and 2^64-2 (refused with a message, no panic)"
for v in -5 18446744073709551614; do
  gst-launch-1.0 -q videotestsrc num-buffers=3 ! video/x-raw,width=64,height=48 ! tee name=t \
    t. ! queue ! m.ref_sink t. ! queue ! m.dist_sink \
    gpumetrics name=m backend=cuda pairing-tolerance=$v ! fakesink 2>&1 | head -3
  echo "exit status: ${PIPESTATUS[0]}"
done
exit $fail
