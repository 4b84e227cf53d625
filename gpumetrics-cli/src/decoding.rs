// SPDX-License-Identifier: MPL-2.0
//! How each input is decoded: NVDEC into CUDA memory where the element's CUDA backend reads
//! the frames in place, else software decoding; why a wanted NVDEC is not used is said
//! (`-v`), or is an error with `--decode nvdec`. After the run: which decoders were plugged,
//! and where negotiation measured an input at fewer bits than it was decoded with (a note,
//! since the scores include that rounding).

use anyhow::{Result, bail};

use crate::cli::{Args, DecodeArg};
use crate::input::Input;
use crate::lineup::Lineup;
use crate::notes::Notes;
use crate::pipeline::{self, BuiltRun, CapsCell, Decoding};
use gpumetrics_engine::BackendChoice;

/// The decoding of each input of a run.
pub struct Decodings {
    /// The reference's; none without a reference.
    pub reference: Option<Decoding>,
    /// Each distorted input's, in the order given.
    pub distorted: Vec<Decoding>,
}

impl Decodings {
    /// Picks the decoding of each input of `lineup`, with `cuda` whether the CUDA backend
    /// runs (`Err`: why not). The notes come for one pair in the order reference, distorted;
    /// for several files each distorted file's first, then the reference's.
    pub fn choose(
        args: &Args,
        lineup: &Lineup,
        cuda: &Result<(), String>,
        notes: &Notes,
    ) -> Result<Decodings> {
        let zero_copy = match (cuda, gstgpumetrics::gstcuda::api()) {
            (Ok(()), Ok(_)) => Ok(()),
            (Err(e), _) => Err(format!("the CUDA backend is not usable ({e})")),
            (_, Err(e)) => Err(format!("GStreamer's CUDA library is not usable ({e})")),
        };
        let one = |input: &Input, scaled: bool| choose_one(args, input, &zero_copy, scaled, notes);
        let of_reference = || lineup.reference.as_ref().map(|r| one(r, false)).transpose();
        let mut reference = if lineup.several() {
            None
        } else {
            of_reference()?
        };
        let distorted = lineup
            .distorted
            .iter()
            .zip(&lineup.scale_to)
            .map(|(d, scale)| one(d, scale.is_some()))
            .collect::<Result<_>>()?;
        if lineup.several() {
            reference = of_reference()?;
        }
        Ok(Decodings {
            reference,
            distorted,
        })
    }

    /// Every input's, the reference's first (the header's `decoding`).
    pub fn all(&self) -> impl Iterator<Item = &Decoding> {
        self.reference.iter().chain(&self.distorted)
    }

    /// Whether any input is decoded by NVDEC (then where the frames were read is said).
    pub fn any_nvdec(&self) -> bool {
        self.all().any(|d| matches!(d, Decoding::Nvdec(_)))
    }

    /// Says which decoders each input had, with several files (`-v`) how many the graph
    /// has, and the inputs measured at fewer bits than they were decoded with.
    pub fn say_used(&self, built: &BuiltRun, lineup: &Lineup, verbose: bool, notes: &Notes) {
        let say = |role: &str, d: &Decoding, i: usize| {
            let plugged = built.decoders[i]
                .lock()
                .map(|v| v.clone())
                .unwrap_or_default();
            notes.say(format!("decoding {role}: {}", describe(d, &plugged)));
        };
        if let Some(d) = &self.reference {
            say("reference", d, 0);
        }
        for (i, d) in self.distorted.iter().enumerate() {
            say(lineup.label(i), d, i + 1);
        }
        let given = lineup.given();
        if lineup.several() && verbose {
            let all = built
                .all_decoders
                .lock()
                .map(|v| v.clone())
                .unwrap_or_default();
            notes.say(format!(
                "pipeline: {} decoders ({}) for {} inputs (the reference and {} distorted files)",
                all.len(),
                all.join(", "),
                given.len() + 1,
                given.len()
            ));
        }
        for (i, (decoded, caps)) in built.decoded.iter().zip(&built.caps).enumerate() {
            for note in depth_notes(decoded, caps) {
                notes.say(if lineup.several() {
                    format!("{}: {note}", given[i])
                } else {
                    note
                });
            }
        }
    }
}

/// Picks the decoding of one input (`scaled`: a distorted input scaled to the reference's
/// size, which NVDEC needs cudascale for).
fn choose_one(
    args: &Args,
    input: &Input,
    zero_copy: &Result<(), String>,
    scaled: bool,
    notes: &Notes,
) -> Result<Decoding> {
    let want_nv = args.decode != DecodeArg::Software && args.backend != BackendChoice::Cpu;
    let factory = pipeline::nvdec_factory(input);
    let cudascale = !scaled || gst::ElementFactory::find("cudascale").is_some();
    let choice = match (zero_copy, factory) {
        (Ok(()), Some(f)) if want_nv && cudascale => Ok(Decoding::Nvdec(f)),
        (Ok(()), Some(_)) if want_nv => Err("cudascale (for --scale) is missing".to_string()),
        (Ok(()), None) => Err(format!(
            "GStreamer has no NVIDIA decoder for {}",
            input.codec().unwrap_or_else(|| "this codec".into())
        )),
        (Err(e), _) => Err(e.clone()),
        _ => Err("not requested".into()),
    };
    Ok(match choice {
        Ok(d) => d,
        Err(why) if args.decode == DecodeArg::Nvdec => {
            bail!(
                "--decode nvdec: cannot decode the {} input with NVDEC: {why}",
                input.role
            )
        }
        Err(why) => {
            if args.verbose && args.decode == DecodeArg::Auto {
                notes.say(format!("{}: software decoding because {why}", input.role));
            }
            Decoding::Software
        }
    })
}

/// The decoding as the notes say it (`software (avdec_h264)`).
fn describe(d: &Decoding, plugged: &[String]) -> String {
    match d {
        Decoding::Nvdec(f) => format!("NVDEC ({f}, CUDA memory, zero-copy)"),
        Decoding::Software if plugged.is_empty() => "software".to_string(),
        Decoding::Software => format!("software ({})", plugged.join(", ")),
    }
}

/// The name of a decoding in the header (`software`, or the NVIDIA decoder element).
pub fn header_name(d: &Decoding) -> String {
    match d {
        Decoding::Nvdec(f) => f.clone(),
        Decoding::Software => "software".into(),
    }
}

/// Bits per sample of a raw video format (`I420_10LE`: 10).
fn depth(format: &str) -> Option<u32> {
    let f = gst_video::VideoFormat::from_string(format);
    (f != gst_video::VideoFormat::Unknown)
        .then(|| {
            gst_video::VideoFormatInfo::from_format(f)
                .depth()
                .first()
                .copied()
        })
        .flatten()
}

/// A note for each input of a pair whose frames were measured at fewer bits than they were
/// decoded with: formats that differ in layout are converted to the reference's, so a
/// 10-bit 4:4:4 distorted video against an 8-bit 4:2:0 reference is measured as 8-bit
/// 4:2:0.
fn depth_notes(decoded: &[CapsCell; 2], caps: &[CapsCell; 2]) -> Vec<String> {
    let mut notes = Vec::new();
    for (i, role) in ["reference", "distorted"].iter().enumerate() {
        let (Some(decoded), Some(measured)) = (format(&decoded[i]), format(&caps[i])) else {
            continue;
        };
        if let (Some(from), Some(to)) = (depth(&decoded), depth(&measured))
            && to < from
        {
            notes.push(format!(
                "bit depth: the {role} video is {from}-bit ({decoded}) and was measured as \
                 {to}-bit ({measured}), the other input's format: its samples were rounded to \
                 {to} bits, and the scores include that rounding"
            ));
        }
    }
    notes
}

/// The raw format of the caps kept in `cell` (`I420`), once they are known.
pub fn format(cell: &CapsCell) -> Option<String> {
    cell.lock()
        .ok()
        .and_then(|c| c.as_ref().and_then(pipeline::caps_format))
}
