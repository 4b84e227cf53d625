#!/usr/bin/env bash
# Makes the clips of the `colour` step of scripts/gpu-all.sh in DIR (default
# .gpu/all/data/colour; `scripts/gpu-all.sh pack colour` calls it): x265 Main10
# 4:2:0 720p, 60 frames of FFmpeg's testsrc2 at crf 12 (reference) and 34 (distorted),
# tagged BT.709 ("sdr") and BT.2100 PQ ("pq"), and the CPU backend's stats of each comparison
# (avdec_h265 software decoding) for the GPU run to compare with. Needs ffmpeg and the
# release plugin (cargo build --release -p gst-plugin-gpumetrics).
set -euo pipefail
dir=${1:-.gpu/all/data/colour}
mkdir -p "$dir"
GST_PLUGIN_PATH=$(cd "${CARGO_TARGET_DIR:-target}/release" && pwd)
export GST_PLUGIN_PATH
for q in 12 34; do
  for kind in sdr pq; do
    if [ $kind = sdr ]; then tags=colorprim=bt709:transfer=bt709:colormatrix=bt709
    else tags=colorprim=bt2020:transfer=smpte2084:colormatrix=bt2020nc; fi
    ffmpeg -hide_banner -v error -y -f lavfi -i "testsrc2=size=1280x720:rate=30" -frames:v 60 \
      -vf format=yuv420p10le -c:v libx265 -preset veryfast -crf $q \
      -x265-params "log-level=error:$tags:range=limited" "$dir/$kind-q$q.h265"
  done
done
for kind in sdr pq; do
  gst-launch-1.0 -q \
    filesrc location="$dir/$kind-q12.h265" ! h265parse ! avdec_h265 ! queue ! m.ref_sink \
    filesrc location="$dir/$kind-q34.h265" ! h265parse ! avdec_h265 ! queue ! m.dist_sink \
    gpumetrics name=m backend=cpu metrics=psnr+ssimulacra2 pairing=sequence \
      stats-file="$dir/$kind-cpu.jsonl" ! fakesink
done
ls -l "$dir"
