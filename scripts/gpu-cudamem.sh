#!/usr/bin/env bash
# Zero-copy CUDA memory input (issue 6) on the GPU machine, from the repo root, with .gpu/cudamem
# carried: gst/ (../shared/tools/gpu-kit with PLUGINS += openh264), plugin/libgstgpumetrics.so,
# bin/ (element test binaries), clips/{ref,dist}.mp4 (x264 constrained-baseline, 1080p30, 10 s,
# 4000 and 800 kbit/s) and clips/avdec.jsonl (the stats of the same comparison decoded with
# avdec_h264 and backend=cpu on the build machine). Logs go to $OUT.
# `cudadownload` is followed by a plain `video/x-raw` filter: it passes CUDA memory through
# when downstream accepts it, as gpumetrics does.
d=.gpu/cudamem kit=.gpu/cudamem/gst
source scripts/gpu-common.sh

step "plugin"; gst-inspect-1.0 gpumetrics | grep -E "Version|memory-stats" || fail=1
gst-inspect-1.0 nvh264dec | grep -E "Long-name" || fail=1

# compare NAME BACKEND REF_DECODE DIST_DECODE: stats into $out/NAME.jsonl, the element's INFO
# log (backend, contexts, memory counters) on stdout.
compare() {
  local name=$1 backend=$2
  GST_DEBUG=gpumetrics:4 gst-launch-1.0 -q \
    filesrc location=$d/clips/ref.mp4 ! parsebin ! $3 ! queue ! m.ref_sink \
    filesrc location=$d/clips/dist.mp4 ! parsebin ! $4 ! queue ! m.dist_sink \
    gpumetrics name=m backend=$backend stats-file=$out/$name.jsonl ! fakesink 2>&1 |
    grep -E "using backend|CUDA context|frames read|copied to the host|ERROR" | sed -e 's/.*:<m> /  /'
  if cmp -s $out/$name.jsonl $d/clips/avdec.jsonl; then
    echo "$name: stats identical to avdec_h264 + backend=cpu ($(wc -l < $out/$name.jsonl) records)"
  else
    echo "$name: stats DIFFER from avdec_h264 + backend=cpu"; diff <(head -3 $out/$name.jsonl) <(head -3 $d/clips/avdec.jsonl); fail=1
  fi
}
step "NVDEC (CUDA memory on both pads) into backend=cuda: zero-copy"
compare nvdec cuda nvh264dec nvh264dec
step "NVDEC + cudadownload (system memory) into backend=cuda"
compare nvdec-download cuda "nvh264dec ! cudadownload ! video/x-raw" "nvh264dec ! cudadownload ! video/x-raw"
step "mixed: ref_sink CUDA memory, dist_sink system memory"
compare mixed cuda nvh264dec "nvh264dec ! cudadownload ! video/x-raw"
step "CPU decoding (openh264dec) into backend=cuda"
compare openh264 cuda "h264parse ! openh264dec" "h264parse ! openh264dec"
step "NVDEC into backend=cpu (CUDA memory mapped for the CPU: counted downloads)"
compare nvdec-cpu cpu nvh264dec nvh264dec
step "NVDEC into backend=auto"
compare nvdec-auto auto nvh264dec nvh264dec
head -c 400 $out/nvdec.jsonl; echo; tail -c 500 $out/nvdec.jsonl; echo

# SKIP_BENCH=1: correctness only.
[ -n "${SKIP_BENCH:-}" ] && exit $fail
step "throughput: 1080p H.264, 4 x 300 frames per input, PSNR, pairing=sequence"
for c in ref dist; do
  gst-launch-1.0 -q filesrc location=$d/clips/$c.mp4 ! qtdemux ! h264parse ! \
    video/x-h264,stream-format=byte-stream ! filesink location=/tmp/$c.h264
  cat /tmp/$c.h264 /tmp/$c.h264 /tmp/$c.h264 /tmp/$c.h264 > /tmp/${c}4.h264
done
bench() {
  local label=$1 backend=$2 dec=$3
  for i in 1 2 3; do
    local t0=$(date +%s%N)
    if [ "$backend" = none ]; then
      gst-launch-1.0 -q filesrc location=/tmp/ref4.h264 ! h264parse ! $dec ! fakesink \
        filesrc location=/tmp/dist4.h264 ! h264parse ! $dec ! fakesink || fail=1
    else
      gst-launch-1.0 -q filesrc location=/tmp/ref4.h264 ! h264parse ! $dec ! queue ! m.ref_sink \
        filesrc location=/tmp/dist4.h264 ! h264parse ! $dec ! queue ! m.dist_sink \
        gpumetrics name=m backend=$backend pairing=sequence stats-file=/tmp/bench.jsonl ! fakesink || fail=1
    fi
    local ms=$((($(date +%s%N) - t0) / 1000000))
    echo "  $label, run $i: $ms ms = $((1200 * 1000 / ms)) pairs/s"
  done
  [ "$backend" = none ] || echo "  pairs in the stats file: $(($(wc -l < /tmp/bench.jsonl) - 1))"
}
bench "NVDEC -> gpumetrics cuda (zero-copy)" cuda nvh264dec
bench "NVDEC -> cudadownload -> gpumetrics cuda" cuda "nvh264dec ! cudadownload ! video/x-raw"
bench "openh264dec -> gpumetrics cuda" cuda openh264dec
bench "openh264dec -> gpumetrics cpu" cpu openh264dec
bench "NVDEC -> fakesink (decode only)" none nvh264dec
bench "openh264dec -> fakesink (decode only)" none openh264dec

if [ -x $d/bin/cuda_context ]; then
  for t in cuda_context no_gstcuda element harness; do
    step "element tests ($t) with backend=cuda"
    GPUMETRICS_TEST_BACKEND=cuda $d/bin/$t --test-threads 2 2>&1 | grep -E "^test |test result|panicked" || fail=1
  done
fi
if command -v compute-sanitizer >/dev/null; then
  step "compute-sanitizer memcheck: cudaupload (pitched CUDA memory) into backend=cuda, 1080p NV12"
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 gst-launch-1.0 -q \
    videotestsrc num-buffers=20 ! video/x-raw,format=NV12,width=1920,height=1080 ! tee name=t \
    t. ! queue ! cudaupload ! m.ref_sink t. ! queue ! cudaupload ! m.dist_sink \
    gpumetrics name=m backend=cuda ! fakesink 2>&1 | tail -3 || fail=1
fi
exit $fail
