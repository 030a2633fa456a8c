//! The tool schemas, checked by an independent validator (the `jsonschema` crate):
//! every input and output schema is valid JSON Schema 2020-12, and every structured
//! result of the conformance transcripts, run through `Forum::mcp`, fits its tool's
//! output schema, both as served and closed (every object schema's
//! `additionalProperties` set to `false`), so that a key the engine returns and the
//! schema does not describe fails.

#[path = "conformance/harness.rs"]
mod harness;

use std::collections::HashMap;

use harness::{run_transcript, transcript_paths};
use jsonschema::Validator;
use parley_forum::{Config, Forum};
use serde_json::{json, Value};

fn tools_of(forum: &Forum) -> Vec<Value> {
    let request = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" });
    let response: Value =
        serde_json::from_str(&forum.mcp(None, &request.to_string()).expect("a response"))
            .expect("JSON");
    response["result"]["tools"]
        .as_array()
        .expect("a tool list")
        .clone()
}

/// `schema` with `additionalProperties: false` on every object schema that lists
/// `properties`: what the engine may return beyond them is then an error.
fn closed(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => {
            let mut out: serde_json::Map<String, Value> = map
                .iter()
                .map(|(k, v)| {
                    // The keys of `properties` and `$defs` are names, not keywords.
                    let v = if k == "properties" || k == "$defs" {
                        Value::Object(
                            v.as_object()
                                .into_iter()
                                .flatten()
                                .map(|(name, sub)| (name.clone(), closed(sub)))
                                .collect(),
                        )
                    } else {
                        closed(v)
                    };
                    (k.clone(), v)
                })
                .collect();
            if map.contains_key("properties") {
                out.insert("additionalProperties".into(), Value::Bool(false));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(closed).collect()),
        other => other.clone(),
    }
}

fn compile(schema: &Value) -> Validator {
    jsonschema::draft202012::new(schema)
        .unwrap_or_else(|e| panic!("schema does not compile: {e}\n{schema}"))
}

fn errors(validator: &Validator, value: &Value) -> Vec<String> {
    validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// The forums whose tool lists differ: every profile on, every profile off, each
/// serving the exact output schemas and the compact ones (the default).
fn forums() -> Vec<Forum> {
    [
        json!({ "mcp_output_schemas": "exact" }),
        json!({ "profiles": [], "mcp_output_schemas": "exact" }),
        json!({}),
        json!({ "profiles": [] }),
    ]
    .into_iter()
    .map(|s| Forum::in_memory(Config::from_json(&s).unwrap()).unwrap())
    .collect()
}

#[test]
fn every_schema_is_valid_json_schema_2020_12() {
    for forum in forums() {
        for tool in tools_of(&forum) {
            for key in ["inputSchema", "outputSchema"] {
                let schema = &tool[key];
                if let Err(e) = jsonschema::draft202012::meta::validate(schema) {
                    panic!("{} {key}: {e}\n{schema}", tool["name"]);
                }
                compile(schema);
                compile(&closed(schema));
            }
        }
    }
}

/// Each tool's validators: the exact schema as served and closed, and the compact
/// schema as served. Output schemas do not depend on the forum's profiles, so the
/// forums with every profile on give them all.
fn validators() -> HashMap<String, (Validator, Validator, Validator)> {
    let forums = forums();
    let compact: HashMap<String, Value> = tools_of(&forums[2])
        .into_iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap_or_default().to_string(),
                t["outputSchema"].clone(),
            )
        })
        .collect();
    tools_of(&forums[0])
        .into_iter()
        .map(|t| {
            let schema = &t["outputSchema"];
            let name = t["name"].as_str().unwrap_or_default().to_string();
            let small = compile(&compact[&name]);
            (name, (compile(schema), compile(&closed(schema)), small))
        })
        .collect()
}

#[test]
fn every_transcript_result_fits_its_output_schema_exactly() {
    let schemas = validators();
    let mut problems = Vec::new();
    let (mut successes, mut refusals) = (0, 0);
    for path in transcript_paths() {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("?");
        let mut id = 0;
        let mismatches = run_transcript(&path, &mut |forum: &Forum, token, op, args| {
            id += 1;
            let request = json!({
                "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": { "name": op, "arguments": args },
            });
            let response: Value = forum
                .mcp(token, &request.to_string())
                .and_then(|r| serde_json::from_str(&r).ok())
                .unwrap_or(Value::Null);
            let result = &response["result"];
            let Some(structured) = result.get("structuredContent") else {
                // An operation of a profile that is off is an unknown tool over MCP
                // (-32602) and `invalid_argument` to the generic call (SPEC §16).
                if !forum.offers(op) && response["error"]["code"] == -32602 {
                    return Err(json!({ "reason": "invalid_argument", "status": 400 }));
                }
                // A JSON-RPC error (an unknown tool, say): no result to check.
                return Err(json!({ "reason": null, "status": null, "jsonrpc": response }));
            };
            match schemas.get(op) {
                Some((served, exact, compact)) => {
                    for e in errors(served, structured) {
                        problems.push(format!("{name}: {op} {args}: {e}"));
                    }
                    for e in errors(exact, structured) {
                        problems.push(format!("{name}: {op} {args}: not described: {e}"));
                    }
                    for e in errors(compact, structured) {
                        problems.push(format!("{name}: {op} {args}: compact: {e}"));
                    }
                }
                None => problems.push(format!("{name}: {op}: no such tool")),
            }
            if result["isError"] == true {
                refusals += 1;
                Err(structured["error"].clone())
            } else {
                successes += 1;
                Ok(structured.clone())
            }
        });
        for m in mismatches {
            problems.push(format!("{name}: {m}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        successes > 100 && refusals > 50,
        "{successes} successes, {refusals} refusals"
    );
}

#[test]
fn the_schemas_refuse_what_the_engine_never_returns() {
    let schemas = validators();
    let (served, exact, compact) = &schemas["get_inbox"];
    let author = json!({ "identity": "ainotes:bob", "extension": null });
    let thread = json!({
        "id": "th_1", "topic": "t", "creator": author, "state": "open", "state_origin": "llm",
        "state_confirmed_at": null, "state_label": null, "locked": false,
        "awaiting": { "identity": "*", "extension": null, "message": "msg_1" },
        "message_count": 1, "created_at": "x", "updated_at": "x",
    });
    let message = json!({
        "id": "msg_1", "parley": "1", "kind": "ask", "thread": "th_1", "parent": null,
        "from": author, "author_kind": "llm", "body": "b", "created_at": "x",
    });
    let page = |thread: &Value, message: &Value| json!({ "items": [ { "thread": thread, "message": message } ], "cursor": "c", "more": false });
    let good = page(&thread, &message);
    assert!(
        errors(served, &good).is_empty(),
        "{:?}",
        errors(served, &good)
    );
    assert!(errors(exact, &good).is_empty());

    let mut unknown_key = message.clone();
    unknown_key["mood"] = json!("calm");
    assert!(errors(served, &page(&thread, &unknown_key)).is_empty());
    assert!(!errors(exact, &page(&thread, &unknown_key)).is_empty());

    let mut missing = thread.clone();
    missing.as_object_mut().unwrap().remove("awaiting");
    assert!(!errors(served, &page(&missing, &message)).is_empty());

    let mut numeric = message.clone();
    numeric["parent"] = json!(7);
    assert!(!errors(served, &page(&thread, &numeric)).is_empty());

    let mut bad_null = message;
    bad_null["body"] = Value::Null;
    assert!(!errors(served, &page(&thread, &bad_null)).is_empty());

    let refusal = json!({ "error": { "reason": "token_missing", "status": 401, "message": "m" } });
    assert!(errors(served, &refusal).is_empty());
    assert!(!errors(served, &json!({ "error": { "reason": "token_missing" } })).is_empty());
    assert!(!errors(served, &json!({ "items": [] })).is_empty());

    // The compact schema: the top level of a success, or a refusal.
    assert!(errors(compact, &good).is_empty());
    assert!(errors(compact, &refusal).is_empty());
    assert!(!errors(compact, &json!({ "items": [] })).is_empty());
    assert!(!errors(
        compact,
        &json!({ "items": {}, "cursor": "c", "more": false })
    )
    .is_empty());
    assert!(!errors(compact, &json!([])).is_empty());
}

/// The three choices of `mcp_output_schemas`, as `tools/list` serves them: the
/// compact schema is small, flat and says the top level of every tool, a new one
/// included; `none` leaves `outputSchema` out.
#[test]
fn the_served_output_schemas_follow_the_setting() {
    let forum = |mode: &str| {
        Forum::in_memory(Config::from_json(&json!({ "mcp_output_schemas": mode })).unwrap())
            .unwrap()
    };
    let exact = tools_of(&forum("exact"));
    let compact = tools_of(&forum("compact"));
    let none = tools_of(&forum("none"));
    assert_eq!(exact.len(), compact.len());
    assert_eq!(exact.len(), none.len());
    for ((e, c), n) in exact.iter().zip(&compact).zip(&none) {
        let name = &e["name"];
        assert!(n.get("outputSchema").is_none(), "{name}");
        assert_eq!(n["inputSchema"], e["inputSchema"], "{name}");
        let (e, c) = (&e["outputSchema"], &c["outputSchema"]);
        assert_eq!(c["type"], "object", "{name}");
        assert!(
            c.get("$defs").is_none() && c.get("anyOf").is_none(),
            "{name}"
        );
        assert!(c["description"].as_str().unwrap().len() < 1024, "{name}");
        let required: Vec<&str> = e["anyOf"][0]["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap())
            .collect();
        // Every typed key is required in a success and flat: `{"type": ...}` alone.
        for (key, sub) in c["properties"].as_object().unwrap() {
            assert!(required.contains(&key.as_str()), "{name}: {key}");
            assert_eq!(sub.as_object().unwrap().len(), 1, "{name}: {key}");
            assert!(sub["type"].is_string(), "{name}: {key}");
        }
        if required.len() > 1 {
            assert_eq!(
                c["dependentRequired"][required[0]],
                json!(required[1..]),
                "{name}"
            );
        }
        assert!(
            serde_json::to_string(c).unwrap().len() * 3 < serde_json::to_string(e).unwrap().len(),
            "{name}"
        );
    }
    let post = compact.iter().find(|t| t["name"] == "post").unwrap();
    assert_eq!(
        post["outputSchema"]["properties"],
        json!({ "message": { "type": "object" }, "thread": { "type": "object" } })
    );
}
