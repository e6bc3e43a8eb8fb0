//! The module-graph guard every crate's `tests/module_layers.rs` runs (shared by path): a
//! crate's top-level modules form layers, a module may name (`crate::x`) only modules of its
//! own layer or of lower ones, and the graph of those references has no cycle. The graph,
//! with each module's first doc line, is also what `docs/ARCHITECTURE.md` shows for the
//! crate, between `<!-- module-graph CRATE -->` markers: [`check_docs`] fails when the two
//! differ, and rewrites the block when `FIBRA_BLESS=1` is set.
//!
//! The check reads `src/` as text. Comments (doc comments included: an intra-doc link is not a
//! dependency), string and character literals are ignored; code paths count, also inside
//! `#[cfg(...)]` items and inline unit-test modules. Files named `tests.rs` (unit tests kept in
//! their own file, compiled only under `#[cfg(test)]`) are skipped.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// A crate's layers, bottom up: a name and the top-level modules in it.
pub type Layers = &'static [(&'static str, &'static [&'static str])];

/// Module -> the modules it names.
pub type Graph = BTreeMap<String, BTreeSet<String>>;

fn layer_of(layers: Layers, module: &str) -> Option<usize> {
    layers
        .iter()
        .position(|(_, modules)| modules.contains(&module))
}

/// `src`'s top-level modules (`x.rs` or `x/`) and the files of each.
pub fn modules(src: &Path) -> BTreeMap<String, Vec<PathBuf>> {
    let mut out: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for entry in fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        if path.is_dir() {
            let files = out.entry(name).or_default();
            collect(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") && name != "lib" && name != "tests" {
            out.entry(name).or_default().push(path);
        }
    }
    out
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs")
            && path.file_name().is_some_and(|n| n != "tests.rs")
        {
            files.push(path);
        }
    }
}

/// `text` without comments and literals (each replaced by a space).
pub fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < c.len() {
        if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push(' ');
        } else if c[i] == '\'' && (c.get(i + 2) == Some(&'\'') || c.get(i + 1) == Some(&'\\')) {
            // A character literal ('x' or an escape); a lifetime has no closing quote.
            i += 1;
            while i < c.len() && c[i] != '\'' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push(' ');
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

fn is_ident(ch: char) -> bool {
    ch.is_ascii_alphanumeric() || ch == '_'
}

/// The first path segment after each `crate::` in `code` (both `crate::x::..` and
/// `crate::{x, y::..}`).
pub fn crate_refs(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|ch| is_ident(ch) || ch == ':') {
            continue; // `$crate::`, `some_crate::`: not this crate's root
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').expect("a closed `crate::{..}` group");
            for item in group[..end].split(',') {
                let head: String = item.trim().chars().take_while(|&ch| is_ident(ch)).collect();
                if !head.is_empty() {
                    out.insert(head);
                }
            }
        } else {
            let head: String = rest.chars().take_while(|&ch| is_ident(ch)).collect();
            out.insert(head);
        }
    }
    out
}

/// The problems of a crate whose modules hold `sources` (module -> the code of each of its
/// files, with a name for each file), and its graph.
pub fn problems_of(
    sources: &BTreeMap<String, Vec<(String, String)>>,
    layers: Layers,
) -> (Vec<String>, Graph) {
    let mut graph: Graph = BTreeMap::new();
    let mut problems = Vec::new();
    for name in layers.iter().flat_map(|(_, m)| m.iter()) {
        if !sources.contains_key(*name) {
            problems.push(format!(
                "LAYERS names `{name}`, which is no module: remove it"
            ));
        }
    }
    for (module, files) in sources {
        let Some(layer) = layer_of(layers, module) else {
            problems.push(format!(
                "module `{module}` is in no layer: add it to LAYERS"
            ));
            continue;
        };
        graph.entry(module.clone()).or_default();
        for (file, text) in files {
            for used in crate_refs(&code_only(text)) {
                if &used == module {
                    continue;
                }
                match layer_of(layers, &used) {
                    None => problems.push(format!(
                        "{file}: `crate::{used}` is not a layered module (name the module that \
                         defines it, not a re-export at the crate root)"
                    )),
                    Some(l) if l > layer => problems.push(format!(
                        "{file}: `{module}` ({}) names `{used}` ({}), a higher layer",
                        layers[layer].0, layers[l].0
                    )),
                    Some(_) => {
                        graph.entry(module.clone()).or_default().insert(used);
                    }
                }
            }
        }
    }
    // Same-layer references must not form a cycle either.
    fn visit(
        m: &str,
        graph: &Graph,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
        cycles: &mut Vec<String>,
    ) {
        match state.get(m) {
            Some(2) => return,
            Some(1) => {
                let from = path.iter().position(|p| p == m).unwrap();
                cycles.push(format!("cycle: {} -> {m}", path[from..].join(" -> ")));
                return;
            }
            _ => {}
        }
        state.insert(m.to_string(), 1);
        path.push(m.to_string());
        for next in graph.get(m).into_iter().flatten() {
            visit(next, graph, state, path, cycles);
        }
        path.pop();
        state.insert(m.to_string(), 2);
    }
    let mut state = BTreeMap::new();
    for m in sources.keys() {
        visit(m, &graph, &mut state, &mut Vec::new(), &mut problems);
    }
    (problems, graph)
}

/// Checks the crate at `manifest_dir` against `layers` (see the module docs) and returns its
/// graph. The library's root is `lib.rs`, a binary's `main.rs`.
pub fn check(manifest_dir: &str, layers: Layers) -> Graph {
    let src = Path::new(manifest_dir).join("src");
    let sources: BTreeMap<String, Vec<(String, String)>> = modules(&src)
        .into_iter()
        .filter(|(m, _)| m != "main")
        .map(|(m, files)| {
            let texts = files
                .iter()
                .map(|f| (f.display().to_string(), fs::read_to_string(f).unwrap()))
                .collect();
            (m, texts)
        })
        .collect();
    let (problems, graph) = problems_of(&sources, layers);
    assert!(
        problems.is_empty(),
        "module layering violated:\n{}",
        problems.join("\n")
    );
    graph
}

/// The first line of the module doc comment (`//!`) of `module` in `src`.
fn first_doc_line(src: &Path, module: &str) -> String {
    let file = [
        src.join(format!("{module}.rs")),
        src.join(module).join("mod.rs"),
    ]
    .into_iter()
    .find(|p| p.exists());
    let Some(file) = file else {
        return String::new();
    };
    let text = fs::read_to_string(file).unwrap();
    let mut line = String::new();
    for l in text.lines() {
        let Some(doc) = l.strip_prefix("//!") else {
            break;
        };
        let doc = doc.trim();
        if doc.is_empty() {
            break;
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(doc);
        // The first sentence is enough: up to a full stop before a capital or the line's end.
        let bytes = line.as_bytes();
        let end = (0..bytes.len()).find(|&i| {
            bytes[i] == b'.'
                && (i + 1 == bytes.len()
                    || (bytes[i + 1] == b' '
                        && bytes.get(i + 2).is_some_and(u8::is_ascii_uppercase)))
        });
        if let Some(end) = end {
            line.truncate(end + 1);
            break;
        }
    }
    line
}

/// The crate's module map as `docs/ARCHITECTURE.md` shows it: each layer, bottom up, and in
/// it each module with what it names and its first doc sentence.
pub fn render(manifest_dir: &str, layers: Layers, graph: &Graph) -> String {
    let src = Path::new(manifest_dir).join("src");
    let mut out = String::from("```text\n");
    for (name, modules) in layers {
        out.push_str(&format!("[{name}]\n"));
        for m in *modules {
            let used: Vec<&str> = graph
                .get(*m)
                .into_iter()
                .flatten()
                .map(String::as_str)
                .collect();
            let arrow = if used.is_empty() {
                String::new()
            } else {
                format!(" -> {}", used.join(", "))
            };
            out.push_str(&format!("  {m}{arrow}\n"));
            let doc = first_doc_line(&src, m);
            if !doc.is_empty() {
                out.push_str(&format!("      {doc}\n"));
            }
        }
    }
    out.push_str("```\n");
    out
}

/// Checks that `docs/ARCHITECTURE.md` shows `rendered` for crate `name` between its
/// `<!-- module-graph NAME -->` and `<!-- end module-graph NAME -->` markers; with
/// `FIBRA_BLESS=1` it writes `rendered` there instead.
pub fn check_docs(manifest_dir: &str, name: &str, rendered: &str) {
    let path = Path::new(manifest_dir).join("../../docs/ARCHITECTURE.md");
    let doc = fs::read_to_string(&path).unwrap();
    let (open, close) = (
        format!("<!-- module-graph {name} -->\n"),
        format!("<!-- end module-graph {name} -->"),
    );
    let start = doc
        .find(&open)
        .unwrap_or_else(|| panic!("{} has no `{}` marker", path.display(), open.trim()))
        + open.len();
    let end = start
        + doc[start..]
            .find(&close)
            .unwrap_or_else(|| panic!("no `{close}` marker"));
    if &doc[start..end] == rendered {
        return;
    }
    if std::env::var_os("FIBRA_BLESS").is_some() {
        fs::write(&path, format!("{}{rendered}{}", &doc[..start], &doc[end..])).unwrap();
        return;
    }
    panic!(
        "docs/ARCHITECTURE.md's module map of {name} is not the code's; run \
         `FIBRA_BLESS=1 cargo test -p {name} --test module_layers` and review the diff. The code's:\n{rendered}"
    );
}

/// The guard finds what it is for: a planted upward reference and a planted cycle are
/// reported, comments and literals are not references.
pub fn self_check() {
    const LAYERS: Layers = &[("low", &["a", "b"]), ("high", &["c"])];
    let src = |pairs: &[(&str, &str)]| -> BTreeMap<String, Vec<(String, String)>> {
        pairs
            .iter()
            .map(|(m, code)| (m.to_string(), vec![(format!("{m}.rs"), code.to_string())]))
            .collect()
    };
    let (ok, graph) = problems_of(
        &src(&[
            ("a", "use crate::b::X; // crate::c"),
            ("b", "let s = \"crate::c\";"),
            ("c", "use crate::a;"),
        ]),
        LAYERS,
    );
    assert!(ok.is_empty(), "{ok:?}");
    assert_eq!(graph["a"], BTreeSet::from(["b".to_string()]));
    let (up, _) = problems_of(
        &src(&[("a", "use crate::c::Y;"), ("b", ""), ("c", "")]),
        LAYERS,
    );
    assert!(up.iter().any(|p| p.contains("a higher layer")), "{up:?}");
    let (cycle, _) = problems_of(
        &src(&[
            ("a", "use crate::b::X;"),
            ("b", "use crate::{a, c};"),
            ("c", ""),
        ]),
        LAYERS,
    );
    assert!(
        cycle.iter().any(|p| p.starts_with("cycle: a -> b -> a")),
        "{cycle:?}"
    );
    assert_eq!(
        crate_refs("use crate::{sched::Task, driver};"),
        BTreeSet::from(["sched".to_string(), "driver".to_string()])
    );
}
