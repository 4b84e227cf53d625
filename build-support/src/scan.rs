//! Reads the kernel crate's sources with `syn`: `kernel!` declarations, `shared!` arrays and
//! the integer `const`s their lengths may use.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use quote::ToTokens;
use syn::parse::{Parse, ParseStream};
use syn::visit::Visit;
use syn::{Expr, FnArg, ItemFn, Lit, Pat, Type};

/// How a kernel parameter is passed, with its host-side type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamKind {
    /// A primitive number passed by value (host type = device type).
    Scalar {
        /// `u32`, `f32`, ...
        ty: String,
        /// Its size in bytes.
        size: usize,
    },
    /// `*const T`: a `DevPtr<host T>` on the host.
    ConstPtr {
        /// Host path of `T`.
        pointee: String,
    },
    /// `*mut T`: a `DevPtrMut<host T>` on the host.
    MutPtr {
        /// Host path of `T`.
        pointee: String,
    },
    /// A `#[repr(C)] Copy` struct of the kernel crate passed by value.
    Struct {
        /// Its path as seen from the host crate (`::gpumetrics_kernels::psnr::Channel`).
        host_path: String,
    },
}

/// One kernel parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// Its name in the kernel.
    pub name: String,
    /// The type as written in the kernel signature.
    pub device_ty: String,
    /// How it is passed.
    pub kind: ParamKind,
}

impl Param {
    /// Size in bytes when known without the host compiler (not for structs).
    pub fn known_size(&self) -> Option<usize> {
        match &self.kind {
            ParamKind::Scalar { size, .. } => Some(*size),
            ParamKind::ConstPtr { .. } | ParamKind::MutPtr { .. } => Some(8),
            ParamKind::Struct { .. } => None,
        }
    }
}

/// One `kernel!` function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelDecl {
    /// The kernel (and PTX entry) name.
    pub name: String,
    /// Its parameters, in order.
    pub params: Vec<Param>,
    /// Its doc comment lines.
    pub docs: Vec<String>,
    /// The source file.
    pub file: PathBuf,
}

/// One `shared!(static NAME: [T; N])` declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedDecl {
    /// `NAME` (the symbol is `gpumetrics_shared_NAME`).
    pub name: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Alignment of the element type.
    pub align: u64,
    /// The source file.
    pub file: PathBuf,
}

/// Everything found in a kernel crate.
#[derive(Debug, Default)]
pub struct Scan {
    /// Kernels in file order.
    pub kernels: Vec<KernelDecl>,
    /// Shared arrays, one per name.
    pub shared: Vec<SharedDecl>,
}

const PRIMITIVES: &[(&str, usize)] = &[
    ("u8", 1),
    ("i8", 1),
    ("u16", 2),
    ("i16", 2),
    ("u32", 4),
    ("i32", 4),
    ("f32", 4),
    ("u64", 8),
    ("i64", 8),
    ("f64", 8),
    ("usize", 8),
    ("isize", 8),
];

fn primitive(name: &str) -> Option<usize> {
    PRIMITIVES.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// Tokens as compact source text (`*const u8`, `crate::a::B`).
fn tokens(t: &impl ToTokens) -> String {
    t.to_token_stream()
        .to_string()
        .replace(" :: ", "::")
        .replace(":: ", "::")
        .replace("* const ", "*const ")
        .replace("* mut ", "*mut ")
}

/// The module path of a source file relative to `src/` (`lib.rs` → `[]`, `a/b.rs` and
/// `a/b/mod.rs` → `[a, b]`).
pub fn module_of(src_dir: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src_dir).unwrap_or(file);
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs").to_string();
        if !(stem == "mod" || (parts.is_empty() && (stem == "lib" || stem == "main"))) {
            parts.push(stem);
        }
    }
    parts
}

struct KernelFns(Vec<ItemFn>);

impl Parse for KernelFns {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut v = Vec::new();
        while !input.is_empty() {
            v.push(input.parse()?);
        }
        Ok(Self(v))
    }
}

struct SharedArgs {
    name: syn::Ident,
    ty: Type,
}

impl Parse for SharedArgs {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        input.parse::<syn::Token![static]>()?;
        let name = input.parse()?;
        input.parse::<syn::Token![:]>()?;
        let ty = input.parse()?;
        if input.peek(syn::Token![;]) {
            input.parse::<syn::Token![;]>()?;
        }
        Ok(Self { name, ty })
    }
}

struct RawShared {
    name: String,
    ty: Type,
    file: PathBuf,
}

struct Visitor<'a> {
    host_crate: &'a str,
    file: PathBuf,
    module: Vec<String>,
    kernels: Vec<KernelDecl>,
    shared: Vec<RawShared>,
    consts: &'a mut HashMap<String, Vec<Expr>>,
    errors: Vec<String>,
}

fn last_segment(m: &syn::Macro) -> String {
    m.path
        .segments
        .last()
        .map(|s| s.ident.to_string())
        .unwrap_or_default()
}

impl<'ast> Visit<'ast> for Visitor<'_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if m.content.is_some() {
            self.module.push(m.ident.to_string());
            syn::visit::visit_item_mod(self, m);
            self.module.pop();
        }
    }

    fn visit_item_const(&mut self, c: &'ast syn::ItemConst) {
        self.consts
            .entry(c.ident.to_string())
            .or_default()
            .push((*c.expr).clone());
        syn::visit::visit_item_const(self, c);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        match last_segment(m).as_str() {
            "kernel" => match m.parse_body::<KernelFns>() {
                Ok(fns) => {
                    for f in &fns.0 {
                        match self.kernel(f) {
                            Ok(k) => self.kernels.push(k),
                            Err(e) => self.errors.push(format!(
                                "{}: kernel `{}`: {e}",
                                self.file.display(),
                                f.sig.ident
                            )),
                        }
                        self.visit_item_fn(f);
                    }
                }
                Err(e) => self.errors.push(format!(
                    "{}: cannot parse a kernel! block: {e}",
                    self.file.display()
                )),
            },
            "shared" => match m.parse_body::<SharedArgs>() {
                Ok(s) => self.shared.push(RawShared {
                    name: s.name.to_string(),
                    ty: s.ty,
                    file: self.file.clone(),
                }),
                Err(e) => self.errors.push(format!(
                    "{}: cannot parse shared!({}): {e}; expected `shared!(static NAME: [T; N])`",
                    self.file.display(),
                    m.tokens
                )),
            },
            _ => {}
        }
    }
}

impl Visitor<'_> {
    fn kernel(&self, f: &ItemFn) -> Result<KernelDecl, String> {
        let sig = &f.sig;
        if !matches!(sig.safety, syn::Safety::Unsafe(_)) {
            return Err("kernels are declared `unsafe fn`".into());
        }
        if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
            return Err("kernels cannot be generic".into());
        }
        if let syn::ReturnType::Type(_, t) = &sig.output
            && !matches!(&**t, Type::Tuple(t) if t.elems.is_empty())
        {
            return Err("kernels return nothing".into());
        }
        let mut params = Vec::new();
        for arg in &sig.inputs {
            let FnArg::Typed(pt) = arg else {
                return Err("kernels take no `self`".into());
            };
            let Pat::Ident(pi) = &*pt.pat else {
                return Err(format!("parameter `{}`: use a plain name", tokens(&pt.pat)));
            };
            let name = pi.ident.to_string();
            let kind = self
                .param_kind(&pt.ty)
                .map_err(|e| format!("parameter `{name}`: {e}"))?;
            params.push(Param {
                name,
                device_ty: tokens(&*pt.ty),
                kind,
            });
        }
        let docs = f
            .attrs
            .iter()
            .filter(|a| a.path().is_ident("doc"))
            .filter_map(|a| match &a.meta {
                syn::Meta::NameValue(nv) => match &nv.value {
                    Expr::Lit(l) => match &l.lit {
                        Lit::Str(s) => Some(s.value()),
                        _ => None,
                    },
                    _ => None,
                },
                _ => None,
            })
            .collect();
        Ok(KernelDecl {
            name: sig.ident.to_string(),
            params,
            docs,
            file: self.file.clone(),
        })
    }

    fn param_kind(&self, ty: &Type) -> Result<ParamKind, String> {
        match ty {
            Type::Ptr(p) => {
                let pointee = self.pointee(&p.elem)?;
                Ok(if matches!(p.mutability, syn::PointerMutability::Mut(_)) {
                    ParamKind::MutPtr { pointee }
                } else {
                    ParamKind::ConstPtr { pointee }
                })
            }
            Type::Path(tp) if tp.qself.is_none() => {
                if let Some(id) = tp.path.get_ident()
                    && let Some(size) = primitive(&id.to_string())
                {
                    return Ok(ParamKind::Scalar {
                        ty: id.to_string(),
                        size,
                    });
                }
                Ok(ParamKind::Struct {
                    host_path: self.host_path(&tp.path)?,
                })
            }
            Type::Paren(p) => self.param_kind(&p.elem),
            Type::Group(g) => self.param_kind(&g.elem),
            _ => Err(format!(
                "`{}` is not a supported kernel parameter type (primitive number, raw pointer, or a \
                 `#[repr(C)] Copy` struct named by a `crate::` path)",
                tokens(ty)
            )),
        }
    }

    fn pointee(&self, ty: &Type) -> Result<String, String> {
        match ty {
            Type::Path(tp) if tp.qself.is_none() => {
                if let Some(id) = tp.path.get_ident()
                    && primitive(&id.to_string()).is_some()
                {
                    return Ok(id.to_string());
                }
                if tp.path.segments.last().is_some_and(|s| s.ident == "c_void") {
                    return Ok("::core::ffi::c_void".into());
                }
                self.host_path(&tp.path)
            }
            Type::Paren(p) => self.pointee(&p.elem),
            Type::Group(g) => self.pointee(&g.elem),
            _ => Err(format!(
                "pointers to `{}` are not supported (primitive or crate struct)",
                tokens(ty)
            )),
        }
    }

    fn host_path(&self, path: &syn::Path) -> Result<String, String> {
        if path.leading_colon.is_some() || path.segments.iter().any(|s| !s.arguments.is_none()) {
            return Err(format!(
                "write the type `{}` as a plain `crate::module::Type` path",
                tokens(path)
            ));
        }
        let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if matches!(segs[0].as_str(), "bool" | "char" | "u128" | "i128") {
            return Err(format!(
                "`{}` kernel parameters are not supported; use u8/u32/u64",
                segs[0]
            ));
        }
        let mut module = self.module.clone();
        let rest: &[String] = match segs[0].as_str() {
            "crate" => {
                module.clear();
                &segs[1..]
            }
            "self" => &segs[1..],
            "super" => {
                let mut i = 0;
                while segs.get(i).is_some_and(|s| s == "super") {
                    module.pop().ok_or("`super` above the crate root")?;
                    i += 1;
                }
                &segs[i..]
            }
            _ if segs.len() == 1 => &segs[..],
            _ => {
                return Err(format!(
                    "write the type `{}` as a `crate::...` path",
                    segs.join("::")
                ));
            }
        };
        if rest.is_empty() {
            return Err(format!("`{}` is not a type", segs.join("::")));
        }
        let mut out = format!("::{}", self.host_crate);
        for s in module.iter().chain(rest) {
            out.push_str("::");
            out.push_str(s);
        }
        Ok(out)
    }
}

/// Evaluates an integer constant expression: literals, `const`s of the crate, `+ - * / % << >>`,
/// parentheses and `as` casts.
pub fn eval(expr: &Expr, consts: &HashMap<String, Vec<Expr>>, depth: u32) -> Result<u64, String> {
    if depth > 32 {
        return Err("constant nests too deeply".into());
    }
    match expr {
        Expr::Lit(l) => match &l.lit {
            Lit::Int(i) => i.base10_parse::<u64>().map_err(|e| e.to_string()),
            _ => Err(format!("`{}` is not an integer", tokens(expr))),
        },
        Expr::Paren(p) => eval(&p.expr, consts, depth + 1),
        Expr::Group(g) => eval(&g.expr, consts, depth + 1),
        Expr::Cast(c) => eval(&c.expr, consts, depth + 1),
        Expr::Block(b) if b.block.stmts.len() == 1 => match &b.block.stmts[0] {
            syn::Stmt::Expr(e, None) => eval(e, consts, depth + 1),
            _ => Err(format!("cannot evaluate `{}`", tokens(expr))),
        },
        Expr::Path(p) => {
            let name = p
                .path
                .segments
                .last()
                .map(|s| s.ident.to_string())
                .unwrap_or_default();
            match consts.get(&name).map(Vec::as_slice) {
                Some([e]) => eval(e, consts, depth + 1),
                Some([]) | None => Err(format!("no `const {name}` found in the kernel crate")),
                Some(_) => Err(format!(
                    "`const {name}` is defined more than once in the kernel crate"
                )),
            }
        }
        Expr::Binary(b) => {
            let (l, r) = (
                eval(&b.left, consts, depth + 1)?,
                eval(&b.right, consts, depth + 1)?,
            );
            use syn::BinOp::*;
            let v = match b.op {
                Add(_) => l.checked_add(r),
                Sub(_) => l.checked_sub(r),
                Mul(_) => l.checked_mul(r),
                Div(_) => l.checked_div(r),
                Rem(_) => l.checked_rem(r),
                Shl(_) => u32::try_from(r).ok().and_then(|r| l.checked_shl(r)),
                Shr(_) => u32::try_from(r).ok().and_then(|r| l.checked_shr(r)),
                _ => return Err(format!("unsupported operator in `{}`", tokens(expr))),
            };
            v.ok_or_else(|| format!("overflow in `{}`", tokens(expr)))
        }
        _ => Err(format!("cannot evaluate `{}` at build time", tokens(expr))),
    }
}

/// (size, align) of a shared-array type: primitives and arrays of them.
pub fn shared_type_layout(
    ty: &Type,
    consts: &HashMap<String, Vec<Expr>>,
) -> Result<(u64, u64), String> {
    match ty {
        Type::Array(a) => {
            let (size, align) = shared_type_layout(&a.elem, consts)?;
            let n = eval(&a.len, consts, 0)?;
            Ok((size.checked_mul(n).ok_or("shared array too large")?, align))
        }
        Type::Path(p) => {
            let id = p
                .path
                .get_ident()
                .map(|i| i.to_string())
                .unwrap_or_default();
            primitive(&id).map(|s| (s as u64, s as u64)).ok_or_else(|| {
                format!("shared arrays hold primitive numbers, not `{}`", tokens(ty))
            })
        }
        Type::Paren(p) => shared_type_layout(&p.elem, consts),
        Type::Group(g) => shared_type_layout(&g.elem, consts),
        _ => Err(format!("unsupported shared array type `{}`", tokens(ty))),
    }
}

/// Every `.rs` file below `dir`, sorted.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Scans the sources `(path, text)` of a crate whose `src/` directory is `src_dir`.
pub fn scan_sources(
    src_dir: &Path,
    files: &[(PathBuf, String)],
    host_crate: &str,
) -> Result<Scan, String> {
    let mut consts = HashMap::new();
    let mut errors = Vec::new();
    let mut kernels = Vec::new();
    let mut raw_shared = Vec::new();
    for (path, text) in files {
        let file = match syn::parse_file(text) {
            Ok(f) => f,
            Err(e) => {
                errors.push(format!("{}: {e}", path.display()));
                continue;
            }
        };
        let mut v = Visitor {
            host_crate,
            file: path.clone(),
            module: module_of(src_dir, path),
            kernels: Vec::new(),
            shared: Vec::new(),
            consts: &mut consts,
            errors: Vec::new(),
        };
        v.visit_file(&file);
        errors.append(&mut v.errors);
        kernels.append(&mut v.kernels);
        raw_shared.append(&mut v.shared);
    }
    let mut shared: Vec<SharedDecl> = Vec::new();
    for s in raw_shared {
        match shared_type_layout(&s.ty, &consts) {
            Ok((bytes, align)) => match shared.iter().find(|d| d.name == s.name) {
                Some(d) if d.bytes != bytes => errors.push(format!(
                    "shared array `{}` is {} bytes in {} but {bytes} bytes in {}; use distinct names",
                    s.name,
                    d.bytes,
                    d.file.display(),
                    s.file.display()
                )),
                Some(_) => {}
                None => shared.push(SharedDecl { name: s.name, bytes, align, file: s.file }),
            },
            Err(e) => errors.push(format!("{}: shared array `{}`: {e}", s.file.display(), s.name)),
        }
    }
    let mut seen = HashMap::new();
    for k in &kernels {
        if let Some(f) = seen.insert(k.name.clone(), k.file.clone()) {
            errors.push(format!(
                "kernel `{}` is declared twice ({} and {})",
                k.name,
                f.display(),
                k.file.display()
            ));
        }
    }
    if errors.is_empty() {
        Ok(Scan { kernels, shared })
    } else {
        Err(errors.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(src: &str) -> Result<Scan, String> {
        scan_sources(
            Path::new("/k/src"),
            &[(PathBuf::from("/k/src/psnr.rs"), src.to_string())],
            "gk",
        )
    }

    #[test]
    fn finds_kernels_and_maps_types() {
        let s = scan(
            r#"
            pub const BLOCK: u32 = 128;
            #[repr(C)] #[derive(Clone, Copy)] pub struct Planes { a: u64 }
            gpumetrics_device::kernel! {
                /// Sums.
                pub unsafe fn psnr_sse(p: crate::psnr::Planes, q: Planes, n: u32, x: *const u8, out: *mut u64, s: super::psnr::Planes) {
                    gpumetrics_device::shared!(static TILE: [u64; BLOCK as usize * 2]);
                }
                unsafe fn other() {}
            }
            "#,
        )
        .unwrap();
        assert_eq!(s.kernels.len(), 2);
        let k = &s.kernels[0];
        assert_eq!(k.name, "psnr_sse");
        assert_eq!(k.docs, [" Sums."]);
        let kinds: Vec<_> = k.params.iter().map(|p| p.kind.clone()).collect();
        assert_eq!(
            kinds,
            [
                ParamKind::Struct {
                    host_path: "::gk::psnr::Planes".into()
                },
                ParamKind::Struct {
                    host_path: "::gk::psnr::Planes".into()
                },
                ParamKind::Scalar {
                    ty: "u32".into(),
                    size: 4
                },
                ParamKind::ConstPtr {
                    pointee: "u8".into()
                },
                ParamKind::MutPtr {
                    pointee: "u64".into()
                },
                ParamKind::Struct {
                    host_path: "::gk::psnr::Planes".into()
                },
            ]
        );
        assert_eq!(k.params[3].device_ty, "*const u8");
        assert_eq!(
            s.shared,
            [SharedDecl {
                name: "TILE".into(),
                bytes: 2048,
                align: 8,
                file: "/k/src/psnr.rs".into()
            }]
        );
    }

    #[test]
    fn rejects_unsupported_declarations() {
        assert!(
            scan("kernel! { pub fn k() {} }")
                .unwrap_err()
                .contains("unsafe fn")
        );
        assert!(
            scan("kernel! { pub unsafe fn k(b: bool) {} }")
                .unwrap_err()
                .contains("bool")
        );
        assert!(
            scan("kernel! { pub unsafe fn k(b: &u32) {} }")
                .unwrap_err()
                .contains("not a supported")
        );
        assert!(
            scan("kernel! { pub unsafe fn k(b: other::T) {} }")
                .unwrap_err()
                .contains("crate::")
        );
        assert!(
            scan("kernel! { unsafe fn k() {} unsafe fn k() {} }")
                .unwrap_err()
                .contains("twice")
        );
        assert!(
            scan("kernel! { unsafe fn k() { shared!(static S: [u32; N]); } }")
                .unwrap_err()
                .contains("const N")
        );
        let e = scan(
            "kernel! { unsafe fn k() { shared!(static S: [u32; 4]); } unsafe fn j() { shared!(static S: [u32; 8]); } }",
        );
        assert!(e.unwrap_err().contains("distinct names"));
    }

    #[test]
    fn module_paths() {
        let src = Path::new("/k/src");
        assert!(module_of(src, Path::new("/k/src/lib.rs")).is_empty());
        assert_eq!(module_of(src, Path::new("/k/src/a/mod.rs")), ["a"]);
        assert_eq!(module_of(src, Path::new("/k/src/a/b.rs")), ["a", "b"]);
    }
}
