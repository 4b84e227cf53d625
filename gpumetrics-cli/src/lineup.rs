// SPDX-License-Identifier: MPL-2.0
//! The inputs of a run lined up: the reference (none when DIST is measured alone) and one
//! or several distorted files against it, opened and checked against each other before
//! anything is decoded (the region fits, sizes match or `--scale` is given, live inputs
//! can be run), so that a mismatch is said at once and not after a long decode.

use anyhow::anyhow;

use crate::cli::{Args, PairingArg};
use crate::exit::{Failure, usage};
use crate::input::{self, Input};
use crate::notes::Notes;
use crate::{pipeline, several};

/// The inputs of a run.
pub struct Lineup {
    pub reference: Option<Input>,
    /// One, or several against the reference, in the order given.
    pub distorted: Vec<Input>,
    /// Per distorted input: the size it is scaled to (`--scale`); none at the reference's.
    pub scale_to: Vec<Option<(u32, u32)>>,
    /// An input is live (one pair only: several files are refused live).
    pub live: bool,
}

impl Lineup {
    /// Several distorted files: the table has a column per file and the notes and records
    /// name each file; with one, they say `distorted` as they always have.
    pub fn several(&self) -> bool {
        self.distorted.len() > 1
    }

    /// The input whose size the measured frames have: the reference, or the input
    /// measured alone.
    pub fn sized(&self) -> &Input {
        self.reference.as_ref().unwrap_or(&self.distorted[0])
    }

    /// The distorted inputs as given.
    pub fn given(&self) -> Vec<&str> {
        self.distorted.iter().map(|d| d.given.as_str()).collect()
    }

    /// The name of the `i`-th distorted input in the notes: `distorted` with one, the file
    /// as given with several.
    pub fn label(&self, i: usize) -> &str {
        if self.several() {
            &self.distorted[i].given
        } else {
            "distorted"
        }
    }
}

/// Opens the inputs of `args`, says what they are and checks them against each other.
pub fn open(args: &Args, notes: &Notes) -> Result<Lineup, Failure> {
    let several = !args.more_distorted.is_empty();
    let say = |i: &Input| notes.say(format!("{}: {} ({})", i.role, i.given, i.describe()));
    let reference = match &args.reference {
        Some(r) => Some(input::discover(r, "reference", &args.raw)?),
        None if several => return Err(anyhow!("no reference").into()),
        None => None,
    };
    // Several files are said as each is opened; one pair once both are.
    if several && let Some(r) = &reference {
        say(r);
    }
    let mut distorted = Vec::new();
    for d in std::iter::once(&args.distorted).chain(&args.more_distorted) {
        let input = input::discover(d, "distorted", &args.raw)?;
        if several {
            say(&input);
        }
        distorted.push(input);
    }
    if !several {
        match &reference {
            Some(r) => say(r),
            None => notes.say("reference: none (one input: measured alone, no-reference metrics)"),
        }
        say(&distorted[0]);
    }
    if several {
        several::refuse_live(reference.iter().chain(&distorted))?;
    }
    let mut lineup = Lineup {
        reference,
        distorted,
        scale_to: Vec::new(),
        live: false,
    };
    if let Some(roi) = &args.roi {
        let sized = lineup.sized();
        let what = if args.single() {
            "the input's"
        } else {
            "the reference's"
        };
        roi.check_within(sized.width, sized.height, what)
            .map_err(|e| usage(anyhow!("--roi: {e}")))?;
    }
    lineup.live = live(args, &lineup, notes)?;
    lineup.scale_to = scaling(args, &lineup, notes)?;
    if let Some(r) = &lineup.reference
        && args.pairing == PairingArg::Timestamp
        && lineup.distorted.iter().any(|d| d.framerate != r.framerate)
    {
        notes.say(
            "frame rates differ: frames are paired by timestamp; frames without a partner \
             are counted as unmatched",
        );
    }
    Ok(lineup)
}

/// Whether an input is live, said; `--align auto` then runs in the element as the streams
/// flow (a live input cannot be decoded twice).
fn live(args: &Args, lineup: &Lineup, notes: &Notes) -> Result<bool, Failure> {
    let live: Vec<&str> = lineup
        .reference
        .iter()
        .chain(&lineup.distorted)
        .filter(|i| i.live)
        .map(|i| i.role)
        .collect();
    if live.is_empty() {
        return Ok(false);
    }
    if args.align.is_some() {
        notes.say(
            "live: --align auto finds the offset by content as the streams flow and follows \
             it; frames before the lock are counted, not measured",
        );
    }
    notes.say(format!(
        "live: the {} input{} live; running until Ctrl-C or the end of the stream",
        live.join(" and "),
        if live.len() == 1 { " is" } else { "s are" }
    ));
    Ok(true)
}

/// The size each distorted input is scaled to: none at the reference's; the reference's
/// with `--scale` (said), else an error.
fn scaling(
    args: &Args,
    lineup: &Lineup,
    notes: &Notes,
) -> Result<Vec<Option<(u32, u32)>>, Failure> {
    let sized = lineup.sized();
    let mut scale_to = Vec::new();
    for (i, d) in lineup.distorted.iter().enumerate() {
        let same = (d.width, d.height) == (sized.width, sized.height);
        scale_to.push(match (same, args.scale) {
            (true, _) => None,
            (false, true) => {
                notes.say(format!(
                    "scaling: {} {}x{} -> {}x{} (videoscale method={}, or cudascale on NVDEC)",
                    lineup.label(i),
                    d.width,
                    d.height,
                    sized.width,
                    sized.height,
                    pipeline::SCALE_METHOD
                ));
                Some((sized.width, sized.height))
            }
            (false, false) if lineup.several() => {
                return Err(anyhow!(
                    "{} differs in size from the reference ({}x{} against {}x{}): add \
                     --scale to scale the distorted videos to the reference size",
                    d.given,
                    d.width,
                    d.height,
                    sized.width,
                    sized.height
                )
                .into());
            }
            (false, false) => {
                return Err(anyhow!(
                    "the inputs differ in size (reference {}x{}, distorted {}x{}): add \
                     --scale to scale the distorted video to the reference size",
                    sized.width,
                    sized.height,
                    d.width,
                    d.height
                )
                .into());
            }
        });
    }
    Ok(scale_to)
}
