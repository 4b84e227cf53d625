//! Channels: where one colour channel of a frame lies and how its samples are read. Every
//! metric reads frames through these types (PSNR and SSIM compare channel pairs, the colour
//! stage reads three channels), on the host and on the GPU alike.

/// One channel of one frame: where its samples are and how to read them.
///
/// `ptr` is a host or device address (the struct crosses the kernel boundary by value,
/// so it holds plain integers only).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Channel {
    /// Address of the channel's first sample (plane start + component byte offset).
    pub ptr: u64,
    /// Bytes between rows.
    pub pitch: u32,
    /// Bytes between horizontally adjacent samples (1, 2, 3, 4, 6 or 8).
    pub step: u32,
    /// 1 (8-bit containers) or 2 (16-bit little-endian containers).
    pub sample_bytes: u32,
    /// Right shift applied after loading (P010/P016 keep samples in the high bits).
    pub shift: u32,
    /// Largest sample value, 2^depth − 1.
    pub max: u32,
    pub _pad: u32,
}

/// A reference/distorted channel pair of equal size.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChannelPair {
    pub reference: Channel,
    pub distorted: Channel,
    pub width: u32,
    pub height: u32,
}

pub const MAX_CHANNELS: usize = 3;

impl Channel {
    /// Whether a sample is its byte: one byte per sample, adjacent, no shift (8-bit planar
    /// or semi-planar luma). Kernels test it once per block and then read bytes directly.
    #[inline(always)]
    pub fn is_plain_bytes(&self) -> bool {
        self.sample_bytes == 1 && self.step == 1 && self.shift == 0
    }

    /// Whether every row starts `bytes`-aligned (the first sample and the pitch), so rows
    /// can be read with aligned loads of that size.
    #[inline(always)]
    pub fn rows_aligned(&self, bytes: u32) -> bool {
        self.ptr.is_multiple_of(bytes as u64) && self.pitch.is_multiple_of(bytes)
    }
}

/// Loads sample `x` of the row starting at `row`.
///
/// # Safety
/// `row + x * c.step + c.sample_bytes` must be readable.
#[inline(always)]
pub unsafe fn load(row: *const u8, x: u32, c: &Channel) -> u32 {
    let p = unsafe { row.add((x * c.step) as usize) };
    let raw = if c.sample_bytes == 1 {
        unsafe { *p as u32 }
    } else {
        // Unaligned-safe little-endian read: packed formats need not be 2-byte aligned.
        unsafe { (*p as u32) | ((*p.add(1) as u32) << 8) }
    };
    raw >> c.shift
}

/// Maps a distorted sample to the reference's bit depth (rounding to nearest), so pads of
/// different depths compare on the reference's scale.
#[inline(always)]
pub fn rescale(v: u32, from_max: u32, to_max: u32) -> u32 {
    if from_max == to_max {
        v
    } else {
        ((v as u64 * to_max as u64 + (from_max as u64 >> 1)) / from_max as u64) as u32
    }
}
