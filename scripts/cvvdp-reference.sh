#!/usr/bin/env bash
# SPDX-License-Identifier: MPL-2.0
# Regenerates tests/data/cvvdp/values.json from ColorVideoVDP 0.5.7 (gfxdisp/ColorVideoVDP,
# MIT licence), the reference of the `cvvdp` metric: installs `cvvdp==0.5.7` and the torch
# it brings in a virtual environment (CVVDP_VENV, default .venv-cvvdp: a few GB, once), then
# runs tests/cvvdp/generate.py on the CPU. CI never runs this: the values are committed.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${CVVDP_VENV:-.venv-cvvdp}
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q "cvvdp==0.5.7"
"$venv/bin/python" tests/cvvdp/generate.py "${1:-tests/data/cvvdp/values.json}"
