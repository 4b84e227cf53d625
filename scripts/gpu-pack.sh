#!/usr/bin/env bash
# Builds release binaries for the GPU machine and copies them, stripped, into DIR (created):
#   scripts/gpu-pack.sh DIR PACKAGE:KIND:NAME...
# KIND is test, bench, example or bin, e.g.
#   scripts/gpu-pack.sh .gpu/cli/bin gpumetrics-engine:test:cuda_kernels \
#     gpumetrics-engine:bench:throughput gpumetrics-cli:bin:gpumetrics
# Test and bench binaries keep their target name (cargo names them NAME-HASH). The targets
# of one package and kind are built by one cargo command. scripts/gpu-all.sh pack calls this.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n '2,8p' "$0" >&2; exit 2; }
dir=$1
shift
mkdir -p "$dir"
# One cargo command per PACKAGE:KIND, in the order they first appear.
groups=()
declare -A names
for spec in "$@"; do
  IFS=: read -r pkg kind name <<<"$spec"
  case $kind in
    test | bench | example | bin) ;;
    *) echo "gpu-pack: unknown kind '$kind' in '$spec'" >&2; exit 2 ;;
  esac
  [ -n "${names[$pkg:$kind]+x}" ] || groups+=("$pkg:$kind")
  names[$pkg:$kind]="${names[$pkg:$kind]:-} $name"
done
for group in "${groups[@]}"; do
  IFS=: read -r pkg kind <<<"$group"
  read -ra targets <<<"${names[$group]}"
  case $kind in
    test) args=(test --release --no-run -p "$pkg") ;;
    bench) args=(bench --no-run -p "$pkg") ;;
    example | bin) args=(build --release -p "$pkg") ;;
  esac
  for name in "${targets[@]}"; do args+=("--$kind" "$name"); done
  # name<TAB>executable of every artifact built.
  built=$(cargo "${args[@]}" --message-format=json | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        print(m["target"]["name"] + "\t" + m["executable"])
')
  for name in "${targets[@]}"; do
    exe=$(awk -F'\t' -v n="$name" '$1 == n { e = $2 } END { print e }' <<<"$built")
    [ -n "$exe" ] || { echo "gpu-pack: no executable for '$pkg:$kind:$name'" >&2; exit 1; }
    cp "$exe" "$dir/$name"
    strip "$dir/$name"
    echo "$dir/$name ($(du -h "$dir/$name" | cut -f1))"
  done
done
