#!/usr/bin/env bash
# Soak: millions of small pairs through the element with the resident set sampled (issue 20;
# see gst-plugin-gpumetrics/tests/soak.rs for SOAK_PAIRS, SOAK_METRICS, SOAK_SIZE,
# SOAK_BACKEND). Prints the table recorded in docs/BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup-deps.sh
cargo test -p gst-plugin-gpumetrics --test soak -- --ignored --nocapture
