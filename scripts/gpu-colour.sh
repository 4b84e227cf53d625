#!/usr/bin/env bash
# Issue 11 (video colour) on the GPU machine (see ../shared/docs/GPU-MACHINE.md), from the repo
# root, with .gpu/colour carried:
#   gst/      ../shared/tools/gpu-kit (nvcodec, videoparsersbad)
#   plugin/   libgstgpumetrics.so (cargo build --release, stripped)
#   bin/      cuda_kernels, ssimulacra2_cuda, ssimulacra2_element, throughput (scripts/gpu-pack.sh)
#   clips/    {sdr,pq}-q{12,34}.h265: x265 Main10 4:2:0 720p, 60 frames of testsrc2 at two
#             qualities, tagged BT.709 and BT.2100 PQ (made by scripts/make-colour-clips.sh),
#             and {sdr,pq}-cpu.jsonl: the same comparison decoded by avdec_h265 and scored by
#             backend=cpu on the build machine.
# Logs go to $OUT. SKIP_BENCH=1 leaves out the throughput step.
d=.gpu/colour kit=.gpu/colour/gst
source scripts/gpu-common.sh

step "kernels vs host (cuda_kernels)"; run $d/bin/cuda_kernels --ignored --test-threads 1
step "SSIMULACRA2: CUDA vs CPU, every colorimetry"
run $d/bin/ssimulacra2_cuda --ignored --nocapture --test-threads 1 cuda_matches_cpu
step "compute-sanitizer memcheck and racecheck (every colorimetry)"
run compute-sanitizer --tool memcheck --error-exitcode 9 $d/bin/ssimulacra2_cuda --ignored every_colorimetry
run compute-sanitizer --tool racecheck --error-exitcode 9 $d/bin/ssimulacra2_cuda --ignored every_colorimetry
step "element tests (ssimulacra2) with backend=cuda"
GPUMETRICS_TEST_BACKEND=cuda run $d/bin/ssimulacra2_element --test-threads 2

# NVDEC Main10 (P010 in CUDA memory) into backend=cuda against avdec_h265 + backend=cpu.
for kind in sdr pq; do
  step "NVDEC HEVC Main10 $kind: nvh265dec (CUDA memory) + backend=cuda vs avdec_h265 + backend=cpu"
  GST_DEBUG=gpumetrics:4 gst-launch-1.0 -v \
    filesrc location=$d/clips/$kind-q12.h265 ! h265parse ! nvh265dec ! queue ! m.ref_sink \
    filesrc location=$d/clips/$kind-q34.h265 ! h265parse ! nvh265dec ! queue ! m.dist_sink \
    gpumetrics name=m backend=cuda metrics=psnr+ssimulacra2 pairing=sequence \
      stats-file=$out/$kind-cuda.jsonl ! fakesink 2>&1 |
    grep -E "nvh265dec0.GstPad:src: caps|using backend|frames read|ERROR" | sed -e 's/.*:<m> /  /' | cut -c1-260
  python3 - "$out/$kind-cuda.jsonl" "$d/clips/$kind-cpu.jsonl" <<'PY' || fail=1
import json, sys
def load(p):
    return [json.loads(l) for l in open(p) if '"frame"' in l and '"type":"frame"' in l]
gpu, cpu = load(sys.argv[1]), load(sys.argv[2])
assert len(gpu) == len(cpu) == 60, (len(gpu), len(cpu))
def num(v):
    return float("inf") if v == "inf" else float(v)
ds = max(abs(num(g["ssimulacra2"]) - num(c["ssimulacra2"])) for g, c in zip(gpu, cpu))
dp = max(abs(num(g["psnr-avg"]) - num(c["psnr-avg"])) for g, c in zip(gpu, cpu))
mean = sum(num(g["ssimulacra2"]) for g in gpu) / len(gpu)
print(f"  {len(gpu)} pairs: ssimulacra2 mean {mean:.4f}, max |gpu - cpu| ssimulacra2 {ds:.2e}, psnr-avg {dp:.2e}")
sys.exit(0 if ds <= 0.01 and dp == 0 else 1)
PY
done
[ -n "${SKIP_BENCH:-}" ] && exit $fail
step "throughput: SSIMULACRA2, frames in GPU memory"
run $d/bin/throughput --seconds 2 --no-cpu --sizes 1080p,2160p --metrics ssimulacra2
exit $fail
