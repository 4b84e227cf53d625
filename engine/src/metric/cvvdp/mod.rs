//! ColorVideoVDP (`cvvdp`): Cambridge's perceptual video metric, colour-aware and calibrated
//! for SDR and HDR displays, in just-objectionable differences (JOD, 10 = no visible
//! difference), equal to ColorVideoVDP 0.5.7 (gfxdisp/ColorVideoVDP, MIT licence).
//!
//! A video metric, not a per-frame score averaged: each frame's differences go through
//! temporal channels over the frames before, and a span's JOD pools its frames' differences
//! ([`pool::span_jod`]). The field `cvvdp` of a pair is the JOD of every pair since the
//! start of the sequence (Vship's running score); a summary's and a window's `pooled` is the
//! JOD of their span ([`crate::scores::PoolTerms::Cvvdp`]), and an element with windows
//! gives each pair that of its window so far ([`crate::Pooler::span_jod_with`]): the
//! window's terms come from a second instance that starts a sequence at the window
//! ([`Shadowing`], [`crate::Engine::start_window`]), as the reference run on the window's
//! frames starts its temporal channels. The filters see every frame:
//! `subsample` drops scores, not frames ([`EVERY_FRAME`](super::EVERY_FRAME)).
//!
//! The steps, each checked against the reference (tests/data/cvvdp/values.json, made by
//! scripts/cvvdp-reference.sh): the reading of Y'CbCr frames ([`yuv`]), the display models
//! and their colour path ([`display`]), the temporal filters ([`temporal`]), the contrast
//! sensitivity ([`csf`]), the decimated Laplacian pyramid ([`pyramid`]), the masking of a
//! band ([`masking`]), the pooling to JOD ([`pool`]), and the whole on a stream of pairs
//! ([`model`]). [`cpu`] reads the engine's frames into it.
//!
//! The reference's data files used here are copied unchanged from its `vvdp_data/`, with
//! its licence (LICENSE-ColorVideoVDP in this folder).

mod cpu;
pub mod csf;
mod cuda;
pub mod display;
pub mod masking;
pub mod model;
pub mod pool;
pub mod pyramid;
pub mod temporal;
pub mod yuv;

use super::{Choice, Entry, Field, Info, OptionKind, OptionSpec, Options, Reference};
use crate::color::Transfer;
use crate::error::EngineError;
use crate::metric_set::MetricSet;
use crate::registry::Setup;

/// Its bit of the `metrics` flags (never changed once released).
pub const FLAG: MetricSet = MetricSet::bit(19);

/// Its one field.
pub(crate) const FIELD: &str = "cvvdp";

/// The frame rate the temporal filters assume when the input declares none (a variable
/// rate, 0/1 in the caps), with a note saying so.
pub const DEFAULT_FPS: f64 = 30.0;

/// The reference's display models (its `display_models.json`, in its order), and
/// `standard_hdr_dark`, the name issue 47 gives `standard_hdr_linear_dark`.
const DISPLAYS: &[Choice] = &[
    Choice {
        nick: "standard_4k",
        description: "30-inch 4K monitor, peak luminance 200 cd/m^2, viewed under office light levels (250 lux), seen from 2 x display height",
    },
    Choice {
        nick: "standard_hdr_pq",
        description: "30-inch 4K HDR monitor, peak luminance 1500 cd/m^2, viewed under low light levels (10 lux), seen from 2 x display height",
    },
    Choice {
        nick: "standard_hdr_hlg",
        description: "30-inch 4K HDR monitor, peak luminance 1500 cd/m^2, viewed under low light levels (10 lux), seen from 2 x display height",
    },
    Choice {
        nick: "standard_hdr_linear",
        description: "30-inch 4K HDR monitor, peak luminance 1500 cd/m^2, viewed under low light levels (10 lux), seen from 2 x display height",
    },
    Choice {
        nick: "standard_hdr_linear_dark",
        description: "30-inch 4K HDR monitor, peak luminance 1500 cd/m^2, viewed in a dark room (0 lux), seen from 2 x display height",
    },
    Choice {
        nick: "standard_hdr_linear_zoom",
        description: "30-inch 4K HDR monitor, peak luminance 4000 cd/m^2, viewed under low light levels (10 lux), seen from very close to spot super-resolution artifacts",
    },
    Choice {
        nick: "standard_fhd",
        description: "24-inch FullHD monitor, peak luminance 200 cd/m^2, viewed under office light levels (250 lux), seen from 2 x display height",
    },
    Choice {
        nick: "standard_hmd",
        description: "A head-mounted VR headset, 110 deg FOV, 1440x1600 per-eye resolution",
    },
    Choice {
        nick: "standard_phone",
        description: "A mobile phone display",
    },
    Choice {
        nick: "sdr_4k_30",
        description: "30-inch 4K SDR Monitor, viewed under office light levels (250 lux)",
    },
    Choice {
        nick: "sdr_fhd_24",
        description: "24-inch 4K SDR Monitor, viewed under office light levels (250 lux)",
    },
    Choice {
        nick: "htc_vive_pro",
        description: "HTC Vive Pro",
    },
    Choice {
        nick: "iphone_12_pro",
        description: "iPhone 12 Pro",
    },
    Choice {
        nick: "iphone_14_pro",
        description: "iPhone 14 Pro - Horizontal",
    },
    Choice {
        nick: "iphone_14_pro_vert",
        description: "iPhone 14 Pro - Vertical",
    },
    Choice {
        nick: "iphone_14_pro_hdr",
        description: "iPhone 15 Pro HDR - Horizontal",
    },
    Choice {
        nick: "iphone_14_pro_hdr_vert",
        description: "iPhone 14 Pro HDR - Vertical",
    },
    Choice {
        nick: "ipad_pro_12_9",
        description: "iPad Pro 12.9",
    },
    Choice {
        nick: "macbook_pro_16",
        description: "MacBook Pro 16",
    },
    Choice {
        nick: "lg_oled_2017_sdr",
        description: "LG OLED 2017 SDR",
    },
    Choice {
        nick: "lg_oled_2017_hdr",
        description: "LG OLED 2017 HDR",
    },
    Choice {
        nick: "eizo_CG3146",
        description: "EIZO Prominence CG3146 31\"",
    },
    Choice {
        nick: "65inch_hdr_pq_4knit",
        description: "65-inch 4K HDR OLED monitor, peak luminance 4000 cd/m^2, viewed under low light levels (5 lux), seen from 2 x display height",
    },
    Choice {
        nick: "65inch_hdr_pq_2Knit",
        description: "65-inch 4K HDR OLED monitor, peak luminance 2000 cd/m^2, viewed under low light levels (5 lux), seen from 2 x display height",
    },
    Choice {
        nick: "65inch_hdr_pq_1Knit",
        description: "65-inch 4K OLED HDR monitor, peak luminance 1000 cd/m^2, viewed under low light levels (5 lux), seen from 2 x display height",
    },
    Choice {
        nick: "lg_oled_2026_hdr_pq",
        description: "65-inch LG OLED G6 2026 HDR",
    },
    Choice {
        nick: "standard_hdr_dark",
        description: "The same as standard_hdr_linear_dark",
    },
];

/// The index of `standard_fhd` in [`DISPLAYS`], the default.
const DEFAULT_DISPLAY: usize = 6;

const DISPLAY: OptionSpec = OptionSpec {
    name: "cvvdp-display",
    nick: "ColorVideoVDP display model",
    doc: "ColorVideoVDP: the display the video is seen on, one of the reference's display \
          models (its display_models.json: peak and black level, EOTF, reflections, pixels \
          per degree); as the reference's --display",
    kind: OptionKind::Choice {
        type_name: "GstGpuMetricsCvvdpDisplay",
        values: DISPLAYS,
        default: DEFAULT_DISPLAY,
    },
};

pub(crate) const ENTRY: Entry = Entry {
    provides: &[Info {
        flag: FLAG,
        name: "cvvdp",
        title: "CVVDP (ColorVideoVDP)",
        description: "ColorVideoVDP 0.5.7 in JOD (10 = no visible difference): temporal \
                      channels, colour, the display model of cvvdp-display; per pair the \
                      JOD of the sequence so far",
        fields: &[Field::new(FIELD, "ColorVideoVDP (JOD)").unit("JOD")],
    }],
    options: &[DISPLAY],
    configure,
    notes: |s| {
        if !s.set.contains(FLAG) {
            return Vec::new();
        }
        notes(s)
    },
    check: |s| {
        if !s.set.contains(FLAG) {
            return Ok(());
        }
        let settings: &Settings = s.settings();
        model::Model::new(&settings.display, 2, 2, DEFAULT_FPS)
            .map(|_| ())
            .map_err(EngineError::Unsupported)
    },
    cpu: |s| {
        if !s.set.contains(FLAG) {
            return None;
        }
        let settings: &Settings = s.settings();
        cpu::CvvdpCpu::new(s.plan, &settings.display)
            .ok()
            .map(|m| Box::new(m) as Box<dyn super::CpuMetric>)
    },
    linear_light: None,
    events: None,
    reference: Reference::Full,
    cuda: |gpu, s| {
        if !s.set.contains(FLAG) {
            return Ok(None);
        }
        let settings: &Settings = s.settings();
        let Ok(model) = cpu::model(s.plan, &settings.display) else {
            return Ok(None);
        };
        let heat = s.plan.map == Some(crate::map::MapKind::Cvvdp);
        let main = cuda::CvvdpCuda::new(gpu, s.plan, model, heat, s.in_flight)?;
        Ok(Some(
            Box::new(cuda::Windowed::new(main, &settings.display)) as Box<dyn super::CudaMetric>
        ))
    },
};

/// The metric's settings: the display model's name (the reference's).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Settings {
    pub display: String,
}

fn configure(o: &Options) -> Result<super::Settings, EngineError> {
    let nick = DISPLAYS[o.choice(&DISPLAY)].nick;
    let display = match nick {
        "standard_hdr_dark" => "standard_hdr_linear_dark",
        n => n,
    };
    Ok(Box::new(Settings {
        display: display.to_string(),
    }))
}

/// A note when the input has no frame rate, and a warning when the input's transfer function is not the display model's EOTF (PQ
/// content on an SDR display model, say): the reference's warning, naming both.
fn notes(s: &Setup) -> Vec<String> {
    let settings: &Settings = s.settings();
    let mut out = Vec::new();
    if s.plan.frame_rate.is_none() {
        out.push(format!(
            "cvvdp: the input declares no frame rate; the temporal channels assume \
             {DEFAULT_FPS} fps (give the caps a framerate)"
        ));
    }
    let Ok(display) = display::Display::named(&settings.display) else {
        return out;
    };
    let transfer = s.plan.colorimetry[1].transfer;
    let content = match transfer {
        Transfer::Pq => "PQ (SMPTE ST 2084)",
        Transfer::Hlg => "HLG (ARIB STD-B67)",
        Transfer::Linear => "linear",
        _ => "SDR",
    };
    let eotf = match display.eotf {
        display::Eotf::Pq => "PQ (SMPTE ST 2084)",
        display::Eotf::Hlg => "HLG (ARIB STD-B67)",
        display::Eotf::Linear => "linear",
        _ => "SDR",
    };
    if content == eotf {
        return out;
    }
    out.push(format!(
        "cvvdp: the input's transfer function is {content} but the display model {} \
         decodes {eotf}: its JOD is that of the video shown on that display (set \
         cvvdp-display to a {content} model, e.g. {})",
        settings.display,
        match transfer {
            Transfer::Pq => "standard_hdr_pq",
            Transfer::Hlg => "standard_hdr_hlg",
            Transfer::Linear => "standard_hdr_linear",
            _ => "standard_fhd",
        }
    ));
    out
}

/// A window of the caller's restarts the temporal channels ([`crate::Engine::start_window`]):
/// a second instance of the metric (the shadow) runs from the window's first pair as a
/// sequence of its own, for as many pairs as the filters reach back (after that the two
/// instances' differences are the same frames' alike), and its terms become the pairs'
/// window terms ([`push_window`]). At least one pair: the window's first is an image when
/// the window has only it. Both backends keep this count.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Shadowing {
    /// A window starts at the next pair.
    pending: bool,
    /// Pairs the shadow still takes.
    left: usize,
}

impl Shadowing {
    /// The next pair starts a window.
    pub(crate) fn start(&mut self) {
        self.pending = true;
    }

    /// Forgets the window in progress (a sequence's end, a flush).
    pub(crate) fn clear(&mut self) {
        *self = Shadowing::default();
    }

    /// Whether the next pair goes to the shadow, and then whether the shadow restarts
    /// before it (`Some(true)`: the window's first pair). `fresh`: the main instance's
    /// next pair starts its sequence, whose terms are then the window's already; `taps`:
    /// the temporal filters' length.
    pub(crate) fn next(&mut self, fresh: bool, taps: usize) -> Option<bool> {
        if std::mem::take(&mut self.pending) {
            if fresh {
                self.left = 0;
                return None;
            }
            self.left = taps.saturating_sub(1).max(1) - 1;
            return Some(true);
        }
        if self.left > 0 {
            self.left -= 1;
            return Some(false);
        }
        None
    }
}

/// A pair's window terms from the shadow's step ([`Shadowing`]).
fn push_window(step: &model::Step, scores: &mut crate::scores::Scores) {
    scores.push_window_terms(FIELD, terms(step));
}

fn terms(step: &model::Step) -> crate::scores::PoolTerms {
    crate::scores::PoolTerms::Cvvdp {
        sum: step.term,
        frames: 1,
        image: step.image.map_or(f64::NAN, f64::from),
    }
}

/// A pair's field and its terms of the pooling over a span (both backends).
fn push(step: &model::Step, scores: &mut crate::scores::Scores) {
    scores.push(FIELD, step.jod as f64);
    scores.push_pool_terms(FIELD, terms(step));
}

#[cfg(test)]
mod tests {
    use super::Shadowing;

    /// The pairs the shadow takes after a window start: the filters' reach (taps − 1), at
    /// least one; none when the window starts the sequence; a new start restarts it.
    #[test]
    fn the_shadow_takes_the_filters_reach() {
        let takes = |s: &mut Shadowing, fresh: bool, taps: usize, pairs: usize| {
            (0..pairs)
                .map(|i| s.next(fresh && i == 0, taps))
                .collect::<Vec<_>>()
        };
        let mut s = Shadowing::default();
        assert_eq!(takes(&mut s, false, 9, 3), [None, None, None], "no window");
        s.start();
        let got = takes(&mut s, false, 9, 10);
        let mut want = vec![Some(true)];
        want.extend([Some(false); 7]);
        want.extend([None; 2]);
        assert_eq!(got, want, "9 taps: 8 pairs");
        s.start();
        assert_eq!(
            takes(&mut s, true, 9, 2),
            [None, None],
            "the sequence's start"
        );
        s.start();
        assert_eq!(
            takes(&mut s, false, 1, 2),
            [Some(true), None],
            "one tap: the image"
        );
        s.start();
        assert_eq!(takes(&mut s, false, 9, 2), [Some(true), Some(false)]);
        s.start();
        assert_eq!(
            s.next(false, 9),
            Some(true),
            "a new window restarts the shadow"
        );
        s.clear();
        assert_eq!(s.next(false, 9), None, "cleared");
    }
}
