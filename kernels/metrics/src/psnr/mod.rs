//! PSNR: per-channel sums of squared errors. The per-sample math here is the only copy:
//! the CPU backend calls [`sse_rows`] on host pointers, the `psnr_sse` kernel (`kernels.rs`)
//! calls the same [`load`]/[`sq_err`] on device pointers.

mod kernels;

use crate::channel::{ChannelPair, MAX_CHANNELS, load, rescale};

/// Up to three channel pairs, compared in one launch (grid.z = channel index).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PsnrPlanes {
    pub pairs: [ChannelPair; MAX_CHANNELS],
    pub count: u32,
    pub _pad: u32,
}

/// Squared error of one sample pair.
#[inline(always)]
pub fn sq_err(a: u32, b: u32) -> u64 {
    let d = a.abs_diff(b) as u64;
    d * d
}

/// Squared error of sample `x` in the given rows of `pair`.
///
/// # Safety
/// Both rows must hold `x + 1` samples.
#[inline(always)]
pub unsafe fn pixel_sse(a_row: *const u8, b_row: *const u8, x: u32, pair: &ChannelPair) -> u64 {
    let a = unsafe { load(a_row, x, &pair.reference) };
    let b = unsafe { load(b_row, x, &pair.distorted) };
    sq_err(a, rescale(b, pair.distorted.max, pair.reference.max))
}

/// Sum of squared errors over rows `y0..y1` of `pair`.
///
/// # Safety
/// `pair` must describe readable memory for those rows.
#[inline]
pub unsafe fn sse_rows(pair: &ChannelPair, y0: u32, y1: u32) -> u64 {
    let mut sum = 0u64;
    for y in y0..y1 {
        let a_row = (pair.reference.ptr + y as u64 * pair.reference.pitch as u64) as *const u8;
        let b_row = (pair.distorted.ptr + y as u64 * pair.distorted.pitch as u64) as *const u8;
        for x in 0..pair.width {
            sum += unsafe { pixel_sse(a_row, b_row, x, pair) };
        }
    }
    sum
}

/// Threads per block of `psnr_sse`.
pub const BLOCK: u32 = 256;
/// Warps per `psnr_sse` block: its shared array holds one partial sum per warp.
pub const WARPS: usize = 8;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channel::Channel;

    fn chan(data: &[u8], pitch: u32, step: u32, bytes: u32, shift: u32, max: u32) -> Channel {
        Channel {
            ptr: data.as_ptr() as u64,
            pitch,
            step,
            sample_bytes: bytes,
            shift,
            max,
            _pad: 0,
        }
    }

    #[test]
    fn sse_of_interleaved_8bit() {
        // 2x2 RGB-like, reading component 1 (step 3).
        let a = [0u8, 10, 0, 0, 20, 0, 0, 30, 0, 0, 40, 0];
        let b = [0u8, 13, 0, 0, 20, 0, 0, 26, 0, 0, 41, 0];
        let pair = ChannelPair {
            reference: chan(&a[1..], 6, 3, 1, 0, 255),
            distorted: chan(&b[1..], 6, 3, 1, 0, 255),
            width: 2,
            height: 2,
        };
        assert_eq!(unsafe { sse_rows(&pair, 0, 2) }, 9 + 16 + 1); // errors 3, 0, -4, 1
    }

    #[test]
    fn msb_aligned_16bit_is_shifted() {
        let a: std::vec::Vec<u8> = [1023u16 << 6, 0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let b: std::vec::Vec<u8> = [1020u16 << 6, 2 << 6]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let pair = ChannelPair {
            reference: chan(&a, 4, 2, 2, 6, 1023),
            distorted: chan(&b, 4, 2, 2, 6, 1023),
            width: 2,
            height: 1,
        };
        assert_eq!(unsafe { sse_rows(&pair, 0, 1) }, 9 + 4);
    }

    #[test]
    fn rescale_rounds_to_reference_depth() {
        assert_eq!(rescale(1023, 1023, 255), 255);
        assert_eq!(rescale(512, 1023, 255), 128);
        assert_eq!(rescale(255, 255, 1023), 1023);
        assert_eq!(rescale(7, 255, 255), 7);
    }
}
