//! Hints that steer the compiler where its usual choices cost registers on the GPU.

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

/// `p` itself, through a PTX `mov` the compiler cannot see through: loads from the result
/// are not matched to earlier loads from `p`, so they are done again rather than the
/// earlier values kept live (in registers) until then. Use it where reloading (an L1 hit)
/// is cheaper than holding the values. On the host, `p` unchanged.
#[inline(always)]
pub fn opaque_ptr<T>(p: *const T) -> *const T {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: *const T;
        // SAFETY: a register move.
        unsafe {
            asm!("mov.b64 {r}, {p};", r = out(reg64) r, p = in(reg64) p, options(pure, nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        p
    }
}

/// `v` itself, computed here: a PTX `mov` the compiler keeps in place (it has no `pure`
/// option), so the operations that give `v` are not sunk past it into the code that uses
/// `v`, such as a branch taken later. Sinking them there keeps their inputs live instead of
/// `v` alone: use it where those are many. On the host, `v` unchanged.
#[inline(always)]
pub fn settle_f32(v: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: a register move.
        unsafe {
            asm!("mov.b32 {r}, {v};", r = out(reg32) r, v = in(reg32) v, options(nomem, nostack))
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        v
    }
}
