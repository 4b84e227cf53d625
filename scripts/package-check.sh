#!/usr/bin/env bash
# Proves that the crates cross the crates.io boundary. `cargo package --workspace` packages
# every crate and verifies each package by building it from its .crate file alone, the
# workspace siblings it depends on served from cargo's temporary local registry (the engine's
# verification compiles the packaged kernel crate to PTX). Then the .crate files are
# unpacked into a read-only folder outside the repository (as a registry's copies are), and
# a consumer there that depends on gpumetrics-engine by version only is built and run: its
# build compiles the kernels to PTX from the packaged kernel crate, and it scores one pair on
# the CPU backend (the README's smallest program, engine/examples/score_two_frames.rs).
#
# The consumer's packages resolve one another through [patch.crates-io] (a Cargo
# configuration above the folders) to the unpacked copies, as a local registry would serve
# them, with the repository's Cargo.lock versions.
#
# Verification builds the packages with their own (default) profiles, not the workspace's,
# so it shares no artifacts with the workspace's builds: it and the consumer get a target
# directory of their own, target/package-check (under CARGO_TARGET_DIR when set), kept
# between runs for the third-party crates. Cargo takes a registry package of a given name and
# version for immutable, and these change between runs without a version bump: the script
# forgets what earlier runs built of them (their fingerprints), and removes the folders that
# cargo unpacked this run's temporary registry into (under $CARGO_HOME/registry/src, named
# after the registry's path; left there, the next run would verify against them).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
root=$(mktemp -d)
pt=${CARGO_TARGET_DIR:-$repo/target}/package-check
unpacked=${CARGO_HOME:-$HOME/.cargo}/registry/src
mkdir -p "$unpacked"
before=$(ls -A "$unpacked")
cleanup() {
  chmod -R u+w "$root" 2>/dev/null
  rm -rf "$root"
  local d
  for d in "$unpacked"/*/; do
    d=${d%/}
    if ! grep -qxF -e "$(basename "$d")" <<<"$before" && compgen -G "$d/gpumetrics-*" >/dev/null; then
      rm -rf "$d"
    fi
  done
}
trap cleanup EXIT

rm -rf "$pt"/debug/.fingerprint/gpumetrics-* "$pt"/debug/.fingerprint/gst-plugin-gpumetrics-* \
  "$pt"/package/*.crate
# The same in the engine's nested device builds (the packaged kernel crate's build script
# and library, compiled there for the host and for nvptx64).
rm -rf "$pt"/debug/build/gpumetrics-engine-*/out/nvptx/release/.fingerprint/gpumetrics-* \
  "$pt"/debug/build/gpumetrics-engine-*/out/nvptx/*/release/.fingerprint/gpumetrics-*
# Plain `cargo package --workspace` (--allow-dirty for uncommitted work), in its own target.
cargo package --workspace --allow-dirty --target-dir "$pt" --quiet

registry=$root/registry
mkdir -p "$registry"
for c in "$pt"/package/*.crate; do
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
out=$(cd "$consumer" && CARGO_TARGET_DIR=$pt cargo run --quiet)
echo "$out"
grep -q '^backend: cpu' <<<"$out" && grep -Eq '^psnr-y: [0-9.]+ dB' <<<"$out" ||
  { echo "package-check: the consumer did not score the pair" >&2; exit 1; }
echo "package-check: a consumer of the packaged crates built the kernels and scored a pair"
