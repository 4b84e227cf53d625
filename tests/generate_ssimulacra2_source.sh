#!/usr/bin/env bash
# Makes tests/data/ssimulacra2/natural.jpg, the natural source image of
# engine/tests/ssimulacra2_crate.rs and engine/tests/ssimulacra2_video.rs: the
# `tank_source.png` test image of the rust-av/ssimulacra2 repository (1448x1080 photo),
# scaled to 512x382 and stored as a high-quality JPEG (72 kB). The distortions are made by
# the test itself with FFmpeg.
#   tests/generate_ssimulacra2_source.sh /path/to/tank_source.png
set -euo pipefail
ffmpeg -hide_banner -loglevel error -y -i "$1" -vf "scale=512:382:flags=lanczos" -q:v 2 \
  "$(dirname "$0")/data/ssimulacra2/natural.jpg"
