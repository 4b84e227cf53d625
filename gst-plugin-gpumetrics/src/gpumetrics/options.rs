// SPDX-License-Identifier: MPL-2.0
//! The metrics' options as GObject properties: one property per option of the engine's
//! registry ([`gpumetrics_engine::metric::options`]), of the option's type, with its nick,
//! doc, default and range; a choice option's GEnum type is registered here at run time
//! under the name the registry gives it. Nothing in this file knows a metric: a new option
//! is a new property without an edit here.
//!
//! | option kind | property |
//! |-------------|----------|
//! | `Bool`      | `ParamSpecBoolean` |
//! | `Float`     | `ParamSpecDouble` with the option's minimum and maximum |
//! | `Text`      | `ParamSpecString`; NULL or "" sets the default |
//! | `Choice`    | `ParamSpecEnum` of the option's `type_name`, values numbered as declared |

use std::sync::OnceLock;

use gpumetrics_engine::metric::{self, OptionKind, OptionSpec, OptionValue};
use gst::glib;
use gst::glib::translate::IntoGlib;
use gst::prelude::*;

/// The registry option behind property `name`, if it is one.
pub(super) fn spec(name: &str) -> Option<&'static OptionSpec> {
    metric::option_spec(name)
}

/// One property per registry option, changeable in NULL and READY (the options are read
/// when the engine is built).
pub(super) fn param_specs() -> Vec<glib::ParamSpec> {
    metric::options().map(param_spec).collect()
}

fn param_spec(spec: &'static OptionSpec) -> glib::ParamSpec {
    match spec.kind {
        OptionKind::Bool { default } => glib::ParamSpecBoolean::builder(spec.name)
            .nick(spec.nick)
            .blurb(spec.doc)
            .default_value(default)
            .mutable_ready()
            .build(),
        OptionKind::Float { min, max, default } => glib::ParamSpecDouble::builder(spec.name)
            .nick(spec.nick)
            .blurb(spec.doc)
            .minimum(min)
            .maximum(max)
            .default_value(default)
            .mutable_ready()
            .build(),
        OptionKind::Text { default } => glib::ParamSpecString::builder(spec.name)
            .nick(spec.nick)
            .blurb(spec.doc)
            .default_value(Some(default))
            .mutable_ready()
            .build(),
        OptionKind::Choice { default, .. } => {
            let type_ = choice_type(spec).expect("a choice option has a registered enum type");
            let flags = (glib::ParamFlags::READWRITE | gst::PARAM_FLAG_MUTABLE_READY).into_glib();
            let text = |s: &str| std::ffi::CString::new(s).expect("no NUL in registry text");
            let (name, nick, blurb) = (text(spec.name), text(spec.nick), text(spec.doc));
            // SAFETY: valid NUL-terminated strings (copied by GLib), an enum type whose
            // values include `default` (its index, checked by the engine's registry tests),
            // and flags GLib knows; the returned floating reference is sunk by from_glib_none.
            unsafe {
                glib::translate::from_glib_none(glib::gobject_ffi::g_param_spec_enum(
                    name.as_ptr(),
                    nick.as_ptr(),
                    blurb.as_ptr(),
                    type_.into_glib(),
                    default as i32,
                    flags,
                ))
            }
        }
    }
}

/// The GEnum types of the registry's choice options: `(type_name, type)`, registered on
/// first use, once per process.
pub(super) fn choice_types() -> &'static [(&'static str, glib::Type)] {
    static TYPES: OnceLock<Vec<(&'static str, glib::Type)>> = OnceLock::new();
    TYPES.get_or_init(|| {
        metric::options()
            .filter_map(|spec| match spec.kind {
                OptionKind::Choice {
                    type_name, values, ..
                } => Some((type_name, register_enum(type_name, values))),
                _ => None,
            })
            .collect()
    })
}

/// The GEnum type of a choice option.
fn choice_type(spec: &OptionSpec) -> Option<glib::Type> {
    let OptionKind::Choice { type_name, .. } = spec.kind else {
        return None;
    };
    choice_types()
        .iter()
        .find(|(n, _)| *n == type_name)
        .map(|(_, t)| *t)
}

/// Registers a GEnum type: value `i` is `values[i]`, its description the value name and
/// its nick the value nick (what gst-inspect-1.0 and gst-launch-1.0 show and read).
fn register_enum(type_name: &str, values: &[metric::Choice]) -> glib::Type {
    use glib::gobject_ffi::GEnumValue;
    // GLib keeps the names and the table for the life of the process.
    let text = |s: &str| {
        std::ffi::CString::new(s)
            .expect("no NUL in registry text")
            .into_raw()
            .cast_const()
    };
    let table: Vec<GEnumValue> = values
        .iter()
        .enumerate()
        .map(|(i, c)| GEnumValue {
            value: i32::try_from(i).expect("fewer than 2^31 values"),
            value_name: text(c.description),
            value_nick: text(c.nick),
        })
        .chain([GEnumValue {
            value: 0,
            value_name: std::ptr::null(),
            value_nick: std::ptr::null(),
        }])
        .collect();
    let table: &'static [GEnumValue] = Vec::leak(table);
    // SAFETY: a NUL-terminated name (leaked like the table) and a zero-terminated value
    // table that lives as long as the process; called once per type (choice_types).
    let type_: glib::Type = unsafe {
        glib::translate::from_glib(glib::gobject_ffi::g_enum_register_static(
            text(type_name),
            table.as_ptr(),
        ))
    };
    assert!(type_.is_valid(), "{type_name} is registered twice");
    type_
}

/// The property value of an option value.
pub(super) fn to_value(spec: &OptionSpec, value: &OptionValue) -> glib::Value {
    match value {
        OptionValue::Bool(b) => b.to_value(),
        OptionValue::Float(v) => v.to_value(),
        OptionValue::Text(t) => t.to_value(),
        OptionValue::Choice(i) => {
            let class = choice_type(spec).and_then(glib::EnumClass::with_type);
            class
                .and_then(|c| c.to_value(i32::try_from(*i).ok()?))
                .expect("a choice value is one of its enum type's values")
        }
    }
}

/// The option value of a property value (of the property's type: GLib checked it, and the
/// range of numbers and enums). A NULL or empty string is the option's default.
pub(super) fn from_value(spec: &OptionSpec, value: &glib::Value) -> OptionValue {
    const CHECKED: &str = "GLib checks the value type of a property";
    match spec.kind {
        OptionKind::Bool { .. } => OptionValue::Bool(value.get().expect(CHECKED)),
        OptionKind::Float { .. } => OptionValue::Float(value.get().expect(CHECKED)),
        OptionKind::Text { default } => OptionValue::Text(
            value
                .get::<Option<String>>()
                .expect(CHECKED)
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| default.to_string()),
        ),
        OptionKind::Choice { .. } => {
            let (_, v) = glib::EnumValue::from_value(value).expect(CHECKED);
            OptionValue::Choice(usize::try_from(v.value()).expect("enum values from 0"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every option is a property of its kind with the registry's texts and default; a
    /// value round-trips between the property and the option.
    #[test]
    fn every_option_is_a_property_of_its_kind() {
        gst::init().unwrap();
        let specs = param_specs();
        assert_eq!(specs.len(), metric::options().count());
        for (p, o) in specs.iter().zip(metric::options()) {
            assert_eq!(
                (p.name(), p.nick(), p.blurb()),
                (o.name, o.nick, Some(o.doc))
            );
            assert!(
                p.flags().contains(glib::ParamFlags::READWRITE),
                "{}",
                o.name
            );
            assert!(
                p.flags().contains(gst::PARAM_FLAG_MUTABLE_READY),
                "{}",
                o.name
            );
            let default = from_value(o, p.default_value());
            assert_eq!(default, o.default_value(), "{}", o.name);
            assert_eq!(from_value(o, &to_value(o, &default)), default, "{}", o.name);
            match o.kind {
                OptionKind::Bool { .. } => assert!(p.is::<glib::ParamSpecBoolean>()),
                OptionKind::Float { min, max, .. } => {
                    let d = p.downcast_ref::<glib::ParamSpecDouble>().unwrap();
                    assert_eq!((d.minimum(), d.maximum()), (min, max), "{}", o.name);
                }
                OptionKind::Text { .. } => assert!(p.is::<glib::ParamSpecString>()),
                OptionKind::Choice {
                    type_name, values, ..
                } => {
                    assert_eq!(p.value_type().name(), type_name);
                    let class = glib::EnumClass::with_type(p.value_type()).unwrap();
                    let got: Vec<_> = class
                        .values()
                        .iter()
                        .map(|v| (v.value(), v.nick(), v.name()))
                        .collect();
                    let want: Vec<_> = values
                        .iter()
                        .enumerate()
                        .map(|(i, c)| (i as i32, c.nick, c.description))
                        .collect();
                    assert_eq!(got, want, "{}", o.name);
                    let last = OptionValue::Choice(values.len() - 1);
                    assert_eq!(from_value(o, &to_value(o, &last)), last);
                }
            }
        }
    }

    /// NULL and "" mean a text option's default; other text is kept as it is (the engine
    /// checks it when it is built).
    #[test]
    fn an_empty_text_is_the_default() {
        gst::init().unwrap();
        let Some(o) = metric::options().find(|o| matches!(o.kind, OptionKind::Text { .. })) else {
            return;
        };
        let default = o.default_value();
        assert_eq!(from_value(o, &None::<String>.to_value()), default);
        assert_eq!(from_value(o, &"".to_value()), default);
        assert_eq!(
            from_value(o, &"other".to_value()),
            OptionValue::Text("other".into())
        );
    }

    /// A choice type is registered once, however often it is asked for.
    #[test]
    fn choice_types_are_registered_once() {
        gst::init().unwrap();
        let first: Vec<_> = choice_types().to_vec();
        assert_eq!(choice_types(), &first[..]);
        for (name, t) in first {
            assert_eq!(glib::Type::from_name(name), Some(t));
            assert!(t.is_a(glib::Type::ENUM));
        }
    }
}
