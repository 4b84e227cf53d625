//! The map kernels: thin `kernel!` declarations over device-only bodies that call the
//! per-sample functions of the module (which the host's maps call too).

#[cfg(target_arch = "nvptx64")]
use super::*;
#[cfg(target_arch = "nvptx64")]
use gpumetrics_device as dev;

gpumetrics_device::kernel! {
    /// The squared error of channel `c`, joined to `o` (`MapOut::put`). Block (`BLOCK_X`,
    /// `BLOCK_Y`), a thread per pixel.
    pub unsafe fn map_squared_error(c: MapChannel, o: MapOut) => squared;

    /// The SSIM filter down the columns (SciPy's `reflect` edges) of the five moments of
    /// channel `c`, into `f.down` (five planes of `f.width`×`f.height` f64). Block
    /// (`BLOCK_X`, `BLOCK_Y`), a thread per pixel.
    pub unsafe fn map_ssim_down(c: MapChannel, f: SsimFilter) => ssim_down;

    /// The SSIM filter along the rows of `f.down`, then SSIM per pixel, joined to `o`.
    /// Block (`BLOCK_X`, `BLOCK_Y`), a thread per pixel.
    pub unsafe fn map_ssim_across(f: SsimFilter, o: MapOut) => ssim_across;
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

/// The body of the `map_ssim_down` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn ssim_down(c: MapChannel, f: SsimFilter) {
    let (x, y) = (dev::global_idx_x(), dev::global_idx_y());
    if x >= c.width || y >= c.height || c.width != f.width || c.height != f.height {
        return;
    }
    let mut s = [0f64; MOMENTS];
    // Taps by constant index (a rolled loop would copy `f` to local memory per thread).
    unroll!(t in [0 1 2 3 4 5 6 7 8 9 10] {
        let kt = f.taps[t];
        let row = reflect(y as i32 + t as i32 - SSIM_RADIUS, c.height);
        let (r, d) = unsafe { c.samples(x, row) };
        let m = moments(r, d);
        unroll!(q in [0 1 2 3 4] {
            s[q] += kt * m[q];
        });
    });
    let plane = f.width as usize * f.height as usize;
    let i = (y * f.width + x) as usize;
    let down = f.down as *mut f64;
    unroll!(q in [0 1 2 3 4] {
        unsafe { *down.add(q * plane + i) = s[q] };
    });
}

/// The body of the `map_ssim_across` kernel (declared above).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
unsafe fn ssim_across(f: SsimFilter, o: MapOut) {
    let (x, y) = (dev::global_idx_x(), dev::global_idx_y());
    if x >= f.width || y >= f.height {
        return;
    }
    let plane = f.width as usize * f.height as usize;
    let row = (y * f.width) as usize;
    let down = f.down as *const f64;
    let mut s = [0f64; MOMENTS];
    unroll!(t in [0 1 2 3 4 5 6 7 8 9 10] {
        let kt = f.taps[t];
        let col = reflect(x as i32 + t as i32 - SSIM_RADIUS, f.width) as usize;
        unroll!(q in [0 1 2 3 4] {
            s[q] += kt * unsafe { *down.add(q * plane + row + col) };
        });
    });
    unsafe { o.put(row + x as usize, ssim_of(s, f.c1, f.c2)) };
}
