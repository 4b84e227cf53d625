//! One pair's map as the engine hands it out ([`PairMap`]): on the host (the CPU
//! backend's), or in device memory (the CUDA backend's, [`super::device`]) with its
//! statistics already made there. Readers take what they need of it: the statistics (every
//! pair's record), a frame (the element's src), the exact values (the command's PFM files,
//! tests); only the values copy the whole map to the host, once, when first asked for.

use std::sync::{Arc, OnceLock};

use super::kind::{DistortionMap, MapKind, Stats};
use super::render::{self, MapStyle};
use super::values::Values;
use crate::error::EngineError;

/// A pair's distortion map.
pub struct PairMap {
    kind: MapKind,
    width: usize,
    height: usize,
    store: Store,
}

enum Store {
    Host(Arc<DistortionMap>),
    Device {
        values: Values,
        /// Made by the device with the engine's threshold.
        stats: Stats,
        host: OnceLock<Arc<DistortionMap>>,
    },
}

impl std::fmt::Debug for PairMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PairMap")
            .field("kind", &self.kind)
            .field("width", &self.width)
            .field("height", &self.height)
            .field("on_device", &self.on_device())
            .finish()
    }
}

/// Maps are equal when they are of one kind and size and hold the same values: on the
/// host compared value by value, in device memory the same buffer (never copied for this).
impl PartialEq for PairMap {
    fn eq(&self, other: &PairMap) -> bool {
        (self.kind, self.width, self.height) == (other.kind, other.width, other.height)
            && match (&self.store, &other.store) {
                (Store::Host(a), Store::Host(b)) => a == b,
                (Store::Device { values: a, .. }, Store::Device { values: b, .. }) => a.same(b),
                _ => false,
            }
    }
}

impl PairMap {
    /// A map made on the host.
    pub fn on_host(kind: MapKind, map: DistortionMap) -> PairMap {
        PairMap {
            kind,
            width: map.width,
            height: map.height,
            store: Store::Host(Arc::new(map)),
        }
    }

    /// A map in device memory with its statistics.
    pub(crate) fn in_device_memory(kind: MapKind, values: Values, stats: Stats) -> PairMap {
        let (width, height) = values.size();
        PairMap {
            kind,
            width,
            height,
            store: Store::Device {
                values,
                stats,
                host: OnceLock::new(),
            },
        }
    }

    pub fn kind(&self) -> MapKind {
        self.kind
    }

    pub fn width(&self) -> usize {
        self.width
    }

    pub fn height(&self) -> usize {
        self.height
    }

    /// Whether the values are in device memory (until [`PairMap::values`] copies them).
    pub fn on_device(&self) -> bool {
        matches!(self.store, Store::Device { .. })
    }

    /// The values on the host: for a map in device memory, copied there at the first call
    /// (8 MB at 1080p: a reader that needs only a frame or the statistics should not ask).
    pub fn values(&self) -> Result<Arc<DistortionMap>, EngineError> {
        match &self.store {
            Store::Host(m) => Ok(m.clone()),
            Store::Device { values, host, .. } => {
                if let Some(m) = host.get() {
                    return Ok(m.clone());
                }
                let m = Arc::new(values.to_host().map_err(|e| {
                    EngineError::Cuda(format!("reading the {} map: {e}", self.kind.name()))
                })?);
                Ok(host.get_or_init(|| m).clone())
            }
        }
    }

    /// The statistics, past `threshold` counting into the area: of a map in device
    /// memory, those the device made (with the engine's threshold, which is the one the
    /// engine passes here); of one on the host, made now.
    pub fn stats(&self, threshold: f32) -> Stats {
        match &self.store {
            Store::Host(m) => m.stats(threshold, self.kind.worse_above()),
            Store::Device { stats, .. } => *stats,
        }
    }

    /// Checks a frame's rows for this map: `pitch` bytes each, at least a row of `style`'s
    /// pixels and aligned for them, `len` bytes in all holding `height` of them.
    fn check(&self, style: MapStyle, pitch: usize, len: usize) -> Result<(), EngineError> {
        let row = self.width * style.pixel_bytes();
        if pitch < row
            || pitch > u32::MAX as usize
            || !pitch.is_multiple_of(style.pixel_bytes())
            || len < pitch * self.height
        {
            return Err(EngineError::Unsupported(format!(
                "a {}x{} {} map frame needs rows of at least {row} bytes, a multiple of {}, \
                 and {} rows: given rows of {pitch} bytes in {len}",
                self.width,
                self.height,
                self.kind.name(),
                style.pixel_bytes(),
                self.height
            )));
        }
        Ok(())
    }

    /// Renders the map in `style` into `out`, rows `stride` bytes apart (`peak`: the
    /// reference's largest sample value, for the squared error's scale). A map in device
    /// memory is rendered there and copied once; one on the host, on the host.
    pub fn render(
        &self,
        style: MapStyle,
        peak: f64,
        out: &mut [u8],
        stride: usize,
    ) -> Result<(), EngineError> {
        self.check(style, stride, out.len())?;
        match &self.store {
            Store::Host(m) => {
                render::rows(self.kind, style, &m.values, m.width, peak, out, stride);
                Ok(())
            }
            Store::Device { values, .. } => values
                .render_host(self.kind, style, peak, out, stride)
                .map_err(|e| {
                    EngineError::Cuda(format!("rendering the {} map: {e}", self.kind.name()))
                }),
        }
    }

    /// Renders the map in `style` into device memory at `out` of CUDA context `context`
    /// (a `CUcontext`), rows `pitch` bytes apart, `len` bytes in all, and waits for it.
    /// `Ok(false)` when the map is not in device memory of that context: render it with
    /// [`PairMap::render`] into the host's view of the memory instead.
    ///
    /// # Safety
    /// `out` must be `len` bytes of device memory of `context` that nothing else uses
    /// until this returns.
    pub unsafe fn render_device(
        &self,
        style: MapStyle,
        peak: f64,
        out: u64,
        pitch: usize,
        len: usize,
        context: usize,
    ) -> Result<bool, EngineError> {
        let Store::Device { values, .. } = &self.store else {
            return Ok(false);
        };
        self.check(style, pitch, len)?;
        if !out.is_multiple_of(style.pixel_bytes() as u64) {
            return Err(EngineError::Unsupported(format!(
                "a {} map frame at device address {out:#x}, not aligned to its {}-byte pixels",
                self.kind.name(),
                style.pixel_bytes()
            )));
        }
        // SAFETY: `out` holds the rows (checked above, the memory by the caller).
        unsafe { values.render_device(self.kind, style, peak, out, pitch, context) }
            .map_err(|e| EngineError::Cuda(format!("rendering the {} map: {e}", self.kind.name())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A map on the host: its statistics from its values, frames drawn on the host, rows too
    /// short or too few refused (never written past), and no device drawing.
    #[test]
    fn a_host_map_draws_checks_and_declines_the_device() {
        let m = PairMap::on_host(
            MapKind::Butteraugli,
            DistortionMap {
                width: 3,
                height: 2,
                values: vec![0.0, 2.0, 8.0, 1.0, 8.0, 0.5],
            },
        );
        assert!(!m.on_device());
        let s = m.stats(1.0);
        assert_eq!((s.worst, s.worst_x, s.worst_y), (8.0, 2, 0));
        assert!((s.area - 3.0 / 6.0).abs() < 1e-12);
        let mut out = vec![0u8; 2 * 16];
        m.render(MapStyle::Heat, 255.0, &mut out, 16).unwrap();
        assert_eq!(
            &out[8..12],
            &[255, 0, 0, 255],
            "8 is past the heat scale's top"
        );
        for (stride, len) in [(11, 32), (14, 32), (16, 31)] {
            let mut out = vec![0u8; len];
            assert!(
                m.render(MapStyle::Heat, 255.0, &mut out, stride).is_err(),
                "stride {stride}, {len} bytes"
            );
        }
        // SAFETY: declined before any address is used.
        let drawn = unsafe { m.render_device(MapStyle::Gray16, 255.0, 256, 8, 16, 0) };
        assert!(!drawn.unwrap());
        assert_eq!(m.values().unwrap().values[1], 2.0);
    }
}
