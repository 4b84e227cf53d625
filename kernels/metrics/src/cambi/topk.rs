//! The mean of a scale's `kept` largest c-values without sorting them, for the GPU: a radix
//! select on the values' bits. C-values are non-negative `f32`s, whose bit patterns order
//! as the values do, and every positive one is normal (at least 1/4225), so its top
//! [`BITS`]`[0]` bits are never all zero: pass 0 counts the positive values by their top 11
//! bits, pass 1 those of the chosen top bits by the next 11, pass 2 those of the chosen 22
//! by the last 9. Each pass's [`select`] narrows the `kept`-th largest value's bits down,
//! so after pass 2 it is known exactly (`t`), with how many values lie above it; the mean
//! is then `(Σ values above t + (kept − above)·t) / kept`, the same as the host's mean of
//! the selected values (which has `kept − above` copies of `t`).

/// Bits of each pass, from the top (bit 31, the sign, is always 0).
pub const BITS: [u32; 3] = [11, 11, 9];
/// Histogram bins of each pass.
pub const BINS: [usize; 3] = [1 << BITS[0], 1 << BITS[1], 1 << BITS[2]];
const _: () = assert!(BINS[0] == super::HIST_BINS && BINS[1] <= BINS[0]);
/// Counters of all three passes' histograms of one scale (pass 0 first).
pub const COUNTERS: usize = BINS[0] + BINS[1] + BINS[2];

/// Pass `pass`'s bin of a value's bits.
#[inline(always)]
pub fn bin(bits: u32, pass: usize) -> u32 {
    match pass {
        0 => bits >> (BITS[1] + BITS[2]),
        1 => (bits >> BITS[2]) & (BINS[1] as u32 - 1),
        _ => bits & (BINS[2] as u32 - 1),
    }
}

/// Whether a value's bits lie in `prefix`, the bins chosen by the passes before `pass`.
#[inline(always)]
pub fn in_prefix(bits: u32, pass: usize, prefix: u32) -> bool {
    match pass {
        0 => true,
        1 => bits >> (BITS[1] + BITS[2]) == prefix,
        _ => bits >> BITS[2] == prefix,
    }
}

/// Where the selection stands after a pass. Crosses the kernel boundary in device memory.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    /// The chosen bins so far, as the value's top bits.
    pub prefix: u32,
    /// How many of the values in `prefix` are still to be kept (≥ 1).
    pub k: u32,
    /// Values above `prefix`'s range (all kept).
    pub above: u32,
    /// 1 once the `kept`-th largest value is known to be 0 (no pass refines it further).
    pub zero: u32,
}

impl Selection {
    /// Before pass 0: all `kept` values still to choose.
    pub fn start(kept: u32) -> Selection {
        Selection {
            prefix: 0,
            k: kept,
            above: 0,
            zero: 0,
        }
    }

    /// The selection after pass `pass`, whose histogram `hist` (its `BINS[pass]` counts of
    /// the values in `self.prefix`; pass 0 leaves zeros out) has been made.
    pub fn next(self, pass: usize, hist: impl Fn(usize) -> u32) -> Selection {
        if self.zero != 0 {
            return self;
        }
        self.advance(pass, select(hist, BINS[pass], self.k))
    }

    /// The selection after pass `pass` given what [`select`] found in its histogram.
    pub fn advance(self, pass: usize, (b, above): (Option<usize>, u32)) -> Selection {
        if self.zero != 0 {
            return self;
        }
        match b {
            // Only zeros are left (pass 0 counts no zero): the value is 0.
            None => Selection {
                zero: 1,
                above: self.above + above,
                ..self
            },
            Some(b) => Selection {
                prefix: (self.prefix << BITS[pass]) | b as u32,
                k: self.k - above,
                above: self.above + above,
                zero: 0,
            },
        }
    }

    /// After pass 2: the `kept`-th largest value's bits.
    pub fn threshold(&self) -> u32 {
        if self.zero != 0 { 0 } else { self.prefix }
    }
}

/// The bin that holds the `k`-th largest of the counted values (from the top), with the
/// count of the bins above it; `None` (with the whole count) when the bins hold fewer than
/// `k` values.
pub fn select(hist: impl Fn(usize) -> u32, bins: usize, k: u32) -> (Option<usize>, u32) {
    let mut above = 0u32;
    for b in (0..bins).rev() {
        let n = hist(b);
        if above + n >= k {
            return (Some(b), above);
        }
        above += n;
    }
    (None, above)
}

/// The mean of the `kept` largest values from the final selection and the sum of the
/// values above its threshold.
pub fn mean(s: &Selection, sum_above: f64, kept: u32) -> f64 {
    let t = f32::from_bits(s.threshold()) as f64;
    (sum_above + (kept - s.above) as f64 * t) / kept as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    /// The three passes over `values` on the host, as the kernels run them.
    fn gpu_mean(values: &[f32], kept: u32) -> f64 {
        let mut s = Selection::start(kept);
        for pass in 0..3 {
            let mut hist = std::vec![0u32; BINS[pass]];
            for v in values {
                let bits = v.to_bits();
                if bits != 0 && in_prefix(bits, pass, s.prefix) {
                    hist[bin(bits, pass) as usize] += 1;
                }
            }
            s = s.next(pass, |b| hist[b]);
        }
        let t = s.threshold();
        let sum: f64 = values
            .iter()
            .filter(|v| v.to_bits() > t)
            .map(|&v| v as f64)
            .sum();
        mean(&s, sum, kept)
    }

    fn host_mean(values: &[f32], kept: u32) -> f64 {
        let mut v: Vec<f32> = values.to_vec();
        v.sort_by(|a, b| b.total_cmp(a));
        v[..kept as usize].iter().map(|&x| x as f64).sum::<f64>() / kept as f64
    }

    #[test]
    fn radix_select_equals_sorting() {
        let mut x = 0x1234_5678_9abc_def1u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for case in 0..40 {
            let n = 1 + (next() % 3000) as usize;
            let zeros = (case % 4) as u64;
            let values: Vec<f32> = (0..n)
                .map(|_| {
                    let r = next();
                    if r % 4 < zeros {
                        0.0
                    } else if case % 3 == 0 {
                        // Few distinct values: many ties at the threshold.
                        (1 + r % 5) as f32 * 0.25
                    } else {
                        (r % 40_000) as f32 * (1.0 / 4225.0) + 2.4e-4
                    }
                })
                .collect();
            for kept in [1, (n as u32).div_ceil(2), (n as u32 * 3) / 5, n as u32] {
                let kept = kept.clamp(1, n as u32);
                let (g, h) = (gpu_mean(&values, kept), host_mean(&values, kept));
                assert!(
                    (g - h).abs() <= 1e-12 * h.abs().max(1.0),
                    "{case} {kept}: {g} {h}"
                );
            }
        }
    }

    #[test]
    fn all_zero_values_give_zero() {
        assert_eq!(gpu_mean(&[0.0; 10], 6), 0.0);
        assert_eq!(gpu_mean(&[0.0, 0.0, 3.0], 2), 1.5);
    }
}
