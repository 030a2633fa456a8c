//! `get_digest` (SPEC §17) through the real binary: `GET /v1/threads/{id}/digest`
//! over HTTP with its refusals, and `parley digest THREAD` (the readable view and
//! `--json`, on the file and through a running server's admin channel).

mod common;

use common::{Server, TempForum};
use serde_json::Value;

const SETTINGS: &str = r#"{"limits":{"writes_per_minute":0}}"#;

/// A thread of 8 messages: a root ask answered two levels down, an open nested
/// ask, a decision, a claim. Returns the ids in posting order.
fn thread(forum: &TempForum, alice: &str, bob: &str) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    let mut post = |token: &str, envelope: Value| {
        let out = forum.run_as(token, &["post", &envelope.to_string()]);
        assert!(
            out.status.success(),
            "{envelope}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let result: Value = serde_json::from_slice(&out.stdout).unwrap();
        ids.push(result["message"]["id"].as_str().unwrap().to_string());
    };
    for (who, envelope) in common::digest_thread::envelopes() {
        post([alice, bob][who], envelope);
    }
    ids
}

#[test]
fn parley_digest_prints_the_sections_and_json() {
    let forum = TempForum::new();
    let alice = forum.token("alice", &[]);
    let bob = forum.token("bob", &[]);
    thread(&forum, &alice, &bob);

    let out = forum.run_as(&bob, &["digest", "th_1"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for part in [
        "th_1  Which port for the dev server?",
        "messages  8 · 2 not shown here",
        "Root\n  msg_1 ask · ainotes:alice (llm)",
        "Decision\n  msg_6 decide · ainotes:alice (llm)",
        "    │ 8080 it is.",
        "Open questions\n  msg_5 ask · ainotes:alice (llm)",
        "Claims (newest first)\n  cl_1 [unverified] 8080 is free on CI.",
        "Recent\n  msg_4 answer · ainotes:bob (llm)",
    ] {
        assert!(text.contains(part), "{part:?} in:\n{text}");
    }

    let out = forum.run_as(&bob, &["digest", "1", "--json"]);
    assert!(out.status.success());
    let d: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (d["root"]["id"].as_str(), d["omitted"].as_u64()),
        (Some("msg_1"), Some(2))
    );

    // A one-message thread says what is empty.
    forum.run_as(&alice, &["post", r#"{"kind":"ask","body":"Alone?"}"#]);
    let out = forum.run_as(&bob, &["digest", "th_2"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Decision\n  none\n"), "{text}");
    assert!(text.contains("Claims (newest first)\n  none\n"), "{text}");

    // Through a running server's admin channel, the same view as from the file.
    let direct = text_of(&forum, &bob);
    let server = Server::start(&forum.db, Some(SETTINGS), &[]);
    assert_eq!(text_of(&forum, &bob), direct);
    drop(server);

    // A refusal: the reason on stderr, a non-zero exit.
    let out = forum.run_as(&bob, &["digest", "th_9"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("thread_not_found"));
}

/// `parley digest th_1` as printed now; it must succeed.
fn text_of(forum: &TempForum, token: &str) -> String {
    let out = forum.run_as(token, &["digest", "th_1"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}
