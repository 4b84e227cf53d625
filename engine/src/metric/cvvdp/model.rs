//! The whole of ColorVideoVDP on a stream of frame pairs, as the reference's
//! `predict_video_source` computes it frame by frame (`--temp-padding replicate`, its
//! default): each frame's light to DKL, the temporal channels over the frames before (the
//! first frame replicated into the past), the Weber-contrast pyramid, the sensitivity of
//! each band at the reference's background, masking (the base band without), spatial
//! pooling per band and channel, and the pooling over frames to JOD.
//!
//! The reference treats a single frame as an image (no temporal channels, the image
//! integration factor): [`Model::push`] gives that JOD for the first frame and the video's
//! from the second on, so that the value after frame k is the reference's on frames 0..=k.

use std::collections::VecDeque;

use super::csf::AtFrequency;
use super::display::Display;
use super::masking::{BAND_CHANNELS, band_difference};
use super::pool;
use super::pyramid::{CHANNELS, Plane, bands, expand, weber_contrast};
use super::temporal::{filters, parameter};

/// The spatial frequency the reference gives the base band's sensitivity (cycles per
/// degree).
const BASE_BAND_RHO: f32 = 0.1;

/// A frame in DKL (D65, cd/m²): achromatic, red-green, yellow-violet planes.
pub type DklFrame = [Vec<f32>; 3];

/// The metric's state for frames of one size, display and frame rate.
pub struct Model {
    /// The display's photometry and linear RGB → DKL matrix, as the kernels take them.
    photometry: gpumetrics_kernels::cvvdp::Display,
    width: usize,
    height: usize,
    levels: usize,
    /// Per band (the base band last), the sensitivity of each band channel along log
    /// luminance.
    csf: Vec<[AtFrequency; BAND_CHANNELS]>,
    /// 10^(sensitivity_correction / 20).
    gain: f32,
    /// The temporal filters' taps (sustained Y, RG, VY, transient Y).
    taps: [Vec<f32>; 4],
    /// The last frames of each side (test, reference), oldest first, at most a filter long.
    history: [VecDeque<DklFrame>; 2],
    running: Running,
}

/// The pooling over the frames of a sequence: what each pair adds and the JOD so far
/// (the CPU's [`Model`] and the GPU's pipeline alike).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Running {
    /// The first frame's per-frame value as an image, for the JOD of a one-frame span.
    first: Option<f32>,
    /// The frames pushed and the sum of their terms of the pooling over frames.
    frames: u64,
    sum: f64,
}

impl Running {
    /// Adds a pair's per-frame value of the video (`video`, [`pool::frame`]); the first
    /// pair of a sequence also its value as an image (`image`).
    pub fn push(&mut self, image: Option<f32>, video: f32) -> Step {
        let first = self.frames == 0;
        if first {
            self.first = image;
        }
        let term = pool::frame_term(video);
        self.sum += term;
        self.frames += 1;
        Step {
            jod: self.jod(),
            term,
            image: if first { self.first } else { None },
        }
    }

    /// The JOD of the frames pushed so far (10 before any).
    pub fn jod(&self) -> f32 {
        match (self.frames, self.first) {
            (0, _) | (_, None) => 10.0,
            (1, Some(image)) => pool::image_jod(image),
            (n, _) => pool::span_jod(self.sum, n),
        }
    }
}

/// What [`Model::push`] gives for a pair.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    /// The JOD of every pair since the start.
    pub jod: f32,
    /// The pair's term of the pooling over frames ([`pool::frame_term`]).
    pub term: f64,
    /// For the first pair, its per-frame value as an image (what a one-frame span pools
    /// to, [`pool::image_jod`]).
    pub image: Option<f32>,
}

/// What one frame pair adds: the per-channel, per-band differences and their pooled value.
#[derive(Clone, Debug, PartialEq)]
pub struct FrameDifferences {
    /// `[channel][band]`, channels sustained Y, RG, VY and transient Y.
    pub q: Vec<Vec<f32>>,
    /// Pooled over bands and channels ([`pool::frame`]).
    pub frame: f32,
    /// The reference's `raw` heat map of the pair, when asked for ([`Model::push_with_map`]).
    pub heat: Option<Vec<f32>>,
}

impl Model {
    /// The metric for `width`×`height` frames shown on the reference's display model
    /// `display` at `fps` frames per second.
    pub fn new(display: &str, width: usize, height: usize, fps: f64) -> Result<Model, String> {
        if width == 0 || height == 0 {
            return Err(format!("cvvdp: a {width}x{height} frame has no pixels"));
        }
        if !(fps.is_finite() && fps > 0.0) {
            return Err(format!("cvvdp: frame rate {fps} is not positive"));
        }
        let display = Display::named(display)?;
        let photometry = display.photometry(super::display::flat(&display.rgb_to_dkl()?));
        let (levels, freqs) = bands(width, height, display.ppd);
        let n = freqs.len();
        let csf = freqs
            .iter()
            .enumerate()
            .map(|(b, &f)| {
                let rho = if b + 1 == n { BASE_BAND_RHO } else { f as f32 };
                std::array::from_fn(|c| AtFrequency::new(c, rho))
            })
            .collect();
        let gain = 10f32.powf(parameter("sensitivity_correction")[0] as f32 / 20.0);
        Ok(Model {
            photometry,
            width,
            height,
            levels,
            csf,
            gain,
            taps: filters(fps),
            history: [VecDeque::new(), VecDeque::new()],
            running: Running::default(),
        })
    }

    /// The display model's light of display-encoded RGB pixels (row by row), in DKL.
    pub fn dkl(&self, rgb: &[[f32; 3]]) -> DklFrame {
        use rayon::prelude::*;
        assert_eq!(rgb.len(), self.width * self.height);
        let pixels: Vec<[f32; 3]> = rgb
            .par_iter()
            .map(|&p| {
                let ph = &self.photometry;
                gpumetrics_kernels::cvvdp::to_dkl(
                    &ph.rgb_to_dkl,
                    gpumetrics_kernels::cvvdp::light(ph, p),
                )
            })
            .collect();
        std::array::from_fn(|c| pixels.iter().map(|p| p[c]).collect())
    }

    /// Forgets every frame: the next pair is the first of a new sequence.
    pub fn restart(&mut self) {
        self.history = [VecDeque::new(), VecDeque::new()];
        self.running = Running::default();
    }

    /// Adds the next pair (test, reference): the JOD of every frame so far, and what the
    /// pair adds to the pooling of a span.
    pub fn push(&mut self, test: DklFrame, reference: DklFrame) -> Step {
        self.push_with_map(test, reference, false).0
    }

    /// [`Model::push`], and with `map` the pair's distortion map: the reference's `raw`
    /// heat map of the frame in the video (`heatmap="raw"`: per band the masked
    /// differences pooled over the channels with their weights, the bands' pyramid
    /// reconstructed, then 1 − JOD/10 per pixel; 0 is no visible difference).
    pub fn push_with_map(
        &mut self,
        mut test: DklFrame,
        mut reference: DklFrame,
        map: bool,
    ) -> (Step, Option<Vec<f32>>) {
        for f in test.iter().chain(&reference) {
            assert_eq!(f.len(), self.width * self.height, "a frame of another size");
        }
        // The history's precision, the GPU's (`history_layout`: halves where no heat map is
        // made), for the image pass too.
        let layout = gpumetrics_kernels::cvvdp::history_layout(&self.photometry, map);
        for frame in [&mut test, &mut reference] {
            for (c, plane) in frame.iter_mut().enumerate() {
                if gpumetrics_kernels::cvvdp::history_in_halves(layout, c) {
                    for v in plane.iter_mut() {
                        *v = gpumetrics_kernels::cvvdp::history_value(layout, c, *v);
                    }
                }
            }
        }
        let image = self.history[0]
            .is_empty()
            .then(|| self.image(&test, &reference).frame);
        let len = self.taps[0].len();
        for (h, f) in self.history.iter_mut().zip([test, reference]) {
            if h.len() == len {
                h.pop_front();
            }
            h.push_back(f);
        }
        let video = self.video_frame(map);
        (self.running.push(image, video.frame), video.heat)
    }

    /// The JOD of the frames pushed so far (10 before any).
    pub fn jod(&self) -> f32 {
        self.running.jod()
    }

    /// Whether the next pair starts the sequence (nothing pushed since the start or a
    /// restart).
    pub fn is_fresh(&self) -> bool {
        self.history[0].is_empty()
    }

    /// Bands of the pyramid less one (the Laplacian levels; the base band is the last).
    pub fn levels(&self) -> usize {
        self.levels
    }

    /// The display's photometry and RGB → DKL matrix as the kernels take them.
    pub fn photometry(&self) -> &gpumetrics_kernels::cvvdp::Display {
        &self.photometry
    }

    /// Per band (the base band last), each band channel's log sensitivity along the CSF
    /// table's luminance axis.
    pub fn csf(&self) -> &[[AtFrequency; BAND_CHANNELS]] {
        &self.csf
    }

    /// 10^(sensitivity_correction / 20).
    pub fn gain(&self) -> f32 {
        self.gain
    }

    /// The temporal filters' taps (sustained Y, RG, VY, transient Y).
    pub fn taps(&self) -> &[Vec<f32>; 4] {
        &self.taps
    }

    /// The differences of a single frame pair seen as an image (three channels, no
    /// temporal filtering).
    pub fn image(&self, test: &DklFrame, reference: &DklFrame) -> FrameDifferences {
        let zero = vec![0f32; self.width * self.height];
        let channels = [
            &test[0],
            &reference[0],
            &test[1],
            &reference[1],
            &test[2],
            &reference[2],
            &zero,
            &zero,
        ];
        self.differences(channels.map(|c| self.plane(c.clone())), 3, false)
    }

    /// The differences of the newest pair in the history, through the temporal filters.
    fn video_frame(&self, heat: bool) -> FrameDifferences {
        use rayon::prelude::*;
        let len = self.taps[0].len();
        let filtered: Vec<Vec<f32>> = (0..CHANNELS)
            .into_par_iter()
            .map(|i| {
                let (cc, side) = (i / 2, i % 2);
                let colour = if cc == 3 { 0 } else { cc };
                let h = &self.history[side];
                // Frames before the first are the first (replicate padding): tap k of the
                // reversed filter meets frame `k − (len − h.len())` of the history, clamped.
                let missing = len - h.len();
                let taps = &self.taps[cc];
                let mut out = vec![0f32; self.width * self.height];
                for k in 0..len {
                    let frame = &h[k.saturating_sub(missing)][colour];
                    let w = taps[len - 1 - k];
                    for (o, v) in out.iter_mut().zip(frame) {
                        *o += v * w;
                    }
                }
                out
            })
            .collect();
        let mut filtered = filtered.into_iter();
        let channels: [Plane; CHANNELS] =
            std::array::from_fn(|_| self.plane(filtered.next().expect("eight channels")));
        self.differences(channels, BAND_CHANNELS, heat)
    }

    fn plane(&self, data: Vec<f32>) -> Plane {
        Plane::new(self.width, self.height, data)
    }

    /// The differences of `channels` (test and reference interleaved) on every band, for
    /// the first `used` band channels.
    fn differences(
        &self,
        channels: [Plane; CHANNELS],
        used: usize,
        heat: bool,
    ) -> FrameDifferences {
        use rayon::prelude::*;
        let pyramid = weber_contrast(&channels, self.levels);
        let bands = pyramid.len();
        let mut q = vec![vec![0f32; bands]; used];
        let mut heat_bands: Vec<Plane> = Vec::new();
        for (b, band) in pyramid.iter().enumerate() {
            let base = b + 1 == bands;
            let bkg = &band.log_background[1];
            let s: Vec<Plane> = (0..used)
                .map(|c| {
                    let data = bkg
                        .data
                        .par_iter()
                        .map(|&l| self.csf[b][c].sensitivity(l) * self.gain)
                        .collect();
                    Plane::new(bkg.width, bkg.height, data)
                })
                .collect();
            // The reference reads the bands between the finest and the base band doubled
            // (`lpyr_dec.get_band`).
            let mul = if b == 0 || base { 1.0 } else { 2.0 };
            let side = |k: usize| -> Plane {
                let p = &band.contrast[k];
                Plane::new(p.width, p.height, p.data.iter().map(|v| v * mul).collect())
            };
            let test: Vec<Plane> = (0..used).map(|c| side(2 * c)).collect();
            let reference: Vec<Plane> = (0..used).map(|c| side(2 * c + 1)).collect();
            let d: Vec<Plane> = if base {
                (0..used)
                    .map(|c| {
                        let s = s[c].data[0];
                        let data = test[c]
                            .data
                            .iter()
                            .zip(&reference[c].data)
                            .map(|(t, r)| (t - r).abs() * s)
                            .collect();
                        Plane::new(test[c].width, test[c].height, data)
                    })
                    .collect()
            } else {
                band_difference(&test, &reference, &s)
            };
            for (c, plane) in d.iter().enumerate() {
                q[c][b] = pool::spatial(&plane.data);
            }
            if heat {
                // The reference's `set_lband`: the band over its `get_band` factor.
                heat_bands.push(pool::heat_band(&d, base, mul));
            }
        }
        let frame = pool::frame(&q);
        let heat = heat.then(|| {
            // Bands from the base up: each expanded to the next finer band's size, added.
            let mut img = heat_bands.pop().expect("the base band");
            while let Some(band) = heat_bands.pop() {
                let up = expand(&img, band.width, band.height);
                let data = up.data.iter().zip(&band.data).map(|(a, b)| a + b).collect();
                img = Plane::new(band.width, band.height, data);
            }
            img.data.iter().map(|&v| pool::heat_of(v)).collect()
        });
        FrameDifferences { q, frame, heat }
    }
}
