//! Distortion maps as video frames on src (`map`, `map-style`): GRAY16_LE with each map's
//! linear scale, or RGBA through a false-colour scale whose alpha grows with the
//! difference, so that `compositor` can lay it over the video. The scales are documented in
//! docs/METRICS.md ("Distortion maps"); the tests read them back.

use gpumetrics_engine::map::{DistortionMap, MapKind};
use gst::glib;
use gst::prelude::*;
use gst_video::prelude::*;

use super::MapStyle;
use crate::gstcuda;

/// The caps of the map frames of a `width`×`height` measured picture, with the distorted
/// input's frame rate and pixel aspect ratio; in CUDA memory (`memory:CUDAMemory`) when
/// `cuda`.
pub(crate) fn caps(
    style: MapStyle,
    width: u32,
    height: u32,
    input: &gst_video::VideoInfo,
    cuda: bool,
) -> gst::Caps {
    let caps = gst_video::VideoInfo::builder(format(style), width, height)
        .fps(input.fps())
        .par(input.par())
        .build()
        .ok()
        .and_then(|i| i.to_caps().ok())
        .unwrap_or_else(|| gst::Caps::new_empty_simple("video/x-raw"));
    if cuda { with_cuda_feature(caps) } else { caps }
}

/// The video format of map frames of `style`.
fn format(style: MapStyle) -> gst_video::VideoFormat {
    match style {
        MapStyle::Gray16 => gst_video::VideoFormat::Gray16Le,
        MapStyle::Heat => gst_video::VideoFormat::Rgba,
    }
}

/// `caps` with the CUDA memory feature on each structure.
fn with_cuda_feature(mut caps: gst::Caps) -> gst::Caps {
    caps.make_mut()
        .set_features_simple(Some(gst::CapsFeatures::new([
            crate::caps::CUDA_MEMORY_FEATURE,
        ])));
    caps
}

/// The GRAY16_LE value of map value `v` (`peak`: the reference's largest sample value):
/// squared error `min(v / peak², 1) · 65535`; SSIM `clamp((1 − v) / 2, 0, 1) · 65535`
/// (0 = identical, 65535 = SSIM −1); Butteraugli `min(v / 8, 1) · 65535`; ColorVideoVDP
/// `min(v, 1) · 65535` (its heat map 1 − JOD/10 as it is: 6,554 per JOD lost);
/// SSIMULACRA2 `min(v / 20, 1) · 65535` (20: a frame of that value everywhere would score
/// about 2); rounded.
pub fn gray16(kind: MapKind, v: f32, peak: f64) -> u16 {
    let t = match kind {
        MapKind::SquaredError => v as f64 / (peak * peak),
        MapKind::Ssim => (1.0 - v as f64) / 2.0,
        MapKind::Butteraugli => v as f64 / 8.0,
        MapKind::Cvvdp => v as f64,
        MapKind::Ssimulacra2 => v as f64 / 20.0,
    };
    (t.clamp(0.0, 1.0) * 65535.0).round() as u16
}

/// Where map value `v` lies on the heat scale, 0..1: squared error `min(4·√v / peak, 1)`
/// (a difference of a quarter of the range saturates); SSIM `clamp(1 − v, 0, 1)`;
/// Butteraugli `min(v / 4, 1)` (1, just visible, is a quarter of the scale); ColorVideoVDP
/// `min(5·v, 1)` (the heat map's 1 − JOD/10: 2 JOD lost saturate); SSIMULACRA2
/// `min(v / 11, 1)` (11 everywhere would score 30, the scale's "low quality").
pub fn heat_position(kind: MapKind, v: f32, peak: f64) -> f64 {
    let t = match kind {
        MapKind::SquaredError => 4.0 * (v.max(0.0) as f64).sqrt() / peak,
        MapKind::Ssim => 1.0 - v as f64,
        MapKind::Butteraugli => v as f64 / 4.0,
        MapKind::Cvvdp => 5.0 * v as f64,
        MapKind::Ssimulacra2 => v as f64 / 11.0,
    };
    t.clamp(0.0, 1.0)
}

/// The colour scale's stops: (position, R, G, B): blue, cyan, green, yellow, red.
pub const HEAT_STOPS: [(f64, [f64; 3]); 5] = [
    (0.0, [0.0, 0.0, 255.0]),
    (0.25, [0.0, 255.0, 255.0]),
    (0.5, [0.0, 255.0, 0.0]),
    (0.75, [255.0, 255.0, 0.0]),
    (1.0, [255.0, 0.0, 0.0]),
];

/// The RGBA of position `t` (0..1): the colour interpolated linearly between the stops,
/// alpha `255·t` (rounded): transparent where nothing differs.
pub fn heat_rgba(t: f64) -> [u8; 4] {
    let t = t.clamp(0.0, 1.0);
    // The first stop at or past t (a NaN takes the last interval), as a search would.
    let i = if t <= HEAT_STOPS[1].0 {
        0
    } else if t <= HEAT_STOPS[2].0 {
        1
    } else if t <= HEAT_STOPS[3].0 {
        2
    } else {
        3
    };
    let ((t0, c0), (t1, c1)) = (HEAT_STOPS[i], HEAT_STOPS[i + 1]);
    let f = (t - t0) / (t1 - t0);
    let c = |k: usize| (c0[k] + (c1[k] - c0[k]) * f).round() as u8;
    [c(0), c(1), c(2), (255.0 * t).round() as u8]
}

/// The map frames of one `map`, `map-style`, size and memory: a buffer pool of their caps,
/// so that a pair's frame reuses the memory of one that downstream has released instead of
/// allocating (and faulting in) 4 or 8 MB at 1080p per pair. In CUDA memory the pool is a
/// `GstCudaBufferPool` of the element's context: rows are written through the memory's
/// host map (its staging copy, uploaded when downstream maps it for the device).
pub(crate) struct Frames {
    style: MapStyle,
    info: gst_video::VideoInfo,
    pool: gst::BufferPool,
    cuda: Option<gstcuda::Context>,
}

impl Frames {
    /// Frames of `style` for a `width`×`height` map (the pool started), in the CUDA memory
    /// of `cuda` when given.
    pub(crate) fn new(
        style: MapStyle,
        width: u32,
        height: u32,
        cuda: Option<&gstcuda::Context>,
    ) -> Result<Frames, glib::BoolError> {
        let info = gst_video::VideoInfo::builder(format(style), width, height).build()?;
        let caps = info.to_caps()?;
        let (pool, caps) = match cuda {
            None => (gst::BufferPool::new(), caps),
            Some(ctx) => {
                let api = gstcuda::api().map_err(|why| glib::bool_error!("{why}"))?;
                let pool = ctx.buffer_pool(api).ok_or_else(|| {
                    glib::bool_error!(
                        "GstCuda made no buffer pool on CUDA device {}",
                        ctx.device_id()
                    )
                })?;
                (pool, with_cuda_feature(caps))
            }
        };
        let mut config = pool.config();
        config.set_params(Some(&caps), info.size() as u32, 0, 0);
        pool.set_config(config)
            .map_err(|_| glib::bool_error!("the map frames' pool refused its configuration"))?;
        pool.set_active(true)?;
        Ok(Frames {
            style,
            info,
            pool,
            cuda: cuda.cloned(),
        })
    }

    /// Whether these frames are of `style`, `width`×`height` and in the memory of `cuda`.
    pub(crate) fn fits(
        &self,
        style: MapStyle,
        width: usize,
        height: usize,
        cuda: Option<&gstcuda::Context>,
    ) -> bool {
        self.style == style
            && self.info.width() as usize == width
            && self.info.height() as usize == height
            && self.cuda.as_ref() == cuda
    }

    /// The map as a frame of the style (rows at the frame's stride: GStreamer's layout in
    /// system memory, the allocation's pitch in CUDA memory), rows in parallel.
    pub(crate) fn render(
        &self,
        kind: MapKind,
        map: &DistortionMap,
        peak: f64,
    ) -> Result<gst::Buffer, glib::BoolError> {
        use rayon::prelude::*;
        let (w, h) = (map.width, map.height);
        if self.info.width() as usize != w
            || self.info.height() as usize != h
            || map.values.len() != w * h
        {
            return Err(glib::bool_error!(
                "a {w}x{h} map for {}x{} frames",
                self.info.width(),
                self.info.height()
            ));
        }
        let mut buffer = self
            .pool
            .acquire_buffer(None)
            .map_err(|e| glib::bool_error!("no map frame from the pool: {e:?}"))?;
        {
            let b = buffer
                .get_mut()
                .expect("a buffer from the pool is writable");
            let mut frame = gst_video::VideoFrameRef::from_buffer_ref_writable(b, &self.info)?;
            let stride = frame.plane_stride()[0] as usize;
            let row_bytes = w * self.info.format_info().pixel_stride()[0] as usize;
            if stride < row_bytes {
                return Err(glib::bool_error!(
                    "map frame rows of {stride} bytes for {row_bytes}"
                ));
            }
            let data = frame.plane_data_mut(0)?;
            let style = self.style;
            data.par_chunks_mut(stride)
                .zip(map.values.par_chunks(w.max(1)))
                .for_each(|(out, row)| render_row(kind, style, row, out, peak));
        }
        Ok(buffer)
    }
}

impl Drop for Frames {
    fn drop(&mut self) {
        let _ = self.pool.set_active(false);
    }
}

/// One row of the map in `style` into `out` (at least the row's bytes).
fn render_row(kind: MapKind, style: MapStyle, row: &[f32], out: &mut [u8], peak: f64) {
    match style {
        MapStyle::Gray16 => {
            for (o, &v) in out.chunks_exact_mut(2).zip(row) {
                o.copy_from_slice(&gray16(kind, v, peak).to_le_bytes());
            }
        }
        MapStyle::Heat => {
            for (o, &v) in out.chunks_exact_mut(4).zip(row) {
                o.copy_from_slice(&heat_rgba(heat_position(kind, v, peak)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scales_are_as_documented() {
        assert_eq!(gray16(MapKind::Ssim, 1.0, 255.0), 0);
        assert_eq!(gray16(MapKind::Ssim, -1.0, 255.0), 65535);
        assert_eq!(gray16(MapKind::Ssim, 0.0, 255.0), 32768);
        assert_eq!(gray16(MapKind::SquaredError, 65025.0, 255.0), 65535);
        assert_eq!(gray16(MapKind::SquaredError, 0.0, 255.0), 0);
        assert_eq!(heat_rgba(0.0), [0, 0, 255, 0]);
        assert_eq!(heat_rgba(0.5), [0, 255, 0, 128]);
        assert_eq!(heat_rgba(1.0), [255, 0, 0, 255]);
        assert_eq!(heat_rgba(0.125), [0, 128, 255, 32]);
        // A difference of a quarter of the range saturates the squared-error heat scale.
        assert_eq!(
            heat_position(MapKind::SquaredError, 64.0f32 * 64.0, 256.0),
            1.0
        );
    }

    /// The interval chosen by comparisons gives what a search of the stops gives, at the
    /// stops, between them and for NaN.
    #[test]
    fn the_interval_choice_equals_a_search_of_the_stops() {
        let plain = |t: f64| -> [u8; 4] {
            let t = t.clamp(0.0, 1.0);
            let i = HEAT_STOPS
                .windows(2)
                .position(|w| t <= w[1].0)
                .unwrap_or(HEAT_STOPS.len() - 2);
            let ((t0, c0), (t1, c1)) = (HEAT_STOPS[i], HEAT_STOPS[i + 1]);
            let f = (t - t0) / (t1 - t0);
            let c = |k: usize| (c0[k] + (c1[k] - c0[k]) * f).round() as u8;
            [c(0), c(1), c(2), (255.0 * t).round() as u8]
        };
        let mut ts: Vec<f64> = (0..=200_000).map(|i| i as f64 / 200_000.0).collect();
        ts.extend([
            -1.0,
            2.0,
            f64::NAN,
            0.25,
            0.5,
            0.75,
            0.5 / 255.0,
            1.5 / 255.0,
        ]);
        ts.extend((0..=255).map(|k| (k as f64 + 0.5) / 255.0));
        for t in ts {
            assert_eq!(heat_rgba(t), plain(t), "t {t}");
        }
        for v in (0..=70_000).map(|i| i as f32 / 35_000.0 - 0.5) {
            let t = ((1.0 - v as f64) / 2.0).clamp(0.0, 1.0);
            assert_eq!(
                gray16(MapKind::Ssim, v, 255.0),
                (t * 65535.0).round() as u16
            );
        }
    }

    /// A frame from the pool holds each pixel's documented value in both styles, rows in
    /// their padded places (odd widths pad GRAY16 rows to four bytes); a released frame's
    /// memory is used again; a map of another size is refused.
    #[test]
    fn pooled_frames_hold_the_documented_values() {
        gst::init().unwrap();
        let (w, h) = (301usize, 77usize);
        let values: Vec<f32> = (0..w * h)
            .map(|i| ((i * 7919) % 1000) as f32 / 100.0)
            .collect();
        let map = DistortionMap {
            width: w,
            height: h,
            values,
        };
        for (style, bytes) in [(MapStyle::Gray16, 2usize), (MapStyle::Heat, 4)] {
            let frames = Frames::new(style, w as u32, h as u32, None).unwrap();
            let stride = frames.info.stride()[0] as usize;
            assert!(stride >= bytes * w);
            let mut memory = None;
            for _ in 0..3 {
                let b = frames.render(MapKind::Butteraugli, &map, 255.0).unwrap();
                let data = b.map_readable().unwrap();
                for y in [0, h / 2, h - 1] {
                    for x in [0, 1, w - 1] {
                        let v = map.values[y * w + x];
                        let at = &data[y * stride + bytes * x..][..bytes];
                        match style {
                            MapStyle::Gray16 => assert_eq!(
                                at,
                                gray16(MapKind::Butteraugli, v, 255.0).to_le_bytes(),
                                "({x}, {y})"
                            ),
                            MapStyle::Heat => assert_eq!(
                                at,
                                heat_rgba(heat_position(MapKind::Butteraugli, v, 255.0)),
                                "({x}, {y})"
                            ),
                        }
                    }
                }
                let ptr = data.as_ptr() as usize;
                drop(data);
                drop(b);
                // Released before the next: the pool hands the same memory out again.
                assert!(memory.is_none_or(|m| m == ptr));
                memory = Some(ptr);
            }
            let small = DistortionMap {
                width: 2,
                height: 2,
                values: vec![0.0; 4],
            };
            assert!(frames.render(MapKind::Butteraugli, &small, 255.0).is_err());
        }
    }
}
