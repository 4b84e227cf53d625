//! An engine in a CUDA context owned by the caller (what the element does with GStreamer's
//! `GstCudaContext`): frames allocated in that context, alone or mixed with host frames, give
//! the CPU backend's scores; the context is never destroyed by the engine and its kernel module
//! is forgotten once the last engine in it goes. Needs a GPU: run with `--ignored` there.

use std::sync::Arc;

use cudarc::driver::{CudaContext, DevicePtr};
use gpumetrics_engine::cuda::ExternalContext;
use gpumetrics_engine::{
    BackendChoice, DeviceFrame, Engine, EngineConfig, Frame, FrameLayout, HostFrame, PixelFormat,
    Plane,
};

const W: u32 = 1920;
const H: u32 = 1080;

/// NV12 noise with padded pitches: (bytes, plane offsets, pitches).
fn nv12(seed: u64) -> (Vec<u8>, [usize; 2], [usize; 2]) {
    let pitch = W as usize + 64;
    let luma = pitch * H as usize;
    let mut s = seed | 1;
    let data = (0..luma + pitch * H as usize / 2)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 56) as u8
        })
        .collect();
    (data, [0, luma], [pitch, pitch])
}

fn host(f: &(Vec<u8>, [usize; 2], [usize; 2])) -> Frame<'_> {
    Frame::Host(HostFrame::new(&[
        Plane {
            data: &f.0[f.1[0]..],
            stride: f.2[0],
        },
        Plane {
            data: &f.0[f.1[1]..],
            stride: f.2[1],
        },
    ]))
}

fn device(base: u64, f: &(Vec<u8>, [usize; 2], [usize; 2])) -> Frame<'static> {
    let mut d = DeviceFrame {
        n_planes: 2,
        ..Default::default()
    };
    for i in 0..2 {
        d.ptrs[i] = base + f.1[i] as u64;
        d.pitches[i] = f.2[i];
    }
    Frame::Device(d)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn external_context_reads_its_device_frames_alone_and_mixed_with_host_frames() {
    let layout = FrameLayout {
        format: PixelFormat::Nv12,
        width: W,
        height: H,
    };
    let (r, d) = (nv12(3), nv12(5));
    let cfg = |backend| EngineConfig {
        backend,
        ..Default::default()
    };
    let expected = Engine::new(&cfg(BackendChoice::Cpu), layout, layout)
        .unwrap()
        .compare(&host(&r), &host(&d))
        .unwrap();

    // A non-primary context, as GStreamer 1.22 creates them (cuCtxCreate); it owns the frames.
    let ctx = CudaContext::new_non_primary(0, 0).unwrap();
    let stream = ctx.default_stream();
    let (rb, db) = (
        stream.clone_htod(&r.0).unwrap(),
        stream.clone_htod(&d.0).unwrap(),
    );
    stream.synchronize().unwrap();
    let (rp, _g1) = rb.device_ptr(&stream);
    let (dp, _g2) = db.device_ptr(&stream);

    let owner = Arc::new(());
    let ext = || {
        // SAFETY: `ctx` outlives every engine below.
        unsafe { ExternalContext::new(ctx.cu_ctx() as usize, 0, Box::new(owner.clone())) }
    };
    let mut a = Engine::new_on_context(&cfg(BackendChoice::Cuda), ext(), layout, layout).unwrap();
    let mut b = Engine::new_on_context(&cfg(BackendChoice::Cuda), ext(), layout, layout).unwrap();
    assert_eq!(a.backend_name(), "cuda");
    for (what, got) in [
        ("device/device", a.compare(&device(rp, &r), &device(dp, &d))),
        ("device/host", a.compare(&device(rp, &r), &host(&d))),
        ("host/device", b.compare(&host(&r), &device(dp, &d))),
        ("host/host", b.compare(&host(&r), &host(&d))),
    ] {
        assert_eq!(got.unwrap(), expected, "{what}");
    }
    drop((a, b));
    assert_eq!(Arc::strong_count(&owner), 1, "keep-alives released");
    // The module loaded in the context went with the last engine; the context lives on.
    assert!(!gpumetrics_engine::cuda::unload(&ctx));
    ctx.bind_to_thread().unwrap();
    stream.synchronize().unwrap();
    assert_eq!(stream.clone_dtoh(&rb).unwrap(), r.0);
}
