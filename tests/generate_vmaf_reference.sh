#!/usr/bin/env bash
# Generates the VMAF reference data of engine/tests/vmaf_reference.rs (tests/data/vmaf/).
#
# Clips: a pan over tests/data/ssimulacra2/natural.jpg in several layouts, each reference
# stored losslessly (x264 -qp 0; decoding is bit-exact, so every FFmpeg decodes the same
# frames), and distortions of it by x264/x265 at several rates (the compressed streams are
# committed, since encoders differ between versions). Odd sizes are encoded at the next even
# size and cropped after decoding (by this script and by the test, since FFmpeg's crop
# rounds 4:2:0 sizes down to even). For every pair, libvmaf's `vmaf` tool scores the decoded
# frames with the three built-in models; its per-frame CSV (6 decimals: the elementary
# features integer_adm2, integer_adm_scale0..3, integer_vif_scale0..3, integer_motion2, their
# `_egl_1` variants that vmaf_v0.6.1neg reads, and the scores vmaf_v0.6.1, vmaf_v0.6.1neg,
# vmaf_4k_v0.6.1) is written as <pair>.csv, and the eight v1 models' (their features under
# libvmaf's option-suffixed names, and the scores named as the models) as <pair>_v1.csv
# where libvmaf accepts the size. pairs.txt lists the pairs, one a line:
#   <pair> <reference clip> <distorted clip> <width> <height> <pix_fmt>
#
# libvmaf: release v3.2.0 (commit 3f9e02af258a5c0e30124fc585a3c3af90126dee), built without
# CUDA and without SIMD (its plain C feature code) and with the float features (SpEED, which
# the v1 models read, exists only then). Pass the `vmaf` tool as $VMAF, or a libvmaf v3.2.0
# source tree as $VMAF_SRC (built into $VMAF_SRC/build), e.g.
#   git clone --branch v3.2.0 https://github.com/Netflix/vmaf /tmp/vmaf
#   VMAF_SRC=/tmp/vmaf tests/generate_vmaf_reference.sh
# The tool's raw reader is fixed first by tests/libvmaf-yuv-oddfix.patch: 3.2.0's reads the
# chroma planes of odd sizes rounded down ("Error reading YUV frame data"), 3.1.0's did not;
# the fix touches the command-line reader only, no feature code.
# RESCORE=1 keeps the committed clips and only scores them again (a new libvmaf).
# Needs ffmpeg with libx264, libx265 and ffv1, python3 (and meson/ninja to build libvmaf).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${OUT:-$root/tests/data/vmaf}"
src="$root/tests/data/ssimulacra2/natural.jpg"
mkdir -p "$out"

if [ -z "${VMAF:-}" ]; then
    : "${VMAF_SRC:?set VMAF (the vmaf tool) or VMAF_SRC (a libvmaf v3.2.0 source tree)}"
    if [ ! -x "$VMAF_SRC/build/tools/vmaf" ]; then
        patch -d "$VMAF_SRC" -p1 -N < "$root/tests/libvmaf-yuv-oddfix.patch"
        (cd "$VMAF_SRC" && meson setup build libvmaf -Denable_cuda=false -Denable_asm=false \
            -Denable_float=true \
            -Denable_tests=false -Denable_docs=false --buildtype=release && ninja -C build)
    fi
    VMAF="$VMAF_SRC/build/tools/vmaf"
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
ff() { ffmpeg -nostdin -hide_banner -loglevel error -y "$@"; }

# reference <clip> <w> <h> <pix_fmt> <frames> [encoder options]: a slow pan (0.75 source
# pixels per frame to the right, 0.5 down) over the photo, scaled to w x h (rounded up to
# even), lossless (x264 -qp 0 unless other options are given).
reference() {
    local clip=$1 w=$(( ($2 + 1) / 2 * 2 )) h=$(( ($3 + 1) / 2 * 2 )) pix=$4 frames=$5
    shift 5
    [ -n "${RESCORE:-}" ] && [ -f "$out/$clip.mkv" ] && return
    [ $# -gt 0 ] || set -- -c:v libx264 -qp 0 -preset veryslow
    ff -loop 1 -i "$src" \
        -vf "crop=400:300:x='3*n/4':y='n/2',scale=${w}:${h}:flags=bicubic,format=${pix}" \
        -frames:v "$frames" "$@" "$out/$clip.mkv"
}

# distort <clip> <reference clip> <encoder options...>
distort() {
    local clip=$1 ref=$2
    shift 2
    [ -n "${RESCORE:-}" ] && [ -f "$out/$clip.mkv" ] && return
    ff -i "$out/$ref.mkv" "$@" "$out/$clip.mkv"
}

# decode <clip> <w> <h> <pix_fmt> <file>: raw frames cropped to w x h.
decode() {
    local clip=$1 w=$2 h=$3 pix=$4 file=$5
    ff -i "$out/$clip.mkv" -f rawvideo -pix_fmt "$pix" "$tmp/full.yuv"
    local ew=$(( (w + 1) / 2 * 2 )) eh=$(( (h + 1) / 2 * 2 ))
    python3 - "$tmp/full.yuv" "$file" "$w" "$h" "$ew" "$eh" "$pix" <<'PY'
import sys
src, dst, w, h, ew, eh, pix = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:7]), sys.argv[7]
bps = 2 if any(d in pix for d in ("10", "12", "16")) else 1
sx, sy = (1, 1) if "444" in pix else (2, 2)
planes = [(w, h, ew, eh)] + [(-(-w // sx), -(-h // sy), ew // sx, eh // sy)] * 2
data = open(src, "rb").read()
frame = sum(pw * ph for _, _, pw, ph in planes) * bps
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

# score <pair> <reference clip> <distorted clip> <w> <h> <pix_fmt>
score() {
    local pair=$1 ref=$2 dist=$3 w=$4 h=$5 pix=$6
    local depth=8 sub=420
    case "$pix" in *10*) depth=10 ;; *12*) depth=12 ;; *16*) depth=16 ;; esac
    case "$pix" in *444*) sub=444 ;; esac
    decode "$ref" "$w" "$h" "$pix" "$tmp/r.yuv"
    decode "$dist" "$w" "$h" "$pix" "$tmp/d.yuv"
    "$VMAF" -q -r "$tmp/r.yuv" -d "$tmp/d.yuv" -w "$w" -h "$h" -p "$sub" -b "$depth" \
        -m version=vmaf_v0.6.1:name=vmaf_v0.6.1 \
        -m version=vmaf_v0.6.1neg:name=vmaf_v0.6.1neg \
        -m version=vmaf_4k_v0.6.1:name=vmaf_4k_v0.6.1 \
        --csv -o "$out/$pair.csv"
    # One run per v1 model: libvmaf refuses some of them for small frames (SpEED: "image
    # too small"), and one refusal would fail the whole run.
    local csvs=()
    for m in 3d0h 5d0h 1d5h_2160 3d0h_2160 hfr_3d0h hfr_5d0h hfr_1d5h_2160 hfr_3d0h_2160; do
        local name="vmaf_v1.0.16_$m"
        if "$VMAF" -q -r "$tmp/r.yuv" -d "$tmp/d.yuv" -w "$w" -h "$h" -p "$sub" -b "$depth" \
            -m "version=$name:name=$name" --csv -o "$tmp/$name.csv" 2>"$tmp/v1.log"; then
            csvs+=("$tmp/$name.csv")
        else
            echo "$pair: libvmaf refuses $name: $(grep -v WARNING "$tmp/v1.log" | grep . | head -n 1)"
            grep -v WARNING "$tmp/v1.log" | grep . | head -n 1 | sed "s/^/$name /" >> "$out/${pair}_v1_refused.txt"
        fi
    done
    # The runs side by side, one column per model and value: `<model>` (the score) and
    # `<model>/<feature>` for the features it reads and their parts (libvmaf's own column
    # names carry the extractor's non-default options instead of the model's name).
    [ ${#csvs[@]} -eq 0 ] || python3 - "$out/${pair}_v1.csv" "${csvs[@]}" <<'PY'
import csv, os, sys
out, rows, cols = sys.argv[1], None, []
parts = ["cambi", "speed_chroma_u", "speed_chroma_v", "speed_chroma_uv", "integer_adm2",
         "integer_aim", "integer_adm3", "integer_adm_scale0", "integer_adm_scale1",
         "integer_adm_scale2", "integer_adm_scale3", "integer_motion2", "integer_motion3"]
for path in sys.argv[2:]:
    model = os.path.basename(path)[:-4]
    table = [r for r in csv.reader(open(path)) if r]
    head = [c for c in table[0] if c]
    body = [r[:len(head)] for r in table[1:]]
    if rows is None:
        rows = [{"Frame": b[0]} for b in body]
        cols.append("Frame")
    for c_i, c in enumerate(head):
        name = model if c == model else next(
            (f"{model}/{p}" for p in parts if c == p or c.startswith(p + "_")
             and not any(c.startswith(q + "_") or c == q for q in parts if len(q) > len(p))),
            None)
        if name is None or name in cols:
            continue
        cols.append(name)
        for r, b in zip(rows, body):
            r[name] = b[c_i]
with open(out, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(cols)
    for r in rows:
        w.writerow([r[c] for c in cols])
PY
    echo "$pair $ref $dist $w $h $pix" >> "$out/pairs.txt"
}

[ -n "${RESCORE:-}" ] || rm -f "$out"/*.mkv
rm -f "$out"/*.csv "$out"/*_refused.txt "$out/pairs.txt"

reference ref_320x240_420p8 320 240 yuv420p 12
distort x264_crf22_320x240_420p8 ref_320x240_420p8 -c:v libx264 -crf 22 -preset medium
distort x264_crf36_320x240_420p8 ref_320x240_420p8 -c:v libx264 -crf 36 -preset fast
distort x265_crf32_320x240_420p8 ref_320x240_420p8 -c:v libx265 -crf 32 -preset fast \
    -x265-params log-level=error
score x264_crf22_320x240_420p8 ref_320x240_420p8 x264_crf22_320x240_420p8 320 240 yuv420p
score x264_crf36_320x240_420p8 ref_320x240_420p8 x264_crf36_320x240_420p8 320 240 yuv420p
score x265_crf32_320x240_420p8 ref_320x240_420p8 x265_crf32_320x240_420p8 320 240 yuv420p
score self_320x240_420p8 ref_320x240_420p8 ref_320x240_420p8 320 240 yuv420p

reference ref_320x240_420p10 320 240 yuv420p10le 12
distort x265_crf28_320x240_420p10 ref_320x240_420p10 -c:v libx265 -crf 28 -preset fast \
    -pix_fmt yuv420p10le -x265-params log-level=error
distort x264_crf34_320x240_420p10 ref_320x240_420p10 -c:v libx264 -crf 34 -preset fast \
    -pix_fmt yuv420p10le
score x265_crf28_320x240_420p10 ref_320x240_420p10 x265_crf28_320x240_420p10 320 240 yuv420p10le
score x264_crf34_320x240_420p10 ref_320x240_420p10 x264_crf34_320x240_420p10 320 240 yuv420p10le

reference ref_320x240_444p8 320 240 yuv444p 12
distort x264_crf30_320x240_444p8 ref_320x240_444p8 -c:v libx264 -crf 30 -preset fast
score x264_crf30_320x240_444p8 ref_320x240_444p8 x264_crf30_320x240_444p8 320 240 yuv444p

reference ref_333x199_420p8 333 199 yuv420p 12
distort x264_crf30_333x199_420p8 ref_333x199_420p8 -c:v libx264 -crf 30 -preset fast
score x264_crf30_333x199_420p8 ref_333x199_420p8 x264_crf30_333x199_420p8 333 199 yuv420p

# 12 bit: x265 (lossless for the reference); 16 bit: FFV1 for both, the distortion a blur.
reference ref_320x240_420p12 320 240 yuv420p12le 8 -c:v libx265 -x265-params lossless=1:log-level=error
distort x265_crf30_320x240_420p12 ref_320x240_420p12 -c:v libx265 -crf 30 -preset fast \
    -pix_fmt yuv420p12le -x265-params log-level=error
score x265_crf30_320x240_420p12 ref_320x240_420p12 x265_crf30_320x240_420p12 320 240 yuv420p12le

reference ref_128x96_444p16 128 96 yuv444p16le 6 -c:v ffv1
distort avgblur_128x96_444p16 ref_128x96_444p16 -vf avgblur=sizeX=2 -c:v ffv1
score avgblur_128x96_444p16 ref_128x96_444p16 avgblur_128x96_444p16 128 96 yuv444p16le

reference ref_1920x1080_420p8 1920 1080 yuv420p 3
distort x264_crf30_1920x1080_420p8 ref_1920x1080_420p8 -c:v libx264 -crf 30 -preset fast
score x264_crf30_1920x1080_420p8 ref_1920x1080_420p8 x264_crf30_1920x1080_420p8 1920 1080 yuv420p

{
    echo "libvmaf $("$VMAF" --version 2>&1 | head -n 1) (v3.2.0, 3f9e02af258a5c0e30124fc585a3c3af90126dee, -Denable_asm=false -Denable_float=true)"
    ffmpeg -version | head -n 1
} > "$out/versions.txt"
ls -l "$out"
du -sh "$out"
