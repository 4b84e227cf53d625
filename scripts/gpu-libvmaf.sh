#!/usr/bin/env bash
# libvmaf v3.1.0 (CUDA build, asm on) timed on the GPU machine next to gpumetrics' figures.
# Carry .gpu/lv laid out as: src/ (libvmaf's libvmaf/ and model/ folders, v3.1.0, e.g. the
# tree tests/generate_vmaf_reference.sh builds), bin/ (nasm and xxd from this machine:
# apt-get install nasm xxd), tool/ (a copy of ../shared/tools/vmaf-cuda), and run
# `bash scripts/gpu-libvmaf.sh` there.
set -uo pipefail
lv=$PWD/.gpu/lv
export PATH=$lv/bin:$PATH
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; date -u; nproc
bash $lv/tool/build-on-gpu.sh $lv/src /tmp/lvb 2>&1 | tail -3
V=/tmp/lvb/libvmaf/build/tools/vmaf
$V --version
# 1080p I420 frames without FFmpeg: windows of one random buffer (motion), the distorted
# copy quantised to multiples of 8.
python3 - <<'PY'
import os
w, h, n = 1920, 1080, 300
size = w * h * 3 // 2
base = os.urandom(size + 64 * n)
table = bytes((v // 8) * 8 for v in range(256))
with open('/tmp/r.yuv', 'wb') as r, open('/tmp/d.yuv', 'wb') as d:
    for i in range(n):
        f = base[64 * i : 64 * i + size]
        r.write(f)
        d.write(f.translate(table))
PY
ls -la /tmp/r.yuv /tmp/d.yuv
for mode in cuda cpu; do
  extra=""; [ $mode = cpu ] && extra="--gpumask 1"
  echo "=== libvmaf $mode, 16 threads, 300 frames 1080p"
  /usr/bin/time -f "wall %e s" $V -r /tmp/r.yuv -d /tmp/d.yuv -w 1920 -h 1080 -p 420 -b 8 \
    --threads 16 -m version=vmaf_v0.6.1 $extra -o /tmp/$mode.json --json -q 2>&1 | tail -3
  python3 -c "import json; d=json.load(open('/tmp/$mode.json')); print('pooled vmaf', d['pooled_metrics']['vmaf']['mean'], 'frames', len(d['frames']))"
done
echo "=== the same, 30 frames (start-up share)"
head -c $((1920*1080*3/2*30)) /tmp/r.yuv > /tmp/r30.yuv; head -c $((1920*1080*3/2*30)) /tmp/d.yuv > /tmp/d30.yuv
for mode in cuda cpu; do
  extra=""; [ $mode = cpu ] && extra="--gpumask 1"
  /usr/bin/time -f "$mode 30 frames: wall %e s" $V -r /tmp/r30.yuv -d /tmp/d30.yuv -w 1920 -h 1080 -p 420 -b 8 \
    --threads 16 -m version=vmaf_v0.6.1 $extra -o /dev/null -q 2>&1 | tail -1
done
