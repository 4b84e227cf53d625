// SPDX-License-Identifier: MPL-2.0
//! `--align auto`: finds the frame offset between the inputs.
//!
//! Each input's first frames are decoded once, as small 8-bit luma pictures of one common
//! size (software decoding, `videoscale`, `appsink`), and PSNR-Y is computed here for every
//! candidate offset on the same number of pairs. The best offset wins; its margin over the
//! second best says how sure the choice is (motion makes it large, a still picture small).
//! Decoding once and scoring in Rust is much faster than one element run per candidate.

use anyhow::{Context, Result, anyhow, bail};
use gst::prelude::*;
use gst_video::prelude::*;

use crate::cli::{AlignArg, Args};
use crate::input::Input;
use crate::lineup::Lineup;
use crate::notes::Notes;

/// The offset of the run (`--offset` convention): with `--align auto`, the one found
/// between the reference and the distorted input, said with how sure it is; else
/// `--offset`'s. `--align` is refused before this with one input, a live one, or several
/// distorted files (it finds the offset of one pair).
pub fn chosen_offset(args: &Args, lineup: &Lineup, notes: &Notes) -> Result<i64> {
    let (Some(AlignArg::Auto), Some(reference), false) =
        (args.align, &lineup.reference, lineup.live)
    else {
        // Live inputs are aligned by the element as they flow (`live_range`).
        return Ok(args.offset);
    };
    let a = find(
        reference,
        &lineup.distorted[0],
        args.align_frames,
        args.align_range,
    )?;
    let direction = match a.offset {
        0 => "the inputs are aligned".to_string(),
        n if n > 0 => format!("the distorted video starts {n} frames late"),
        n => format!("the distorted video starts {} frames early", -n),
    };
    let margin = a.margin.map_or("no other candidate".into(), |m| {
        format!("margin {m:.2} dB over the next best")
    });
    notes.say(format!(
        "align: offset {:+} ({direction}); PSNR-Y {:.2} dB, {margin} ({} offsets tried on {} pairs each)",
        a.offset, a.psnr, a.candidates, a.pairs
    ));
    if a.margin.is_some_and(|m| m < 0.5) {
        notes.say(
            "align: warning: the margin is small (little motion?): check the offset or give \
             it with --offset",
        );
    }
    Ok(a.offset)
}

/// Live inputs with `--align auto`: the element's `align-range` (ns): `--align-range`
/// frames of the reference when given, else `None` (the element's 5 s).
pub fn live_range(args: &Args, lineup: &Lineup) -> Option<u64> {
    if !args.align_range_given {
        return None;
    }
    let frame = lineup
        .reference
        .as_ref()
        .and_then(|r| r.framerate)
        .filter(|f| f.numer() > 0)
        .map_or(40_000_000, |f| {
            (1_000_000_000u128 * f.denom() as u128 / f.numer() as u128) as u64
        });
    Some((args.align_range as u64 * frame).max(100_000_000))
}

/// Width of the luma pictures compared (height keeps the reference's aspect ratio).
const ALIGN_WIDTH: u32 = 256;

/// The offset found, in the `--offset` convention: distorted frame `i + offset` shows
/// reference frame `i`.
#[derive(Debug, Clone, PartialEq)]
pub struct Alignment {
    pub offset: i64,
    /// PSNR-Y (dB) of the best offset, over `pairs` pairs.
    pub psnr: f64,
    /// Best PSNR-Y minus the second best (dB); `None` when only one offset could be tried.
    pub margin: Option<f64>,
    /// Pairs compared per candidate.
    pub pairs: usize,
    /// Candidates tried.
    pub candidates: usize,
}

/// Decodes up to `count` frames of `input` as `width`x`height` GRAY8.
fn decode_luma(input: &Input, width: u32, height: u32, count: usize) -> Result<Vec<Vec<u8>>> {
    let pipeline = gst::Pipeline::new();
    let make = |f: &str| {
        gst::ElementFactory::make(f)
            .build()
            .map_err(|_| anyhow!("the GStreamer element `{f}` is missing"))
    };
    let src = match &input.raw {
        Some(raw) => raw.source()?,
        None => {
            let src = make("uridecodebin")?;
            src.set_property("uri", &input.uri);
            src
        }
    };
    let convert = make("videoconvert")?;
    let scale = make("videoscale")?;
    let caps = gst::Caps::builder("video/x-raw")
        .field("format", "GRAY8")
        .field("width", width as i32)
        .field("height", height as i32)
        .field("pixel-aspect-ratio", gst::Fraction::new(1, 1))
        .build();
    let filter = gst::ElementFactory::make("capsfilter")
        .property("caps", caps)
        .build()?;
    let sink = gst_app::AppSink::builder()
        .sync(false)
        .max_buffers(4)
        .build();
    pipeline.add_many([&src, &convert, &scale, &filter, sink.upcast_ref()])?;
    gst::Element::link_many([&convert, &scale, &filter, sink.upcast_ref()])?;
    if input.raw.is_some() {
        src.link(&convert)?;
    }
    let convert_sink = convert
        .static_pad("sink")
        .context("videoconvert sink pad")?;
    src.connect_pad_added(move |_, pad| {
        let caps = pad.current_caps().unwrap_or_else(|| pad.query_caps(None));
        if caps
            .structure(0)
            .is_some_and(|s| s.name().starts_with("video/"))
            && !convert_sink.is_linked()
        {
            let _ = pad.link(&convert_sink);
        }
    });
    pipeline
        .set_state(gst::State::Playing)
        .map_err(|_| anyhow!("cannot start decoding {} for --align", input.given))?;
    let bus = pipeline.bus().context("pipeline without bus")?;
    let mut frames = Vec::with_capacity(count);
    let result = (|| {
        while frames.len() < count {
            if let Some(msg) = bus.pop_filtered(&[gst::MessageType::Error])
                && let gst::MessageView::Error(e) = msg.view()
            {
                bail!("decoding {} for --align: {}", input.given, e.error());
            }
            match sink.try_pull_sample(gst::ClockTime::from_seconds(30)) {
                Some(sample) => {
                    let buffer = sample.buffer().context("sample without buffer")?;
                    let info = sample
                        .caps()
                        .and_then(|c| gst_video::VideoInfo::from_caps(c).ok())
                        .context("sample without video caps")?;
                    let frame = gst_video::VideoFrameRef::from_buffer_ref_readable(buffer, &info)
                        .map_err(|_| anyhow!("cannot map a decoded frame"))?;
                    let stride = frame.plane_stride()[0] as usize;
                    let data = frame.plane_data(0)?;
                    let mut luma = Vec::with_capacity((width * height) as usize);
                    for row in 0..height as usize {
                        luma.extend_from_slice(&data[row * stride..row * stride + width as usize]);
                    }
                    frames.push(luma);
                }
                None if sink.is_eos() => break,
                None => bail!("decoding {} for --align timed out", input.given),
            }
        }
        Ok(())
    })();
    let _ = pipeline.set_state(gst::State::Null);
    result.map(|_| frames)
}

fn mse(a: &[u8], b: &[u8]) -> f64 {
    let sum: u64 = a
        .iter()
        .zip(b)
        .map(|(&x, &y)| {
            let d = x as i64 - y as i64;
            (d * d) as u64
        })
        .sum();
    sum as f64 / a.len().max(1) as f64
}

fn psnr(mse: f64) -> f64 {
    if mse <= 0.0 {
        f64::INFINITY
    } else {
        10.0 * (255.0 * 255.0 / mse).log10()
    }
}

/// Scores every offset in `-range..=range` on the same number of pairs and picks the best.
pub fn best_offset(
    reference: &[Vec<u8>],
    distorted: &[Vec<u8>],
    want: usize,
    range: i64,
) -> Result<Alignment> {
    let (nr, nd) = (reference.len() as i64, distorted.len() as i64);
    // The same pair count for every candidate, so that their PSNRs are comparable.
    let pairs = (want as i64)
        .min(nr.min(nd) - range)
        .max(nr.min(nd).min(want as i64) / 2);
    if pairs < 3 {
        bail!(
            "the inputs are too short for --align auto (decoded {nr} reference and {nd} \
             distorted frames); lower --align-range (now {range})"
        );
    }
    let mut scored: Vec<(i64, f64)> = Vec::new();
    for d in -range..=range {
        let (r0, d0) = ((-d).max(0), d.max(0));
        if r0 + pairs > nr || d0 + pairs > nd {
            continue;
        }
        let total: f64 = (0..pairs)
            .map(|i| mse(&reference[(r0 + i) as usize], &distorted[(d0 + i) as usize]))
            .sum();
        scored.push((d, total / pairs as f64));
    }
    // Lowest MSE first; ties go to the smaller |offset|.
    scored.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.abs().cmp(&b.0.abs())));
    let Some(&(offset, best)) = scored.first() else {
        bail!("no candidate offset fits the decoded frames; lower --align-range");
    };
    let margin = scored.get(1).map(|&(_, second)| {
        let (p1, p2) = (psnr(best), psnr(second));
        if p1.is_infinite() && p2.is_infinite() {
            0.0
        } else {
            p1 - p2
        }
    });
    Ok(Alignment {
        offset,
        psnr: psnr(best),
        margin,
        pairs: pairs as usize,
        candidates: scored.len(),
    })
}

/// Decodes the first frames of both inputs and finds the offset.
pub fn find(reference: &Input, distorted: &Input, frames: u32, range: u32) -> Result<Alignment> {
    let width = ALIGN_WIDTH.min(reference.width).max(16) & !1;
    let height = ((reference.height as u64 * width as u64 / reference.width.max(1) as u64) as u32)
        .max(8)
        & !1;
    let count = frames as usize + range as usize;
    let r = decode_luma(reference, width, height, count)?;
    let d = decode_luma(distorted, width, height, count)?;
    best_offset(&r, &d, frames as usize, range as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frames whose content moves: frame k is a ramp shifted by 7k.
    fn clip(n: usize, start: usize) -> Vec<Vec<u8>> {
        (start..start + n)
            .map(|k| (0..64 * 4).map(|x| ((x * 3 + k * 7) % 256) as u8).collect())
            .collect()
    }

    #[test]
    fn finds_offsets_both_ways() {
        let src = clip(60, 0);
        // Distorted starts 4 frames late: distorted[i + 4] == reference[i].
        let late = best_offset(&clip(56, 4), &src, 20, 10).unwrap();
        assert_eq!(late.offset, 4);
        assert!(late.margin.unwrap() > 1.0, "{late:?}");
        let early = best_offset(&src, &clip(56, 3), 20, 10).unwrap();
        assert_eq!(early.offset, -3);
        let none = best_offset(&src, &src, 20, 10).unwrap();
        assert_eq!(none.offset, 0);
        assert!(none.psnr.is_infinite());
    }

    #[test]
    fn too_short_is_an_error() {
        let e = best_offset(&clip(4, 0), &clip(4, 0), 20, 10).unwrap_err();
        assert!(e.to_string().contains("--align-range"), "{e}");
    }
}
