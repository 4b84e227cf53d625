# The shared preamble of scripts/gpu-*.sh. Those run on the GPU machine (see
# ../shared/docs/GPU-MACHINE.md) from the repository root and source this file after setting
#   d    the carried folder (.gpu/NAME) with the script's binaries (scripts/gpu-pack.sh lays
#        them out) and, when it has one, plugin/libgstgpumetrics.so;
#   kit  (optional) the GStreamer kit from ../shared/tools/gpu-kit to use (e.g. $d/gst).
# It sets `out` ($OUT, where logs go, or /tmp), `BUILD_ROOT` (the tree the tests were built in:
# they read test data through that path, so it is linked to this tree when absent), `fail=0`
# and the helpers `step TITLE` and `run COMMAND...` (which records a failure and goes on),
# then prints the GPU.
set -uo pipefail
out=${OUT:-/tmp}
BUILD_ROOT=${BUILD_ROOT:-/work/main}
export PATH=$PATH:/usr/local/cuda/bin
export GST_DEBUG_NO_COLOR=1
if [ -n "${kit:-}" ]; then
  source "$kit/env.sh"
  if [ -d "$d/plugin" ]; then export GST_PLUGIN_PATH=$PWD/$d/plugin; fi
fi
step() { echo; echo "=== $*"; }
fail=0
run() { "$@" || { echo "FAILED ($?): $*"; fail=1; }; }
[ -e "$BUILD_ROOT" ] || { mkdir -p "$(dirname "$BUILD_ROOT")" && ln -s "$PWD" "$BUILD_ROOT"; }

step "GPU"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
date -u
