//! What the users' tools need to know of each field a metric can produce: its unit, how
//! many decimals a table shows, the plot panel it is drawn in, its direction (alert rules
//! and the command's gates compare against it) and whether its harmonic mean is customary.
//! Declared once, by the metric ([`crate::metric::Info::fields`]); the element, the
//! command's table, plot and gates read it from there instead of guessing from names.

/// Which way a field gets better.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Higher is better (PSNR, SSIM, VMAF, SSIMULACRA2).
    Higher,
    /// Lower is better (MSE, Butteraugli).
    Lower,
}

/// A plot panel: fields sharing one y axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Panel {
    /// The panel's title, with the unit (`PSNR (dB)`).
    pub title: &'static str,
    /// The y axis is fixed to 0..1 (the SSIM family) instead of fitted to the data.
    pub unit_interval: bool,
}

/// One field of a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// The field name in records, messages and stats files (`psnr-y`).
    pub name: &'static str,
    /// The unit (`dB`), empty for a score without one.
    pub unit: &'static str,
    /// Decimals shown in tables.
    pub decimals: u8,
    /// The plot panel; `None`: not plotted (MSE: its PSNR shows the same).
    pub panel: Option<Panel>,
    pub direction: Direction,
    /// The harmonic mean is customary (it weighs bad frames more): PSNR, the SSIM family,
    /// VMAF.
    pub harmonic_mean: bool,
    /// A PSNR, `10·log10(peak² / MSE)`: its summary also has `pooled`, the PSNR of the mean
    /// MSE over the frames, as FFmpeg's `psnr` filter's summary line gives it.
    pub mse_pooled: bool,
}

impl Field {
    /// A field with 3 decimals, higher is better, no harmonic mean, its own panel named
    /// `panel`; adjust with the `with_*` methods (usable in `const` tables).
    pub const fn new(name: &'static str, panel: &'static str) -> Field {
        Field {
            name,
            unit: "",
            decimals: 3,
            panel: Some(Panel {
                title: panel,
                unit_interval: false,
            }),
            direction: Direction::Higher,
            harmonic_mean: false,
            mse_pooled: false,
        }
    }

    pub const fn unit(mut self, unit: &'static str) -> Field {
        self.unit = unit;
        self
    }

    pub const fn decimals(mut self, decimals: u8) -> Field {
        self.decimals = decimals;
        self
    }

    pub const fn lower_is_better(mut self) -> Field {
        self.direction = Direction::Lower;
        self
    }

    pub const fn harmonic(mut self) -> Field {
        self.harmonic_mean = true;
        self
    }

    /// A PSNR of an MSE: pooled over the frames' MSE in the summary too.
    pub const fn mse_pooled(mut self) -> Field {
        self.mse_pooled = true;
        self
    }

    /// Not drawn by plots.
    pub const fn unplotted(mut self) -> Field {
        self.panel = None;
        self
    }

    /// The panel's y axis is 0..1.
    pub const fn unit_interval(mut self) -> Field {
        if let Some(p) = &mut self.panel {
            p.unit_interval = true;
        }
        self
    }

    pub const fn higher_is_better(&self) -> bool {
        matches!(self.direction, Direction::Higher)
    }

    /// `v` with this field's decimals; `inf`, `-inf`, `nan` spelled out.
    pub fn format(&self, v: f64) -> String {
        if v.is_nan() {
            "nan".into()
        } else if v.is_infinite() {
            if v > 0.0 { "inf".into() } else { "-inf".into() }
        } else {
            format!("{v:.*}", self.decimals as usize)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_and_format() {
        const F: Field = Field::new("x", "X (dB)")
            .unit("dB")
            .decimals(5)
            .lower_is_better()
            .harmonic()
            .unit_interval();
        assert_eq!(F.unit, "dB");
        assert!(!F.higher_is_better() && F.harmonic_mean);
        assert!(F.panel.unwrap().unit_interval);
        assert_eq!(F.format(0.9876543), "0.98765");
        assert_eq!(F.format(f64::NEG_INFINITY), "-inf");
        assert_eq!(Field::new("y", "Y").unplotted().panel, None);
        assert_eq!(Field::new("y", "Y").format(71.23456), "71.235");
    }
}
