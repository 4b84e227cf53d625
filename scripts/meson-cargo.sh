#!/usr/bin/env bash
# Called by meson.build: builds one cargo package into meson's build directory and copies
# the artifact to the path meson expects. Both targets (the plugin and the `gpumetrics`
# command) share one cargo target directory, so the second build reuses the first's crates.
#   meson-cargo.sh SRC BUILD PROFILE OUT [PACKAGE ARTIFACT]
# PACKAGE defaults to gst-plugin-gpumetrics and ARTIFACT to libgstgpumetrics.so.
set -euo pipefail
src=$1 build=$2 profile=$3 out=$4
package=${5:-gst-plugin-gpumetrics} artifact=${6:-libgstgpumetrics.so}
args=(build --manifest-path "$src/Cargo.toml" -p "$package" --target-dir "$build/cargo-target")
[ "$profile" = release ] && args+=(--release)
cargo "${args[@]}"
cp "$build/cargo-target/$profile/$artifact" "$out"
