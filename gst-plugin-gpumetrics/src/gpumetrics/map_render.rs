//! Distortion maps as video frames on src (`map`, `map-style`): GRAY16_LE with each map's
//! linear scale, or RGBA through a false-colour scale whose alpha grows with the
//! difference, so that `compositor` can lay it over the video. The engine draws them
//! (`gpumetrics_engine::map::render`: on the GPU for a map in device memory, straight into
//! the frame's CUDA memory when src negotiated it); this module holds the frames' caps and
//! pool. The scales are documented in docs/METRICS.md ("Distortion maps"); the tests read
//! them back.

use gpumetrics_engine::map::PairMap;
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
pub(crate) fn format(style: MapStyle) -> gst_video::VideoFormat {
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

/// The engine's style of `style`.
pub(crate) fn engine_style(style: MapStyle) -> gpumetrics_engine::map::MapStyle {
    match style {
        MapStyle::Gray16 => gpumetrics_engine::map::MapStyle::Gray16,
        MapStyle::Heat => gpumetrics_engine::map::MapStyle::Heat,
    }
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

    /// The map as a frame of the style. In CUDA memory of the context the map lives in,
    /// the GPU draws it there (the memory's device pointer and pitch); else the engine
    /// draws it into the frame's host view (rows at its stride: GStreamer's layout in system
    /// memory; in CUDA memory the staging copy, uploaded when downstream maps it for the
    /// device).
    pub(crate) fn render(&self, map: &PairMap, peak: f64) -> Result<gst::Buffer, glib::BoolError> {
        let (w, h) = (map.width(), map.height());
        if self.info.width() as usize != w || self.info.height() as usize != h {
            return Err(glib::bool_error!(
                "a {w}x{h} map for {}x{} frames",
                self.info.width(),
                self.info.height()
            ));
        }
        let style = engine_style(self.style);
        let mut buffer = self
            .pool
            .acquire_buffer(None)
            .map_err(|e| glib::bool_error!("no map frame from the pool: {e:?}"))?;
        let b = buffer
            .get_mut()
            .expect("a buffer from the pool is writable");
        if let (Some(ctx), true) = (&self.cuda, map.on_device()) {
            let api = gstcuda::api().map_err(|why| glib::bool_error!("{why}"))?;
            let memory = gstcuda::DeviceMap::map_writable(api, b, &self.info)
                .map_err(|e| glib::bool_error!("{e}"))?;
            let (offset, pitch) = (memory.planes.offsets[0], memory.planes.strides[0]);
            if pitch <= 0 || offset >= memory.size {
                return Err(glib::bool_error!(
                    "a CUDA map frame with rows {pitch} bytes apart at {offset} of {} bytes",
                    memory.size
                ));
            }
            // SAFETY: the frame's memory is mapped for the device's writes (nothing else
            // holds the buffer), `size − offset` bytes from its first row; the engine checks
            // the rows against that length.
            let drawn = unsafe {
                map.render_device(
                    style,
                    peak,
                    memory.base + offset as u64,
                    pitch as usize,
                    memory.size - offset,
                    ctx.handle(api),
                )
            }
            .map_err(|e| glib::bool_error!("{e}"))?;
            if drawn {
                drop(memory);
                return Ok(buffer);
            }
        }
        {
            let mut frame = gst_video::VideoFrameRef::from_buffer_ref_writable(b, &self.info)?;
            let stride = frame.plane_stride()[0] as usize;
            let data = frame.plane_data_mut(0)?;
            map.render(style, peak, data, stride)
                .map_err(|e| glib::bool_error!("{e}"))?;
        }
        Ok(buffer)
    }
}

impl Drop for Frames {
    fn drop(&mut self) {
        let _ = self.pool.set_active(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpumetrics_engine::map::render::{gray16, heat_position, heat_rgba};
    use gpumetrics_engine::map::{DistortionMap, MapKind};

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
        let pair = PairMap::on_host(MapKind::Butteraugli, map.clone());
        for (style, bytes) in [(MapStyle::Gray16, 2usize), (MapStyle::Heat, 4)] {
            let frames = Frames::new(style, w as u32, h as u32, None).unwrap();
            let stride = frames.info.stride()[0] as usize;
            assert!(stride >= bytes * w);
            let mut memory = None;
            for _ in 0..3 {
                let b = frames.render(&pair, 255.0).unwrap();
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
            let small = PairMap::on_host(MapKind::Butteraugli, small);
            assert!(frames.render(&small, 255.0).is_err());
        }
    }
}
