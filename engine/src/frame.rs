//! Frames as the engine sees them: planes with their strides, in host or device memory.

use crate::error::EngineError;
use crate::format::{ChannelSpec, FrameLayout};
use gpumetrics_kernels::channel::Channel;

pub const MAX_PLANES: usize = 4;

/// One plane in host memory. `data` starts at the plane's first byte.
#[derive(Clone, Copy, Debug, Default)]
pub struct Plane<'a> {
    pub data: &'a [u8],
    /// Bytes between rows.
    pub stride: usize,
}

/// A frame in host memory.
#[derive(Clone, Copy, Debug, Default)]
pub struct HostFrame<'a> {
    planes: [Plane<'a>; MAX_PLANES],
    n_planes: usize,
}

impl<'a> HostFrame<'a> {
    /// Extra planes beyond [`MAX_PLANES`] are ignored (no accepted format has more).
    pub fn new(planes: &[Plane<'a>]) -> Self {
        let mut f = HostFrame::default();
        for (dst, src) in f.planes.iter_mut().zip(planes) {
            *dst = *src;
        }
        f.n_planes = planes.len().min(MAX_PLANES);
        f
    }

    pub fn planes(&self) -> &[Plane<'a>] {
        &self.planes[..self.n_planes]
    }

    /// The frame inside one mapping of `data.len()` bytes, at the stated plane offsets and
    /// strides, after [`PlaneOffsets::check`]: each plane's slice holds exactly the bytes the
    /// layout reads, so no later loop can reach outside the mapping.
    pub fn from_mapped(
        data: &'a [u8],
        layout: &FrameLayout,
        planes: &PlaneOffsets,
        what: &str,
    ) -> Result<Self, EngineError> {
        let spans = planes.check(layout, data.len(), what)?;
        let mut f = HostFrame {
            n_planes: layout.format.n_planes(),
            ..Default::default()
        };
        for (dst, (offset, stride, len)) in f.planes.iter_mut().zip(spans).take(f.n_planes) {
            *dst = Plane {
                data: &data[offset..offset + len],
                stride,
            };
        }
        Ok(f)
    }
}

/// A frame already in device memory (e.g. from an NVDEC decoder): device addresses and
/// pitches of its planes, valid in the engine's CUDA context.
#[derive(Clone, Copy, Debug, Default)]
pub struct DeviceFrame {
    pub ptrs: [u64; MAX_PLANES],
    pub pitches: [usize; MAX_PLANES],
    pub n_planes: usize,
}

/// Where the planes of a mapped frame lie, as the producer states them (a `GstVideoMeta`, or
/// the caps' default layout): byte offsets from the start of the mapping and row strides.
/// Nothing here is trusted until [`PlaneOffsets::check`] has compared it with the mapped size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlaneOffsets {
    pub offsets: [usize; MAX_PLANES],
    /// Signed, as GStreamer stores them; negative strides (bottom-up rows) are refused.
    pub strides: [i64; MAX_PLANES],
    pub n_planes: usize,
}

impl PlaneOffsets {
    pub fn new(offsets: &[usize], strides: &[i64]) -> Self {
        let mut p = PlaneOffsets {
            n_planes: offsets.len().min(strides.len()).min(MAX_PLANES),
            ..Default::default()
        };
        p.offsets[..p.n_planes].copy_from_slice(&offsets[..p.n_planes]);
        p.strides[..p.n_planes].copy_from_slice(&strides[..p.n_planes]);
        p
    }

    /// Checks every plane the layout reads against a mapping of `size` bytes: its last byte,
    /// `offset + (rows - 1) * stride + row bytes`, must lie inside, with a positive stride of at
    /// least the row bytes (and below 2^31, the kernels' pitch type). Returns each plane's
    /// (offset, stride, bytes read). `what` names the input in the error (e.g. "dist_sink").
    pub fn check(
        &self,
        layout: &FrameLayout,
        size: usize,
        what: &str,
    ) -> Result<[(usize, usize, usize); MAX_PLANES], EngineError> {
        let n = layout.format.n_planes();
        let fmt = layout.format.name();
        let (w, h) = (layout.width, layout.height);
        if self.n_planes < n {
            return Err(EngineError::InvalidFrame(format!(
                "{what}: the buffer describes {} planes, but {w}x{h} {fmt} has {n}",
                self.n_planes
            )));
        }
        let mut out = [(0, 0, 0); MAX_PLANES];
        for (i, slot) in out.iter_mut().enumerate().take(n) {
            let (offset, stride) = (self.offsets[i], self.strides[i]);
            let row = layout.min_row_bytes(i);
            let rows = layout.plane_rows(i) as usize;
            let bad = |why: String| {
                EngineError::InvalidFrame(format!(
                    "{what}: plane {i} of the {w}x{h} {fmt} buffer has offset {offset} and stride \
                     {stride}: {why}; the buffer or its video meta does not match the caps"
                ))
            };
            if stride <= 0 {
                return Err(bad("only positive strides are supported".into()));
            }
            let stride = usize::try_from(stride).map_err(|_| bad("stride too large".into()))?;
            if stride < row || stride > i32::MAX as usize {
                return Err(bad(format!("the stride must be in {row}..=2147483647")));
            }
            let need = rows
                .checked_sub(1)
                .and_then(|r| r.checked_mul(stride))
                .and_then(|b| b.checked_add(row))
                .filter(|_| rows > 0 && row > 0)
                .ok_or_else(|| bad(format!("{rows} rows of {row} bytes cannot be read")))?;
            match offset.checked_add(need) {
                Some(end) if end <= size => *slot = (offset, stride, need),
                _ => {
                    return Err(bad(format!(
                        "its {rows} rows end at byte {}, past the {size} bytes mapped",
                        offset as u128 + need as u128
                    )));
                }
            }
        }
        Ok(out)
    }
}

/// A frame handed to [`crate::Engine::compare`].
#[derive(Clone, Copy, Debug)]
pub enum Frame<'a> {
    Host(HostFrame<'a>),
    Device(DeviceFrame),
}

/// Plane base addresses and pitches, host or device: what kernels receive.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PlanePtrs {
    pub ptr: [u64; MAX_PLANES],
    pub pitch: [u32; MAX_PLANES],
}

impl PlanePtrs {
    /// Kernel-side description of channel `c` of these planes (samples up to `max`).
    pub(crate) fn channel(&self, c: &ChannelSpec, max: u32) -> Channel {
        Channel {
            ptr: self.ptr[c.plane] + c.offset as u64,
            pitch: self.pitch[c.plane],
            step: c.step,
            sample_bytes: c.sample_bytes,
            shift: c.shift,
            max,
            _pad: 0,
        }
    }
}

impl HostFrame<'_> {
    /// Checks that every plane holds the rows the layout needs, so that the raw-pointer
    /// kernels that follow never read out of bounds.
    pub(crate) fn validate(
        &self,
        layout: &FrameLayout,
        what: &str,
    ) -> Result<PlanePtrs, EngineError> {
        let n = layout.format.n_planes();
        if self.n_planes < n {
            return Err(EngineError::InvalidFrame(format!(
                "{what} frame has {} planes, {} needs {n}",
                self.n_planes,
                layout.format.name()
            )));
        }
        let mut out = PlanePtrs::default();
        for (i, p) in self.planes[..n].iter().enumerate() {
            let row = layout.min_row_bytes(i);
            let rows = layout.plane_rows(i) as usize;
            let need = (rows - 1) * p.stride + row;
            if p.stride < row || p.data.len() < need || p.stride > u32::MAX as usize {
                return Err(EngineError::InvalidFrame(format!(
                    "{what} frame plane {i} has {} bytes with stride {}, but {}x{} {} needs \
                     {need} bytes with stride >= {row}",
                    p.data.len(),
                    p.stride,
                    layout.width,
                    layout.height,
                    layout.format.name()
                )));
            }
            out.ptr[i] = p.data.as_ptr() as u64;
            out.pitch[i] = p.stride as u32;
        }
        Ok(out)
    }
}

impl DeviceFrame {
    /// The frame inside one device mapping at `base` of `size` bytes (e.g. a mapped
    /// GstCudaMemory), at the stated plane offsets and pitches, after
    /// [`PlaneOffsets::check`]: a kernel never reads past the allocation.
    pub fn from_mapped(
        base: u64,
        size: usize,
        layout: &FrameLayout,
        planes: &PlaneOffsets,
        what: &str,
    ) -> Result<Self, EngineError> {
        if base == 0 {
            return Err(EngineError::InvalidFrame(format!(
                "{what}: the device mapping has no address"
            )));
        }
        let spans = planes.check(layout, size, what)?;
        let mut f = DeviceFrame {
            n_planes: layout.format.n_planes(),
            ..Default::default()
        };
        for (i, (offset, stride, _)) in spans.into_iter().enumerate().take(f.n_planes) {
            f.ptrs[i] = base.checked_add(offset as u64).ok_or_else(|| {
                EngineError::InvalidFrame(format!("{what}: plane {i} lies past the address space"))
            })?;
            f.pitches[i] = stride;
        }
        Ok(f)
    }

    pub(crate) fn validate(
        &self,
        layout: &FrameLayout,
        what: &str,
    ) -> Result<PlanePtrs, EngineError> {
        let n = layout.format.n_planes();
        let mut out = PlanePtrs::default();
        for i in 0..n {
            if i >= self.n_planes || self.ptrs[i] == 0 || self.pitches[i] < layout.min_row_bytes(i)
            {
                return Err(EngineError::InvalidFrame(format!(
                    "{what} device frame plane {i} is missing or its pitch is too small for {}x{} {}",
                    layout.width,
                    layout.height,
                    layout.format.name()
                )));
            }
            out.ptr[i] = self.ptrs[i];
            out.pitch[i] = self.pitches[i] as u32;
        }
        Ok(out)
    }
}
