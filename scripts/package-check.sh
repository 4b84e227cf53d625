#!/usr/bin/env bash
# Proves that the crates cross the crates.io boundary: packages every crate of both
# workspaces with `cargo package`, unpacks the .crate files into a read-only folder outside
# the repository (as a registry's copies are), and builds and runs a consumer there that
# depends on gpumetrics-engine by version only: its build compiles the kernels to PTX from
# the packaged kernel crate, and it scores one pair on the CPU backend (the README's
# smallest program, engine/examples/score_two_frames.rs).
#
# The packages resolve one another through [patch.crates-io] (a Cargo configuration above
# the folders) to the unpacked copies, as a local registry would serve them.
# Dependencies keep the repository's Cargo.lock versions, and CARGO_TARGET_DIR (default:
# the repository's target/) is shared, so the third-party crates are not built twice.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
root=$(mktemp -d)
trap 'chmod -R u+w "$root" 2>/dev/null; rm -rf "$root"' EXIT
pk=$root/package-target

# The kernel workspace's crates, then the main workspace's (which depend on them by version:
# the patches stand in for the registry while packaging resolves them).
cargo package --no-verify --allow-dirty --manifest-path kernels/Cargo.toml --workspace \
  --target-dir "$pk" --quiet
cargo package --no-verify --allow-dirty --workspace --target-dir "$pk" --quiet \
  --config 'patch.crates-io.gpumetrics-kernels.path="kernels/metrics"' \
  --config 'patch.crates-io.gpumetrics-device.path="kernels/device"'

registry=$root/registry
mkdir -p "$registry"
for c in "$pk"/package/*.crate; do
  tar -xzf "$c" -C "$registry"
done
ls "$registry"
chmod -R a-w "$registry"

# The patches go in a Cargo configuration above both folders, so that they hold for every
# cargo run there: the consumer's build and the nested device build of the kernel crate.
mkdir -p "$root/.cargo"
{
  echo "[patch.crates-io]"
  for p in "$registry"/*/; do
    name=$(basename "$p")
    echo "${name%-*} = { path = \"$p\" }"
  done
} >"$root/.cargo/config.toml"
consumer=$root/consumer
mkdir -p "$consumer/src"
cat >"$consumer/Cargo.toml" <<EOF
[package]
name = "gpumetrics-consumer"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
gpumetrics-engine = "0.1.0"

[workspace]
EOF
cp engine/examples/score_two_frames.rs "$consumer/src/main.rs"
cp Cargo.lock "$consumer/Cargo.lock"
out=$(cd "$consumer" && CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$repo/target} cargo run --quiet)
echo "$out"
grep -q '^backend: cpu' <<<"$out" && grep -Eq '^psnr-y: [0-9.]+ dB' <<<"$out" ||
  { echo "package-check: the consumer did not score the pair" >&2; exit 1; }
echo "package-check: a consumer of the packaged crates built the kernels and scored a pair"
