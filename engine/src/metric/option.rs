//! Metric options: declared once, in the registry entry of the metric that reads them, and
//! offered from there by every front end (the element registers one GObject property per
//! option, the `gpumetrics` command one flag). Values are set by name ([`Options::set`],
//! [`Options::parse`]) and handed to each metric, which turns them into its own typed
//! settings when an engine is built (`Entry::configure`).

use crate::color::ChromaUpsampling;
use crate::error::EngineError;

/// One value of a choice option (a GEnum value for the element).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    /// The value as users write it (`catmull-rom`), the enum nick.
    pub nick: &'static str,
    /// One line for `gst-inspect-1.0` and `--help`, the enum value name.
    pub description: &'static str,
}

/// The type, default and accepted values of an option.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OptionKind {
    Bool {
        default: bool,
    },
    /// A number within `min..=max`.
    Float {
        min: f64,
        max: f64,
        default: f64,
    },
    /// Free text checked by the metric when it is configured (e.g. a model name or path).
    Text {
        default: &'static str,
    },
    /// One of `values`; `type_name` is the GEnum type the element registers for it.
    Choice {
        type_name: &'static str,
        values: &'static [Choice],
        default: usize,
    },
}

/// An option as the registry declares it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OptionSpec {
    /// Property and flag name, e.g. `vmaf-model` (`--vmaf-model`).
    pub name: &'static str,
    /// Short title (the GObject nick).
    pub nick: &'static str,
    /// What it does, one paragraph (the GObject blurb and the `--help` text).
    pub doc: &'static str,
    pub kind: OptionKind,
}

impl OptionSpec {
    /// The default value.
    pub fn default_value(&self) -> OptionValue {
        match self.kind {
            OptionKind::Bool { default } => OptionValue::Bool(default),
            OptionKind::Float { default, .. } => OptionValue::Float(default),
            OptionKind::Text { default } => OptionValue::Text(default.to_string()),
            OptionKind::Choice { default, .. } => OptionValue::Choice(default),
        }
    }

    /// The accepted values, in words (for error messages and `--help`).
    pub fn accepted(&self) -> String {
        match self.kind {
            OptionKind::Bool { .. } => "true or false".into(),
            OptionKind::Float { min, max, .. } => format!("a number from {min} to {max}"),
            OptionKind::Text { .. } => "text".into(),
            OptionKind::Choice { values, .. } => {
                values.iter().map(|c| c.nick).collect::<Vec<_>>().join(", ")
            }
        }
    }

    fn invalid(&self, why: String) -> EngineError {
        EngineError::InvalidOption {
            option: self.name,
            why,
        }
    }

    /// Checks that `value` is of this option's type and within its range.
    pub fn check(&self, value: &OptionValue) -> Result<(), EngineError> {
        match (self.kind, value) {
            (OptionKind::Bool { .. }, OptionValue::Bool(_))
            | (OptionKind::Text { .. }, OptionValue::Text(_)) => Ok(()),
            (OptionKind::Float { min, max, .. }, OptionValue::Float(v)) => {
                if (min..=max).contains(v) {
                    Ok(())
                } else {
                    Err(self.invalid(format!("{v} is outside {min} to {max}")))
                }
            }
            (OptionKind::Choice { values, .. }, OptionValue::Choice(i)) => {
                if *i < values.len() {
                    Ok(())
                } else {
                    Err(self.invalid(format!(
                        "no value number {i}; accepted: {}",
                        self.accepted()
                    )))
                }
            }
            _ => Err(self.invalid(format!(
                "{value:?} is of the wrong type; accepted: {}",
                self.accepted()
            ))),
        }
    }

    /// The value written as text (`true`, `80`, `vmaf_v0.6.1`, `catmull-rom`).
    pub fn parse(&self, text: &str) -> Result<OptionValue, EngineError> {
        let t = text.trim();
        let value = match self.kind {
            OptionKind::Bool { .. } => match t.to_ascii_lowercase().as_str() {
                "true" | "yes" | "on" | "1" => OptionValue::Bool(true),
                "false" | "no" | "off" | "0" => OptionValue::Bool(false),
                _ => {
                    return Err(self.invalid(format!("`{t}` is not true or false")));
                }
            },
            OptionKind::Float { .. } => {
                let v: f64 = t
                    .parse()
                    .map_err(|_| self.invalid(format!("`{t}` is not a number")))?;
                OptionValue::Float(v)
            }
            OptionKind::Text { .. } => OptionValue::Text(t.to_string()),
            OptionKind::Choice { values, .. } => {
                let i = values.iter().position(|c| c.nick == t).ok_or_else(|| {
                    self.invalid(format!("`{t}` is not one of {}", self.accepted()))
                })?;
                OptionValue::Choice(i)
            }
        };
        self.check(&value)?;
        Ok(value)
    }

    /// The value as text, as [`OptionSpec::parse`] reads it.
    pub fn format(&self, value: &OptionValue) -> String {
        match (self.kind, value) {
            (OptionKind::Choice { values, .. }, OptionValue::Choice(i)) => {
                values.get(*i).map_or("?", |c| c.nick).to_string()
            }
            (_, OptionValue::Bool(b)) => b.to_string(),
            (_, OptionValue::Float(v)) => v.to_string(),
            (_, OptionValue::Text(t)) => t.clone(),
            (_, OptionValue::Choice(i)) => i.to_string(),
        }
    }
}

/// A value of an option.
#[derive(Clone, Debug, PartialEq)]
pub enum OptionValue {
    Bool(bool),
    Float(f64),
    Text(String),
    /// Index into the option's `values`.
    Choice(usize),
}

/// The options of an engine: every registered option, at its default unless set.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Options {
    set: Vec<(&'static str, OptionValue)>,
}

impl Options {
    pub fn new() -> Options {
        Options::default()
    }

    /// Sets a declared option to a value its spec accepts (checked here); empty text
    /// sets a text option back to its default. Setting by name, which looks the spec up
    /// among the registered metrics', is `crate::metric`'s ([`Options::set`]).
    pub(crate) fn put(
        &mut self,
        spec: &'static OptionSpec,
        value: OptionValue,
    ) -> Result<(), EngineError> {
        spec.check(&value)?;
        if matches!(&value, OptionValue::Text(t) if t.is_empty()) {
            self.set.retain(|(n, _)| *n != spec.name);
            return Ok(());
        }
        match self.set.iter_mut().find(|(n, _)| *n == spec.name) {
            Some((_, v)) => *v = value,
            None => self.set.push((spec.name, value)),
        }
        Ok(())
    }

    /// The value of a declared option: the one set, else its default.
    pub(crate) fn value(&self, spec: &OptionSpec) -> OptionValue {
        self.set
            .iter()
            .find(|(n, _)| *n == spec.name)
            .map_or_else(|| spec.default_value(), |(_, v)| v.clone())
    }

    /// A boolean option's value (the metric reading its own declared option).
    pub(crate) fn bool(&self, spec: &OptionSpec) -> bool {
        match self.value(spec) {
            OptionValue::Bool(b) => b,
            other => unreachable!("{} is not a bool: {other:?}", spec.name),
        }
    }

    pub(crate) fn float(&self, spec: &OptionSpec) -> f64 {
        match self.value(spec) {
            OptionValue::Float(v) => v,
            other => unreachable!("{} is not a number: {other:?}", spec.name),
        }
    }

    pub(crate) fn text(&self, spec: &OptionSpec) -> String {
        match self.value(spec) {
            OptionValue::Text(t) => t,
            other => unreachable!("{} is not text: {other:?}", spec.name),
        }
    }

    /// A choice option's value as its index into the declared values.
    pub(crate) fn choice(&self, spec: &OptionSpec) -> usize {
        match self.value(spec) {
            OptionValue::Choice(i) => i,
            other => unreachable!("{} is not a choice: {other:?}", spec.name),
        }
    }
}

impl ChromaUpsampling {
    /// The `chroma-upsampling` option's value.
    pub(crate) fn from_options(options: &Options) -> ChromaUpsampling {
        Self::ALL[options.choice(&CHROMA_UPSAMPLING)]
    }
}

/// The option of the linear-light metrics (SSIMULACRA2, Butteraugli) that picks the
/// [`ChromaUpsampling`]; listed by each of their registry entries, one property.
pub(crate) const CHROMA_UPSAMPLING: OptionSpec = OptionSpec {
    name: "chroma-upsampling",
    nick: "Chroma upsampling",
    doc: "Linear-light metrics (ssimulacra2) on 4:2:0 / 4:2:2 input: catmull-rom (bicubic at \
          the caps' chroma siting) or nearest (equal to the ssimulacra2 crate's video input; \
          catmull-rom scores higher, see the README)",
    kind: OptionKind::Choice {
        type_name: "GstGpuMetricsChromaUpsampling",
        values: &[
            Choice {
                nick: "catmull-rom",
                description: "Catmull-Rom: 4-tap bicubic at the caps' chroma siting",
            },
            Choice {
                nick: "nearest",
                description: "Nearest: the sample at x/2 (as the ssimulacra2 crate's video \
                              input reads it)",
            },
        ],
        default: 0,
    },
};

#[cfg(test)]
mod tests {
    use super::*;

    const NITS: OptionSpec = OptionSpec {
        name: "x-nits",
        nick: "Nits",
        doc: "A luminance",
        kind: OptionKind::Float {
            min: 1.0,
            max: 10000.0,
            default: 80.0,
        },
    };
    const MODE: OptionSpec = OptionSpec {
        name: "x-mode",
        nick: "Mode",
        doc: "A mode",
        kind: OptionKind::Choice {
            type_name: "XMode",
            values: &[
                Choice {
                    nick: "a",
                    description: "A",
                },
                Choice {
                    nick: "b",
                    description: "B",
                },
            ],
            default: 0,
        },
    };

    #[test]
    fn values_are_parsed_checked_and_formatted() {
        assert_eq!(NITS.parse(" 203 ").unwrap(), OptionValue::Float(203.0));
        let e = NITS.parse("0.5").unwrap_err().to_string();
        assert!(
            e.starts_with("x-nits: ") && e.contains("outside 1 to 10000"),
            "{e}"
        );
        assert!(NITS.parse("bright").is_err());
        assert_eq!(MODE.parse("b").unwrap(), OptionValue::Choice(1));
        let e = MODE.parse("c").unwrap_err().to_string();
        assert!(e.contains("x-mode") && e.contains("a, b"), "{e}");
        assert_eq!(MODE.format(&OptionValue::Choice(1)), "b");
        assert!(MODE.check(&OptionValue::Choice(2)).is_err());
        assert!(NITS.check(&OptionValue::Bool(true)).is_err());
        assert_eq!(NITS.default_value(), OptionValue::Float(80.0));
    }

    #[test]
    fn options_fall_back_to_defaults_and_refuse_unknown_names() {
        let mut o = Options::new();
        let spec = crate::metric::options().next().expect("registered options");
        assert_eq!(o.get(spec.name), Some(spec.default_value()));
        let e = o.parse("no-such-option", "1").unwrap_err().to_string();
        assert!(e.contains("no option `no-such-option`"), "{e}");
        assert!(e.contains(spec.name), "{e}");
        assert_eq!(o.get("no-such-option"), None);
        o.set("vmaf-model", OptionValue::Text("x.json".into()))
            .unwrap();
        o.set("vmaf-model", OptionValue::Text(String::new()))
            .unwrap();
        assert_eq!(
            o.get("vmaf-model"),
            crate::metric::option_spec("vmaf-model").map(|s| s.default_value())
        );
    }
}
