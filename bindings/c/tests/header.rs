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

fn committed_header() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../include/parley.h");
    std::fs::read_to_string(path).expect("include/parley.h is readable")
}

/// Every `#define PARLEY_<NAME> <n>` of the header names the code `n` as
/// `parley_result_name` does, and every code has one.
#[test]
fn the_header_constants_are_the_codes() {
    let header = committed_header();
    assert!(header.contains("typedef uint32_t parley_result;"));
    assert!(
        !header.contains("enum parley_result"),
        "parley_result is a fixed-width integer, never a C enum"
    );
    let mut seen = Vec::new();
    for line in header.lines() {
        let Some(rest) = line.strip_prefix("#define PARLEY_") else {
            continue;
        };
        let Some((name, value)) = rest.split_once(' ') else {
            continue; // the include guard
        };
        let value: u32 = value.trim().parse().expect("a code is a decimal number");
        let name = format!("PARLEY_{name}");
        assert_eq!(
            parley::name_of(value).and_then(|n| n.to_str().ok()),
            Some(name.as_str()),
            "{name} = {value}"
        );
        seen.push(value);
    }
    seen.sort_unstable();
    let every_code: Vec<u32> = (0..=u32::from(u16::MAX))
        .filter(|c| parley::is_code(*c))
        .collect();
    assert_eq!(seen, every_code);
}

/// The functions that take a `parley_result` by value, each range-checked and
/// tested with values that are no code (test_api.c's
/// `result_names_of_values_that_are_not_codes`, result.rs's
/// `values_that_are_not_codes_get_the_unknown_name`, entry_points.rs).
const CHECKED_CODE_INPUTS: [(&str, &str); 1] = [("parley_result_name", "r")];

/// The by-value parameters of every prototype in the header's `extern "C"` block
/// that are not pointers, as `(function, type, name)`, and the number of
/// prototypes.
fn scalar_inputs(header: &str) -> (Vec<(String, String, String)>, usize) {
    let start = header
        .find("extern \"C\" {")
        .expect("an extern \"C\" block");
    let end = header.find("}  // extern \"C\"").expect("its end");
    let declarations: String = header[start..end]
        .lines()
        .skip(1) // `extern "C" {`
        .filter(|line| !line.trim_start().starts_with("//") && !line.starts_with('#'))
        .collect::<Vec<_>>()
        .join(" ");
    let mut inputs = Vec::new();
    let mut functions = 0;
    for declaration in declarations.split(';').map(str::trim) {
        if declaration.is_empty() {
            continue;
        }
        let (head, params) = declaration
            .split_once('(')
            .unwrap_or_else(|| panic!("a prototype: {declaration}"));
        let function = head.rsplit([' ', '*']).next().unwrap().to_string();
        functions += 1;
        for param in params.trim_end_matches(')').split(',').map(str::trim) {
            if param == "void" || param.contains('*') {
                continue;
            }
            let (ty, name) = param.rsplit_once(' ').expect("type and name");
            inputs.push((function.clone(), ty.trim().to_string(), name.to_string()));
        }
    }
    (inputs, functions)
}

/// What is wrong with a by-value input, if anything.
fn unchecked(function: &str, ty: &str, name: &str) -> Option<String> {
    match ty {
        "size_t" => None,
        "parley_result" if CHECKED_CODE_INPUTS.contains(&(function, name)) => None,
        "parley_result" => Some(format!(
            "{function} takes a parley_result `{name}`: range-check it, test it with \
             values that are no code, and list it in CHECKED_CODE_INPUTS"
        )),
        other => Some(format!(
            "{function} takes `{other} {name}` by value: an enum-like input must be a \
             fixed-width integer with named constants and be range-checked"
        )),
    }
}

/// The C ABI takes no by-value input whose every bit pattern is not meaningful
/// (a C `enum`, a `bool`, a flag set) except the range-checked codes above: its
/// scalar inputs are sizes and `parley_result`s. A new enum-like input fails here
/// until it is a fixed-width integer, checked, tested and listed.
#[test]
fn every_scalar_input_is_range_checked() {
    let (inputs, functions) = scalar_inputs(&committed_header());
    assert_eq!(functions, 16, "every export was looked at");
    let problems: Vec<String> = inputs
        .iter()
        .filter_map(|(f, ty, name)| unchecked(f, ty, name))
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(inputs.contains(&(
        "parley_result_name".into(),
        "parley_result".into(),
        "r".into()
    )));
}

#[test]
fn the_inventory_sees_enum_like_inputs() {
    let fake = "extern \"C\" {\n#endif\n// a comment (with, commas)\n\
                bool parley_x(bool on,\n              enum parley_kind kind,\n              \
                const char *s, size_t n, parley_result rc);\n}  // extern \"C\"\n";
    let (inputs, functions) = scalar_inputs(fake);
    assert_eq!(functions, 1);
    let flagged: Vec<&str> = inputs
        .iter()
        .filter(|(f, ty, name)| unchecked(f, ty, name).is_some())
        .map(|(_, _, name)| name.as_str())
        .collect();
    assert_eq!(flagged, ["on", "kind", "rc"]);
}
