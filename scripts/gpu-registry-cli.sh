#!/usr/bin/env bash
# The metric registry (issue 12) and the `gpumetrics` command (issue 15) on the GPU machine
# (see ../shared/docs/GPU-MACHINE.md), from the repo root, with .gpu/cli carried:
#   gst/    ../shared/tools/gpu-kit (its default plugins: nvcodec, playback, isomp4, ...)
#   bin/    cuda_kernels, cuda_vs_cpu, cuda_ssim, ssimulacra2_cuda, cuda_external, throughput
#           and gpumetrics (scripts/gpu-pack.sh)
#   clips/  ref.mp4 and dist.mp4: 1080p30 H.264, 150 frames of testsrc2 (x264 crf 16 and
#           800 kbit/s)
# Logs go to $OUT.
d=.gpu/cli kit=.gpu/cli/gst
source scripts/gpu-common.sh

for t in cuda_kernels cuda_vs_cpu cuda_ssim cuda_external; do
  step "engine CUDA suite $t"; run $d/bin/$t --ignored --test-threads 1
done
step "engine CUDA suite ssimulacra2_cuda"
run $d/bin/ssimulacra2_cuda --ignored --test-threads 1 cuda_matches_cpu
step "compute-sanitizer memcheck (every metric's cuda.rs through the engine)"
run compute-sanitizer --tool memcheck --error-exitcode 9 $d/bin/cuda_vs_cpu --ignored --test-threads 1
run compute-sanitizer --tool memcheck --error-exitcode 9 $d/bin/ssimulacra2_cuda --ignored every_colorimetry
step "throughput after the registry (frames in GPU and host memory)"
run $d/bin/throughput --seconds 2 --no-cpu --sizes 1080p,2160p
step "gpumetrics command: two 1080p H.264 files, all metrics"
/usr/bin/time -f "wall %e s" $d/bin/gpumetrics $d/clips/ref.mp4 $d/clips/dist.mp4 --metrics all -v \
  -o $out/cli.jsonl --format jsonl 2>&1 | tail -40 || fail=1
step "gpumetrics command: PSNR only (decode-bound), and --fail-below"
/usr/bin/time -f "wall %e s" $d/bin/gpumetrics $d/clips/ref.mp4 $d/clips/dist.mp4 --fail-below psnr-avg=60 2>&1 | tail -20
echo "exit status (expected 3): ${PIPESTATUS[0]}"
exit $fail
