//! Reads the kernel crate's sources with `syn`: `kernel!` declarations, `shared!` arrays and
//! the integer `const`s their lengths may use.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use quote::ToTokens;
use syn::parse::{Parse, ParseStream};
use syn::visit::Visit;
use syn::{Expr, FnArg, Lit, Pat, Type};

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
    /// `max_registers = N` of the declaration: the entry's `.maxnreg` in the PTX.
    pub max_registers: Option<u32>,
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

/// One declaration of a `kernel!` block: `unsafe fn name(params) => body;`, or the older
/// form with the body inside the macro.
struct KernelItem {
    attrs: Vec<syn::Attribute>,
    sig: syn::Signature,
    /// `=> body, max_registers = N;`
    max_registers: Option<u32>,
    /// The body of the older form (scanned for `shared!` like any other code).
    block: Option<syn::Block>,
}

struct KernelItems(Vec<KernelItem>);

impl Parse for KernelItems {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut v = Vec::new();
        while !input.is_empty() {
            let attrs = input.call(syn::Attribute::parse_outer)?;
            input.parse::<syn::Visibility>()?;
            let sig: syn::Signature = input.parse()?;
            let mut max_registers = None;
            let block = if input.peek(syn::Token![=>]) {
                input.parse::<syn::Token![=>]>()?;
                input.parse::<syn::Path>()?;
                if input.peek(syn::Token![,]) {
                    input.parse::<syn::Token![,]>()?;
                    let key: syn::Ident = input.parse()?;
                    if key != "max_registers" {
                        return Err(syn::Error::new(
                            key.span(),
                            format!("unknown `{key}`; expected `max_registers = N`"),
                        ));
                    }
                    input.parse::<syn::Token![=]>()?;
                    max_registers = Some(input.parse::<syn::LitInt>()?.base10_parse::<u32>()?);
                }
                input.parse::<syn::Token![;]>()?;
                None
            } else {
                Some(input.parse()?)
            };
            v.push(KernelItem {
                attrs,
                sig,
                max_registers,
                block,
            });
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

/// What one module of the kernel crate defines and imports: enough to resolve the paths that
/// kernel signatures and shared-array lengths use.
#[derive(Default)]
struct Scope {
    /// `const` items (also those inside its functions), by name.
    consts: HashMap<String, Vec<Expr>>,
    /// Names of its structs, enums, unions and type aliases.
    types: Vec<String>,
    /// `use` imports: local name → path as written (relative to this module).
    imports: HashMap<String, Vec<String>>,
    /// `use path::*` imports, as written.
    globs: Vec<Vec<String>>,
}

/// Every module of the kernel crate by its path (`[]` is the crate root,
/// `["ssimulacra2", "layout"]` is `crate::ssimulacra2::layout`).
#[derive(Default)]
pub struct Scopes {
    modules: HashMap<Vec<String>, Scope>,
}

/// Marks a `use` path that starts outside the crate (`::name`).
const EXTERNAL: &str = "::";

impl Scopes {
    fn module(&mut self, path: &[String]) -> &mut Scope {
        for i in 0..path.len() {
            self.modules.entry(path[..i].to_vec()).or_default();
        }
        self.modules.entry(path.to_vec()).or_default()
    }

    /// The absolute module path of `segs` as written in `module`, following `use` imports of
    /// its first segment; `None` for paths into other crates.
    pub fn resolve(&self, module: &[String], segs: &[String]) -> Option<Vec<String>> {
        self.resolve_at(module, segs, 0)
    }

    fn resolve_at(&self, module: &[String], segs: &[String], depth: u32) -> Option<Vec<String>> {
        if depth > 16 || segs.is_empty() {
            return None;
        }
        let (mut base, rest) = match segs[0].as_str() {
            EXTERNAL => return None,
            "crate" => (Vec::new(), &segs[1..]),
            "self" => (module.to_vec(), &segs[1..]),
            "super" => {
                let mut base = module.to_vec();
                let supers = segs.iter().take_while(|s| *s == "super").count();
                for _ in 0..supers {
                    base.pop()?;
                }
                (base, &segs[supers..])
            }
            first => {
                if let Some(target) = self.modules.get(module).and_then(|s| s.imports.get(first)) {
                    let mut abs = self.resolve_at(module, target, depth + 1)?;
                    abs.extend_from_slice(&segs[1..]);
                    return Some(abs);
                }
                let mut child = module.to_vec();
                child.push(first.to_string());
                if self.modules.contains_key(&child) {
                    (child, &segs[1..])
                } else if segs.len() == 1 {
                    (module.to_vec(), segs)
                } else {
                    return None;
                }
            }
        };
        base.extend_from_slice(rest);
        Some(base)
    }

    /// The defining module and expression of the `const` at the absolute path `abs`,
    /// following re-exports and glob imports.
    fn find_const(&self, abs: &[String], depth: u32) -> Result<(Vec<String>, &Expr), String> {
        let Some((name, module)) = abs.split_last() else {
            return Err("an empty path is not a constant".into());
        };
        let here = if module.is_empty() {
            "the crate root".to_string()
        } else {
            format!("`{}`", module.join("::"))
        };
        let missing = || format!("no `const {name}` in {here} of the kernel crate");
        if depth > 16 {
            return Err(missing());
        }
        let scope = self.modules.get(module).ok_or_else(missing)?;
        match scope.consts.get(name).map(Vec::as_slice) {
            Some([e]) => return Ok((module.to_vec(), e)),
            Some([_, _, ..]) => {
                return Err(format!(
                    "`const {name}` is defined more than once in {here}"
                ));
            }
            _ => {}
        }
        if let Some(target) = scope.imports.get(name) {
            let abs = self
                .resolve_at(module, target, depth + 1)
                .ok_or_else(missing)?;
            return self.find_const(&abs, depth + 1);
        }
        for g in &scope.globs {
            if let Some(mut abs) = self.resolve_at(module, g, depth + 1) {
                abs.push(name.clone());
                if let Ok(found) = self.find_const(&abs, depth + 1) {
                    return Ok(found);
                }
            }
        }
        Err(missing())
    }

    /// Where the type at the absolute path `abs` is visible under its own name: `abs` itself
    /// when that module defines or imports it, else the module a glob import takes it from.
    fn type_home(&self, abs: Vec<String>, depth: u32) -> Vec<String> {
        let Some((name, module)) = abs.split_last() else {
            return abs;
        };
        let Some(scope) = self.modules.get(module) else {
            return abs;
        };
        if depth > 16 || scope.types.contains(name) || scope.imports.contains_key(name) {
            return abs;
        }
        for g in &scope.globs {
            if let Some(mut home) = self.resolve_at(module, g, depth + 1) {
                home.push(name.clone());
                let home = self.type_home(home, depth + 1);
                let (n, m) = home.split_last().expect("not empty");
                if self
                    .modules
                    .get(m)
                    .is_some_and(|s| s.types.contains(n) || s.imports.contains_key(n))
                {
                    return home;
                }
            }
        }
        abs
    }
}

/// The names a `use` tree brings into `scope`.
fn add_use(tree: &syn::UseTree, mut prefix: Vec<String>, scope: &mut Scope) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            add_use(&p.tree, prefix, scope);
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            if name == "self" {
                if let Some(last) = prefix.last() {
                    scope.imports.insert(last.clone(), prefix);
                }
            } else {
                prefix.push(name.clone());
                scope.imports.insert(name, prefix);
            }
        }
        syn::UseTree::Rename(r) => {
            if r.ident != "self" {
                prefix.push(r.ident.to_string());
            }
            scope.imports.insert(r.rename.to_string(), prefix);
        }
        syn::UseTree::Glob(_) => scope.globs.push(prefix),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                add_use(t, prefix.clone(), scope);
            }
        }
    }
}

/// First pass: the [`Scopes`] of one file.
struct ScopeVisitor<'a> {
    module: Vec<String>,
    scopes: &'a mut Scopes,
}

impl<'ast> Visit<'ast> for ScopeVisitor<'_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        self.module.push(m.ident.to_string());
        self.scopes.module(&self.module);
        if m.content.is_some() {
            syn::visit::visit_item_mod(self, m);
        }
        self.module.pop();
    }

    fn visit_item_const(&mut self, c: &'ast syn::ItemConst) {
        self.scopes
            .module(&self.module)
            .consts
            .entry(c.ident.to_string())
            .or_default()
            .push((*c.expr).clone());
        syn::visit::visit_item_const(self, c);
    }

    fn visit_item_struct(&mut self, s: &'ast syn::ItemStruct) {
        self.scopes
            .module(&self.module)
            .types
            .push(s.ident.to_string());
    }

    fn visit_item_enum(&mut self, e: &'ast syn::ItemEnum) {
        self.scopes
            .module(&self.module)
            .types
            .push(e.ident.to_string());
    }

    fn visit_item_union(&mut self, u: &'ast syn::ItemUnion) {
        self.scopes
            .module(&self.module)
            .types
            .push(u.ident.to_string());
    }

    fn visit_item_type(&mut self, t: &'ast syn::ItemType) {
        self.scopes
            .module(&self.module)
            .types
            .push(t.ident.to_string());
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let prefix = if u.leading_colon.is_some() {
            vec![EXTERNAL.to_string()]
        } else {
            Vec::new()
        };
        add_use(&u.tree, prefix, self.scopes.module(&self.module));
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        // consts inside the bodies of older-form kernels
        if last_segment(m) == "kernel"
            && let Ok(items) = m.parse_body::<KernelItems>()
        {
            for block in items.0.iter().filter_map(|k| k.block.as_ref()) {
                self.visit_block(block);
            }
        }
    }
}

struct RawShared {
    name: String,
    ty: Type,
    module: Vec<String>,
    file: PathBuf,
}

/// Second pass: the kernels and shared arrays of one file.
struct Visitor<'a> {
    host_crate: &'a str,
    file: PathBuf,
    module: Vec<String>,
    scopes: &'a Scopes,
    kernels: Vec<KernelDecl>,
    shared: Vec<RawShared>,
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

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        match last_segment(m).as_str() {
            "kernel" => match m.parse_body::<KernelItems>() {
                Ok(items) => {
                    for item in &items.0 {
                        match self.kernel(&item.attrs, &item.sig) {
                            Ok(k) => self.kernels.push(KernelDecl {
                                max_registers: item.max_registers,
                                ..k
                            }),
                            Err(e) => self.errors.push(format!(
                                "{}: kernel `{}`: {e}",
                                self.file.display(),
                                item.sig.ident
                            )),
                        }
                        if let Some(block) = &item.block {
                            self.visit_block(block);
                        }
                    }
                }
                Err(e) => self.errors.push(format!(
                    "{}: cannot parse a kernel! block: {e}; expected `unsafe fn name(params) => body;`",
                    self.file.display()
                )),
            },
            "shared" => match m.parse_body::<SharedArgs>() {
                Ok(s) => self.shared.push(RawShared {
                    name: s.name.to_string(),
                    ty: s.ty,
                    module: self.module.clone(),
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
    fn kernel(&self, attrs: &[syn::Attribute], sig: &syn::Signature) -> Result<KernelDecl, String> {
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
        let docs = attrs
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
            max_registers: None,
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
        let abs = self.scopes.resolve(&self.module, &segs).ok_or_else(|| {
            format!(
                "write the type `{}` as a `crate::...` path (or a name defined or imported in this \
                 module)",
                segs.join("::")
            )
        })?;
        if abs.len() <= self.module.len() && abs == self.module[..abs.len()] {
            return Err(format!("`{}` is not a type", segs.join("::")));
        }
        let mut out = format!("::{}", self.host_crate);
        for s in self.scopes.type_home(abs, 0) {
            out.push_str("::");
            out.push_str(&s);
        }
        Ok(out)
    }
}

/// Evaluates an integer constant expression written in `module`: literals, `const`s of the
/// crate named by any path that resolves to them there (`N`, `layout::N`, `super::N`,
/// `crate::a::N`, imported names), `+ - * / % << >>`, parentheses and `as` casts.
pub fn eval(expr: &Expr, module: &[String], scopes: &Scopes, depth: u32) -> Result<u64, String> {
    if depth > 32 {
        return Err("constant nests too deeply".into());
    }
    let eval = |e: &Expr| eval(e, module, scopes, depth + 1);
    match expr {
        Expr::Lit(l) => match &l.lit {
            Lit::Int(i) => i.base10_parse::<u64>().map_err(|e| e.to_string()),
            _ => Err(format!("`{}` is not an integer", tokens(expr))),
        },
        Expr::Paren(p) => eval(&p.expr),
        Expr::Group(g) => eval(&g.expr),
        Expr::Cast(c) => eval(&c.expr),
        Expr::Block(b) if b.block.stmts.len() == 1 => match &b.block.stmts[0] {
            syn::Stmt::Expr(e, None) => eval(e),
            _ => Err(format!("cannot evaluate `{}`", tokens(expr))),
        },
        Expr::Path(p) if p.qself.is_none() => {
            let segs: Vec<String> = p
                .path
                .segments
                .iter()
                .map(|s| s.ident.to_string())
                .collect();
            let abs = scopes
                .resolve(module, &segs)
                .ok_or_else(|| format!("`{}` is not a constant of the kernel crate", tokens(p)))?;
            let (home, e) = scopes.find_const(&abs, 0)?;
            crate::scan::eval(e, &home, scopes, depth + 1)
        }
        Expr::Binary(b) => {
            let (l, r) = (eval(&b.left)?, eval(&b.right)?);
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

/// (size, align) of a shared-array type written in `module`: primitives and arrays of them.
pub fn shared_type_layout(
    ty: &Type,
    module: &[String],
    scopes: &Scopes,
) -> Result<(u64, u64), String> {
    match ty {
        Type::Array(a) => {
            let (size, align) = shared_type_layout(&a.elem, module, scopes)?;
            let n = eval(&a.len, module, scopes, 0)?;
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
        Type::Paren(p) => shared_type_layout(&p.elem, module, scopes),
        Type::Group(g) => shared_type_layout(&g.elem, module, scopes),
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
    let mut errors = Vec::new();
    let mut parsed = Vec::new();
    for (path, text) in files {
        match syn::parse_file(text) {
            Ok(f) => parsed.push((path, module_of(src_dir, path), f)),
            Err(e) => errors.push(format!("{}: {e}", path.display())),
        }
    }
    let mut scopes = Scopes::default();
    for (_, module, file) in &parsed {
        scopes.module(module);
        ScopeVisitor {
            module: module.clone(),
            scopes: &mut scopes,
        }
        .visit_file(file);
    }
    let mut kernels = Vec::new();
    let mut raw_shared = Vec::new();
    for (path, module, file) in &parsed {
        let mut v = Visitor {
            host_crate,
            file: (*path).clone(),
            module: module.clone(),
            scopes: &scopes,
            kernels: Vec::new(),
            shared: Vec::new(),
            errors: Vec::new(),
        };
        v.visit_file(file);
        errors.append(&mut v.errors);
        kernels.append(&mut v.kernels);
        raw_shared.append(&mut v.shared);
    }
    let mut shared: Vec<SharedDecl> = Vec::new();
    for s in raw_shared {
        match shared_type_layout(&s.ty, &s.module, &scopes) {

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

    fn scan_files(files: &[(&str, &str)]) -> Result<Scan, String> {
        let files: Vec<(PathBuf, String)> = files
            .iter()
            .map(|(p, t)| (Path::new("/k/src").join(p), t.to_string()))
            .collect();
        scan_sources(Path::new("/k/src"), &files, "gk")
    }

    #[test]
    fn thin_declarations_name_their_body() {
        let s = scan(
            r#"
            #[repr(C)] #[derive(Clone, Copy)] pub struct Planes { a: u64 }
            gpumetrics_device::kernel! {
                /// Sums.
                pub unsafe fn psnr_sse(p: Planes, out: *mut u64) => sse;
                /// Old form, still accepted.
                pub unsafe fn psnr_old(n: u32) { shared!(static OLD: [u8; 4]); }
                pub unsafe fn psnr_other(x: *const crate::psnr::Planes) => super::psnr::other;
                /// Capped.
                pub unsafe fn psnr_capped(n: u32) => sse, max_registers = 40;
            }
            #[cfg(target_arch = "nvptx64")]
            unsafe fn sse(p: Planes, out: *mut u64) {
                gpumetrics_device::shared!(static SUMS: [u64; 8]);
            }
            "#,
        )
        .unwrap();
        let names: Vec<_> = s.kernels.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["psnr_sse", "psnr_old", "psnr_other", "psnr_capped"]);
        assert_eq!(s.kernels[0].docs, [" Sums."]);
        let caps: Vec<_> = s.kernels.iter().map(|k| k.max_registers).collect();
        assert_eq!(caps, [None, None, None, Some(40)]);
        assert_eq!(
            s.kernels[0].params[0].kind,
            ParamKind::Struct {
                host_path: "::gk::psnr::Planes".into()
            }
        );
        let shared: Vec<_> = s
            .shared
            .iter()
            .map(|d| (d.name.as_str(), d.bytes))
            .collect();
        assert_eq!(shared, [("OLD", 4), ("SUMS", 64)]);
        assert!(
            scan("kernel! { pub unsafe fn k(n: u32) => ; }")
                .unwrap_err()
                .contains("body;")
        );
        let bad = scan("kernel! { pub unsafe fn k(n: u32) => b, max_threads = 64; }");
        assert!(bad.unwrap_err().contains("max_registers = N"));
        assert!(scan("kernel! { pub unsafe fn k(n: u32) => b, max_registers = x; }").is_err());
    }

    #[test]
    fn constants_and_types_resolve_by_module_path() {
        let s = scan_files(&[
            ("lib.rs", "pub mod a; pub mod b; pub const BLOCK: u32 = 2;"),
            (
                "a/mod.rs",
                "pub mod layout; mod kernels; pub use layout::Level; pub const BLOCK: u32 = 3;",
            ),
            (
                "a/layout.rs",
                "pub const BLOCK: u32 = 16; pub const LEN: usize = BLOCK as usize * 2; \
                 pub struct Level { x: u64 }",
            ),
            (
                "a/kernels.rs",
                r#"
                use super::layout::{self, LEN};
                use super::layout::Level;
                use crate::b::*;
                const LOCAL: usize = 5;
                gpumetrics_device::kernel! {
                    pub unsafe fn k(l: Level, m: crate::a::Level, g: Glob, p: *const super::layout::Level) => body;
                }
                unsafe fn body() {
                    shared!(static A: [u8; LEN]);
                    shared!(static B: [u8; layout::BLOCK]);
                    shared!(static C: [u8; super::BLOCK]);
                    shared!(static D: [u8; crate::BLOCK + LOCAL + WIDE]);
                }
                "#,
            ),
            ("b.rs", "pub const WIDE: usize = 100; pub struct Glob(u32);"),
        ])
        .unwrap();
        let shared: Vec<_> = s
            .shared
            .iter()
            .map(|d| (d.name.as_str(), d.bytes))
            .collect();
        assert_eq!(shared, [("A", 32), ("B", 16), ("C", 3), ("D", 107)]);
        let paths: Vec<_> = s.kernels[0]
            .params
            .iter()
            .map(|p| match &p.kind {
                ParamKind::Struct { host_path } => host_path.clone(),
                ParamKind::ConstPtr { pointee } => pointee.clone(),
                k => panic!("{k:?}"),
            })
            .collect();
        assert_eq!(
            paths,
            [
                "::gk::a::layout::Level",
                "::gk::a::Level",
                "::gk::b::Glob",
                "::gk::a::layout::Level"
            ]
        );
        let e = scan_files(&[
            ("lib.rs", "pub mod a; pub mod b;"),
            ("a.rs", "pub const N: u32 = 1;"),
            ("b.rs", "unsafe fn k() { shared!(static S: [u8; N]); }"),
        ])
        .unwrap_err();
        assert!(e.contains("no `const N` in `b`"), "{e}");
    }

    #[test]
    fn module_paths() {
        let src = Path::new("/k/src");
        assert!(module_of(src, Path::new("/k/src/lib.rs")).is_empty());
        assert_eq!(module_of(src, Path::new("/k/src/a/mod.rs")), ["a"]);
        assert_eq!(module_of(src, Path::new("/k/src/a/b.rs")), ["a", "b"]);
    }
}
