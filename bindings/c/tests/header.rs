//! `include/parley.h` is generated; this test regenerates it and fails on drift.
//! Run with `PARLEY_BLESS=1` to rewrite the committed header instead.

use std::path::PathBuf;

#[test]
fn header_matches_the_sources() {
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let header = crate_dir.join("../../include/parley.h");
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("cbindgen.toml is readable");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header")
        .write(&mut generated);

    if std::env::var_os("PARLEY_BLESS").is_some() {
        std::fs::write(&header, &generated).expect("include/parley.h is writable");
        return;
    }
    let committed = std::fs::read(&header).unwrap_or_default();
    if committed != generated {
        panic!(
            "include/parley.h is out of date; regenerate it with \
             `PARLEY_BLESS=1 cargo test -p parley-c --test header`.\n--- generated ---\n{}",
            String::from_utf8_lossy(&generated)
        );
    }
}
