#!/usr/bin/env bash
# Builds libvmaf 3.2.0's `vmaf` tool for the speed comparison on the GPU machine (issue 24):
# static libvmaf, float features (SpEED, needed by the v1 models), its x86 assembly (the
# fastest CPU path: this build is for timing; the reference data come from the plain C
# build of tests/generate_vmaf_reference.sh), built-in models. Needs git, meson, ninja,
# nasm and a C compiler, and a clone of Netflix/vmaf (SRC, default ../vmaf).
#   tests/build_libvmaf_tool.sh [SRC] -> .gpu/inputs/lv32/vmaf (scripts/gpu-all.sh libvmaf32)
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:-../vmaf}
out=$PWD/.gpu/inputs/lv32
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git -C "$src" archive v3.2.0 libvmaf model | tar -x -C "$work"
meson setup "$work/build" "$work/libvmaf" --buildtype=release -Denable_float=true \
  -Denable_asm=true -Denable_cuda=false -Ddefault_library=static -Dbuilt_in_models=true
ninja -C "$work/build" tools/vmaf
mkdir -p "$out"
install -m 755 "$work/build/tools/vmaf" "$out/vmaf"
strip "$out/vmaf"
"$out/vmaf" --version
