#!/usr/bin/env bash
# Prints the path of the FFmpeg the tests take XPSNR's reference values from: FFmpeg 9.0.2
# (Debian 12's 5.1 has no `xpsnr` filter), the static binary of PyPI's imageio-ffmpeg 0.8.1,
# installed on first use in a virtual environment under target/ (about 70 MB; needs
# python3-venv, which scripts/setup-deps.sh installs).
#   GPUMETRICS_REFERENCE_FFMPEG=$(scripts/reference-ffmpeg.sh) cargo test ...
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/reference-venv
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import imageio_ffmpeg' 2>/dev/null; then
  echo "reference-ffmpeg: installing imageio-ffmpeg==0.8.1 in $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check imageio-ffmpeg==0.8.1 >&2
fi
exe=$("$venv/bin/python" -c 'import imageio_ffmpeg; print(imageio_ffmpeg.get_ffmpeg_exe())')
# Capture first: `grep -q` would close the pipe early and pipefail would report SIGPIPE.
filters=$("$exe" -hide_banner -filters 2>/dev/null)
grep -q ' xpsnr ' <<<"$filters" || {
  echo "reference-ffmpeg: $exe has no xpsnr filter" >&2
  exit 1
}
echo "$exe"
