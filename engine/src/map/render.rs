//! A map as a video frame: GRAY16_LE on each map's linear scale, or RGBA through the heat
//! scale whose alpha grows with the difference (so that `compositor` can lay it over the
//! video). The per-pixel scales are `gpumetrics_kernels::map`'s ([`gray16`],
//! [`heat_position`], [`heat_rgba`]), which the GPU's `map_gray16` / `map_heat` kernels
//! run too, so a frame is the same from either backend. Documented in docs/METRICS.md
//! ("Distortion maps"); the element's tests read them back.

use super::kind::MapKind;
pub use gpumetrics_kernels::map::{HEAT_STOPS, heat_rgba};

/// How a map frame is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MapStyle {
    /// GRAY16_LE: 2 bytes a pixel.
    Gray16,
    /// RGBA heat map: 4 bytes a pixel.
    Heat,
}

impl MapStyle {
    /// Bytes of a pixel.
    pub fn pixel_bytes(self) -> usize {
        match self {
            MapStyle::Gray16 => 2,
            MapStyle::Heat => 4,
        }
    }
}

/// The launch of the map kernels that take a thread per pixel of a `width`×`height` map
/// (those that make the frames' maps and those that draw frames): blocks of
/// (`BLOCK_X`, `BLOCK_Y`) threads.
pub(crate) fn per_pixel(width: u32, height: u32) -> cudarc::driver::LaunchConfig {
    use gpumetrics_kernels::map::{BLOCK_X, BLOCK_Y};
    cudarc::driver::LaunchConfig {
        grid_dim: (width.div_ceil(BLOCK_X), height.div_ceil(BLOCK_Y), 1),
        block_dim: (BLOCK_X, BLOCK_Y, 1),
        shared_mem_bytes: 0,
    }
}

/// The GRAY16_LE value of `kind`'s map value `v` (`peak`: the reference's largest sample
/// value), as docs/METRICS.md gives each scale.
pub fn gray16(kind: MapKind, v: f32, peak: f64) -> u16 {
    gpumetrics_kernels::map::gray16(kind.scale(), v, peak)
}

/// Where `kind`'s map value `v` lies on the heat scale, 0..1.
pub fn heat_position(kind: MapKind, v: f32, peak: f64) -> f64 {
    gpumetrics_kernels::map::heat_position(kind.scale(), v, peak)
}

/// Renders `values` (`width` a row) into `out` on the host, rows `stride` bytes apart, rows
/// in parallel. `out` holds the rows (checked by the caller).
pub(crate) fn rows(
    kind: MapKind,
    style: MapStyle,
    values: &[f32],
    width: usize,
    peak: f64,
    out: &mut [u8],
    stride: usize,
) {
    use rayon::prelude::*;
    out.par_chunks_mut(stride.max(1))
        .zip(values.par_chunks(width.max(1)))
        .for_each(|(out, row)| match style {
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
        });
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
        assert_eq!(gray16(MapKind::Butteraugli, 4.0, 255.0), 32768);
        assert_eq!(gray16(MapKind::Cvvdp, 0.1, 255.0), 6554);
        assert_eq!(gray16(MapKind::Ssimulacra2, 10.0, 255.0), 32768);
        assert_eq!(heat_rgba(0.0), [0, 0, 255, 0]);
        assert_eq!(heat_rgba(0.5), [0, 255, 0, 128]);
        assert_eq!(heat_rgba(1.0), [255, 0, 0, 255]);
        assert_eq!(heat_rgba(0.125), [0, 128, 255, 32]);
        // A difference of a quarter of the range saturates the squared-error heat scale.
        assert_eq!(
            heat_position(MapKind::SquaredError, 64.0f32 * 64.0, 256.0),
            1.0
        );
        assert_eq!(heat_position(MapKind::Butteraugli, 1.0, 255.0), 0.25);
        assert_eq!(heat_position(MapKind::Cvvdp, 0.125, 255.0), 0.625);
        assert_eq!(heat_position(MapKind::Ssimulacra2, 11.0, 255.0), 1.0);
    }

    /// The interval chosen by comparisons gives what a search of the stops gives, at the
    /// stops, between them and for NaN; the scales round as `f64::round`.
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

    /// Rows land at their stride, padding untouched, in both styles.
    #[test]
    fn rows_land_at_their_stride() {
        let (w, h) = (5usize, 3usize);
        let values: Vec<f32> = (0..w * h).map(|i| i as f32 / 4.0).collect();
        for style in [MapStyle::Gray16, MapStyle::Heat] {
            let b = style.pixel_bytes();
            let stride = w * b + 6;
            let mut out = vec![0xAAu8; stride * h];
            rows(
                MapKind::Butteraugli,
                style,
                &values,
                w,
                255.0,
                &mut out,
                stride,
            );
            for y in 0..h {
                for x in 0..w {
                    let v = values[y * w + x];
                    let at = &out[y * stride + b * x..][..b];
                    match style {
                        MapStyle::Gray16 => {
                            assert_eq!(at, gray16(MapKind::Butteraugli, v, 255.0).to_le_bytes())
                        }
                        MapStyle::Heat => {
                            assert_eq!(at, heat_rgba(heat_position(MapKind::Butteraugli, v, 255.0)))
                        }
                    }
                }
                assert!(
                    out[y * stride + w * b..(y + 1) * stride]
                        .iter()
                        .all(|&p| p == 0xAA)
                );
            }
        }
    }
}
