#!/bin/sh
# SPDX-License-Identifier: MPL-2.0
# The distorted video with its SSIM heat map laid over it, written to a file: gpumetrics'
# `map=ssim map-style=heat` makes each pair's map an RGBA frame (transparent where nothing
# differs, blue to red as SSIM falls) with the pair's timestamps, and `compositor` blends it
# over the distorted frames. The distorted video is the reference (videotestsrc) through a
# harsh JPEG; the output is H.264 in Matroska.
#
#   examples/heatmap.sh OUT.mkv [FRAMES] [BACKEND]
#
# FRAMES defaults to 50, BACKEND (the element's `backend`) to auto. The plugin must be on
# GST_PLUGIN_PATH (cargo build -p gst-plugin-gpumetrics; GST_PLUGIN_PATH=$PWD/target/debug),
# or installed.
set -eu
out=${1:?usage: examples/heatmap.sh OUT.mkv [FRAMES] [BACKEND]}
frames=${2:-50}
backend=${3:-auto}
exec gst-launch-1.0 -q -e \
  videotestsrc num-buffers="$frames" pattern=smpte \
    ! video/x-raw,format=I420,width=320,height=240,framerate=25/1 ! tee name=ref \
  ref. ! queue ! m.ref_sink \
  ref. ! queue ! jpegenc quality=8 ! jpegdec ! tee name=dist \
  dist. ! queue ! m.dist_sink \
  gpumetrics name=m backend="$backend" metrics=ssim map=ssim map-style=heat \
    ! queue ! c.sink_1 \
  dist. ! queue ! videoconvert ! c.sink_0 \
  compositor name=c sink_0::zorder=0 sink_1::zorder=1 sink_1::alpha=0.85 \
    ! videoconvert ! x264enc speed-preset=ultrafast ! matroskamux \
    ! filesink location="$out"
