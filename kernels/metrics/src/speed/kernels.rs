//! The SpEED chroma kernels: one pair's four jobs (U and V of the reference and the
//! distorted, [`super::JOBS`]) per launch, `blockIdx.z` (or, for `speed_stats`, `blockIdx.x`)
//! the job. The plane kernels run one thread per output sample of [`super::load`],
//! [`super::resample`] and [`super::filter_vertical`] (`TILE_X`×`TILE_Y` blocks on a grid
//! covering the output); `speed_stats` runs one block per job through the rest of the
//! per-element steps, each output element computed by one thread in the CPU backend's order,
//! with block barriers between the steps. Every kernel writes disjoint outputs and sums
//! nothing across threads, so the values equal the host's.

#[cfg(target_arch = "nvptx64")]
use super::{
    ELEMS, Frames, SCALES, filter_horizontal, filter_vertical, linalg, load, resample, stats,
};
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

    /// Per job: the QR factorisation of the patch covariance (from `speed_stats`' entries)
    /// into the output's `p` and `r`, [`super::linalg::qr`]'s values: each step's reset,
    /// reflection and products one entry per thread (in shared memory), the reflection
    /// vector by thread 0. Launch `QR_THREADS` threads on grid.x = `JOBS`.
    pub unsafe fn speed_qr(f: Frames) => qr_body;

    /// Per job and SpEED block: the block's variance estimate from `speed_qr`'s factors
    /// (the solve of the block's values, [`super::linalg::solve_column`]) into the output's
    /// variances. Launch `SOLVE_THREADS` threads on grid (blocks / `SOLVE_THREADS` rounded
    /// up, `JOBS`).
    pub unsafe fn speed_solve(f: Frames) => solve_body;
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

/// Values `off..off + n` of the job's region of `len` values of the `f32` buffer at `base`.
///
/// # Safety
/// The buffer holds `JOBS · len` values, `off + n ≤ len`, and no thread writes them while
/// the slice lives.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn part<'a>(base: u64, job: usize, len: usize, off: usize, n: usize) -> &'a [f32] {
    unsafe { core::slice::from_raw_parts(at(base, job, len, off) as *const f32, n) }
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
        // Constant indices: a variable one would copy all of `f` to local memory per thread.
        let c = match job {
            0 => f.channels[0],
            1 => f.channels[1],
            2 => f.channels[2],
            _ => f.channels[3],
        };
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
    let op_at = |i: usize| at(f.out, job, out_len, f.out_op() + i);
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
    let op = unsafe { part(f.out, job, out_len, f.out_op(), op_len) };
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

/// Values of a 25×25 matrix.
#[cfg(target_arch = "nvptx64")]
const MATRIX: usize = ELEMS * ELEMS;

/// The body of `speed_qr`: [`linalg::qr`] with every entry of each step's reset, reflection
/// and products computed by its own thread, barriers between the steps.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn qr_body(f: Frames) {
    gpumetrics_device::shared!(static SPEED_QR_A: [f32; MATRIX]);
    gpumetrics_device::shared!(static SPEED_QR_Z: [f32; MATRIX]);
    gpumetrics_device::shared!(static SPEED_QR_P: [f32; MATRIX]);
    gpumetrics_device::shared!(static SPEED_QR_H: [f32; MATRIX]);
    gpumetrics_device::shared!(static SPEED_QR_V: [f32; ELEMS]);
    let job = dev::block_idx_x() as usize;
    if job >= super::JOBS {
        return;
    }
    let t = dev::thread_idx_x() as usize;
    let n = ELEMS;
    let mine = t < MATRIX;
    let (i, j) = (t / n, t % n);
    let out_len = f.out_len();
    let pairs = unsafe { part(f.out, job, out_len, 0, stats::PAIRS) };
    if mine {
        let a = pairs[stats::pair_index(i, j)];
        unsafe {
            SPEED_QR_A.write(t, a);
            SPEED_QR_Z.write(t, a);
            SPEED_QR_P.write(t, if i == j { 1.0 } else { 0.0 });
        }
    }
    unsafe { dev::sync_threads() };
    let matrix = |m: *mut f32| unsafe { core::slice::from_raw_parts(m as *const f32, MATRIX) };
    for k in 0..n - 1 {
        if mine {
            let z = unsafe { SPEED_QR_Z.read(t) };
            unsafe { SPEED_QR_Z.write(t, linalg::qr_reset(z, i, j, k)) };
        }
        unsafe { dev::sync_threads() };
        if t == 0 {
            let v = unsafe { core::slice::from_raw_parts_mut(SPEED_QR_V.as_mut_ptr(), n) };
            for (r, e) in v.iter_mut().enumerate() {
                *e = unsafe { SPEED_QR_Z.read(r * n + k) };
            }
            linalg::qr_vector(v, k, unsafe { SPEED_QR_A.read(k * n + k) });
        }
        unsafe { dev::sync_threads() };
        if mine {
            let v =
                unsafe { core::slice::from_raw_parts(SPEED_QR_V.as_mut_ptr() as *const f32, n) };
            unsafe { SPEED_QR_H.write(t, linalg::qr_reflection(v, i, j)) };
        }
        unsafe { dev::sync_threads() };
        let (mut z, mut p) = (0.0f32, 0.0f32);
        if mine {
            let h = matrix(SPEED_QR_H.as_mut_ptr());
            z = linalg::matmul_entry(h, matrix(SPEED_QR_Z.as_mut_ptr()), n, i, j);
            p = linalg::matmul_entry(h, matrix(SPEED_QR_P.as_mut_ptr()), n, i, j);
        }
        unsafe { dev::sync_threads() };
        if mine {
            unsafe {
                SPEED_QR_Z.write(t, z);
                SPEED_QR_P.write(t, p);
            }
        }
        unsafe { dev::sync_threads() };
    }
    if mine {
        let p = matrix(SPEED_QR_P.as_mut_ptr());
        let r = linalg::matmul_entry(p, matrix(SPEED_QR_A.as_mut_ptr()), n, i, j);
        unsafe {
            *at(f.out, job, out_len, f.out_p() + t) = p[t];
            *at(f.out, job, out_len, f.out_r() + t) = r;
        }
    }
}

/// The body of `speed_solve`: [`stats::block_values`], [`linalg::solve_column`] and
/// [`stats::block_variance`] of one block, as the CPU backend runs them.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn solve_body(f: Frames) {
    let b = dev::global_idx_x() as usize;
    let job = dev::block_idx_y() as usize;
    if b >= f.blocks() || job >= super::JOBS {
        return;
    }
    let d = f.dims();
    let out_len = f.out_len();
    let op = unsafe { part(f.out, job, out_len, f.out_op(), f.op_len()) };
    let p = unsafe { part(f.out, job, out_len, f.out_p(), MATRIX) };
    let r = unsafe { part(f.out, job, out_len, f.out_r(), MATRIX) };
    let mut y = [0.0f32; ELEMS];
    let mut x = [0.0f32; ELEMS];
    let mut work = [0.0f32; ELEMS];
    stats::block_values(op, d.op_width, &d, b, &mut y);
    linalg::solve_column(p, r, ELEMS, &y, &mut x, &mut work);
    let s = stats::block_variance(&x, &y, ELEMS);
    unsafe { *at(f.out, job, out_len, f.out_s() + b) = s };
}
