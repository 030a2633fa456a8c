//! Finds import circles between the modules of a crate's source tree, from the
//! text alone: every `crate::…`, `super::…` and `self::…` path of every `.rs`
//! file (in `use` trees and in expressions), resolved to the module it names.
//!
//! A reference from module `a::b::c` to `a::d::e` is an edge `b → d` among the
//! children of `a`: the graph of each directory's sibling modules, the top level
//! (`src/`'s modules) included. A circle in any of them is reported by name.
//! Paths in comments are ignored; a child using its parent (or the reverse) is
//! not an edge.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Module path → its direct dependencies, per directory (`""` is the crate root).
pub type Graphs = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// The first import circle under `src`, as `dir: a → b → a`, skipping files whose
/// path (relative to `src`) starts with one of `skip`.
pub fn find_cycle(src: &Path, skip: &[&str]) -> Option<String> {
    let graphs = graphs(src, skip);
    for (dir, graph) in &graphs {
        if let Some(cycle) = cycle_in(graph) {
            let at = if dir.is_empty() {
                "crate"
            } else {
                dir.as_str()
            };
            return Some(format!("{at}: {}", cycle.join(" → ")));
        }
    }
    None
}

/// The sibling graphs of every directory of the tree under `src`.
pub fn graphs(src: &Path, skip: &[&str]) -> Graphs {
    let mut files = Vec::new();
    walk(src, &mut files);
    let mut modules = BTreeSet::new();
    let mut parsed = Vec::new();
    for file in files {
        let rel = file
            .strip_prefix(src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let path = module_of(&rel);
        for i in 1..=path.len() {
            modules.insert(path[..i].to_vec());
        }
        if skip.iter().any(|s| rel.starts_with(s)) {
            continue;
        }
        parsed.push((path, fs::read_to_string(&file).unwrap()));
    }
    let mut graphs = Graphs::new();
    for (from, text) in parsed {
        for (depth, raw) in references(&strip_comments(&text)) {
            let Some(target) = resolve(&from, depth, &raw) else {
                continue;
            };
            // The longest prefix that is a module: the rest names an item.
            let known = (1..=target.len())
                .rev()
                .find(|&n| modules.contains(&target[..n]))
                .map(|n| target[..n].to_vec());
            let Some(to) = known else { continue };
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common < from.len() && common < to.len() {
                graphs
                    .entry(from[..common].join("::"))
                    .or_default()
                    .entry(from[common].clone())
                    .or_default()
                    .insert(to[common].clone());
            }
        }
    }
    graphs
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `http/mcp.rs` → `[http, mcp]`; `http/mod.rs` → `[http]`; `lib.rs` → `[]`.
fn module_of(rel: &str) -> Vec<String> {
    let stem = rel.trim_end_matches(".rs");
    let mut parts: Vec<String> = stem.split('/').map(str::to_string).collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The text without `//` and `/* */` comments and without string literals' contents.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut prev = ' ';
                for c in chars.by_ref() {
                    if prev == '*' && c == '/' {
                        break;
                    }
                    prev = c;
                }
            }
            '"' => {
                out.push('"');
                let mut escaped = false;
                for c in chars.by_ref() {
                    if escaped {
                        escaped = false;
                    } else if c == '\\' {
                        escaped = true;
                    } else if c == '"' {
                        break;
                    }
                }
                out.push('"');
            }
            _ => out.push(c),
        }
    }
    out
}

/// Every path that starts with `crate`, `super` or `self`, with the depth of inline
/// modules (`mod tests { … }`) it sits in. `use` trees with braces are expanded.
fn references(text: &str) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    let tokens = tokenize(text);
    let mut depth_stack: Vec<bool> = Vec::new(); // true: the brace opened an inline mod
    let mut inline = 0usize;
    let mut i = 0;
    while i < tokens.len() {
        let t = tokens[i].as_str();
        match t {
            "{" => {
                let is_mod = i >= 2 && tokens[i - 2] == "mod";
                depth_stack.push(is_mod);
                inline += usize::from(is_mod);
            }
            "}" => inline -= usize::from(depth_stack.pop() == Some(true)),
            "use" => {
                let end = (i..tokens.len())
                    .find(|&j| tokens[j] == ";")
                    .unwrap_or(tokens.len());
                let mut paths = Vec::new();
                expand(&tokens[i + 1..end], Vec::new(), &mut paths);
                out.extend(
                    paths
                        .into_iter()
                        .filter(|p| {
                            matches!(
                                p.first().map(String::as_str),
                                Some("crate" | "super" | "self")
                            )
                        })
                        .map(|p| (inline, p)),
                );
                i = end;
            }
            "crate" | "super" | "self" if tokens.get(i + 1).is_some_and(|n| n == "::") => {
                let mut path = vec![t.to_string()];
                let mut j = i + 1;
                while tokens.get(j).is_some_and(|n| n == "::")
                    && tokens.get(j + 1).is_some_and(|n| is_ident(n))
                {
                    path.push(tokens[j + 1].clone());
                    j += 2;
                }
                out.push((inline, path));
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

fn is_ident(t: &str) -> bool {
    t.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

fn tokenize(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_alphanumeric() || c == '_' {
            let mut word = String::new();
            while let Some(&c) = chars.peek() {
                if c.is_alphanumeric() || c == '_' {
                    word.push(c);
                    chars.next();
                } else {
                    break;
                }
            }
            tokens.push(word);
        } else if c == ':' {
            chars.next();
            if chars.peek() == Some(&':') {
                chars.next();
                tokens.push("::".into());
            } else {
                tokens.push(":".into());
            }
        } else if c.is_whitespace() {
            chars.next();
        } else {
            tokens.push(c.to_string());
            chars.next();
        }
    }
    tokens
}

/// Expands a `use` tree (`a::{b, c::d}`) into its paths.
fn expand(tokens: &[String], prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    let mut i = 0;
    while i < tokens.len() {
        match tokens[i].as_str() {
            "::" => {}
            "{" => {
                // Split the group at top-level commas.
                let mut level = 0;
                let mut start = i + 1;
                for j in i + 1..tokens.len() {
                    match tokens[j].as_str() {
                        "{" => level += 1,
                        "}" if level == 0 => {
                            expand(&tokens[start..j], path.clone(), out);
                            return;
                        }
                        "}" => level -= 1,
                        "," if level == 0 => {
                            expand(&tokens[start..j], path.clone(), out);
                            start = j + 1;
                        }
                        _ => {}
                    }
                }
                return;
            }
            "as" | "*" => break,
            t if is_ident(t) => path.push(t.to_string()),
            _ => {}
        }
        i += 1;
    }
    if !path.is_empty() {
        out.push(path);
    }
}

/// The absolute module path that `raw` names from module `from`, inside `depth`
/// inline modules of its file.
fn resolve(from: &[String], depth: usize, raw: &[String]) -> Option<Vec<String>> {
    let mut here: Vec<String> = from.to_vec();
    // An inline module's `super` is the file's own module.
    let mut inline = depth;
    let mut rest = raw;
    match rest.first()?.as_str() {
        "crate" => {
            here.clear();
            rest = &rest[1..];
        }
        "self" => {
            rest = &rest[1..];
        }
        "super" => {
            while rest.first().is_some_and(|s| s == "super") {
                if inline > 0 {
                    inline -= 1;
                } else {
                    here.pop()?;
                }
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    here.extend(rest.iter().cloned());
    Some(here)
}

/// A circle in `graph`, as its nodes with the first repeated at the end.
fn cycle_in(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(node.to_string(), 1);
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            match state.get(next.as_str()).copied().unwrap_or(0) {
                1 => {
                    let start = stack.iter().position(|n| n == next).unwrap();
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(next, graph, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(node.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if state.get(node.as_str()).copied().unwrap_or(0) == 0 {
            let mut stack = Vec::new();
            if let Some(c) = visit(node, graph, &mut state, &mut stack) {
                return Some(c);
            }
        }
    }
    None
}
