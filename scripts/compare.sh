#!/usr/bin/env bash
# The main job: measure a distorted video against its reference with the `gpumetrics`
# command and print the summary table.
#
#   scripts/compare.sh                          built-in example: a test pattern (ffmpeg
#                                               testsrc2, 640x360, 90 frames, lossless FFV1)
#                                               vs the same video through x264 at 200 kbit/s,
#                                               every metric, plot in target/compare-example/
#   scripts/compare.sh REF DIST [OPTIONS...]    your two files (any container/codec GStreamer
#                                               decodes); OPTIONS go to the command, see
#                                               `target/release/gpumetrics --help`
#
# Environment (kept from the earlier script): METRICS (--metrics; the example defaults to
# all), BACKEND (--backend auto|cuda|cpu), FORMAT (--format table|jsonl|csv|json),
# FRAMES (example length, default 90).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup-deps.sh
cargo build --release -p gpumetrics-cli
bin=$PWD/target/release/gpumetrics

opts=()
[ -n "${BACKEND:-}" ] && opts+=(--backend "$BACKEND")
[ -n "${FORMAT:-}" ] && opts+=(--format "$FORMAT")
[ -n "${METRICS:-}" ] && opts+=(--metrics "$METRICS")

if [ $# -eq 0 ]; then
  frames=${FRAMES:-90}
  dir=target/compare-example
  ref=$dir/reference-$frames.mkv dist=$dir/x264-200k-$frames.mp4
  mkdir -p "$dir"
  if [ ! -s "$ref" ] || [ ! -s "$dist" ]; then
    echo "# making the example: testsrc2 640x360 ($frames frames, lossless FFV1) and x264 at 200 kbit/s" >&2
    ffmpeg -v error -y -f lavfi -i "testsrc2=size=640x360:rate=30" -frames:v "$frames" \
      -pix_fmt yuv420p -c:v ffv1 "$ref"
    ffmpeg -v error -y -i "$ref" -c:v libx264 -b:v 200k -preset medium -pix_fmt yuv420p "$dist"
  fi
  [ -n "${METRICS:-}" ] || opts+=(--metrics all)
  exec "$bin" "$ref" "$dist" --plot "$dir/scores.png" "${opts[@]}"
elif [ $# -ge 2 ]; then
  exec "$bin" "$1" "$2" "${opts[@]}" "${@:3}"
else
  echo "usage: $0 [REFERENCE DISTORTED [OPTIONS...]]   (options: $bin --help)" >&2
  exit 2
fi
