//! Tool calls through the MCP handler, checked on the way back: a forum with a
//! fixed clock, a `tools/call` request, a result that must fit its tool's
//! `outputSchema`, a refusal as a tool error, a JSON-RPC error.

use parley_forum::{Config, Forum};
use serde_json::{json, Value};

use super::{output_schema, request, send, send_text, validate, Era};

pub fn forum_with(settings: Value) -> Forum {
    let mut settings = settings;
    settings["clock"] = json!("2026-11-30T12:00:00.000Z");
    settings["durable"] = json!(false);
    Forum::in_memory(Config::from_json(&settings).unwrap()).unwrap()
}

pub fn forum() -> Forum {
    forum_with(json!({ "limits": { "writes_per_minute": 0 } }))
}

pub fn call(era: Era, id: i64, name: &str, arguments: Value) -> Value {
    request(
        era,
        json!(id),
        "tools/call",
        json!({ "name": name, "arguments": arguments }),
    )
}

/// Calls a tool that must succeed, checks the result's shape, and returns it.
pub fn ok(forum: &Forum, token: Option<&str>, era: Era, name: &str, arguments: Value) -> Value {
    let r = send(forum, token, &call(era, 11, name, arguments));
    assert_eq!(r["id"], 11);
    let result = &r["result"];
    assert_eq!(result["isError"], false, "{name}: {r}");
    let structured = result["structuredContent"].clone();
    assert_eq!(result["content"][0]["type"], "text");
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        text, structured,
        "{name}: the text content is the result as JSON"
    );
    let problems = validate(&output_schema(forum, name), &structured);
    assert!(
        problems.is_empty(),
        "{name}: result does not fit outputSchema: {problems:?}\n{structured}"
    );
    match era {
        Era::Modern => assert_eq!(result["resultType"], "complete"),
        Era::Legacy => assert!(result.get("resultType").is_none()),
    }
    assert!(
        result.get("ttlMs").is_none(),
        "tool results are not cacheable"
    );
    structured
}

/// Calls a tool that must be refused and returns the refusal object.
pub fn refused(forum: &Forum, token: Option<&str>, name: &str, arguments: Value) -> Value {
    let r = send(forum, token, &call(Era::Modern, 12, name, arguments));
    assert_eq!(r["id"], 12);
    let result = &r["result"];
    assert_eq!(result["isError"], true, "{name}: {r}");
    let error = result["structuredContent"]["error"].clone();
    let text = result["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        text,
        format!(
            "{}: {}",
            error["reason"].as_str().unwrap(),
            error["message"].as_str().unwrap()
        )
    );
    let problems = validate(&output_schema(forum, name), &result["structuredContent"]);
    assert!(
        problems.is_empty(),
        "{name}: refusal does not fit outputSchema: {problems:?}"
    );
    error
}

pub fn rpc_error(forum: &Forum, text: &str) -> Value {
    let r = send_text(forum, None, text);
    assert!(r.get("result").is_none(), "{text} should fail: {r}");
    r
}
