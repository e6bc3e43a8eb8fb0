//! The crate's top-level modules form layers (see `docs/ARCHITECTURE.md`): a module may name
//! (`crate::x`) only modules of its own layer or of lower ones, and the graph of those
//! references has no cycle.
//!
//! The check reads `src/` as text. Comments (doc comments included: an intra-doc link is not a
//! dependency), string and character literals are ignored; code paths count, also inside
//! `#[cfg(...)]` items and inline unit-test modules. Files named `tests.rs` (unit tests kept in
//! their own file, compiled only under `#[cfg(test)]`) are skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, bottom up.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "stacks and context switching",
        &["stack", "asan", "overflow", "switch"],
    ),
    (
        "readiness backend and timers",
        &["driver", "reactor", "timer"],
    ),
    ("tasks", &["sched"]),
    ("scheduler", &["worker"]),
    (
        "public API",
        &["fiber", "future", "net", "runtime", "sync", "task", "time"],
    ),
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS
        .iter()
        .position(|(_, modules)| modules.contains(&module))
}

/// `src`'s top-level modules (`x.rs` or `x/`) and the files of each.
fn modules(src: &Path) -> BTreeMap<String, Vec<PathBuf>> {
    let mut out: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for entry in fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        if path.is_dir() {
            let files = out.entry(name).or_default();
            collect(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") && name != "lib" {
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
fn code_only(text: &str) -> String {
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
fn crate_refs(code: &str) -> BTreeSet<String> {
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

#[test]
fn no_module_names_a_module_of_a_higher_layer_and_there_is_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mods = modules(&src);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut problems = Vec::new();
    for (module, files) in &mods {
        let Some(layer) = layer_of(module) else {
            problems.push(format!(
                "module `{module}` is in no layer: add it to LAYERS"
            ));
            continue;
        };
        for file in files {
            let code = code_only(&fs::read_to_string(file).unwrap());
            for used in crate_refs(&code) {
                if &used == module {
                    continue;
                }
                match layer_of(&used) {
                    None => problems.push(format!(
                        "{}: `crate::{used}` is not a layered module (name the module that \
                         defines it, not a re-export at the crate root)",
                        file.display()
                    )),
                    Some(l) if l > layer => problems.push(format!(
                        "{}: `{module}` ({}) names `{used}` ({}), a higher layer",
                        file.display(),
                        LAYERS[layer].0,
                        LAYERS[l].0
                    )),
                    Some(_) => {
                        graph.entry(module.clone()).or_default().insert(used);
                    }
                }
            }
        }
    }
    for (module, used) in &graph {
        let used: Vec<&str> = used.iter().map(String::as_str).collect();
        eprintln!("{module} -> {}", used.join(", "));
    }
    // Same-layer references must not form a cycle either.
    fn visit(
        m: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
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
    for m in mods.keys() {
        visit(m, &graph, &mut state, &mut Vec::new(), &mut problems);
    }
    assert!(
        problems.is_empty(),
        "module layering violated:\n{}",
        problems.join("\n")
    );
    // The checker itself: a known upward reference and a comment are told apart.
    let sample = "use crate::worker::x; // crate::net\nlet s = \"crate::time\";";
    let refs = crate_refs(&code_only(sample));
    assert_eq!(refs, BTreeSet::from(["worker".to_string()]));
    assert_eq!(
        crate_refs("use crate::{sched::Task, driver};"),
        BTreeSet::from(["sched".to_string(), "driver".to_string()])
    );
}
