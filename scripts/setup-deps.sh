#!/usr/bin/env bash
# Installs what building and testing gpumetrics needs on Debian 12: GStreamer development
# packages and plugins (x264, libav for the example and tests), ffmpeg (reference values),
# meson, python3-venv (scripts/reference-ffmpeg.sh), Prometheus (the server that
# gst-plugin-gpumetrics/tests/prometheus.rs scrapes the element with; the test starts its
# own instance, /usr/bin/prometheus), and the nightly toolchain components that build the
# PTX kernels.
# Safe to run repeatedly: it only installs what is missing.
set -euo pipefail

packages=(
  build-essential pkg-config meson ninja-build ffmpeg fonts-dejavu-core
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev libgstreamer-plugins-bad1.0-dev
  gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good
  gstreamer1.0-plugins-bad gstreamer1.0-plugins-ugly gstreamer1.0-libav
  prometheus
  python3-gi gir1.2-gstreamer-1.0 python3-venv
)
missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ $status == *"ok installed"* ]] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if ! command -v rustup >/dev/null; then
  echo "setup: rustup is required (https://rustup.rs): curl https://sh.rustup.rs -sSf | sh" >&2
  exit 1
fi
# The kernels are compiled by the nightly toolchain (nvptx64 target, -Zbuild-std=core) and
# linked with the LLVM tools shipped as a rustup component.
[[ $'\n'$(rustup toolchain list) == *$'\n'nightly* ]] || rustup toolchain install nightly --profile minimal
rustup component add rust-src llvm-tools --toolchain nightly >/dev/null
# scripts/test.sh checks formatting and lints with the stable toolchain's tools.
for c in rustfmt clippy; do
  [[ $'\n'$(rustup component list --installed 2>/dev/null) == *$'\n'$c-* ]] || rustup component add $c >/dev/null
done
