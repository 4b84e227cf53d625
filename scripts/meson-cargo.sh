#!/usr/bin/env bash
# Called by meson.build: builds the plugin with cargo into meson's build directory and
# copies the library to the path meson expects.
set -euo pipefail
src=$1 build=$2 profile=$3 out=$4
args=(build --manifest-path "$src/Cargo.toml" -p gst-plugin-gpumetrics --target-dir "$build/cargo-target")
[ "$profile" = release ] && args+=(--release)
cargo "${args[@]}"
cp "$build/cargo-target/$profile/libgstgpumetrics.so" "$out"
