//! The JSON-RPC decoder's targets.

use super::envelopes::{check_refusal_json, near_envelope};
use super::*;

// --- JSON-RPC frames ------------------------------------------------------------

/// The JSON-RPC error codes the handler may answer with.
const RPC_CODES: [i64; 5] = [-32700, -32600, -32601, -32602, -32022];

/// What JSON-RPC 2.0 (as MCP uses it) says a message gets.
#[derive(Debug, PartialEq)]
enum Due {
    /// No response: a notification, or a response sent to us.
    Nothing,
    /// An error with this code, under this id, before any method runs.
    Error(i64, Value),
    /// A response under this id: a result, or an error of the method.
    Answer(Value),
}

fn valid_id(id: &Value) -> bool {
    id.is_string() || id.is_i64() || id.is_u64()
}

/// The answer the JSON-RPC rules give for `text` of at most the size limit.
fn due(text: &str) -> Due {
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return Due::Error(-32700, Value::Null);
    };
    let Value::Object(obj) = value else {
        return Due::Error(-32600, Value::Null);
    };
    if is_response(&obj) {
        return Due::Nothing;
    }
    let id = match obj.get("id") {
        None => None,
        Some(id) if valid_id(id) => Some(id.clone()),
        Some(_) => return Due::Error(-32600, Value::Null),
    };
    let echo = id.clone().unwrap_or(Value::Null);
    if obj.get("jsonrpc") != Some(&json!("2.0")) || !obj.get("method").is_some_and(Value::is_string)
    {
        return Due::Error(-32600, echo);
    }
    let Some(id) = id else {
        return Due::Nothing;
    };
    match obj.get("params") {
        None | Some(Value::Null) | Some(Value::Object(_)) => Due::Answer(id),
        Some(_) => Due::Error(-32602, id),
    }
}

/// What a message over the size limit gets: it is not decoded, but its id is
/// echoed when it has a valid one, and a notification or a response still gets
/// nothing.
fn due_oversized(text: &str) -> Due {
    let value = serde_json::from_str::<Value>(text).ok();
    let obj = value.as_ref().and_then(Value::as_object);
    let id = obj.and_then(|o| o.get("id"));
    match (obj, id) {
        (Some(o), _) if is_response(o) => Due::Nothing,
        (Some(o), None) if o.get("method").is_some_and(|m| !m.is_null()) => Due::Nothing,
        (_, Some(id)) if valid_id(id) => Due::Error(-32600, id.clone()),
        _ => Due::Error(-32600, Value::Null),
    }
}

/// A JSON-RPC response (to a request the server never sent): nothing answers it.
fn is_response(obj: &Map<String, Value>) -> bool {
    !obj.contains_key("method") && (obj.contains_key("result") || obj.contains_key("error"))
}

/// Sends one frame and checks the answer against the rules, and that it wrote
/// exactly when it was an accepted `post`.
fn send_one(world: &World, token: Option<&str>, text: &str) -> Result<(), TestCaseError> {
    let limit = world.forum.config().limits.request_max_bytes;
    let due = if text.len() > limit {
        due_oversized(text)
    } else {
        due(text)
    };
    let before = world.written();
    let response = world.forum.mcp(token, text);
    let after = world.written();
    let Some(response) = response else {
        prop_assert_eq!(due, Due::Nothing, "no answer to {:?}", text);
        prop_assert_eq!(after, before, "a message without an answer wrote");
        return Ok(());
    };
    let r: Value = serde_json::from_str(&response)
        .map_err(|e| TestCaseError::fail(format!("not JSON ({e}): {response}")))?;
    prop_assert_eq!(&r["jsonrpc"], "2.0", "{}", response);
    prop_assert!(
        r.get("result").is_some() != r.get("error").is_some(),
        "exactly one of result and error: {}",
        response
    );
    let keys: Vec<&String> = r.as_object().unwrap().keys().collect();
    prop_assert_eq!(keys.len(), 3, "jsonrpc, id and one more: {}", response);
    if let Some(error) = r.get("error") {
        let code = error["code"].as_i64().unwrap_or_default();
        prop_assert!(RPC_CODES.contains(&code), "code {} in {}", code, response);
        prop_assert!(
            error["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{}",
            response
        );
        if text.len() > limit {
            prop_assert_eq!(&error["data"]["reason"], "payload_too_large");
        }
    }
    let mut wrote = false;
    match &due {
        Due::Nothing => prop_assert!(false, "answered {:?} with {}", text, response),
        Due::Error(code, id) => {
            prop_assert_eq!(&r["id"], id, "{}", response);
            prop_assert_eq!(&r["error"]["code"], code, "{:?} got {}", text, response);
        }
        Due::Answer(id) => {
            prop_assert_eq!(&r["id"], id, "{}", response);
            if let Some(result) = r.get("result") {
                prop_assert!(result.is_object(), "{}", response);
                if let Some(is_error) = result.get("isError") {
                    prop_assert!(is_error.is_boolean(), "{}", response);
                    prop_assert_eq!(&result["content"][0]["type"], "text", "{}", response);
                    if is_error == true {
                        check_refusal_json(&result["structuredContent"]["error"])?;
                    } else {
                        let sent: Value = serde_json::from_str(text).unwrap();
                        wrote = sent["method"] == "tools/call" && sent["params"]["name"] == "post";
                    }
                }
            }
        }
    }
    if wrote {
        prop_assert_eq!(after.0, before.0 + 1, "one message written by {}", text);
    } else {
        prop_assert_eq!(after, before, "{} wrote: {}", text, response);
    }
    Ok(())
}

/// The `_meta` of a request, or none.
fn meta() -> BoxedStrategy<Option<Value>> {
    prop_oneof![
        3 => Just(Some(json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }))),
        3 => Just(None),
        1 => Just(Some(json!({ "io.modelcontextprotocol/protocolVersion": "2025-11-25" }))),
        1 => Just(Some(json!({ "io.modelcontextprotocol/protocolVersion": "2024-01-01" }))),
        1 => Just(Some(json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28" }))),
        1 => json_value().prop_map(Some),
    ]
    .boxed()
}

/// A frame one step from valid, in either revision.
fn near_frame() -> BoxedStrategy<Value> {
    let id = prop_oneof![
        4 => any::<i64>().prop_map(Value::from),
        2 => "[a-z0-9-]{0,8}".prop_map(Value::from),
        1 => Just(json!(u64::MAX)),
        1 => json_value(),
    ];
    let call = (
        prop_oneof![8 => Just("post".to_string()), 3 => select(OPERATIONS.to_vec()).prop_map(String::from), 1 => ".{0,8}"],
        prop_oneof![6 => near_envelope(), 1 => json_value()],
    )
        .prop_map(|(name, arguments)| json!({ "name": name, "arguments": arguments }));
    let params = prop_oneof![
        8 => call,
        1 => Just(json!({ "protocolVersion": "2025-11-25", "capabilities": {} })),
        1 => Just(json!({})),
        1 => json_value(),
    ];
    (
        prop::option::weighted(0.85, id),
        prop_oneof![
            10 => Just(json!("tools/call")),
            4 => select(vec!["tools/list", "initialize", "ping", "server/discover",
                             "notifications/initialized", "resources/list"]).prop_map(Value::from),
            1 => json_value(),
        ],
        prop::option::weighted(0.9, params),
        meta(),
        prop_oneof![12 => Just(Some(json!("2.0"))), 1 => Just(None), 1 => json_value().prop_map(Some)],
        prop::option::weighted(0.05, (key(), json_value())),
        prop_oneof![
            12 => Just(None),
            1 => Just(Some(("result", json!({})))),
            1 => Just(Some(("error", json!({ "code": -32601, "message": "no" })))),
        ],
    )
        .prop_map(|(id, method, params, meta, version, extra, answer)| {
            let mut frame = Map::new();
            if let Some(version) = version {
                frame.insert("jsonrpc".into(), version);
            }
            if let Some(id) = id {
                frame.insert("id".into(), id);
            }
            frame.insert("method".into(), method);
            if let Some(mut params) = params {
                if let (Some(meta), Some(p)) = (meta, params.as_object_mut()) {
                    p.insert("_meta".into(), meta);
                }
                frame.insert("params".into(), params);
            }
            if let Some((key, value)) = extra {
                frame.insert(key, value);
            }
            // A response sent to the server, as a confused client might.
            if let Some((key, value)) = answer {
                frame.remove("method");
                frame.remove("params");
                frame.insert(key.into(), value);
            }
            Value::Object(frame)
        })
        .boxed()
}

/// How a frame's text is damaged on the way, if at all.
#[derive(Debug, Clone)]
enum Damage {
    None,
    /// Cut after this many characters.
    Truncate(Index),
    /// One byte replaced (invalid UTF-8 then read as a transport would, lossily).
    Byte(Index, u8),
    /// Text after the frame.
    Trailing(String),
    /// Whitespace around it, past the size limit when the limit is small.
    Padded(usize),
}

fn damage() -> BoxedStrategy<Damage> {
    prop_oneof![
        6 => Just(Damage::None),
        2 => any::<Index>().prop_map(Damage::Truncate),
        1 => (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Damage::Byte(i, b)),
        1 => select(vec![" ", "\n", "}", "x", "{}", ",", "\u{0}"]).prop_map(|s| Damage::Trailing(s.to_string())),
        1 => (0..3000usize).prop_map(Damage::Padded),
    ]
    .boxed()
}

fn damaged(text: String, damage: &Damage) -> String {
    match damage {
        Damage::None => text,
        Damage::Truncate(at) => text
            .chars()
            .take(at.index(text.chars().count() + 1))
            .collect(),
        Damage::Byte(at, byte) => {
            let mut bytes = text.into_bytes();
            let i = at.index(bytes.len().max(1));
            if let Some(b) = bytes.get_mut(i) {
                *b = *byte;
            }
            String::from_utf8_lossy(&bytes).into_owned()
        }
        Damage::Trailing(tail) => text + tail,
        Damage::Padded(n) => format!("{}{text}{}", " ".repeat(*n / 2), "\n".repeat(*n - *n / 2)),
    }
}

#[test]
fn jsonrpc_decoder_answers_any_bytes() {
    fuzz(
        "jsonrpc_decoder_answers_any_bytes",
        128,
        || {
            (
                any::<bool>(),
                vec(
                    (
                        0..5usize,
                        prop_oneof![
                            vec(any::<u8>(), 0..200)
                                .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
                            ".{0,200}",
                            json_value().prop_map(|v| v.to_string()),
                        ],
                    ),
                    1..16,
                ),
            )
        },
        |(dialectic, frames)| {
            let world = World::new(dialectic, 65536);
            for (who, text) in &frames {
                send_one(&world, world.token(*who), text)?;
            }
            Ok(())
        },
    );
}

#[test]
fn jsonrpc_decoder_answers_near_valid_and_damaged_frames() {
    fuzz(
        "jsonrpc_decoder_answers_near_valid_and_damaged_frames",
        128,
        || {
            (
                any::<bool>(),
                prop_oneof![3 => Just(65536usize), 1 => 256..2048usize],
                huge_limit(),
                vec((0..5usize, near_frame(), damage()), 1..12),
            )
        },
        |(dialectic, limit, extreme, frames)| {
            let world = World::with_limit(dialectic, limit, extreme);
            for (who, frame, damage) in &frames {
                let text = damaged(frame.to_string(), damage);
                send_one(&world, world.token(*who), &text)?;
            }
            Ok(())
        },
    );
}

/// A JSON-RPC response is answered with nothing, under the size limit and over it
/// (the fuzzer found the second answered with a `payload_too_large` error).
#[test]
fn an_oversized_response_gets_no_answer() {
    let world = World::new(false, 64);
    let response = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
    assert_eq!(world.forum.mcp(None, response), None, "under the limit");
    let padded = format!("{response}{}", " ".repeat(100));
    assert_eq!(world.forum.mcp(None, &padded), None, "over the limit");
}
