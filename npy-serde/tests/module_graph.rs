//! The library's module import graph has no cycles: each module calls only modules below it
//! (the tiers of reading and writing call downward, see the `read` and `write` module docs).
//!
//! The graph is read from the sources: an edge `a -> b` for every path `crate::...` or
//! `super::...` in `a` (in `use` items and inline) that names an item of module `b`.
//! Re-exports (`pub use`) are transparent: a path through one is an edge to the module that
//! defines the item. Test modules (`tests.rs`, `mod tests { .. }`) and the `npy` binary are
//! not part of the library and are left out. A `mod` declaration is not an edge.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One library module: its path (`["read", "shape"]`) and its source without comments,
/// strings or test modules.
struct Module {
    path: Vec<String>,
    code: String,
}

fn strip(src: &str) -> String {
    // Comments and string/char literals out (paths inside them are not imports).
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            i += 2;
            while i + 1 < b.len() && !b[i..].starts_with(b"*/") {
                i += 1;
            }
            i += 2;
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else {
            // Non-ASCII only appears in identifiers' neighbours (docs, strings): a space keeps
            // every index a char boundary.
            out.push(if b[i].is_ascii() { b[i] as char } else { ' ' });
            i += 1;
        }
    }
    // Inline test modules out: `#[cfg(test)]` followed by `mod x { ... }`.
    while let Some(at) = out.find("#[cfg(test)]\nmod ") {
        let rest = &out[at..];
        let Some(open) = rest.find('{') else { break };
        if rest[..open].contains(';') {
            // `#[cfg(test)] mod tests;`: a file of its own, skipped by name.
            let end = at + rest.find(';').unwrap() + 1;
            out.replace_range(at..end, "");
            continue;
        }
        let mut depth = 0;
        let mut end = at + open;
        for (k, c) in out[at + open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = at + open + k + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.replace_range(at..end, "");
    }
    out
}

fn modules(src: &Path) -> Vec<Module> {
    let mut out = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            let rel: PathBuf = p.strip_prefix(src).unwrap().to_path_buf();
            if rel.starts_with("bin") {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let mut path: Vec<String> = rel
                .with_extension("")
                .iter()
                .map(|s| s.to_string_lossy().into_owned())
                .collect();
            if path.last().is_some_and(|l| l == "tests") {
                continue;
            }
            if path.last().is_some_and(|l| l == "mod" || l == "lib") {
                path.pop();
            }
            let code = strip(&std::fs::read_to_string(&p).unwrap());
            out.push(Module { path, code });
        }
    }
    out
}

/// The `use` trees of `code` expanded into full paths (`a::b::{c, d::e}` -> `a::b::c`,
/// `a::b::d::e`), each with whether it is a re-export, plus the inline `crate::`/`super::`
/// paths outside `use` items.
fn paths(code: &str) -> Vec<(String, bool)> {
    fn expand(prefix: &str, tree: &str, out: &mut Vec<String>) {
        let tree = tree.trim();
        if let Some(open) = tree.find('{') {
            let head = tree[..open].trim().trim_end_matches("::");
            let inner = &tree[open + 1..tree.rfind('}').unwrap()];
            let base = join(prefix, head);
            let mut depth = 0;
            let mut start = 0;
            for (i, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        expand(&base, &inner[start..i], out);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            expand(&base, &inner[start..], out);
        } else if !tree.is_empty() {
            let name = tree.split(" as ").next().unwrap().trim();
            out.push(join(prefix, name));
        }
    }
    fn join(a: &str, b: &str) -> String {
        match (a.is_empty(), b.is_empty()) {
            (true, _) => b.to_string(),
            (_, true) => a.to_string(),
            _ => format!("{a}::{b}"),
        }
    }
    let mut out = Vec::new();
    let mut rest = String::new();
    let mut i = 0;
    let bytes = code.as_bytes();
    while i < code.len() {
        let at_word = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        let is_use = at_word
            && (code[i..].starts_with("use ")
                || code[i..].starts_with("pub use ")
                || code[i..].starts_with("pub(crate) use ")
                || code[i..].starts_with("pub(super) use "));
        if is_use {
            let end = i + code[i..].find(';').unwrap();
            let stmt = &code[i..end];
            let reexport = stmt.starts_with("pub");
            let tree = &stmt[stmt.find("use ").unwrap() + 4..];
            let mut v = Vec::new();
            expand("", tree, &mut v);
            out.extend(v.into_iter().map(|p| (p, reexport)));
            i = end + 1;
        } else {
            rest.push(bytes[i] as char);
            i += 1;
        }
    }
    // Inline paths such as `crate::read::source::count_of(..)`.
    let b = rest.as_bytes();
    for start in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(k) = rest[from..].find(start) {
            let s = from + k;
            from = s + start.len();
            if s > 0 && (b[s - 1].is_ascii_alphanumeric() || b[s - 1] == b'_' || b[s - 1] == b':') {
                continue;
            }
            let mut e = s;
            while e < b.len() && (b[e].is_ascii_alphanumeric() || b[e] == b'_' || b[e] == b':') {
                e += 1;
            }
            out.push((rest[s..e].trim_end_matches(':').to_string(), false));
        }
    }
    out
}

#[test]
fn the_library_module_graph_has_no_cycles() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mods = modules(&src);
    let known: BTreeSet<Vec<String>> = mods.iter().map(|m| m.path.clone()).collect();

    // An absolute path (segments from the crate root) -> the module it lands in.
    let locate = |segs: &[String]| -> Option<Vec<String>> {
        (0..=segs.len())
            .rev()
            .map(|n| segs[..n].to_vec())
            .find(|p| known.contains(p))
    };
    let absolute = |from: &[String], path: &str| -> Option<Vec<String>> {
        let mut segs: Vec<String> = path.split("::").map(str::to_string).collect();
        let mut base: Vec<String> = match segs.first().map(String::as_str) {
            Some("crate") => Vec::new(),
            Some("super") => {
                let mut b = from.to_vec();
                while segs.first().is_some_and(|s| s == "super") {
                    b.pop();
                    segs.remove(0);
                }
                segs.insert(0, String::new());
                b
            }
            Some("self") => from.to_vec(),
            // A sibling module declared in this one (`use shape::X` in a `mod.rs`).
            Some(first) if known.contains(&[from, &[first.to_string()]].concat()) => {
                segs.insert(0, String::new());
                from.to_vec()
            }
            _ => return None,
        };
        base.extend(segs.into_iter().skip(1).filter(|s| s != "self"));
        Some(base)
    };

    // Re-exports: (module, name) -> the absolute path it stands for.
    let mut reexports: BTreeMap<Vec<String>, Vec<String>> = BTreeMap::new();
    for m in &mods {
        for (p, re) in paths(&m.code) {
            if let (true, Some(abs)) = (re, absolute(&m.path, &p)) {
                let name = abs.last().cloned().unwrap_or_default();
                reexports.insert([m.path.clone(), vec![name]].concat(), abs);
            }
        }
    }
    // Follows re-exports to the defining module.
    let resolve = |abs: Vec<String>| -> Option<Vec<String>> {
        let mut abs = abs;
        for _ in 0..16 {
            let module = locate(&abs)?;
            let rest = &abs[module.len()..];
            match rest
                .first()
                .and_then(|n| reexports.get(&[module.clone(), vec![n.clone()]].concat()))
            {
                Some(target) if *target != abs => {
                    abs = [target.clone(), rest[1..].to_vec()].concat();
                }
                _ => return Some(module),
            }
        }
        None
    };

    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for m in &mods {
        let e = edges.entry(m.path.clone()).or_default();
        for (p, re) in paths(&m.code) {
            if re {
                continue;
            }
            if let Some(to) = absolute(&m.path, &p).and_then(&resolve) {
                if to != m.path {
                    e.insert(to);
                }
            }
        }
    }
    let name = |p: &Vec<String>| {
        if p.is_empty() {
            "crate".to_string()
        } else {
            p.join("::")
        }
    };
    assert!(
        edges.len() > 20 && edges.values().map(BTreeSet::len).sum::<usize>() > 40,
        "the graph was not read: {edges:?}"
    );

    // Depth-first search for a cycle.
    fn visit(
        n: &Vec<String>,
        edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        state: &mut BTreeMap<Vec<String>, u8>,
        stack: &mut Vec<Vec<String>>,
    ) -> Option<Vec<Vec<String>>> {
        match state.get(n) {
            Some(2) => return None,
            Some(1) => {
                let at = stack.iter().position(|s| s == n).unwrap();
                return Some([stack[at..].to_vec(), vec![n.clone()]].concat());
            }
            _ => {}
        }
        state.insert(n.clone(), 1);
        stack.push(n.clone());
        for m in edges.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, edges, state, stack) {
                return Some(c);
            }
        }
        stack.pop();
        state.insert(n.clone(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in edges.keys() {
        if let Some(cycle) = visit(n, &edges, &mut state, &mut Vec::new()) {
            let text: Vec<String> = cycle.iter().map(name).collect();
            panic!("module import cycle: {}", text.join(" -> "));
        }
    }

    // The tiers call downward: spot-check the edges the layout promises.
    let has = |a: &str, b: &str| {
        let a: Vec<String> = a.split("::").map(str::to_string).collect();
        let b: Vec<String> = b.split("::").map(str::to_string).collect();
        edges.get(&a).is_some_and(|e| e.contains(&b))
    };
    assert!(has("read::shape", "read::exact"));
    assert!(has("read::shape", "read::planned"));
    assert!(has("read::general", "read::elem"));
    assert!(has("write::blocks", "write::exact"));
    assert!(!has("read::exact", "read::general"));
    assert!(!has("read::planned", "read::general"));
}
