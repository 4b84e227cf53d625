/* SPDX-License-Identifier: MPL-2.0
 *
 * Per-frame scores, buffer meta and the summary of the gpumetrics element, from C.
 *
 * The reference is videotestsrc and the distorted video the same frames through JPEG at a
 * low quality. For every compared pair the element posts a `gpumetrics` element message and
 * attaches the same scores to the outgoing buffer as the custom meta `GstGpuMetricsMeta`
 * (registered with gst_meta_register_custom(), so no header of the plugin is needed); at EOS
 * it posts `gpumetrics-summary`, one nested structure per field. This program prints them:
 *
 *   meta 0: psnr-y 29.986, mse-y 65.241, ...   (a pad probe on the sink, streaming thread)
 *   frame 0: psnr-y 29.986, mse-y 65.241, ...  (the bus message)
 *   summary: 30 pairs
 *     psnr-y: mean 30.035, pooled 30.034, min 29.986, p5 29.991, p95 30.077, max 30.082
 *
 * Build and run (the plugin built by cargo, or installed with meson):
 *
 *   cc -o scores examples/scores.c $(pkg-config --cflags --libs gstreamer-1.0)
 *   GST_PLUGIN_PATH=$PWD/target/debug ./scores [FRAMES [METRICS [BACKEND]]]
 *
 * e.g. `./scores 30 psnr+ssim cpu`. Exit status 0, or 1 on an error (printed on stderr).
 */

#include <gst/gst.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define META_NAME "GstGpuMetricsMeta"

/* The summary statistics printed per field, when present (`pooled`: PSNR fields only). */
static const char *const STATS[] = {"mean", "pooled", "min", "p5", "p95", "max"};

/* The meta lines come from the streaming thread, the others from the main one. */
static GMutex print_lock;

/* "LABEL FRAME: field value, ..." for a record (message or meta): every double field. */
static void print_record(const char *label, const GstStructure *s) {
  guint64 frame = 0;
  GString *line = g_string_new(NULL);
  gst_structure_get_uint64(s, "frame", &frame);
  g_string_append_printf(line, "%s %" G_GUINT64_FORMAT ":", label, frame);
  gboolean first = TRUE;
  for (gint i = 0; i < gst_structure_n_fields(s); i++) {
    const char *name = gst_structure_nth_field_name(s, i);
    gdouble value;
    /* The scores are the doubles; frame and times are guint64. */
    if (!gst_structure_get_double(s, name, &value))
      continue;
    g_string_append_printf(line, "%s %s %.5g", first ? "" : ",", name, value);
    first = FALSE;
  }
  g_mutex_lock(&print_lock);
  printf("%s\n", line->str);
  fflush(stdout);
  g_mutex_unlock(&print_lock);
  g_string_free(line, TRUE);
}

static void print_summary(const GstStructure *s) {
  guint64 frames = 0;
  gst_structure_get_uint64(s, "frames", &frames);
  g_mutex_lock(&print_lock);
  printf("summary: %" G_GUINT64_FORMAT " pairs\n", frames);
  for (gint i = 0; i < gst_structure_n_fields(s); i++) {
    const char *name = gst_structure_nth_field_name(s, i);
    const GValue *v = gst_structure_get_value(s, name);
    if (!GST_VALUE_HOLDS_STRUCTURE(v))
      continue; /* counts, and the alerts/events arrays */
    const GstStructure *stats = gst_value_get_structure(v);
    printf("  %s:", name);
    gboolean first = TRUE;
    for (gsize k = 0; k < G_N_ELEMENTS(STATS); k++) {
      gdouble value;
      if (!gst_structure_get_double(stats, STATS[k], &value))
        continue;
      printf("%s %s %.5g", first ? "" : ",", STATS[k], value);
      first = FALSE;
    }
    printf("\n");
  }
  fflush(stdout);
  g_mutex_unlock(&print_lock);
}

static GstPadProbeReturn on_buffer(GstPad *pad, GstPadProbeInfo *info, gpointer data) {
  (void)pad;
  (void)data;
  GstBuffer *buffer = GST_PAD_PROBE_INFO_BUFFER(info);
  GstCustomMeta *meta = gst_buffer_get_custom_meta(buffer, META_NAME);
  if (meta != NULL)
    print_record("meta", gst_custom_meta_get_structure(meta));
  return GST_PAD_PROBE_OK;
}

int main(int argc, char **argv) {
  const int frames = argc > 1 ? atoi(argv[1]) : 30;
  const char *metrics = argc > 2 ? argv[2] : "psnr+ssim";
  const char *backend = argc > 3 ? argv[3] : "auto";
  int status = 0;

  gst_init(NULL, NULL);
  if (frames < 1) {
    fprintf(stderr, "scores: FRAMES must be a positive number, not %s\n", argv[1]);
    return 1;
  }
  GstElementFactory *factory = gst_element_factory_find("gpumetrics");
  if (factory == NULL) {
    fprintf(stderr, "scores: no gpumetrics element: build it (cargo build -p "
                    "gst-plugin-gpumetrics) and set GST_PLUGIN_PATH=$PWD/target/debug\n");
    return 1;
  }
  gst_object_unref(factory);

  gchar *launch = g_strdup_printf(
      "videotestsrc num-buffers=%d pattern=smpte ! "
      "video/x-raw,format=I420,width=320,height=240,framerate=30/1 ! tee name=t "
      "t. ! queue ! m.ref_sink "
      "t. ! queue ! jpegenc quality=30 ! jpegdec ! queue ! m.dist_sink "
      "gpumetrics name=m metrics=%s backend=%s ! fakesink name=sink",
      frames, metrics, backend);
  GError *error = NULL;
  GstElement *pipeline = gst_parse_launch(launch, &error);
  g_free(launch);
  if (pipeline == NULL || error != NULL) {
    fprintf(stderr, "scores: cannot build the pipeline: %s\n",
            error ? error->message : "unknown error");
    g_clear_error(&error);
    return 1;
  }

  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  GstPad *pad = gst_element_get_static_pad(sink, "sink");
  gst_pad_add_probe(pad, GST_PAD_PROBE_TYPE_BUFFER, on_buffer, NULL, NULL);
  gst_object_unref(pad);
  gst_object_unref(sink);

  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstBus *bus = gst_element_get_bus(pipeline);
  for (;;) {
    GstMessage *msg = gst_bus_timed_pop_filtered(
        bus, GST_CLOCK_TIME_NONE,
        GST_MESSAGE_ELEMENT | GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
    if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
      GError *err = NULL;
      gchar *debug = NULL;
      gst_message_parse_error(msg, &err, &debug);
      fprintf(stderr, "scores: error: %s (%s)\n", err->message, debug ? debug : "");
      g_clear_error(&err);
      g_free(debug);
      gst_message_unref(msg);
      status = 1;
      break;
    }
    if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_EOS) {
      gst_message_unref(msg);
      break;
    }
    const GstStructure *s = gst_message_get_structure(msg);
    if (gst_structure_has_name(s, "gpumetrics"))
      print_record("frame", s);
    else if (gst_structure_has_name(s, "gpumetrics-summary"))
      print_summary(s);
    gst_message_unref(msg);
  }
  gst_object_unref(bus);
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(pipeline);
  return status;
}
