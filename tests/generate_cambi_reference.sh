#!/usr/bin/env bash
# Generates the CAMBI reference data of engine/tests/cambi_reference.rs (tests/data/cambi/).
#
# Clips (each stored losslessly as FFV1 or x264 -qp 0, or as the committed x264 stream when
# compression is the distortion: decoding is bit-exact either way):
#   band8, band10    gradients quantised to visible steps (8-bit 4:2:0; 10-bit 4:2:0 in
#                    2-code steps), moving 2 pixels a frame
#   radial444        a radial gradient, 8-bit 4:4:4, 256x216 (the smallest side CAMBI takes)
#   natural, natural10_444, natural12
#                    a pan over tests/data/ssimulacra2/natural.jpg (8-bit 4:2:0, 10-bit
#                    4:4:4, 12-bit 4:2:0)
#   x264band         a dithered gradient through x264 at CRF 38 (banding from compression)
#   flat             one gray level: CAMBI 0
#   odd              the pan at 333x217 (odd sizes)
#   hd, hdband       1920x1080: the pan through x264 at CRF 30 (8-bit), and a 10-bit
#                    gradient, 2 frames each (the high-resolution speed-up applies)
# For every clip, libvmaf's `vmaf` tool (fed the decoded raw frames) writes the
# per-frame CSV of `--feature cambi` (6 decimals) for each run of runs.txt, one a line:
#   <clip> <run> <libvmaf cambi options, or - for the defaults>
# as <clip>.<run>.csv. clips.txt lists the clips: <clip> <width> <height> <pix_fmt>.
# The runs: `default` (no options), `v1` (the VMAF v1 models' CAMBI options:
# cambi_high_res_speedup=1080, cambi_vis_lum_threshold=0.06, cambi_max_val=17.0) and a few
# with encoding sizes and depths.
#
# libvmaf: release v3.2.0, built without CUDA and without SIMD (its plain C feature code).
# Pass the tool as $VMAF, e.g.
#   VMAF=/path/to/vmaf-3.2.0/build/tools/vmaf tests/generate_cambi_reference.sh
# Its raw reader fails on odd sizes: for the odd clip, pass as $VMAF_ODD a v3.2.0 tool
# whose tools/yuv_input.c reads a frame of ceil(w/2) x ceil(h/2) chroma planes (the
# v3.1.0 reader's behaviour; CAMBI itself is unchanged).
# Needs ffmpeg with libx264 and ffv1.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/tests/data/cambi"
src="$root/tests/data/ssimulacra2/natural.jpg"
: "${VMAF:?set VMAF to the vmaf tool of libvmaf v3.2.0}"
VMAF_ODD=${VMAF_ODD:-$VMAF}
mkdir -p "$out"
rm -f "$out"/*.csv "$out"/clips.txt "$out"/runs.txt

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
ff() { ffmpeg -nostdin -hide_banner -loglevel error -y "$@"; }
ffv1=(-c:v ffv1 -level 3 -g 1)

# synth <clip> <w> <h> <pix_fmt> <frames> <luma expression>: a geq picture (chroma mid
# gray) in the format's own code values, stored as FFV1.
synth() {
    local clip=$1 w=$2 h=$3 pix=$4 frames=$5 lum=$6
    local mid=128
    case $pix in *10le) mid=512 ;; *12le) mid=2048 ;; esac
    ff -f lavfi -i "color=c=gray:s=${w}x${h}:r=25" \
        -vf "format=${pix},geq=lum='${lum}':cb=${mid}:cr=${mid}" \
        -frames:v "$frames" "${ffv1[@]}" "$out/$clip.mkv"
    echo "$clip $w $h $pix" >>"$out/clips.txt"
}

# pan <clip> <w> <h> <pix_fmt> <frames> [encoder options]: a slow pan over the photo,
# scaled to w x h (FFV1 unless other options are given).
pan() {
    local clip=$1 w=$2 h=$3 pix=$4 frames=$5
    shift 5
    [ $# -gt 0 ] || set -- "${ffv1[@]}"
    ff -loop 1 -i "$src" \
        -vf "crop=400:300:x='3*n/4':y='n/2',scale=${w}:${h}:flags=bicubic,format=${pix}" \
        -frames:v "$frames" "$@" "$out/$clip.mkv"
    echo "$clip $w $h $pix" >>"$out/clips.txt"
}

synth band8 320 240 yuv420p 3 '64+48*(X+2*N)/W+8*Y/H'
synth band10 320 240 yuv420p10le 3 '2*floor((256+160*(X+2*N)/W+40*Y/H)/2)'
synth radial444 256 216 yuv444p 2 '60+60*hypot(X-W/2,Y-H/2)/W'
synth flat 256 216 yuv420p 2 '128'
synth hdband 1920 1080 yuv420p10le 2 '2*floor((200+300*(X+4*N)/W+80*Y/H)/2)'
pan natural 320 240 yuv420p 3
pan natural10_444 320 240 yuv444p10le 3
pan natural12 320 240 yuv420p12le 3
pan odd 333 217 yuv420p 3
pan hd 1920 1080 yuv420p 2 -c:v libx264 -crf 30 -preset medium
# A gradient with light noise, flattened into bands by the encoder.
ff -f lavfi -i "color=c=gray:s=320x240:r=25" \
    -vf "format=yuv420p,geq=lum='70+30*(X+N)/W+10*Y/H':cb=128:cr=128,noise=alls=4:allf=t" \
    -frames:v 3 -c:v libx264 -crf 38 -preset medium "$out/x264band.mkv"
echo "x264band 320 240 yuv420p" >>"$out/clips.txt"

v1=cambi_high_res_speedup=1080:cambi_vis_lum_threshold=0.06:cambi_max_val=17.0
{
    while read -r clip _; do
        echo "$clip default -"
        echo "$clip v1 $v1"
    done <"$out/clips.txt"
    echo "hd enc720 enc_width=1280:enc_height=720"
    echo "hd enc720v1 enc_width=1280:enc_height=720:$v1"
    echo "hdband v1enc8 enc_bitdepth=8:$v1"
    echo "band10 enc8 enc_bitdepth=8"
    echo "natural enc240 enc_width=240:enc_height=180"
    echo "natural10_444 tuned window_size=33:topk=0.2:tvi_threshold=0.03:max_log_contrast=3"
    echo "natural12 pq cambi_eotf=pq:cambi_vis_lum_threshold=1.0"
} >"$out/runs.txt"

while read -r clip run opts; do
    read -r _ w h pix < <(grep "^$clip " "$out/clips.txt")
    yuv="$tmp/$clip.yuv"
    [ -f "$yuv" ] || ff -i "$out/$clip.mkv" -f rawvideo -pix_fmt "$pix" "$yuv"
    sub=420
    case $pix in yuv444*) sub=444 ;; esac
    depth=8
    case $pix in *10le) depth=10 ;; *12le) depth=12 ;; esac
    tool=$VMAF
    [ $((w % 2 + h % 2)) -eq 0 ] || tool=$VMAF_ODD
    feature=cambi
    [ "$opts" = - ] || feature="cambi=$opts"
    "$tool" -r "$yuv" -d "$yuv" -w "$w" -h "$h" -p "$sub" -b "$depth" -n \
        --feature "$feature" --csv -o "$out/$clip.$run.csv" -q
done <"$out/runs.txt"
du -sh "$out"
