#!/usr/bin/env bash
# Runs on the GPU machine (see ../shared/docs/GPU-MACHINE.md), from the repo root, with the
# GStreamer kit in .gpu/gst, the plugin in .gpu/plugin and the binaries in .gpu/bin
# (scripts/gpu-pack.sh .gpu/bin gpumetrics-engine:test:cuda_kernels
# gpumetrics-engine:test:cuda_vs_cpu gpumetrics-engine:bench:throughput, optionally the
# element tests gst-plugin-gpumetrics:test:{element,harness,psnr_ffmpeg}).
# Logs go to $OUT when set. Each step prints a header; a failed step fails the script.
d=.gpu kit=.gpu/gst
source scripts/gpu-common.sh
kernels() { "$@" .gpu/bin/cuda_kernels --ignored --test-threads 1; }

step "plugin"; run gst-inspect-1.0 gpumetrics | grep -E "Long-name|Version"
step "kernels vs host (cuda_kernels)"; run kernels
step "CUDA vs CPU engine tests"; run .gpu/bin/cuda_vs_cpu --ignored --nocapture --test-threads 1
if command -v compute-sanitizer >/dev/null; then
  step "compute-sanitizer memcheck"; run kernels compute-sanitizer --tool memcheck --error-exitcode 9
  step "compute-sanitizer racecheck"; run kernels compute-sanitizer --tool racecheck --error-exitcode 9
  step "compute-sanitizer memcheck (engine)"; run compute-sanitizer --tool memcheck --error-exitcode 9 .gpu/bin/cuda_vs_cpu --ignored device_frames
else
  echo "compute-sanitizer not found"; fail=1
fi
step "pipeline: backend=cpu vs backend=cuda"
for fmt in I420 NV12 I420_10LE P010_10LE BGRx; do
  for b in cpu cuda; do
    gst-launch-1.0 -q \
      videotestsrc pattern=zone-plate kx2=20 ky2=20 kt=1 num-buffers=30 ! video/x-raw,format=$fmt,width=640,height=360 ! tee name=t \
      t. ! queue ! m.ref_sink \
      t. ! queue ! videoscale ! video/x-raw,width=320,height=180 ! videoscale ! video/x-raw,width=640,height=360 ! queue ! m.dist_sink \
      gpumetrics name=m backend=$b stats-file=$out/pipe-$fmt-$b.jsonl ! fakesink || fail=1
  done
  if cmp -s $out/pipe-$fmt-cpu.jsonl $out/pipe-$fmt-cuda.jsonl; then
    echo "$fmt: identical stats ($(wc -l < $out/pipe-$fmt-cpu.jsonl) records)"; head -c 300 $out/pipe-$fmt-cuda.jsonl; echo
  else
    echo "$fmt: DIFFERENT"; diff $out/pipe-$fmt-cpu.jsonl $out/pipe-$fmt-cuda.jsonl | head -5; fail=1
  fi
done
if [ -x .gpu/bin/element ]; then
  for t in element harness psnr_ffmpeg; do
    step "element tests ($t) with backend=cuda"
    GPUMETRICS_TEST_BACKEND=cuda run .gpu/bin/$t --test-threads 2
  done
fi
step "throughput"; run .gpu/bin/throughput --seconds 2
if command -v ncu >/dev/null; then
  step "ncu: psnr_sse at 1080p (device frames)"
  ncu --clock-control none -k psnr_sse -c 5 --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed \
    .gpu/bin/throughput --seconds 0.1 --sizes 1080p --no-cpu 2>&1 | grep -E "psnr_sse|gpu__time|dram__" | head -12
fi
exit $fail
