//! Distortion maps as video frames on src (`map`, `map-style`): GRAY16_LE with each map's
//! linear scale, or RGBA through a false-colour scale whose alpha grows with the
//! difference, so that `compositor` can lay it over the video. The scales are documented in
//! docs/METRICS.md ("Distortion maps"); the tests read them back.

use gpumetrics_engine::map::{DistortionMap, MapKind};
use gst::glib;

use super::MapStyle;

/// The caps of the map frames of a `width`×`height` measured picture, with the distorted
/// input's frame rate and pixel aspect ratio (system memory).
pub(crate) fn caps(
    style: MapStyle,
    width: u32,
    height: u32,
    input: &gst_video::VideoInfo,
) -> gst::Caps {
    let format = match style {
        MapStyle::Gray16 => gst_video::VideoFormat::Gray16Le,
        MapStyle::Heat => gst_video::VideoFormat::Rgba,
    };
    gst_video::VideoInfo::builder(format, width, height)
        .fps(input.fps())
        .par(input.par())
        .build()
        .ok()
        .and_then(|i| i.to_caps().ok())
        .unwrap_or_else(|| gst::Caps::new_empty_simple("video/x-raw"))
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
    let i = HEAT_STOPS
        .windows(2)
        .position(|w| t <= w[1].0)
        .unwrap_or(HEAT_STOPS.len() - 2);
    let ((t0, c0), (t1, c1)) = (HEAT_STOPS[i], HEAT_STOPS[i + 1]);
    let f = (t - t0) / (t1 - t0);
    let c = |k: usize| (c0[k] + (c1[k] - c0[k]) * f).round() as u8;
    [c(0), c(1), c(2), (255.0 * t).round() as u8]
}

/// The map as a frame of `style` (rows padded as GStreamer lays the format out).
pub(crate) fn render(
    kind: MapKind,
    map: &DistortionMap,
    style: MapStyle,
    peak: f64,
) -> Result<gst::Buffer, glib::BoolError> {
    let format = match style {
        MapStyle::Gray16 => gst_video::VideoFormat::Gray16Le,
        MapStyle::Heat => gst_video::VideoFormat::Rgba,
    };
    let info =
        gst_video::VideoInfo::builder(format, map.width as u32, map.height as u32).build()?;
    let stride = info.stride()[0] as usize;
    let mut buffer = gst::Buffer::with_size(info.size())?;
    {
        let b = buffer.get_mut().expect("a new buffer is writable");
        let mut data = b.map_writable()?;
        let data = data.as_mut_slice();
        for (y, row) in map.values.chunks(map.width.max(1)).enumerate() {
            let out = &mut data[y * stride..];
            for (x, &v) in row.iter().enumerate() {
                match style {
                    MapStyle::Gray16 => {
                        out[2 * x..2 * x + 2].copy_from_slice(&gray16(kind, v, peak).to_le_bytes())
                    }
                    MapStyle::Heat => out[4 * x..4 * x + 4]
                        .copy_from_slice(&heat_rgba(heat_position(kind, v, peak))),
                }
            }
        }
    }
    Ok(buffer)
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
}
