//! The module import graphs have no cycles: in each library crate of the workspace every module
//! calls only modules below it (the tiers of reading and writing call downward, see the `read`
//! and `write` module docs of npy-serde), and so does each module of the `npy` tool
//! (`../npy-cli/src`), where moreover no module imports the entry point (`main.rs`).
//!
//! The graph is read from the sources: an edge `a -> b` for every path `crate::...` or
//! `super::...` in `a` (in `use` items and inline) that names an item of module `b`.
//! Re-exports (`pub use`) are transparent: a path through one is an edge to the module that
//! defines the item; and a module that uses a name it re-exports itself (`pub use x::Name;`
//! then `Name::new()`) has an edge to the module defining it. Test modules (`tests.rs`,
//! `mod tests { .. }`) and the library's `bin/` are left out. A `mod` declaration is not an
//! edge.

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

fn modules(src: &Path, skip_bin: bool) -> Vec<Module> {
    let mut out = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            let rel: PathBuf = p.strip_prefix(src).unwrap().to_path_buf();
            if skip_bin && rel.starts_with("bin") {
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
            if path
                .last()
                .is_some_and(|l| l == "mod" || l == "lib" || l == "main")
            {
                path.pop();
            }
            let code = strip(&std::fs::read_to_string(&p).unwrap());
            out.push(Module { path, code });
        }
    }
    out
}

/// One path a module names: in a `use` item (with the name it takes in the module, and
/// whether it is a re-export) or inline.
struct Named {
    path: String,
    reexport: bool,
    /// The name the item has in the module (`C` for `use a::B as C`); none for inline paths.
    local: Option<String>,
}

/// The `use` trees of `code` expanded into full paths (`a::b::{c, d::e}` -> `a::b::c`,
/// `a::b::d::e`), plus the inline `crate::`/`super::` paths outside `use` items; and the code
/// outside `use` items.
fn paths(code: &str) -> (Vec<Named>, String) {
    fn expand(prefix: &str, tree: &str, out: &mut Vec<(String, String)>) {
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
            let mut parts = tree.split(" as ");
            let name = parts.next().unwrap().trim();
            let path = join(prefix, name);
            let local = match parts.next() {
                Some(alias) => alias.trim().to_string(),
                None => path.rsplit("::").next().unwrap_or_default().to_string(),
            };
            out.push((path, local));
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
            out.extend(v.into_iter().map(|(path, local)| Named {
                path,
                reexport,
                local: Some(local),
            }));
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
            out.push(Named {
                path: rest[s..e].trim_end_matches(':').to_string(),
                reexport: false,
                local: None,
            });
        }
    }
    (out, rest)
}

/// Whether `code` uses the bare name `name` (not as `x::name`, `.name` or part of a word).
fn uses_name(code: &str, name: &str) -> bool {
    if name.is_empty() || name == "*" || name == "self" {
        return false;
    }
    let b = code.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    code.match_indices(name).any(|(at, _)| {
        let before = code[..at].trim_end().as_bytes();
        let after = b.get(at + name.len()).copied();
        let part_of_word = (at > 0 && ident(b[at - 1])) || after.is_some_and(ident);
        let qualified = before.ends_with(b"::") || before.ends_with(b".");
        !part_of_word && !qualified
    })
}

type Graph = BTreeMap<Vec<String>, BTreeSet<Vec<String>>>;

/// The import graph of the modules under `src` (without `src/bin` if `skip_bin`).
fn graph(src: &Path, skip_bin: bool) -> Graph {
    let mods = modules(src, skip_bin);
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

    let named: Vec<(&Module, Vec<Named>, String)> = mods
        .iter()
        .map(|m| {
            let (n, rest) = paths(&m.code);
            (m, n, rest)
        })
        .collect();

    // Re-exports: (module, name) -> the absolute path it stands for.
    let mut reexports: BTreeMap<Vec<String>, Vec<String>> = BTreeMap::new();
    for (m, names, _) in &named {
        for n in names.iter().filter(|n| n.reexport) {
            if let (Some(abs), Some(local)) = (absolute(&m.path, &n.path), &n.local) {
                reexports.insert([m.path.clone(), vec![local.clone()]].concat(), abs);
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

    let mut edges: Graph = BTreeMap::new();
    for (m, names, rest) in &named {
        let e = edges.entry(m.path.clone()).or_default();
        for n in names {
            // A re-export is an edge only if the module itself uses the name.
            if n.reexport && !n.local.as_deref().is_some_and(|l| uses_name(rest, l)) {
                continue;
            }
            if let Some(to) = absolute(&m.path, &n.path).and_then(&resolve) {
                if to != m.path {
                    e.insert(to);
                }
            }
        }
    }
    edges
}

fn name(p: &[String]) -> String {
    if p.is_empty() {
        "crate".to_string()
    } else {
        p.join("::")
    }
}

/// A cycle of `edges`, if there is one.
fn cycle(edges: &Graph) -> Option<String> {
    // Depth-first search.
    fn visit(
        n: &Vec<String>,
        edges: &Graph,
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
        if let Some(cycle) = visit(n, edges, &mut state, &mut Vec::new()) {
            let text: Vec<String> = cycle.iter().map(|p| name(p)).collect();
            return Some(text.join(" -> "));
        }
    }
    None
}

fn has(edges: &Graph, a: &str, b: &str) -> bool {
    let a: Vec<String> = a.split("::").map(str::to_string).collect();
    let b: Vec<String> = b.split("::").map(str::to_string).collect();
    edges.get(&a).is_some_and(|e| e.contains(&b))
}

/// The library crates of the workspace: each is checked on its own (an import of another
/// crate, `npy_serde::...`, is not an edge: the crates' own graph is Cargo's, which has no
/// cycles).
const LIBRARIES: &[&str] = &[
    "npy-serde",
    "npy-derive",
    "npy-arrow",
    "npy-remote",
    "npy-datafusion",
    "npy-python",
];

fn crate_src(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(name)
        .join("src")
}

/// The graph of rooms: each module stands for its top-level module (a folder, or a file at the
/// top), edges inside a room and the crate root's (its re-exports) dropped. A cycle here is two
/// rooms that import each other through different files, which the file graph does not see.
fn rooms(edges: &Graph) -> Graph {
    let mut out = Graph::new();
    for (from, to) in edges {
        let Some(a) = from.first() else { continue };
        for b in to.iter().filter_map(|m| m.first()) {
            if a != b {
                out.entry(vec![a.clone()])
                    .or_default()
                    .insert(vec![b.clone()]);
            }
        }
    }
    out
}

#[test]
fn every_library_crate_module_graph_has_no_cycles() {
    for name in LIBRARIES {
        let edges = graph(&crate_src(name), true);
        assert!(!edges.is_empty(), "the graph of {name} was not read");
        if let Some(c) = cycle(&edges) {
            panic!("module import cycle in {name}: {c}");
        }
        if let Some(c) = cycle(&rooms(&edges)) {
            panic!("room (folder) import cycle in {name}: {c}");
        }
    }
}

#[test]
fn the_format_crate_tiers_call_downward() {
    let edges = graph(&crate_src("npy-serde"), true);
    assert!(
        edges.len() > 20 && edges.values().map(BTreeSet::len).sum::<usize>() > 40,
        "the graph was not read: {edges:?}"
    );
    // The tiers call downward: spot-check the edges the layout promises.
    assert!(has(&edges, "read::shape", "read::exact"));
    assert!(has(&edges, "read::shape", "read::planned"));
    assert!(has(&edges, "read::general", "read::elem"));
    assert!(has(&edges, "write::blocks", "write::exact"));
    assert!(!has(&edges, "read::exact", "read::general"));
    assert!(!has(&edges, "read::planned", "read::general"));
}

#[test]
fn the_sql_crate_source_picks_openers_on_the_ground_floor() {
    let edges = graph(&crate_src("npy-datafusion"), true);
    // The source picks its openers, which stand on the ground floor (`error`), which imports
    // nothing of the crate.
    assert!(has(&edges, "source", "rows"));
    assert!(has(&edges, "rows", "error"));
    assert!(edges
        .get(&vec!["error".to_string()])
        .is_none_or(|e| e.iter().all(|m| m.first().is_some_and(|s| s == "error"))));
}

#[test]
fn the_tool_module_graph_has_no_cycles_and_nothing_imports_its_entry_point() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../npy-cli/src");
    if !src.is_dir() {
        println!(
            "note: {} is not there: the tool's module graph is not checked",
            src.display()
        );
        return;
    }
    let edges = graph(&src, false);
    assert!(
        edges.len() > 5 && edges.values().map(BTreeSet::len).sum::<usize>() > 5,
        "the graph was not read: {edges:?}"
    );
    if let Some(c) = cycle(&edges) {
        panic!("module import cycle in the tool: {c}");
    }
    if let Some(c) = cycle(&rooms(&edges)) {
        panic!("room (folder) import cycle in the tool: {c}");
    }
    let upward: Vec<String> = edges
        .iter()
        .filter(|(_, to)| to.contains(&Vec::new()))
        .map(|(from, _)| name(from))
        .collect();
    assert!(
        upward.is_empty(),
        "these modules of the tool import its entry point (main.rs): {upward:?}"
    );
}

/// A temporary crate source tree.
struct Tree(PathBuf);

impl Tree {
    fn new(tag: &str, files: &[(&str, &str)]) -> Tree {
        let dir = std::env::temp_dir().join(format!("module-graph-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (path, text) in files {
            let p = dir.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        Tree(dir)
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_name_a_module_reaches_through_its_own_reexport_is_an_edge() {
    // `mod.rs` calls `Format::new` through its own `pub use`, while `format.rs` imports
    // `super::Options`: a cycle (the one `datafusion/` had).
    let files = [
        ("lib.rs", "pub mod df;\n"),
        (
            "df/mod.rs",
            "mod format;\npub use format::Format;\npub struct Options;\n\
             pub fn make() -> Format { Format::new() }\n",
        ),
        (
            "df/format.rs",
            "use super::Options;\npub struct Format(Options);\n\
             impl Format { pub fn new() -> Self { Format(Options) } }\n",
        ),
    ];
    let tree = Tree::new("cycle", &files);
    let edges = graph(&tree.0, true);
    assert!(has(&edges, "df", "df::format"), "{edges:?}");
    assert_eq!(
        cycle(&edges).as_deref(),
        Some("df -> df::format -> df"),
        "{edges:?}"
    );

    // A re-export the module does not use is no edge; `x::Format` and `.Format` are not the
    // bare name.
    let files = [
        ("lib.rs", "pub mod df;\n"),
        (
            "df/mod.rs",
            "mod format;\npub use format::Format;\npub struct Options;\n\
             pub fn make(a: other::Format) { a.Format; }\n",
        ),
        (
            "df/format.rs",
            "use super::Options;\npub struct Format(Options);\n",
        ),
    ];
    let tree = Tree::new("face", &files);
    let edges = graph(&tree.0, true);
    assert!(!has(&edges, "df", "df::format"), "{edges:?}");
    assert!(has(&edges, "df::format", "df"), "{edges:?}");
    assert_eq!(cycle(&edges), None);
}

#[test]
fn a_cycle_between_folders_is_caught_where_files_have_none() {
    // a::x -> b::y -> a::z: no file imports itself back, but the rooms `a` and `b` import each
    // other (what `read/` and `pickle/` did through `decode_value`).
    let files = [
        ("lib.rs", "pub mod a;\npub mod b;\n"),
        ("a/mod.rs", "pub mod x;\npub mod z;\n"),
        ("a/x.rs", "use crate::b::y::Y;\npub struct X(Y);\n"),
        ("a/z.rs", "pub struct Z;\n"),
        ("b/mod.rs", "pub mod y;\n"),
        ("b/y.rs", "use crate::a::z::Z;\npub struct Y(Z);\n"),
    ];
    let tree = Tree::new("rooms", &files);
    let edges = graph(&tree.0, true);
    assert_eq!(cycle(&edges), None, "{edges:?}");
    assert_eq!(
        cycle(&rooms(&edges)).as_deref(),
        Some("a -> b -> a"),
        "{edges:?}"
    );

    // One way (b no longer imports a): no room cycle either.
    let files = [
        ("lib.rs", "pub mod a;\npub mod b;\n"),
        ("a/mod.rs", "pub mod x;\n"),
        ("a/x.rs", "use crate::b::y::Y;\npub struct X(Y);\n"),
        ("b/mod.rs", "pub mod y;\n"),
        ("b/y.rs", "pub struct Y;\n"),
    ];
    let tree = Tree::new("rooms-one-way", &files);
    assert_eq!(cycle(&rooms(&graph(&tree.0, true))), None);
}

/// The map (ARCHITECTURE.md) names every crate of the workspace and every room (top-level file
/// or folder) of each crate's `src`, and stays a map: at most 150 lines.
#[test]
fn the_architecture_map_names_every_crate_and_room() {
    let top = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let map = std::fs::read_to_string(top.join("ARCHITECTURE.md")).unwrap();
    assert!(
        map.lines().count() <= 150,
        "ARCHITECTURE.md is {} lines",
        map.lines().count()
    );
    let named = |name: &str| {
        ["`", "/", ".rs`"]
            .iter()
            .any(|end| map.contains(&format!("`{name}{end}")))
    };
    let manifest = std::fs::read_to_string(top.join("Cargo.toml")).unwrap();
    let members = manifest
        .lines()
        .find_map(|l| l.trim().strip_prefix("members = "))
        .expect("the workspace's members");
    let crates: Vec<&str> = members
        .trim_matches(['[', ']'])
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .collect();
    assert!(crates.len() >= 6, "{crates:?}");
    let mut missing = Vec::new();
    for c in &crates {
        if !named(c) {
            missing.push(c.to_string());
        }
        let src = top.join(c).join("src");
        let Ok(entries) = std::fs::read_dir(&src) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            let is_room = p.is_dir() || p.extension().is_some_and(|x| x == "rs");
            if !is_room || ["lib", "main", "tests", "bin"].contains(&name.as_str()) {
                continue;
            }
            if name.ends_with("_tests") {
                continue;
            }
            if !named(&name) {
                missing.push(format!("{c}/src/{name}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md does not name: {missing:?}"
    );
}
