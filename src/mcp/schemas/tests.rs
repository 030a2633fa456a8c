//! The output schemas: object-rooted, shapes shared through `$defs`, no type lists,
//! no shape that refers to itself.

use super::*;
use crate::OPERATIONS;

/// Every `$ref` in `value`.
fn refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(r) = map.get("$ref").and_then(Value::as_str) {
                out.push(r.to_string());
            }
            map.values().for_each(|v| refs(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

#[test]
fn every_operation_has_an_object_rooted_schema() {
    for op in OPERATIONS {
        let s = output(op);
        assert_eq!(s["type"], "object", "{op}");
        let required = s["anyOf"][0]["required"].as_array().unwrap();
        assert!(!required.is_empty(), "{op}");
        for key in required {
            assert!(
                s["properties"].get(key.as_str().unwrap()).is_some(),
                "{op}: {key}"
            );
        }
        assert_eq!(s["anyOf"][1], json!({ "required": ["error"] }), "{op}");
        assert!(s["properties"]["error"].is_object());
        assert!(s.get("$schema").is_none(), "{op}");
    }
    let node = &output("get_thread")["properties"]["messages"]["items"];
    assert_eq!(node["properties"]["replies"]["items"]["type"], "object");
}

/// Some MCP clients expand every `$ref` in place (smolagents through mcpadapt
/// for structured output) and cannot end if a shape refers to itself.
#[test]
fn no_output_schema_is_recursive() {
    for op in OPERATIONS {
        let s = output(op);
        let defs = s.get("$defs").and_then(Value::as_object);
        for (name, body) in defs.into_iter().flatten() {
            let mut inner = Vec::new();
            refs(body, &mut inner);
            assert!(
                !inner.contains(&format!("#/$defs/{name}")),
                "{op}: {name} refers to itself"
            );
        }
    }
}

#[test]
fn shared_shapes_are_written_once_and_single_ones_in_place() {
    for op in OPERATIONS {
        let s = output(op);
        let mut found = Vec::new();
        refs(&s, &mut found);
        let defs = s.get("$defs").and_then(Value::as_object);
        for r in &found {
            let name = r.strip_prefix("#/$defs/").expect("a local $ref");
            assert!(defs.is_some_and(|d| d.contains_key(name)), "{op}: {r}");
        }
        // A definition is referenced more than once, or it would be in place.
        for name in defs.into_iter().flat_map(|d| d.keys()) {
            let n = found
                .iter()
                .filter(|r| r.as_str() == format!("#/$defs/{name}"))
                .count();
            assert!(n > 1, "{op}: {name} referenced {n} times");
        }
    }
    let post = output("post");
    assert_eq!(post["properties"]["event"]["$ref"], "#/$defs/event");
    assert_eq!(
        post["properties"]["events"]["items"]["$ref"],
        "#/$defs/event"
    );
    assert_eq!(post["properties"]["thread"]["type"], "object");
    let inbox = output("get_inbox");
    assert!(inbox.get("$defs").is_none());
    let item = &inbox["properties"]["items"]["items"]["properties"];
    assert_eq!(item["message"]["properties"]["from"]["type"], "object");
}

#[test]
fn no_schema_declares_a_list_of_types() {
    fn walk(op: &str, value: &Value) {
        match value {
            Value::Object(map) => {
                assert!(
                    !map.get("type").is_some_and(Value::is_array),
                    "{op}: {value}"
                );
                map.values().for_each(|v| walk(op, v));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(op, v)),
            _ => {}
        }
    }
    for op in OPERATIONS {
        walk(op, &output(op));
    }
}
