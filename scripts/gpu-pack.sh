#!/usr/bin/env bash
# Builds release binaries for the GPU machine and copies them, stripped, into DIR (created):
#   scripts/gpu-pack.sh DIR PACKAGE:KIND:NAME...
# KIND is test, bench, example or bin, e.g.
#   scripts/gpu-pack.sh .gpu/cli/bin gpumetrics-engine:test:cuda_kernels \
#     gpumetrics-engine:bench:throughput gpumetrics-cli:bin:gpumetrics
# Test and bench binaries keep their target name (cargo names them NAME-HASH).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n '2,7p' "$0" >&2; exit 2; }
dir=$1
shift
mkdir -p "$dir"
for spec in "$@"; do
  IFS=: read -r pkg kind name <<<"$spec"
  case $kind in
    test) args=(test --release --no-run -p "$pkg" --test "$name") ;;
    bench) args=(bench --no-run -p "$pkg" --bench "$name") ;;
    example | bin) args=(build --release -p "$pkg" "--$kind" "$name") ;;
    *) echo "gpu-pack: unknown kind '$kind' in '$spec'" >&2; exit 2 ;;
  esac
  exe=$(cargo "${args[@]}" --message-format=json | python3 -c '
import json, sys
name = sys.argv[1]
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == name and m.get("executable"):
        print(m["executable"])
' "$name" | tail -1)
  [ -n "$exe" ] || { echo "gpu-pack: no executable for '$spec'" >&2; exit 1; }
  cp "$exe" "$dir/$name"
  strip "$dir/$name"
  echo "$dir/$name ($(du -h "$dir/$name" | cut -f1))"
done
