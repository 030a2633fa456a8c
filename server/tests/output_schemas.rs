//! `parley serve --mcp-output-schemas none|compact|exact`: what the tool list says of
//! each tool's result over Streamable HTTP, in process. Over stdio, and the
//! refusal of any other value, are tested through the binary in
//! `bindings/cli/tests/output_schemas.rs`.

mod support;

use serde_json::json;
use support::{rpc, Server, TempForum};

#[test]
fn streamable_http_serves_the_chosen_output_schemas() {
    let forum = TempForum::new();
    let server = Server::start(&forum.db, None, &["--mcp-output-schemas", "exact"]);
    let listed = server
        .post("/mcp", None, &rpc(1, "tools/list", json!({})))
        .json();
    let tools = listed["result"]["tools"].as_array().unwrap();
    assert!(
        tools.iter().all(|t| t["outputSchema"]["anyOf"].is_array()),
        "{listed}"
    );
    drop(server);

    let server = Server::start(&forum.db, None, &["--mcp-output-schemas", "none"]);
    let listed = server
        .post("/mcp", None, &rpc(1, "tools/list", json!({})))
        .json();
    let tools = listed["result"]["tools"].as_array().unwrap();
    assert!(!tools.is_empty());
    assert!(
        tools.iter().all(|t| t.get("outputSchema").is_none()),
        "{listed}"
    );
}
