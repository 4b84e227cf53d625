//! The map kernels: thin `kernel!` declarations over device-only bodies that call the
//! per-sample functions of the module (which the host's maps call too).

#[cfg(target_arch = "nvptx64")]
use super::*;
#[cfg(target_arch = "nvptx64")]
use gpumetrics_device as dev;
#[cfg(target_arch = "nvptx64")]
use gpumetrics_device::math::fma;

gpumetrics_device::kernel! {
    /// The squared error of channel `c`, joined to `o` (`MapOut::put`). Block (`BLOCK_X`,
    /// `BLOCK_Y`), a thread per pixel.
    pub unsafe fn map_squared_error(c: MapChannel, o: MapOut) => squared;

    /// The SSIM map of channel `c`, joined to `o`: per block a tile of `BLOCK_X`×`BLOCK_Y`
    /// pixels; the five moments filtered down the columns (SciPy's `reflect` edges) for
    /// the tile's columns and the filter's reach either side, into shared memory, then
    /// along the rows and SSIM per pixel. Block (`BLOCK_X`, `BLOCK_Y`), grid over the map.
    pub unsafe fn map_ssim(c: MapChannel, f: SsimFilter, o: MapOut) => ssim_tile;

    /// The statistics of the `len` values at `values` (`Partial`): each block's partial,
    /// its `PARTIAL_WORDS` words at `out[PARTIAL_WORDS · block]`, for the host to join.
    /// `sign` 1 for a map where larger is worse, −1 where smaller is; `threshold` unsigned.
    /// Block `STATS_BLOCK`, any grid (`STATS_BLOCKS`): blocks and threads stride over the
    /// values in order.
    pub unsafe fn map_stats(values: *const f32, len: u32, sign: f32, threshold: f32, out: *mut u32) => stats;

    /// The map `f.values` as GRAY16_LE samples (`gray16`) at `f.out`. Block (`BLOCK_X`,
    /// `BLOCK_Y`), a thread per pixel; `f.pitch` even.
    pub unsafe fn map_gray16(f: MapFrame) => gray16_frame;

    /// The map `f.values` as RGBA heat pixels (`heat_rgba` of `heat_position`) at `f.out`.
    /// Block (`BLOCK_X`, `BLOCK_Y`), a thread per pixel; `f.out` and `f.pitch` multiples of
    /// four.
    pub unsafe fn map_heat(f: MapFrame) => heat_frame;
}

/// The body of the `map_stats` kernel (declared above): each thread's partial over the
/// values it strides over, then the block's by halving in shared memory.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn stats(values: *const f32, len: u32, sign: f32, threshold: f32, out: *mut u32) {
    gpumetrics_device::shared!(static MAP_STATS_LARGEST: [f32; STATS_THREADS]);
    gpumetrics_device::shared!(static MAP_STATS_AT: [u32; STATS_THREADS]);
    gpumetrics_device::shared!(static MAP_STATS_PAST: [u32; STATS_THREADS]);
    let t = dev::thread_idx_x() as usize;
    let thr = sign * threshold;
    let mut p = Partial::NONE;
    let step = dev::grid_dim_x() as u64 * STATS_BLOCK as u64;
    let mut i = dev::block_idx_x() as u64 * STATS_BLOCK as u64 + t as u64;
    // Four loads in flight per thread, then the four in order.
    while i + 3 * step < len as u64 {
        let v = [0u64, 1, 2, 3].map(|k| unsafe { *values.add((i + k * step) as usize) });
        unroll!(k in [0 1 2 3] {
            p.see(sign * v[k], (i + k as u64 * step) as u32, thr);
        });
        i += 4 * step;
    }
    while i < len as u64 {
        p.see(sign * unsafe { *values.add(i as usize) }, i as u32, thr);
        i += step;
    }
    unsafe {
        MAP_STATS_LARGEST.write(t, p.largest);
        MAP_STATS_AT.write(t, p.at);
        MAP_STATS_PAST.write(t, p.past);
        dev::sync_threads();
    }
    let mut half = STATS_THREADS / 2;
    while half > 0 {
        if t < half {
            // No closure for the two reads: its captures could stay in local memory.
            let (mine, other) = unsafe {
                (
                    Partial {
                        largest: MAP_STATS_LARGEST.read(t),
                        at: MAP_STATS_AT.read(t),
                        past: MAP_STATS_PAST.read(t),
                    },
                    Partial {
                        largest: MAP_STATS_LARGEST.read(t + half),
                        at: MAP_STATS_AT.read(t + half),
                        past: MAP_STATS_PAST.read(t + half),
                    },
                )
            };
            let j = mine.join(other);
            unsafe {
                MAP_STATS_LARGEST.write(t, j.largest);
                MAP_STATS_AT.write(t, j.at);
                MAP_STATS_PAST.write(t, j.past);
            }
        }
        unsafe { dev::sync_threads() };
        half /= 2;
    }
    if t == 0 {
        let w = Partial {
            largest: unsafe { MAP_STATS_LARGEST.read(0) },
            at: unsafe { MAP_STATS_AT.read(0) },
            past: unsafe { MAP_STATS_PAST.read(0) },
        }
        .words();
        let at = dev::block_idx_x() as usize * PARTIAL_WORDS;
        unroll!(k in [0 1 2] {
            unsafe { *out.add(at + k) = w[k] };
        });
    }
}

/// The body of the `map_gray16` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn gray16_frame(f: MapFrame) {
    let (x, y) = (dev::global_idx_x(), dev::global_idx_y());
    if x >= f.width || y >= f.height {
        return;
    }
    let v = unsafe { *(f.values as *const f32).add((y * f.width + x) as usize) };
    let at = f.out + y as u64 * f.pitch as u64 + 2 * x as u64;
    unsafe { *(at as *mut u16) = gray16(f.kind, v, f.peak) };
}

/// The body of the `map_heat` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn heat_frame(f: MapFrame) {
    let (x, y) = (dev::global_idx_x(), dev::global_idx_y());
    if x >= f.width || y >= f.height {
        return;
    }
    let v = unsafe { *(f.values as *const f32).add((y * f.width + x) as usize) };
    let at = f.out + y as u64 * f.pitch as u64 + 4 * x as u64;
    let rgba = heat_rgba(heat_position(f.kind, v, f.peak));
    unsafe { *(at as *mut u32) = u32::from_le_bytes(rgba) };
}

/// The body of the `map_squared_error` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn squared(c: MapChannel, o: MapOut) {
    let (x, y) = (dev::global_idx_x(), dev::global_idx_y());
    if x >= c.width || y >= c.height {
        return;
    }
    let (r, d) = unsafe { c.samples(x, y) };
    unsafe { o.put((y * c.width + x) as usize, squared_error(r, d)) };
}

/// The body of the `map_ssim` kernel (declared above): the host's operations in the host's
/// order (`crate::map` and the engine's `map::ssim`), with the filters' multiply-adds fused
/// (f64 issue bounds the kernel: 133 µs a 1080p pair on an H100 without them), so the maps
/// agree within the last bit of their f64 sums, which the f32 map rounds away but rarely.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn ssim_tile(c: MapChannel, f: SsimFilter, o: MapOut) {
    gpumetrics_device::shared!(static MAP_SSIM_DOWN: [f64; MOMENTS * SSIM_TILE_ROWS * SSIM_TILE_COLS]);
    if c.width != f.width || c.height != f.height {
        return;
    }
    let (x0, y0) = (dev::block_idx_x() * BLOCK_X, dev::block_idx_y() * BLOCK_Y);
    let t = (dev::thread_idx_y() * BLOCK_X + dev::thread_idx_x()) as usize;
    let per_moment = SSIM_TILE_ROWS * SSIM_TILE_COLS;
    // Down the columns: the tile's rows, at its columns and SSIM_RADIUS either side
    // (reflected into the picture), one (row, column) after the other per thread.
    let mut i = t;
    while i < per_moment {
        let (r, j) = (i / SSIM_TILE_COLS, i % SSIM_TILE_COLS);
        let y = y0 + r as u32;
        if y < c.height {
            let x = reflect(x0 as i32 + j as i32 - SSIM_RADIUS, c.width);
            let mut s = [0f64; MOMENTS];
            // Taps by constant index (a rolled loop would copy `f` to local memory).
            unroll!(k in [0 1 2 3 4 5 6 7 8 9 10] {
                let kt = f.taps[k];
                let row = reflect(y as i32 + k as i32 - SSIM_RADIUS, c.height);
                let (a, b) = unsafe { c.samples(x, row) };
                let m = moments(a, b);
                unroll!(q in [0 1 2 3 4] {
                    s[q] = fma(kt, m[q], s[q]);
                });
            });
            unroll!(q in [0 1 2 3 4] {
                unsafe { MAP_SSIM_DOWN.write(q * per_moment + i, s[q]) };
            });
        }
        i += (BLOCK_X * BLOCK_Y) as usize;
    }
    unsafe { dev::sync_threads() };
    let (tx, ty) = (dev::thread_idx_x() as usize, dev::thread_idx_y() as usize);
    let (x, y) = (x0 + tx as u32, y0 + ty as u32);
    if x >= c.width || y >= c.height {
        return;
    }
    // Along the row: shared column `tx + k` holds column `x + k − SSIM_RADIUS` reflected.
    let mut s = [0f64; MOMENTS];
    unroll!(k in [0 1 2 3 4 5 6 7 8 9 10] {
        let kt = f.taps[k];
        let at = ty * SSIM_TILE_COLS + tx + k;
        unroll!(q in [0 1 2 3 4] {
            let v = unsafe { MAP_SSIM_DOWN.read_unchecked(q * per_moment + at) };
            s[q] = fma(kt, v, s[q]);
        });
    });
    unsafe { o.put((y * c.width + x) as usize, ssim_of(s, f.c1, f.c2)) };
}
