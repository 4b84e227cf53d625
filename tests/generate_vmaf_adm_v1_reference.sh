#!/usr/bin/env bash
# Generates the ADM reference data of engine/tests/vmaf_adm_v1.rs (tests/data/vmaf_v1/):
# libvmaf 3.2.0's integer ADM (adm2, aim, adm3, scale0..3) under the options of the VMAF
# v1.0.16 models (Barten-Watson blended CSF, DLM weight 0.7, gain limit 1, noise weight
# 0.02, min 0.5) at the four view distances/display heights of those models, and a few
# other option sets (Watson97 at 5/1080, Barten, the blend's MAE tables, scale 0 and AIM
# skipped), on pairs of the clips of tests/data/vmaf/ (see tests/generate_vmaf_reference.sh;
# 8, 10 and 12 bit; decoded with FFmpeg, odd sizes cropped as there, though libvmaf 3.2.0's
# tool fails on the 333x199 clip).
#
# Writes <pair>__<config>.csv (libvmaf's per-frame CSV, features only) for every pair of
# pairs.txt (<pair> <reference clip> <distorted clip> <width> <height> <pix_fmt>) and every
# config of configs.txt (<config> <libvmaf adm option string>).
#
# libvmaf: release v3.2.0 built with meson -Denable_float=true -Denable_asm=false (its
# plain C code). Pass its `vmaf` tool as $VMAF, e.g.
#   VMAF=/work/vmaf-3.2.0/build/tools/vmaf tests/generate_vmaf_adm_v1_reference.sh
# Its CSV has 6 decimals; a tool whose libvmaf/src/output.c CSV writer prints "%.17g"
# instead gives full precision (the test then checks bit-exactness; see its docs).
# Needs ffmpeg and python3.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
clips="$root/tests/data/vmaf"
out="${OUT:-$root/tests/data/vmaf_v1}"
: "${VMAF:?set VMAF to the vmaf tool of libvmaf 3.2.0}"
mkdir -p "$out"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
ff() { ffmpeg -nostdin -hide_banner -loglevel error -y "$@"; }

# decode <clip> <w> <h> <pix_fmt> <file>: raw frames cropped to w x h.
decode() {
    local clip=$1 w=$2 h=$3 pix=$4 file=$5
    ff -i "$clips/$clip.mkv" -f rawvideo -pix_fmt "$pix" "$tmp/full.yuv"
    local ew=$(( (w + 1) / 2 * 2 )) eh=$(( (h + 1) / 2 * 2 ))
    python3 - "$tmp/full.yuv" "$file" "$w" "$h" "$ew" "$eh" "$pix" <<'PY'
import sys
src, dst, w, h, ew, eh, pix = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:7]), sys.argv[7]
bps = 2 if any(d in pix for d in ("10", "12", "16")) else 1
sx, sy = (1, 1) if "444" in pix else (2, 2)
planes = [(w, h, ew, eh)] + [(-(-w // sx), -(-h // sy), ew // sx, eh // sy)] * 2
data = open(src, "rb").read()
out, pos = bytearray(), 0
while pos < len(data):
    for cw, ch, pw, ph in planes:
        for y in range(ch):
            row = pos + y * pw * bps
            out += data[row:row + cw * bps]
        pos += pw * ph * bps
open(dst, "wb").write(out)
PY
}

v1="adm_dlm_weight=0.7:adm_enhn_gain_limit=1.0:adm_noise_weight=0.02:adm_min_val=0.5:adm_csf_mode=2"
cat > "$out/configs.txt" <<CFG
v1_3d0h $v1:adm_norm_view_dist=3.0:adm_ref_display_height=1080
v1_5d0h $v1:adm_norm_view_dist=5.0:adm_ref_display_height=1080
v1_1d5h_2160 $v1:adm_norm_view_dist=1.5:adm_ref_display_height=2160
v1_3d0h_2160 $v1:adm_norm_view_dist=3.0:adm_ref_display_height=2160
watson_5d0h adm_norm_view_dist=5.0:adm_ref_display_height=1080
watson_1d5h_2160 adm_norm_view_dist=1.5:adm_ref_display_height=2160
barten_3d0h adm_csf_mode=1:adm_csf_scale=0.5:adm_csf_diag_scale=2.0
mae_5d0h_2160 adm_csf_mode=3:adm_norm_view_dist=5.0:adm_ref_display_height=2160:adm_dlm_weight=0.3
skip adm_skip_scale0=true:adm_skip_aim=true:adm_csf_mode=2:adm_noise_weight=0.5
default adm_enhn_gain_limit=100.0
CFG
cat > "$out/pairs.txt" <<PAIRS
x264_crf36_320x240_420p8 ref_320x240_420p8 x264_crf36_320x240_420p8 320 240 yuv420p
x265_crf28_320x240_420p10 ref_320x240_420p10 x265_crf28_320x240_420p10 320 240 yuv420p10le
x265_crf30_320x240_420p12 ref_320x240_420p12 x265_crf30_320x240_420p12 320 240 yuv420p12le
PAIRS

rm -f "$out"/*.csv
while read -r pair ref dist w h pix; do
    depth=8
    case "$pix" in *10*) depth=10 ;; *12*) depth=12 ;; *16*) depth=16 ;; esac
    decode "$ref" "$w" "$h" "$pix" "$tmp/r.yuv"
    decode "$dist" "$w" "$h" "$pix" "$tmp/d.yuv"
    while read -r config opts; do
        "$VMAF" -q -r "$tmp/r.yuv" -d "$tmp/d.yuv" -w "$w" -h "$h" -p 420 -b "$depth" \
            --no_prediction --feature "adm=$opts" --csv -o "$out/${pair}__${config}.csv"
    done < "$out/configs.txt"
done < "$out/pairs.txt"

{
    echo "libvmaf $("$VMAF" --version 2>&1 | head -n 1) (v3.2.0, -Denable_float=true -Denable_asm=false)"
    ffmpeg -version | head -n 1
} > "$out/versions.txt"
du -sh "$out"
