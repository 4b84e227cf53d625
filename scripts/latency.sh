#!/usr/bin/env bash
# Latency added by the element, with and without the monitoring outputs (issue 21), through
# GStreamer's latency tracer: a live 640x360 source teed into both pads, synchronised sink.
# Prints, per variant, the element's own latency (element-latency of `m`) and the
# source-to-sink latency, in ms. Usage: scripts/latency.sh [plugin-dir] (default: the
# debug build, target/debug).
set -euo pipefail
cd "$(dirname "$0")/.."
plugin_dir=${1:-target/debug}
[ -f "$plugin_dir/libgstgpumetrics.so" ] || cargo build -p gst-plugin-gpumetrics
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$plugin_dir/libgstgpumetrics.so" "$tmp/"
export GST_PLUGIN_PATH=$tmp GST_REGISTRY=$tmp/registry.bin GST_DEBUG_NO_COLOR=1
backend=${BACKEND:-cpu}
monitor='window=1000000000 alerts=psnr-y<30:1s subsample=1'
printf '| metrics | monitoring | element latency mean / p50 / max (ms) | source-to-sink mean / max (ms) | reported (ms) |\n'
printf '|---|---|---|---|---|\n'
for metrics in psnr psnr+vmaf; do
  for props in "" "$monitor"; do
    log=$tmp/log
    GST_TRACERS="latency(flags=pipeline+element+reported)" GST_DEBUG="GST_TRACER:7" \
      timeout 120 gst-launch-1.0 -q videotestsrc is-live=true num-buffers=250 pattern=ball ! \
      video/x-raw,format=I420,width=640,height=360,framerate=25/1 ! tee name=t \
      t. ! queue ! m.ref_sink t. ! queue ! m.dist_sink \
      gpumetrics name=m backend="$backend" metrics="$metrics" $props ! fakesink name=sink sync=true \
      >"$log" 2>&1
    element=$(grep 'element-latency' "$log" | grep 'element=(string)m,' |
      sed -E 's/.*time=\(guint64\)([0-9]+).*/\1/' | sort -n |
      awk '{v[NR]=$1; s+=$1} END {if (NR) printf "%.2f / %.2f / %.2f", s/NR/1e6, v[int((NR+1)/2)]/1e6, v[NR]/1e6; else printf "-"}')
    total=$(grep -E 'latency, src-element-id' "$log" | grep 'sink-element=(string)sink' |
      sed -E 's/.*time=\(guint64\)([0-9]+).*/\1/' |
      awk '{s+=$1; if ($1>m) m=$1} END {if (NR) printf "%.2f / %.2f", s/NR/1e6, m/1e6; else printf "-"}')
    reported=$(grep 'element-reported-latency' "$log" | grep 'element=(string)m,' | tail -1 |
      sed -E 's/.*min=\(guint64\)([0-9]+).*/\1/' | awk '{printf "%.1f", $1/1e6}')
    printf '| %s | %s | %s | %s | %s |\n' "$metrics" "${props:-none}" "$element" "$total" "${reported:--}"
  done
done
