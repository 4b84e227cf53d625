#!/usr/bin/env bash
# Generates one metric's reference values from a libvmaf 3.2.0 feature extractor, on the
# clips of tests/data/vmaf/ (pairs.txt: 8, 10, 12 and 16 bit, 4:2:0 and 4:4:4, an odd size,
# 1080p and a clip against itself; made by tests/generate_vmaf_reference.sh).
#
#   tests/generate_libvmaf_features.sh NAME FEATURE [FEATURE...]
#   e.g. tests/generate_libvmaf_features.sh ciede2000 ciede
#        tests/generate_libvmaf_features.sh psnr_hvs psnr_hvs
#
# writes tests/data/features/NAME.csv: `pair,frame` and every column of libvmaf's per-frame
# CSV for the given `--feature` arguments (an extractor and its options, as `vmaf` takes
# them: `psnr_hvs`, `float_ssim=scale=1:enable_db=true`), one row per frame of every pair
# that libvmaf accepts; a pair that libvmaf refuses (e.g. a bit depth an extractor does not
# take) is one row `pair,refused,<libvmaf's first error line>`, so the test knows to expect
# no value there. Values as libvmaf prints them (6 decimals).
#
# A FEATURE that starts with `--` is one of `vmaf`'s own flags, given as it is (with its
# value after `=`: `--aom_ctc=v7.0`); `--predict` (not libvmaf's) keeps the models that such
# a flag adds (without it, `--no_prediction`: features only). With AGGREGATES=1, libvmaf's
# aggregate values (the `aggregate_metrics` of its JSON output, e.g. APSNR) go to
# tests/data/features/NAME.pooled.csv too: `pair` and one column each, one row per pair that
# libvmaf accepts.
#
# libvmaf: release v3.2.0 built from its source without SIMD and with the float features, as
# tests/generate_vmaf_reference.sh says (its $VMAF or $VMAF_SRC). Needs ffmpeg and python3.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
name=${1:?NAME}
shift
[ $# -gt 0 ] || { echo "usage: $0 NAME FEATURE [FEATURE...]" >&2; exit 2; }
clips="$root/tests/data/vmaf"
out="$root/tests/data/features/$name.csv"
mkdir -p "$(dirname "$out")"

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
features=()
predict=(--no_prediction)
for f in "$@"; do
    case "$f" in
        --predict) predict=() ;;
        --*) features+=("$f") ;;
        *) features+=(--feature "$f") ;;
    esac
done
pooled_out="$root/tests/data/features/$name.pooled.csv"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
ff() { ffmpeg -nostdin -hide_banner -loglevel error -y "$@"; }

# decode <clip> <w> <h> <pix_fmt> <file>: raw frames, cropped to w x h (odd sizes are
# stored at the next even size).
decode() {
    local clip=$1 w=$2 h=$3 pix=$4 file=$5
    ff -i "$clips/$clip.mkv" -f rawvideo -pix_fmt "$pix" "$tmp/full.yuv"
    python3 - "$tmp/full.yuv" "$file" "$w" "$h" "$pix" <<'PY'
import sys
src, dst, w, h, pix = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
ew, eh = (w + 1) // 2 * 2, (h + 1) // 2 * 2
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

: > "$tmp/rows.csv"
: > "$tmp/pooled.jsonl"
header=""
while read -r pair ref dist w h pix; do
    depth=8 sub=420
    case "$pix" in *10*) depth=10 ;; *12*) depth=12 ;; *16*) depth=16 ;; esac
    case "$pix" in *444*) sub=444 ;; esac
    decode "$ref" "$w" "$h" "$pix" "$tmp/r.yuv"
    decode "$dist" "$w" "$h" "$pix" "$tmp/d.yuv"
    if "$VMAF" -q -r "$tmp/r.yuv" -d "$tmp/d.yuv" -w "$w" -h "$h" -p "$sub" -b "$depth" \
        "${predict[@]}" "${features[@]}" --csv -o "$tmp/pair.csv" 2>"$tmp/log"; then
        header=$(head -n 1 "$tmp/pair.csv")
        tail -n +2 "$tmp/pair.csv" | grep . | sed "s/^/$pair,/" >> "$tmp/rows.csv"
        if [ "${AGGREGATES:-0}" = 1 ]; then
            "$VMAF" -q -r "$tmp/r.yuv" -d "$tmp/d.yuv" -w "$w" -h "$h" -p "$sub" -b "$depth" \
                "${predict[@]}" "${features[@]}" --json -o "$tmp/pair.json" 2>>"$tmp/log"
            python3 - "$tmp/pair.json" "$pair" >> "$tmp/pooled.jsonl" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(json.dumps({"pair": sys.argv[2], **d.get("aggregate_metrics", {})}))
PY
        fi
    else
        why=$(grep -v WARNING "$tmp/log" | grep . | head -n 1 | tr ',' ';')
        echo "$pair: libvmaf refuses: $why"
        echo "$pair,refused,$why" >> "$tmp/rows.csv"
    fi
done < "$clips/pairs.txt"
[ -n "$header" ] || { echo "libvmaf accepted no pair" >&2; exit 1; }
# libvmaf's CSV ends every line with a comma; the header's `Frame` becomes `frame`.
python3 - "$tmp/rows.csv" "$out" "$header" <<'PY'
import sys
rows, out, header = sys.argv[1], sys.argv[2], sys.argv[3]
cols = [c for c in header.split(",") if c][1:]
with open(out, "w") as f:
    f.write(",".join(["pair", "frame"] + cols) + "\n")
    for line in open(rows):
        fields = line.rstrip("\n").rstrip(",").split(",")
        f.write(",".join(fields) + "\n")
PY
echo "$out: $(($(wc -l < "$out") - 1)) rows"
if [ "${AGGREGATES:-0}" = 1 ]; then
    python3 - "$tmp/pooled.jsonl" "$pooled_out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
cols = [k for k in rows[0] if k != "pair"]
with open(sys.argv[2], "w") as f:
    f.write(",".join(["pair"] + cols) + "\n")
    for r in rows:
        f.write(",".join([r["pair"]] + ["%.6f" % r[c] for c in cols]) + "\n")
PY
    echo "$pooled_out: $(($(wc -l < "$pooled_out") - 1)) rows"
fi
