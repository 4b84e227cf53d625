#!/usr/bin/env python3
# SPDX-License-Identifier: MPL-2.0
"""Live quality monitoring with the gpumetrics element, from Python (PyGObject).

Two live sources go into gpumetrics (window=1s, alert rules); the element's
gpumetrics-window and gpumetrics-alert messages are printed as they arrive on the bus,
and the summary at the end. Ctrl-C (or --duration) sends EOS, so the run ends cleanly
with the last window and the summary.

    GST_PLUGIN_PATH=$PWD/target/debug /usr/bin/python3 examples/monitor.py
    GST_PLUGIN_PATH=$PWD/target/debug /usr/bin/python3 examples/monitor.py \\
        udp://127.0.0.1:5000 udp://127.0.0.1:5001 --alerts 'psnr-y<30:2s'

Without URIs the reference is a live videotestsrc and the distorted video the same
picture from a second live videotestsrc through x264enc, whose bitrate flips between
low and high every --flip seconds, so the alert is raised and cleared. With two URIs
(anything uridecodebin opens: udp://, srt://, rtsp://, file://) those are compared.

Needs Debian's python3-gi and gir1.2-gstreamer-1.0 (scripts/setup-deps.sh installs them)
and the plugin: `cargo build -p gst-plugin-gpumetrics` and GST_PLUGIN_PATH=target/debug,
or a meson install (`meson setup build && meson install -C build`).
"""

import argparse
import signal
import sys

try:
    import gi

    gi.require_version("Gst", "1.0")
    from gi.repository import GLib, Gst
except (ImportError, ValueError) as e:
    sys.exit(
        f"monitor.py: PyGObject with GStreamer is missing ({e}): "
        "apt-get install python3-gi gir1.2-gstreamer-1.0 (scripts/setup-deps.sh), "
        "and run Debian's /usr/bin/python3"
    )

# The degraded default stream's two bitrates (kbit/s).
LOW_BITRATE = 100
HIGH_BITRATE = 4000
SIZE = "width=640,height=360,framerate=30/1"


def duration_ns(text):
    """`500ms`, `1s`, `2.5s` or `1m` in nanoseconds."""
    for unit, scale in (("ms", 1e6), ("s", 1e9), ("m", 60e9)):
        if text.endswith(unit):
            try:
                value = float(text[: -len(unit)]) * scale
            except ValueError:
                break
            if value >= 1:
                return int(round(value))
            break
    raise argparse.ArgumentTypeError(f"{text!r} is not a duration like 500ms, 1s, 1m")


def clock(ns):
    """A running time as HH:MM:SS.mmm."""
    ms = ns // 1_000_000
    return f"{ms // 3_600_000:02}:{ms // 60_000 % 60:02}:{ms // 1000 % 60:02}.{ms % 1000:03}"


def field_stats(s):
    """The per-field statistics of a window or summary structure: {field: mean}."""
    means = {}
    for i in range(s.n_fields()):
        name = s.nth_field_name(i)
        # Per-field statistics are nested structures; `alerts` is an array of them, which
        # plain PyGObject cannot read (the alert messages say the same as they happen).
        if s.get_field_type(name) != Gst.Structure.__gtype__:
            continue
        ok, mean = s.get_value(name).get_double("mean")
        if ok:
            means[name] = mean
    return means


def count(s, name):
    ok, value = s.get_uint64(name)
    return value if ok else 0


def fmt(value):
    return f"{value:.3f}" if value not in (float("inf"), float("-inf")) else str(value)


def window_line(s, fields):
    means = field_stats(s)
    shown = [f"{f} {fmt(v)}" for f, v in means.items() if not fields or f in fields]
    line = (
        f"window {clock(count(s, 'start'))}–{clock(count(s, 'end'))}: "
        f"{count(s, 'frames')} pair{'' if count(s, 'frames') == 1 else 's'}"
    )
    if shown:
        line += ", " + ", ".join(shown)
    for name in ("skipped", "unmatched-ref", "unmatched-dist"):
        if count(s, name):
            line += f", {count(s, name)} {name}"
    return line


def alert_line(s):
    ok, value = s.get_double("value")
    line = (
        f"ALERT {s.get_string('state')} {s.get_string('rule')}: {s.get_string('field')} = "
        f"{fmt(value)} at {clock(count(s, 'running-time'))}"
    )
    if s.get_string("state") == "cleared":
        ok, worst = s.get_double("worst")
        line += f" (since {clock(count(s, 'since'))}, worst {fmt(worst)})"
    return line


def build(args):
    if args.uris:
        ref, dist = args.uris
        inputs = (
            f"uridecodebin uri={ref} ! videoconvert ! queue ! m.ref_sink "
            f"uridecodebin uri={dist} ! videoconvert ! queue ! m.dist_sink "
        )
    else:
        inputs = (
            f"videotestsrc is-live=true horizontal-speed=4 ! video/x-raw,format=I420,{SIZE} "
            "! queue ! m.ref_sink "
            f"videotestsrc is-live=true horizontal-speed=4 ! video/x-raw,format=I420,{SIZE} "
            "! x264enc name=enc tune=zerolatency speed-preset=ultrafast "
            f"bitrate={LOW_BITRATE} ! avdec_h264 ! queue ! m.dist_sink "
        )
    pipeline = Gst.parse_launch(
        inputs + f"gpumetrics name=m metrics={args.metrics} backend={args.backend} ! "
        "fakesink sync=false"
    )
    m = pipeline.get_by_name("m")
    m.set_property("window", args.window)
    m.set_property("post-messages", False)
    if args.alerts:
        m.set_property("alerts", args.alerts)
    return pipeline


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("uris", nargs="*", metavar="URI", help="reference and distorted URIs")
    p.add_argument("--metrics", default="psnr", help="element metrics, e.g. psnr+ssim")
    p.add_argument("--backend", default="auto", choices=["auto", "cuda", "cpu"])
    p.add_argument("--window", type=duration_ns, default=duration_ns("1s"))
    p.add_argument("--alerts", default="psnr-y<32:500ms", help="element alert rules")
    p.add_argument("--fields", help="fields shown, comma-separated (default: the rules')")
    p.add_argument("--duration", type=float, help="end (with EOS) after SECONDS")
    p.add_argument("--flip", type=float, default=5.0, help="default source: seconds per bitrate")
    args = p.parse_args()
    if len(args.uris) not in (0, 2):
        p.error("give two URIs (reference, distorted) or none")

    Gst.init(None)
    if Gst.ElementFactory.find("gpumetrics") is None:
        sys.exit(
            "monitor.py: the gpumetrics element is not found: build it "
            "(cargo build -p gst-plugin-gpumetrics) and run with "
            "GST_PLUGIN_PATH=$PWD/target/debug, or install it with meson"
        )
    pipeline = build(args)
    # The fields a window line shows: --fields, else those the rules watch (else all).
    if args.fields:
        fields = args.fields.split(",")
    else:
        rules = filter(None, (r.strip() for r in args.alerts.split(",")))
        fields = list(dict.fromkeys(r.split("<")[0].split(">")[0] for r in rules))

    loop = GLib.MainLoop()
    status = {"code": 0, "ending": False}

    def end():
        # EOS from the sources: the element closes the last window and posts the summary.
        if not status["ending"]:
            status["ending"] = True
            print("ending: EOS sent", file=sys.stderr, flush=True)
            pipeline.send_event(Gst.Event.new_eos())
        return GLib.SOURCE_REMOVE

    def on_message(bus, msg):
        t = msg.type
        if t == Gst.MessageType.ELEMENT:
            s = msg.get_structure()
            if s.get_name() == "gpumetrics-window":
                print(window_line(s, fields), flush=True)
            elif s.get_name() == "gpumetrics-alert":
                print(alert_line(s), file=sys.stderr, flush=True)
            elif s.get_name() == "gpumetrics-summary":
                means = field_stats(s)
                print(
                    f"summary: {count(s, 'frames')} pairs, "
                    + ", ".join(f"{f} {fmt(v)}" for f, v in means.items() if not fields or f in fields),
                    flush=True,
                )
        elif t == Gst.MessageType.ERROR:
            err, debug = msg.parse_error()
            print(f"error: {err.message} ({debug})", file=sys.stderr)
            status["code"] = 1
            loop.quit()
        elif t == Gst.MessageType.EOS:
            loop.quit()
        return True

    bus = pipeline.get_bus()
    bus.add_signal_watch()
    bus.connect("message", on_message)
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGINT, end)
    if args.duration:
        GLib.timeout_add(int(args.duration * 1000), end)
    enc = pipeline.get_by_name("enc")
    if enc is not None and args.flip > 0:

        def flip():
            low = enc.get_property("bitrate") == LOW_BITRATE
            enc.set_property("bitrate", HIGH_BITRATE if low else LOW_BITRATE)
            return GLib.SOURCE_CONTINUE

        GLib.timeout_add(int(args.flip * 1000), flip)

    if pipeline.set_state(Gst.State.PLAYING) == Gst.StateChangeReturn.FAILURE:
        sys.exit("monitor.py: the pipeline does not start (GST_DEBUG=3 says why)")
    try:
        loop.run()
    finally:
        pipeline.set_state(Gst.State.NULL)
        bus.remove_signal_watch()
    return status["code"]


if __name__ == "__main__":
    sys.exit(main())
