//! The engine's modules import one another without cycles: every file of engine/src may
//! use only files below it, so that each layer (core: frames, formats, errors → registry:
//! entries, options, fields → scheduler → backends → metrics → the engine and the list of
//! metrics) can be read, tested and changed without the ones above it.
//!
//! The check reads the sources: each file is a module; a `use` or a path through
//! `crate::` or `super::` is an edge to the file that defines what it names (following
//! `pub use` re-exports to the file that defines the item). Test code (`#[cfg(test)]`
//! items) is left out: a test may use anything. It fails naming each cycle's files.
//!
//! Run it alone with `cargo test -p gpumetrics-engine --test layers`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module path (`crate::metric::psnr`) → source text without comments and test code.
type Sources = BTreeMap<String, String>;

fn module_path(rel: &Path) -> String {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    std::iter::once("crate".to_string())
        .chain(parts)
        .collect::<Vec<_>>()
        .join("::")
}

/// The text without comments, string literals' contents, test-only items, and the
/// `mod` declarations of test-only modules.
fn strip(text: &str) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut test_modules = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t.starts_with("//") {
            continue;
        }
        if t.starts_with("#[cfg(test)]") {
            // The next item is test code: a declaration, a `use`, or a block to the end of
            // the file (test modules come last).
            let Some(next) = lines.next() else { break };
            let n = next.trim();
            if let Some(name) = n
                .strip_prefix("mod ")
                .or_else(|| n.strip_prefix("pub(crate) mod "))
                .and_then(|m| m.strip_suffix(';'))
            {
                test_modules.push(name.to_string());
                continue;
            }
            if n.starts_with("mod ") && n.ends_with('{') {
                // A test module: to the end of the file.
                break;
            }
            // Any other item (a `use`, a function, an impl): skipped to its end, where its
            // braces close or its statement ends.
            let mut depth = 0i32;
            let mut line = n.to_string();
            loop {
                depth += line.matches('{').count() as i32 - line.matches('}').count() as i32;
                let t = line.trim_end();
                if depth <= 0 && (t.ends_with(';') || t.ends_with('}')) {
                    break;
                }
                match lines.next() {
                    Some(l) => line = l.to_string(),
                    None => break,
                }
            }
            continue;
        }
        let code = match line.find("//") {
            Some(i) if !line[..i].contains('"') => &line[..i],
            _ => line,
        };
        out.push_str(code);
        out.push('\n');
    }
    // String literals may hold paths in messages: blank their contents.
    let mut clean = String::with_capacity(out.len());
    let mut in_str = false;
    let mut prev = ' ';
    for c in out.chars() {
        if c == '"' && prev != '\\' && prev != '\'' {
            in_str = !in_str;
            clean.push(c);
        } else if !in_str {
            clean.push(c);
        }
        prev = if prev == '\\' && c == '\\' { ' ' } else { c };
    }
    (clean, test_modules)
}

/// Expands a `use` tree (`crate::a::{b, c::{d, self}}`) to its paths.
fn expand(tree: &str) -> Vec<String> {
    let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
    let Some(open) = tree.find('{') else {
        let path = tree.split("as").next().unwrap_or(&tree);
        return vec![path.trim_end_matches("::").to_string()];
    };
    let prefix = &tree[..open];
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .flat_map(|p| {
            if p == "self" {
                vec![prefix.trim_end_matches("::").to_string()]
            } else {
                expand(&format!("{prefix}{p}"))
            }
        })
        .collect()
}

/// The `use` statements' paths and the text without them.
fn uses(text: &str) -> (Vec<(bool, String)>, String) {
    let mut paths = Vec::new();
    let mut rest = String::new();
    let mut i = 0;
    let bytes = text.as_bytes();
    while i < text.len() {
        let at_word = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        let tail = &text[i..];
        let public = tail.starts_with("pub use ") || tail.starts_with("pub(crate) use ");
        if at_word && (tail.starts_with("use ") || public) {
            let end = tail.find(';').map_or(text.len(), |e| i + e);
            let body = &text[i..end];
            let body = &body[body.find("use ").unwrap() + 4..];
            for p in expand(body) {
                paths.push((public, p));
            }
            i = end + 1;
            continue;
        }
        let c = tail.chars().next().unwrap();
        rest.push(c);
        i += c.len_utf8();
    }
    (paths, rest)
}

/// The paths written in code that start with one of `starts` (`crate::`, `super::`, a
/// child module's `cpu::`), each at a word's start.
fn paths_from(text: &str, starts: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for start in starts {
        let mut from = 0;
        while let Some(pos) = text[from..].find(start.as_str()) {
            let i = from + pos;
            from = i + start.len();
            if i > 0 {
                let b = text.as_bytes()[i - 1];
                if b.is_ascii_alphanumeric() || b == b'_' || b == b':' {
                    continue;
                }
            }
            let path: String = text[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            out.push(path.trim_end_matches(':').to_string());
        }
    }
    out
}

/// Paths through `crate::` or `super::` written in code.
fn inline_paths(text: &str) -> Vec<String> {
    paths_from(text, &["crate::".to_string(), "super::".to_string()])
}

/// Paths in code that start with a child module's name (`cpu::Psnr` in a metric's
/// `mod.rs`).
fn child_paths(module: &str, text: &str, modules: &BTreeSet<String>) -> Vec<String> {
    let prefix = format!("{module}::");
    let children: Vec<String> = modules
        .iter()
        .filter_map(|m| m.strip_prefix(&prefix))
        .filter(|c| !c.contains("::"))
        .map(|c| format!("{c}::"))
        .collect();
    paths_from(text, &children)
}

struct Graph {
    /// Module → (name → the path it re-exports).
    reexports: BTreeMap<String, BTreeMap<String, String>>,
    /// Module → the full paths it refers to.
    refs: BTreeMap<String, Vec<String>>,
    modules: BTreeSet<String>,
}

/// `path` made absolute from module `module` (`super::x` in `crate::a::b` is
/// `crate::a::x`; a first segment that is a child module is relative); `None` for paths
/// outside the crate.
fn absolute(module: &str, path: &str, modules: &BTreeSet<String>) -> Option<String> {
    let mut base: Vec<&str> = module.split("::").collect();
    let mut segs: Vec<&str> = path.split("::").collect();
    match segs.first().copied() {
        Some("crate") => return Some(path.to_string()),
        Some("self") => {
            segs.remove(0);
        }
        Some("super") => {
            while segs.first() == Some(&"super") {
                segs.remove(0);
                base.pop();
            }
        }
        Some(first) if modules.contains(&format!("{module}::{first}")) => {}
        _ => return None,
    }
    base.extend(segs);
    Some(base.join("::"))
}

impl Graph {
    fn new(sources: &Sources) -> Graph {
        let modules: BTreeSet<String> = sources.keys().cloned().collect();
        let mut reexports = BTreeMap::new();
        let mut refs = BTreeMap::new();
        for (m, text) in sources {
            let (used, rest) = uses(text);
            let mut list = Vec::new();
            let mut exported = BTreeMap::new();
            for (public, p) in used {
                let Some(abs) = absolute(m, &p, &modules) else {
                    continue;
                };
                if public {
                    let name = abs.rsplit("::").next().unwrap_or_default().to_string();
                    exported.insert(name, abs.clone());
                }
                list.push(abs);
            }
            for p in inline_paths(&rest)
                .into_iter()
                .chain(child_paths(m, &rest, &modules))
            {
                if let Some(abs) = absolute(m, &p, &modules) {
                    list.push(abs);
                }
            }
            reexports.insert(m.clone(), exported);
            refs.insert(m.clone(), list);
        }
        Graph {
            reexports,
            refs,
            modules,
        }
    }

    /// The file that defines what `path` names: the longest module prefix, followed
    /// through that module's re-exports.
    fn owner(&self, path: &str, depth: usize) -> Option<String> {
        let segs: Vec<&str> = path.split("::").collect();
        for n in (1..=segs.len()).rev() {
            let m = segs[..n].join("::");
            if !self.modules.contains(&m) {
                continue;
            }
            if n < segs.len()
                && depth < 8
                && let Some(target) = self.reexports[&m].get(segs[n])
                && *target != path
            {
                let rest = segs[n + 1..].join("::");
                let next = if rest.is_empty() {
                    target.clone()
                } else {
                    format!("{target}::{rest}")
                };
                return self.owner(&next, depth + 1);
            }
            return Some(m);
        }
        None
    }

    /// Unit → the units it uses.
    fn edges(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (m, list) in &self.refs {
            let from = unit(m);
            let to = out.entry(from.clone()).or_default();
            for o in list.iter().filter_map(|p| self.owner(p, 0)) {
                let o = unit(&o);
                if o != from {
                    to.insert(o);
                }
            }
        }
        out
    }
}

/// The unit a module belongs to: a metric's folder (`crate::metric::vmaf` with its
/// backends, formulas and sub-features) is one, its entry and its backends' states being
/// one metric; every other file is its own.
fn unit(module: &str) -> String {
    let segs: Vec<&str> = module.split("::").collect();
    match segs.as_slice() {
        ["crate", "metric", name, _, ..] => format!("crate::metric::{name}"),
        _ => module.to_string(),
    }
}

fn is_child(child: &str, parent: &str) -> bool {
    child.len() > parent.len() + 2
        && child.starts_with(parent)
        && child[parent.len()..].starts_with("::")
}

/// The strongly connected components with more than one file (Tarjan).
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        t.index.insert(v, t.next);
        t.low.insert(v, t.next);
        t.next += 1;
        t.stack.push(v);
        t.on.insert(v);
        let edges = t.edges;
        for w in edges.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !edges.contains_key(w) {
                continue;
            }
            if !t.index.contains_key(w) {
                visit(t, w);
                let l = t.low[v].min(t.low[w]);
                t.low.insert(v, l);
            } else if t.on.contains(w) {
                let l = t.low[v].min(t.index[w]);
                t.low.insert(v, l);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

/// engine/src's modules, without the test-only ones.
fn engine_sources() -> Sources {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs")
                // A metric's GPU checks are modules of the cuda_kernels test binary, not of
                // the library (engine/build.rs lists them there).
                && p.file_name().is_none_or(|n| n != "gpu_checks.rs")
            {
                files.push(p);
            }
        }
    }
    let mut sources = Sources::new();
    let mut test_only = Vec::new();
    for f in files {
        let m = module_path(f.strip_prefix(&root).unwrap());
        let (text, tests) = strip(&std::fs::read_to_string(&f).unwrap());
        test_only.extend(tests.into_iter().map(|t| format!("{m}::{t}")));
        sources.insert(m, text);
    }
    sources.retain(|m, _| !test_only.iter().any(|t| m == t || is_child(m, t)));
    sources
}

#[test]
fn the_engine_has_no_import_cycles() {
    let sources = engine_sources();
    assert!(
        sources.len() > 40,
        "the sources were found: {}",
        sources.len()
    );
    let edges = Graph::new(&sources).edges();
    let found = cycles(&edges);
    let text: Vec<String> = found
        .iter()
        .map(|c| {
            let inner: Vec<String> = c
                .iter()
                .flat_map(|a| {
                    edges[a]
                        .iter()
                        .filter(|b| c.contains(b))
                        .map(move |b| format!("  {a} -> {b}"))
                })
                .collect();
            format!("{}\n{}", c.join(", "), inner.join("\n"))
        })
        .collect();
    assert!(
        found.is_empty(),
        "{} import cycle(s) among engine/src's files:\n{}",
        found.len(),
        text.join("\n")
    );
}

/// The check finds what it is for: a parent whose child uses `super::`, a cycle through
/// a re-export, and none where the uses go one way.
#[test]
fn the_check_finds_cycles_and_only_cycles() {
    let mk = |files: &[(&str, &str)]| -> Sources {
        files
            .iter()
            .map(|(m, t)| (m.to_string(), strip(t).0))
            .collect()
    };
    let registry = mk(&[
        ("crate", "mod metric;\npub use metric::Entry;\n"),
        (
            "crate::metric",
            "mod psnr;\npub struct Entry;\npub const R: &[Entry] = &[psnr::ENTRY];\n",
        ),
        (
            "crate::metric::psnr",
            "use super::Entry;\npub const ENTRY: Entry = Entry;\n",
        ),
    ]);
    let found = cycles(&Graph::new(&registry).edges());
    assert_eq!(found, [vec!["crate::metric", "crate::metric::psnr"]]);

    let reexport = mk(&[
        ("crate", "pub use error::Error;\npub use frame::Frame;\n"),
        ("crate::error", "use crate::Frame;\npub struct Error;\n"),
        (
            "crate::frame",
            "/// crate::error is only named in a comment\npub struct Frame(crate::error::Error);\n",
        ),
    ]);
    let found = cycles(&Graph::new(&reexport).edges());
    assert_eq!(found, [vec!["crate::error", "crate::frame"]]);

    let after_test_fn = mk(&[
        ("crate", "pub use a::A;\npub use b::B;\n"),
        (
            "crate::a",
            "pub struct A;\nimpl A {\n    #[cfg(test)]\n    fn t() {\n        crate::b::B;\n    }\n    fn f() -> crate::b::B { crate::b::B }\n}\n",
        ),
        ("crate::b", "pub struct B(crate::a::A);\n"),
    ]);
    let found = cycles(&Graph::new(&after_test_fn).edges());
    assert_eq!(
        found,
        [vec!["crate::a", "crate::b"]],
        "code after a test function counts"
    );

    let layered = mk(&[
        ("crate", "pub use error::Error;\npub use frame::Frame;\n"),
        ("crate::error", "pub struct Error;\n"),
        (
            "crate::frame",
            "use crate::{error::{self, Error}};\n\"crate::frame in a string\";\n#[cfg(test)]\nmod tests {\n use crate::Frame;\n}\n",
        ),
    ]);
    assert!(cycles(&Graph::new(&layered).edges()).is_empty());
}
