//! Just enough of a PTX reader to list the kernel entry points and their parameter sizes.

/// One `.entry` of a PTX module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtxEntry {
    /// The (unmangled) kernel name.
    pub name: String,
    /// Size in bytes of each `.param`, in order.
    pub param_sizes: Vec<usize>,
}

fn type_size(ty: &str) -> Option<usize> {
    let t = ty.strip_prefix('.')?;
    let (kind, bits) = t.split_at(1);
    if !matches!(kind, "u" | "s" | "b" | "f") {
        return None;
    }
    let bits: usize = bits.parse().ok()?;
    bits.is_multiple_of(8).then_some(bits / 8)
}

/// Parses one `.param` declaration such as `.param .u64 .ptr .align 1 k_param_0` or
/// `.param .align 8 .b8 k_param_1[24]`, returning its size in bytes.
pub fn param_size(decl: &str) -> Result<usize, String> {
    let tokens: Vec<&str> = decl.split_whitespace().collect();
    if tokens.first() != Some(&".param") {
        return Err(format!("not a .param declaration: `{decl}`"));
    }
    let elem = tokens
        .iter()
        .skip(1)
        .find_map(|t| type_size(t))
        .ok_or_else(|| format!("no type in `{decl}`"))?;
    let name = tokens.last().copied().unwrap_or_default();
    let count = match name.split_once('[') {
        Some((_, rest)) => rest
            .trim_end_matches(']')
            .parse::<usize>()
            .map_err(|_| format!("bad array length in `{decl}`"))?,
        None => 1,
    };
    Ok(elem * count)
}

/// Every `.entry` of `ptx` (with `.visible` or not) with its parameter sizes.
pub fn parse_entries(ptx: &str) -> Result<Vec<PtxEntry>, String> {
    let mut entries = Vec::new();
    let mut rest = ptx;
    while let Some(pos) = find_entry(rest) {
        let after = &rest[pos + ".entry".len()..];
        let open = after.find('(');
        let brace = after.find('{');
        let name_end = match (open, brace) {
            (Some(o), Some(b)) => o.min(b),
            (Some(o), None) => o,
            (None, Some(b)) => b,
            (None, None) => return Err("unterminated .entry".into()),
        };
        let name = after[..name_end].trim().to_string();
        let mut param_sizes = Vec::new();
        if open == Some(name_end) {
            let close = after[name_end..]
                .find(')')
                .ok_or_else(|| format!("unterminated parameter list of {name}"))?;
            let list = &after[name_end + 1..name_end + close];
            for decl in list.split(',') {
                let decl = strip_comments(decl);
                if !decl.trim().is_empty() {
                    param_sizes
                        .push(param_size(decl.trim()).map_err(|e| format!("kernel {name}: {e}"))?);
                }
            }
        }
        entries.push(PtxEntry { name, param_sizes });
        rest = &after[name_end..];
    }
    Ok(entries)
}

fn strip_comments(s: &str) -> String {
    s.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Position of the next `.entry` directive (at a line start, after optional `.visible`/`.weak`).
fn find_entry(s: &str) -> Option<usize> {
    let mut offset = 0;
    for line in s.split_inclusive('\n') {
        let code = line.split("//").next().unwrap_or("");
        let mut words = code
            .split_whitespace()
            .skip_while(|w| matches!(*w, ".visible" | ".weak" | ".extern"));
        if words
            .next()
            .is_some_and(|w| w == ".entry" || w.starts_with(".entry("))
        {
            return code.find(".entry").map(|p| offset + p);
        }
        offset += line.len();
    }
    None
}

/// `ptx` with entry `name`'s registers capped at `n` a thread: ptxas's `.maxnreg n`
/// between its parameter list and its body (a kernel's `max_registers = N`).
pub fn cap_registers(ptx: &str, name: &str, n: u32) -> Result<String, String> {
    let mut offset = 0;
    let mut in_entry = false;
    for line in ptx.split_inclusive('\n') {
        let code = line.split("//").next().unwrap_or("").trim();
        if !in_entry {
            let mut words = code
                .split_whitespace()
                .skip_while(|w| matches!(*w, ".visible" | ".weak" | ".extern"));
            if words.next() == Some(".entry") {
                let after = code.split(".entry").nth(1).unwrap_or("").trim_start();
                let entry = after.split(['(', ' ', '\t']).next().unwrap_or("");
                in_entry = entry == name;
            }
        } else if code.starts_with(".maxnreg") {
            return Err(format!("entry `{name}` already has `{code}`"));
        } else if code.starts_with('{') {
            let mut out = String::with_capacity(ptx.len() + 16);
            out.push_str(&ptx[..offset]);
            out.push_str(&format!(".maxnreg {n}\n"));
            out.push_str(&ptx[offset..]);
            return Ok(out);
        }
        offset += line.len();
    }
    Err(format!("no entry `{name}` with a body in the PTX"))
}

/// True when the module declares block-shared memory (`.shared` variables, static or
/// `.extern` dynamic).
pub fn uses_shared_memory(ptx: &str) -> bool {
    ptx.lines().any(|l| {
        let code = l.split("//").next().unwrap_or("").trim_start();
        code.starts_with(".shared") || code.starts_with(".extern .shared")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = r#"
//
// Generated by LLVM NVPTX Back-End
.version 7.0
.target sm_70
.address_size 64
	// .globl	affine         // -- Begin function affine
.func helper
.extern .shared .align 4 .b8 gpu_launch_sized_workgroup_mem[];
.visible .entry affine(
	.param .align 8 .b8 affine_param_0[24],
	.param .u64 .ptr .align 1 affine_param_1
)
{
	.shared .align 16 .b8 gpumetrics_shared_T[1024];
	ret;
}
.entry noparams()
{
	ret;
}
.visible .entry small(
	.param .u8 small_param_0, // a byte
	.param .u16 small_param_1,
	.param .f32 small_param_2,
	.param .f64 small_param_3
)
{
}
"#;

    #[test]
    fn lists_entries_and_param_sizes() {
        let e = parse_entries(PTX).unwrap();
        assert_eq!(
            e,
            [
                PtxEntry {
                    name: "affine".into(),
                    param_sizes: vec![24, 8]
                },
                PtxEntry {
                    name: "noparams".into(),
                    param_sizes: vec![]
                },
                PtxEntry {
                    name: "small".into(),
                    param_sizes: vec![1, 2, 4, 8]
                },
            ]
        );
        assert!(uses_shared_memory(PTX));
        assert!(!uses_shared_memory(
            ".visible .entry k()\n{\n}\n// .shared in a comment\n"
        ));
    }

    #[test]
    fn caps_one_entrys_registers() {
        let capped = cap_registers(PTX, "affine", 64).unwrap();
        assert!(capped.contains("affine_param_1\n)\n.maxnreg 64\n{\n"));
        assert_eq!(capped.matches(".maxnreg").count(), 1);
        // The other entries as they were, and the entries' parameters still parse.
        assert_eq!(capped.replace(".maxnreg 64\n", ""), PTX);
        assert_eq!(parse_entries(&capped), parse_entries(PTX));
        let capped = cap_registers(PTX, "noparams", 40).unwrap();
        assert!(capped.contains(".entry noparams()\n.maxnreg 40\n{"));
        // A name that is only a prefix of an entry's, twice the same cap, no such entry.
        assert!(cap_registers(PTX, "aff", 64).is_err());
        let twice = cap_registers(&cap_registers(PTX, "small", 32).unwrap(), "small", 32);
        assert!(twice.is_err());
        assert!(cap_registers(PTX, "helper", 32).is_err());
    }

    #[test]
    fn rejects_malformed_params() {
        assert!(param_size(".param .align 8 k_param_0").is_err());
        assert!(param_size(".param .b8 k_param_0[x]").is_err());
        assert!(parse_entries(".visible .entry k(\n.param .u32 a").is_err());
        assert_eq!(
            param_size(".param .u64 .ptr .global .align 4 k_param_2").unwrap(),
            8
        );
    }
}
