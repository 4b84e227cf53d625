//! The SpEED chroma kernels: one pair's four jobs (U and V of the reference and the
//! distorted, [`super::JOBS`]) per launch, `blockIdx.z` (or, for `speed_stats`, `blockIdx.x`)
//! the job. The plane kernels run one thread per output sample of [`super::load`],
//! [`super::resample`] and [`super::filter_vertical`] (`TILE_X`×`TILE_Y` blocks on a grid
//! covering the output); `speed_stats` runs one block per job through the rest of the
//! per-element steps, each output element computed by one thread in the CPU backend's order,
//! with block barriers between the steps. Every kernel writes disjoint outputs and sums
//! nothing across threads, so the values equal the host's.

#[cfg(target_arch = "nvptx64")]
use super::{Frames, SCALES, filter_horizontal, filter_vertical, load, resample, stats};
#[cfg(target_arch = "nvptx64")]
use gpumetrics_device as dev;

gpumetrics_device::kernel! {
    /// `plane[job][y·width + x]` = the job's chroma sample (x, y) on libvmaf's float scale.
    /// Launch `TILE_X`×`TILE_Y` threads on a grid covering width × height, grid.z = `JOBS`.
    pub unsafe fn speed_load(f: Frames) => load_body;

    /// `scaled[job][y·scaled_width + x]` = the resampling of the job's plane at (x, y).
    /// Launch `TILE_X`×`TILE_Y` threads on a grid covering the scaled size, grid.z = `JOBS`;
    /// only when `f.resampled`.
    pub unsafe fn speed_resample(f: Frames) => resample_body;

    /// `rows[job][oy·scaled_width + x]` = the anti-alias filter's vertical pass at (x, 16·oy)
    /// of the (resampled) plane. Launch `TILE_X`×`TILE_Y` threads on a grid covering
    /// scaled_width × op_height, grid.z = `JOBS`.
    pub unsafe fn speed_antialias(f: Frames) => antialias_body;

    /// Per job: the reduced plane (the anti-alias filter's horizontal pass at every 16th
    /// column of `rows`), less its local mean, into the output after the covariance entries;
    /// then the patch means (shared memory) and the covariance entries, one per thread.
    /// Launch `STATS_THREADS` threads on grid.x = `JOBS`.
    pub unsafe fn speed_stats(f: Frames) => stats_body;
}

/// The job's region of the `f32` buffer at `base`, `len` values.
///
/// # Safety
/// The buffer holds `JOBS · len` values.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn region<'a>(base: u64, job: usize, len: usize) -> &'a [f32] {
    unsafe { core::slice::from_raw_parts((base as *const f32).add(job * len), len) }
}

/// A pointer to value `i` of the job's region.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn at(base: u64, job: usize, len: usize, i: usize) -> *mut f32 {
    (base as *mut f32).wrapping_add(job * len + i)
}

/// The anti-alias taps and the local filter's taps.
///
/// # Safety
/// `f.taps` holds `aa_len + local_len` values.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn taps<'a>(f: &Frames) -> (&'a [f32], &'a [f32]) {
    let all = unsafe {
        core::slice::from_raw_parts(f.taps as *const f32, (f.aa_len + f.local_len) as usize)
    };
    all.split_at(f.aa_len as usize)
}

/// The body of `speed_load`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn load_body(f: Frames) {
    let (x, y) = (dev::global_idx_x(), dev::global_idx_y());
    let job = dev::block_idx_z() as usize;
    if x < f.width && y < f.height && job < super::JOBS {
        let c = f.channels[job];
        let i = y as usize * f.width as usize + x as usize;
        unsafe { *at(f.plane, job, f.plane_len(), i) = load(&c, x, y, f.max) };
    }
}

/// The body of `speed_resample`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn resample_body(f: Frames) {
    let (x, y) = (dev::global_idx_x() as usize, dev::global_idx_y() as usize);
    let job = dev::block_idx_z() as usize;
    let d = f.dims();
    if x < d.scaled_width && y < d.scaled_height && job < super::JOBS {
        let src = unsafe { region(f.plane, job, f.plane_len()) };
        let v = resample(
            f.resample(),
            src,
            d.width,
            (d.width, d.height),
            (d.scaled_width, d.scaled_height),
            x,
            y,
        );
        unsafe { *at(f.scaled, job, f.scaled_len(), y * d.scaled_width + x) = v };
    }
}

/// The body of `speed_antialias`.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn antialias_body(f: Frames) {
    let (x, oy) = (dev::global_idx_x() as usize, dev::global_idx_y() as usize);
    let job = dev::block_idx_z() as usize;
    let d = f.dims();
    if x < d.scaled_width && oy < d.op_height && job < super::JOBS {
        let src = if d.resampled {
            unsafe { region(f.scaled, job, f.scaled_len()) }
        } else {
            unsafe { region(f.plane, job, f.plane_len()) }
        };
        let (aa, _) = unsafe { taps(&f) };
        let step = 1usize << SCALES;
        let v = filter_vertical(aa, src, d.scaled_width, d.scaled_height, x, oy * step);
        unsafe { *at(f.rows, job, f.rows_len(), oy * d.scaled_width + x) = v };
    }
}

/// The body of `speed_stats`: the CPU backend's steps 3 (horizontal half) to 5 for one job,
/// each a loop of the block's threads over the step's outputs, barriers between them.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn stats_body(f: Frames) {
    gpumetrics_device::shared!(static SPEED_MEANS: [f32; super::ELEMS]);
    let job = dev::block_idx_x() as usize;
    if job >= super::JOBS {
        return;
    }
    let t = dev::thread_idx_x() as usize;
    let threads = dev::block_dim_x() as usize;
    let d = f.dims();
    let (ow, oh) = (d.op_width, d.op_height);
    let (aa, local) = unsafe { taps(&f) };
    let (out_len, op_len) = (f.out_len(), f.op_len());
    let op_at = |i: usize| at(f.out, job, out_len, stats::PAIRS + i);
    let step = 1usize << SCALES;
    // The anti-alias filter's horizontal pass at every 16th column.
    let rows = unsafe { region(f.rows, job, f.rows_len()) };
    let mut i = t;
    while i < op_len {
        let (oy, ox) = (i / ow, i % ow);
        let row = &rows[oy * d.scaled_width..][..d.scaled_width];
        unsafe { *op_at(i) = filter_horizontal(aa, row, d.scaled_width, ox * step) };
        i += threads;
    }
    unsafe { dev::sync_threads() };
    // The local mean: vertical pass, then the horizontal pass subtracted.
    {
        // SAFETY: the job's reduced plane, written above (barrier), not written in this step.
        let op = unsafe { core::slice::from_raw_parts(op_at(0) as *const f32, op_len) };
        let mut i = t;
        while i < op_len {
            let v = filter_vertical(local, op, ow, oh, i % ow, i / ow);
            // SAFETY: value i of the job's region of `vertical` (op_len values).
            unsafe { *at(f.vertical, job, op_len, i) = v };
            i += threads;
        }
    }
    unsafe { dev::sync_threads() };
    let vertical = unsafe { region(f.vertical, job, op_len) };
    let mut i = t;
    while i < op_len {
        let (y, x) = (i / ow, i % ow);
        let m = filter_horizontal(local, &vertical[y * ow..][..ow], ow, x);
        unsafe { *op_at(i) -= m };
        i += threads;
    }
    unsafe { dev::sync_threads() };
    // Patch means, then the covariance entries.
    let op = unsafe { core::slice::from_raw_parts(op_at(0) as *const f32, op_len) };
    if t < super::ELEMS {
        let m = stats::patch_mean(op, ow, d.patch_span(), t / d.block, t % d.block);
        unsafe { SPEED_MEANS.write(t, m) };
    }
    unsafe { dev::sync_threads() };
    let means = unsafe { core::slice::from_raw_parts(SPEED_MEANS.as_mut_ptr(), super::ELEMS) };
    let mut e = t;
    while e < stats::PAIRS {
        let (x, y) = stats::pair(e);
        let v = stats::patch_covariance(op, ow, &d, means, x, y);
        unsafe { *at(f.out, job, out_len, e) = v };
        e += threads;
    }
}
