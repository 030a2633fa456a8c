//! Helpers shared by the MCP tests: request builders for both MCP revisions, and a
//! validator for the subset of JSON Schema 2020-12 the tool schemas use, so every
//! structured result can be checked against its tool's `outputSchema`.

#![allow(dead_code)]

pub mod calls;

use parley_forum::Forum;
use serde_json::{json, Map, Value};

/// The `_meta` of a 2026-07-28 request.
pub fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "parley-tests", "version": "0" },
    })
}

/// Which revision a test speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2026-07-28, with `_meta` on every request.
    Modern,
    /// 2025-11-25, no `_meta`.
    Legacy,
}

/// A request of `era` with this id, method and params.
pub fn request(era: Era, id: Value, method: &str, params: Value) -> Value {
    let mut params = match params {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    if era == Era::Modern {
        params.insert("_meta".into(), modern_meta());
    }
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

/// Sends one message and parses the response, which must exist and be JSON-RPC 2.0.
pub fn send(forum: &Forum, token: Option<&str>, message: &Value) -> Value {
    send_text(forum, token, &message.to_string())
}

/// Sends raw text and parses the response, which must exist and be JSON-RPC 2.0.
pub fn send_text(forum: &Forum, token: Option<&str>, text: &str) -> Value {
    let response = forum
        .mcp(token, text)
        .unwrap_or_else(|| panic!("no response to {text}"));
    let value: Value = serde_json::from_str(&response)
        .unwrap_or_else(|e| panic!("response is not JSON ({e}): {response}"));
    assert_eq!(value["jsonrpc"], "2.0", "{response}");
    assert!(
        value.get("result").is_some() != value.get("error").is_some(),
        "exactly one of result and error: {response}"
    );
    value
}

/// The tool list, by `tools/list` in `era`.
pub fn tools(forum: &Forum, era: Era) -> Vec<Value> {
    let r = send(
        forum,
        None,
        &request(era, json!("tools"), "tools/list", json!({})),
    );
    r["result"]["tools"]
        .as_array()
        .expect("a tool list")
        .clone()
}

/// The output schema of the tool `name`.
pub fn output_schema(forum: &Forum, name: &str) -> Value {
    tools(forum, Era::Legacy)
        .into_iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no tool {name}"))["outputSchema"]
        .clone()
}

/// Checks `value` against `schema` and returns every violation, each with its path.
pub fn validate(schema: &Value, value: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    check(schema, schema, value, "$", &mut problems);
    problems
}

fn type_matches(name: &str, value: &Value) -> bool {
    match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        _ => false,
    }
}

fn check(root: &Value, schema: &Value, value: &Value, path: &str, problems: &mut Vec<String>) {
    let Some(schema) = schema.as_object() else {
        if schema != &Value::Bool(true) {
            problems.push(format!("{path}: schema is not an object"));
        }
        return;
    };
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let target = reference
            .strip_prefix("#/$defs/")
            .and_then(|name| root["$defs"].get(name));
        match target {
            Some(target) => check(root, target, value, path, problems),
            None => problems.push(format!("{path}: unresolved $ref {reference}")),
        }
    }
    if let Some(t) = schema.get("type") {
        let ok = match t {
            Value::String(name) => type_matches(name, value),
            Value::Array(names) => names
                .iter()
                .filter_map(Value::as_str)
                .any(|n| type_matches(n, value)),
            _ => false,
        };
        if !ok {
            problems.push(format!("{path}: {value} is not of type {t}"));
            return;
        }
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        if !options.contains(value) {
            problems.push(format!(
                "{path}: {value} not in {}",
                Value::Array(options.clone())
            ));
        }
    }
    if let Some(constant) = schema.get("const") {
        if constant != value {
            problems.push(format!("{path}: {value} is not {constant}"));
        }
    }
    if let Some(s) = value.as_str() {
        let n = s.chars().count() as u64;
        if schema
            .get("minLength")
            .and_then(Value::as_u64)
            .is_some_and(|m| n < m)
        {
            problems.push(format!("{path}: string too short"));
        }
        if schema
            .get("maxLength")
            .and_then(Value::as_u64)
            .is_some_and(|m| n > m)
        {
            problems.push(format!("{path}: string too long"));
        }
    }
    if let Some(x) = value.as_f64() {
        if schema
            .get("minimum")
            .and_then(Value::as_f64)
            .is_some_and(|m| x < m)
        {
            problems.push(format!("{path}: {x} below minimum"));
        }
        if schema
            .get("maximum")
            .and_then(Value::as_f64)
            .is_some_and(|m| x > m)
        {
            problems.push(format!("{path}: {x} above maximum"));
        }
    }
    if let Some(items) = value.as_array() {
        if schema
            .get("maxItems")
            .and_then(Value::as_u64)
            .is_some_and(|m| items.len() as u64 > m)
        {
            problems.push(format!("{path}: too many items"));
        }
        if let Some(item_schema) = schema.get("items") {
            for (i, item) in items.iter().enumerate() {
                check(root, item_schema, item, &format!("{path}[{i}]"), problems);
            }
        }
    }
    if let Some(obj) = value.as_object() {
        let properties = schema.get("properties").and_then(Value::as_object);
        for key in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(key) = key.as_str() {
                if !obj.contains_key(key) {
                    problems.push(format!("{path}: missing required {key}"));
                }
            }
        }
        for (key, item) in obj {
            match properties.and_then(|p| p.get(key)) {
                Some(sub) => check(root, sub, item, &format!("{path}.{key}"), problems),
                None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    problems.push(format!("{path}: unexpected property {key}"));
                }
                None => {}
            }
        }
    }
    if let Some(branches) = schema.get("anyOf").and_then(Value::as_array) {
        let any = branches.iter().any(|b| {
            let mut sub = Vec::new();
            check(root, b, value, path, &mut sub);
            sub.is_empty()
        });
        if !any {
            problems.push(format!("{path}: matches no branch of anyOf"));
        }
    }
}

#[test]
fn the_validator_catches_what_it_checks() {
    let schema = json!({
        "type": "object",
        "properties": {
            "a": { "type": "string", "maxLength": 2 },
            "n": { "$ref": "#/$defs/node" },
            "e": { "type": "string", "enum": ["x"] },
        },
        "anyOf": [ { "required": ["a"] }, { "required": ["e"] } ],
        "$defs": { "node": { "type": "object", "properties": { "k": { "type": "array", "items": { "$ref": "#/$defs/node" } } }, "required": ["k"] } },
    });
    assert!(validate(&schema, &json!({"a": "ok", "n": {"k": [{"k": []}]}})).is_empty());
    assert!(!validate(&schema, &json!({"a": "too long"})).is_empty());
    assert!(!validate(&schema, &json!({"a": "ok", "n": {"k": [{}]}})).is_empty());
    assert!(!validate(&schema, &json!({"n": {"k": []}})).is_empty());
    assert!(!validate(&schema, &json!({"e": "y"})).is_empty());
    assert!(!validate(&schema, &json!([])).is_empty());
}
