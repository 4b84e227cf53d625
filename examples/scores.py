#!/usr/bin/env python3
# SPDX-License-Identifier: MPL-2.0
"""Per-frame scores, buffer meta and the summary of the gpumetrics element, from Python.

The reference is videotestsrc and the distorted video the same frames through JPEG at a
low quality (jpegenc ! jpegdec). For every compared pair the element posts a `gpumetrics`
message on the bus and attaches the same scores to the outgoing buffer as the custom meta
`GstGpuMetricsMeta`; at EOS it posts `gpumetrics-summary`. This program prints all three:

    meta 0: psnr-y 29.986, mse-y 65.241, ..., ssim 0.97621   (a pad probe, streaming thread)
    frame 0: psnr-y 29.986, mse-y 65.241, ..., ssim 0.97621  (the bus message)
    summary: 3 pairs
      psnr-y: mean 30.035, pooled 30.034, min 29.986, p5 29.991, p95 30.077, max 30.082

    GST_PLUGIN_PATH=$PWD/target/debug /usr/bin/python3 examples/scores.py --frames 30

Plain PyGObject reads it all: a message's structure, the nested structure per field of
the summary, and the meta through Gst.Buffer.get_custom_meta() and
Gst.CustomMeta.get_structure(). Only arrays (the summary's `alerts` and `events`) need
gst-python's overrides, so they are not read here.

Needs Debian's python3-gi and gir1.2-gstreamer-1.0 (scripts/setup-deps.sh installs them)
and the plugin (`cargo build -p gst-plugin-gpumetrics`, GST_PLUGIN_PATH=target/debug, or
a meson install).
"""

import argparse
import sys
import threading

try:
    import gi

    gi.require_version("Gst", "1.0")
    from gi.repository import Gst
except (ImportError, ValueError) as e:
    sys.exit(
        f"scores.py: PyGObject with GStreamer is missing ({e}): "
        "apt-get install python3-gi gir1.2-gstreamer-1.0 (scripts/setup-deps.sh), "
        "and run Debian's /usr/bin/python3"
    )

META = "GstGpuMetricsMeta"
# What a record carries besides the scores.
TIMES = ("frame", "pts", "running-time", "duration")
# The summary statistics printed per field, when present (`pooled`: PSNR fields only).
STATS = ("mean", "pooled", "min", "p5", "p95", "max")


# The meta lines come from the streaming thread, the others from the main one.
_print_lock = threading.Lock()


def say(text):
    with _print_lock:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


def fmt(value):
    return f"{value:.5g}" if value not in (float("inf"), float("-inf")) else str(value)


def scores(s):
    """The doubles of a record structure (message or meta), in order: [(field, value)]."""
    out = []
    for i in range(s.n_fields()):
        name = s.nth_field_name(i)
        if name in TIMES:
            continue
        # Every score is a double (get_double refuses other types).
        ok, value = s.get_double(name)
        if ok:
            out.append((name, value))
    return out


def record_line(label, s):
    ok, frame = s.get_uint64("frame")
    fields = ", ".join(f"{name} {fmt(v)}" for name, v in scores(s))
    return f"{label} {frame}: {fields}"


def summary_lines(s):
    ok, frames = s.get_uint64("frames")
    lines = [f"summary: {frames} pairs"]
    for i in range(s.n_fields()):
        name = s.nth_field_name(i)
        if s.get_field_type(name) != Gst.Structure.__gtype__:
            continue
        stats = s.get_value(name)
        parts = []
        for stat in STATS:
            ok, value = stats.get_double(stat)
            if ok:
                parts.append(f"{stat} {fmt(value)}")
        lines.append(f"  {name}: " + ", ".join(parts))
    return lines


def on_buffer(pad, info):
    meta = info.get_buffer().get_custom_meta(META)
    if meta is not None:
        say(record_line("meta", meta.get_structure()))
    return Gst.PadProbeReturn.OK


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=30, help="frames of each input")
    parser.add_argument("--metrics", default="psnr+ssim", help="the element's metrics")
    parser.add_argument("--backend", default="auto", help="auto, cuda or cpu")
    parser.add_argument("--quality", type=int, default=30, help="JPEG quality (1..100)")
    args = parser.parse_args()

    Gst.init(None)
    if Gst.ElementFactory.find("gpumetrics") is None:
        sys.exit(
            "scores.py: no gpumetrics element: build it (cargo build -p "
            "gst-plugin-gpumetrics) and set GST_PLUGIN_PATH=$PWD/target/debug"
        )
    caps = "video/x-raw,format=I420,width=320,height=240,framerate=30/1"
    pipeline = Gst.parse_launch(
        f"videotestsrc num-buffers={args.frames} pattern=smpte ! {caps} ! tee name=t "
        "t. ! queue ! m.ref_sink "
        f"t. ! queue ! jpegenc quality={args.quality} ! jpegdec ! queue ! m.dist_sink "
        f"gpumetrics name=m metrics={args.metrics} backend={args.backend} "
        "! fakesink name=sink"
    )
    pad = pipeline.get_by_name("sink").get_static_pad("sink")
    pad.add_probe(Gst.PadProbeType.BUFFER, on_buffer)

    pipeline.set_state(Gst.State.PLAYING)
    bus = pipeline.get_bus()
    status = 0
    while True:
        msg = bus.timed_pop_filtered(
            Gst.CLOCK_TIME_NONE,
            Gst.MessageType.ELEMENT | Gst.MessageType.EOS | Gst.MessageType.ERROR,
        )
        if msg.type == Gst.MessageType.ERROR:
            err, debug = msg.parse_error()
            print(f"scores.py: error: {err.message} ({debug})", file=sys.stderr)
            status = 1
            break
        if msg.type == Gst.MessageType.EOS:
            break
        s = msg.get_structure()
        if s.get_name() == "gpumetrics":
            say(record_line("frame", s))
        elif s.get_name() == "gpumetrics-summary":
            say("\n".join(summary_lines(s)))
    pipeline.set_state(Gst.State.NULL)
    return status


if __name__ == "__main__":
    sys.exit(main())
