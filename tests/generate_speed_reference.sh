#!/usr/bin/env bash
# Generates the SpEED chroma reference data of engine/tests/speed_reference.rs
# (tests/data/speed/).
#
# Clips: a pan over tests/data/ssimulacra2/natural.jpg (as tests/generate_vmaf_reference.sh
# makes them), each reference stored losslessly (x264 -qp 0, decoded bit-exactly by every
# FFmpeg), its distortions by x264/x265 committed as encoded. Odd sizes are encoded at the
# next even size and cropped after decoding. SpEED works on the chroma planes reduced 16x,
# so the clips are larger than the VMAF ones: 640x480 4:2:0 has 20x15 chroma samples left
# at prescale 1 (12 blocks of 5x5) and too few at 0.5 and 0.6 for a regular covariance
# (libvmaf's "singular" path, which the test covers too); the 1280x720 and 1920x1080 clips
# cover the prescaled option sets with a regular one.
#
# For every pair libvmaf's `vmaf` tool scores the decoded frames with speed_chroma under the
# option sets of the vmaf_v1.0.16 models (3d0h and 1d5h_2160 have the same values, since
# speed_kernelscale 1.0 is the default, so one run serves both):
#   3d0h       speed_kernelscale=1.0 speed_nn_floor=0.1 speed_sigma_nn=0.19
#              speed_weight_var_mode=5 speed_max_val=45.0
#   1d5h_2160  the same without speed_kernelscale
#   3d0h_2160  + speed_prescale=0.5 speed_prescale_method=bilinear
#   5d0h       + speed_prescale=0.6 speed_prescale_method=bilinear
#   default    libvmaf's defaults (no options)
# and, for the code paths the models do not take, libvmaf's other resamplers (nearest at
# 0.5, bicubic at 0.6, bilinear enlarging by 1.5), kernelscales 2 and 0.5 and the other
# variance weighting modes (see `sets` below); <pair>.csv gets one line per frame: frame, then speed_chroma_uv per option set in the
# order of the header (6 decimals, as the tool prints them). pairs.txt lists the pairs:
#   <pair> <reference clip> <distorted clip> <width> <height> <pix_fmt>
#
# libvmaf: release v3.2.0 built with -Denable_float=true -Denable_asm=false (SpEED needs the
# float features; no SIMD, so the plain C code). Pass the `vmaf` tool as $VMAF. The raw
# reader of v3.2.0 reads chroma planes of floor(w/2) x floor(h/2) for odd 4:2:0 sizes, so
# the files fed to it are cropped that way (the engine reads the ceil-sized planes and, like
# libvmaf, measures their floor-sized top-left part).
# Needs ffmpeg with libx264, libx265 and ffv1, and python3.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/tests/data/speed"
src="$root/tests/data/ssimulacra2/natural.jpg"
: "${VMAF:?set VMAF to libvmaf v3.2.0s vmaf tool (built with -Denable_float=true)}"
mkdir -p "$out"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
ff() { ffmpeg -nostdin -hide_banner -loglevel error -y "$@"; }

# reference <clip> <w> <h> <pix_fmt> <frames> [encoder options]: a slow pan scaled to w x h
# (rounded up to even), lossless (x264 -qp 0 unless other options are given).
reference() {
    local clip=$1 w=$(( ($2 + 1) / 2 * 2 )) h=$(( ($3 + 1) / 2 * 2 )) pix=$4 frames=$5
    shift 5
    [ $# -gt 0 ] || set -- -c:v libx264 -qp 0 -preset veryslow
    ff -loop 1 -i "$src" \
        -vf "crop=400:300:x='3*n/4':y='n/2',scale=${w}:${h}:flags=bicubic,format=${pix}" \
        -frames:v "$frames" "$@" "$out/$clip.mkv"
}

# distort <clip> <reference clip> <encoder options...>
distort() {
    local clip=$1 ref=$2
    shift 2
    ff -i "$out/$ref.mkv" "$@" "$out/$clip.mkv"
}

# decode <clip> <w> <h> <pix_fmt> <file>: raw frames cropped to w x h, chroma planes cropped
# to floor(w / 2^sub_x) x floor(h / 2^sub_y) (what libvmaf's raw reader reads).
decode() {
    local clip=$1 w=$2 h=$3 pix=$4 file=$5
    ff -i "$out/$clip.mkv" -f rawvideo -pix_fmt "$pix" "$tmp/full.yuv"
    python3 - "$tmp/full.yuv" "$file" "$w" "$h" "$pix" <<'PY'
import sys
src, dst, w, h, pix = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
bps = 2 if any(d in pix for d in ("10", "12", "16")) else 1
sx, sy = {"444": (0, 0), "422": (1, 0), "420": (1, 1)}[pix[3:6]]
ew, eh = (w + 1) // 2 * 2, (h + 1) // 2 * 2
planes = [(w, h, ew, eh)] + [(w >> sx, h >> sy, ew >> sx, eh >> sy)] * 2
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

common=speed_nn_floor=0.1:speed_sigma_nn=0.19:speed_weight_var_mode=5:speed_max_val=45.0
# name=options of each CSV column (each run alone: a column is the one uv score of its run).
sets=(
    "3d0h=speed_kernelscale=1.0:$common"
    "1d5h_2160=$common"
    "3d0h_2160=$common:speed_prescale=0.5:speed_prescale_method=bilinear"
    "5d0h=$common:speed_prescale=0.6:speed_prescale_method=bilinear"
    "default="
    "nearest_0.5=speed_prescale=0.5"
    "bicubic_0.6=speed_prescale=0.6:speed_prescale_method=bicubic"
    "bilinear_1.5=speed_prescale=1.5:speed_prescale_method=bilinear"
    "ks_2=speed_kernelscale=2.0:speed_sigma_nn=0.5"
    "ks_0.5=speed_kernelscale=0.5:speed_nn_floor=0.3"
    "wvm_1=speed_weight_var_mode=1:speed_max_val=3.0"
    "wvm_2=speed_weight_var_mode=2"
    "wvm_3=speed_weight_var_mode=3"
    "wvm_4=speed_weight_var_mode=4"
    "wvm_6=speed_weight_var_mode=6"
)

# score <pair> <reference clip> <distorted clip> <w> <h> <pix_fmt>
score() {
    local pair=$1 ref=$2 dist=$3 w=$4 h=$5 pix=$6
    local depth=8
    case "$pix" in *10*) depth=10 ;; *12*) depth=12 ;; *16*) depth=16 ;; esac
    decode "$ref" "$w" "$h" "$pix" "$tmp/r.yuv"
    decode "$dist" "$w" "$h" "$pix" "$tmp/d.yuv"
    local names=() files=()
    for set in "${sets[@]}"; do
        local name=${set%%=*} opts=${set#*=}
        "$VMAF" -q -r "$tmp/r.yuv" -d "$tmp/d.yuv" -w "$w" -h "$h" -p "${pix:3:3}" -b "$depth" \
            --feature "speed_chroma${opts:+=$opts}" --csv -o "$tmp/$name.csv" \
            2> "$tmp/stderr" || { cat "$tmp/stderr"; exit 1; }
        names+=("$name")
        files+=("$tmp/$name.csv")
    done
    python3 - "$out/$pair.csv" "${names[*]}" "${files[@]}" <<'PY'
import csv, sys
out, names, files = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
cols = []
for f in files:
    rows = list(csv.DictReader(open(f)))
    (k,) = [k for k in rows[0] if "speed_chroma_uv" in k]
    cols.append([(r["Frame"], r[k]) for r in rows])
with open(out, "w") as f:
    f.write("frame," + ",".join(names) + "\n")
    for i in range(len(cols[0])):
        f.write(cols[0][i][0] + "," + ",".join(c[i][1] for c in cols) + "\n")
PY
    echo "$pair $ref $dist $w $h $pix" >> "$out/pairs.txt"
}

rm -f "$out"/*.mkv "$out"/*.csv "$out/pairs.txt"

reference ref_640x480_420p8 640 480 yuv420p 3
distort x264_crf24_640x480_420p8 ref_640x480_420p8 -c:v libx264 -crf 24 -preset medium
distort x264_crf38_640x480_420p8 ref_640x480_420p8 -c:v libx264 -crf 38 -preset fast
distort x265_crf32_640x480_420p8 ref_640x480_420p8 -c:v libx265 -crf 32 -preset fast \
    -x265-params log-level=error
score x264_crf24_640x480_420p8 ref_640x480_420p8 x264_crf24_640x480_420p8 640 480 yuv420p
score x264_crf38_640x480_420p8 ref_640x480_420p8 x264_crf38_640x480_420p8 640 480 yuv420p
score x265_crf32_640x480_420p8 ref_640x480_420p8 x265_crf32_640x480_420p8 640 480 yuv420p
score self_640x480_420p8 ref_640x480_420p8 ref_640x480_420p8 640 480 yuv420p

reference ref_640x480_420p10 640 480 yuv420p10le 2
distort x265_crf28_640x480_420p10 ref_640x480_420p10 -c:v libx265 -crf 28 -preset fast \
    -pix_fmt yuv420p10le -x265-params log-level=error
distort x264_crf36_640x480_420p10 ref_640x480_420p10 -c:v libx264 -crf 36 -preset fast \
    -pix_fmt yuv420p10le
score x265_crf28_640x480_420p10 ref_640x480_420p10 x265_crf28_640x480_420p10 640 480 yuv420p10le
score x264_crf36_640x480_420p10 ref_640x480_420p10 x264_crf36_640x480_420p10 640 480 yuv420p10le

reference ref_320x240_444p8 320 240 yuv444p 3
distort x264_crf30_320x240_444p8 ref_320x240_444p8 -c:v libx264 -crf 30 -preset fast
score x264_crf30_320x240_444p8 ref_320x240_444p8 x264_crf30_320x240_444p8 320 240 yuv444p

reference ref_640x240_422p8 640 240 yuv422p 3
distort x264_crf30_640x240_422p8 ref_640x240_422p8 -c:v libx264 -crf 30 -preset fast
score x264_crf30_640x240_422p8 ref_640x240_422p8 x264_crf30_640x240_422p8 640 240 yuv422p

reference ref_643x481_420p8 643 481 yuv420p 2
distort x264_crf30_643x481_420p8 ref_643x481_420p8 -c:v libx264 -crf 30 -preset fast
score x264_crf30_643x481_420p8 ref_643x481_420p8 x264_crf30_643x481_420p8 643 481 yuv420p

# 12 bit: x265 (lossless for the reference); 16 bit: FFV1 for both, the distortion a blur.
reference ref_480x480_420p12 480 480 yuv420p12le 2 -c:v libx265 -x265-params lossless=1:log-level=error
distort x265_crf30_480x480_420p12 ref_480x480_420p12 -c:v libx265 -crf 30 -preset fast \
    -pix_fmt yuv420p12le -x265-params log-level=error
score x265_crf30_480x480_420p12 ref_480x480_420p12 x265_crf30_480x480_420p12 480 480 yuv420p12le

reference ref_160x160_444p16 160 160 yuv444p16le 2 -c:v ffv1
distort avgblur_160x160_444p16 ref_160x160_444p16 -vf avgblur=sizeX=2 -c:v ffv1
score avgblur_160x160_444p16 ref_160x160_444p16 avgblur_160x160_444p16 160 160 yuv444p16le

reference ref_1280x720_420p10 1280 720 yuv420p10le 2
distort x265_crf30_1280x720_420p10 ref_1280x720_420p10 -c:v libx265 -crf 30 -preset fast \
    -pix_fmt yuv420p10le -x265-params log-level=error
score x265_crf30_1280x720_420p10 ref_1280x720_420p10 x265_crf30_1280x720_420p10 1280 720 yuv420p10le

reference ref_1920x1080_420p8 1920 1080 yuv420p 2
distort x264_crf30_1920x1080_420p8 ref_1920x1080_420p8 -c:v libx264 -crf 30 -preset fast
score x264_crf30_1920x1080_420p8 ref_1920x1080_420p8 x264_crf30_1920x1080_420p8 1920 1080 yuv420p

{
    echo "libvmaf $("$VMAF" --version 2>&1 | head -n 1) (v3.2.0, -Denable_float=true -Denable_asm=false)"
    ffmpeg -version | head -n 1
} > "$out/versions.txt"
ls -l "$out"
du -sh "$out"
