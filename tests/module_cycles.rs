//! No import circle among the engine's modules: not between the top-level modules
//! of `src`, nor between the sibling modules of any directory. The parser is the
//! server crate's (`server/tests/support/module_graph.rs`), which tests itself.

#[path = "../server/tests/support/module_graph.rs"]
mod module_graph;

use std::path::Path;

#[test]
fn the_engine_has_no_import_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    if let Some(cycle) = module_graph::find_cycle(&src, &[]) {
        panic!("an import circle in src: {cycle}");
    }
}
