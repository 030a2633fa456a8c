//! `parley serve --mcp-output-schemas none|compact|exact`: what the tool list says of
//! each tool's result, over stdio and Streamable HTTP, and the refusal of any other
//! value.

mod common;

use std::io::{Read, Write};
use std::process::Stdio;

use common::{rpc, TempForum};
use serde_json::{json, Value};

/// The `post` tool of `tools/list`, and the structured result of one post, from a
/// stdio server started with `args` after `serve --stdio`.
fn over_stdio(forum: &TempForum, token: &str, global: &[&str], args: &[&str]) -> (Value, Value) {
    let mut all = global.to_vec();
    all.extend_from_slice(&["serve", "--stdio"]);
    all.extend_from_slice(args);
    let mut child = forum
        .command(&all)
        .env("PARLEY_TOKEN", token)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{}", rpc(1, "tools/list", json!({}))).unwrap();
    let call = json!({ "name": "post", "arguments": { "kind": "ask", "body": format!("Which schema ({args:?})?") } });
    writeln!(stdin, "{}", rpc(2, "tools/call", call)).unwrap();
    drop(stdin);
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(child.wait().unwrap().success());
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let tools = lines[0]["result"]["tools"].as_array().unwrap();
    let post = tools.iter().find(|t| t["name"] == "post").unwrap().clone();
    (post, lines[1]["result"]["structuredContent"].clone())
}

#[test]
fn the_flag_chooses_the_output_schemas_and_the_result_stays_exact() {
    let forum = TempForum::new();
    let alice = forum.token("alice", &[]);
    let (compact, first) = over_stdio(&forum, &alice, &[], &[]);
    let (flag, _) = over_stdio(&forum, &alice, &[], &["--mcp-output-schemas", "compact"]);
    let (exact, second) = over_stdio(&forum, &alice, &[], &["--mcp-output-schemas=exact"]);
    let (none, third) = over_stdio(&forum, &alice, &[], &["--mcp-output-schemas", "none"]);

    assert_eq!(
        compact["outputSchema"], flag["outputSchema"],
        "compact is the default"
    );
    assert_eq!(
        compact["outputSchema"]["properties"],
        json!({ "message": { "type": "object" }, "thread": { "type": "object" } })
    );
    assert_eq!(
        compact["outputSchema"]["dependentRequired"],
        json!({ "message": ["thread"] })
    );
    assert!(exact["outputSchema"]["$defs"]["event"].is_object());
    assert_eq!(
        exact["outputSchema"]["anyOf"][1],
        json!({ "required": ["error"] })
    );
    assert!(none.get("outputSchema").is_none(), "{none}");
    assert_eq!(none["inputSchema"], exact["inputSchema"]);

    // The structured result is the same whatever the schema says of it.
    for result in [&first, &second, &third] {
        assert_eq!(result["thread"]["state"], "open", "{result}");
        assert_eq!(result["message"]["from"]["identity"], "ainotes:alice");
        assert!(result["thread"]["awaiting"].is_object());
    }

    // The flag wins over the settings, which choose when there is no flag.
    let settings = r#"{"mcp_output_schemas":"none"}"#;
    let (by_settings, _) = over_stdio(&forum, &alice, &["--settings", settings], &[]);
    assert!(by_settings.get("outputSchema").is_none());
    let (by_flag, _) = over_stdio(
        &forum,
        &alice,
        &["--settings", settings],
        &["--mcp-output-schemas", "exact"],
    );
    assert_eq!(by_flag["outputSchema"], exact["outputSchema"]);
}

#[test]
fn an_unknown_value_is_a_usage_error_before_the_forum_is_made() {
    let forum = TempForum::new();
    for bad in ["full", "", "Exact", "compact,exact"] {
        let out = forum.run(&["serve", "--stdio", "--mcp-output-schemas", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--mcp-output-schemas") && err.contains("none, compact, exact"),
            "{bad:?}: {err}"
        );
        assert!(out.stdout.is_empty());
    }
    let out = forum.run(&[
        "serve",
        "--http",
        "127.0.0.1:0",
        "--mcp-output-schemas",
        "all",
    ]);
    assert_eq!(out.status.code(), Some(2));
    // A bad value in the settings is refused too, with the name of the setting.
    let settings = r#"{"mcp_output_schemas":"all"}"#;
    let out = forum.run(&["--settings", settings, "serve", "--stdio"]);
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("none, compact or exact"), "{err}");
    assert!(!forum.db.exists(), "a refused serve made the forum file");
}
