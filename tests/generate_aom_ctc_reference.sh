#!/usr/bin/env bash
# Generates the AOM CTC set's reference values: what libvmaf 3.2.0's `vmaf --aom_ctc v7.0`
# computes on the clips of tests/data/vmaf/ (pairs.txt), per frame in
# tests/data/features/aom_ctc.csv and its aggregate APSNR per pair in
# tests/data/features/aom_ctc.pooled.csv (tests/generate_libvmaf_features.sh does the work:
# the same clips, the same libvmaf, $VMAF or $VMAF_SRC as it says).
#
#   tests/generate_aom_ctc_reference.sh
#
# `--no_prediction` is not given here: the set's two models (`vmaf`, `vmaf_neg`) are part of
# it. libvmaf refuses a pair when one of the set's extractors does (psnr_hvs above 12 bits).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
AGGREGATES=1 exec "$root/tests/generate_libvmaf_features.sh" aom_ctc --aom_ctc=v7.0 --predict
