//! The metrics, one folder each, and the registry that the engine and the element iterate.
//!
//! A metric's folder holds everything about it: `mod.rs` its definition (the fields it
//! produces, its size limits, the formula from sums to scores, written once), `cpu.rs` the
//! sums on the CPU (the kernel crate's host build) and `cuda.rs` the same kernels as PTX,
//! with state allocated once per caps. The engine knows a metric only through its
//! `Entry` in `REGISTRY`: adding a metric is a folder, a kernel module and one line
//! there. (libvmaf's feature-extractor table is the model: one entry per extractor, which
//! may provide several metrics, as SSIM and MS-SSIM share one pass here.)

pub mod black;
pub mod blockiness;
pub mod blur;
pub mod butteraugli;
pub mod cambi;
pub mod ciede2000;
pub mod cvvdp;
#[cfg(test)]
mod example_entry;
pub mod field;
pub mod freeze;
pub(crate) mod lane;
pub(crate) mod no_reference;
pub mod option;
pub mod psnr;
pub mod psnr_hvs;
pub mod siti;
pub mod ssim;
pub mod ssimulacra2;
pub(crate) mod temporal;
pub mod vmaf;
pub mod xpsnr;

use crate::error::EngineError;
use crate::metric_set::MetricSet;
pub use field::{Direction, Field, Panel};
pub use option::{Choice, OptionKind, OptionSpec, OptionValue, Options};

pub(crate) use crate::registry::{
    Configured, CpuMetric, CudaMetric, CudaState, Entry, Settings, no_settings,
};
pub use crate::registry::{Info, REF_PREFIX, Reference};

/// The entries of a set of metrics: defined here, with the list they are taken from.
impl Configured {
    /// Every entry one of whose metrics is in `set`, configured from `options`.
    pub(crate) fn all(set: MetricSet, options: &Options) -> Result<Vec<Configured>, EngineError> {
        let only = distorted_only(set);
        REGISTRY
            .iter()
            .filter(|e| e.provides.iter().any(|i| set.contains(i.flag)))
            .map(|entry| {
                Ok(Configured {
                    entry,
                    settings: (entry.configure)(options)?,
                    distorted_only: only,
                })
            })
            .collect()
    }
}

/// Every metric implementation, in the order their fields appear in a record (the fields of
/// metrics that hold a pair back, VMAF, come after the others: keep them last).
pub(crate) const REGISTRY: &[Entry] = &[
    psnr::ENTRY,
    ssim::ENTRY,
    ssimulacra2::ENTRY,
    butteraugli::ENTRY,
    xpsnr::ENTRY,
    psnr_hvs::ENTRY,
    ciede2000::ENTRY,
    blur::ENTRY,
    blockiness::ENTRY,
    siti::ENTRY,
    black::ENTRY,
    freeze::ENTRY,
    cambi::ENTRY,
    cvvdp::ENTRY,
    vmaf::ENTRY,
];

/// The metrics whose state needs every frame even when `subsample` scores only some (their
/// temporal channels filter over the frames before). Metrics that hold pairs back
/// ([`crate::Engine::lag`]) need every frame as well.
pub const EVERY_FRAME: MetricSet = cvvdp::FLAG;

/// A name that stands for several registered metrics (`aom-ctc`): what users ask for when
/// they follow a standard set of measurements rather than pick metrics one by one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NamedSet {
    /// As users write it (`metrics=aom-ctc`, `--metrics aom-ctc`).
    pub name: &'static str,
    /// One line for `gst-inspect-1.0` and `--help`.
    pub description: &'static str,
    /// The registered metrics it stands for.
    pub metrics: &'static [&'static str],
    /// The order in which the standard reports its numbers: fields, and the summary-only
    /// values as `<field>:pooled` under the name they are reported by (`aom-apsnr-y`).
    pub report_order: &'static [&'static str],
    /// Its no-reference metrics that the standard measures on the distorted video only:
    /// when the whole set is requested, they skip the reference input (no `ref-` fields),
    /// which would cost as much again for numbers the standard does not report.
    pub distorted_only: &'static [&'static str],
}

impl NamedSet {
    /// The flags of its metrics.
    pub fn set(&self) -> MetricSet {
        self.metrics
            .iter()
            .map(|n| MetricSet::named(n).expect("a named set lists registered metrics"))
            .fold(MetricSet::default(), |a, b| a | b)
    }
}

/// The named sets of registered metrics.
pub const SETS: &[NamedSet] = &[NamedSet {
    name: "aom-ctc",
    description: "The AOM common test conditions' set (libvmaf's --aom_ctc v7.0): aom-psnr, \
                  ciede2000, aom-ssim-db, aom-ms-ssim-db, psnr-hvs, cambi (of the distorted \
                  video), vmaf and vmaf-neg in one pass",
    metrics: &[
        "aom-psnr",
        "ciede2000",
        "aom-ssim-db",
        "aom-ms-ssim-db",
        "psnr-hvs",
        "cambi",
        "vmaf",
        "vmaf-neg",
    ],
    report_order: &[
        "aom-psnr-y",
        "aom-psnr-u",
        "aom-psnr-v",
        "aom-ssim-db",
        "aom-ms-ssim-db",
        "vmaf",
        "vmaf-neg",
        "psnr-hvs",
        "ciede2000",
        "aom-apsnr-y=aom-psnr-y:pooled",
        "aom-apsnr-u=aom-psnr-u:pooled",
        "aom-apsnr-v=aom-psnr-v:pooled",
        "cambi",
    ],
    // libvmaf's --aom_ctc measures CAMBI on the distorted video.
    distorted_only: &["cambi"],
}];

/// The no-reference metrics of `set` that run on the distorted input only: those a named
/// set lists in its `distorted_only`, when `set` holds the whole named set and no other
/// no-reference metric (so `all`, with every check, still measures every input).
pub fn distorted_only(set: MetricSet) -> MetricSet {
    let nr = set.bits() & no_reference().bits();
    SETS.iter()
        .filter(|s| set.contains(s.set()) && nr & !s.set().bits() == 0)
        .flat_map(|s| s.distorted_only.iter())
        .filter_map(|n| MetricSet::named(n))
        .fold(MetricSet::default(), |a, b| a | b)
}

/// The summary-only values the named sets report, as `(name, field, statistic)`
/// (`("aom-apsnr-y", "aom-psnr-y", "pooled")`): a summary that has the field gives the
/// statistic under that name too.
pub fn summary_values() -> impl Iterator<Item = (&'static str, &'static str, &'static str)> {
    SETS.iter()
        .flat_map(|s| s.report_order.iter())
        .filter_map(|entry| {
            let (name, source) = entry.split_once('=')?;
            let (field, stat) = source.split_once(':')?;
            Some((name, field, stat))
        })
}

/// The named set called `name`.
pub fn named_set(name: &str) -> Option<&'static NamedSet> {
    SETS.iter().find(|s| s.name == name)
}

/// Every metric the engine offers, in registry order.
pub fn all() -> impl Iterator<Item = &'static Info> {
    REGISTRY.iter().flat_map(|e| e.provides.iter())
}

/// The metrics that need no reference frame ([`Reference::None`]): what a single-input run
/// can compute.
pub fn no_reference() -> MetricSet {
    REGISTRY
        .iter()
        .filter(|e| e.reference == Reference::None)
        .flat_map(|e| e.provides.iter())
        .fold(MetricSet::default(), |set, i| set | i.flag)
}

/// The metrics of `set` that need a reference frame ([`Reference::Full`]).
pub fn needing_reference(set: MetricSet) -> impl Iterator<Item = &'static Info> {
    REGISTRY
        .iter()
        .filter(|e| e.reference == Reference::Full)
        .flat_map(|e| e.provides.iter())
        .filter(move |i| set.contains(i.flag))
}

/// The names of the no-reference metrics, for messages (`blur, siti, ...`).
pub fn no_reference_names() -> String {
    all()
        .filter(|i| no_reference().contains(i.flag))
        .map(|i| i.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every option of the registered metrics, once each, in registry order.
pub fn options() -> impl Iterator<Item = &'static OptionSpec> {
    REGISTRY
        .iter()
        .flat_map(|e| e.options.iter())
        .enumerate()
        .filter(|(i, o)| {
            !REGISTRY
                .iter()
                .flat_map(|e| e.options.iter())
                .take(*i)
                .any(|p| p.name == o.name)
        })
        .map(|(_, o)| o)
}

/// Configures every metric of `set` from `options` without building an engine: the errors
/// [`crate::EngineBuilder::build`] would give for these options (e.g. a `vmaf-model` that
/// is neither built in nor a readable file), for a front end to report before it starts.
pub fn check_options(set: MetricSet, options: &Options) -> Result<(), EngineError> {
    Configured::all(set, options).map(|_| ())
}

/// The option called `name`.
pub fn option_spec(name: &str) -> Option<&'static OptionSpec> {
    options().find(|o| o.name == name)
}

/// Every field the registered metrics can produce, in registry order.
pub fn fields() -> impl Iterator<Item = &'static Field> {
    all()
        .flat_map(|i| i.fields.iter())
        .chain(crate::map::kind::FIELDS.iter())
}

/// The field called `name`.
pub fn field(name: &str) -> Option<&'static Field> {
    fields().find(|f| f.name == name)
}

/// Options by name: defined here, with the list of the registered metrics whose options
/// they look up, so that `option` (read by every metric) depends on nothing above it.
impl Options {
    /// Sets option `name` (any registered metric's, [`crate::metric::options`]), after
    /// checking its type and range. Empty text sets a text option back to its default.
    pub fn set(&mut self, name: &str, value: OptionValue) -> Result<(), EngineError> {
        let spec = option_spec(name).ok_or_else(|| unknown(name))?;
        self.put(spec, value)
    }

    /// Sets option `name` from its text form ([`OptionSpec::parse`]).
    pub fn parse(&mut self, name: &str, text: &str) -> Result<(), EngineError> {
        let spec = option_spec(name).ok_or_else(|| unknown(name))?;
        let value = spec.parse(text)?;
        self.set(name, value)
    }

    /// With option `name` set (builder style); see [`Options::set`].
    pub fn with(mut self, name: &str, value: OptionValue) -> Result<Options, EngineError> {
        self.set(name, value)?;
        Ok(self)
    }

    /// The value of `name`: the one set, else the default; `None` for an unknown name.
    pub fn get(&self, name: &str) -> Option<OptionValue> {
        let spec = option_spec(name)?;
        Some(self.value(spec))
    }
}

fn unknown(name: &str) -> EngineError {
    let known: Vec<_> = options().map(|o| o.name).collect();
    EngineError::InvalidOption {
        option: "options",
        why: format!("no option `{name}`; the options are {}", known.join(", ")),
    }
}

/// What a [`MetricSet`] knows of the registered metrics: defined here, with the list, so
/// that the set itself (`crate::metric_set`, used by every layer) depends on nothing above it.
impl MetricSet {
    /// Every registered metric.
    pub const ALL: MetricSet = MetricSet::from_raw(all_flags());

    /// The registered metric called `name` (its flag nick, e.g. `ms-ssim`), or the metrics of
    /// the named set called so (`aom-ctc`, [`SETS`]).
    pub fn named(name: &str) -> Option<MetricSet> {
        all()
            .find(|i| i.name == name)
            .map(|i| i.flag)
            .or_else(|| named_set(name).map(|s| s.set()))
    }

    /// Unknown bits are dropped.
    pub const fn from_bits(bits: u32) -> Self {
        MetricSet::from_raw(bits & Self::ALL.bits())
    }
}

/// The flags of every registered metric.
pub(crate) const fn all_flags() -> u32 {
    let mut bits = 0;
    let mut i = 0;
    while i < REGISTRY.len() {
        let mut j = 0;
        while j < REGISTRY[i].provides.len() {
            bits |= REGISTRY[i].provides[j].flag.bits();
            j += 1;
        }
        i += 1;
    }
    bits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_flags_are_unique() {
        let infos: Vec<_> = all().collect();
        for (i, a) in infos.iter().enumerate() {
            assert_eq!(a.flag.bits().count_ones(), 1, "{}", a.name);
            for b in &infos[i + 1..] {
                assert_ne!(a.name, b.name);
                assert_ne!(a.flag, b.flag);
            }
        }
        assert_eq!(MetricSet::ALL.bits(), all_flags());
        // The first metrics' bits are users' saved flag values: they never change.
        for (name, flag) in [
            ("psnr", MetricSet::PSNR),
            ("ssim", MetricSet::SSIM),
            ("ms-ssim", MetricSet::MS_SSIM),
            ("ssimulacra2", MetricSet::SSIMULACRA2),
            ("butteraugli", MetricSet::BUTTERAUGLI),
            ("vmaf", MetricSet::VMAF),
        ] {
            assert_eq!(MetricSet::named(name), Some(flag), "{name}");
        }
        assert_eq!(MetricSet::named("no-such-metric"), None);
        // A named set is not a metric's name, and stands for registered metrics only.
        for s in SETS {
            assert!(all().all(|i| i.name != s.name), "{}", s.name);
            assert_eq!(MetricSet::named(s.name), Some(s.set()));
            assert_eq!(s.set().bits().count_ones() as usize, s.metrics.len());
            for f in s.report_order {
                let field_name = f.split('=').next_back().unwrap().split(':').next().unwrap();
                assert!(field(field_name).is_some(), "{}: {f}", s.name);
            }
        }
    }

    /// Which entries read the frames' linear light for a plan of `w`×`h` I420 frames with
    /// every metric requested and `chroma-upsampling` at `choice`, and with what upsampling.
    fn linear_light_readers(
        w: u32,
        h: u32,
        choice: usize,
    ) -> Vec<(&'static str, crate::color::ChromaUpsampling)> {
        let layout = crate::format::FrameLayout {
            format: crate::format::PixelFormat::I420,
            width: w,
            height: h,
        };
        let plan = crate::plan::Plan::new(layout, layout).unwrap();
        let mut options = Options::new();
        options
            .set("chroma-upsampling", OptionValue::Choice(choice))
            .unwrap();
        let set = MetricSet::ALL;
        Configured::all(set, &options)
            .unwrap()
            .iter()
            .filter_map(|c| {
                let wants = c.entry.linear_light?(&c.setup(&plan, set))?;
                Some((c.entry.provides[0].name, wants))
            })
            .collect()
    }

    /// The CUDA backend shares the conversion only between entries that declare it: if
    /// SSIMULACRA2's or Butteraugli's entry stopped declaring it, each would convert the
    /// frames again (same scores, more time), which nothing else would show.
    #[test]
    fn butteraugli_and_ssimulacra2_read_linear_light_with_the_options_upsampling() {
        use crate::color::ChromaUpsampling::{CatmullRom, Nearest};
        assert_eq!(
            linear_light_readers(64, 48, 0),
            [("ssimulacra2", CatmullRom), ("butteraugli", CatmullRom)]
        );
        assert_eq!(
            linear_light_readers(64, 48, 1),
            [("ssimulacra2", Nearest), ("butteraugli", Nearest)]
        );
        // Frames too small for either metric: neither reads it, so nothing is converted.
        assert_eq!(linear_light_readers(4, 4, 0), []);
    }

    #[test]
    fn every_field_is_declared_once() {
        let names: Vec<_> = fields().map(|f| f.name).collect();
        for (i, n) in names.iter().enumerate() {
            assert!(!names[..i].contains(n), "{n} declared twice");
        }
        assert!(field("psnr-y").unwrap().harmonic_mean);
        assert!(!field("mse-y").unwrap().higher_is_better());
        assert!(!field("butteraugli").unwrap().higher_is_better());
        assert_eq!(field("mse-avg").unwrap().panel, None);
        assert_eq!(field("ssim").unwrap().decimals, 5);
        assert_eq!(field("no-such-field"), None);
    }

    #[test]
    fn no_reference_fields_come_in_pairs_and_only_there() {
        for e in REGISTRY {
            for i in e.provides {
                let names: Vec<_> = i.fields.iter().map(|f| f.name).collect();
                for n in &names {
                    let prefixed = n.starts_with(REF_PREFIX);
                    match e.reference {
                        Reference::Full => assert!(!prefixed, "{}: {n}", i.name),
                        Reference::None if prefixed => assert!(
                            names.contains(&&n[REF_PREFIX.len()..]),
                            "{}: {n} without its distorted field",
                            i.name
                        ),
                        Reference::None => assert!(
                            names.contains(&format!("{REF_PREFIX}{n}").as_str()),
                            "{}: {n} without its ref- field",
                            i.name
                        ),
                    }
                }
            }
        }
        assert!(no_reference().contains(siti::FLAG));
        assert!(!no_reference().contains(MetricSet::PSNR));
        assert!(field("ref-si").is_some() && field("ti").is_some());
    }

    #[test]
    fn options_are_one_spec_per_name_with_valid_defaults() {
        let all: Vec<_> = REGISTRY.iter().flat_map(|e| e.options.iter()).collect();
        for o in &all {
            // An option shared by entries is the same declaration in each.
            assert_eq!(option_spec(o.name), Some(*o), "{}", o.name);
            o.check(&o.default_value()).unwrap();
        }
        let names: Vec<_> = options().map(|o| o.name).collect();
        for (i, n) in names.iter().enumerate() {
            assert!(!names[..i].contains(n), "{n} listed twice by options()");
        }
        assert!(names.contains(&"chroma-upsampling"), "{names:?}");
        // Every entry's configure accepts the defaults.
        for e in REGISTRY {
            (e.configure)(&Options::new()).unwrap();
        }
    }

    #[test]
    fn an_invalid_option_value_names_the_option() {
        let mut o = Options::new();
        o.set("vmaf-model", OptionValue::Text("/nonexistent.json".into()))
            .unwrap();
        let e = Configured::all(MetricSet::VMAF, &o)
            .err()
            .unwrap()
            .to_string();
        assert!(e.starts_with("vmaf-model: "), "{e}");
        // Options of metrics that are not requested are not parsed.
        assert!(Configured::all(MetricSet::PSNR, &o).is_ok());
        let e = o
            .parse("butteraugli-intensity", "0")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("butteraugli-intensity") && e.contains("outside"),
            "{e}"
        );
    }
}
