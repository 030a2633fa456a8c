//! No import circle among the server crate's modules: not between the top-level
//! modules of `server/src`, nor between the sibling modules of any directory.

#[path = "support/module_graph.rs"]
mod module_graph;

use std::path::Path;

#[test]
fn the_server_crate_has_no_import_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    if let Some(cycle) = module_graph::find_cycle(&src, &[]) {
        panic!("an import circle in server/src: {cycle}");
    }
}

#[test]
fn a_circle_is_found_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\n").unwrap();
    std::fs::write(
        src.join("a/mod.rs"),
        "mod x;\nmod y;\nuse crate::b::Thing;\n",
    )
    .unwrap();
    std::fs::write(src.join("a/x.rs"), "use super::y::Y; // crate::c\n").unwrap();
    std::fs::write(src.join("a/y.rs"), "pub struct Y;\n").unwrap();
    std::fs::write(src.join("b.rs"), "pub struct Thing;\n").unwrap();
    assert_eq!(module_graph::find_cycle(src, &[]), None);
    std::fs::write(src.join("a/y.rs"), "pub fn f() { super::x::g() }\n").unwrap();
    assert_eq!(
        module_graph::find_cycle(src, &[]).as_deref(),
        Some("a: x → y → x")
    );
    std::fs::write(src.join("b.rs"), "use crate::{c, a::{x::X, z}};\n").unwrap();
    assert_eq!(
        module_graph::find_cycle(src, &[]).as_deref(),
        Some("crate: a → b → a")
    );
    assert_eq!(module_graph::find_cycle(src, &["a/", "b.rs"]), None);
}
