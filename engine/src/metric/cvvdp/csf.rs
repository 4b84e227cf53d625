//! ColorVideoVDP's contrast sensitivity: castleCSF as the reference tabulates it
//! (`csf_lut_weber_fixed_size.json`, the calibrated model's `csf`): log sensitivity on a grid
//! of 32 background luminances × 32 spatial frequencies, for the three sustained channels
//! (temporal frequency 0) and the transient achromatic channel (5 Hz). As the reference
//! looks it up: first along log spatial frequency (linear, extrapolated past the grid's
//! ends), once per band; then per pixel along log luminance (linear on the grid's uniform
//! steps, clamped to its ends), and 10 to that power. In float32, as the reference computes.

use std::sync::LazyLock;

use serde_json::Value;

/// Points of the table along each axis.
pub const GRID: usize = gpumetrics_kernels::cvvdp::GRID;

struct Table {
    log_l_bkg: [f32; GRID],
    log_rho: [f32; GRID],
    /// `[sustained Y, sustained RG, sustained VY, transient Y]`, each `[luminance][rho]`.
    log_s: [[[f32; GRID]; GRID]; 4],
}

static TABLE: LazyLock<Table> = LazyLock::new(|| {
    let v: serde_json::Map<String, Value> =
        serde_json::from_str(include_str!("csf_lut_weber_fixed_size.json"))
            .expect("the reference's CSF table is a JSON object");
    let row = |v: &Value| -> [f32; GRID] {
        let a = v.as_array().expect("a row");
        assert_eq!(a.len(), GRID, "the CSF table has {GRID} points per axis");
        std::array::from_fn(|i| a[i].as_f64().expect("a number") as f32)
    };
    let log10 = |r: [f32; GRID]| r.map(f32::log10);
    let table = |name: &str| -> [[f32; GRID]; GRID] {
        let rows = v[name].as_array().expect("a table");
        assert_eq!(rows.len(), GRID);
        std::array::from_fn(|i| row(&rows[i]))
    };
    Table {
        log_l_bkg: log10(row(&v["L_bkg"])),
        log_rho: log10(row(&v["rho"])),
        log_s: [
            table("o0_c1"),
            table("o0_c2"),
            table("o0_c3"),
            table("o5_c1"),
        ],
    }
});

/// One channel's log sensitivity at one spatial frequency, along the luminance axis: what a
/// band of the pyramid looks sensitivity up in, per pixel ([`sensitivity`]).
#[derive(Clone, Debug, PartialEq)]
pub struct AtFrequency {
    log_s: [f32; GRID],
}

impl AtFrequency {
    /// Channel `channel` (0..3: sustained Y, RG, VY; 3: transient Y) at `rho` cycles per
    /// degree.
    pub fn new(channel: usize, rho: f32) -> AtFrequency {
        let t = &*TABLE;
        let x = rho.log10();
        // The reference: searchsorted(xp, x) − 1, clamped to the last segment.
        let i = t
            .log_rho
            .partition_point(|&p| p < x)
            .saturating_sub(1)
            .min(GRID - 2);
        let (x0, x1) = (t.log_rho[i], t.log_rho[i + 1]);
        AtFrequency {
            log_s: std::array::from_fn(|l| {
                let (y0, y1) = (t.log_s[channel][l][i], t.log_s[channel][l][i + 1]);
                y0 + (y1 - y0) / (x1 - x0) * (x - x0)
            }),
        }
    }

    /// The sensitivity at background luminance 10^`log_l_bkg` cd/m².
    pub fn sensitivity(&self, log_l_bkg: f32) -> f32 {
        let (l0, l_last) = luminance_axis();
        gpumetrics_kernels::cvvdp::sensitivity(|i| self.log_s[i], l0, l_last, log_l_bkg)
    }

    /// The log sensitivities along the luminance axis, as the kernels read them.
    pub fn log_s(&self) -> &[f32; GRID] {
        &self.log_s
    }
}

/// The ends of the table's log luminance axis (log10 cd/m²), whose steps are uniform.
pub fn luminance_axis() -> (f32, f32) {
    let l = &TABLE.log_l_bkg;
    (l[0], l[GRID - 1])
}
