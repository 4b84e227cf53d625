//! CONTRIBUTING.md's examples of a new metric: `foo` (full-reference, [`foo`]) and `bar`
//! (no-reference, [`bar`]), compiled and run by the engine's tests and never registered.
//! CONTRIBUTING.md shows both files verbatim, from their first `use` on. The tests below
//! fail when it does not, when an example's flag, name, field or option is a registered
//! metric's, and when the next free flag bit that CONTRIBUTING.md names is not the
//! registry's.

mod bar;
mod foo;

use std::path::Path;

use super::{Configured, Entry, Options, REF_PREFIX, Reference, all, all_flags, fields, options};
use crate::format::{FrameLayout, PixelFormat};
use crate::frame::{HostFrame, Plane};
use crate::metric_set::MetricSet;
use crate::plan::Plan;
use crate::scores::Scores;

/// The examples: their file in this folder, their entry and their flag.
const EXAMPLES: [(&str, &Entry, MetricSet); 2] = [
    ("foo.rs", &foo::ENTRY, foo::FLAG),
    ("bar.rs", &bar::ENTRY, bar::FLAG),
];

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn contributing() -> String {
    read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../CONTRIBUTING.md"))
}

/// The code of an example file as CONTRIBUTING.md shows it: after its `//!` header.
fn shown(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/metric/example_entry");
    read(&path.join(file))
        .lines()
        .skip_while(|l| l.starts_with("//!") || l.is_empty())
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn contributing_shows_the_examples() {
    let doc = contributing();
    for (file, _, _) in EXAMPLES {
        let code = shown(file);
        assert!(code.starts_with("use "), "{file}: {code}");
        assert!(
            doc.contains(&format!("```rust\n{code}```\n")),
            "CONTRIBUTING.md's code block differs from engine/src/metric/example_entry/{file} \
             (copy the file from its first `use` on into the block)"
        );
    }
}

#[test]
fn the_examples_clash_with_no_registered_metric() {
    for (file, entry, flag) in EXAMPLES {
        assert_eq!(entry.provides.len(), 1, "{file}");
        let info = &entry.provides[0];
        assert_eq!(info.flag, flag, "{file}");
        assert_eq!(flag.bits().count_ones(), 1, "{file}");
        assert_eq!(
            flag.bits() & all_flags(),
            0,
            "{file}: its bit is a registered metric's"
        );
        assert!(all().all(|i| i.name != info.name), "{file}: {}", info.name);
        for f in info.fields {
            assert!(fields().all(|g| g.name != f.name), "{file}: {}", f.name);
        }
        for o in entry.options {
            assert!(options().all(|p| p.name != o.name), "{file}: {}", o.name);
            o.check(&o.default_value()).unwrap();
        }
        (entry.configure)(&Options::new()).unwrap();
    }
    assert_ne!(foo::FLAG, bar::FLAG);
    assert_eq!(foo::ENTRY.reference, Reference::Full);
    assert_eq!(bar::ENTRY.reference, Reference::None);
    // A no-reference metric declares each field and its `ref-` twin (the registry's rule).
    let names: Vec<_> = bar::ENTRY.provides[0]
        .fields
        .iter()
        .map(|f| f.name)
        .collect();
    for n in &names {
        let twin = match n.strip_prefix(REF_PREFIX) {
            Some(plain) => plain.to_string(),
            None => format!("{REF_PREFIX}{n}"),
        };
        assert!(names.contains(&twin.as_str()), "bar.rs: {n} without {twin}");
    }
}

#[test]
fn the_examples_measure_on_the_cpu() {
    let layout = FrameLayout {
        format: PixelFormat::I420,
        width: 8,
        height: 8,
    };
    let plan = Plan::new(layout, layout).unwrap();
    // The distorted luma is the reference's plus 0, 1, 2, 3 in turn.
    let reference = vec![100u8; 64];
    let distorted: Vec<u8> = (0..64).map(|i| 100 + (i % 4) as u8).collect();
    let chroma = vec![128u8; 16];
    let frame = |luma| {
        let planes = [
            Plane {
                data: luma,
                stride: 8,
            },
            Plane {
                data: &chroma,
                stride: 4,
            },
            Plane {
                data: &chroma,
                stride: 4,
            },
        ];
        HostFrame::new(&planes).validate(&layout, "test").unwrap()
    };
    let (r, d) = (frame(&reference), frame(&distorted));
    for (file, entry, flag) in EXAMPLES {
        let configured = Configured {
            entry,
            settings: (entry.configure)(&Options::new()).unwrap(),
            distorted_only: MetricSet::default(),
        };
        let setup = configured.setup(&plan, flag);
        assert!((entry.notes)(&setup).is_empty(), "{file}");
        (entry.check)(&setup).unwrap();
        let mut metric = (entry.cpu)(&setup).expect("a CPU state for I420");
        let mut scores = Scores::new();
        metric.measure(&plan, &r, &d, &mut scores);
        match file {
            "foo.rs" => assert_eq!(scores.get("foo"), Some(1.5)),
            _ => {
                assert_eq!(scores.get("bar"), Some(101.5));
                assert_eq!(scores.get("ref-bar"), Some(100.0));
            }
        }
        // Not requested: no state.
        assert!((entry.cpu)(&configured.setup(&plan, MetricSet::PSNR)).is_none());
    }
}
