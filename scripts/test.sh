#!/usr/bin/env bash
# Runs every check that needs no GPU: formatting and clippy, kernel math (host build), the
# PTX toolchain checks, the engine, the element (CPU backend), the packaged crates (a
# consumer built from the .crate files alone) and the meson build.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup-deps.sh

# Formatting and lints first (the kernel crates are members of the workspace): cheap, and
# they fail with a clear message.
cargo fmt --all --check
# The metrics' kernel folders and GPU checks are modules included through their build
# scripts' lists (kernels/metrics/build.rs, engine/build.rs), which `cargo fmt` does not
# follow.
rustfmt --edition 2024 --check kernels/metrics/src/*/mod.rs engine/src/metric/*/gpu_checks.rs
cargo clippy --workspace --all-targets -- -D warnings

# XPSNR's reference values come from FFmpeg 9.0.2, run by the test (a virtual environment).
GPUMETRICS_REFERENCE_FFMPEG=$(./scripts/reference-ffmpeg.sh)
export GPUMETRICS_REFERENCE_FFMPEG
cargo test --workspace
# Every crate packaged, and a consumer of gpumetrics-engine built from the packages alone.
./scripts/package-check.sh
# The meson build installs the plugin the way distributions do.
builddir=target/meson
[ -d "$builddir" ] || meson setup "$builddir" . --buildtype=release >/dev/null
meson compile -C "$builddir"
# Capture first: `grep -q` would close the pipe early and pipefail would report SIGPIPE.
inspect=$(gst-inspect-1.0 "$builddir/libgstgpumetrics.so")
grep -q 'gpumetrics' <<<"$inspect" || { echo "the meson-built plugin does not load" >&2; exit 1; }
echo "meson build: plugin loads"
"$builddir/gpumetrics" --version >/dev/null || { echo "the meson-built gpumetrics command does not run" >&2; exit 1; }
echo "meson build: gpumetrics command runs"
