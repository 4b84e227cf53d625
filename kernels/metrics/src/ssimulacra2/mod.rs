//! SSIMULACRA2 (version 2.1): per-pixel math shared by the CPU backend and the GPU kernels.
//!
//! The blur is the recursive Gaussian of the reference (Charalampidis 2016, σ = 1.5, as in
//! libjxl and the `ssimulacra2` crate) with the reference's f32 operations in the same
//! order: its rounding noise measurably raises the SSIM error sums of high-quality images
//! (an exact FIR Gaussian scores up to 0.25 higher at JPEG q3), so matching the reference
//! within 0.05 needs the same recursion. Rows (horizontal pass) and columns (vertical pass,
//! fused with the maps and their sums) are therefore sequential per thread.
//!
//! - [`math`]: the colour transform, the recursion (also in the tiled form the kernels run),
//!   the maps, their sums and the scales (host and GPU);
//! - [`layout`]: the buffers the kernels share with the engine ([`Scale`](layout::Scale),
//!   [`Level`](layout::Level)) and the kernels' launch shapes, tiles and shared memory;
//! - `kernels`: the GPU kernels (`ssimu2_*`), device-only.

pub mod layout;
pub mod math;

mod kernels;
