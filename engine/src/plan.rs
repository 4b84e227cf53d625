//! What to compare: channel pairs matched by name between the two inputs' formats.

use crate::color::{ChromaUpsampling, Colorimetry};
use crate::error::EngineError;
use crate::format::{ChannelSpec, ColorFamily, FrameLayout};
use crate::frame::PlanePtrs;
use gpumetrics_kernels::channel::{ChannelPair, MAX_CHANNELS};
use gpumetrics_kernels::color::ColorSource;
use gpumetrics_kernels::psnr::PsnrPlanes;

/// Largest frame side: keeps every sample index and pitch of the kernels inside `u32`.
pub const MAX_SIDE: u32 = 32768;
/// Largest frame area (16384x16384): bounds the per-caps allocations (SSIMULACRA2 keeps about
/// 130 bytes per pixel) so that absurd caps fail cleanly instead of exhausting memory.
pub const MAX_PIXELS: u64 = 1 << 28;

/// The channel pairs of a (reference, distorted) layout pair and how to measure them, fixed
/// per caps: built complete by [`Plan::new`] or [`Plan::with_options`], never changed after.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub reference: FrameLayout,
    pub distorted: FrameLayout,
    pub channels: Vec<(ChannelSpec, ChannelSpec)>,
    /// Colorimetry of the reference and distorted inputs (for linear-light metrics).
    pub colorimetry: [Colorimetry; 2],
    /// Whether there is a reference input. A plan without one ([`Plan::single`]) measures
    /// the distorted input alone, with no-reference metrics only; its `reference` layout
    /// and colorimetry are the distorted input's, so that code reading them stays valid.
    pub has_reference: bool,
    /// Frames per second of the inputs (the reference's, else the distorted one's), for
    /// metrics with temporal filters (ColorVideoVDP); `None` when the caps declare none.
    pub frame_rate: Option<f64>,
    /// The distortion map made of each pair, if any ([`crate::map`]).
    pub map: Option<crate::map::kind::MapKind>,
    /// With a map: the threshold of its `<name>-area` statistic (given, else
    /// [`crate::map::MapKind::default_threshold`] of the reference's peak); 0 without.
    pub map_threshold: f64,
}

/// What a [`Plan`] is built from besides the two layouts. (How each metric measures is
/// its own business: its options, [`crate::metric::Options`].)
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlanOptions {
    /// Colorimetry of the reference and distorted inputs; `None`:
    /// [`Colorimetry::default_for`] their formats.
    pub colorimetry: Option<[Colorimetry; 2]>,
    /// Frames per second ([`Plan::frame_rate`]); `None`: unknown or variable.
    pub frame_rate: Option<f64>,
    /// The distortion map made of each pair, if any ([`crate::map`]).
    pub map: Option<crate::map::kind::MapKind>,
    /// The threshold of the map's area ([`Plan::map_threshold`]); `None`: the map's default.
    pub map_threshold: Option<f64>,
}

impl Plan {
    /// The plan of two layouts with the default [`PlanOptions`].
    pub fn new(reference: FrameLayout, distorted: FrameLayout) -> Result<Plan, EngineError> {
        Self::with_options(reference, distorted, PlanOptions::default())
    }

    /// The plan of two layouts, measured as `options` say.
    pub fn with_options(
        reference: FrameLayout,
        distorted: FrameLayout,
        options: PlanOptions,
    ) -> Result<Plan, EngineError> {
        if (reference.width, reference.height) != (distorted.width, distorted.height) {
            return Err(EngineError::SizeMismatch {
                ref_w: reference.width,
                ref_h: reference.height,
                dist_w: distorted.width,
                dist_h: distorted.height,
            });
        }
        if reference.width == 0 || reference.height == 0 {
            return Err(EngineError::InvalidFrame("frames of zero size".into()));
        }
        let (w, h) = (reference.width, reference.height);
        if w.max(h) > MAX_SIDE || w as u64 * h as u64 > MAX_PIXELS {
            return Err(EngineError::Unsupported(format!(
                "frames of {w}x{h} are larger than supported (sides up to {MAX_SIDE}, at most \
                 {MAX_PIXELS} pixels, e.g. 16384x16384); scale the inputs down first"
            )));
        }
        let (rf, df) = (reference.format, distorted.format);
        let incompatible = |why| EngineError::IncompatibleFormats {
            reference: rf.name(),
            distorted: df.name(),
            why,
        };
        if rf.family() != df.family() {
            return Err(incompatible(
                "their colour families (gray / YUV / RGB) differ",
            ));
        }
        if rf.family() == ColorFamily::Yuv && rf.subsampling() != df.subsampling() {
            return Err(incompatible("their chroma subsampling differs"));
        }
        let channels = rf
            .channels()
            .iter()
            .map(|r| {
                let d = df
                    .channels()
                    .iter()
                    .find(|d| d.name == r.name)
                    .expect("same family");
                (*r, *d)
            })
            .collect();
        Ok(Plan {
            reference,
            distorted,
            channels,
            colorimetry: options.colorimetry.unwrap_or([
                Colorimetry::default_for(rf.family()),
                Colorimetry::default_for(df.family()),
            ]),
            has_reference: true,
            frame_rate: options.frame_rate.filter(|f| f.is_finite() && *f > 0.0),
            map: options.map,
            map_threshold: options.map.map_or(0.0, |k| {
                options
                    .map_threshold
                    .unwrap_or_else(|| k.default_threshold(rf.peak() as f64))
            }),
        })
    }

    /// The plan of one input measured alone (no reference): the distorted input's layout,
    /// checked as [`Plan::with_options`] checks a pair; `options.colorimetry`'s distorted
    /// entry is its colorimetry.
    pub fn single(distorted: FrameLayout, options: PlanOptions) -> Result<Plan, EngineError> {
        let colorimetry = options
            .colorimetry
            .map(|[_, d]| d)
            .unwrap_or_else(|| Colorimetry::default_for(distorted.format.family()));
        let mut plan = Self::with_options(
            distorted,
            distorted,
            PlanOptions {
                colorimetry: Some([colorimetry, colorimetry]),
                frame_rate: options.frame_rate,
                map: None,
                map_threshold: None,
            },
        )?;
        plan.has_reference = false;
        Ok(plan)
    }

    /// Samples in each channel, for plane-size weighting.
    pub fn channel_samples(&self) -> impl Iterator<Item = u64> + '_ {
        self.channels.iter().map(|(r, _)| {
            let (w, h) = self.reference.channel_size(r);
            w as u64 * h as u64
        })
    }

    /// Kernel-side description of every channel pair, at the given plane addresses.
    pub(crate) fn psnr_planes(&self, r: &PlanePtrs, d: &PlanePtrs) -> PsnrPlanes {
        let mut out = PsnrPlanes {
            count: self.channels.len() as u32,
            ..Default::default()
        };
        debug_assert!(self.channels.len() <= MAX_CHANNELS);
        for (slot, (rc, dc)) in out.pairs.iter_mut().zip(&self.channels) {
            let (width, height) = self.reference.channel_size(rc);
            *slot = ChannelPair {
                reference: r.channel(rc, self.reference.format.peak()),
                distorted: d.channel(dc, self.distorted.format.peak()),
                width,
                height,
            };
        }
        out
    }
}

impl Plan {
    /// Kernel-side descriptions of both frames for the linear-RGB conversion.
    pub(crate) fn color_sources(
        &self,
        r: &PlanePtrs,
        d: &PlanePtrs,
        upsampling: ChromaUpsampling,
    ) -> (ColorSource, ColorSource) {
        (
            self.colorimetry[0].source(&self.reference, r, upsampling),
            self.colorimetry[1].source(&self.distorted, d, upsampling),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absurd_sizes_are_refused_not_allocated() {
        let at = |width, height| FrameLayout {
            format: crate::PixelFormat::I420,
            width,
            height,
        };
        assert!(Plan::new(at(16384, 16384), at(16384, 16384)).is_ok());
        for (w, h) in [(32769, 8), (16385, 16384), (u32::MAX, u32::MAX)] {
            let e = Plan::new(at(w, h), at(w, h)).unwrap_err();
            assert!(e.to_string().contains("larger than supported"), "{e}");
        }
    }
    use crate::format::PixelFormat::*;

    fn l(format: crate::PixelFormat, width: u32, height: u32) -> FrameLayout {
        FrameLayout {
            format,
            width,
            height,
        }
    }

    #[test]
    fn mixes_layouts_of_one_family() {
        let p = Plan::new(l(I420, 8, 8), l(Nv21, 8, 8)).unwrap();
        assert_eq!(p.channels.len(), 3);
        assert_eq!(p.channels[2].1.offset, 0); // V comes first in NV21
        assert!(Plan::new(l(Rgbx, 4, 4), l(Abgr, 4, 4)).is_ok());
        assert!(Plan::new(l(I420, 4, 4), l(P010_10Le, 4, 4)).is_ok());
    }

    #[test]
    fn rejects_size_family_and_subsampling_mismatch() {
        let e = Plan::new(l(I420, 1920, 1080), l(I420, 1280, 720)).unwrap_err();
        assert!(e.to_string().contains("1920x1080") && e.to_string().contains("1280x720"));
        assert!(matches!(
            Plan::new(l(I420, 4, 4), l(Rgb, 4, 4)),
            Err(EngineError::IncompatibleFormats { .. })
        ));
        assert!(matches!(
            Plan::new(l(I420, 4, 4), l(Y444, 4, 4)),
            Err(EngineError::IncompatibleFormats { .. })
        ));
    }
}
