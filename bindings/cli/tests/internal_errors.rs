//! A panic inside the engine, through the server's boundaries, on the real binary:
//! REST answers 500 `internal_error`, MCP over HTTP and over stdio answer a
//! JSON-RPC internal error (-32603); none of them says the file is damaged, the
//! post is not stored, and the server goes on serving. The panic comes from the
//! engine's `fault-injection` feature, which only test builds carry (this
//! crate's dev-dependency turns it on for the binary the tests spawn).

mod common;

use std::io::{Read, Write};
use std::process::Stdio;

use common::{rpc, TempForum};
use parley_forum::fault::FAULT_BODY;
use serde_json::{json, Value};

#[test]
fn mcp_over_stdio_answers_a_panic_as_an_internal_error_and_serves_on() {
    let forum = TempForum::new();
    let alice = forum.token("alice", &[]);
    let mut child = forum
        .command(&["serve", "--stdio"])
        .env("PARLEY_TOKEN", &alice)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let post = |id: u64, body: &str| {
        rpc(
            id,
            "tools/call",
            json!({"name": "post", "arguments": {"kind": "ask", "body": body}}),
        )
    };
    let mut stdin = child.stdin.take().unwrap();
    for line in [post(1, FAULT_BODY), post(2, "Still there?")] {
        writeln!(stdin, "{line}").unwrap();
    }
    drop(stdin);
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert!(child.wait().unwrap().success());
    let replies: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(replies.len(), 2, "{out}");
    assert_eq!(replies[0]["id"], 1);
    assert_eq!(replies[0]["error"]["code"], -32603, "{}", replies[0]);
    let message = replies[0]["error"]["message"].as_str().unwrap();
    assert!(message.contains("panicked"), "{message}");
    assert!(!message.contains("damaged"), "{message}");
    assert_eq!(replies[1]["id"], 2);
    assert_eq!(replies[1]["result"]["isError"], false, "{}", replies[1]);
}
