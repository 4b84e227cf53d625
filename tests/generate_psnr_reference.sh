#!/bin/sh
# Generates the PSNR reference data used by gst-plugin-gpumetrics/tests/psnr_ffmpeg.rs.
#
# For each pixel format: a small reference clip (testsrc2 scaled to an odd size, so chroma
# rounding is exercised), a distorted clip (the reference through avgblur=4), both as tightly
# packed raw video, and FFmpeg's psnr filter output for the pair:
#   *.psnr.txt  per-frame values from `metadata=print` (6 decimals; these are compared)
#   *.stats.txt the filter's `stats_file` (2 decimals; kept for humans)
# Usage: tests/generate_psnr_reference.sh   (from the repository root; needs ffmpeg)
set -eu
cd "$(dirname "$0")/data/psnr"
W=161
H=121
FRAMES=3
# The noise filter is 8-bit only: the 10-bit clip is distorted by the blur alone.
for PIX in yuv420p yuv420p10le; do
    base="${PIX}_${W}x${H}"
    case "$PIX" in
        yuv420p) DISTORT="avgblur=4,noise=alls=12:allf=t:all_seed=7" ;;
        *) DISTORT="avgblur=4" ;;
    esac
    ffmpeg -nostdin -hide_banner -loglevel error -y -f lavfi \
        -i "testsrc2=size=176x144:rate=25,scale=${W}:${H}:flags=bicubic,format=${PIX}" \
        -frames:v "$FRAMES" -f rawvideo "ref_${base}.yuv"
    ffmpeg -nostdin -hide_banner -loglevel error -y \
        -f rawvideo -pix_fmt "$PIX" -s "${W}x${H}" -r 25 -i "ref_${base}.yuv" \
        -vf "$DISTORT" -f rawvideo "dist_${base}.yuv"
    # First input is the distorted ("main") stream, second the reference, as FFmpeg documents.
    ffmpeg -nostdin -hide_banner -loglevel error -y \
        -f rawvideo -pix_fmt "$PIX" -s "${W}x${H}" -r 25 -i "dist_${base}.yuv" \
        -f rawvideo -pix_fmt "$PIX" -s "${W}x${H}" -r 25 -i "ref_${base}.yuv" \
        -lavfi "[0:v][1:v]psnr=stats_file=${base}.stats.txt,metadata=mode=print:file=${base}.psnr.txt" \
        -f null -
done
ffmpeg -version | head -n 1 > ffmpeg-version.txt
ls -l
