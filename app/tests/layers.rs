//! The app's house: every file of `app/src` belongs to one layer, and imports only its own layer
//! or the ones below it; a view never imports another view; and no file reaches itself through
//! its imports (no cycle). Read from the source's `use` lines and `crate::…`/`super::…` paths, as
//! a newcomer would read them.
//!
//! | rank | layer | files |
//! |---|---|---|
//! | 5 | shell | `lib.rs`, `main.rs`, `app.rs`, `app/` |
//! | 4 | views | `views/` (never another view) |
//! | 3 | widgets | `widgets/` |
//! | 2 | lab | `lab/` |
//! | 1 | platform | `platform/` |
//! | 0 | base | `i18n.rs`, `background.rs` |
//! | — | CLI | `cli/` (the binary's subcommands: the base layer only, and the engine) |

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Layer {
    Base,
    Platform,
    Lab,
    Widgets,
    Views,
    Shell,
    Cli,
}

fn layer_of(file: &str) -> Layer {
    let first = file.split('/').next().unwrap_or(file);
    match first {
        "lib.rs" | "main.rs" | "app.rs" | "app" => Layer::Shell,
        "views" => Layer::Views,
        "widgets" => Layer::Widgets,
        "lab" => Layer::Lab,
        "platform" => Layer::Platform,
        "i18n.rs" | "background.rs" => Layer::Base,
        "cli" => Layer::Cli,
        other => panic!("{file}: in no layer ('{other}'); add it to the table in tests/layers.rs"),
    }
}

/// May a file of layer `from` use one of layer `to`?
fn allowed(from: Layer, to: Layer) -> bool {
    match from {
        Layer::Cli => matches!(to, Layer::Base | Layer::Cli),
        _ => to != Layer::Cli && to <= from,
    }
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("app/src is readable")
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// A file's module path inside its crate: `views/step.rs` → `["views", "step"]`,
/// `lab/mod.rs` → `["lab"]`, `app.rs` → `["app"]`, `lib.rs` → `[]`.
fn module_of(rel: &str) -> Vec<String> {
    let no_ext = rel.trim_end_matches(".rs");
    let mut parts: Vec<String> = no_ext.split('/').map(str::to_string).collect();
    if parts
        .last()
        .is_some_and(|p| p == "mod" || p == "lib" || p == "main")
    {
        parts.pop();
    }
    parts
}

/// The file a module path names, the longest prefix that is a file (`crate::lab::design::X` →
/// `lab/design.rs`).
fn file_of(module: &[String], files: &BTreeSet<String>, bin: bool) -> Option<String> {
    for n in (0..=module.len()).rev() {
        let m = &module[..n];
        let candidates = if m.is_empty() {
            vec![if bin {
                "main.rs".to_string()
            } else {
                "lib.rs".to_string()
            }]
        } else {
            let p = m.join("/");
            vec![format!("{p}.rs"), format!("{p}/mod.rs")]
        };
        if let Some(c) = candidates.into_iter().find(|c| files.contains(c)) {
            return Some(c);
        }
    }
    None
}

/// The code of a file without comments and string literals (a path in a doc comment or a
/// message is not an import).
fn code_only(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut in_str = false;
        let mut prev = ' ';
        let mut kept = String::new();
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if !in_str && c == '/' && chars.get(i + 1) == Some(&'/') {
                break;
            }
            if c == '"' && prev != '\\' {
                in_str = !in_str;
                kept.push(' ');
            } else if !in_str {
                kept.push(c);
            }
            prev = if prev == '\\' && c == '\\' { ' ' } else { c };
            i += 1;
        }
        out.push_str(&kept);
        out.push('\n');
    }
    out
}

/// Every path a file names: `crate::a::b`, `super::a`, `tplab::a` (the binary's use of the
/// library), with `use …::{x, y::z}` groups expanded to their first segments.
fn references(code: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let text = code;
    for root in ["crate::", "super::", "tplab::"] {
        let mut start = 0;
        while let Some(pos) = text[start..].find(root) {
            let at = start + pos;
            start = at + root.len();
            // Only whole roots: not `my_crate::` or `$crate::` (the CLI's macros mean `crate`).
            let before = text[..at].chars().last().unwrap_or(' ');
            if before.is_alphanumeric() || before == '_' {
                continue;
            }
            // Segments: identifiers joined by `::`, stopping at `{` or anything else.
            let mut segs = Vec::new();
            let mut rest = &text[at + root.len()..];
            // `super::super::x`
            let mut supers = 0;
            if root == "super::" {
                supers = 1;
                while let Some(r) = rest.strip_prefix("super::") {
                    supers += 1;
                    rest = r;
                }
            }
            loop {
                let ident: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if ident.is_empty() {
                    break;
                }
                segs.push(ident.clone());
                rest = &rest[ident.len()..];
                match rest.strip_prefix("::") {
                    Some(r) => rest = r,
                    None => break,
                }
            }
            let mut group = Vec::new();
            if let Some(r) = rest.strip_prefix('{') {
                // A group: each member's first segment.
                let inner: String = r.chars().take_while(|c| *c != '}').collect();
                for m in inner.split(',') {
                    let first: String = m
                        .trim()
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    if !first.is_empty() && first != "self" {
                        group.push(first);
                    }
                }
            }
            let tag = match root {
                "super::" => format!("super{supers}"),
                r => r.trim_end_matches("::").to_string(),
            };
            if group.is_empty() {
                out.push((tag, segs));
            } else {
                for g in group {
                    let mut s = segs.clone();
                    s.push(g);
                    out.push((tag.clone(), s));
                }
            }
        }
    }
    out
}

struct House {
    /// file → files it uses.
    edges: BTreeMap<String, BTreeSet<String>>,
}

fn read_house() -> House {
    let src = src_dir();
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    let rel = |p: &Path| {
        p.strip_prefix(&src)
            .expect("under src")
            .to_string_lossy()
            .replace('\\', "/")
    };
    let files: BTreeSet<String> = paths.iter().map(|p| rel(p)).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for p in &paths {
        let f = rel(p);
        let bin = f == "main.rs" || f.starts_with("cli/");
        let text = std::fs::read_to_string(p).expect("a source file");
        // A file's own test module reads its file and the test tools: not the house.
        let code = match text.find("#[cfg(test)]\nmod ") {
            Some(i) => code_only(&text[..i]),
            None => code_only(&text),
        };
        let here = module_of(&f);
        let mut uses = BTreeSet::new();
        for (root, segs) in references(&code) {
            // `use super::*` names no file of its own.
            if segs.is_empty() {
                continue;
            }
            let (module, in_bin) = match root.as_str() {
                "crate" => (segs.clone(), bin),
                "tplab" => (segs.clone(), false),
                s if s.starts_with("super") => {
                    let n: usize = s["super".len()..].parse().expect("a count");
                    let base = here.len().saturating_sub(n);
                    let mut m = here[..base].to_vec();
                    m.extend(segs.iter().cloned());
                    (m, bin)
                }
                _ => continue,
            };
            // The binary's `crate::…` are the binary's files (`main.rs`, `cli/`); its `tplab::…`
            // the library's.
            if let Some(target) = file_of(&module, &files, in_bin) {
                if target != f {
                    uses.insert(target);
                }
            }
        }
        edges.insert(f, uses);
    }
    House { edges }
}

#[test]
fn every_import_runs_down_the_layers_and_views_never_import_views() {
    let house = read_house();
    let mut wrong = Vec::new();
    for (from, uses) in &house.edges {
        let lf = layer_of(from);
        for to in uses {
            let lt = layer_of(to);
            // `views/mod.rs` lists the views; a view using it would be a view using the list.
            let view_to_view = lf == Layer::Views && lt == Layer::Views;
            let shell_list = from == "lib.rs" || from == "main.rs";
            if !shell_list && (!allowed(lf, lt) || view_to_view) {
                wrong.push(format!("{from} ({lf:?}) uses {to} ({lt:?})"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports that run up a layer or from a view to a view:\n{}",
        wrong.join("\n")
    );
    // The test reads what it claims to: views use widgets and the lab, the lab is used.
    assert!(house.edges["views/step.rs"].contains("widgets/mod.rs"));
    assert!(house.edges["views/design.rs"]
        .iter()
        .any(|f| f.starts_with("lab/")));
    assert!(
        house.edges["app.rs"].contains("views/mod.rs")
            || house.edges["app.rs"]
                .iter()
                .any(|f| f.starts_with("views/"))
    );
}

#[test]
fn no_file_reaches_itself_through_its_imports() {
    let house = read_house();
    // Depth-first search for a back edge; report the cycle's files.
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    let mut mark: BTreeMap<&str, Mark> = house
        .edges
        .keys()
        .map(|k| (k.as_str(), Mark::New))
        .collect();
    let mut cycles = Vec::new();
    fn visit<'a>(
        f: &'a str,
        house: &'a House,
        mark: &mut BTreeMap<&'a str, Mark>,
        stack: &mut Vec<&'a str>,
        cycles: &mut Vec<String>,
    ) {
        mark.insert(f, Mark::Open);
        stack.push(f);
        for to in house.edges.get(f).into_iter().flatten() {
            match mark.get(to.as_str()).copied().unwrap_or(Mark::Done) {
                Mark::New => visit(to, house, mark, stack, cycles),
                Mark::Open => {
                    let i = stack.iter().position(|s| *s == to).unwrap_or(0);
                    cycles.push(format!("{} -> {to}", stack[i..].join(" -> ")));
                }
                Mark::Done => {}
            }
        }
        stack.pop();
        mark.insert(f, Mark::Done);
    }
    let keys: Vec<&str> = house.edges.keys().map(String::as_str).collect();
    for k in keys {
        if mark[k] == Mark::New {
            let mut stack = Vec::new();
            visit(k, &house, &mut mark, &mut stack, &mut cycles);
        }
    }
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn the_reader_finds_imports_in_every_form() {
    let code = code_only(
        "use crate::lab::{Shared, design::Setup};\nuse super::walk::WalkStep;\n// crate::views::step in a comment\nlet s = \"crate::views::x\";\nfoo(crate::widgets::lang(ui));\n",
    );
    let refs = references(&code);
    assert!(refs.contains(&("crate".into(), vec!["lab".into(), "Shared".into()])));
    assert!(refs.contains(&("crate".into(), vec!["lab".into(), "design".into()])));
    assert!(refs.contains(&("super1".into(), vec!["walk".into(), "WalkStep".into()])));
    assert!(refs.contains(&("crate".into(), vec!["widgets".into(), "lang".into()])));
    assert!(!refs
        .iter()
        .any(|(_, s)| s.first().is_some_and(|x| x == "views")));
}
