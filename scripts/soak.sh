#!/usr/bin/env bash
# Soaks, printing the tables recorded in docs/BENCHMARKS.md (see
# gst-plugin-gpumetrics/tests/soak.rs for the SOAK_* variables):
#   scripts/soak.sh        millions of small pairs with the resident set sampled (issue 20;
#                          SOAK_PAIRS, SOAK_METRICS, SOAK_SIZE, SOAK_BACKEND)
#   scripts/soak.sh live   a live monitor for an hour (issue 43): window, alerts, Prometheus,
#                          a stats file, the distorted input stalling every 5 minutes; threads,
#                          fds and RSS every minute (SOAK_MINUTES, SOAK_STALL_EVERY,
#                          SOAK_STALL_FOR, SOAK_BACKEND)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup-deps.sh
case "${1:-pairs}" in
    pairs) test=rss_stays_flat_over_millions_of_pairs ;;
    live) test=a_live_monitor_with_stalls_stays_flat_for_an_hour ;;
    *) echo "usage: $0 [pairs|live]" >&2; exit 2 ;;
esac
cargo test -p gst-plugin-gpumetrics --test soak -- --ignored --nocapture --exact "$test"
