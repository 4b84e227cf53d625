#!/usr/bin/env bash
# The main job: measure a distorted video against its reference and print per-frame scores
# and the pooled summary.
#
#   scripts/compare.sh                      built-in example: a test pattern vs the same
#                                           pattern through x264 at a low bitrate
#   scripts/compare.sh REF.mp4 DIST.mp4     your two files (any container/codec GStreamer decodes)
#
# Environment: METRICS (default "psnr"), BACKEND (auto|cuda|cpu), FORMAT (jsonl|csv|json),
# FRAMES (example length, default 60).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup-deps.sh
cargo build --release -p gst-plugin-gpumetrics
export GST_PLUGIN_PATH=$PWD/target/release${GST_PLUGIN_PATH:+:$GST_PLUGIN_PATH}

metrics=${METRICS:-psnr}
backend=${BACKEND:-auto}
format=${FORMAT:-jsonl}
element="gpumetrics name=m metrics=$metrics backend=$backend stats-file=/dev/stdout stats-format=$format post-messages=false"

if [ $# -eq 0 ]; then
  frames=${FRAMES:-60}
  echo "# reference: videotestsrc (SMPTE bars scrolling, 640x360, $frames frames); distorted: x264 at 200 kbit/s" >&2
  exec gst-launch-1.0 -q \
    videotestsrc pattern=smpte horizontal-speed=7 num-buffers="$frames" \
      ! video/x-raw,format=I420,width=640,height=360,framerate=30/1 ! tee name=t \
    t. ! queue ! m.ref_sink \
    t. ! queue ! x264enc bitrate=200 speed-preset=ultrafast tune=zerolatency key-int-max=30 \
      ! h264parse ! avdec_h264 ! queue ! m.dist_sink \
    $element ! fakesink
elif [ $# -eq 2 ]; then
  for f in "$1" "$2"; do [ -r "$f" ] || { echo "cannot read $f" >&2; exit 1; }; done
  exec gst-launch-1.0 -q \
    filesrc location="$1" ! decodebin ! queue ! m.ref_sink \
    filesrc location="$2" ! decodebin ! queue ! m.dist_sink \
    $element ! fakesink
else
  echo "usage: $0 [REFERENCE DISTORTED]" >&2
  exit 2
fi
