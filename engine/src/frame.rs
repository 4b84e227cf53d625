//! Frames as the engine sees them: planes with their strides, in host or device memory.

use crate::error::EngineError;
use crate::format::FrameLayout;

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
}

/// A frame already in device memory (e.g. from an NVDEC decoder): device addresses and
/// pitches of its planes, valid in the engine's CUDA context.
#[derive(Clone, Copy, Debug, Default)]
pub struct DeviceFrame {
    pub ptrs: [u64; MAX_PLANES],
    pub pitches: [usize; MAX_PLANES],
    pub n_planes: usize,
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
