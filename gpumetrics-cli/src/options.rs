// SPDX-License-Identifier: MPL-2.0
//! The metrics' options as flags, made at run time from the engine's registry
//! (`gpumetrics_engine::metric::options()`): one `--NAME` per option, with its doc as help,
//! its default, its accepted values, and [`OptionSpec::parse`] as the value parser, so that
//! a bad value is a usage error naming the option. The element has a property of the same
//! name for each ([`set_on`]), so a metric's new option needs no change here.

use std::ffi::OsStr;

use clap::builder::{PossibleValue, StringValueParser, TypedValueParser};
use clap::parser::ValueSource;
use clap::{Arg, ArgMatches, Command};
use gpumetrics_engine::metric::{self, OptionKind, OptionSpec, OptionValue};

/// The help heading of the registry's options.
pub const HEADING: &str = "Metric options";

/// An option with the value given on the command line.
pub type Given = (&'static OptionSpec, OptionValue);

/// clap's value parser for one option: [`OptionSpec::parse`], with the choices (and
/// `true`/`false`) offered as possible values for `--help` and completion.
#[derive(Clone, Copy)]
struct Parser(&'static OptionSpec);

impl TypedValueParser for Parser {
    type Value = OptionValue;

    fn parse_ref(
        &self,
        cmd: &Command,
        arg: Option<&Arg>,
        value: &OsStr,
    ) -> Result<OptionValue, clap::Error> {
        let spec = self.0;
        // clap words the error: "invalid value 'foo' for '--NAME <VALUE>': NAME: why".
        StringValueParser::new()
            .try_map(move |text| spec.parse(&text).map_err(|e| e.to_string()))
            .parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        match self.0.kind {
            OptionKind::Bool { .. } => Some(Box::new(
                ["true", "false"].into_iter().map(PossibleValue::new),
            )),
            OptionKind::Choice { values, .. } => Some(Box::new(
                values
                    .iter()
                    .map(|c| PossibleValue::new(c.nick).help(c.description)),
            )),
            OptionKind::Float { .. } | OptionKind::Text { .. } => None,
        }
    }
}

/// The flag of one option.
pub fn arg(spec: &'static OptionSpec) -> Arg {
    let default = spec.format(&spec.default_value());
    let (value_name, help) = match spec.kind {
        OptionKind::Bool { .. } => ("BOOL", spec.doc.to_string()),
        OptionKind::Float { min, max, .. } => {
            ("NUMBER", format!("{} (range {min} to {max})", spec.doc))
        }
        OptionKind::Text { .. } => ("TEXT", spec.doc.to_string()),
        OptionKind::Choice { .. } => ("VALUE", spec.doc.to_string()),
    };
    let arg = Arg::new(spec.name)
        .long(spec.name)
        .value_name(value_name)
        .help(help)
        .value_parser(Parser(spec))
        .help_heading(HEADING);
    let arg = if default.is_empty() {
        arg
    } else {
        arg.default_value(default)
    };
    match spec.kind {
        // `--ssim-chroma` alone is true, `--ssim-chroma=false` says so; the `=` is needed so
        // that a flag in front of REF does not take REF as its value.
        OptionKind::Bool { .. } => arg
            .num_args(0..=1)
            .require_equals(true)
            .default_missing_value("true"),
        _ => arg.num_args(1),
    }
}

/// The flags of every registered option.
pub fn args() -> impl Iterator<Item = Arg> {
    metric::options().map(arg)
}

/// The options the user gave (the others stay at their defaults, which are the element's).
pub fn given(matches: &ArgMatches) -> Vec<Given> {
    metric::options()
        .filter(|spec| {
            !matches!(
                matches.value_source(spec.name),
                None | Some(ValueSource::DefaultValue)
            )
        })
        .filter_map(|spec| {
            matches
                .get_one::<OptionValue>(spec.name)
                .map(|v| (spec, v.clone()))
        })
        .collect()
}

/// Sets the options on the element, each on the property of its name.
pub fn set_on(element: &gst::Element, options: &[Given]) -> anyhow::Result<()> {
    use anyhow::{Context, anyhow};
    use gst::prelude::*;
    for (spec, value) in options {
        let pspec = element
            .find_property(spec.name)
            .with_context(|| format!("the gpumetrics element has no property `{}`", spec.name))?;
        let v = match value {
            // Text as it is (deserialising would unquote it).
            OptionValue::Text(t) => t.to_value(),
            // `true`, `80`, `catmull-rom` (an enum by its nick).
            _ => {
                let text = spec.format(value);
                gst::glib::Value::deserialize_with_pspec(&text, &pspec)
                    .map_err(|e| anyhow!("--{} {text}: {e}", spec.name))?
            }
        };
        if v.type_() != pspec.value_type() {
            return Err(anyhow!(
                "--{}: the element's property is a {}, not a {}",
                spec.name,
                pspec.value_type(),
                v.type_()
            ));
        }
        element.set_property_from_value(spec.name, &v);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command() -> Command {
        Command::new("t").no_binary_name(true).args(args())
    }

    fn parse(argv: &[&str]) -> Result<Vec<(&'static str, OptionValue)>, clap::Error> {
        let m = command().try_get_matches_from(argv)?;
        Ok(given(&m).into_iter().map(|(s, v)| (s.name, v)).collect())
    }

    #[test]
    fn every_option_is_a_flag_with_its_default() {
        let cmd = command();
        for spec in metric::options() {
            let arg = cmd
                .get_arguments()
                .find(|a| a.get_long() == Some(spec.name))
                .unwrap_or_else(|| panic!("no --{}", spec.name));
            let default: Vec<_> = arg.get_default_values().iter().collect();
            assert_eq!(
                default,
                [&std::ffi::OsString::from(
                    spec.format(&spec.default_value())
                )],
                "{}",
                spec.name
            );
        }
        // Nothing given: nothing set, the element keeps its defaults.
        assert_eq!(parse(&[]).unwrap(), []);
    }

    #[test]
    fn values_are_parsed_by_the_registry() {
        assert_eq!(
            parse(&[
                "--butteraugli-intensity",
                "203",
                "--chroma-upsampling",
                "nearest"
            ])
            .unwrap(),
            [
                ("chroma-upsampling", OptionValue::Choice(1)),
                ("butteraugli-intensity", OptionValue::Float(203.0)),
            ]
        );
        assert_eq!(
            parse(&["--vmaf-model=vmaf_v0.6.1neg"]).unwrap(),
            [("vmaf-model", OptionValue::Text("vmaf_v0.6.1neg".into()))]
        );
        let e = parse(&["--butteraugli-intensity", "0"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("butteraugli-intensity: 0 is outside 1 to 10000"),
            "{e}"
        );
        let e = parse(&["--chroma-upsampling", "foo"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("chroma-upsampling") && e.contains("catmull-rom, nearest"),
            "{e}"
        );
    }

    #[test]
    fn bools_stand_alone_or_take_a_value() {
        let t = OptionValue::Bool(true);
        let f = OptionValue::Bool(false);
        assert_eq!(parse(&["--ssim-chroma"]).unwrap(), [("ssim-chroma", t)]);
        assert_eq!(
            parse(&["--ssim-chroma=false", "--vmaf-features=yes"]).unwrap(),
            [
                ("ssim-chroma", f),
                ("vmaf-features", OptionValue::Bool(true))
            ]
        );
        // Without `=`, the next word is not its value.
        assert!(parse(&["--ssim-chroma", "false"]).is_err());
        let e = parse(&["--ssim-chroma=maybe"]).unwrap_err().to_string();
        assert!(
            e.contains("ssim-chroma: `maybe` is not true or false"),
            "{e}"
        );
    }

    #[test]
    fn options_are_set_on_the_element_by_name() {
        gst::init().unwrap();
        gstgpumetrics::plugin_register_static().unwrap();
        let element = gst::ElementFactory::make("gpumetrics").build().unwrap();
        let given: Vec<Given> = metric::options()
            .map(|spec| {
                let value = match spec.kind {
                    OptionKind::Bool { default } => OptionValue::Bool(!default),
                    OptionKind::Float { max, .. } => OptionValue::Float(max),
                    OptionKind::Text { .. } => OptionValue::Text("some \"model\"".into()),
                    OptionKind::Choice { values, .. } => OptionValue::Choice(values.len() - 1),
                };
                (spec, value)
            })
            .collect();
        set_on(&element, &given).unwrap();
        use gst::prelude::*;
        for (spec, value) in &given {
            let v = element.property_value(spec.name);
            let text = match value {
                OptionValue::Text(_) => v.get::<String>().unwrap(),
                OptionValue::Choice(_) => {
                    let (_, e) = gst::glib::EnumValue::from_value(&v).unwrap();
                    e.nick().to_string()
                }
                _ => v.serialize().unwrap().to_string(),
            };
            assert_eq!(spec.parse(&text).unwrap(), *value, "{}: {text}", spec.name);
        }
    }
}
