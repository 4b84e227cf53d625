// SPDX-License-Identifier: MPL-2.0
//! The measuring pipeline:
//!
//! ```text
//! NVDEC:    urisourcebin ! parsebin ! nvh264dec [! cudascale ! caps] ! queue ! m.ref_sink
//! software: uridecodebin ! videoconvert [! videoscale ! caps]       ! queue ! m.dist_sink
//!           gpumetrics name=m post-messages=true [window=... alerts=... ...] ! fakesink
//! ```
//!
//! Each input gets its own decoder branch; a [`Gate`] on the queue's src pad applies offset,
//! `--every`, `--frames` and Ctrl-C. NVDEC keeps the frames in CUDA memory, where the
//! element's CUDA backend reads them in place. With one input (no reference) only the
//! distorted branch is built: ref_sink stays unlinked, and the element measures dist_sink
//! alone with the no-reference metrics. Several distorted inputs against one reference
//! ([`build_several`]) get one element each, fed by a `tee` after the reference's decoder;
//! [`build_run`] builds either and gives the run one shape to read.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result, anyhow, bail};
use gst::prelude::*;

use crate::gate::{Gate, GateConfig};
use crate::input::Input;

/// How one input is decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoding {
    /// An NVIDIA decoder element (e.g. `nvh264dec`) into CUDA memory.
    Nvdec(String),
    /// `uridecodebin`'s choice, into system memory.
    Software,
}

/// The NVIDIA decoder element for a coded format, when GStreamer has one registered (the
/// nvcodec plugin registers them only where a CUDA device with NVDEC is present).
pub fn nvdec_factory(input: &Input) -> Option<String> {
    let caps = input.caps.as_ref()?;
    let s = caps.structure(0)?;
    let name = match s.name().as_str() {
        "video/x-h264" => "nvh264dec",
        "video/x-h265" => "nvh265dec",
        "video/x-vp8" => "nvvp8dec",
        "video/x-vp9" => "nvvp9dec",
        "video/x-av1" => "nvav1dec",
        "image/jpeg" => "nvjpegdec",
        "video/mpeg" => match s.get::<i32>("mpegversion").ok()? {
            1 | 2 => "nvmpeg2videodec",
            4 => "nvmpeg4videodec",
            _ => return None,
        },
        _ => return None,
    };
    gst::ElementFactory::find(name).map(|_| name.to_string())
}

/// Caps seen on a pad, kept past the pipeline's end.
pub type CapsCell = Arc<Mutex<Option<gst::Caps>>>;

/// The decoder elements plugged for an input (filled while the pipeline starts).
pub type Plugged = Arc<Mutex<Vec<String>>>;

/// Everything the run needs to build the pipeline.
#[derive(Debug, Clone)]
pub struct PipelineConfig {
    /// Element `metrics` in its string form (`psnr+ssim`).
    pub metrics: String,
    pub backend: &'static str,
    pub device: u32,
    pub pairing: &'static str,
    /// The metrics' options given, set on the element's properties of the same names.
    pub options: Vec<crate::options::Given>,
    /// The element's `map` (`--map`, `--map-video`), if any.
    pub map: Option<&'static str>,
    /// `--map-video`: the file the heat-map frames are encoded to (instead of a fakesink).
    pub map_video: Option<std::path::PathBuf>,
    /// Scale the distorted input to this size.
    pub scale_to: Option<(u32, u32)>,
    /// Convert the distorted input to this raw format (the reference's, e.g. `I420`).
    pub convert_to: Option<String>,
    pub decoding: [Decoding; 2],
    pub gates: [GateConfig; 2],
    /// The monitoring properties (`window`, `alerts`, `subsample`, `roi`,
    /// `prometheus-address`).
    pub monitoring: crate::monitor::Monitoring,
}

/// The built pipeline and the handles the run reads.
pub struct Built {
    pub pipeline: gst::Pipeline,
    pub element: gst::Element,
    /// Per input (reference, distorted); none for an input the run does not have.
    pub gates: [Option<Gate>; 2],
    /// Decoder elements that were plugged, per input (filled while the pipeline starts).
    pub decoders: [Arc<Mutex<Vec<String>>>; 2],
    /// Caps that reached the element, per input (kept past the pipeline's end).
    pub caps: [Arc<Mutex<Option<gst::Caps>>>; 2],
    /// Caps of the decoded frames, per input, before any conversion: with `caps`, whether
    /// negotiation converted an input (10-bit frames measured as 8-bit, say).
    pub decoded: [Arc<Mutex<Option<gst::Caps>>>; 2],
}

/// Keeps the caps that pass `pad` in `seen` (the latest of them).
fn keep_caps(pad: &gst::Pad, seen: Arc<Mutex<Option<gst::Caps>>>) {
    pad.add_probe(gst::PadProbeType::EVENT_DOWNSTREAM, move |_, info| {
        if let Some(gst::PadProbeData::Event(ev)) = &info.data
            && let gst::EventView::Caps(c) = ev.view()
        {
            *seen.lock().unwrap_or_else(|e| e.into_inner()) = Some(c.caps_owned());
        }
        gst::PadProbeReturn::Ok
    });
}

/// The raw video format of caps (`I420`, `Y444`, ...).
pub fn caps_format(caps: &gst::Caps) -> Option<String> {
    caps.structure(0)?.get::<String>("format").ok()
}

/// A capsfilter for size and format, in system or CUDA memory.
fn reshape_filter(
    size: Option<(u32, u32)>,
    format: Option<&str>,
    cuda: bool,
) -> Result<gst::Element> {
    let mut st = gst::Structure::new_empty("video/x-raw");
    if let Some((w, h)) = size {
        st.set("width", w as i32);
        st.set("height", h as i32);
    }
    if let Some(f) = format {
        st.set("format", f);
    }
    let mut caps = gst::Caps::new_empty();
    {
        let caps = caps.get_mut().expect("new caps are writable");
        let features = cuda.then(|| gst::CapsFeatures::new(["memory:CUDAMemory"]));
        caps.append_structure_full(st, features);
    }
    Ok(gst::ElementFactory::make("capsfilter")
        .property("caps", caps)
        .build()?)
}

/// The `videoscale` method used by `--scale`.
pub const SCALE_METHOD: &str = "lanczos";

fn make(factory: &str) -> Result<gst::Element> {
    gst::ElementFactory::make(factory).build().map_err(|_| {
        anyhow!(
            "the GStreamer element `{factory}` is missing: install the GStreamer plugins \
             (scripts/setup-deps.sh lists them)"
        )
    })
}

/// Links `src` to `sink` when `sink` is still free; logs nothing on refusal (the pad was
/// not a video pad).
fn link_once(src: &gst::Pad, sink: &gst::Pad) -> bool {
    !sink.is_linked() && src.link(sink).is_ok()
}

fn is_video_pad(pad: &gst::Pad) -> bool {
    let caps = pad.current_caps().unwrap_or_else(|| pad.query_caps(None));
    caps.structure(0)
        .is_some_and(|s| s.name().starts_with("video/") || s.name().starts_with("image/"))
}

/// Builds one input's branch; returns the queue feeding the element and the pad where the
/// decoded frames come out (before any conversion).
fn branch(
    pipeline: &gst::Pipeline,
    input: &Input,
    decoding: &Decoding,
    scale_to: Option<(u32, u32)>,
    convert_to: Option<&str>,
    decoders: Arc<Mutex<Vec<String>>>,
) -> Result<(gst::Element, gst::Pad)> {
    let queue = make("queue")?;
    // Enough to decouple the decoders from the element without holding many frames.
    queue.set_property("max-size-buffers", 8u32);
    queue.set_property("max-size-bytes", 0u32);
    queue.set_property("max-size-time", 0u64);
    let mut chain: Vec<gst::Element> = Vec::new();
    // A raw input's source, linked statically to the chain (it has an always pad).
    let mut raw_source = None;
    let decoded = match decoding {
        Decoding::Nvdec(factory) => {
            let src = make("urisourcebin")?;
            src.set_property("uri", &input.uri);
            let parse = make("parsebin")?;
            let dec = make(factory)?;
            chain.push(dec.clone());
            if scale_to.is_some() {
                chain.push(make("cudascale")?);
            }
            if convert_to.is_some() {
                chain.push(make("cudaconvert")?);
            }
            if scale_to.is_some() || convert_to.is_some() {
                chain.push(reshape_filter(scale_to, convert_to, true)?);
            }
            pipeline.add_many([&src, &parse])?;
            let parse_sink = parse
                .static_pad("sink")
                .context("parsebin has no sink pad")?;
            src.connect_pad_added(move |_, pad| {
                link_once(pad, &parse_sink);
            });
            let dec_sink = dec.static_pad("sink").context("decoder has no sink pad")?;
            parse.connect_pad_added(move |_, pad| {
                if is_video_pad(pad) {
                    link_once(pad, &dec_sink);
                }
            });
            decoders
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(factory.clone());
            dec.static_pad("src").context("decoder has no src pad")?
        }
        Decoding::Software if input.raw.is_some() => {
            let raw = input.raw.as_ref().expect("matched");
            let src = raw.source()?;
            pipeline.add(&src)?;
            chain.push(make("videoconvert")?);
            raw_source = Some(src);
            if scale_to.is_some() {
                let scale = make("videoscale")?;
                scale.set_property_from_str("method", SCALE_METHOD);
                chain.push(scale);
            }
            if scale_to.is_some() || convert_to.is_some() {
                chain.push(reshape_filter(scale_to, convert_to, false)?);
            }
            decoders
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push("rawvideoparse".into());
            raw_source
                .as_ref()
                .expect("set above")
                .static_pad("src")
                .context("the raw source has no src pad")?
        }
        Decoding::Software => {
            let src = make("uridecodebin")?;
            src.set_property("uri", &input.uri);
            let convert = make("videoconvert")?;
            chain.push(convert.clone());
            if scale_to.is_some() {
                let scale = make("videoscale")?;
                scale.set_property_from_str("method", SCALE_METHOD);
                chain.push(scale);
            }
            if scale_to.is_some() || convert_to.is_some() {
                chain.push(reshape_filter(scale_to, convert_to, false)?);
            }
            pipeline.add(&src)?;
            let convert_sink = convert
                .static_pad("sink")
                .context("videoconvert has no sink pad")?;
            let decoded = convert_sink.clone();
            src.connect_pad_added(move |_, pad| {
                if is_video_pad(pad) {
                    link_once(pad, &convert_sink);
                }
            });
            if let Some(bin) = src.downcast_ref::<gst::Bin>() {
                bin.connect_deep_element_added(move |_, _, element| {
                    let Some(factory) = element.factory() else {
                        return;
                    };
                    if factory.klass().contains("Codec/Decoder") {
                        decoders
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(factory.name().to_string());
                    }
                });
            }
            decoded
        }
    };
    chain.push(queue.clone());
    pipeline.add_many(&chain)?;
    gst::Element::link_many(&chain)?;
    if let Some(src) = raw_source {
        src.link(&chain[0])?;
    }
    Ok((queue, decoded))
}

/// A gpumetrics element set up from `config`, added to `pipeline` with a fakesink after it.
fn measuring_element(pipeline: &gst::Pipeline, config: &PipelineConfig) -> Result<gst::Element> {
    let element = make("gpumetrics")?;
    if let Some(channel) = &config.monitoring.channel {
        // Named after its channel before it has a parent (a name is fixed then): its
        // Prometheus series' `element` label, unique on the service's endpoint.
        element.set_property("name", channel);
    }
    element
        .set_property_from_str_checked("metrics", &config.metrics)
        .map_err(|e| anyhow!("metrics `{}`: {e}", config.metrics))?;
    element.set_property_from_str("backend", config.backend);
    element.set_property(
        "device-id",
        i32::try_from(config.device)
            .map_err(|_| anyhow!("--device {}: not a CUDA device index", config.device))?,
    );
    element.set_property("post-messages", true);
    element.set_property_from_str("pairing", config.pairing);
    crate::options::set_on(&element, &config.options)?;
    if let Some(map) = config.map {
        element.set_property_from_str("map", map);
    }
    config.monitoring.set_on(&element);
    if let Some(path) = &config.map_video {
        // The map frames as a heat-map video: RGBA to I420, H.264 at quantiser 10.
        element.set_property_from_str("map-style", "heat");
        let chain = [
            make("videoconvert")?,
            gst::ElementFactory::make("x264enc")
                .property_from_str("pass", "quant")
                .property("quantizer", 10u32)
                .property_from_str("speed-preset", "veryfast")
                .build()
                .map_err(|_| anyhow!("--map-video needs x264enc (gstreamer1.0-plugins-ugly)"))?,
            make("matroskamux")?,
            gst::ElementFactory::make("filesink")
                .property("location", path.to_string_lossy().as_ref())
                .property("async", false)
                .build()?,
        ];
        pipeline.add(&element)?;
        pipeline.add_many(&chain)?;
        element.link(&chain[0])?;
        gst::Element::link_many(&chain)?;
        return Ok(element);
    }
    let sink = gst::ElementFactory::make("fakesink")
        .property("sync", false)
        .property("async", false)
        .build()?;
    pipeline.add_many([&element, &sink])?;
    element.link(&sink)?;
    Ok(element)
}

/// Builds the pipeline (state NULL) for the inputs (reference, distorted); without a
/// reference, ref_sink is left unlinked.
pub fn build(
    config: &PipelineConfig,
    inputs: [Option<&Input>; 2],
    stop: Arc<AtomicBool>,
) -> Result<Built> {
    let pipeline = gst::Pipeline::with_name("gpumetrics-cli");
    let element = measuring_element(&pipeline, config)?;

    let decoders = [
        Arc::new(Mutex::new(Vec::new())),
        Arc::new(Mutex::new(Vec::new())),
    ];
    let caps = [Arc::new(Mutex::new(None)), Arc::new(Mutex::new(None))];
    let decoded = [Arc::new(Mutex::new(None)), Arc::new(Mutex::new(None))];
    let mut gates = [None, None];
    for (i, pad_name) in ["ref_sink", "dist_sink"].into_iter().enumerate() {
        let Some(input) = inputs[i] else {
            continue;
        };
        let (scale, convert) = if i == 1 {
            (config.scale_to, config.convert_to.as_deref())
        } else {
            (None, None)
        };
        let (queue, decoded_pad) = branch(
            &pipeline,
            input,
            &config.decoding[i],
            scale,
            convert,
            decoders[i].clone(),
        )?;
        keep_caps(&decoded_pad, decoded[i].clone());
        // After the queue, so that Ctrl-C also ends the frames waiting in it.
        let qsrc = queue.static_pad("src").context("queue has no src pad")?;
        gates[i] = Some(Gate::install(&qsrc, config.gates[i], stop.clone()));
        keep_caps(&qsrc, caps[i].clone());
        let sinkpad = element
            .static_pad(pad_name)
            .with_context(|| format!("the gpumetrics element has no {pad_name} pad"))?;
        qsrc.link(&sinkpad)
            .map_err(|e| anyhow!("cannot link the {} input: {e:?}", input.role))?;
    }
    if gates[1].is_none() {
        bail!("internal error: no distorted input");
    }
    Ok(Built {
        pipeline,
        element,
        gates,
        decoders,
        caps,
        decoded,
    })
}

/// One distorted input of a run against several ([`build_several`]): its own decoding,
/// scaling, conversion and gate settings (the reference's gate has the same offset, every
/// and limit for each).
#[derive(Debug, Clone)]
pub struct Distorted<'a> {
    pub input: &'a Input,
    /// The CUDA device of its element (several files spread over the GPUs).
    pub device: u32,
    pub decoding: Decoding,
    pub scale_to: Option<(u32, u32)>,
    pub convert_to: Option<String>,
}

/// The pipeline of a run ([`build_run`]), and what the run reads of it: one element per
/// distorted input, each with its pair's gates and caps.
pub struct BuiltRun {
    pub pipeline: gst::Pipeline,
    /// One per distorted input, in the order given.
    pub elements: Vec<gst::Element>,
    /// Per distorted input: the gates of its pair (the reference's branch to its element,
    /// the distorted input), as in [`Built::gates`].
    pub gates: Vec<[Option<Gate>; 2]>,
    /// Decoder elements plugged: the reference's, then each distorted input's.
    pub decoders: Vec<Plugged>,
    /// Per distorted input: the caps that reached its element (reference, distorted), and
    /// the caps decoded (before any conversion).
    pub caps: Vec<[Arc<Mutex<Option<gst::Caps>>>; 2]>,
    pub decoded: Vec<[Arc<Mutex<Option<gst::Caps>>>; 2]>,
    /// Every decoder element added anywhere in the pipeline (the graph's own count: the
    /// reference is decoded once, so this is one per input); counted for several only.
    pub all_decoders: Arc<Mutex<Vec<String>>>,
}

/// Builds the pipeline (state NULL) of one reference against several distorted inputs:
///
/// ```text
/// reference decoder ! queue ! tee name=t
///   t. ! queue ! m1.ref_sink   DIST1 decoder ! queue ! m1.dist_sink   gpumetrics name=m1 ! fakesink
///   t. ! queue ! m2.ref_sink   DIST2 decoder ! queue ! m2.dist_sink   gpumetrics name=m2 ! fakesink
/// ```
///
/// The reference is decoded once; each element gets its frames from the tee (buffers are
/// shared, not copied) and its own gates, so that a pair that ends early (`--frames`, a
/// shorter file) ends its branch only.
pub fn build_several(
    config: &PipelineConfig,
    reference: (&Input, &Decoding),
    distorted: &[Distorted],
    stop: Arc<AtomicBool>,
) -> Result<BuiltRun> {
    let pipeline = gst::Pipeline::with_name("gpumetrics-cli");
    let all_decoders = Arc::new(Mutex::new(Vec::new()));
    {
        let all = all_decoders.clone();
        pipeline.connect_deep_element_added(move |_, _, element| {
            // The class first: a statically registered element (gpumetrics) has no factory
            // to ask.
            let klass = element.element_class().metadata("klass").unwrap_or("");
            if klass.contains("Codec/Decoder")
                && let Some(f) = element.factory()
            {
                all.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(f.name().to_string());
            }
        });
    }
    let ref_decoders = Arc::new(Mutex::new(Vec::new()));
    let ref_decoded = Arc::new(Mutex::new(None));
    let (ref_queue, ref_pad) = branch(
        &pipeline,
        reference.0,
        reference.1,
        None,
        None,
        ref_decoders.clone(),
    )?;
    keep_caps(&ref_pad, ref_decoded.clone());
    let tee = make("tee")?;
    pipeline.add(&tee)?;
    ref_queue.link(&tee)?;

    let mut out = BuiltRun {
        pipeline: pipeline.clone(),
        elements: Vec::new(),
        gates: Vec::new(),
        decoders: vec![ref_decoders],
        caps: Vec::new(),
        decoded: Vec::new(),
        all_decoders,
    };
    // NVDEC decodes the reference on the first element's device (its context query reaches
    // that element first through the tee); an element on another device gets the
    // reference's frames through system memory (cudadownload, then its own upload).
    let ref_on_device = matches!(reference.1, Decoding::Nvdec(_));
    let first_device = distorted.first().map_or(config.device, |d| d.device);
    for d in distorted {
        let element = measuring_element(
            &pipeline,
            &PipelineConfig {
                device: d.device,
                ..config.clone()
            },
        )?;
        // The reference's frames for this element, with their own gate.
        let queue = make("queue")?;
        queue.set_property("max-size-buffers", 8u32);
        queue.set_property("max-size-bytes", 0u32);
        queue.set_property("max-size-time", 0u64);
        pipeline.add(&queue)?;
        tee.link(&queue)?;
        let ref_src = queue.static_pad("src").context("queue has no src pad")?;
        let ref_gate = Gate::install(&ref_src, config.gates[0], stop.clone());
        let ref_caps = Arc::new(Mutex::new(None));
        keep_caps(&ref_src, ref_caps.clone());
        let ref_src = if ref_on_device && d.device != first_device {
            let download = make("cudadownload")?;
            pipeline.add(&download)?;
            ref_src
                .link(
                    &download
                        .static_pad("sink")
                        .context("no cudadownload sink")?,
                )
                .map_err(|e| anyhow!("cannot link cudadownload: {e:?}"))?;
            download.static_pad("src").context("no cudadownload src")?
        } else {
            ref_src
        };
        ref_src
            .link(&element.static_pad("ref_sink").context("no ref_sink pad")?)
            .map_err(|e| anyhow!("cannot link the reference input: {e:?}"))?;

        let decoders = Arc::new(Mutex::new(Vec::new()));
        let (dist_queue, dist_pad) = branch(
            &pipeline,
            d.input,
            &d.decoding,
            d.scale_to,
            d.convert_to.as_deref(),
            decoders.clone(),
        )?;
        let dist_decoded = Arc::new(Mutex::new(None));
        keep_caps(&dist_pad, dist_decoded.clone());
        let dist_src = dist_queue
            .static_pad("src")
            .context("queue has no src pad")?;
        let dist_gate = Gate::install(&dist_src, config.gates[1], stop.clone());
        let dist_caps = Arc::new(Mutex::new(None));
        keep_caps(&dist_src, dist_caps.clone());
        dist_src
            .link(
                &element
                    .static_pad("dist_sink")
                    .context("no dist_sink pad")?,
            )
            .map_err(|e| anyhow!("cannot link the distorted input {}: {e:?}", d.input.given))?;

        out.elements.push(element);
        out.gates.push([Some(ref_gate), Some(dist_gate)]);
        out.decoders.push(decoders);
        out.caps.push([ref_caps, dist_caps]);
        out.decoded.push([ref_decoded.clone(), dist_decoded]);
    }
    Ok(out)
}

/// Builds the pipeline (state NULL) of a run: one distorted input gets the graph of a pair
/// ([`build`]: no tee, and no reference at all when it is measured alone), several get one
/// element each behind a tee ([`build_several`]). Either way the run reads it as several:
/// one element, gates, caps per distorted input. `config`'s own `decoding`, `scale_to` and
/// `convert_to` are the ones of `reference` and `distorted`.
pub fn build_run(
    config: &PipelineConfig,
    reference: Option<(&Input, &Decoding)>,
    distorted: &[Distorted],
    stop: Arc<AtomicBool>,
) -> Result<BuiltRun> {
    let [one] = distorted else {
        let reference = reference.context("internal error: several inputs without reference")?;
        return build_several(config, reference, distorted, stop);
    };
    let config = PipelineConfig {
        decoding: [
            reference.map_or(Decoding::Software, |(_, d)| d.clone()),
            one.decoding.clone(),
        ],
        scale_to: one.scale_to,
        convert_to: one.convert_to.clone(),
        ..config.clone()
    };
    let built = build(&config, [reference.map(|(r, _)| r), Some(one.input)], stop)?;
    Ok(BuiltRun {
        pipeline: built.pipeline,
        elements: vec![built.element],
        gates: vec![built.gates],
        decoders: built.decoders.into(),
        caps: vec![built.caps],
        decoded: vec![built.decoded],
        all_decoders: Default::default(),
    })
}

trait SetFromStrChecked {
    fn set_property_from_str_checked(&self, name: &str, value: &str) -> Result<()>;
}

impl SetFromStrChecked for gst::Element {
    /// `set_property_from_str` panics on a bad value; this parses first.
    fn set_property_from_str_checked(&self, name: &str, value: &str) -> Result<()> {
        let pspec = self
            .find_property(name)
            .with_context(|| format!("no property {name}"))?;
        let v = gst::glib::Value::deserialize_with_pspec(value, &pspec).map_err(|e| {
            anyhow!(
                "invalid value `{}` for {name}: {e}",
                gstgpumetrics::quote::quoted(value)
            )
        })?;
        self.set_property_from_value(name, &v);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `pipeline` (already PLAYING) to EOS, handing every other message to `each`;
    /// fails with the error's text on an error message and on `limit` without EOS, instead
    /// of waiting forever.
    fn wait_for_eos(
        pipeline: &gst::Pipeline,
        limit: std::time::Duration,
        mut each: impl FnMut(&gst::Message),
    ) {
        let bus = pipeline.bus().unwrap();
        let deadline = std::time::Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let Some(msg) = bus.timed_pop(gst::ClockTime::from_nseconds(left.as_nanos() as u64))
            else {
                let _ = pipeline.set_state(gst::State::Null);
                panic!("{}: no EOS within {limit:?}", pipeline.name());
            };
            match msg.view() {
                gst::MessageView::Eos(_) => return,
                gst::MessageView::Error(e) => {
                    let _ = pipeline.set_state(gst::State::Null);
                    panic!(
                        "{}: {} ({:?})",
                        pipeline.name(),
                        e.error(),
                        e.debug().unwrap_or_default()
                    );
                }
                _ => each(&msg),
            }
        }
    }

    /// A pipeline that errors instead of ending: the wait fails with the error (waiting for
    /// EOS alone, as this module's test once did, never returns).
    #[test]
    #[should_panic(expected = "Resource not found")]
    fn wait_for_eos_fails_on_an_error_message() {
        gst::init().unwrap();
        let p = gst::parse::launch("filesrc location=/nonexistent/clip.mp4 ! fakesink")
            .unwrap()
            .downcast::<gst::Pipeline>()
            .unwrap();
        // The state change fails; its error is on the bus.
        let _ = p.set_state(gst::State::Playing);
        wait_for_eos(&p, std::time::Duration::from_secs(30), |_| {});
    }

    #[test]
    #[should_panic(expected = "no EOS within")]
    fn wait_for_eos_fails_on_a_timeout() {
        gst::init().unwrap();
        // A live source without num-buffers never ends.
        let p = gst::parse::launch("videotestsrc is-live=true ! fakesink")
            .unwrap()
            .downcast::<gst::Pipeline>()
            .unwrap();
        p.set_state(gst::State::Playing).unwrap();
        wait_for_eos(&p, std::time::Duration::from_millis(500), |_| {});
    }

    /// PSNR on the CPU, every pair, both inputs decoded by `decoding`.
    fn psnr_config(decoding: Decoding) -> PipelineConfig {
        PipelineConfig {
            metrics: "psnr".into(),
            backend: "cpu",
            device: 0,
            pairing: "timestamp",
            options: Vec::new(),
            map: None,
            map_video: None,
            scale_to: None,
            convert_to: None,
            decoding: [decoding.clone(), decoding],
            gates: [GateConfig {
                every: 1,
                ..Default::default()
            }; 2],
            monitoring: Default::default(),
        }
    }

    #[test]
    fn monitoring_options_are_the_elements_properties() {
        gst::init().unwrap();
        gstgpumetrics::plugin_register_static().unwrap();
        // Built, never started: the input need not exist.
        let input = Input {
            role: "reference",
            given: "clip.mp4".into(),
            uri: "file:///nonexistent/clip.mp4".into(),
            width: 64,
            height: 48,
            framerate: None,
            duration: None,
            caps: None,
            live: false,
            raw: None,
        };
        let stop = Arc::new(AtomicBool::new(false));
        let built = build(
            &psnr_config(Decoding::Software),
            [Some(&input), Some(&input)],
            stop.clone(),
        )
        .unwrap();
        let e = &built.element;
        // Unset options leave the element's defaults.
        assert_eq!(e.property::<u64>("window"), 0);
        assert_eq!(e.property::<Option<String>>("alerts"), None);
        assert_eq!(e.property::<u32>("subsample"), 1);
        assert_eq!(e.property::<Option<String>>("roi"), None);
        assert_eq!(e.property::<Option<String>>("prometheus-address"), None);
        let config = PipelineConfig {
            monitoring: crate::monitor::Monitoring {
                window: Some(500_000_000),
                alerts: Some("psnr-y<30:1s,mse-y>50".into()),
                subsample: Some(4),
                roi: Some(crate::monitor::Roi::parse("8,4,32,16").unwrap()),
                prometheus: Some("127.0.0.1:9464".into()),
                channel: Some("news".into()),
                stats_file: None,
                post_messages: None,
                align: Some(Some(2_000_000_000)),
            },
            ..psnr_config(Decoding::Software)
        };
        let built = build(&config, [Some(&input), Some(&input)], stop).unwrap();
        let e = &built.element;
        assert_eq!(e.property::<u64>("window"), 500_000_000);
        assert_eq!(
            e.property::<Option<String>>("alerts").as_deref(),
            Some("psnr-y<30:1s,mse-y>50")
        );
        assert_eq!(e.property::<u32>("subsample"), 4);
        assert_eq!(
            e.property::<Option<String>>("roi").as_deref(),
            Some("8,4,32,16")
        );
        assert_eq!(
            e.property::<Option<String>>("prometheus-address")
                .as_deref(),
            Some("127.0.0.1:9464")
        );
        assert_eq!(
            e.property::<gstgpumetrics::Align>("align"),
            gstgpumetrics::Align::Auto
        );
        assert_eq!(e.property::<u64>("align-range"), 2_000_000_000);
        // A channel of `gpumetrics monitor`: the element named after it.
        assert_eq!(e.name(), "news");
        assert_eq!(
            e.property::<Option<String>>("channel").as_deref(),
            Some("news")
        );
    }

    /// A run of one distorted input has the graph of a pair (no tee; no reference branch
    /// when it is measured alone), a run of several the tee that decodes the reference
    /// once; both are read as one element, gates and caps per distorted input.
    #[test]
    fn a_run_has_a_tee_only_with_several_distorted_inputs() {
        gst::init().unwrap();
        gstgpumetrics::plugin_register_static().unwrap();
        // Built, never started: the inputs need not exist.
        let input = |role, given: &str| Input {
            role,
            given: given.into(),
            uri: format!("file:///nonexistent/{given}"),
            width: 64,
            height: 48,
            framerate: None,
            duration: None,
            caps: None,
            live: false,
            raw: None,
        };
        let reference = input("reference", "ref.mp4");
        let (a, b) = (input("distorted", "a.mp4"), input("distorted", "b.mp4"));
        let distorted = |input| Distorted {
            input,
            device: 0,
            decoding: Decoding::Software,
            scale_to: None,
            convert_to: None,
        };
        let config = psnr_config(Decoding::Software);
        // By type: the statically registered gpumetrics element has no factory to ask.
        let has_tee = |built: &BuiltRun| {
            built
                .pipeline
                .iterate_elements()
                .into_iter()
                .any(|e| e.is_ok_and(|e| e.type_().name() == "GstTee"))
        };
        let stop = Arc::new(AtomicBool::new(false));
        let reference = Some((&reference, &Decoding::Software));

        let one = build_run(&config, reference, &[distorted(&a)], stop.clone()).unwrap();
        assert_eq!(one.elements.len(), 1);
        assert!(one.gates[0].iter().all(Option::is_some));
        assert_eq!((one.decoders.len(), one.caps.len()), (2, 1));
        assert!(!has_tee(&one));

        let alone = build_run(&config, None, &[distorted(&a)], stop.clone()).unwrap();
        assert!(alone.gates[0][0].is_none() && alone.gates[0][1].is_some());
        let element = &alone.elements[0];
        assert!(!element.static_pad("ref_sink").unwrap().is_linked());

        // Several files spread over the GPUs: each element on its file's device (software
        // decoding: no cudadownload, each element uploads the reference itself).
        let on_1 = Distorted {
            device: 1,
            ..distorted(&b)
        };
        let two = build_run(&config, reference, &[distorted(&a), on_1], stop).unwrap();
        assert_eq!(two.elements.len(), 2);
        let ids: Vec<i32> = two
            .elements
            .iter()
            .map(|e| e.property("device-id"))
            .collect();
        assert_eq!(ids, [0, 1]);
        assert_eq!((two.decoders.len(), two.gates.len()), (3, 2));
        assert!(has_tee(&two));
        assert!(
            build_run(
                &config,
                None,
                &[distorted(&a), distorted(&b)],
                Default::default()
            )
            .is_err()
        );
    }

    /// The NVDEC branch (`urisourcebin ! parsebin ! <decoder>`) with a software decoder in
    /// the decoder's place, so that its linking and the gates run without a GPU.
    #[test]
    fn parsebin_branch_runs() {
        gst::init().unwrap();
        gstgpumetrics::plugin_register_static().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let clip = dir.path().join("clip.mp4");
        let launch = format!(
            "videotestsrc num-buffers=12 ! video/x-raw,width=64,height=48,framerate=25/1 ! \
             x264enc ! h264parse ! mp4mux ! filesink location={}",
            clip.display()
        );
        let p = gst::parse::launch(&launch)
            .unwrap()
            .downcast::<gst::Pipeline>()
            .unwrap();
        p.set_state(gst::State::Playing).unwrap();
        wait_for_eos(&p, std::time::Duration::from_secs(30), |_| {});
        p.set_state(gst::State::Null).unwrap();

        let input =
            crate::input::discover(clip.to_str().unwrap(), "reference", &Default::default())
                .unwrap();
        assert_eq!(input.codec().as_deref(), Some("video/x-h264"));
        let config = PipelineConfig {
            gates: [GateConfig {
                skip: 0,
                every: 2,
                limit: None,
                index_duration: None,
            }; 2],
            ..psnr_config(Decoding::Nvdec("avdec_h264".into()))
        };
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let built = build(&config, [Some(&input), Some(&input)], stop).unwrap();
        built.pipeline.set_state(gst::State::Playing).unwrap();
        let mut summary = None;
        wait_for_eos(&built.pipeline, std::time::Duration::from_secs(30), |msg| {
            if let Some(s) = gstgpumetrics::message::Summary::from_message(msg) {
                summary = Some(s);
            }
        });
        built.pipeline.set_state(gst::State::Null).unwrap();
        let summary = summary.expect("summary posted before EOS");
        assert_eq!(summary.frames, 6, "{summary:?}");
        assert_eq!(built.gates[0].as_ref().unwrap().skipped(), 6);
        assert!(summary.field("psnr-y").unwrap().mean.is_infinite());
    }
}
