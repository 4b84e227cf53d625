//! CUDA backend: the same kernel crate compiled to PTX, each full-reference metric on a
//! stream of its own (a lane, `crate::metric::lane`; the no-reference metrics have one per
//! side), so that the metrics of a pair overlap on the device.
//!
//! Everything is allocated once per plan (pinned staging and device buffers for host
//! frames here, each metric's buffers in its own `cuda.rs`); a host frame pair costs two
//! host-to-device copies, then each metric queues its kernels and copies its sums back.
//!
//! Pairs can be in flight (the engine's `in_flight`, at most [`IN_FLIGHT`]): `submit`
//! uploads and queues a pair, every metric queuing its kernels and the copy of its results into a
//! pinned slot of that pair (`CudaMetric::queue`, the only call that is given the frames),
//! and `complete` reads the oldest pair's slots (`CudaMetric::read`), waiting for the
//! events recorded after them. The host never waits for the device while it queues, so its
//! work on one pair overlaps the device's work on the next, and host frames are uploaded
//! on a stream of their own, so that the next pair's uploads overlap the current pair's
//! kernels. (VMAF with the v1 models' side streams queues and reads a pair in one go when
//! it is read: its SpEED chroma keeps one pair's results.)

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaEvent, CudaSlice, CudaStream, DriverError, PinnedHostSlice};

use rayon::prelude::*;

use crate::color::ChromaUpsampling;
use crate::cuda::linear_light::LinearLight;
use crate::cuda::{DeviceMemory, Gpu, IN_FLIGHT, zeroed};
use crate::error::EngineError;
use crate::format::FrameLayout;
use crate::frame::{Frame, HostFrame, MAX_PLANES, PlanePtrs};
use crate::metric::Reference;
use crate::metric::lane::Laned;
use crate::metric::temporal::Held;
use crate::metric::temporal::Lineup;
use crate::metric::{Configured, CudaMetric};
use crate::metric_set::MetricSet;
use crate::plan::Plan;
use crate::schedule::{Backend, BackendKind};
use crate::scores::Scores;

fn cuda_err(what: &str) -> impl FnOnce(DriverError) -> EngineError + '_ {
    move |e| EngineError::Cuda(format!("{what}: {e}"))
}

/// Device pitches are multiples of this (coalesced row starts).
const PITCH_ALIGN: usize = 256;

/// A host frame's way to the device: pinned staging (cudarc's `PinnedHostSlice`,
/// write-combined), then one asynchronous copy, with one slot (staging and device buffer)
/// per pair in flight.
struct Upload {
    slots: Vec<(PinnedHostSlice<u8>, CudaSlice<u8>)>,
    /// The slot the next frame goes to.
    next: usize,
    /// Per plane: byte offset in both buffers, pitch, row bytes, rows.
    planes: Vec<(usize, usize, usize, usize)>,
}

impl Upload {
    fn new(
        ctx: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
        layout: &FrameLayout,
        depth: usize,
    ) -> Result<Upload, DriverError> {
        let mut planes = Vec::new();
        let mut total = 0;
        for p in 0..layout.format.n_planes() {
            let row = layout.min_row_bytes(p);
            let pitch = row.next_multiple_of(PITCH_ALIGN);
            let rows = layout.plane_rows(p) as usize;
            planes.push((total, pitch, row, rows));
            total += pitch * rows;
        }
        let mut slots = Vec::with_capacity(depth);
        for _ in 0..depth.max(1) {
            // SAFETY: the staging memory is written before every copy that reads it.
            let staging = unsafe {
                ctx.alloc_pinned_with_flags::<u8>(
                    total.max(1),
                    cudarc::driver::sys::CU_MEMHOSTALLOC_WRITECOMBINED,
                )
            }?;
            slots.push((staging, zeroed(stream, total.max(1))?));
        }
        Ok(Upload {
            slots,
            next: 0,
            planes,
        })
    }

    /// Copies the validated host frame into the next slot's staging and queues its upload.
    ///
    /// A slot is used again `depth` frames later, when the backend has completed the pair
    /// that used it: every metric's results for that pair were read, so the device no
    /// longer reads its frame and its upload from the staging memory is done.
    fn upload(
        &mut self,
        frame: &HostFrame,
        host: &PlanePtrs,
        stream: &Arc<CudaStream>,
    ) -> Result<PlanePtrs, DriverError> {
        let (staging, device) = &mut self.slots[self.next];
        let mut out = PlanePtrs::default();
        let staged = staging.as_mut_slice()?;
        for (i, &(offset, pitch, row, rows)) in self.planes.iter().enumerate() {
            let src = frame.planes()[i];
            debug_assert_eq!(src.data.as_ptr() as u64, host.ptr[i]);
            // Rows in parallel: a single core cannot fill write-combined memory at PCIe speed.
            let dst = &mut staged[offset..offset + pitch * rows];
            dst.par_chunks_mut(pitch)
                .with_min_len(16)
                .enumerate()
                .for_each(|(y, line)| {
                    line[..row].copy_from_slice(&src.data[y * src.stride..][..row]);
                });
            out.ptr[i] = device.ptr_at(offset);
            out.pitch[i] = pitch as u32;
        }
        // The raw copy, not cudarc's `memcpy_htod`: that would wait for and record the
        // staging's event per frame, and the slot's reuse is ordered already (above).
        // SAFETY: both buffers hold the same length; the staging was written above.
        unsafe {
            cudarc::driver::result::memcpy_htod_async(device.ptr(), &staged[..], stream.cu_stream())
        }?;
        self.next = (self.next + 1) % self.slots.len();
        Ok(out)
    }
}

pub(crate) struct CudaBackend {
    gpu: Gpu,
    /// Staging for host frames: the reference's (when the plan has one), the distorted's.
    uploads: [Option<Upload>; 2],
    /// Every requested metric's state, allocated for the plan.
    metrics: Lineup<dyn CudaMetric>,
    /// Pairs that may be in flight ([`IN_FLIGHT`] at most).
    depth: usize,
    /// Pairs submitted and not completed (their work queued, their results not read).
    in_flight: usize,
    /// Where host frames are uploaded: a stream of its own, so that a pair's uploads do
    /// not queue behind the kernels of the pairs before it.
    copies: Arc<CudaStream>,
    /// Recorded on `copies` after a pair's uploads (host frames), for the engine's stream
    /// and the metrics' own streams to wait for.
    uploaded: CudaEvent,
    /// The frames' linear light, converted once per pair on the engine's stream when two
    /// metrics read it with the same chroma upsampling (Butteraugli and SSIMULACRA2).
    linear: Option<(ChromaUpsampling, Arc<LinearLight>)>,
    /// Counted among the engines of its device ([`crate::devices`]) while it lives.
    _registered: crate::devices::Registered,
    /// Set when running in a context lent by the caller; last, so it goes after the rest.
    _external: Option<crate::cuda::ExternalGuard>,
}

impl CudaBackend {
    pub(crate) fn new(
        device_id: u32,
        plan: &Plan,
        set: MetricSet,
        configured: &[Configured],
        depth: usize,
    ) -> Result<CudaBackend, EngineError> {
        Self::on_context(open_context(device_id)?, plan, set, configured, depth)
    }

    /// Runs in a context owned by the caller (e.g. the one upstream decoded into).
    pub(crate) fn on_external(
        ext: crate::cuda::ExternalContext,
        plan: &Plan,
        set: MetricSet,
        configured: &[Configured],
        depth: usize,
    ) -> Result<CudaBackend, EngineError> {
        let ctx = crate::cuda::wrap_external(&ext)?;
        let mut backend = Self::on_context(ctx.clone(), plan, set, configured, depth)?;
        backend._external = Some(crate::cuda::ExternalGuard::new(ctx, ext));
        Ok(backend)
    }

    fn on_context(
        ctx: Arc<CudaContext>,
        plan: &Plan,
        set: MetricSet,
        configured: &[Configured],
        depth: usize,
    ) -> Result<CudaBackend, EngineError> {
        let depth = depth.clamp(1, IN_FLIGHT);
        let setup = || -> Result<CudaBackend, DriverError> {
            let stream = ctx.new_stream()?;
            let copies = ctx.new_stream()?;
            let kernels = crate::cuda::kernels(&ctx)?;
            let uploads = [
                match plan.has_reference {
                    true => Some(Upload::new(&ctx, &stream, &plan.reference, depth)?),
                    false => None,
                },
                Some(Upload::new(&ctx, &stream, &plan.distorted, depth)?),
            ];
            let gpu = Gpu {
                ctx: ctx.clone(),
                stream,
                kernels,
            };
            // Linear light once per pair for the entries that read it, when two or more
            // read it with the same upsampling.
            let wants: Vec<Option<ChromaUpsampling>> = configured
                .iter()
                .map(|c| c.entry.linear_light.and_then(|f| f(&c.setup(plan, set))))
                .collect();
            let linear = match shared_linear_light(&wants) {
                Some(u) if plan.has_reference => {
                    let (w, h) = (plan.reference.width, plan.reference.height);
                    Some((u, LinearLight::new(&gpu, w, h, depth)?))
                }
                _ => None,
            };
            let mut metrics = Vec::new();
            for (c, want) in configured.iter().zip(&wants) {
                let mut setup = c.setup(plan, set);
                setup.in_flight = depth;
                setup.linear_light = match (&linear, want) {
                    (Some((u, light)), Some(w)) if u == w => Some(light),
                    _ => None,
                };
                // Each full-reference metric on a lane of its own, so that the metrics of a
                // pair overlap on the device, and two taking pairs in turn for one whose
                // pairs are independent (crate::metric::lane); the no-reference ones run
                // on lanes of their own per side already.
                let made = match c.entry.reference {
                    Reference::None => (c.entry.cuda)(&gpu, &setup)?,
                    _ => Laned::make(&gpu, depth, |lane| (c.entry.cuda)(lane, &setup))?,
                };
                if let Some(m) = made {
                    metrics.push(m);
                }
            }
            if let Some(kind) = plan.map {
                // The maps made from the frames come from their kernels, on a lane of their
                // own as a full-reference metric (it waits for the uploads); the others from
                // their metrics' kernels (Butteraugli's, SSIMULACRA2's, ColorVideoVDP's).
                let map = Laned::make(&gpu, depth, |lane| {
                    if !kind.made_from_frames() {
                        return Ok(None);
                    }
                    let m = crate::map::cuda::MapCuda::new(lane, plan, kind)?;
                    Ok(Some(Box::new(m) as Box<dyn CudaMetric>))
                })?;
                metrics.extend(map);
            }
            let metrics = Lineup::new(metrics);
            gpu.stream.synchronize()?;
            Ok(CudaBackend {
                gpu,
                uploads,
                metrics,
                depth,
                in_flight: 0,
                copies,
                uploaded: ctx.new_event(None)?,
                linear,
                _registered: crate::devices::Registered::new(ctx.ordinal()),
                _external: None,
            })
        };
        setup().map_err(cuda_err("setting up the CUDA backend"))
    }

    /// Where the kernels read a validated frame (`checked`, from [`CudaBackend::validate`]):
    /// a host frame is uploaded to input `index`'s staging (0 reference, 1 distorted), a
    /// device frame is read in place.
    fn device_planes(
        &mut self,
        frame: &Frame,
        checked: PlanePtrs,
        index: usize,
    ) -> Result<PlanePtrs, EngineError> {
        match frame {
            Frame::Host(f) => self.uploads[index]
                .as_mut()
                .expect("a staging buffer for each input of the plan")
                .upload(f, &checked, &self.copies)
                .map_err(cuda_err("uploading a frame")),
            Frame::Device(_) => Ok(checked),
        }
    }

    /// Validates a frame against its layout, before anything is uploaded or queued (an
    /// invalid frame leaves the pairs in flight as they were).
    fn validate(frame: &Frame, layout: &FrameLayout, what: &str) -> Result<PlanePtrs, EngineError> {
        match frame {
            Frame::Host(f) => f.validate(layout, what),
            Frame::Device(f) => f.validate(layout, what),
        }
    }
}

impl Backend for CudaBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cuda
    }

    fn depth(&self) -> usize {
        self.depth
    }

    fn submit(
        &mut self,
        plan: &Plan,
        reference: &Frame,
        distorted: &Frame,
    ) -> Result<(), EngineError> {
        if self.in_flight >= self.depth {
            return Err(EngineError::Unsupported(format!(
                "{} pairs are in flight already; complete one first",
                self.in_flight
            )));
        }
        self.gpu
            .ctx
            .bind_to_thread()
            .map_err(cuda_err("binding the CUDA context"))?;
        let checked_d = Self::validate(distorted, &plan.distorted, "distorted")?;
        let checked_r = match plan.has_reference {
            true => Some(Self::validate(reference, &plan.reference, "reference")?),
            false => None,
        };
        let d = self.device_planes(distorted, checked_d, 1)?;
        // One input alone: its frame stands for both (uploaded once); the no-reference
        // metrics measure only the distorted side.
        let r = match checked_r {
            Some(checked) => self.device_planes(reference, checked, 0)?,
            None => d,
        };
        let host = |f: &Frame| matches!(f, Frame::Host(_));
        let uploads = host(distorted) || (plan.has_reference && host(reference));
        if self.metrics.is_empty() {
            // Nothing waits for the uploads otherwise: surface their errors here.
            self.copies
                .synchronize()
                .map_err(cuda_err("uploading frames"))?;
        } else {
            let gpu = &self.gpu;
            let uploaded = if uploads {
                // Every stream that reads the frames starts after their uploads.
                self.uploaded
                    .record(&self.copies)
                    .and_then(|()| gpu.stream.wait(&self.uploaded))
                    .map_err(cuda_err("ordering the uploads"))?;
                Some(&self.uploaded)
            } else {
                None
            };
            if let Some((upsampling, light)) = &self.linear {
                let (rs, ds) = plan.color_sources(&r, &d, *upsampling);
                // SAFETY: the frames were validated against the plan's layouts (or are the
                // upload buffers), and stay valid until the pair is completed, after its
                // metrics' reads.
                if let Err(e) = unsafe { light.convert(gpu, [rs, ds]) } {
                    self.abandon();
                    return Err(cuda_err("converting the frames to linear light")(e));
                }
            }
            if let Err(e) = self.metrics.each(|m| m.queue(gpu, plan, &r, &d, uploaded)) {
                self.abandon();
                return Err(e);
            }
        }
        self.in_flight += 1;
        Ok(())
    }

    fn complete(
        &mut self,
        plan: &Plan,
        scores: &mut Scores,
        late: &mut Scores,
    ) -> Result<(), EngineError> {
        if self.in_flight == 0 {
            return Err(EngineError::Unsupported(
                "no pair was submitted to complete".into(),
            ));
        }
        self.in_flight -= 1;
        self.gpu
            .ctx
            .bind_to_thread()
            .map_err(cuda_err("binding the CUDA context"))?;
        let result = self
            .metrics
            .measure(scores, late, |m, out| m.read(plan, out));
        if result.is_err() {
            self.abandon();
        }
        result
    }

    fn in_flight(&self) -> usize {
        self.in_flight
    }

    fn abandon(&mut self) {
        // Metrics on their own streams (the no-reference ones) may still read the frames:
        // nothing reuses them before that work is done.
        let _ = self.gpu.ctx.synchronize();
        self.in_flight = 0;
        let _ = self.metrics.each(|m| {
            m.drop_queued();
            Ok(())
        });
    }

    fn lineup(&mut self) -> &mut dyn Held {
        &mut self.metrics
    }

    fn lag(&self) -> usize {
        self.metrics.lag()
    }
}

const _: () = assert!(MAX_PLANES >= 3);

/// The chroma upsampling with which two or more entries read the frames' linear light
/// (`wants`: each entry's [`crate::metric::Entry::linear_light`] for the plan), if any: the
/// backend then converts each pair once for those entries.
fn shared_linear_light(wants: &[Option<ChromaUpsampling>]) -> Option<ChromaUpsampling> {
    wants
        .iter()
        .flatten()
        .copied()
        .find(|u| wants.iter().filter(|w| **w == Some(*u)).count() >= 2)
}

/// The primary context of `device_id` (shared by every engine on that device), or why
/// there is none. Never panics, also where no CUDA driver is installed.
pub(crate) fn open_context(device_id: u32) -> Result<Arc<CudaContext>, EngineError> {
    // SAFETY: only tries to load the driver library.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(EngineError::CudaUnavailable(
            "the CUDA driver library (libcuda.so) was not found".into(),
        ));
    }
    let open = || -> Result<Arc<CudaContext>, String> {
        let count =
            CudaContext::device_count().map_err(|e| format!("cannot query CUDA devices: {e}"))?;
        if device_id as i64 >= count as i64 {
            return Err(format!(
                "device-id {device_id} does not exist ({count} CUDA device(s) found)"
            ));
        }
        CudaContext::new(device_id as usize)
            .map(crate::cuda::untracked)
            .map_err(|e| format!("cannot open CUDA device {device_id}: {e}"))
    };
    // cudarc panics on missing driver symbols; keep that inside the engine.
    std::panic::catch_unwind(open)
        .unwrap_or_else(|_| Err("the CUDA driver is unusable (missing symbols?)".into()))
        .map_err(EngineError::CudaUnavailable)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ChromaUpsampling::{CatmullRom, Nearest};

    #[test]
    fn linear_light_is_shared_by_two_entries_with_the_same_upsampling() {
        assert_eq!(
            shared_linear_light(&[Some(CatmullRom), None, Some(CatmullRom)]),
            Some(CatmullRom)
        );
        assert_eq!(
            shared_linear_light(&[Some(Nearest), Some(CatmullRom), Some(Nearest)]),
            Some(Nearest)
        );
        assert_eq!(
            shared_linear_light(&[Some(CatmullRom), Some(Nearest)]),
            None
        );
        assert_eq!(shared_linear_light(&[Some(Nearest), None]), None);
        assert_eq!(shared_linear_light(&[None, None, None]), None);
    }
}
